"""Blinding's one mapping (issue #31): repair/labels.toml, read by Python (argusic.repair.labels) and,
through the dbt seed generated from it, by the warehouse. Fast: no dbt here (the warehouse side is in
tests/warehouse/test_repair_warehouse.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from argusic.repair import labels as L
from argusic.repair import predictions


def test_the_seed_is_generated_from_labels_toml():
    """The warehouse's copy (dbt_project/seeds/repair_labels.csv) is labels.toml's, byte for byte:
    after changing labels.toml, run `python -m argusic.repair.labels`."""
    assert L.SEED_FILE.read_text(encoding="utf-8") == L.seed_text(L.load_labels())
    assert L.main(["--check"]) == 0


def test_label_for_listed_and_unlisted(tmp_path: Path):
    toml = tmp_path / "labels.toml"
    toml.write_text('[labels]\n"vendor/secret-model" = "model-a"\n"claude-code" = "agent-b"\n')
    labels = L.load_labels(toml)
    assert L.label_for("vendor/secret-model", labels) == "model-a"
    assert L.label_for("claude-code", labels) == "agent-b"
    key = L.label_key()  # the suite's fixed key (tests/conftest.py)
    keyed = "model-" + hashlib.sha256(f"{key.hex()}:other".encode()).hexdigest()[:8]
    assert L.label_for("other", labels) == keyed
    # predictions files use the same function (one mapping)
    assert predictions.label_for is L.label_for
    assert predictions.load_labels(toml) == labels
    # the seed as generated from it
    assert L.seed_text(labels) == "name,label\nclaude-code,agent-b\nvendor/secret-model,model-a\n"


def test_attempt_ids_lose_their_agent():
    labels = {"claude-code": "agent-b"}
    assert (
        L.blind_attempt_id("2026-12.repair.claude-code.calc.a2", labels) == "2026-12.repair.agent-b.calc.a2"
    )
    assert L.blind_attempt_id("c.repair.claude-code.p.a1.r3", labels) == "c.repair.agent-b.p.a1.r3"
    unlisted = L.blind_attempt_id("c.repair.codex.p.a1", labels)
    assert "codex" not in unlisted and unlisted == f"c.repair.{L.hashed_label('codex')}.p.a1"
    assert "codex" not in L.blind_attempt_id("not an attempt id codex", labels)


@pytest.mark.parametrize(
    "text,needle",
    [
        ('[labels]\na = "x"\nb = "x"\n', "is also 'a'"),  # two names, one label: counted as one
        ('[labels]\na = "b"\nb = "c"\n', "is itself a listed name"),  # a label that names another
        ('[labels]\na = "has space"\n', "label must match"),
        ("labels = 3\n", "must be a table"),
    ],
)
def test_a_mapping_that_would_not_blind_is_refused(tmp_path: Path, text: str, needle: str):
    toml = tmp_path / "labels.toml"
    toml.write_text(text)
    with pytest.raises(L.LabelsError, match=needle):
        L.load_labels(toml)
    with pytest.raises(predictions.PredictionsError, match=needle):
        predictions.load_labels(toml)


def test_an_unlisted_name_is_not_reversible_by_hashing_candidate_names(tmp_path: Path):
    """Issue #31: an unlisted name's label is a keyed hash (key never published), not sha256(name),
    which anyone could compute for the few candidate model names; another key gives another label."""
    plain = "model-" + hashlib.sha256(b"claude-sonnet-4-5").hexdigest()[:8]
    one, two = bytes(range(32)), bytes(range(1, 33))
    assert L.hashed_label("claude-sonnet-4-5", one) != plain
    assert L.hashed_label("claude-sonnet-4-5", one) != L.hashed_label("claude-sonnet-4-5", two)
    assert L.hashed_label("claude-sonnet-4-5", one) == L.hashed_label("claude-sonnet-4-5", one)
    assert L.LABEL.match(L.hashed_label("claude-sonnet-4-5", one))


def test_the_label_key_is_the_environments_or_made_once_unpublished(tmp_path: Path, monkeypatch):
    """ARGUSIC_LABEL_KEY when set (hex, at least 32 bytes); else a key file made once under the runs
    dir (0600, in a 0700 folder) and read back the same by every later call; a short or non-hex key is
    refused rather than weakening the labels."""
    monkeypatch.delenv(L.KEY_ENV, raising=False)
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(tmp_path / "runs"))
    key = L.label_key()
    path = tmp_path / "runs" / L.KEY_FILE
    assert len(key) == 32 and path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert L.label_key() == key and L.hashed_label("x") == L.hashed_label("x", key)
    monkeypatch.setenv(L.KEY_ENV, "ab" * 32)
    assert L.label_key() == bytes.fromhex("ab" * 32)
    for bad in ("ab" * 31, "not hex"):
        monkeypatch.setenv(L.KEY_ENV, bad)
        with pytest.raises(L.LabelsError, match=L.KEY_ENV):
            L.label_key()
    monkeypatch.delenv(L.KEY_ENV)
    path.write_text("abcd\n")
    with pytest.raises(L.LabelsError, match="shorter than 32 bytes"):
        L.label_key()
