"""Meta-evaluation: how far a judge agrees with people, on human-labelled data written by others
(REALSumm key facts, FRANK sentence errors, SummEval expert scores). The data is read from its
folder at run time (never copied into the project); judgments go through the same judge, store and
cache as `score`, so a rerun sends nothing new."""
