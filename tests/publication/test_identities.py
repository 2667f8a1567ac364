"""Neutral Argusic identities in what is published (issue 32, methodology sections 5 and 18).

A cycle of four agents (two model-backed: claude-code and codex, whose registry rows and records name
their maker, product and models) is published the real way (warehouse marts, ingested records with
served copies masked by the presentation step, the environment pin, then the site). The guard greps
the board and run pages, board.json and attempts.json (without the agents' ``configuration`` fields)
and the served recordings' titles for the makers', products' and models' names: zero hits. Each
agent page shows the exact configuration, and is linked from the board and run pages.

Left out of the grep, on purpose: the rules as published (board.json's ``methodology``,
``methodology_editions``, ``harness_editions``: the methodology and the harness changelog are quoted as
written), the standard instructions' harness list (lower-case harness ids, names in code), and the
operator's ``agent_id`` (lower-case, a part of every attempt id). The log shown on a run page keeps
every command the agent ran: ``pip install anthropic openai`` stays (names in packages are not
censored); only the tool's own start banner is hidden.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from argusic.attempts.common import title_recording, with_presentation
from argusic.attempts.environment import ensure_pin
from argusic.attempts.identity import agent_pins, identity_name, recording_title
from argusic.core.evidence import EvidenceStore
from argusic.core.record import parse_record
from argusic.publication.board import publish_board
from argusic.warehouse.load_runs import ingest
from conftest import write_record
from test_expectations import good_frames, write_marts
from test_masking import CLAUDE_BOX, CODEX_BOX, make_cast

CYCLE = "c1"
AGENTS = {"a1": "claude-code", "a2": "codex", "a3": "readme-runner", "a4": "readme-runner-norecover"}
PRODUCT = {"claude-code": "Claude Code", "codex": "OpenAI Codex CLI", "readme-runner": "README runner",
           "readme-runner-norecover": "README runner without recovery moves"}  # fmt: skip
# The stream-json start message the claude-code driver tees to the terminal: its start banner in
# machine form (model, version, key source), hidden like the box.
CLAUDE_INIT = (
    (Path(__file__).parents[1] / "fixtures" / "judging" / "claude_code_read_last.jsonl")
    .read_text()
    .splitlines()[0]
)
MODEL = {
    "claude-code": ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929", [*CLAUDE_BOX, CLAUDE_INIT], "2.1.332"),
    "codex": ("gpt-5.3-codex", "gpt-5.3-codex",
              [line.replace("gpt-5-codex", "gpt-5.3-codex") for line in CODEX_BOX], "0.171.0"),
}  # fmt: skip
# What must not be read outside an agent page's configuration (case-sensitive: the operator's
# lower-case ids and package names such as "anthropic" are names in code).
VENDOR_WORDS = ("Claude", "Codex", "Anthropic", "OpenAI", "GPT", "claude-sonnet", "gpt-5", "Sonnet")


def _frames() -> dict[str, pd.DataFrame]:
    """good_frames' cycle with its agents named as the registry names them, the board's display
    names as the mart takes them from the registry, and one recorded board attempt per model agent."""
    frames = good_frames()
    for name in ("attempt_scores", "pair_sets", "board"):
        frames[name] = frames[name].replace({"agent_id": AGENTS})
    frames["project_verdicts"] = frames["project_verdicts"].replace({"verified_by_agent": AGENTS})
    frames["board"]["display_name"] = frames["board"]["agent_id"].map(PRODUCT)
    scores = frames["attempt_scores"]
    extra = []
    for agent in MODEL:
        row = scores.iloc[[0]].copy()
        row["attempt_id"] = f"{CYCLE}.board.{agent}.p1.a1"
        row["agent_id"] = agent
        extra.append(row)
    frames["attempt_scores"] = pd.concat([scores, *extra], ignore_index=True)
    return frames


def _record(isolated: Path, record_doc: dict, agent: str, title: str) -> None:
    """A recorded attempt of a model agent: its tool's start banner, then the agent's own commands
    (naming vendors' packages); the recording titled on the host; served copies made the real way."""
    model, answered, banner, version = MODEL[agent]
    store = EvidenceStore()
    doc = json.loads(json.dumps(record_doc))
    attempt_id = f"{CYCLE}.board.{agent}.p1.a1"
    doc.update(cycle_id=CYCLE, attempt_id=attempt_id, agent_id=agent, project_id="p1", commit="a1" * 20)
    doc["harness"] = {"name": agent, "version": version}
    doc["model"] = {"requested": model, "responded": answered}
    doc["key"] = {"kind": "per_run", "limit_usd": 3.0}
    lines = [*banner, "$ pip install anthropic openai", "Successfully installed anthropic-0.40.0", "ok"]
    folder = isolated / "landing" / agent
    folder.mkdir(parents=True)
    (folder / "log").write_bytes(("\n".join(lines) + "\n").encode())
    (folder / "recording").write_bytes(make_cast([line + "\r\n" for line in lines]))
    assert title_recording(folder / "recording", title)
    (folder / "report").write_bytes(b"{}")
    for kind in ("log", "recording", "report"):
        doc["evidence"][kind] = store.put_file(folder / kind).as_ref()
    record = with_presentation(parse_record(doc), store)
    assert record.presentation and record.presentation.recording and not record.presentation.withheld
    ingest([write_record(isolated / "r" / attempt_id, json.loads(record.to_json()))])


@pytest.fixture
def published(isolated: Path, record_doc: dict, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    pin = ensure_pin(CYCLE, "local", ["runner"], True, 1 / 360, agents=agent_pins(AGENTS.values()))
    for agent in MODEL:
        _record(isolated, record_doc, agent, recording_title(identity_name(pin, agent), "p1", 1))
    db = isolated / "warehouse" / "argusic.duckdb"
    write_marts(db, _frames())
    out = isolated / "published"
    publish_board(CYCLE, out, db)
    return out


# Published fields that are the rules as written, or names in code (see the module's doc).
NOT_GREPPED = ("methodology", "methodology_editions", "harness_editions", "instructions")


def _without_configurations(value):
    if isinstance(value, dict):
        return {k: _without_configurations(v) for k, v in value.items() if k != "configuration"}
    if isinstance(value, list):
        return [_without_configurations(v) for v in value]
    return value


def _hits(text: str) -> list[str]:
    return [word for word in VENDOR_WORDS if word in text]


def test_published_board_runs_json_and_titles_name_no_maker_product_or_model(published: Path) -> None:
    board = json.loads((published / CYCLE / "board.json").read_text())
    attempts = json.loads((published / CYCLE / "attempts.json").read_text())
    site = published / "site"
    # The JSON, without the agents' configuration fields and the rules as written: zero hits.
    shown = {k: v for k, v in board.items() if k not in NOT_GREPPED}
    assert _hits(json.dumps(_without_configurations(shown))) == []
    assert _hits(json.dumps(_without_configurations(attempts))) == []
    # The board and run pages: zero hits.
    pages = [site / "index.html", site / "cycles" / CYCLE / "index.html"]
    pages += sorted((site / "cycles" / CYCLE / "runs").glob("*.html"))
    pages += sorted((site / "cycles" / CYCLE / "projects").glob("*.html"))
    assert len(pages) >= 5
    for page in pages:
        assert _hits(page.read_text()) == [], page.name
    # The served recordings are titled with the identity; the raw start banners are hidden in them.
    casts = sorted((site / "evidence").rglob("recording.cast"))
    assert len(casts) == 2
    names = {a["name"] for a in board["agents"]}
    for cast in casts:
        text = cast.read_text()
        title = json.loads(text.splitlines()[0])["title"]
        assert (
            re.fullmatch(r"Argusic agent A-[0-9a-f]{6} / p1 / attempt 1", title)
            and title.split(" / ")[0] in names
        )
        assert _hits(text) == [], cast
        assert "pip install anthropic openai" in text  # the agent's command stays, vendor package names too
    for agent in MODEL:
        run_page = (site / "cycles" / CYCLE / "runs" / f"{CYCLE}.board.{agent}.p1.a1.html").read_text()
        assert "pip install anthropic openai" in run_page and "Welcome to" not in run_page
        assert "claude_code_version" not in run_page and "apiKeySource" not in run_page


def test_each_identity_has_a_page_with_its_exact_configuration_linked_from_board_and_runs(
    published: Path,
) -> None:
    board = json.loads((published / CYCLE / "board.json").read_text())
    attempts = json.loads((published / CYCLE / "attempts.json").read_text())["attempts"]
    site = published / "site"
    by_product = {tuple(a["configuration"]["product"]): a for a in board["agents"]}
    assert len(board["agents"]) == 4  # four configurations, four identities (the two runners differ by args)
    claude = by_product[("Claude Code",)]
    config = claude["configuration"]
    assert config["model"] == "claude-sonnet-4-5" and config["model_version"] == "claude-sonnet-4-5-20250929"
    assert (config["harness"], config["harness_version"], config["source"]) == (
        "claude-code",
        "2.1.332",
        "pin",
    )
    assert config["instructions_version"] and len(config["instructions_sha256"]) == 64
    assert config["limits"]["budget_scale"] == 1 / 360 and config["models_answered"] == [
        ["claude-sonnet-4-5-20250929", 1]
    ]
    page = (site / claude["page"]).read_text()
    block = page.split('id="configuration"', 1)[1].split("</table>", 1)[0]
    for value in ("claude-sonnet-4-5-20250929", "claude-code", "2.1.332", "Claude Code", config["sha256"]):
        assert value in block, value
    assert claude["identity"] in page and 'id="canonical"' in page
    # Linked from the board (the row's name) and from its run page (heading and configuration row).
    row = next(r for r in board["rows"] if r["agent_id"] == "claude-code")
    assert row["display_name"] == claude["name"] and row["agent"] == claude["identity"]
    index = (site / "cycles" / CYCLE / "index.html").read_text()
    assert f'href="../../{claude["page"]}"' in index
    run = next(a for a in attempts if a["attempt_id"] == f"{CYCLE}.board.claude-code.p1.a1")
    assert run["agent"] == claude["identity"] and run["model_matches"] is True
    assert (
        run["configuration"]["model_responded"] == "claude-sonnet-4-5-20250929"
        and "model_requested" not in run
    )
    run_page = (site / "cycles" / CYCLE / "runs" / f"{run['attempt_id']}.html").read_text()
    assert f'href="../../../agents/{claude["identity"]}.html#configuration"' in run_page
    # The identity is the attempt-time one: the recording's title and the published name agree.
    assert (site / "agents" / "index.html").is_file()
    # Published again: the same identities (stable while the configuration is).
    publish_board(CYCLE, published, None)
    again = json.loads((published / CYCLE / "board.json").read_text())
    assert [a["identity"] for a in again["agents"]] == [a["identity"] for a in board["agents"]]
