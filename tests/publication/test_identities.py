"""Neutral Argusic identities in what is published (issue 32, methodology sections 5 and 18).

A cycle of four agents (two model-backed: claude-code and codex, whose registry rows and records name
their maker, product and models) is published the real way (warehouse marts, ingested records with
served copies masked by the presentation step, the environment pin, then the site). The guard greps
the board and run pages, board.json and attempts.json (without the agents' ``configuration`` fields)
and the served recordings' titles for the makers', products' and models' names: zero hits. Each
agent page shows the exact configuration, and is linked from the board and run pages.

The operator's agent ids (``claude-code``, ``codex``, ``readme-runner``...) are grepped too: in
every published attempt id (the agent part is the identity's code), every file name under the
publish dir, every link of the pages and every JSON field outside ``configuration`` (where the agent
page's exact configuration names the harness): zero hits.

Left out of the grep, on purpose: the rules as published (board.json's ``methodology``,
``methodology_editions``, ``harness_editions``: the methodology and the harness changelog are quoted as
written), and the standard instructions' harness list (lower-case harness ids, names in code). The
log shown on a run page keeps every command the agent ran: ``pip install anthropic openai`` stays
(names in packages are not censored); only the tool's own start banner is hidden.
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


def _publish(isolated: Path, record_doc: dict) -> tuple[Path, Path]:
    """The cycle pinned, one recorded attempt per model agent, the marts, the publication: (publish
    dir, warehouse)."""
    pin = ensure_pin(CYCLE, "local", ["runner"], True, 1 / 360, agents=agent_pins(AGENTS.values()))
    for agent in MODEL:
        _record(isolated, record_doc, agent, recording_title(identity_name(pin, agent), "p1", 1))
    db = isolated / "warehouse" / "argusic.duckdb"
    write_marts(db, _frames())
    out = isolated / "published"
    publish_board(CYCLE, out, db)
    return out, db


@pytest.fixture
def published(isolated: Path, record_doc: dict, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    return _publish(isolated, record_doc)[0]


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
        code = next(a["identity"] for a in board["agents"] if agent in a["configuration"]["agent_ids"])
        run_page = (site / "cycles" / CYCLE / "runs" / f"{CYCLE}.board.{code}.p1.a1.html").read_text()
        assert "pip install anthropic openai" in run_page and "Welcome to" not in run_page
        assert "claude_code_version" not in run_page and "apiKeySource" not in run_page


AGENT_ID_RE = re.compile("|".join(sorted(map(re.escape, AGENTS.values()), key=len, reverse=True)))
ATTEMPT_RE = re.compile(rf"{CYCLE}\.board\.(A-[0-9a-f]{{6}})\.p1\.a1")


def test_published_attempt_ids_file_names_and_links_name_no_agent_id(published: Path) -> None:
    board = json.loads((published / CYCLE / "board.json").read_text())
    attempts = json.loads((published / CYCLE / "attempts.json").read_text())["attempts"]
    codes = {a["identity"] for a in board["agents"]}
    # Every attempt id as published carries the identity's code, never the operator's agent id.
    ids = [a["attempt_id"] for a in attempts] + [a["rerun_of"] for a in attempts if a.get("rerun_of")]
    ids += [p["verified_by_attempt_id"] for p in board["projects"] if p.get("verified_by_attempt_id")]
    ids += [c[k] for c in board["corrections"] for k in ("attempt_id", "rerun_attempt_id") if c.get(k)]
    assert len(ids) >= 2 and [i for i in ids if AGENT_ID_RE.search(i)] == []
    assert all(i.split(".")[2] in codes for i in ids)
    for model in MODEL:
        assert any(ATTEMPT_RE.fullmatch(a["attempt_id"]) and a["configuration"]["agent_id"] == model
                   for a in attempts)  # fmt: skip
    # The JSON outside the configurations (and the rules as written): no agent id.
    shown = {k: v for k, v in board.items() if k not in NOT_GREPPED}
    assert AGENT_ID_RE.findall(json.dumps(_without_configurations(shown))) == []
    assert AGENT_ID_RE.findall(json.dumps(_without_configurations(attempts))) == []
    # Every file name under the publish dir, and every link of every page.
    names = [str(p.relative_to(published)) for p in published.rglob("*")]
    assert len(names) > 20 and [n for n in names if AGENT_ID_RE.search(n)] == []
    served = [n for n in names if n.endswith(("log.txt", "recording.cast"))]
    assert len(served) == 4 and all(ATTEMPT_RE.search(n) for n in served)
    links = []
    for page in (published / "site").rglob("*.html"):
        links += re.findall(r'(?:href|src)="([^"]*)"', page.read_text())
    assert len(links) > 50 and [link for link in links if AGENT_ID_RE.search(link)] == []
    runs = [link for link in links if "/runs/" in link or link.startswith("../runs/")]
    assert all(ATTEMPT_RE.search(link) for link in runs)
    for attempt in attempts:
        for kind in ("log", "recording"):
            uri = attempt.get(f"served_{kind}_uri")
            if uri:
                assert (published / CYCLE / uri).resolve().is_file(), uri
    # The board's result pages: no agent id in their text either (the logs of these runs quote none).
    site = published / "site"
    pages = [site / "index.html", site / "cycles" / CYCLE / "index.html"]
    pages += sorted((site / "cycles" / CYCLE / "runs").glob("*.html"))
    pages += sorted((site / "cycles" / CYCLE / "projects").glob("*.html"))
    assert [
        (p.name, AGENT_ID_RE.findall(p.read_text())) for p in pages if AGENT_ID_RE.search(p.read_text())
    ] == []


def test_a_published_attempt_id_maps_back_to_the_attempt(published: Path, isolated: Path) -> None:
    """What a maintainer reads on a run page, typed into the dispute form, names the attempt
    (argusic.publication.sealing.published_attempt, used by review.disputes.file)."""
    from argusic.publication.sealing import published_attempt
    from argusic.warehouse.db import connect

    attempts = json.loads((published / CYCLE / "attempts.json").read_text())["attempts"]
    db = isolated / "warehouse" / "argusic.duckdb"
    with connect(db, read_only=True) as con:
        for agent in MODEL:
            shown = next(a["attempt_id"] for a in attempts if a["configuration"].get("agent_id") == agent
                         and ATTEMPT_RE.fullmatch(a["attempt_id"]))  # fmt: skip
            assert published_attempt(con, shown, published) == f"{CYCLE}.board.{agent}.p1.a1"
            # recomputed from the cycle's pin when no board is published
            assert published_attempt(con, shown, isolated / "nowhere") == f"{CYCLE}.board.{agent}.p1.a1"
        with pytest.raises(LookupError):
            published_attempt(con, f"{CYCLE}.board.A-000000.p1.a1", published)


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
    row = next(r for r in board["rows"] if r["configuration"]["agent_id"] == "claude-code")
    assert row["display_name"] == claude["name"] and row["agent"] == claude["identity"]
    index = (site / "cycles" / CYCLE / "index.html").read_text()
    assert f'href="../../{claude["page"]}"' in index
    run = next(a for a in attempts if a["attempt_id"] == f"{CYCLE}.board.{claude['identity']}.p1.a1")
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


def test_the_cycle_runs_log_lines_find_each_attempt_under_its_published_id(
    published: Path, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The cycle DAG's publish task logs each planned attempt as the rubric scored it, read from the
    published attempts.json (argusic.publication.board.published_attempt_lines): a spec names the
    operator's agent id, the published row the identity's code; the line is found, not 'not in the
    published attempts'."""
    from argusic.core.spec import AttemptSpec
    from argusic.publication.board import published_attempt_lines

    monkeypatch.setenv("ARGUSIC_PUBLISH_DIR", str(published))
    paths = []
    for agent in [*MODEL, "nobody"]:
        spec = AttemptSpec(
            cycle_id=CYCLE, agent_id=agent, project_id="p1", repo_url="https://example.org/p1.git",
            commit="0" * 40, tier="standard", attempt_no=1,
        )  # fmt: skip
        path = isolated / "specs" / f"{spec.attempt_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(spec.model_dump_json())
        paths.append(str(path))
    lines = published_attempt_lines(CYCLE, paths)
    assert lines[0].startswith("attempts of this run as scored by the rubric")
    by_agent = dict(zip([*MODEL, "nobody"], lines[1:], strict=True))
    for agent in MODEL:
        assert "not in the published attempts" not in by_agent[agent], by_agent[agent]
    assert "not in the published attempts" in by_agent["nobody"]


