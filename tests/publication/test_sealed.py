"""Sealed until the cycle ends (issue 32, methodology section 6): a cycle published mid-cycle names no
private project anywhere in what it publishes; once the private part is revealed, republishing (a new
board, approved like any other) names them all; the board's numbers are the same either way.

The guard greps every byte under the publish dir (board.json, attempts.json, the pools, every site
page, the served copies the site holds, its assets) for each private project's id, repository URL
and path, pinned commit and a distinctive string of its README (which the agent's log and words
quote)."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

import pytest
from argusic.core.evidence import EvidenceStore
from argusic.publication.board import BoardChanged, compose_publication, publish_board
from argusic.publication.sealing import PrivateProject, Seal
from argusic.review import publication
from argusic.sources.pool import Pool, PoolEntry, reveal_private, write_pool
from argusic.warehouse.dbt_build import PublicationBlocked
from argusic.warehouse.load_runs import ingest
from conftest import write_record
from test_expectations import good_frames, write_marts

CYCLE = "c1"
T = __import__("datetime").datetime(2026, 12, 10, 10, 0)
README = {
    "quietwave": "QUIETWAVE renders hushed sine waves for lullaby synthesizers",
    "hushproj": "HUSHPROJ whispers config files into place",
}
PRIVATE = {  # project id -> (repository URL, pinned commit)
    "quietwave": ("https://forge.example.org/acme/quietwave-synth.git", "5eed" * 10),
    "hushproj": ("https://forge.example.org/acme/hush-project.git", "babe" * 10),
}
PUBLIC = {"p1": ("https://forge.example.org/acme/p-one.git", "a1" * 20)}


def _frames():
    """good_frames' cycle, its project p2 renamed hushproj (private), plus quietwave (private,
    with a recorded attempt and served copies) and p1's recorded attempt (public)."""
    import pandas as pd

    frames = good_frames()
    for name in ("attempt_scores", "pair_sets", "project_review", "project_verdicts"):
        frames[name] = frames[name].replace({"project_id": {"p2": "hushproj"}})
    review = frames["project_review"]
    review["review_status"] = ["not_under_review", "environment_at_fault"]
    review["excluded_from_board"] = [False, False]
    review["decided_by"] = [None, "ana"]
    review["decided_at"] = [None, T]
    # a person's note on a private project may name it: sealed too
    review["decision_note"] = [None, f"hushproj at {PRIVATE['hushproj'][0]} needs a GPU"]
    verdicts = frames["project_verdicts"]
    verdicts.loc[verdicts.project_id == "hushproj", "commit_sha"] = PRIVATE["hushproj"][1]
    verdicts.loc[verdicts.project_id == "p1", "commit_sha"] = PUBLIC["p1"][1]
    frames["project_verdicts"] = pd.concat(
        [verdicts, pd.DataFrame([["quietwave", PRIVATE["quietwave"][1], "runs", "readme-runner", 1]],
                                columns=verdicts.columns)],
        ignore_index=True,
    )  # fmt: skip
    scores = frames["attempt_scores"]
    extra = []
    for project in ("quietwave", "p1"):
        row = scores.iloc[[len(scores) - 1]].copy()  # the verdict attempt "v-p2-1", as a template
        row["attempt_id"] = f"{CYCLE}.verdict.readme-runner.{project}.a1"
        row["project_id"] = project
        row["agent_id"] = "readme-runner"
        extra.append(row)
    frames["attempt_scores"] = pd.concat([scores, *extra], ignore_index=True)
    # a correction of the private attempt, its note naming the project
    frames["attempt_corrections"] = pd.DataFrame(
        [
            [
                f"{CYCLE}.verdict.readme-runner.quietwave.a1",
                "d1",
                "quietwave's mirror was down",
                "ana",
                T,
                None,
            ]
        ],
        columns=["attempt_id", "dispute_id", "note", "decided_by", "decided_at", "rerun_attempt_id"],
    )
    return frames


