"""The public site and the published files, without a browser: quoted text, links, modes, times,
the evidence base setting, the preview's bind address. The checkers here (links, published values)
are used by the browser test too (tests/publication/test_demo_site.py), on a real demo cycle."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from html import unescape as html_unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from argusic.core.settings import public_evidence_base
from argusic.publication.board import SITE_EVIDENCE_LINK, served_link, utc_text
from argusic.publication.files import make_published_dir
from argusic.publication.site import display_quote
from argusic.publication.site.serve import make_server

# -- checkers shared with the browser test ---------------------------------------------------------


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(values["id"])
        for tag_name, attr in (("a", "href"), ("script", "src"), ("link", "href"), ("img", "src")):
            if tag == tag_name and values.get(attr):
                self.links.append(values[attr])


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def link_problems(
    site: Path, public_base: str | None = None, addresses: tuple[str, ...] = ()
) -> tuple[int, list[str]]:
    """(links checked, problems): every <a href>, <script src>, <link href> of every page must be a
    relative link to a file of the site (and to an id of it, with a #fragment), or under the public
    evidence base, or one of the configured ``addresses`` (where disputes are sent); no file://
    anywhere in the site."""
    problems, checked, parsed = [], 0, {}
    root = site.resolve()
    for path in sorted(site.rglob("*")):  # the pages and styles (the vendored player's code names it)
        if path.suffix in (".html", ".css") and b"file:" in path.read_bytes():
            problems.append(f"{path.relative_to(site)}: holds 'file:'")
    for page in sorted(site.rglob("*.html")):
        for link in _parse(page).links:
            checked += 1
            parts = urlsplit(link)
            if parts.scheme == "data":  # inline (the empty favicon): nothing to fetch
                continue
            if parts.scheme or parts.netloc:
                if link in addresses:
                    continue
                if not (public_base and link.startswith(public_base)):
                    problems.append(f"{page.relative_to(site)}: absolute link {link}")
                continue
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            try:
                target.relative_to(root)
            except ValueError:
                problems.append(f"{page.relative_to(site)}: {link} leaves the site")
                continue
            if not target.is_file():
                problems.append(f"{page.relative_to(site)}: {link} does not resolve")
                continue
            if parts.fragment:
                ids = parsed.setdefault(target, _parse(target).ids)
                if parts.fragment not in ids:
                    problems.append(f"{page.relative_to(site)}: {link}: no id {parts.fragment!r} there")
    return checked, problems


def published_values(publish_dir: Path) -> tuple[set[float], set[str]]:
    """Every number and every string of every published JSON file (board, attempts, pools)."""
    numbers: set[float] = set()
    strings: set[str] = set()

    def walk(value) -> None:
        if isinstance(value, bool):
            return
        if isinstance(value, int | float):
            numbers.add(float(value))
        elif isinstance(value, str):
            strings.add(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted(publish_dir.glob("*/*.json")):
        walk(json.loads(path.read_text()))
    return numbers, strings


def number_problems(marked: list[dict], numbers: set[float], strings: set[str]) -> list[str]:
    """Each marked number must be a published number, shown as that number (scaled and rounded as the
    mark says); each marked string must be a published string."""
    problems = []
    for mark in marked:
        if mark.get("v") is not None:
            if mark["v"] not in strings:
                problems.append(f"{mark['page']}: {mark['v']!r} is in no published file")
            continue
        value = float(json.loads(mark["n"]))
        if value not in numbers:
            problems.append(f"{mark['page']}: {mark['n']} is in no published file")
        shown = f"{value * float(mark['scale']):.{int(mark['digits'])}f}"
        if mark["text"] != shown:
            problems.append(f"{mark['page']}: shows {mark['text']!r} for {mark['n']} (expected {shown!r})")
    return problems


# Elements whose text may hold digits that are not a published number: a marked published value,
# quoted text (the agent's words, a log), a published document rendered whole (``data-doc``: the
# methodology, its sha256 published beside it), a setting of the site (``data-setting``: where
# disputes are sent), scripts and styles, the player.
LOOSE_DIGITS_SKIP = ("data-n", "data-v", "data-quote", "data-doc", "data-setting")
_VOID = {"meta", "link", "br", "img", "input", "hr", "source", "col", "wbr"}


class _Loose(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.stack: list[bool] = []  # per open element: is its text skipped
        self.in_body = False
        self.loose: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self.in_body = True
        if tag in _VOID:
            return
        names = {name for name, _ in attrs}
        skipped = (self.stack[-1] if self.stack else False) or tag in ("pre", "script", "style")
        skipped = skipped or bool(names & set(LOOSE_DIGITS_SKIP)) or ("id", "player") in attrs
        self.stack.append(skipped)

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOID and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.in_body and not (self.stack and self.stack[-1]) and re.search(r"(^|[^A-Za-z0-9])[0-9]", data):
            self.loose.append(data.strip())


def loose_digits(html: str) -> list[str]:
    """The page's text nodes (in <body>) holding a number outside a marked field, quoted text or a
    published document: the browser test's rule, without a browser."""
    parser = _Loose()
    parser.feed(html)
    return parser.loose


# -- quoted text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        ("Installed — then it ran.", "Installed, then it ran."),
        ("Installed \u2014 It ran.", "Installed. It ran."),
        ("Installed\u2013ran", "Installed, ran"),
        ("install -- run", "install, run"),
        ("install - Run", "install. Run"),
        ("a well-known read-only file", "a well-known read-only file"),
        ("ran `ls - l` and `a -- b` — done", "ran `ls - l` and `a -- b`, done"),
        ("-flag at the start", "-flag at the start"),
        ("", ""),
    ],
)
def test_authors_dashes_become_commas_or_full_stops(stored: str, shown: str) -> None:
    assert display_quote(stored) == shown


