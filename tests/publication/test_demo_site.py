"""The demo cycle end to end (`argusic demo`: real Docker, DuckDB, dbt, GX), told once, then its public site
read as a visitor would, in Debian's headless Chromium (`make browser`).

One demo for the module (issue 23: it was made twice, here and in tests/cli/test_cli_demo.py): real Docker
attempts on the demo forge, ingested, built by dbt, validated, audited and published; publication builds
the site as its last step. The first test checks what the demo said and stored, and runs it a second time
(nothing measured again, the same board); the site's tests follow, in file order. Every page is opened
through the preview server (127.0.0.1): no console error, every link resolves, every number shown is a
published number, no digit on a page outside a marked field or quoted text; the recording plays; the same
published files give the same bytes; a correction (marts.attempt_corrections, hand-made here until the
review step makes it) shows its note and links the rerun.

ARGUSIC_SITE_SCREENSHOTS=<folder>: also write the screenshots there (docs/screenshots/site-*.png).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
from pathlib import Path
from types import SimpleNamespace

import duckdb
import pytest
from argusic.repair.labels import label_for
from argusic.sandbox.executor import docker_available
from test_attempt_page_browser import BROWSER_ARGS, chromium
from test_dbt_rules import DBT_PROJECT, sponsor
from test_site import RULE_PAGES, link_problems, number_problems, published_values

pytestmark = [
    pytest.mark.slow,
    pytest.mark.docker,
    pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers"),
]
CYCLE = "2026-12-demo"
SPONSORED = "readme-runner-norecover"
SPONSOR = ("Example Cloud", "compute")


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory: pytest.TempPathFactory):
    """`argusic demo` once (48 real attempts) in its own folders, its ARGUSIC_* set for the module;
    yields the home folder and what the demo printed."""
    from argusic.cli.main import app
    from typer.testing import CliRunner

    home = tmp_path_factory.mktemp("site-demo")
    # This test's agents registry: the no-recovery agent sponsored (the real registry has no sponsor)
    project = home / "dbt_project"
    shutil.copytree(DBT_PROJECT, project, ignore=shutil.ignore_patterns("target", "logs", "dbt_packages"))
    sponsor(project / "seeds" / "agents.csv", SPONSORED, *SPONSOR)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ARGUSIC_DBT_PROJECT", str(project))
        mp.setenv("ARGUSIC_WAREHOUSE", str(home / "warehouse" / "argusic.duckdb"))
        mp.setenv("ARGUSIC_EVIDENCE_URL", (home / "evidence_store").as_uri())
        mp.setenv("ARGUSIC_RUNS_DIR", str(home / "runs"))
        mp.setenv("ARGUSIC_PUBLISH_DIR", str(home / "published"))
        mp.setenv("ARGUSIC_FORGE_DIR", str(home / "forge"))
        mp.setenv("ARGUSIC_HOME", str(home))
        mp.delenv("ARGUSIC_ANALYST_DIR", raising=False)
        mp.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
        result = CliRunner().invoke(app, ["demo"])
        assert result.exit_code == 0, result.output
        yield home, result.output


@pytest.fixture(scope="module")
def demo(demo_run) -> Path:
    """The demo's publish folder."""
    return demo_run[0] / "published"


