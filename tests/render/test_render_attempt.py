"""`argusic render ATTEMPT` and `argusic share-images` as a stranger runs them: the served copy only,
linked to the published run page under the identity code, a sealed or withheld attempt refused."""

from __future__ import annotations

import json

from argusic.cli.main import app
from argusic.core.record import RunRecord
from argusic.core.settings import runs_dir
from PIL import Image
from render_casts import cast, failure_then_fix
from test_replay import land_attempt
from typer.testing import CliRunner

ATTEMPT = "2026-12.board.readme-runner.wavgen.a1"
PUBLISHED = "2026-12.board.A-3f9c0a.wavgen.a1"


def land(record_doc: dict, cast: bytes, *, withheld: bool = False) -> RunRecord:
    """The attempt landed as tests/publication/test_replay.py lands one (raw evidence, served copies
    derived the real way, the record where `find_attempt` finds it), with a one-line log."""
    return land_attempt(record_doc, b"log\n", cast, withheld=withheld)


def publish(isolated, **row) -> None:
    folder = isolated / "published" / "2026-12"
    folder.mkdir(parents=True, exist_ok=True)
    base = {
        "attempt_id": PUBLISHED,
        "cycle_id": "2026-12",
        "project_id": "wavgen",
        "agent_id": "A-3f9c0a",
        "configuration": {"agent_id": "readme-runner"},
        "outcome": "pass_full",
        "score": 90.0,
    }
    (folder / "attempts.json").write_text(json.dumps({"attempts": [base | row]}))
    board = {"cycle_id": "2026-12", "rows": [{"rank": 1, "agent_id": "A-3f9c0a", "board_score": 90.0}]}
    (folder / "board.json").write_text(json.dumps(board))


def test_render_an_unpublished_attempt_from_its_served_copy(record_doc, isolated, tmp_path):
    record = land(record_doc, failure_then_fix())
    result = CliRunner().invoke(app, ["render", ATTEMPT, "--format", "png", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "r" / f"{ATTEMPT}.png.manifest.json").read_text())
    assert manifest["served_recording_sha256"] == record.presentation.recording.sha256
    assert manifest["evidence_sha256"] == record.evidence.recording.sha256
    assert manifest["run_page"] is None and "not published" in manifest["attempt"]
    assert manifest["failures"] == 1
    with Image.open(tmp_path / "r" / f"{ATTEMPT}.png") as image:
        assert record.evidence.recording.sha256 in image.text["Comment"]


def test_render_a_published_attempt_links_its_run_page_under_the_identity_code(
    record_doc, isolated, tmp_path, monkeypatch
):
    land(record_doc, failure_then_fix())
    publish(isolated)
    monkeypatch.setenv("ARGUSIC_PUBLIC_SITE_URL", "https://argusic.example")
    out = tmp_path / "r"
    result = CliRunner().invoke(app, ["render", PUBLISHED, "--format", "gif", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = (out / f"{PUBLISHED}.gif.manifest.json").read_text()
    manifest = json.loads(text)
    assert manifest["run_page"] == f"https://argusic.example/cycles/2026-12/runs/{PUBLISHED}.html"
    assert "readme-runner" not in text  # the operator's agent id is never in a rendering
    with Image.open(out / f"{PUBLISHED}.gif") as image:
        assert b"readme-runner" not in image.info["comment"]


def test_a_sealed_or_withheld_attempt_is_not_rendered(record_doc, isolated, tmp_path):
    land(record_doc, failure_then_fix())
    publish(isolated, sealed=True, project_id="private-1-of-2", project_label="private project 1 of 2")
    result = CliRunner().invoke(app, ["render", ATTEMPT, "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "sealed" in result.output
    assert not (tmp_path / "r").exists()
    withheld = dict(record_doc, attempt_id="2026-12.board.readme-runner.wavgen.a2", attempt_no=2)
    land(withheld, failure_then_fix(), withheld=True)
    result = CliRunner().invoke(app, ["render", withheld["attempt_id"], "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "withheld" in result.output


def test_a_served_recording_out_of_order_is_refused_with_the_reason(record_doc, isolated, tmp_path):
    land(record_doc, cast([(2.0, "second\r\n"), (1.0, "first\r\n")]))
    result = CliRunner().invoke(app, ["render", ATTEMPT, "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "events out of order are not rendered" in result.output
    assert not (tmp_path / "r").exists()


def test_share_images_of_a_published_cycle(isolated):
    publish(isolated)
    result = CliRunner().invoke(app, ["share-images", "--cycle", "2026-12"])
    assert result.exit_code == 0, result.output
    out = isolated / "published" / "2026-12" / "renderings"
    index = json.loads((out / "index.json").read_text())
    assert [f["file"] for f in index["files"]] == ["board.png", f"run-{PUBLISHED}.png"]
    with Image.open(out / f"run-{PUBLISHED}.png") as image:
        assert "readme-runner" not in json.dumps(image.text)


def test_a_private_project_is_sealed_by_its_operator_id_too_until_revealed(record_doc, isolated, tmp_path):
    from datetime import date

    from argusic.sources.pool import Pool, PoolEntry, write_pool

    land(record_doc, failure_then_fix())
    entry = PoolEntry(
        project_id="wavgen", repo_url="https://forge.example.org/a/wavgen.git", commit="0" * 40,
        language="python", difficulty="easy", tier="standard", visibility="private",
    )  # fmt: skip
    pool = Pool(
        cycle_id="2026-12", cycle_starts=date(2026, 12, 1), cycle_ends=date(2026, 12, 31),
        catalogue_sha256="0" * 64, entries=[entry], excluded={},
    )  # fmt: skip
    write_pool(pool, runs_dir() / "pools", isolated / "published")
    result = CliRunner().invoke(app, ["render", ATTEMPT, "--format", "png", "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "sealed" in result.output
    assert not (tmp_path / "r").exists()
    revealed = {
        "schema": "argusic.private_pool/1",
        "cycle_id": "2026-12",
        "projects": [{"project_id": "wavgen"}],
    }
    (isolated / "published" / "2026-12" / "private_pool.json").write_text(json.dumps(revealed))
    result = CliRunner().invoke(app, ["render", ATTEMPT, "--format", "png", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