def test_display_leaves_the_stored_text_alone() -> None:
    stored = "Done — It works."
    display_quote(stored)
    assert stored == "Done — It works."


# -- published files ------------------------------------------------------------------------------


def test_times_are_utc_with_their_zone() -> None:
    assert utc_text(dt.datetime(2026, 12, 1, 10, 0, 5)) == "2026-12-01T10:00:05Z"  # naive: UTC
    paris = dt.timezone(dt.timedelta(hours=1))
    assert utc_text(dt.datetime(2026, 12, 1, 11, 0, 5, 250000, tzinfo=paris)) == "2026-12-01T10:00:05.250000Z"


def test_published_folders_and_files_are_world_readable(tmp_path: Path) -> None:
    from argusic.publication.files import _write_atomically

    os.umask(0o077)  # even under a strict umask
    try:
        _write_atomically(tmp_path / "pub" / "c1" / "board.json", "{}\n")
    finally:
        os.umask(0o022)
    assert stat.S_IMODE((tmp_path / "pub" / "c1" / "board.json").stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "pub" / "c1").stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "pub").stat().st_mode) == 0o755
    make_published_dir(tmp_path / "pub" / "c1")
    assert stat.S_IMODE((tmp_path / "pub" / "c1").stat().st_mode) == 0o755


def test_served_links_are_relative_or_under_the_public_base(monkeypatch: pytest.MonkeyPatch) -> None:
    sha = "ab" * 32
    attempt = {"attempt_id": "2026-12.board.a.p.a1", "served_log_sha256": sha, "served_copy_withheld": False}
    link = served_link(attempt, "log", None)
    assert link == f"{SITE_EVIDENCE_LINK}served/2026-12.board.a.p.a1/{sha}/log.txt"
    assert served_link(attempt, "recording", None) is None  # no served recording: no link
    assert served_link(dict(attempt, served_copy_withheld=True), "log", None) is None
    monkeypatch.setenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", "https://evidence.example.org/argusic")
    base = public_evidence_base()
    assert base == "https://evidence.example.org/argusic/"
    assert served_link(attempt, "log", base) == f"{base}served/2026-12.board.a.p.a1/{sha}/log.txt"
    for bad in ("file:///srv/evidence", "s3://bucket/x", "https://x.org/a b"):
        monkeypatch.setenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", bad)
        with pytest.raises(ValueError, match="ARGUSIC_PUBLIC_EVIDENCE_BASE"):
            public_evidence_base()


# -- the preview ----------------------------------------------------------------------------------