def test_demo_cycle_end_to_end_twice(demo_run) -> None:
    from argusic.cli.main import app
    from argusic.core.evidence import EvidenceStore
    from argusic.core.record import load_record_file
    from typer.testing import CliRunner

    isolated, output = demo_run
    first = SimpleNamespace(output=output)
    assert "Argusic board" in first.output
    assert "demo cycle 2026-12-demo: 48 attempts" in first.output
    assert "48/48" in first.output and "passes" in first.output and "ETA" in first.output  # the progress bar
    closing = first.output[first.output.index("where things are") :]
    places = ("board", "warehouse", "analyst copy", "notebook", "evidence", "Airflow UI", "make airflow-ui")
    for what in (*places, "what to do next", "cycle__2026-12-ui__"):
        assert what in closing, what
    db = isolated / "warehouse" / "argusic.duckdb"
    with duckdb.connect(str(db), read_only=True) as con:
        outcomes = {r[0] for r in con.execute("SELECT DISTINCT outcome FROM marts.attempt_scores").fetchall()}
        rows = con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0]
        recovered = con.execute(
            "SELECT count(*) FROM marts.attempt_scores a JOIN raw.run_records r USING (attempt_id) "
            "WHERE r.errors_fixed > 0 AND a.outcome = 'pass_full'"
        ).fetchone()[0]
        install_failed = con.execute(
            "SELECT count(*) FROM raw.run_records WHERE install_ok = false"
        ).fetchone()[0]
        run_failed = con.execute(
            "SELECT count(*) FROM raw.run_records WHERE install_ok AND NOT ran_ok"
        ).fetchone()[0]
        board = con.execute("SELECT agent_id, rank FROM marts.board ORDER BY rank").fetchall()
    assert outcomes == {"pass_full", "pass_mock", "fail", "timeout"}
    assert recovered > 0 and install_failed > 0 and run_failed > 0
    assert [rank for _, rank in board] == [1, 2]
    # The repair track: repairkit's bundled PR split in two, a simple PR, a spec-track PR; the gold
    # stand-in resolves each item of the main set, the empty one none.
    assert "repair track: 5 usable item(s) of repairkit" in first.output
    assert "Repair track — cycle 2026-12-demo" in first.output
    with duckdb.connect(str(db), read_only=True) as con:
        rates = con.execute(
            "SELECT agent_label, track, n, resolved FROM marts.repair_rates "
            "WHERE source_set = '2026-12-demo' ORDER BY agent_label, track"
        ).fetchall()
    gold, none = label_for("repair-demo-gold"), label_for("repair-demo-none")  # blinded (issue #31)
    assert sorted(rates) == sorted([
        (gold, "basic", 3, 3), (gold, "spec", 1, 1), (none, "basic", 3, 0), (none, "spec", 1, 0),
    ])  # fmt: skip
    # Every record's fingerprints match the stored bytes.
    store = EvidenceStore()
    records = [load_record_file(p) for p in (isolated / "runs").rglob("run_record.json")]
    assert len(records) == rows
    board_rows = sum(r.purpose == "board" for r in records)
    assert board_rows == 48
    for record in records:
        assert record.executor == "docker" and record.demo
        if record.purpose == "board":
            assert record.budget_seconds >= 5400
        else:  # the repair track's stand-ins, each with its patch and its grade as evidence
            assert record.purpose == "repair" and record.repair is not None, record.attempt_id
            for ref in (record.repair.patch, record.repair.grade):
                assert hashlib.sha256(store.read(ref.uri)).hexdigest() == ref.sha256
        for ref in (record.evidence.log, record.evidence.recording, record.evidence.report):
            if ref is not None:
                assert hashlib.sha256(store.read(ref.uri)).hexdigest() == ref.sha256
    published = isolated / "published" / "2026-12-demo"
    board_bytes = (published / "board.json").read_bytes()
    trace = json.loads((published / "attempts.json").read_text())["attempts"]
    assert len(trace) == board_rows  # the board's trace: repair attempts are never on the board
    # Every published number traces to a served log and recording and the raw fingerprints; a
    # private project's attempts (sealed until the cycle's private pool is revealed, issue 32) to
    # the raw fingerprints only: their served copies are published with the reveal.
    sealed = [a for a in trace if a.get("sealed")]
    assert len(sealed) == 12  # the demo pool's 2 private projects of 8, 2 agents × 3 attempts each
    for attempt in sealed:
        assert attempt["served_log_uri"] is None and attempt["served_recording_uri"] is None
        assert len(attempt["log_sha256"]) == 64 and len(attempt["recording_sha256"]) == 64
    for attempt in (a for a in trace if not a.get("sealed")):
        assert attempt["served_log_uri"] and attempt["served_recording_uri"], attempt["attempt_id"]
        assert len(attempt["log_sha256"]) == 64 and len(attempt["recording_sha256"]) == 64
        # linked relative to the published file, to the copy the public site holds (never file://)
        link = attempt["served_recording_uri"]
        assert link.startswith("../site/evidence/served/") and "file:" not in json.dumps(attempt)
        assert (published / link).read_bytes().startswith(b'{"version": 2')
    # The same cycle again adds no rows.
    second = CliRunner().invoke(app, ["demo"])
    assert second.exit_code == 0, second.output
    # Nothing measured, nothing repeated: one line says so, then the board and where things are.
    assert "48 attempt(s), 48 already measured: nothing to run" in second.output
    assert " / attempt " not in second.output and "48/48" not in second.output
    assert "where things are" in second.output
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM raw.run_records").fetchone()[0] == rows
    assert (published / "board.json").read_bytes() == board_bytes  # same data, same publication


