"""scaffold_local: Semantic Scaffold summary evaluation with open-weight judges on local hardware.

Extract a scaffold (facts, key questions, entities) once per source document, align every
candidate summary against it, and compute FPS, QPS, EPS, F, FC, QC and the baselines.

    from scaffold_local import ModelConfig, Pipeline, load_input, runs
    outcome = Pipeline(ModelConfig.load("smollm2-135m-transformers"), "scaffold_store").score(load_input("in.jsonl"))
    run = runs.open(outcome.run_dir)
"""

from . import runs
from .config import ModelConfig
from .data import FieldMap, LoadedInput, load_input
from .errors import ScaffoldLocalError
from .metrics import SummaryScores, SystemScores, score_summary, system_means
from .pipeline import Pipeline, RunOutcome
from .scaffold import Scaffold

__version__ = "0.1.0"
__all__ = ["FieldMap", "LoadedInput", "ModelConfig", "Pipeline", "RunOutcome", "Scaffold", "ScaffoldLocalError",
           "SummaryScores", "SystemScores", "load_input", "runs", "score_summary", "system_means", "__version__"]
