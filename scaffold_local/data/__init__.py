"""Where data comes from and where runs go: input files and records (inputs.py), scaffolds given by
the user (user_scaffolds.py), and the store on disk (store/: the judgment cache, content-addressed
scaffolds, one folder per run, the engine rates it measured)."""

from .inputs import Candidate, Document, FieldMap, InputIssue, LoadedInput
from .loading import load_input, load_records
from .store import EngineRates, JudgmentCache, RunFolder, RunNameError, ScaffoldStore, StoredScaffold, check_run_name
from .user_scaffolds import extracted_by, read_scaffold_file, scaffold_line

__all__ = [
    "Candidate", "Document", "EngineRates", "FieldMap", "InputIssue", "JudgmentCache", "LoadedInput", "RunFolder",
    "RunNameError", "ScaffoldStore", "StoredScaffold", "check_run_name", "extracted_by", "load_input", "load_records",
    "read_scaffold_file", "scaffold_line",
]