@pytest.fixture(scope="module")
def served(demo: Path):
    """The preview server on 127.0.0.1 (any free port), serving the published site."""
    from argusic.publication.site.serve import make_server

    server = make_server(demo / "site", "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    size = [a for a in BROWSER_ARGS if not a.startswith("--window-size")]
    with chromium(tmp_path_factory.mktemp("chromium"), (*size, "--window-size=1200,900")) as driver:
        yield driver


MARKS_JS = """
const page = arguments[0];
const marks = [];
document.querySelectorAll('[data-n]').forEach(e => marks.push(
  {page: page, n: e.dataset.n, scale: e.dataset.scale, digits: e.dataset.digits, text: e.textContent}));
document.querySelectorAll('[data-v]').forEach(e => marks.push({page: page, v: e.dataset.v}));
const skip = '[data-n], [data-v], [data-quote], [data-doc], [data-setting], pre, script, style, #player';
const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
const loose = [];
while (walker.nextNode()) {
  const node = walker.currentNode;
  if (/(^|[^A-Za-z0-9])[0-9]/.test(node.textContent) && !node.parentElement.closest(skip)) {
    loose.push(node.textContent.trim());
  }
}
const rules = Array.from(document.querySelectorAll('#rules a')).map(a => a.getAttribute('href'));
const dispute = document.getElementById('dispute');
return {marks: marks, loose: loose, title: document.title, rules: rules,
        dispute: dispute ? dispute.innerText : null};
"""


def _kind(relative: str) -> str:
    parts = relative.split("/")
    if parts[0] == "agents":  # agents/<identity>.html and agents/index.html (issue 32)
        return "agents"
    return parts[2] if len(parts) == 4 else parts[-1].removesuffix(".html")


def _shots_dir(tmp_path: Path) -> Path:
    return Path(os.environ.get("ARGUSIC_SITE_SCREENSHOTS") or tmp_path)


def test_published_files_are_public_and_carry_no_file_links(demo: Path) -> None:
    folder = demo / CYCLE
    for name in ("board.json", "attempts.json"):
        text = (folder / name).read_text()
        assert "file:" not in text, name
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o644
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    board = json.loads((folder / "board.json").read_text())
    assert board["attempts_through"].endswith("Z")
    attempts = json.loads((folder / "attempts.json").read_text())["attempts"]
    for attempt in attempts:
        assert attempt["started_at"].endswith("Z") and attempt["ended_at"].endswith("Z")
        if attempt.get("sealed"):  # a private project's: no served copy until the reveal
            continue
        link = attempt["served_log_uri"]
        assert link.startswith("../site/evidence/served/") and (folder / link).is_file()
    # Every file and folder of the site is readable by everyone.
    for path in (demo / "site").rglob("*"):
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if path.is_dir() else 0o644), path
    kinds = {k["kind"]: k for k in board["target_kinds"]}
    assert kinds["repository"]["status"] == "in_use" and kinds["repository"]["targets_tested"] == 8
    # install-and-run attempts only: the demo's repair attempts (repairkit) are not the site's runs
    assert kinds["repository"]["runs_recorded"] == 48
    assert all("targets_tested" not in k for name, k in kinds.items() if name != "repository")


