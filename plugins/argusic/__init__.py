"""Argusic pipeline: pool rotation, attempts in containers, evidence, warehouse, board."""

__version__ = "0.1.0"
