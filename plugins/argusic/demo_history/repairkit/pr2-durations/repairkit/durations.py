"""Durations written as 1h30m, 45s, 2d."""

import re

UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
_PART = re.compile(r"\s*(\d+)\s*([dhms])", re.IGNORECASE)


def parse_duration(text: str) -> int:
    """Seconds in a duration such as "1h30m", "1h 30m", "45S"."""
    text = text.strip()
    pos, total = 0, 0
    if not text:
        raise ValueError("empty duration")
    while pos < len(text):
        match = _PART.match(text, pos)
        if not match:
            raise ValueError(f"not a duration: {text!r}")
        total += int(match.group(1)) * UNITS[match.group(2).lower()]
        pos = match.end()
    return total