def test_preview_refuses_any_address_but_loopback(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<!DOCTYPE html><title>t</title>")
    for host in ("0.0.0.0", "::", "192.168.1.10", "localhost"):
        with pytest.raises(ValueError, match="127.0.0.1 only"):
            make_server(tmp_path, host, 0)
    with pytest.raises(FileNotFoundError, match="argusic site build"):
        make_server(tmp_path / "missing", "127.0.0.1", 0)
    server = make_server(tmp_path, "127.0.0.1", 0)
    try:
        assert server.server_address[0] == "127.0.0.1"
    finally:
        server.server_close()


def test_link_checker_finds_broken_links_and_file_urls(tmp_path: Path) -> None:
    """The checker the browser test relies on fails on what it must find (a test that cannot fail is
    a defect)."""
    (tmp_path / "a.html").write_text(
        '<a href="b.html#here">b</a><a href="missing.html">m</a><a href="b.html#nowhere">x</a>'
        '<a href="file:///etc/passwd">f</a><a href="../out.html">o</a><script src="s.js"></script>'
    )
    (tmp_path / "b.html").write_text(
        '<p id="here">b</p><link rel="stylesheet" href="https://cdn.example/x.css">'
    )
    (tmp_path / "s.js").write_text("")
    checked, problems = link_problems(tmp_path)
    assert checked == 7
    text = "\n".join(problems)
    for expected in (
        "missing.html does not resolve",
        "no id 'nowhere'",
        "holds 'file:'",
        "leaves the site",
        "absolute link https://cdn.example/x.css",
        "absolute link file:///etc/passwd",
    ):
        assert expected in text, (expected, text)  # fmt: skip
    assert len(problems) == 6


def test_number_checker_finds_numbers_not_published() -> None:
    numbers, strings = {92.0, 0.625, 5400.0}, {"2026-12-demo"}
    good = [
        {"page": "p", "n": "92.0", "scale": "1", "digits": "2", "text": "92.00"},
        {"page": "p", "n": "0.625", "scale": "100", "digits": "0", "text": "62"},
        {"page": "p", "n": "5400", "scale": str(1 / 60), "digits": "0", "text": "90"},
        {"page": "p", "v": "2026-12-demo"},
    ]
    assert number_problems(good, numbers, strings) == []
    bad = [
        {"page": "p", "n": "93.0", "scale": "1", "digits": "2", "text": "93.00"},
        {"page": "p", "n": "92.0", "scale": "1", "digits": "2", "text": "92.50"},
        {"page": "p", "v": "2027-01"},
    ]
    assert len(number_problems(bad, numbers, strings)) == 3


# -- a site from a small published folder ---------------------------------------------------------


def _published(
    tmp_path: Path,
    *,
    masked: bool,
    withheld: bool = False,
    log: bytes | None = None,
    cast: bytes | None = None,
    **fields: object,
) -> tuple[Path, str]:
    """A published cycle of one attempt (hand-made files; its served copies really in a store);
    `log` and `cast` replace the served copies, `fields` the attempt's published fields."""
    import hashlib

    from argusic.core.evidence import EvidenceStore, served_key_for

    store = EvidenceStore((tmp_path / "store").as_uri())
    attempt_id = "2026-11-x.board.readme-runner.demo.a1"
    log = (
        log or b"STEP install: make\nok\n" + b"".join(b"line %d\n" % i for i in range(30)) + b"stopped here\n"
    )
    cast = cast or b'{"version": 2, "width": 80, "height": 24}\n[0.1, "o", "$ make\\r\\n"]\n'
    served = {}
    for kind, data in (("log", log), ("recording", cast)):
        sha = hashlib.sha256(data).hexdigest()
        store.put_bytes(served_key_for(attempt_id, kind, sha), data)
        served[kind] = (sha, len(data))
    attempt = {
        "attempt_id": attempt_id, "agent_id": "readme-runner", "project_id": "demo", "purpose": "board",
        "attempt_no": 1, "is_valid": True, "invalid_reason": None, "outcome": "pass_full", "score": 100.0,
        "install_points": 30, "run_points": 30, "recovery_points": 20.0, "depth_points": 20,
        "commit_sha": "ab" * 20, "tier": "standard", "budget_seconds": 5400, "effective_budget_seconds": 5400,
        "demo": False, "end_reason": "completed", "started_at": "2026-11-02T10:00:00Z",
        "ended_at": "2026-11-02T10:05:00Z", "methodology_version": "1.5", "rerun_of": None,
        "executor": "docker", "image": "argusic-runner:bookworm", "harness_name": "readme-runner",
        "harness_version": "2.0.1", "model_requested": None, "model_responded": None, "key_kind": "none",
        "verified_how": "decode out/x.json", "final_state": "It runs \u2014 the demo works.",
        "log_sha256": "cd" * 32, "recording_sha256": "ef" * 32, "report_sha256": "01" * 32,
        "served_log_sha256": served["log"][0], "served_log_bytes": served["log"][1],
        "served_recording_sha256": served["recording"][0], "served_recording_bytes": served["recording"][1],
        "masking_applied": masked, "served_copy_withheld": withheld,
    } | fields  # fmt: skip
    board = {
        "schema": "argusic.board/1", "cycle_id": "2026-11-x", "attempts_through": "2026-11-02T10:05:00Z",
        "attempts_file": "attempts.json", "rows": [], "corrections": [], "hardware": {}, "target_kinds": [],
        "instructions": None,
        "projects": [{"project_id": "demo", "commit_sha": "ab" * 20, "verdict": "runs",
                      "verified_by_agent": "readme-runner", "verified_by_attempt_id": attempt_id,
                      "verified_at": "2026-11-02T10:05:00Z", "complete_attempts": 1, "valid_attempts": 1,
                      "recorded_attempts": 1, "review_status": "not_under_review"}],
    }  # fmt: skip
    folder = tmp_path / "published" / "2026-11-x"
    folder.mkdir(parents=True)
    (folder / "board.json").write_text(json.dumps(board))
    attempts = {"schema": "argusic.cycle_attempts/1", "cycle_id": "2026-11-x", "attempts": [attempt]}
    (folder / "attempts.json").write_text(json.dumps(attempts))
    (folder / "public_pool.json").write_text(
        json.dumps(
            {
                "schema": "argusic.public_pool/1",
                "cycle_id": "2026-11-x",
                "published_before": "2026-11-01",
                "projects": [{"project_id": "demo", "commit": "ab" * 20, "tier": "standard"}],
                "private_count": 1,
            }
        )
    )
    return tmp_path / "published", store.url  # fmt: skip


def test_site_run_page_private_pool_masking_and_dashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=True)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    assert "masking was applied" in run
    assert "It runs, the demo works." in run  # shown with a comma; stored as written
    stored = json.loads((publish / "2026-11-x" / "attempts.json").read_text())["attempts"][0]
    assert stored["final_state"] == "It runs \u2014 the demo works."
    assert '<span id="stopped">' in run and "stopped here" in run.split('<span id="stopped">')[1]
    assert 'id="argusic-recording"' in run and "file:" not in run
    pool = (site / "cycles/2026-11-x/pool.html").read_text()
    assert 'id="private-sealed"' in pool and "private-pool" not in pool
    # The private part, once revealed after the cycle, is shown.
    (publish / "2026-11-x" / "private_pool.json").write_text(json.dumps({
        "schema": "argusic.private_pool/1", "cycle_id": "2026-11-x", "revealed_after": "2026-11-30",
        "projects": [{"project_id": "fresh-one", "commit": "cd" * 20, "tier": "heavy"}]}))  # fmt: skip
    pool = (build_site(publish) / "cycles/2026-11-x/pool.html").read_text()
    assert 'id="private-pool"' in pool and "fresh-one" in pool and "private-sealed" not in pool
    checked, problems = link_problems(site)
    assert problems == [] and checked > 10
    # Under a public evidence base: the copies are linked there and not kept in the site.
    monkeypatch.setenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", "https://evidence.example.org/")
    site = build_site(publish)
    assert not (site / "evidence").exists()
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    assert 'href="https://evidence.example.org/served/2026-11-x.board.readme-runner.demo.a1/' in run
    assert link_problems(site, "https://evidence.example.org/")[1] == []


BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_site_shows_bidi_controls_as_escapes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A claim, a `verified_how` and a served log that reorder themselves with bidi overrides and
    isolates (Trojan Source): no page of the built site holds a raw control; each is shown as its
    escape, and ordinary non-ASCII text (Korean, accents, emoji) is shown as written."""
    from argusic.publication.site import build_site

    ordinary = "한국어 café 🎉"
    publish, store_url = _published(
        tmp_path,
        masked=False,
        final_state=f"It runs \u202etxt.eludom\u202c {ordinary}",
        verified_how=f"decode out/\u2066x.json\u2069{BIDI}",
        log=f"STEP run: ./tool\nall tests \u202eliaf\u202c {ordinary}\nstopped here\n".encode(),
    )
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    pages = {page: page.read_text(encoding="utf-8") for page in site.rglob("*.html")}
    assert len(pages) > 5
    for page, text in pages.items():
        assert not set(BIDI) & set(text), page
    run = pages[site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html"]
    assert f"It runs \\u202etxt.eludom\\u202c {ordinary}" in run  # the claim
    assert "decode out/\\u2066x.json\\u2069\\u202a" in run  # verified how
    assert f"all tests \\u202eliaf\\u202c {ordinary}" in run  # the served log


def test_site_player_gets_the_recording_with_its_terminal_sizes_clamped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A served recording asking for a 20000x20000 terminal (header and resize event): the run page's
    player gets it within bounds, the page says so, the linked served file is the published one."""
    from argusic.publication.replay import MAX_COLUMNS, MAX_ROWS
    from argusic.publication.site import build_site

    cast = (
        b'{"version": 2, "width": 20000, "height": 20000}\n[0.1, "o", "$ make\\r\\n"]\n'
        b'[0.2, "r", "20000x20000"]\n[0.3, "\\u0072", "30000x80"]\n'
    )
    publish, store_url = _published(tmp_path, masked=False, cast=cast)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    data = run.split('<script type="application/json" id="argusic-recording">', 1)[1].split("</script>")[0]
    lines = [json.loads(line) for line in json.loads(data).splitlines()]
    assert (lines[0]["width"], lines[0]["height"]) == (MAX_COLUMNS, MAX_ROWS)
    assert [e[2] for e in lines[1:] if e[1] == "r"] == [f"{MAX_COLUMNS}x{MAX_ROWS}", f"{MAX_COLUMNS}x80"]
    assert "outside 10-500 columns and 5-200 rows: 3 size(s) shown within those bounds" in run
    served = [p for p in (site / "evidence").rglob("*") if p.is_file() and p.read_bytes() == cast]
    assert len(served) == 1  # the linked copy is the published file, its sha256 unchanged


def test_site_withheld_copies_show_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=False, withheld=True)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    assert "served copies withheld" in run
    assert "argusic-recording" not in run and 'id="log"' not in run and not (site / "evidence").exists()


