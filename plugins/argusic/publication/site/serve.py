"""`argusic site serve`: preview the built site on 127.0.0.1 (the standard library's http.server).

Loopback only: any other bind address is refused. The server sends the site's files as they are,
with ``X-Content-Type-Options: nosniff``; a link out of the site folder is not followed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LOOPBACK = "127.0.0.1"


class _SiteHandler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".cast": "text/plain; charset=utf-8",
        ".txt": "text/plain; charset=utf-8",
        ".html": "text/html; charset=utf-8",
        ".js": "text/javascript; charset=utf-8",
        ".css": "text/css; charset=utf-8",
    }

    def translate_path(self, path: str) -> str:
        translated = Path(super().translate_path(path))
        root = Path(self.directory).resolve()
        try:
            translated.resolve().relative_to(root)
        except ValueError:  # a link leading out of the site
            return str(root / "\0missing")
        return str(translated)

    def end_headers(self) -> None:
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        pass


def make_server(site_dir: Path, host: str = LOOPBACK, port: int = 8000) -> ThreadingHTTPServer:
    """A server for ``site_dir`` on ``host:port`` (port 0: any free port); refuses a non-loopback host."""
    if host != LOOPBACK:
        raise ValueError(
            f"the preview binds {LOOPBACK} only, not {host!r} (it is a preview, not a public server)"
        )
    site_dir = Path(site_dir)
    if not (site_dir / "index.html").is_file():
        raise FileNotFoundError(f"{site_dir}: no index.html (run `argusic site build` first)")
    handler = functools.partial(_SiteHandler, directory=str(site_dir))
    return ThreadingHTTPServer((host, port), handler)


def serve(
    site_dir: Path, host: str = LOOPBACK, port: int = 8000, ready: Callable[[str], None] | None = None
) -> None:
    """Serve until interrupted; ``ready`` gets the address once the server listens."""
    server = make_server(site_dir, host, port)
    address = f"http://{LOOPBACK}:{server.server_address[1]}/"
    if ready:
        ready(address)
    try:
        server.serve_forever()
    finally:
        server.server_close()
