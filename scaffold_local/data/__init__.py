"""Where data comes from and where runs go: input files and records (inputs.py), scaffolds given by
the user (user_scaffolds.py), and the store on disk (store/: the judgment cache, content-addressed
scaffolds, one folder per run)."""