def test_site_says_when_the_container_cut_its_own_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A valid attempt the container cut short (issue #25) is published as a failure with its reason."""
    from argusic.publication.site import build_site

    fault = "harness exited with code 137"
    publish, store_url = _published(
        tmp_path, masked=True, outcome="fail", score=0.0, install_points=0, run_points=0, recovery_points=0.0,
        depth_points=0, end_reason="harness_error", container_fault=fault, methodology_version="1.6",
    )  # fmt: skip
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    shown = (
        "fail, cut short in its container (0 points, not rerun): "
        + f'<span class="quote" data-quote>{fault}</span>'
    )
    assert shown in run


def test_site_refuses_a_link_in_place_of_a_published_file(tmp_path: Path, monkeypatch) -> None:
    from argusic.publication.site import SiteError, build_site

    publish, store_url = _published(tmp_path, masked=False)
    attempts = publish / "2026-11-x" / "attempts.json"
    attempts.rename(tmp_path / "elsewhere.json")
    attempts.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(SiteError, match="a link, not a published file"):
        build_site(publish)
    assert not (publish / "site").exists()


def test_site_shows_the_sponsor_and_the_harness_edition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sponsored agent is disclosed next to its result on the board and on its run pages; the board
    and the run page say which harness edition the cycle ran and link its changelog entry, and every
    number and string they show is a published one."""
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    folder = publish / "2026-11-x"
    board = json.loads((folder / "board.json").read_text())
    row = {"agent_id": "readme-runner", "display_name": "README runner", "is_standard_agent": True, "rank": 1,
           "board_score": 100.0, "pass_rate": 1.0, "passes": 1, "valid_attempts": 1, "invalid_attempts": 0,
           "harness_edition": "1", "sponsor": "Example Cloud 7", "sponsorship": "compute"}  # fmt: skip
    board["rows"] = [row, {**row, "agent_id": "other", "display_name": "Other", "sponsor": None,
                           "sponsorship": None, "is_standard_agent": False, "rank": 2}]  # fmt: skip
    board["environment"] = {"cycle_id": "2026-11-x", "valid_attempts": 1, "attempts_with_environment": 1,
                            "attempts_without_environment": 0, "harness_edition": "1", "environments": 1,
                            "is_uniform": True, "disagrees_on": None}  # fmt: skip
    board["harness_editions"] = [
        {"edition": "1", "written_on": "2026-10-29", "effective_on": "2026-11-02",
         "effective_before_written": False, "runs_recorded": 1, "cycles_recorded": 1,
         "instructions_version": "1", "scaffold_sha256": "e" * 64, "summary": "The first harness, 2.0.1."}
    ]  # fmt: skip
    (folder / "board.json").write_text(json.dumps(board))
    attempts = json.loads((folder / "attempts.json").read_text())
    attempts["attempts"][0].update(
        harness_edition="1", scaffold_sha256="e" * 64, image_role="runner",
        image_reference="argusic-runner:bookworm", image_digest="sha256:" + "d" * 64,
        instructions_version="1", instructions_sha256="f" * 64, limit_cpus=2.0, limit_memory_bytes=4 * 2**30,
        limit_pids=512,
        limit_disk_bytes=6 * 2**30, network_mode="none", limit_budget_seconds=5400, display="1280x800x24",
    )  # fmt: skip
    (folder / "attempts.json").write_text(json.dumps(attempts))
    site = build_site(publish)

    def text(page: str) -> str:
        return " ".join(re.sub(r"<[^>]+>", " ", (site / page).read_text()).split())

    index = (site / "index.html").read_text()
    assert index.count('class="sponsor"') == 1  # the sponsored agent only
    assert "README runner readme-runner (standard agent) Sponsored by Example Cloud 7 ( compute )" in text(
        "index.html"
    )
    assert 'href="harness.html#edition-1"' in index
    assert "Harness edition: 1 , the same for every agent and attempt of this cycle." in text("index.html")
    board["environment"]["attempts_without_environment"] = 2  # a cycle that straddled the change
    (folder / "board.json").write_text(json.dumps(board))
    build_site(publish)
    straddled = "that recorded one ( 2 valid attempts were recorded before environments were)."
    assert straddled in text("index.html")
    board["environment"]["attempts_without_environment"] = 0
    (folder / "board.json").write_text(json.dumps(board))
    site = build_site(publish)
    run = "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html"
    assert "Sponsored by Example Cloud 7 ( compute )" in text(run)
    assert 'href="../../../harness.html#edition-1"' in (site / run).read_text()
    ran = text(run)
    assert f"runner image argusic-runner:bookworm , digest sha256:{'d' * 64}" in ran
    assert (
        "limits: 2 CPUs, 4.0 GiB memory, 512 processes, 6.0 GiB writable, network none , budget 5400 s" in ran
    )
    assert "display 1280x800x24 (virtual)" in ran
    changelog = (site / "harness.html").read_text()
    assert 'id="edition-1"' in changelog and "The first harness, 2.0.1." in changelog
    checked, problems = link_problems(site)
    assert problems == [] and checked > 10
    # every marked value on these pages is a published one, shown as published
    numbers, strings = published_values(publish)
    marks = []
    for page in ("index.html", run, "harness.html"):
        html = (site / page).read_text()
        for n_value, scale, digits, shown in re.findall(
            r'data-n="([^"]*)" data-scale="([^"]*)" data-digits="([^"]*)">([^<]*)<', html
        ):
            marks.append({"page": page, "n": n_value, "scale": scale, "digits": digits, "text": shown})
        marks += [{"page": page, "v": html_unescape(v)} for v in re.findall(r'data-v="([^"]*)"', html)]
    assert number_problems(marks, numbers, strings) == []
    assert any(m.get("v") == "Example Cloud 7" for m in marks)


def test_a_board_published_before_environments_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    site = build_site(publish)
    index = " ".join(re.sub(r"<[^>]+>", " ", (site / "index.html").read_text()).split())
    assert "Harness edition: not recorded : these attempts were recorded before environments were." in index
    assert "Sponsored" not in index
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    assert 'id="ran-under"' not in run and "recorded before environments were" in run
    assert "Not published." in (site / "harness.html").read_text()
    assert link_problems(site)[1] == []


def test_an_edition_published_as_a_number_still_links_its_entry(tmp_path: Path, monkeypatch) -> None:
    """A file that wrote the edition as a number (a seed typed by inference) builds, and links the
    same changelog entry as the text would."""
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    board_path = publish / "2026-11-x" / "board.json"
    board = json.loads(board_path.read_text())
    board["environment"] = {"cycle_id": "2026-11-x", "harness_edition": 1}
    board["harness_editions"] = [{"edition": 1, "written_on": "2026-10-29", "summary": "First."}]
    board_path.write_text(json.dumps(board))
    site = build_site(publish)
    assert 'href="harness.html#edition-1"' in (site / "index.html").read_text()
    assert 'id="edition-1"' in (site / "harness.html").read_text()
    assert link_problems(site)[1] == []


# -- the rules on the site (issue 32) ---------------------------------------------------------------

RULE_PAGES = ("methodology.html", "content.html", "disputes.html")


def _with_methodology(publish: Path) -> dict:
    """The small published cycle's board with the methodology and its editions, as publication writes
    them (the document from this checkout; 1.5 effective before it was written, 1.7 not run yet)."""
    from argusic.publication.board import changelog_summaries, methodology_document

    document = methodology_document()
    summaries = changelog_summaries(document["text"])
    board_path = publish / "2026-11-x" / "board.json"
    board = json.loads(board_path.read_text())
    board["methodology"] = document
    board["methodology_editions"] = [
        {"edition": "1.5", "written_on": "2026-10-08", "effective_on": "2026-10-07",
         "effective_before_written": True, "runs_recorded": 1, "summary": summaries["1.5"]},
        {"edition": "1.7", "written_on": "2026-12-02", "effective_on": None,
         "effective_before_written": False, "runs_recorded": 0, "summary": summaries["1.7"]},
    ]  # fmt: skip
    board_path.write_text(json.dumps(board))
    return board


def _marks(html: str, page: str) -> list[dict]:
    marks = [
        {"page": page, "n": n_value, "scale": scale, "digits": digits, "text": shown}
        for n_value, scale, digits, shown in re.findall(
            r'data-n="([^"]*)" data-scale="([^"]*)" data-digits="([^"]*)">([^<]*)<', html
        )
    ]
    return marks + [{"page": page, "v": html_unescape(v)} for v in re.findall(r'data-v="([^"]*)"', html)]


def test_the_rules_pages_footer_links_and_dispute_sections(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The methodology (rendered from the published METHODOLOGY.md, no raw HTML, links or inline
    style; every edition with its written date, its effective date from the records and what
    changed), how content is written and how to dispute a result: linked from every page's footer;
    every run and project page ends with a dispute section naming what to send; no number on them
    outside a published value; no dispute address configured: the pages say so."""
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=True)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    monkeypatch.delenv("ARGUSIC_DISPUTE_ADDRESS", raising=False)
    board = _with_methodology(publish)
    site = build_site(publish)
    pages = sorted(site.rglob("*.html"))
    assert {p.name for p in pages} >= set(RULE_PAGES)
    for page in pages:  # every page's footer links the three rule pages, relative to where it is
        html = page.read_text()
        root = "../" * len(page.relative_to(site).parent.parts)
        footer = html.split('<p id="rules">', 1)[1].split("</p>", 1)[0]
        assert [f'href="{root}{name}"' in footer for name in RULE_PAGES] == [True] * 3, page
    checked, problems = link_problems(site)
    assert problems == [] and checked > 20

    def text(page: str) -> str:
        return " ".join(html_unescape(re.sub(r"<[^>]+>", " ", (site / page).read_text())).split())

    methodology = (site / "methodology.html").read_text()
    rows = methodology.split('id="editions"', 1)[1].split("</table>", 1)[0]
    assert 'id="methodology-1.5"' in rows and 'id="methodology-1.7"' in rows
    assert "2026-10-07 (before the edition was written)" in text("methodology.html")
    assert "no run recorded under it yet" in rows
    assert html_unescape(board["methodology_editions"][1]["summary"]) in html_unescape(rows)
    article = methodology.split('<article class="doc" id="methodology-text"', 1)[1].split("</article>")[0]
    assert f'data-doc="{board["methodology"]["sha256"]}"' in article
    assert '<h2 id="m-11-editions-changelog">11. Editions (changelog)</h2>' in article
    assert "<table>" in article and "style=" not in article and "<a " not in article
    assert "<script" not in methodology and "style=" not in methodology
    content = text("content.html")
    for words in ("Masking", "Dashes in quoted text", "never edited or deleted", "It runs, the demo works."):
        assert words in content, words
    disputes = text("disputes.html")
    assert "the attempt's id" in disputes and "never published" in disputes
    assert "The address to send it to is not configured yet for this site" in disputes
    # the run and project pages end with a dispute section
    run = "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html"
    section = (site / run).read_text().split('<section id="dispute">', 1)[1].split("</section>")[0]
    assert "2026-11-x.board.readme-runner.demo.a1" in section and "disputes.html" in section
    assert 'href="../../../methodology.html#methodology-1.5"' in (site / run).read_text()
    project = (site / "cycles/2026-11-x/projects/demo.html").read_text()
    assert '<section id="dispute">' in project and "open its run page" in project
    # every number on these pages is a published value, or inside the rendered document
    numbers, strings = published_values(publish)
    marks, loose = [], []
    for page in (*RULE_PAGES, run, "cycles/2026-11-x/projects/demo.html", "index.html"):
        html = (site / page).read_text()
        marks += _marks(html, page)
        loose += [f"{page}: {t!r}" for t in loose_digits(html)]
    assert loose == [] and number_problems(marks, numbers, strings) == []
    assert any(m.get("v") == "2026-10-07" for m in marks)