def _record(isolated: Path, record_doc: dict, project: str, url: str, commit: str) -> None:
    """A recorded attempt whose log and recording quote the README and clone the repository; its
    served copies made the real way (masked, stored under served/<attempt id>/…), then ingested."""
    from argusic.attempts.common import with_presentation
    from argusic.core.record import parse_record
    from test_masking import make_cast

    store = EvidenceStore()
    doc = json.loads(json.dumps(record_doc))
    attempt_id = f"{CYCLE}.verdict.readme-runner.{project}.a1"
    readme = README.get(project, "a public project")
    doc.update(cycle_id=CYCLE, attempt_id=attempt_id, purpose="verdict", project_id=project, commit=commit)
    doc["report"]["verified_how"] = f"{project} --demo (README: {readme})"
    doc["report"]["final_state"] = f"Installed {project} as the README says: {readme}."
    lines = [f"$ git clone {url}", f"$ cat README.md\n{readme}", f"$ git checkout {commit}", "ok"]
    folder = isolated / "landing" / project
    folder.mkdir(parents=True)
    for kind, data in (
        ("log", ("\n".join(lines) + "\n").encode()),
        ("recording", make_cast([line + "\r\n" for line in lines])),
        ("report", json.dumps({"readme": readme}).encode()),
    ):
        (folder / kind).write_bytes(data)
        doc["evidence"][kind] = store.put_file(folder / kind).as_ref()
    record = with_presentation(parse_record(doc), store)
    assert record.presentation and record.presentation.log and not record.presentation.withheld
    ingest([write_record(isolated / "r" / attempt_id, json.loads(record.to_json()))])


def _pool(runs: Path, published: Path) -> Path:
    entries = [
        PoolEntry(project_id=pid, repo_url=url, commit=commit, language="python", difficulty="easy",
                  tier="standard", visibility=visibility)
        for visibility, group in (("private", PRIVATE), ("public", PUBLIC))
        for pid, (url, commit) in group.items()
    ]  # fmt: skip
    pool = Pool(
        cycle_id=CYCLE, cycle_starts=date(2026, 12, 1), cycle_ends=date(2026, 12, 31),
        catalogue_sha256="0" * 64, entries=entries, excluded={},
    )  # fmt: skip
    return Path(write_pool(pool, runs / "pools", published)["pool"])


def _needles(project: str) -> list[str]:
    url, commit = PRIVATE[project]
    path = url.removeprefix("https://forge.example.org/").removesuffix(".git")
    return [project, url, path, commit, README[project]]


def _hits(folder: Path) -> dict[str, list[str]]:
    """{needle: [published files holding it]} over every file under `folder`."""
    found: dict[str, list[str]] = {}
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        for project in PRIVATE:
            for needle in _needles(project):
                if needle.encode() in data:
                    found.setdefault(needle, []).append(str(path.relative_to(folder)))
    return found


