"""tickerd: a tiny HTTP service that returns the current tick count. It serves until stopped."""

from __future__ import annotations

import argparse
import itertools
import json
from http.server import BaseHTTPRequestHandler, HTTPServer

TICKS = itertools.count(1)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server naming
        body = json.dumps({"tick": next(TICKS)}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args()
    server = HTTPServer(("127.0.0.1", args.port), Handler)
    print(f"tickerd listening on http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
