"""`argusic site build` and `argusic site serve`: the public site's static pages from the published
files, and a preview on 127.0.0.1."""

from __future__ import annotations

from typing import Annotated

import typer

from argusic.cli.common import console, fail, shown_path
from argusic.core.layout import publish_dir
from argusic.publication.attempt_page import PlayerMissing

site_app = typer.Typer(
    help='The public site: static pages from the published files (README "The public site").'
)


@site_app.command("build")
def site_build(
    cycle: Annotated[
        str | None, typer.Option(help="Cycle on the front page (default: the one published last)")
    ] = None,
) -> None:
    """Write <ARGUSIC_PUBLISH_DIR>/site/ from every published cycle's board.json and attempts.json
    (publishing does this as its last step)."""
    # deferred: pulls jinja2, which only the site's two commands need
    from argusic.publication import site as public_site

    try:
        site = public_site.build_site(publish_dir(), cycle)
    except (public_site.SiteError, PlayerMissing, ValueError) as err:
        fail(str(err))
    pages = sum(1 for _ in site.rglob("*.html"))
    console.print(
        f"site: {pages} pages in {shown_path(site)} (index.html: the board); preview: `argusic site serve`"
    )


@site_app.command("serve")
def site_serve(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: a free one)")] = 8000,
    host: Annotated[str, typer.Option(help="Bind address: 127.0.0.1 only (a preview)")] = "127.0.0.1",
) -> None:
    """Preview the built site on 127.0.0.1 until Ctrl-C."""
    # deferred: pulls jinja2, which only the site's two commands need
    from argusic.publication import site as public_site

    def ready(url: str) -> None:
        console.print(f"serving the site at {url}  (Ctrl-C to stop)", soft_wrap=True)

    try:
        public_site.serve(publish_dir() / "site", host, port, ready=ready)
    except (ValueError, FileNotFoundError, OSError) as err:
        fail(str(err))
    except KeyboardInterrupt:
        pass
