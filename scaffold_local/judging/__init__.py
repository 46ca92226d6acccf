"""How a judge is asked and read: its config (config.py), the prompts (prompts.py), the requests it
plans and reads back (judge.py, read_verdicts.py, readings.py, planned.py), the verdicts' confidence
(confidence.py) and id rules (verdicts.py), fitting the judge's context (context_fit.py,
long_documents.py), checks of an extracted scaffold (quality.py), and sending requests to the engine
(dispatch.py)."""
