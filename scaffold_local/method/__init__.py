"""What the method is: its versions (versions.py), the JSON shapes the judge answers in (schemas.py),
the scaffold (scaffold.py), the views that align a summary with it (views/), the metrics
(metrics.py), the sentence splitter and language detection (text.py, language.py) and document
groups (document_groups.py). Nothing here runs a model or touches the disk."""

from .document_groups import union_scaffold
from .metrics import METRICS, SummaryScores, SystemScores, rouge_l, score_summary, system_means
from .scaffold import Scaffold
from .schemas import SchemaLimits, json_schema
from .text import overlap, sha256_text, split_sentences
from .versions import DEFAULT_METHOD_VERSION, METHOD_VERSIONS, MethodVersion, method_version
from .views import views_of

__all__ = [
    "DEFAULT_METHOD_VERSION", "METHOD_VERSIONS", "METRICS", "MethodVersion", "Scaffold", "SchemaLimits",
    "SummaryScores", "SystemScores", "json_schema", "method_version", "overlap", "rouge_l", "score_summary",
    "sha256_text", "split_sentences", "system_means", "union_scaffold", "views_of",
]
