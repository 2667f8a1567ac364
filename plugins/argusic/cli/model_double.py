"""`argusic model-double serve`: the scripted model service (``argusic.sandbox.model_double``), the
Anthropic Messages API (Claude Code) and the OpenAI Responses API (Codex) answered from a script, for
tests and demos of the agent CLIs (issue #28)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

from argusic.cli.common import fail
from argusic.sandbox.model_double import ScriptError, load_prices, load_script, serve

model_double_app = typer.Typer(help="A scripted model service for the agent CLIs (no real model).")


@model_double_app.command("serve")
def serve_command(
    script: Annotated[Path, typer.Option(exists=True, dir_okay=False, help="The JSON script of turns")],
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on")] = 8080,
    key: Annotated[
        str | None, typer.Option(help="The key requests must carry (else --key-file, or ARGUSIC_DOUBLE_KEY)")
    ] = None,
    key_file: Annotated[Path | None, typer.Option(exists=True, dir_okay=False)] = None,
    host: Annotated[
        str, typer.Option(help="Address to bind: 127.0.0.1, or a Docker network's address of your own")
    ] = "127.0.0.1",
    log: Annotated[Path | None, typer.Option(help="Append one JSON line per request here")] = None,
    master_key_file: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Be a LiteLLM gateway too: keys minted on /key/generate with this master key (else "
            "ARGUSIC_DOUBLE_MASTER_KEY), each key's spend kept and its max_budget enforced",
        ),
    ] = None,
    prices: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Model prices for the keys' spend: the seed's CSV (default "
            "dbt_project/seeds/model_prices.csv) or JSON {model: {input, output}} per million tokens",
        ),
    ] = None,
) -> None:
    """Answer POST /v1/messages and /v1/responses from SCRIPT, turn by turn, checking the key (and, with
    a master key, LiteLLM's key endpoints and spend limit)."""
    given = key or (key_file.read_text().strip() if key_file else os.environ.get("ARGUSIC_DOUBLE_KEY", ""))
    master = (
        master_key_file.read_text().strip()
        if master_key_file
        else os.environ.get("ARGUSIC_DOUBLE_MASTER_KEY", "")
    )
    if not given and not master:
        fail("a key is required: --key, --key-file or ARGUSIC_DOUBLE_KEY (or a gateway's master key)")
    try:
        load_script(json.loads(script.read_text(encoding="utf-8")))
    except (ScriptError, ValueError) as err:
        fail(f"{script}: {err}")
    if prices is not None:
        try:
            load_prices(prices)
        except (ValueError, KeyError, TypeError) as err:
            fail(f"{prices}: not model prices ({type(err).__name__}: {err})")
    serve(script, given, host, port, log, master_key=master or None, prices_file=prices)
