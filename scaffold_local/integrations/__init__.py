"""Optional integrations, each behind its own extra and imported only when used: `import scaffold_local`
and the command line never import them (or Inspect AI, or MLflow).

- inspect_scorer: FPS, QPS, EPS and FC as an Inspect AI scorer (`scaffold-local[inspect]`).
- mlflow_tracking: a run's analysis logged to MLflow (`scaffold-local[mlflow]`; `report --mlflow`).
"""
