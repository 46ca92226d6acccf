"""Meta-evaluation: how far a judge agrees with people, on human-labelled data written by others
(REALSumm key facts and pairwise orders, FRANK sentence errors, SummEval expert scores, SummEdits
consistency, AggreFact error spans). The data is read from its
folder at run time (never copied into the project); judgments go through the same judge, store and
cache as `score`, so a rerun sends nothing new."""

from .calibration import CALIBRATED_BY, calibrate, write_config
from .end_to_end import end_to_end
from .human_labels import load
from .tasks import TASKS, run_task

__all__ = [
    "CALIBRATED_BY", "TASKS", "calibrate", "end_to_end", "load", "run_task", "write_config",
]
