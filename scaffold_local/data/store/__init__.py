"""On-disk state of a store: the judgment cache shared by all runs (cache.py), content-addressed
scaffolds (scaffolds.py), one folder per run (run_folder.py) and the engine rates measured on each machine
(rates.py)."""

from .cache import JudgmentCache, StoreError
from .rates import EngineRates, Work
from .run_folder import RunFolder, RunNameError, SpecMismatch, check_run_name
from .scaffolds import ScaffoldStore, StoredScaffold

__all__ = ["EngineRates", "JudgmentCache", "RunFolder", "RunNameError", "ScaffoldStore", "SpecMismatch", "StoreError",
           "StoredScaffold", "Work", "check_run_name"]
