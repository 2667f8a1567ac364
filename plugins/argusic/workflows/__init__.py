"""Workflows: the rounds that span layers: verdict rounds, dispute corrections, the repair round, and
reproducing an attempt."""