def test_a_board_without_the_methodology_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    site = build_site(publish)
    assert (site / "methodology.html").read_text().count("Not published.") == 2
    assert link_problems(site)[1] == []


def test_the_dispute_address_comes_from_the_configuration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argusic.core.settings import dispute_address
    from argusic.publication.site import build_site

    for bad in ("http://example.org/d", "ftp://x", "file:///tmp/x", "mailto:nobody", "https://a b"):
        monkeypatch.setenv("ARGUSIC_DISPUTE_ADDRESS", bad)
        with pytest.raises(ValueError, match="ARGUSIC_DISPUTE_ADDRESS"):
            dispute_address()
    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    address = "https://disputes.example.org/new?kind=result"
    monkeypatch.setenv("ARGUSIC_DISPUTE_ADDRESS", address)
    site = build_site(publish)
    link = f'<a href="{address.replace("&", "&amp;")}" data-setting>'
    for page in ("disputes.html", "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html",
                 "cycles/2026-11-x/projects/demo.html"):  # fmt: skip
        html = (site / page).read_text()
        assert link in html and "not configured" not in html, page
        assert loose_digits(html) == [], page
    assert link_problems(site)[1] != []  # an absolute link, allowed only as the configured address
    assert link_problems(site, addresses=(address,))[1] == []
    monkeypatch.setenv("ARGUSIC_DISPUTE_ADDRESS", "mailto:disputes@example.org")
    site = build_site(publish)
    assert (
        '<a href="mailto:disputes@example.org" data-setting>disputes@example.org</a>'
        in (site / "disputes.html").read_text()
    )


