"""Landing /out: what a hostile attempt leaves in its output area is copied without following links,
as regular files only, under caps, streaming; everything else is refused by name, never read."""

from __future__ import annotations

import os
import re
import socket
import tracemalloc
from pathlib import Path

import pytest
from argusic.sandbox.landing import (
    CHUNK,
    LandingLimits,
    StreamRedactor,
    check_globs,
    land_matching,
    land_outputs,
)
from hypothesis import given, settings
from hypothesis import strategies as st

LIMITS = LandingLimits(max_file_bytes=1024**2, max_total_bytes=4 * 1024**2, max_entries=100)


@pytest.fixture
def host_secret(tmp_path: Path) -> Path:
    """A host file outside the output area, readable by its owner only."""
    secret = tmp_path / "host" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("HOST-SECRET-7f3a9c\n")
    secret.chmod(0o600)
    return secret


def _all_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def test_regular_files_and_folders_land(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    (src / "sub" / "deeper").mkdir(parents=True)
    (src / "log.txt").write_text("step 1\n")
    (src / "sub" / "deeper" / "x.json").write_text("{}")
    report = land_outputs(src, dest, LIMITS)
    assert report.refusal is None and report.files == ["log.txt", "sub/deeper/x.json"]
    assert (dest / "log.txt").read_text() == "step 1\n" and (dest / "sub" / "deeper" / "x.json").exists()
    assert report.bytes == 9


def test_symbolic_links_are_refused_by_name_and_never_followed(tmp_path, host_secret):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    (src / "log.txt").symlink_to(host_secret)  # what `ln -sf /host/path /out/log.txt` leaves
    (src / "rel.txt").symlink_to(os.path.relpath(host_secret, src))
    (src / "dir-link").symlink_to(host_secret.parent, target_is_directory=True)
    (src / "recording.cast").write_text('{"version": 2}\n')
    report = land_outputs(src, dest, LIMITS)
    assert report.refusal == (
        "evidence refused: dir-link is a symbolic link; log.txt is a symbolic link; "
        "rel.txt is a symbolic link"
    )
    assert report.files == ["recording.cast"]
    assert sorted(p.name for p in dest.iterdir()) == ["recording.cast"]
    assert b"HOST-SECRET" not in _all_bytes(dest)


def test_hard_links_are_refused(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    (src / "log.txt").write_text("mine\n")
    os.link(src / "log.txt", src / "copy.txt")
    report = land_outputs(src, dest, LIMITS)
    assert report.refused == ["copy.txt has 2 hard links", "log.txt has 2 hard links"]
    assert list(dest.iterdir()) == []


def test_fifos_and_sockets_are_refused_without_blocking(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    os.mkfifo(src / "log.txt")  # opening it for reading would block forever without O_NONBLOCK
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(src / "sock"))
    try:
        report = land_outputs(src, dest, LIMITS)
    finally:
        server.close()
    assert report.refused == ["log.txt is a FIFO", "sock is a socket"]


def test_devices_are_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("mknod of a device needs root")
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    os.mknod(src / "null", 0o600 | 0o020000, os.makedev(1, 3))  # a character device
    assert land_outputs(src, dest, LIMITS).refused == ["null is a character device"]


def test_caps_per_file_in_total_and_on_entries(tmp_path):
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    (src / "big.log").write_bytes(b"x" * (LIMITS.max_file_bytes + 1))
    for n in range(5):
        (src / f"part{n}.bin").write_bytes(b"y" * LIMITS.max_file_bytes)
    report = land_outputs(src, dest, LIMITS)
    assert report.refused[0] == "big.log is 1 MiB, over the cap of 1 MiB per file"
    assert report.refused[1:] == ["part4.bin would take the landed total over its cap of 4 MiB"]
    assert report.bytes == 4 * LIMITS.max_file_bytes and not (dest / "big.log").exists()
    many = tmp_path / "many"
    many.mkdir()
    for n in range(LIMITS.max_entries + 1):
        (many / f"f{n}").touch()
    assert land_outputs(many, tmp_path / "d2", LIMITS).refused == [
        "more than 100 entries in the output folder"
    ]


def test_nesting_is_capped(tmp_path):
    src = tmp_path / "src"
    deep = src.joinpath(*[f"d{n}" for n in range(20)])
    deep.mkdir(parents=True)
    (deep / "x").write_text("x")
    report = land_outputs(src, tmp_path / "dest", LIMITS)
    assert len(report.refused) == 1 and "is nested more than 16 folders deep" in report.refused[0]


def test_an_unopenable_output_folder_is_a_refusal_not_a_traceback(tmp_path, host_secret):
    link = tmp_path / "out-link"
    link.symlink_to(host_secret.parent)  # the area itself replaced by a link
    report = land_outputs(link, tmp_path / "dest", LIMITS)
    assert report.refusal and report.refusal.startswith(
        "evidence refused: the output folder cannot be opened"
    )


def test_names_are_shown_escaped(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    os.symlink("/etc/passwd", os.path.join(os.fsencode(src), b"evil\nname\xff"))
    (refusal,) = land_outputs(src, tmp_path / "dest", LIMITS).refused
    assert refusal == "'evil\\nname\\udcff' is a symbolic link"


def test_landing_streams_in_bounded_memory(tmp_path):
    """A 64 MiB log lands with a key redacted in it; Python's peak allocation stays a few 1 MiB
    chunks (the chunk read, the held-back tail joined to it, the redacted output)."""
    src, dest = tmp_path / "src", tmp_path / "dest"
    src.mkdir()
    key = b"sk-live-0123456789abcdef"
    line = b"x" * 1000 + b"\n"
    with open(src / "log.txt", "wb") as handle:
        for n in range(64 * 1024):
            handle.write(line if n % 4096 else key + line)
    limits = LandingLimits(max_file_bytes=128 * 1024**2, max_total_bytes=128 * 1024**2, max_entries=10)
    tracemalloc.start()
    try:
        report = land_outputs(src, dest, limits, [(key, b"[key masked]")])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert report.refusal is None and report.redacted == 16
    assert peak < 6 * CHUNK, f"peak {peak} bytes"
    data = (dest / "log.txt").read_bytes()
    assert key not in data and data.count(b"[key masked]") == 16


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(st.sampled_from([b"a", b"b", b"sk-k3y", b"sk-", b"k3y", b"\n", b"ab" * 50]), max_size=60),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=8),
)
def test_redaction_is_the_same_whatever_the_chunking(parts, cuts):
    """Streaming gives exactly what one substitution over the whole data gives, so no value survives
    an unlucky chunk edge (values overlapping each other included)."""
    data = b"".join(parts)
    pairs = [(b"sk-k3y", b"[masked]"), (b"bab", b"_"), (b"abab", b"=")]
    whole = re.compile(b"abab|sk-k3y|bab")
    expected = whole.sub(lambda m: dict(pairs)[m.group()], data)
    redactor = StreamRedactor(pairs)
    out, start = b"", 0
    for edge in sorted({min(c, len(data)) for c in cuts}) + [len(data)]:
        out += redactor.feed(data[start:edge])
        start = edge
    out += redactor.flush()
    assert out == expected and b"sk-k3y" not in out


def test_key_cut_by_a_chunk_edge_is_redacted(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    key = b"sk-edge-key-value"
    data = b"x" * (CHUNK - 5) + key + b"y" * 10
    (src / "log.txt").write_bytes(data)
    report = land_outputs(src, tmp_path / "dest", LandingLimits(4 * CHUNK, 4 * CHUNK, 10), [(key, b"[k]")])
    assert report.redacted == 1
    assert (tmp_path / "dest" / "log.txt").read_bytes() == b"x" * (CHUNK - 5) + b"[k]" + b"y" * 10


# --- artifacts: the project folder's files matching a task's globs ----------------------------------

ART_LIMITS = LandingLimits(max_file_bytes=1024, max_total_bytes=4096, max_entries=5)


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "project"
    root.mkdir(parents=True)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _landed(dest: Path) -> list[str]:
    return (
        sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
        if dest.exists()
        else []
    )


def test_matching_files_land_with_their_relative_paths(tmp_path):
    project = _project(tmp_path, {
        "index.html": "<p>hi</p>", "notes.txt": "no", "docs/a.html": "a", "docs/deep/er/b.html": "b",
        "site/c.html": "c", ".hidden.html": "h", ".git/x.html": "g", "docs/.cache/d.html": "d",
    })  # fmt: skip
    dest = tmp_path / "out" / "artifacts"
    report = land_matching(project, dest, ["*.html", "docs/**/*.html"], ART_LIMITS)
    assert report.refused == []
    assert report.files == ["docs/a.html", "docs/deep/er/b.html", "index.html"]
    assert _landed(dest) == ["docs/a.html", "docs/deep/er/b.html", "index.html"]
    assert (dest / "docs" / "deep" / "er" / "b.html").read_text() == "b"
    # `**` alone in front: any folder, never a hidden one (.git, .cache) unless named
    everywhere = land_matching(project, tmp_path / "d2", ["**/*.html"], ART_LIMITS)
    assert everywhere.files == ["docs/a.html", "docs/deep/er/b.html", "index.html", "site/c.html"]
    hidden = land_matching(project, tmp_path / "d3", [".git/*.html", ".*.html"], ART_LIMITS)
    assert hidden.files == [".git/x.html", ".hidden.html"]


def test_no_globs_or_no_match_lands_nothing_and_makes_no_folder(tmp_path):
    project = _project(tmp_path, {"a.txt": "x"})
    dest = tmp_path / "artifacts"
    assert land_matching(project, dest, [], ART_LIMITS).files == []
    assert land_matching(project, dest, ["*.html"], ART_LIMITS).files == []
    assert not dest.exists()


@pytest.mark.parametrize(
    ("glob", "problem"),
    [
        ("/etc/*.html", "absolute"),
        ("~/x.html", "absolute"),
        ("../*.html", "'..' would leave the project folder"),
        ("docs/../../x.html", "'..' would leave the project folder"),
        ("./x.html", "empty or '.' path segment"),
        ("docs//x.html", "empty or '.' path segment"),
        ("", "expected a non-empty string"),
        ("docs/**", "ends in '**'"),
    ],
)
def test_globs_leaving_the_project_folder_are_refused_at_the_call(tmp_path, glob, problem):
    project = _project(tmp_path, {"x.html": "x"})
    with pytest.raises(ValueError, match=re.escape(problem)) as err:
        land_matching(project, tmp_path / "dest", ["ok/*.html", glob], ART_LIMITS)
    assert repr(glob) in str(err.value)
    assert not (tmp_path / "dest").exists()
    with pytest.raises(ValueError, match="got the string"):
        check_globs("*.html")


def test_symlinked_artifacts_and_folders_are_refused_and_never_followed(tmp_path, host_secret):
    project = _project(tmp_path, {"real.html": "real"})
    (project / "index.html").symlink_to(host_secret)  # a link to a file named like an artifact
    (project / "docs").symlink_to(host_secret.parent, target_is_directory=True)  # a link on the way
    (host_secret.parent / "page.html").write_text("HOST-SECRET page")
    (project / "unrelated").symlink_to(host_secret.parent)  # no glob reaches it: not even named
    report = land_matching(project, tmp_path / "dest", ["*.html", "docs/**/*.html"], ART_LIMITS)
    assert report.files == ["real.html"]
    assert report.refused == ["docs is a symbolic link", "index.html is a symbolic link"]
    assert b"HOST-SECRET" not in _all_bytes(tmp_path / "dest")


def test_a_project_folder_replaced_by_a_link_is_refused(tmp_path, host_secret):
    (host_secret.parent / "page.html").write_text("HOST-SECRET page")
    link = tmp_path / "project"
    link.symlink_to(host_secret.parent)  # `rm -rf /workspace/project; ln -s / /workspace/project`
    report = land_matching(link, tmp_path / "dest", ["*.html"], ART_LIMITS)
    assert report.files == [] and len(report.refused) == 1
    assert report.refused[0].startswith("the project folder cannot be opened without following links")
    assert not (tmp_path / "dest").exists()


def test_hard_linked_and_special_artifacts_are_refused(tmp_path):
    project = _project(tmp_path, {"a.html": "a", "b.html": "b"})
    os.link(project / "b.html", project / "c.html")
    os.mkfifo(project / "fifo.html")  # opening it would block forever without O_NONBLOCK
    report = land_matching(project, tmp_path / "dest", ["*.html"], ART_LIMITS)
    assert report.files == ["a.html"]
    assert report.refused == ["b.html has 2 hard links", "c.html has 2 hard links", "fifo.html is a FIFO"]


def test_artifact_caps_per_file_in_total_and_on_the_count(tmp_path):
    files = {"big.html": "x" * (ART_LIMITS.max_file_bytes + 1)}
    files |= {f"p{n}.html": "y" * ART_LIMITS.max_file_bytes for n in range(5)}
    project = _project(tmp_path, files)
    report = land_matching(project, tmp_path / "dest", ["*.html"], ART_LIMITS)
    assert report.refused == [
        "big.html is 1025 bytes, over the cap of 1024 bytes per file",
        "p4.html would take the landed total over its cap of 4096 bytes",
    ]
    assert report.files == ["p0.html", "p1.html", "p2.html", "p3.html"] and report.bytes == 4096
    many = _project(tmp_path / "many", {f"f{n:02}.html": "z" for n in range(8)})
    counted = land_matching(many, tmp_path / "d2", ["*.html"], ART_LIMITS)
    assert counted.files == [f"f{n:02}.html" for n in range(5)]
    assert counted.refused == ["more than 5 files match the artifact globs: f05.html and the rest not landed"]
    assert _landed(tmp_path / "d2") == counted.files


def test_examining_the_project_folder_is_capped(tmp_path):
    project = _project(tmp_path, {f"node_modules/m{n}/x.js": "" for n in range(30)})
    report = land_matching(project, tmp_path / "dest", ["**/*.html"], ART_LIMITS, max_examined=20)
    assert report.refused == [
        "more than 20 entries examined in the project folder: the search for artifacts stopped there"
    ]


def test_artifacts_are_redacted_on_the_way(tmp_path):
    key = b"sk-live-artifact-key"
    project = _project(tmp_path, {"index.html": f"<p>{key.decode()}</p>"})
    report = land_matching(project, tmp_path / "dest", ["*.html"], ART_LIMITS, [(key, b"[key masked]")])
    assert report.redacted == 1
    assert (tmp_path / "dest" / "index.html").read_bytes() == b"<p>[key masked]</p>"


def test_artifact_caps_come_from_orchestrator_toml():
    limits = LandingLimits.artifacts_from_config()
    assert (limits.max_file_bytes, limits.max_total_bytes, limits.max_entries) == (
        5 * 1024**2,
        20 * 1024**2,
        200,
    )
