"""What each metric is for, which decides where the report marks a best value and what its takeaway names."""

# What a metric is for. A goal is what a summary should maximise: the takeaway names each goal's best system. Every
# other metric explains a goal and its best value is marked too, except a diagnostic, whose higher value is not
# better: Supp FC is how much supporting detail a summary keeps, which FPS counts against it.
GOALS = ("fps", "qps", "eps", "f", "ds")
DIAGNOSTICS = ("supp_fc",)
DIRECTIONS = "higher is better, except Supp FC, a diagnostic with no better direction (no best is marked on it)"
