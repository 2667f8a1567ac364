"""Command line: python3 -m repairkit slug|version|duration TEXT."""

import sys

from repairkit.durations import parse_duration
from repairkit.slug import slugify
from repairkit.version import parse_version

COMMANDS = {
    "slug": slugify,
    "version": lambda text: ".".join(str(part) for part in parse_version(text)),
    "duration": lambda text: f"{parse_duration(text)} s",
}


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in COMMANDS:
        print("usage: python3 -m repairkit slug|version|duration TEXT", file=sys.stderr)
        return 2
    try:
        print(COMMANDS[argv[0]](argv[1]))
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
