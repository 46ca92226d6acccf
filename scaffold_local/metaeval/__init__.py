"""Meta-evaluation: how far a judge agrees with people, on human-labelled data written by others
(REALSumm key facts and pairwise orders, FRANK sentence errors, SummEval expert scores, SummEdits
consistency, AggreFact error spans). The data is read from its
folder at run time (never copied into the project); judgments go through the same judge, store and
cache as `score`, so a rerun sends nothing new."""

from .agreement import OTHERS, best_threshold, binary_agreement, cell, grouped_bootstrap, majority_of_others, ranking
from .calibration import CALIBRATED_BY, calibrate, write_config
from .correlation import OWN_SUMMARIES, PER_DOCUMENT, POOLED, correlation_table
from .end_to_end import realsumm_end_to_end
from .frank import OVERLAP_SUPPORTED, faithfulness, flagged_by_overlap, source_of
from .human_labels import load
from .realsumm import AlignmentItems, alignment_items, document_of, facts_scaffold, present_by_overlap
from .results import MetaEvalResult
from .sentence_checks import check_summaries
from .summedits import best_of, consistency, domain_of, entity_edits
from .tasks import TASKS, run_task, tasks_for

__all__ = [
    "AlignmentItems", "CALIBRATED_BY", "MetaEvalResult", "OTHERS", "OVERLAP_SUPPORTED", "OWN_SUMMARIES",
    "PER_DOCUMENT", "POOLED", "TASKS", "alignment_items", "best_of", "best_threshold", "binary_agreement",
    "calibrate", "cell", "check_summaries", "consistency", "correlation_table", "document_of", "domain_of",
    "entity_edits", "facts_scaffold", "faithfulness", "flagged_by_overlap", "grouped_bootstrap", "load",
    "majority_of_others", "present_by_overlap", "ranking", "realsumm_end_to_end", "run_task", "source_of",
    "tasks_for", "write_config",
]
