"""The catalogue (argusic.catalogue/1): every problem at once, SPDX licences, the JSON Schema file,
repo_url grammar against hostile input, and how a pool reports exclusions and shortfalls."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import jsonschema
import pytest
from argusic.sources import catalogue as catalogue_mod
from argusic.sources.catalogue import (
    SCHEMA_FILE,
    CatalogueError,
    licence_is_permissive,
    load_catalogue,
    normalise_licence,
    schema_text,
)
from argusic.sources.mirror import SourceError, parse_source
from argusic.sources.pool import draw_pool, largest_split, shortfall_message

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def candidate(pid: str, **over) -> dict:
    return {
        "project_id": pid,
        "repo_url": f"https://example.org/owner/{pid}.git",
        "commit": COMMIT,
        "language": "python",
        "licence": "MIT",
        "has_readme": True,
        "difficulty": "easy",
        "size_mb": 1.5,
        "popular_since": "2025-01-01",
    } | over


def write(tmp_path: Path, items: list, **top) -> Path:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps({"schema": "argusic.catalogue/1", "candidates": items} | top))
    return path


def test_every_problem_of_the_file_is_reported_at_once_with_candidate_field_and_fix(tmp_path):
    bad = candidate("second", commit="main", difficulty="trivial", size_mb=-1, popular_since="last year")
    del bad["licence"]
    bad["license"] = "MIT"
    items = [
        candidate("first", licence="Apachee-2.0"),
        bad,
        candidate("-dash"),
        "not an object",
        candidate("first"),
    ]
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"candidates": items}))
    with pytest.raises(CatalogueError) as caught:
        load_catalogue(path)
    problems = caught.value.problems
    text = str(caught.value)
    assert str(path) in text and "nothing was drawn" in text
    expected = [
        'add "schema": "argusic.catalogue/1"',
        "candidate first: licence: 'Apachee-2.0' is not an SPDX licence id or expression; did you mean "
        "'Apache-2.0'",
        "candidate second: commit: 'main' is not accepted: write the full 40-character commit id",
        "candidate second: licence: required field missing (found 'license': the field is spelled 'licence')",
        "candidate second: difficulty: Input should be 'easy', 'medium' or 'hard' (got 'trivial')",
        "candidate second: size_mb: Input should be greater than or equal to 0",
        "candidate second: popular_since:",
        "candidate #3: project_id: '-dash' is not accepted",
        "candidate #4: expected an object, got str",
        "candidate first: project_id: used by 2 candidates",
    ]
    for fragment in expected:
        assert any(fragment in p for p in problems), (fragment, problems)
    assert len(problems) == len(expected)


@pytest.mark.parametrize(
    ("written", "spdx"),
    [
        ("MIT", "MIT"),
        ("mit", "MIT"),
        ("MIT License", "MIT"),
        ("The MIT License", "MIT"),
        ("Apache 2.0", "Apache-2.0"),
        ("Apache License 2.0", "Apache-2.0"),
        ("Apache License, Version 2.0", "Apache-2.0"),
        ("Apache License v2.0", "Apache-2.0"),
        ("BSD 3-Clause", "BSD-3-Clause"),
        ('BSD 3-Clause "New" or "Revised" License', "BSD-3-Clause"),
        ("New BSD", "BSD-3-Clause"),
        ("BSD 2-Clause", "BSD-2-Clause"),
        ("ISC License", "ISC"),
        ("The Unlicense", "Unlicense"),
        ("zlib License", "Zlib"),
        ("GPLv3", "GPL-3.0-only"),
        ("GPL-3.0", "GPL-3.0-only"),  # a deprecated SPDX id comes back as its current form
        ("MIT OR Apache-2.0", "MIT OR Apache-2.0"),
        ("NOASSERTION", "NOASSERTION"),
        ("LicenseRef-Custom-1", "LicenseRef-Custom-1"),
    ],
)
def test_licence_spellings_are_read_as_spdx(written, spdx):
    got, notice = normalise_licence(written)
    assert got == spdx
    assert (notice is None) == (written == spdx)


@pytest.mark.parametrize("written", ["Proprietary", "", "see LICENSE file", "Apachee-2.0"])
def test_unknown_licences_are_refused_with_a_suggestion_when_close(written):
    with pytest.raises(ValueError, match="SPDX|empty") as caught:
        normalise_licence(written)
    if written == "Apachee-2.0":
        assert "did you mean 'Apache-2.0'" in str(caught.value)


@pytest.mark.parametrize(
    ("expression", "permissive"),
    [
        ("MIT", True),
        ("Apache-2.0 WITH LLVM-exception", True),
        ("MIT OR GPL-3.0-only", True),
        ("MIT AND GPL-3.0-only", False),
        ("GPL-3.0-only", False),
        ("NOASSERTION", False),
        ("LicenseRef-Custom-1", False),
    ],
)
def test_permissive_expressions(expression, permissive):
    assert licence_is_permissive(expression) is permissive


def test_normalised_spellings_are_reported_as_notices_and_accepted(tmp_path):
    loaded = load_catalogue(write(tmp_path, [candidate("a", licence="MIT License"), candidate("b")]))
    assert [c.licence for c in loaded.candidates] == ["MIT", "MIT"]
    assert loaded.notices == ["candidate a: licence 'MIT License' read as SPDX 'MIT'"]


def test_the_committed_json_schema_is_the_generated_one_and_validates_real_catalogues(tmp_path):
    assert SCHEMA_FILE.read_text() == schema_text(), (
        "regenerate: python -m argusic.sources.catalogue --schema"
    )
    schema = json.loads(SCHEMA_FILE.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    from argusic.sources.forge import build_forge

    forge_catalogue = json.loads(build_forge(tmp_path / "forge").read_text())
    jsonschema.validate(forge_catalogue, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(
            {"schema": "argusic.catalogue/1", "candidates": [candidate("x", commit="main")]}, schema
        )
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"candidates": []}, schema)


def test_sizes_are_bounded(tmp_path, monkeypatch):
    path = write(tmp_path, [candidate(f"p{i}") for i in range(5)])
    monkeypatch.setattr(catalogue_mod, "MAX_CATALOGUE_BYTES", 100)
    with pytest.raises(CatalogueError, match="over the 100 byte limit"):
        load_catalogue(path)
    monkeypatch.setattr(catalogue_mod, "MAX_CATALOGUE_BYTES", 10**6)
    monkeypatch.setattr(catalogue_mod, "MAX_CANDIDATES", 3)
    with pytest.raises(CatalogueError, match="5 candidates, over the limit of 3"):
        load_catalogue(path)
    with pytest.raises(CatalogueError, match="characters"):
        load_catalogue(write(tmp_path, [candidate("long", repo_url="https://h.org/" + "a" * 3000)]))


# --- repo_url grammar: hostile input ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://github.com/owner/repo", "remote"),
        ("https://github.com/owner/repo.git", "remote"),
        ("http://127.0.0.1:8080/repo.git", "remote"),
        ("git://127.0.0.1:9418/repo.git", "remote"),
        ("ssh://git@github.com/owner/repo.git", "remote"),
        ("ssh://[::1]:2222/repo.git", "remote"),
        ("git@github.com:owner/repo.git", "remote"),
        ("/srv/git/repo.git", "local"),
        ("file:///srv/git/repo.git", "local"),
    ],
)
def test_accepted_repository_addresses(url, kind):
    assert parse_source(url).kind == kind


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("--upload-pack=touch /tmp/pwned", "spaces"),
        ("--upload-pack=touch", "starts with '-'"),
        ("-oProxyCommand=x:repo", "starts with '-'"),
        ("ext::sh -c touch% /tmp/pwned", "spaces"),
        ("ext::sh", "transport helpers"),
        ("fd::17", "transport helpers"),
        ("ssh://-oProxyCommand=touch/repo", "not a plain host name"),
        ("ssh://git@-oProxyCommand=x/repo", "not a plain host name"),
        ("git@-oProxyCommand=x:repo", "not a plain host name"),
        ("https://user:token@github.com/o/r", "credentials"),
        ("https://token@github.com/o/r", "credentials"),
        ("ftp://example.org/repo.git", "scheme 'ftp'"),
        ("https://github.com/o/r?x=1", "no query"),
        ("https://github.com", "no repository path"),
        ("file://otherhost/srv/repo.git", "local path"),
        ("repos/x.git", "relative paths"),
        ("/srv/a:b.git", "not allowed in a local path"),
        ("~/repo.git", "not a repository address"),
        ("https://exämple.org/r", "non-ASCII"),
        ("https://example.org/r\n", "control"),
    ],
)
def test_hostile_repository_addresses_are_refused(url, why):
    with pytest.raises(SourceError, match=why) as caught:
        parse_source(url)
    assert "token" not in str(caught.value)  # a credential is never echoed back


def test_credentials_are_not_echoed_in_the_refusal():
    with pytest.raises(SourceError) as caught:
        parse_source("https://user:s3cr3t@github.com/o/r")
    assert "s3cr3t" not in str(caught.value) and "***@github.com" in str(caught.value)


# --- exclusions and shortfalls ------------------------------------------------------------------------


def test_shortfall_without_recent_candidates_is_explained_with_counts(tmp_path):
    """The issue: 13 eligible projects, none recently popular: the pool silently shrank to 2."""
    items = [candidate(f"p{i:02d}", language=["c", "shell", "perl"][i % 3]) for i in range(13)]
    items += [candidate("gpl-tool", licence="GPL-3.0-only"), candidate("paid", paid_account_required=True)]
    selection = draw_pool(write(tmp_path, items), "2026-12")
    assert len(selection.pool.entries) == 2 and selection.largest == 2
    assert (selection.public_available, selection.recent_available) == (13, 0)
    text = "\n".join(selection.lines())
    assert "pool shortfall: 0 recently popular candidate(s) (popular_since 2026-11-01..2026-11-30)" in text
    assert (
        "only 2 of the 13 usable public candidates" in text and "11 public candidate(s) are left out" in text
    )
    assert "Add 3 more recently popular candidate(s)" in text
    assert "excluded gpl-tool: licence GPL-3.0-only is not permissive" in text
    assert "excluded paid: needs a paid account" in text
    assert len(selection.not_drawn) == 11
    # Adding the 3 it asks for uses every public candidate: the advice is right.
    items += [candidate(f"new{i}", popular_since="2026-11-20") for i in range(3)]
    assert len(draw_pool(write(tmp_path, items), "2026-12").pool.entries) == 16


def test_shortfall_of_public_candidates_and_none():
    window = (date(2026, 11, 1), date(2026, 11, 30))
    assert shortfall_message(8, 2, largest_split(8, 2), window) is None
    message = shortfall_message(1, 5, largest_split(1, 5), window)
    assert message and "public candidate(s) allow only" in message


def test_a_pool_that_cannot_be_drawn_says_why(tmp_path):
    items = [candidate("gpl", licence="GPL-3.0-only"), candidate("late", popular_since="2026-12-15")]
    with pytest.raises(CatalogueError) as caught:
        draw_pool(write(tmp_path, items), "2026-12")
    text = str(caught.value)
    assert "0 public and 0 recently popular" in text and "allow at most 0" in text
    assert "gpl: licence GPL-3.0-only is not permissive" in text
    assert "late: gained popularity after the cycle starts" in text


def test_unavailable_sources_are_excluded_with_their_reason_and_the_draw_goes_on(tmp_path):
    items = [candidate(f"p{i}") for i in range(6)] + [candidate("r1", popular_since="2026-11-20")]
    path = write(tmp_path, items)

    def check(cands):
        return {c.project_id: "could not fetch it" for c in cands if c.project_id in ("p0", "p3")}

    selection = draw_pool(path, "2026-12", check_sources=check)
    assert selection.pool.excluded == {"p0": "could not fetch it", "p3": "could not fetch it"}
    assert {e.project_id for e in selection.pool.entries} == {"p1", "p2", "p4", "p5", "r1"}
    # An explicit size checks in draw order until full, skipping what fails.
    sized = draw_pool(path, "2026-12", size=5, check_sources=check)
    assert len(sized.pool.entries) == 5 and not {"p0", "p3"} & {e.project_id for e in sized.pool.entries}
