"""Reports for people: rich tables on the terminal (console.py) and one summary's evidence (evidence.py), and the
offline HTML report with its tables as JSON, CSV and Parquet (html.py, tables.py, plots.py)."""

from .console import (
    budget_table,
    grouped_vs_individual_table,
    member_table,
    rankings_table,
    results,
    systems_table,
)
from .evidence import evidence_panel

__all__ = ["budget_table", "evidence_panel", "grouped_vs_individual_table", "member_table", "rankings_table", "results",
           "systems_table"]
