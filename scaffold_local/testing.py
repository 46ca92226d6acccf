"""For testing code built on scaffold_local without a model: the responder, a backend that computes each
answer from the request (its rules: `scaffold_local.backends.responder`), as a judge config.

    from scaffold_local import evaluate
    from scaffold_local.testing import responder_judge

    result = evaluate(records, judge=responder_judge(), store=tmp_path)  # every metric workable by hand
"""

from __future__ import annotations

from typing import Any

from .backends.responder import ResponderBackend
from .judging.config import ModelConfig

__all__ = ["ResponderBackend", "responder_judge"]


def responder_judge(name: str = "responder", **fields: Any) -> ModelConfig:
    """A judge config on the responder; `fields` set any other config field (`limits`, `method_version`, ...)."""
    return ModelConfig.model_validate({"name": name, "backend": "responder", "model": "responder",
                                       "structured_outputs": "computed", **fields})
