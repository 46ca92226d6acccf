"""The pieces of benchmarks/peers.py (side by side with the tools people use today): every tool
sends its calls to one judge server through a counting proxy (ledger.py), so calls, tokens, seconds
and failures are counted the same way for all of them; tools.py runs each tool on the same
documents and summaries."""
