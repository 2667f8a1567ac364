"""weatherfetch: fetch a city's forecast from the Skycast API and save a daily summary as JSON."""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.parse
import urllib.request

DEFAULT_API = "https://api.skycast.example/v2"


def summarise(payload: dict) -> dict:
    hours = payload["hourly"]
    temps = [h["temp_c"] for h in hours]
    rain = sum(h.get("rain_mm", 0.0) for h in hours)
    return {
        "city": payload["city"],
        "hours": len(hours),
        "min_temp_c": min(temps),
        "max_temp_c": max(temps),
        "rain_mm": round(rain, 1),
        "umbrella": rain >= 1.0,
    }


def fetch(api: str, city: str, key: str | None) -> dict:
    url = f"{api.rstrip('/')}/forecast?" + urllib.parse.urlencode({"city": city})
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"} if key else {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.load(response)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--city", required=True)
    parser.add_argument("--out", default="out/forecast.json")
    args = parser.parse_args()
    api = os.environ.get("SKYCAST_API_URL", DEFAULT_API)
    key = os.environ.get("SKYCAST_API_KEY")
    if api == DEFAULT_API and not key:
        print("weatherfetch: SKYCAST_API_KEY is required for the Skycast service", file=sys.stderr)
        return 1
    summary = summarise(fetch(api, args.city, key))
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2)
    low, high = summary["min_temp_c"], summary["max_temp_c"]
    print(f"weatherfetch: {summary['city']}: {low}..{high} C -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