def test_a_run_page_lists_its_renderings_checked_by_sha256(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 30: `argusic share-images` renders the published cycle's cards into <cycle>/renderings/
    with an index of sha256s; the site copies them beside the run pages and lists them on each run page,
    and refuses to build when a listed file no longer has its sha256 (or is a link)."""
    from argusic.publication.site import build_site
    from argusic.publication.site.build import SiteError
    from argusic.review.publication import share_published_cycle

    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    # the pipeline's step after publication (the cycle DAG's share_images task): images, then the site
    monkeypatch.setenv("ARGUSIC_PUBLISH_DIR", str(publish))
    out = Path(share_published_cycle("2026-11-x", videos=1))
    assert out == publish / "2026-11-x" / "renderings"
    index = json.loads((out / "index.json").read_text())
    (card,) = [f for f in index["files"] if f["kind"] == "run"]
    site = publish / "site"
    run = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    assert (
        'id="renderings"' in run and f'href="../renderings/{card["file"]}"' in run and card["sha256"] in run
    )
    assert (site / "cycles/2026-11-x/renderings" / card["file"]).read_bytes() == (
        out / card["file"]
    ).read_bytes()
    assert link_problems(site)[1] == []
    (out / card["file"]).write_bytes(b"\x89PNG not the rendered card")
    with pytest.raises(SiteError, match="its sha256 is not the one index.json lists"):
        build_site(publish)
    (out / card["file"]).unlink()
    (out / card["file"]).symlink_to(out / "board.png")
    with pytest.raises(SiteError, match="not a regular file"):
        build_site(publish)


def test_a_preview_says_so_on_every_page(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The approval form's preview (review.publication.preview_site) is the site builder's output with
    a line on every page saying the board awaits approval; the published site never has it."""
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=False)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    preview = build_site(publish, out=tmp_path / "preview", preview_of="2026-11-x")
    pages = sorted(preview.rglob("*.html"))
    assert len(pages) > 10
    assert all('id="preview"' in p.read_text() for p in pages), [
        p for p in pages if 'id="preview"' not in p.read_text()
    ]
    assert (
        "board of cycle 2026-11-x awaits approval and is not published"
        in (preview / "index.html").read_text()
    )
    published = build_site(publish)
    assert not any('id="preview"' in p.read_text() for p in published.rglob("*.html"))


class _Text(HTMLParser):
    """The text of the element with one id (its tags dropped)."""

    def __init__(self, wanted: str) -> None:
        super().__init__()
        self.wanted, self.depth, self.parts = wanted, 0, []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or dict(attrs).get("id") == self.wanted:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.parts.append(data)


