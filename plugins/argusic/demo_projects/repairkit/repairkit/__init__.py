"""Small text helpers for release tooling: slugs, version strings, durations."""

from repairkit.durations import parse_duration
from repairkit.slug import slugify
from repairkit.version import compare_versions, parse_version

__all__ = ["compare_versions", "parse_duration", "parse_version", "slugify"]
__version__ = "0.1.0"
