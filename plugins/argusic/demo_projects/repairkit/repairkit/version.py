"""Version strings of the form MAJOR.MINOR[.PATCH]."""

import re

_VERSION = re.compile(r"(\d{1,2})\.(\d{1,2})(?:\.(\d{1,2}))?")


def parse_version(text: str) -> tuple[int, int, int]:
    """Parse "1.4.2" into (1, 4, 2); a missing patch number is 0."""
    match = _VERSION.match(text.strip())
    if not match:
        raise ValueError(f"not a version: {text!r}")
    major, minor, patch = match.groups()
    return int(major), int(minor), int(patch or 0)


def compare_versions(left: str, right: str) -> int:
    """-1, 0 or 1 as `left` is older than, the same as, or newer than `right`."""
    a, b = parse_version(left), parse_version(right)
    return (a > b) - (a < b)
