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
from argusic.sandbox.model_double import ScriptError, load_script, serve

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
) -> None:
    """Answer POST /v1/messages and /v1/responses from SCRIPT, turn by turn, checking the key."""
    given = key or (key_file.read_text().strip() if key_file else os.environ.get("ARGUSIC_DOUBLE_KEY", ""))
    if not given:
        fail("a key is required: --key, --key-file or ARGUSIC_DOUBLE_KEY")
    try:
        load_script(json.loads(script.read_text(encoding="utf-8")))
    except (ScriptError, ValueError) as err:
        fail(f"{script}: {err}")
    serve(script, given, host, port, log)
