"""Ops: maintenance of runs and containers, the cluster host's identity and concurrency, and the
methodology guards."""
