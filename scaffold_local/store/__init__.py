"""On-disk state of a store: the judgment cache shared by all runs (cache.py), content-addressed
scaffolds (scaffolds.py) and one folder per run (runs.py)."""

from .cache import JudgmentCache, StoreError
from .runs import RunFolder, SpecMismatch
from .scaffolds import ScaffoldStore, StoredScaffold

__all__ = ["JudgmentCache", "RunFolder", "ScaffoldStore", "SpecMismatch", "StoreError", "StoredScaffold"]
