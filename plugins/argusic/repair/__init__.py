"""Repair items from merged pull requests and their grader (issue 13, seed 001)."""
