"""Judging attempts beyond the verdict (issue 14): task definitions and Layer 1 hints."""
