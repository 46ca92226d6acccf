"""Side by side with the tools people use today (benchmarks/peers.py): every tool sends its calls to
one judge server through a counting proxy (ledger.py), so calls, tokens, seconds and failures are
counted the same way for all of them."""
