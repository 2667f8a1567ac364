"""A local stand-in for the Skycast API: GET /forecast?city=NAME returns 24 fixed hourly readings."""

from __future__ import annotations

import argparse
import json
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def forecast(city: str) -> dict:
    hourly = []
    for h in range(24):
        temp = round(8 + 6 * (1 - abs(h - 14) / 14), 1)
        hourly.append({"hour": h, "temp_c": temp, "rain_mm": 0.4 if 6 <= h < 10 else 0.0})
    return {"city": city, "hourly": hourly}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server naming
        url = urllib.parse.urlparse(self.path)
        if url.path.rstrip("/").endswith("/forecast"):
            city = urllib.parse.parse_qs(url.query).get("city", ["Nowhere"])[0]
            body = json.dumps(forecast(city)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b'{"error": "not found"}'
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"mock Skycast API on http://127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