def _readme_lines(entry) -> tuple[str, list[str], str]:
    """A pool entry's README at its pinned commit: its first sentence, the commands it gives, all of it."""
    import subprocess

    text = subprocess.run(
        ["git", "-C", entry.repo_url, "show", f"{entry.commit}:README.md"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    readme = text.splitlines()
    prose = next(line for line in readme if line.strip() and not line.startswith("#"))
    fenced, commands = False, []
    for line in readme:
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and len(line.strip()) >= 12:
            commands.append(line.strip())
    return prose, commands, text


def test_no_published_byte_names_a_private_project(demo: Path) -> None:
    """The demo publishes mid-cycle (its cycle ends on the month's last day): nothing under the
    publish dir names a private project of its pool: id, repository, commit, its README's first
    sentence or a command its README gives that no public project's README gives too (the reference
    harness's log quotes them). Issue 32."""
    from argusic.sources.pool import load_pool

    pool = load_pool(demo.parent / "runs" / "pools" / CYCLE / "pool.json")
    assert len(pool.private) == 2
    files = [p.read_bytes() for p in demo.rglob("*") if p.is_file()]
    assert len(files) > 100
    public = "\n".join(_readme_lines(e)[2] for e in pool.public)
    for entry in pool.private:
        prose, commands, _ = _readme_lines(entry)
        distinctive = [c for c in commands if c not in public]
        assert distinctive, entry.project_id
        for needle in [entry.project_id, entry.repo_url, entry.commit, prose, *distinctive]:
            assert not any(needle.encode() in data for data in files), needle


def test_every_link_resolves(demo: Path) -> None:
    checked, problems = link_problems(demo / "site")
    assert problems == []
    assert checked > 500  # 62 pages: navigation, projects, runs, evidence, assets


def test_every_page_in_chromium_shows_only_published_numbers(
    demo: Path, served: str, browser, tmp_path
) -> None:
    site = demo / "site"
    pages = sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))
    kinds = {_kind(p) for p in pages}
    assert kinds == {
        "index", "pool", "projects", "runs", "hardware", "kinds", "instructions", "harness",
        "methodology", "content", "disputes", "agents", "paired",
    }, kinds  # fmt: skip
    # paired: repair/paired.html, from the repair export publishing now writes (issue 31)
    assert len([p for p in pages if "/runs/" in p]) == 48
    numbers, strings = published_values(demo)
    marks, loose, errors, footers, disputes = [], [], [], [], []
    for page in pages:
        browser.get(served + page)
        found = browser.execute_script(MARKS_JS, page)
        marks += found["marks"]
        loose += [f"{page}: {text!r}" for text in found["loose"]]
        errors += [f"{page}: {e['message']}" for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        root = "../" * page.count("/")
        if found["rules"] != [f"{root}{name}" for name in RULE_PAGES]:
            footers.append(f"{page}: {found['rules']}")
        result = "/runs/" in page or "/projects/" in page
        if result and "Dispute this result" not in (found["dispute"] or ""):
            disputes.append(page)
    assert errors == []  # no console error anywhere (a blocked script or a missing file would be one)
    assert footers == [] and disputes == []  # the rules in every footer, a dispute section on each result
    assert loose == []  # no number outside a marked field (a published number or string) or quoted text
    assert number_problems(marks, numbers, strings) == []
    shown = [m for m in marks if "n" in m]
    assert len(shown) > 500  # 62 pages: the board, verdicts, points, budgets, hardware
    # The board shows the board's own numbers: the first agent's score and pass rate.
    board = json.loads((demo / CYCLE / "board.json").read_text())
    browser.get(served + "index.html")
    cells = browser.execute_script(
        "return Array.from(document.querySelectorAll('#board tbody tr:first-child .n')).map(e => e.dataset.n)"
    )
    first = board["rows"][0]
    assert cells[:4] == [json.dumps(first[k]) for k in ("rank", "board_score", "pass_rate", "passes")]
    browser.save_screenshot(str(_shots_dir(tmp_path) / "site-board.png"))


def test_the_board_shows_the_sponsor_and_the_harness_edition(demo: Path, served: str, browser) -> None:
    """The sponsored agent's row says who sponsored it and what was given, next to its result; the
    board says which harness edition the cycle ran (every attempt recorded one) and links its entry
    in the harness changelog, which gives its written and effective dates; a run page of the sponsored
    agent says so too, with the edition and the image digest the attempt ran in."""
    from argusic.attempts.environment import current_edition
    from argusic.core.evidence import served_segment
    from selenium.webdriver.common.by import By

    board = json.loads((demo / CYCLE / "board.json").read_text())
    edition = current_edition().edition
    assert board["environment"]["is_uniform"] is True and board["environment"]["harness_edition"] == edition
    assert board["environment"]["attempts_without_environment"] == 0
    rows = {r["configuration"]["agent_id"]: r for r in board["rows"]}  # the operator's id (issue 32)
    assert (rows[SPONSORED]["sponsor"], rows[SPONSORED]["sponsorship"]) == SPONSOR
    assert all(r["sponsor"] is None for a, r in rows.items() if a != SPONSORED)
    assert {r["harness_edition"] for r in board["rows"]} == {edition}

    browser.get(served + "index.html")
    # each row names its agent by its neutral identity, a link to the agent's page (issue 32)
    cells = {
        tr.find_element(By.CSS_SELECTOR, "td:nth-child(2) a").text: tr.find_element(
            By.CSS_SELECTOR, "td:nth-child(2)"
        ).text
        for tr in browser.find_elements(By.CSS_SELECTOR, "#board tbody tr")
    }
    sponsored = rows[SPONSORED]["display_name"]
    assert sponsored.startswith("Argusic agent A-") and set(cells) == {
        r["display_name"] for r in rows.values()
    }
    assert f"Sponsored by {SPONSOR[0]} ({SPONSOR[1]})" in cells[sponsored]
    assert all("Sponsored" not in text for shown, text in cells.items() if shown != sponsored)
    line = browser.find_element(By.ID, "harness-edition")
    assert line.text.startswith(f"Harness edition: {edition}, the same for every agent and attempt")
    line.find_element(By.LINK_TEXT, edition).click()
    assert browser.current_url.endswith(f"harness.html#edition-{edition}")
    entry = browser.find_element(By.ID, f"edition-{edition}").text
    published = next(e for e in board["harness_editions"] if e["edition"] == edition)
    assert published["effective_on"] and published["effective_on"] in entry
    assert published["written_on"] in entry

    attempts = json.loads((demo / CYCLE / "attempts.json").read_text())["attempts"]
    attempt = next(a for a in attempts if a["configuration"]["agent_id"] == SPONSORED)
    assert attempt["harness_edition"] == edition and attempt["image_digest"].startswith("sha256:")
    browser.get(f"{served}cycles/{CYCLE}/runs/{served_segment(attempt['attempt_id'])}.html")
    assert (
        f"Sponsored by {SPONSOR[0]} ({SPONSOR[1]})" in browser.find_element(By.CSS_SELECTOR, "p.label").text
    )
    assert browser.find_element(By.ID, "edition").text.startswith(edition)
    assert attempt["image_digest"] in browser.find_element(By.ID, "ran-under").text


def test_the_rules_pages_in_chromium(demo: Path, served: str, browser, tmp_path) -> None:
    """The methodology page lists every edition the publication carries with its effective date from
    the records (the demo's attempts ran under the current edition: effective, with its runs) and
    renders the published METHODOLOGY.md; a sealed project's run page disputes under its label."""
    from argusic.core.evidence import served_segment
    from selenium.webdriver.common.by import By

    board = json.loads((demo / CYCLE / "board.json").read_text())
    document, editions = board["methodology"], board["methodology_editions"]
    assert hashlib.sha256(document["text"].encode()).hexdigest() == document["sha256"]
    assert len(editions) >= 11 and all(e["summary"] for e in editions)
    attempts = json.loads((demo / CYCLE / "attempts.json").read_text())["attempts"]
    ran = {a["methodology_version"] for a in attempts}
    assert {e["edition"] for e in editions if e["effective_on"]} >= ran
    browser.get(served + "methodology.html")
    rows = browser.find_elements(By.CSS_SELECTOR, "#editions tbody tr")
    assert [r.get_attribute("id") for r in rows] == [f"methodology-{e['edition']}" for e in editions]
    for row, edition in zip(rows, editions, strict=True):
        if edition["effective_on"]:
            assert edition["effective_on"] in row.text
    article = browser.find_element(By.ID, "methodology-text")
    assert article.get_attribute("data-doc") == document["sha256"]
    assert "Argusic methodology" in article.find_element(By.TAG_NAME, "h1").text
    assert article.find_elements(By.CSS_SELECTOR, "h2#m-11-editions-changelog")
    browser.save_screenshot(str(_shots_dir(tmp_path) / "site-methodology.png"))
    browser.get(served + "content.html")
    assert (
        "It runs, the demo works."
        in browser.find_element(By.ID, "dashes").find_element(By.XPATH, "following-sibling::p").text
    )
    sealed = next(a for a in attempts if a.get("sealed"))
    browser.get(f"{served}cycles/{CYCLE}/runs/{served_segment(sealed['attempt_id'])}.html")
    assert sealed["attempt_id"] in browser.find_element(By.ID, "dispute").text
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_project_page_links_where_each_attempt_stopped(demo: Path, served: str, browser, tmp_path) -> None:
    from selenium.webdriver.common.by import By

    board = json.loads((demo / CYCLE / "board.json").read_text())
    project = next(p for p in board["projects"] if p["verdict"] != "runs" and not p.get("sealed"))
    browser.get(f"{served}cycles/{CYCLE}/projects/{project['project_id']}.html")
    assert browser.find_element(By.ID, "verdict").text == "Verdict: " + project["verdict"].replace("_", " ")
    stops = browser.find_elements(By.CSS_SELECTOR, "#attempts a[href$='#stopped']")
    assert len(stops) == project["cycle_recorded_attempts"]  # this cycle's attempts (issue 29: one scope)
    browser.save_screenshot(str(_shots_dir(tmp_path) / "site-project.png"))
    stops[0].click()
    stopped = browser.find_element(By.ID, "stopped").text
    assert stopped.strip() and browser.current_url.endswith("#stopped")


def test_a_timeout_says_so_at_the_end_of_its_recording(demo: Path, served: str, browser, tmp_path) -> None:
    """Issue 29: a timed-out attempt's run page splits its durations (the agent's time against the
    budget it got, our overhead apart) and says, under the player, that it was killed at the budget;
    its project page labels each figure's scope."""
    from argusic.core.evidence import served_segment
    from selenium.webdriver.common.by import By

    attempts = json.loads((demo / CYCLE / "attempts.json").read_text())["attempts"]
    attempt = min((a for a in attempts if a["end_reason"] == "timeout" and not a.get("sealed")), key=str)
    assert attempt["agent_seconds"] >= attempt["effective_budget_seconds"]  # killed at the budget
    assert attempt["overhead_seconds"] > 0 and attempt["wall_seconds"] > attempt["agent_seconds"]
    browser.get(f"{served}cycles/{CYCLE}/runs/{served_segment(attempt['attempt_id'])}.html")
    assert browser.find_element(By.ID, "durations").text.startswith("agent ")
    assert "our overhead" in browser.find_element(By.ID, "durations").text
    ending = browser.find_element(By.ID, "recording-end").text
    assert ending.startswith("End of the recording: killed at the ") and "of agent time" in ending
    browser.execute_script("document.getElementById('recording').scrollIntoView()")
    browser.save_screenshot(str(_shots_dir(tmp_path) / "site-run-timeout.png"))
    browser.get(f"{served}cycles/{CYCLE}/projects/{attempt['project_id']}.html")
    assert "(board and verdict, any agent)" in browser.find_element(By.ID, "this-cycle").text
    assert "every cycle" in browser.find_element(By.ID, "all-cycles").text
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_recording_plays(demo: Path, served: str, browser, tmp_path) -> None:
    from argusic.core.evidence import served_segment
    from argusic.publication.replay import strip_terminal_codes
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    attempts = json.loads((demo / CYCLE / "attempts.json").read_text())["attempts"]
    attempt = max(attempts, key=lambda a: (a["served_recording_bytes"] or 0, a["attempt_id"]))  # the longest
    cast = (demo / CYCLE / attempt["served_recording_uri"]).read_text().splitlines()
    drawn = strip_terminal_codes("".join(json.loads(line)[2] for line in cast[1:]))
    last_command = [ln for ln in drawn.splitlines() if ln.startswith("$ ")][-1][2:].strip()

    browser.get(f"{served}cycles/{CYCLE}/runs/{served_segment(attempt['attempt_id'])}.html")
    wait = WebDriverWait(browser, 30, poll_frequency=0.05)
    wait.until(
        lambda d: d.execute_script("return !!(window.argusicPlayer && document.querySelector('.ap-player'))")
    )
    assert browser.execute_script("return window.argusicPlayer.getCurrentTime()") == 0
    browser.execute_async_script(
        "const done = arguments[0]; window.argusicPlayer.play().then(() => done(true));"
    )
    # Playing advances the player's clock and the terminal draws the recording up to its last command.
    wait.until(lambda d: d.execute_script("return window.argusicPlayer.getCurrentTime()") > 0)
    terminal = "return document.querySelector('.ap-term').textContent"
    wait.until(lambda d: last_command in d.execute_script(terminal))
    assert "$ " in browser.execute_script(terminal)
    assert browser.find_element(By.ID, "masking").text.startswith("no masking was needed")
    browser.execute_script("document.getElementById('player').scrollIntoView(); window.scrollBy(0, -220)")
    browser.save_screenshot(str(_shots_dir(tmp_path) / "site-run.png"))
    assert [e for e in browser.get_log("browser") if e["level"] == "SEVERE"] == []


def test_same_published_files_give_the_same_site(demo: Path, tmp_path: Path) -> None:
    from argusic.publication.site import build_site

    def tree(root: Path) -> dict[str, tuple[int, bytes]]:
        return {
            str(p.relative_to(root)): (stat.S_IMODE(p.stat().st_mode), p.read_bytes() if p.is_file() else b"")
            for p in sorted(root.rglob("*"))
        }

    first = tree(build_site(demo, out=tmp_path / "a"))
    second = tree(build_site(demo, out=tmp_path / "b"))
    assert first == second and len(first) > 100
    assert tree(demo / "site") == first  # and the site publication built is that very site


def test_a_correction_shows_its_note_and_links_the_rerun(demo: Path, served: str, browser) -> None:
    """marts.attempt_corrections (the review step's contract), hand-made: the original's page shows
    the note (authors' dashes as commas) and links the rerun; the rerun's page links back."""
    import duckdb
    from argusic.core.evidence import served_segment
    from argusic.core.layout import publish_dir
    from argusic.core.settings import warehouse_path
    from argusic.publication.board import publish_board
    from selenium.webdriver.common.by import By

    attempts = json.loads((demo / CYCLE / "attempts.json").read_text())["attempts"]
    public = [a for a in attempts if not a.get("sealed")]
    original, rerun = public[0]["attempt_id"], public[1]["attempt_id"]
    # the warehouse knows them by the operator's ids; published, the agent part is the identity's code
    from argusic.publication.files import operator_attempt_id

    stored = [operator_attempt_id(public[0]), operator_attempt_id(public[1])]
    assert stored != [original, rerun]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ARGUSIC_WAREHOUSE", str(demo.parent / "warehouse" / "argusic.duckdb"))
        mp.setenv("ARGUSIC_EVIDENCE_URL", (demo.parent / "evidence_store").as_uri())
        mp.setenv("ARGUSIC_PUBLISH_DIR", str(demo))
        with duckdb.connect(str(warehouse_path())) as con:
            # a row in the real mart (marts.attempt_corrections, built by dbt from dispute rulings)
            con.execute(
                "INSERT INTO marts.attempt_corrections "
                "(attempt_id, dispute_id, note, decided_by, decided_at, rerun_attempt_id) VALUES "
                "(?, 'd-1', 'The mirror was stale — our fault', 'reviewer', "
                "TIMESTAMP '2026-12-20 10:00:00', ?)",
                stored,
            )
        try:
            publish_board(CYCLE, publish_dir())
            corrections = json.loads((demo / CYCLE / "board.json").read_text())["corrections"]
            assert corrections == [
                {"attempt_id": original, "dispute_id": "d-1", "note": "The mirror was stale — our fault",
                 "decided_by": "reviewer", "decided_at": "2026-12-20T10:00:00Z", "rerun_attempt_id": rerun}
            ]  # fmt: skip
            browser.get(f"{served}cycles/{CYCLE}/runs/{served_segment(original)}.html")
            note = browser.find_element(By.CSS_SELECTOR, "p.correction")
            assert "The mirror was stale, our fault" in note.text and "2026-12-20 10:00:00 UTC" in note.text
            note.find_element(By.LINK_TEXT, rerun).click()
            assert browser.current_url.endswith(f"{served_segment(rerun)}.html")
            back = browser.find_element(By.CSS_SELECTOR, "p.correction")
            assert "redoes" in back.text and back.find_element(By.LINK_TEXT, original)
        finally:
            with duckdb.connect(str(warehouse_path())) as con:
                con.execute("DELETE FROM marts.attempt_corrections WHERE dispute_id = 'd-1'")
