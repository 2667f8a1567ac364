"""The public site: static pages generated from the published files (Jinja2), and a local preview.

``build_site`` reads what publication wrote (``<publish dir>/<cycle>/board.json``, ``attempts.json``,
``public_pool.json``, ``private_pool.json``) and writes ``<publish dir>/site/``; ``serve`` previews it
on 127.0.0.1. See README "The public site".
"""

from argusic.publication.site.build import SiteError, build_site, display_quote
from argusic.publication.site.serve import serve

__all__ = ["SiteError", "build_site", "display_quote", "serve"]