@pytest.mark.parametrize(
    ("fields", "shown"),
    [
        (  # a provisional pass a person rejected: not a result
            {"provisional_result": "pass", "final_decision": "reject", "decided_by_kind": "person",
             "counts_as_result": False, "overturned": True, "judged_at": "2026-12-01T10:00:00Z"},
            "not a result: rejected by a person's review (2026-12-01 10:00:00 UTC), over the layers' "
            "provisional pass; condition baseline",
        ),
        (  # a provisional fail a person promoted: a result
            {"provisional_result": "fail", "final_decision": "promote", "decided_by_kind": "person",
             "counts_as_result": True, "overturned": True, "judged_at": "2026-12-01T10:00:00Z"},
            "counts as a result: promoted by a person's review (2026-12-01 10:00:00 UTC), over the layers' "
            "provisional fail; condition baseline",
        ),
        (  # no review yet: the provisional result decides
            {"provisional_result": "pass", "final_decision": "promote", "decided_by_kind": "provisional",
             "counts_as_result": True, "overturned": False, "judged_at": None},
            "counts as a result: the layers' provisional pass, not reviewed by a person yet; "
            "condition baseline",
        ),
        (
            {"provisional_result": "fail", "final_decision": "reject", "decided_by_kind": "provisional",
             "counts_as_result": False, "overturned": False, "judged_at": None},
            "not a result: the layers' provisional fail, not reviewed by a person yet; condition baseline",
        ),
    ],
)  # fmt: skip
def test_the_run_page_shows_whether_the_attempt_counts_as_a_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fields: dict, shown: str
) -> None:
    """Issue #31 (seed 004): a person's promote/reject decides whether the attempt counts as a result
    (marts.judging_results, published in attempts.json); the run page says which, and who decided."""
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=True, condition="baseline", **fields)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    page = site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html"
    text = _Text("judged-result")
    text.feed(page.read_text())
    assert " ".join("".join(text.parts).split()) == shown
    assert link_problems(site)[1] == []


def test_a_run_page_published_before_judged_results_shows_no_such_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from argusic.publication.site import build_site

    publish, store_url = _published(tmp_path, masked=True)
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    monkeypatch.delenv("ARGUSIC_PUBLIC_EVIDENCE_BASE", raising=False)
    site = build_site(publish)
    page = (site / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html").read_text()
    assert 'id="judged-result"' not in page and "judged result" not in page


def test_attempts_json_carries_the_judged_result_when_the_warehouse_has_it() -> None:
    """publish_board adds marts.judging_results' fields to each published attempt (None where the
    warehouse has none for it, or no such mart at all: a warehouse built before issue #31)."""
    import duckdb
    from argusic.publication.board import JUDGED_FIELDS, _with_judged_results

    attempts = [{"attempt_id": "c.board.a.p.a1"}, {"attempt_id": "c.board.a.p.a2"}]
    con = duckdb.connect()
    con.execute("CREATE SCHEMA marts")
    assert _with_judged_results(con, "c", attempts) == [a | dict.fromkeys(JUDGED_FIELDS) for a in attempts]
    con.execute(
        "CREATE TABLE marts.judging_results AS SELECT 'c.board.a.p.a1' AS attempt_id, 'c' AS cycle_id, "
        "'baseline' AS condition, 'pass' AS provisional_result, 'reject' AS final_decision, "
        "'person' AS decided_by_kind, false AS counts_as_result, true AS overturned, "
        "TIMESTAMP '2026-12-01 10:00:00' AS decided_at"
    )
    first, second = _with_judged_results(con, "c", attempts)
    assert first == {
        "attempt_id": "c.board.a.p.a1", "condition": "baseline", "provisional_result": "pass",
        "final_decision": "reject", "decided_by_kind": "person", "counts_as_result": False,
        "overturned": True, "judged_at": "2026-12-01T10:00:00Z",
    }  # fmt: skip
    assert second == attempts[1] | dict.fromkeys(JUDGED_FIELDS)


@pytest.mark.parametrize(
    ("grade", "shown", "absent"),
    [
        ("reference", "reference only", "same model as the comparison"),
        ("same-model", "same model as the comparison", "reference only"),
        (None, None, "reference only"),
    ],
)
def test_the_run_page_says_when_a_harness_ran_for_reference_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grade, shown, absent
) -> None:
    """Seed 002: an external harness whose session shows another model answering is for reference only;
    the run page says so next to the harness, from the record's grade (never the agent's words)."""
    from argusic.publication.site import build_site

    publish, store_url = _published(
        tmp_path, masked=False, harness_name="claude-code", harness_version="2.0.1", harness_grade=grade,
        model_requested="claude-sonnet-4-5", model_responded="claude-sonnet-4-5-20250929",
    )  # fmt: skip
    monkeypatch.setenv("ARGUSIC_EVIDENCE_URL", store_url)
    run = (
        build_site(publish) / "cycles/2026-11-x/runs/2026-11-x.board.readme-runner.demo.a1.html"
    ).read_text()
    if shown:
        assert shown in run
    assert absent not in run
