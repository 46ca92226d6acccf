"""What the method is: its versions (versions.py), the JSON shapes the judge answers in (schemas.py),
the scaffold (scaffold.py), the views that align a summary with it (views/), the metrics
(metrics.py), the sentence splitter and language detection (text.py, language.py) and document
groups (document_groups.py). Nothing here runs a model or touches the disk."""
