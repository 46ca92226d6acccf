"""On-disk state of a store: the judgment cache shared by all runs (cache.py), content-addressed
scaffolds (scaffolds.py) and one folder per run (run_folder.py)."""

from .cache import JudgmentCache, StoreError
from .run_folder import RunFolder, RunNameError, SpecMismatch, check_run_name
from .scaffolds import ScaffoldStore, StoredScaffold

__all__ = ["JudgmentCache", "RunFolder", "RunNameError", "ScaffoldStore", "SpecMismatch", "StoreError", "StoredScaffold",
           "check_run_name"]