def test_under_a_public_evidence_base_served_copies_are_linked_by_the_published_id(
    isolated: Path, record_doc: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With ARGUSIC_PUBLIC_EVIDENCE_BASE the links point into the evidence store itself: publishing
    puts each linked served copy under the published id's key (the same bytes, content-addressed),
    so no link names the operator's agent id, and every link resolves in the store."""
    import hashlib

    base = "https://evidence.example.org/argusic/"
    monkeypatch.setenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", base)
    out, db = _publish(isolated, record_doc)
    attempts = json.loads((out / CYCLE / "attempts.json").read_text())["attempts"]
    links = [a[f"served_{k}_uri"] for a in attempts for k in ("log", "recording") if a.get(f"served_{k}_uri")]
    assert len(links) == 4 and all(link.startswith(base) for link in links)
    assert [link for link in links if AGENT_ID_RE.search(link)] == []
    store = EvidenceStore()
    for link in links:
        key = link[len(base) :]
        data = store.read(store.uri_for(key))
        assert key.split("/")[2] == hashlib.sha256(data).hexdigest()  # the key names its bytes
    pages = list((out / "site").rglob("*.html"))
    hrefs = [h for p in pages for h in re.findall(r'(?:href|src)="([^"]*)"', p.read_text())]
    assert [h for h in hrefs if AGENT_ID_RE.search(h)] == []
    assert any(h.startswith(base + "served/") for h in hrefs)
    # Publishing again changes nothing (the copies are write-once and already there).
    publish_board(CYCLE, out, db)
