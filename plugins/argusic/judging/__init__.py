"""Judging attempts (seed 004): task definitions, Layer 1 hints, their warehouse tables and stability."""
