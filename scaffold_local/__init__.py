"""scaffold_local: Semantic Scaffold summary evaluation with open-weight judges on local hardware.

Extract a scaffold (facts, key questions, entities) once per source document, align every
candidate summary against it, and compute FPS, QPS, EPS, F, FC, QC and the baselines.
"""

from .config import ModelConfig
from .data import FieldMap, load_input
from .metrics import SummaryScores, SystemScores, score_summary, system_means
from .schemas import Scaffold

__version__ = "0.1.0"
__all__ = ["FieldMap", "ModelConfig", "Scaffold", "SummaryScores", "SystemScores", "load_input",
           "score_summary", "system_means", "__version__"]
