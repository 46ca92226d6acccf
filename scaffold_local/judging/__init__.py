"""How a judge is asked and read: its config (config.py), the prompts (prompts.py), the requests it
plans and reads back (judge.py; extraction.py; strategies.py, each judgment kind written or read:
written_verdicts.py, read_verdicts.py, readings.py; metric_inputs.py; planned.py), the verdicts' confidence
(confidence.py) and id rules (verdicts.py), fitting the judge's context (context_fit.py,
long_documents.py), checks of an extracted scaffold (quality.py), and sending requests to the engine
(dispatch.py)."""

from .config import DEFAULT_MODEL, ModelConfig, available_configs
from .dispatch import Dispatcher, ProgressFactory, batches, no_progress, prefix_order
from .judge import Judge
from .long_documents import excerpt
from .planned import PlannedRequest
from .quality import ScaffoldQuality, inspect

__all__ = [
    "DEFAULT_MODEL", "Dispatcher", "Judge", "ModelConfig", "PlannedRequest", "ProgressFactory", "ScaffoldQuality",
    "available_configs", "batches", "excerpt", "inspect", "no_progress", "prefix_order",
]
