"""greeter: render a greeting card as JSON, configured through the environment (see .env.example)."""

from __future__ import annotations

import json
import os
import sys


def main() -> int:
    missing = [name for name in ("APP_NAME", "GREETING") if not os.environ.get(name)]
    if missing:
        print(f"greeter: environment variable {missing[0]} is not set (see .env.example)", file=sys.stderr)
        return 1
    card = {"app": os.environ["APP_NAME"], "greeting": os.environ["GREETING"], "lines": 3}
    with open("out/greeting.json", "w", encoding="utf-8") as f:
        json.dump(card, f, indent=2)
    print(f"greeter: {card['greeting']} from {card['app']} -> out/greeting.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