@pytest.fixture
def cycle(isolated: Path, record_doc: dict, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    published = isolated / "published"
    pool_path = _pool(isolated / "runs", published)
    _record(isolated, record_doc, "quietwave", *PRIVATE["quietwave"])
    _record(isolated, record_doc, "p1", *PUBLIC["p1"])
    db = isolated / "warehouse" / "argusic.duckdb"
    write_marts(db, _frames())
    return {"db": db, "published": published, "pool": pool_path}


def _approve_and_publish(db: Path, out: Path, by: str, at) -> str:
    prepared = publication.prepare(CYCLE, db, out)
    publication.record(CYCLE, prepared.board_sha256, "approved", by, at, "checked", db)
    publication.publish_approved(CYCLE, prepared.board_sha256, out_dir=out, db_path=db)
    return prepared.board_sha256


def test_a_mid_cycle_publication_names_no_private_project_and_the_reveal_names_them(cycle) -> None:
    db, out = cycle["db"], cycle["published"]
    sealed_sha = _approve_and_publish(db, out, "ana", T)
    assert (out / "site" / "index.html").is_file() and (out / CYCLE / "public_pool.json").is_file()
    assert _hits(out) == {}  # zero hits in every published byte, site assets and evidence included

    board = json.loads((out / CYCLE / "board.json").read_text())
    attempts = json.loads((out / CYCLE / "attempts.json").read_text())["attempts"]
    labels = {p["project_id"]: p.get("project_label") for p in board["projects"]}
    assert labels == {
        "p1": None, "private-1-of-2": "private project 1 of 2", "private-2-of-2": "private project 2 of 2",
    }  # fmt: skip
    assert board["private_projects"] == {
        "count": 2, "sealed": ["private project 1 of 2", "private project 2 of 2"], "revealed": [],
    }  # fmt: skip
    sealed = [a for a in attempts if a.get("sealed")]
    assert len(sealed) == 1
    (quiet,) = sealed
    assert quiet["project_id"].startswith("private-") and quiet["commit_sha"] is None
    # the agent part is the identity's code, the operator's id only in the configuration (issue 32)
    assert quiet["agent_id"].startswith("A-") and quiet["configuration"]["agent_id"] == "readme-runner"
    assert quiet["attempt_id"] == f"{CYCLE}.verdict.{quiet['agent_id']}.{quiet['project_id']}.a1"
    assert quiet["verified_how"] is None and quiet["final_state"] is None
    assert quiet["served_log_uri"] is None and quiet["served_log_sha256"] is None
    # the raw evidence's fingerprints stay: they commit to the evidence, checked after the reveal
    assert all(len(quiet[f"{k}_sha256"]) == 64 for k in ("log", "recording", "report"))
    assert quiet["score"] == 100.0 and quiet["outcome"] == "pass_full"
    # the public project's evidence is published as before
    (public,) = [a for a in attempts if a["project_id"] == "p1"]
    assert public["served_log_uri"] and (out / "site" / "evidence").is_dir()
    run = out / "site" / "cycles" / CYCLE / "runs" / f"{quiet['attempt_id']}.html"
    page = run.read_text()
    assert 'id="sealed"' in page and "sealed until the reveal" in page and 'id="log"' not in page
    project_page = out / "site" / "cycles" / CYCLE / "projects" / f"{quiet['project_id']}.html"
    assert "private project" in project_page.read_text()
    # The dispute sections name the sealed attempt id and label, never the project (issue 32).
    run_dispute = page.split('<section id="dispute">', 1)[1].split("</section>")[0]
    assert quiet["attempt_id"] in run_dispute and "quietwave" not in run_dispute
    project_dispute = project_page.read_text().split('<section id="dispute">', 1)[1].split("</section>")[0]
    assert quiet["project_label"] in project_dispute
    for needle in (n for project in PRIVATE for n in _needles(project)):
        assert needle not in run_dispute and needle not in project_dispute, needle
    served = list((out / "site" / "evidence").rglob("*"))
    assert not any("private-" in str(p) for p in served)

    # Before the cycle ends, the private part cannot be revealed; republishing keeps it sealed.
    with pytest.raises(Exception, match="stays sealed"):
        reveal_private(cycle["pool"], out, date(2026, 12, 31))
    assert compose_publication(CYCLE, db, out_dir=out).board_sha256 == sealed_sha

    # After the cycle: the reveal, then the board republished (a new board, approved like a board).
    reveal_private(cycle["pool"], out, date(2027, 1, 1))
    with pytest.raises(BoardChanged, match="changed after it was approved"):
        publish_board(CYCLE, out, db, approved_sha256=sealed_sha)  # the sealed approval does not carry over
    prepared = publication.prepare(CYCLE, db, out)
    assert prepared.board_sha256 != sealed_sha and "This publication reveals" in prepared.body
    assert "`hushproj`" in prepared.body and "`quietwave`" in prepared.body
    _approve_and_publish(db, out, "bo", T.replace(year=2027, month=1, day=2))
    found = _hits(out)
    for project in PRIVATE:
        for needle in _needles(project):
            if needle == README["hushproj"]:
                continue  # hushproj has no recorded attempt here: no log to quote its README
            assert needle in found, needle
    revealed = json.loads((out / CYCLE / "board.json").read_text())
    assert revealed["private_projects"]["revealed"] == ["hushproj", "quietwave"]
    assert revealed["private_projects"]["sealed"] == []
    # The board's numbers are the same sealed and revealed.
    assert revealed["rows"] == board["rows"]
    after = json.loads((out / CYCLE / "attempts.json").read_text())["attempts"]
    numbers = ("agent_id", "outcome", "score", "install_points", "run_points", "recovery_points",
               "depth_points", "is_valid", "log_sha256", "recording_sha256", "report_sha256")  # fmt: skip
    assert sorted(json.dumps([a[k] for k in numbers]) for a in attempts) == sorted(
        json.dumps([a[k] for k in numbers]) for a in after
    )
    quiet_after = next(a for a in after if a["project_id"] == "quietwave")
    assert quiet_after["served_log_uri"] and quiet_after["final_state"]
    assert (out / "site" / "cycles" / CYCLE / "projects" / "quietwave.html").is_file()


def test_the_labels_are_stable_and_checkable_after_the_reveal() -> None:
    private = {p: PrivateProject(p, c, u) for p, (u, c) in PRIVATE.items()}
    seal = Seal(CYCLE, private)
    again = Seal(CYCLE, dict(reversed(list(private.items()))))
    assert seal.order() == again.order()  # the same pool, the same labels, whatever the reading order
    key = hashlib.sha256(
        json.dumps(sorted((p, c) for p, (_, c) in PRIVATE.items()), separators=(",", ":")).encode()
    ).hexdigest()
    expected = sorted(PRIVATE, key=lambda p: hashlib.sha256(f"{key}\n{CYCLE}\n{p}".encode()).hexdigest())
    assert seal.order() == expected  # what anybody can recompute from private_pool.json
    assert {seal.label(p) for p in PRIVATE} == {"private project 1 of 2", "private project 2 of 2"}
    assert seal.attempt_id("c1.board.a.quietwave.a2.r1").endswith(f".{seal.slug('quietwave')}.a2.r1")
    assert seal.attempt_id("c1.board.a.p1.a2") == "c1.board.a.p1.a2"
    assert Seal(CYCLE, private, frozenset(PRIVATE)).sealed == {}


def test_a_publication_that_would_still_name_a_sealed_commit_is_refused(cycle, monkeypatch) -> None:
    from argusic.publication import board as board_module

    real = board_module._publication_extras

    def leaky(con, cycle_id):
        extra = real(con, cycle_id)
        extra["environment"] = {"disagrees_on": f"commit {PRIVATE['quietwave'][1]}"}
        return extra

    monkeypatch.setattr(board_module, "_publication_extras", leaky)
    with pytest.raises(PublicationBlocked, match="would name sealed private projects"):
        compose_publication(CYCLE, cycle["db"], out_dir=cycle["published"])


@pytest.mark.slow
def test_a_sealed_run_page_in_chromium(cycle, tmp_path: Path) -> None:
    """The sealed run, project and pool pages as a visitor's browser shows them: the labels and the
    seal's note, no console error, and none of the private projects' strings in the rendered DOM."""
    from test_attempt_page_browser import BROWSER_ARGS, chromium

    out = cycle["published"]
    _approve_and_publish(cycle["db"], out, "ana", T)
    attempts = json.loads((out / CYCLE / "attempts.json").read_text())["attempts"]
    (quiet,) = [a for a in attempts if a.get("sealed")]
    site = out / "site" / "cycles" / CYCLE
    pages = [site / "runs" / f"{quiet['attempt_id']}.html", site / "projects" / f"{quiet['project_id']}.html",
             site / "pool.html", site / "index.html"]  # fmt: skip
    with chromium(tmp_path, BROWSER_ARGS) as browser:
        for page in pages:
            browser.get(page.as_uri())
            dom = browser.execute_script("return document.documentElement.outerHTML")
            text = browser.execute_script("return document.body.innerText")
            assert "private project" in text, page.name
            for project in PRIVATE:
                for needle in _needles(project):
                    assert needle not in dom, (page.name, needle)
            errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert errors == [], (page.name, errors)
        browser.get(pages[0].as_uri())
        facts = browser.find_element("id", "sealed").text
        assert "revealed after the cycle ends" in facts
        assert quiet["attempt_id"] in browser.find_element("id", "dispute").text
        browser.get(pages[1].as_uri())
        assert f"Each result of {quiet['project_label']}" in browser.find_element("id", "dispute").text


def test_a_maintainer_disputes_a_sealed_attempt_by_the_id_on_its_page(cycle) -> None:
    """Before the reveal a private project's attempt is published under its label; the id read on the
    page resolves to the attempt it stands for (what `argusic dispute file` and the disputes DAG
    record); a label the cycle does not have is refused by name."""
    from argusic.publication.sealing import published_attempt
    from argusic.review import disputes
    from argusic.review.disputes import DisputeError
    from argusic.warehouse.db import connect

    db, out = cycle["db"], cycle["published"]
    _approve_and_publish(db, out, "ana", T)
    attempts = json.loads((out / CYCLE / "attempts.json").read_text())
    rows = attempts["attempts"] if isinstance(attempts, dict) else attempts
    sealed = next(a["attempt_id"] for a in rows if "private-" in a["attempt_id"])
    assert "quietwave" not in sealed
    real = f"{CYCLE}.verdict.readme-runner.quietwave.a1"
    public = f"{CYCLE}.verdict.readme-runner.p1.a1"
    with connect(db, read_only=True) as con:
        assert published_attempt(con, sealed, out) == real
        assert published_attempt(con, public, out) == public  # a public project's id is itself
        unknown = sealed.replace(sealed.split(".")[3], "private-9-of-9")
        with pytest.raises(LookupError, match="no private project labelled 'private-9-of-9'"):
            published_attempt(con, unknown, out)
    with pytest.raises(DisputeError, match="no private project labelled 'private-9-of-9'"):
        disputes.file(unknown, "x", "m@example.org", "m", T, db_path=db)
