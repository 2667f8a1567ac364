"""`argusic site build`: the public site, written from the published files with Jinja2 templates.

Why the published files and not the marts: ``publish_board`` writes ``board.json`` and
``attempts.json`` from the marts under the writer lock, after re-validating the warehouse and
auditing every attempt's evidence, and that exact board is what a person approves. Building the
pages from those files means the site shows what was approved and published, nothing newer or
older, every number on a page can be traced to a field of a published file, and the site can be
rebuilt without opening the warehouse.

What the pages hold, and from where:

- ``index.html``: the board of the front cycle (``--cycle``, else the cycle published last, by the
  time of its latest attempt); ``cycles/<cycle>/index.html``: the board of every published cycle;
- ``cycles/<cycle>/projects/<project>.html``: the project's verdict (``marts.project_verdicts``) and
  its attempts, each linking to the place in its log where it stopped;
- ``cycles/<cycle>/runs/<attempt>.html``: commit, environment, standard instructions, the budget it
  got, the served log and the served recording in asciinema-player (the same assets, init script and
  hostile-text handling as ``argusic report``: ``argusic.publication.attempt_page``), the masking note and the
  correction note of a dispute (``marts.attempt_corrections``);
- ``cycles/<cycle>/pool.html``: the public pool, and the private part once it is revealed;
- ``hardware.html``, ``kinds.html`` (target kinds, status counted from the records),
  ``instructions.html``, ``harness.html`` (the harness changelog: each edition with its written and
  effective dates; the board and run pages link the edition their cycle ran);
- the rules, linked from every page's footer: ``methodology.html`` (``METHODOLOGY.md`` as published
  in board.json, rendered as Markdown without raw HTML, links or images, and every edition with its
  written date, its effective date from the run records and what changed), ``content.html`` (how
  content is written: what the presentation layer may and may not do, masking, dashes) and
  ``disputes.html`` (what to send, where: ``ARGUSIC_DISPUTE_ADDRESS``, and how a dispute is ruled);
  every run and project page ends with a "Dispute this result" section (a sealed project's names
  only its label).

Rules the build keeps: autoescaped templates, in which every written value has its Unicode bidi
controls shown as escapes (``shown``), and no sentence written by a model; every number is a
template field (``<span class="n" data-n=…>``, the published value); quoted text (an agent's final
state) is shown with authors' dashes turned into commas or full stops while the stored text stays as
it is; relative links only (or the configured public evidence base), never ``file://``; files 0644
and folders 0755; no clock: the same published files give the same bytes. The site is written to a
temporary folder beside it and swapped in whole.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markdown_it import MarkdownIt
from markupsafe import Markup

from argusic.core.evidence import (
    EvidenceKeyError,
    EvidenceMissing,
    EvidenceStore,
    served_key_for,
    served_segment,
)
from argusic.core.safe_io import visible_bidi
from argusic.core.settings import DISPUTE_ADDRESS_PLACEHOLDER, dispute_address, public_evidence_base
from argusic.publication.attempt_page import (
    DEFAULT_MAX_RECORDING_MB,
    INIT_SCRIPT,
    PAGE_CSS,
    _read_log,
    load_player_assets,
    player_assets_dir,
    player_data,
)
from argusic.publication.files import (
    BOARD_SCHEMA,
    PUBLISHED_DIR_MODE,
    PUBLISHED_FILE_MODE,
    make_published_dir,
    operator_attempt_id,
)
from argusic.publication.replay import strip_terminal_codes

SITE_DIR = "site"
TEMPLATES = Path(__file__).with_name("templates")
MAX_PUBLISHED_JSON_BYTES = 512 * 1024**2
STOP_LINES = 12  # the last lines of a log: "where it stopped"
_SAFE_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
_SCHEMAS = {
    "board.json": BOARD_SCHEMA,
    "attempts.json": "argusic.cycle_attempts/1",
    "public_pool.json": "argusic.public_pool/1",
    "private_pool.json": "argusic.private_pool/1",
    "index.json": "argusic.renderings/1",  # <cycle>/renderings/index.json (argusic share-images)
    "export.json": "argusic.repair_export_index/1",  # repair/export.json (publication.repair_export)
    "paired.json": "argusic.paired_review_export/1",  # repair/paired.json (the same export)
}
_RENDERING_FILE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.(png|mp4|gif|json)$")
MAX_RENDERING_BYTES = 64 * 1024**2
VERDICT_WORDS = {
    "runs": "runs",
    "runs_with_mocks": "runs with mocks",
    "could_not_verify": "could not verify",
    "not_yet_verified": "not yet verified",
}


# The fields the pages read from each kind of published row. A row without one of them (a file
# written from a partial warehouse, an older publication) shows it as "none" rather than failing.
FIELDS = {
    "board": (
        "agent_id display_name is_standard_agent rank board_score pass_rate passes valid_attempts "
        "invalid_attempts sets_total sets_counted sets_unstable sets_under_review sets_incomplete "
        "is_demo_cycle harness_edition sponsor sponsorship agent agent_page"
    ),
    "project": (
        "project_id commit_sha verdict verified_by_agent verified_by_attempt_id verified_at "
        "complete_attempts valid_attempts recorded_attempts review_status project_label sealed "
        "verified_by_agent_name verified_by_agent_page cycle_recorded_attempts cycle_valid_attempts "
        "cycle_invalid_attempts cycle_reruns"
    ),
    "attempt": (
        "attempt_id agent_id project_id purpose attempt_no is_valid invalid_reason outcome score "
        "install_points run_points recovery_points depth_points commit_sha tier budget_seconds "
        "effective_budget_seconds demo end_reason started_at ended_at methodology_version rerun_of "
        "executor image harness_name harness_version model_requested model_responded key_kind "
        "verified_how final_state log_sha256 recording_sha256 report_sha256 served_log_sha256 "
        "served_log_bytes served_recording_sha256 served_recording_bytes masking_applied "
        "served_copy_withheld harness_edition scaffold_sha256 image_role image_reference image_digest "
        "instructions_version instructions_sha256 limit_cpus limit_memory_bytes limit_pids "
        "limit_disk_bytes network_mode limit_budget_seconds display container_fault project_label sealed "
        "claimed_install_ok observed_install_ok claimed_ran_ok observed_ran_ok claimed_errors_encountered "
        "observed_errors_encountered claimed_errors_fixed observed_errors_fixed claimed_test_depth "
        "observed_verified seal_status claims_not_shown agent agent_name configuration model_matches "
        "wall_seconds agent_seconds overhead_seconds rerun_no condition provisional_result final_decision "
        "decided_by_kind counts_as_result overturned judged_at"
    ),
    "correction": "attempt_id dispute_id note decided_by decided_at rerun_attempt_id",
    "tier": "tier reference_model weights_gb context_gb overhead_gb required_gb required_unified_gb",
    "machine": (
        "machine_id name memory_gb memory_type bandwidth_gb_per_s model_memory_gb largest_tier "
        "gb_per_dollar price_usd price_date status missing_inputs"
    ),
    "speed": "machine_id tier fits tokens_per_s_max status",
    "kind": "kind label status targets_tested runs_recorded",
    "edition": (
        "edition written_on effective_on effective_before_written runs_recorded cycles_recorded "
        "instructions_version scaffold_sha256 summary"
    ),
    "methodology_edition": "edition written_on effective_on effective_before_written runs_recorded summary",
    "environment": (
        "cycle_id valid_attempts attempts_with_environment attempts_without_environment harness_edition "
        "environments is_uniform disagrees_on"
    ),
}


def complete(rows: Any, kind: str) -> list[dict[str, Any]]:
    """Published rows with every field the pages read (a missing one is None)."""
    names = FIELDS[kind].split()
    if not isinstance(rows, list):
        return []
    return [{**dict.fromkeys(names), **row} for row in rows if isinstance(row, dict)]


class SiteError(RuntimeError):
    """The site cannot be built: a published file is missing, too large, a link, or not what it says."""


# -- quoted text ------------------------------------------------------------------------------------

# An author's dash between words: an em or en dash (spaced or not), or a spaced `--` or `-`.
_DASH = re.compile(r"\s*[\u2014\u2013]\s*|(?<=\S)\s+--?\s+(?=\S)")
_CODE_SPAN = re.compile(r"(`[^`]*`)")


def display_quote(text: str | None) -> str:
    """Quoted text as displayed: an author's dash becomes ", " (". " before a capital letter).

    Hyphens inside words and everything inside `code spans` are left alone; the stored text is never
    changed (this is applied when a page is written)."""
    if not text:
        return text or ""
    parts = _CODE_SPAN.split(text)
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        segment = parts[i]
        out, last = [], 0
        for match in _DASH.finditer(segment):
            before, after = segment[last : match.start()], segment[match.end() :]
            # a dash at the very start or end is not between words (a code span next to it counts)
            if not (before.strip() or i > 0) or not (after.strip() or i + 1 < len(parts)):
                continue
            out.append(before.rstrip(",;:"))
            out.append(". " if after[:1].isupper() else ", ")
            last = match.end()
        parts[i] = "".join(out) + segment[last:]
    return "".join(parts)


# -- reading the published files -------------------------------------------------------------------


def _load(path: Path, required: bool = True) -> dict[str, Any] | None:
    if path.is_symlink():
        raise SiteError(f"{path}: a link, not a published file (links are not followed)")
    if not path.is_file():
        if required:
            raise SiteError(
                f"{path}: missing (publish the cycle first: `argusic build`, then the publish step)"
            )
        return None
    if path.stat().st_size > MAX_PUBLISHED_JSON_BYTES:
        raise SiteError(f"{path}: larger than {MAX_PUBLISHED_JSON_BYTES} bytes")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise SiteError(f"{path}: not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("schema") != _SCHEMAS[path.name]:
        raise SiteError(f"{path}: schema is not {_SCHEMAS[path.name]!r}")
    return doc


def _renderings(folder: Path, attempts: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The renderings ``argusic share-images`` listed in ``<cycle>/renderings/index.json``, by attempt:
    only files named plainly, regular (no links), under the size cap, of a published attempt, whose
    bytes still have the listed sha256; anything else refuses the build (SiteError), never a page
    that links what was not checked. No index: no renderings."""
    index = _load(folder / "index.json", required=False) if not folder.is_symlink() else None
    if folder.is_symlink():
        raise SiteError(f"{folder}: a link, not a published folder (links are not followed)")
    found: dict[str, list[dict[str, Any]]] = {}
    for entry in (index or {}).get("files") or []:
        if not isinstance(entry, dict) or entry.get("kind") not in ("run", "video") or "file" not in entry:
            continue  # the board card, and a video the renderer refused (it says why in the index)
        name, attempt_id = entry.get("file"), entry.get("attempt_id")
        if not isinstance(name, str) or not _RENDERING_FILE.fullmatch(name):
            raise SiteError(f"{folder / 'index.json'}: rendering file name {name!r} refused")
        if attempt_id not in attempts:
            raise SiteError(f"{folder / 'index.json'}: {name} names an attempt not published: {attempt_id!r}")
        path = folder / name
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_RENDERING_BYTES:
            raise SiteError(f"{path}: not a regular file under {MAX_RENDERING_BYTES} bytes")
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != entry.get("sha256"):
            raise SiteError(
                f"{path}: its sha256 is not the one index.json lists (changed since it was rendered)"
            )
        manifest = entry.get("manifest")
        plain = isinstance(manifest, str) and _RENDERING_FILE.fullmatch(manifest)
        if manifest is not None and not (plain and _regular(folder / manifest)):
            raise SiteError(f"{folder / 'index.json'}: manifest {manifest!r} of {name} refused")
        found.setdefault(attempt_id, []).append(
            {"kind": entry["kind"], "file": name, "path": path, "sha256": digest, "manifest": manifest}
        )
    return found


def _regular(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def _part(value: Any, what: str) -> str:
    """An id used as a file or folder name: letters, digits, '_' and '-' only."""
    if not isinstance(value, str) or not _SAFE_PART.fullmatch(value):
        raise SiteError(f"{what} {value!r}: not usable as a page name (letters, digits, '_' and '-')")
    return value


@dataclass
class PublishedCycle:
    cycle_id: str
    board: dict[str, Any]
    attempts: list[dict[str, Any]]
    public_pool: dict[str, Any] | None
    private_pool: dict[str, Any] | None
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Renderings of each published attempt (issue 30: `argusic share-images`), checked by sha256:
    # attempt id -> [{kind, file, path, sha256, manifest}]
    renderings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


def published_cycles(publish_dir: Path) -> list[PublishedCycle]:
    """Every cycle published under ``publish_dir`` (a folder with a board.json), by cycle id."""
    cycles = []
    if not publish_dir.is_dir():
        raise SiteError(f"{publish_dir}: no publish folder (nothing published yet)")
    for folder in sorted(publish_dir.iterdir()):
        if folder.is_symlink() or not folder.is_dir() or not (folder / "board.json").exists():
            continue
        board = _load(folder / "board.json")
        cycle_id = _part(board.get("cycle_id"), "cycle id")
        if cycle_id != folder.name:
            raise SiteError(f"{folder / 'board.json'}: holds cycle {cycle_id!r}, not {folder.name!r}")
        attempts = complete(_load(folder / "attempts.json").get("attempts"), "attempt")
        board["rows"] = complete(board.get("rows"), "board")
        board["projects"] = complete(board.get("projects"), "project")
        board["corrections"] = complete(board.get("corrections"), "correction")
        board["target_kinds"] = complete(board.get("target_kinds"), "kind")
        hardware = board.get("hardware") if isinstance(board.get("hardware"), dict) else {}
        board["hardware"] = {
            "tiers": complete(hardware.get("tiers"), "tier"),
            "machines": complete(hardware.get("machines"), "machine"),
            "speed_bounds": complete(hardware.get("speed_bounds"), "speed"),
        }
        board.setdefault("attempts_through", None)
        board.setdefault("instructions", None)
        board["harness_editions"] = complete(board.get("harness_editions"), "edition")
        board["methodology_editions"] = complete(board.get("methodology_editions"), "methodology_edition")
        methodology = board.get("methodology")
        usable = isinstance(methodology, dict) and isinstance(methodology.get("text"), str)
        board["methodology"] = methodology if usable else None
        environment = complete([board.get("environment")], "environment")
        board["environment"] = environment[0] if environment else None
        cycle = PublishedCycle(
            cycle_id,
            board,
            attempts,
            _load(folder / "public_pool.json", required=False),
            _load(folder / "private_pool.json", required=False),
        )
        cycle.by_id = {a["attempt_id"]: a for a in attempts}
        cycle.renderings = _renderings(folder / "renderings", cycle.by_id)
        cycles.append(cycle)
    if not cycles:
        raise SiteError(f"{publish_dir}: no published cycle (no <cycle>/board.json)")
    return cycles


def choose_front(cycles: list[PublishedCycle], requested: str | None) -> PublishedCycle:
    """The cycle the front page shows: the one asked for, else the latest by its latest attempt."""
    if requested:
        for cycle in cycles:
            if cycle.cycle_id == requested:
                return cycle
        raise SiteError(
            f"cycle {requested!r} is not published (published: {', '.join(c.cycle_id for c in cycles)})"
        )
    return max(cycles, key=lambda c: (c.board.get("attempts_through") or "", c.cycle_id))


# -- page helpers ------------------------------------------------------------------------------------


def fmt_number(value: float | int, digits: int = 0, scale: float = 1) -> str:
    return f"{value * scale:.{digits}f}"


def run_page(cycle_id: str, attempt_id: str) -> str:
    return f"cycles/{cycle_id}/runs/{served_segment(attempt_id)}.html"


def project_page(cycle_id: str, project_id: str) -> str:
    return f"cycles/{cycle_id}/projects/{_part(project_id, 'project id')}.html"


def href(path: str) -> str:
    """A relative link to a file of the site (its name as written on disk)."""
    return quote(path, safe="/._-@+#")


def edition_anchor(edition: Any) -> str:
    """The id of a harness edition's row on harness.html (letters, digits, '.', '_' and '-' kept; a
    file that wrote the edition as a number gets the same id as one that wrote it as text)."""
    return "edition-" + re.sub(r"[^A-Za-z0-9._-]", "-", str(edition))


def methodology_anchor(edition: Any) -> str:
    """The id of a methodology edition's row on methodology.html."""
    return "methodology-" + re.sub(r"[^A-Za-z0-9._-]", "-", str(edition))


# -- the methodology, rendered ---------------------------------------------------------------------


def _markdown() -> MarkdownIt:
    """CommonMark with tables; no raw HTML (it is shown as text), no links, images or autolinks (their
    text is shown, nothing is fetched or followed), no typographic replacements."""
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable("table")
    md.disable(["link", "image", "autolink", "reference", "html_inline", "html_block"])
    return md


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"


def render_markdown(text: str) -> Markup:
    """A published Markdown document (METHODOLOGY.md) as HTML: bidi controls shown as escapes, every
    character of the text escaped, headings given ids (``m-<slug>``), and no inline style (a table
    column's alignment would be one, which the pages' policy refuses)."""
    md = _markdown()
    tokens = md.parse(visible_bidi(text))
    used: set[str] = set()
    for i, token in enumerate(tokens):
        if token.type in ("th_open", "td_open") and token.attrs:
            token.attrs.pop("style", None)
        if token.type == "heading_open" and i + 1 < len(tokens):
            anchor, n = "m-" + _slug(tokens[i + 1].content), 1
            while anchor in used:
                n += 1
                anchor = f"m-{_slug(tokens[i + 1].content)}-{n}"
            used.add(anchor)
            token.attrSet("id", anchor)
    return Markup(md.renderer.render(tokens, md.options, {}))


def run_href(attempt_id: str) -> str:
    """The file name of an attempt's run page, as a link from another run page (same folder)."""
    return href(served_segment(attempt_id))


SEALED_WORDS = (
    "sealed: this project is in the cycle's private pool, which is revealed after the cycle ends; "
    "until then its name, commit, the agent's words, log and recording are not published (the raw "
    "evidence's fingerprints below commit to them now, and can be checked after the reveal)"
)


def masking_words(attempt: dict[str, Any]) -> str:
    if attempt.get("sealed"):
        return SEALED_WORDS
    if attempt.get("served_copy_withheld"):
        return "served copies withheld: nothing is shown, the attempt is invalid and rerun"
    if not attempt.get("served_log_sha256") and not attempt.get("served_recording_sha256"):
        return "no served copies: nothing is shown (raw evidence is never shown)"
    if attempt.get("masking_applied"):
        return (
            "masking was applied: the log and recording shown are served copies in which credentials, "
            "secret-shaped values, vendor banners or generated private-key bodies were replaced; the raw "
            "evidence keeps its fingerprint"
        )
    # Hiding an agent tool's start banner (its maker, product and model) is presentation, not
    # masking (argusic.masking.banners): the words say it may have happened.
    return (
        "no masking was needed: no credential or private key was found; the served copies hold the "
        "recorded bytes, except the agent tool's own start banner where it printed one (hidden: the "
        "agent is presented under its Argusic identity; never a command it ran)"
    )


@dataclass
class Served:
    """An attempt's served log or recording as the run page shows it."""

    link: str | None = None  # relative to the site root, or under the public evidence base
    text: str | None = None
    note: str | None = None
    player_json: str | None = None  # a recording as the player gets it (sizes clamped)


def shown(value: Any) -> Any:
    """Every `{{ … }}` a template writes, before it is escaped: text with its bidi controls shown as
    escapes, so no published string (a claim, a log, an id) reorders what a reader sees; markup a
    filter made (``tojson``) stays markup."""
    if not isinstance(value, str):
        return value
    text = visible_bidi(value)
    if text is value:
        return value
    return Markup(text) if isinstance(value, Markup) else text


class SiteWriter:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = Environment(
            loader=FileSystemLoader(TEMPLATES),
            autoescape=True,
            finalize=shown,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            keep_trailing_newline=True,
        )
        self.env.globals.update(
            fmt=fmt_number,
            href=href,
            run_href=run_href,
            verdict_words=VERDICT_WORDS,
            edition_anchor=edition_anchor,
            methodology_anchor=methodology_anchor,
            GIB=1 / 1024**3,
        )
        self.env.filters["quote"] = display_quote

    def write_bytes(self, relative: str, data: bytes) -> None:
        path = self.root / relative
        make_published_dir(path.parent)
        path.write_bytes(data)
        os.chmod(path, PUBLISHED_FILE_MODE)

    def copy_file(self, source: Path, relative: str) -> None:
        path = self.root / relative
        make_published_dir(path.parent)
        shutil.copyfile(source, path)  # streamed: a served log can be large
        os.chmod(path, PUBLISHED_FILE_MODE)

    def page(self, relative: str, template: str, **context: Any) -> None:
        depth = relative.count("/")
        context.setdefault("root", "../" * depth)
        text = self.env.get_template(template).render(**context)
        self.write_bytes(relative, text.encode("utf-8"))


def _served(
    attempt: dict[str, Any], kind: str, store: EvidenceStore, writer: SiteWriter, base: str | None, tmp: Path
) -> Served:
    """Fetch a served copy from the store, check it against the published sha256 and size, and keep
    it in the site (or link it under the public base)."""
    sha, size = attempt.get(f"served_{kind}_sha256"), attempt.get(f"served_{kind}_bytes")
    if attempt.get("sealed"):  # never fetched, copied or linked (argusic.publication.sealing)
        return Served(note=f"no served {kind}: " + SEALED_WORDS)
    if attempt.get("served_copy_withheld") or not sha:
        return Served(note=f"no served {kind}: " + masking_words(attempt))
    # The store knows the copy by the operator's attempt id; the site holds it (and links it) under
    # the attempt id as published, whose agent part is the identity's code (publication.agents).
    key = served_key_for(operator_attempt_id(attempt), kind, sha)
    site_key = served_key_for(attempt["attempt_id"], kind, sha)
    dest = tmp / kind
    try:
        got_sha, got_size = store.copy_to_file(store.uri_for(key), dest)
    except (EvidenceMissing, EvidenceKeyError) as err:
        return Served(note=f"the served {kind} cannot be read from the evidence store: {err}")
    if got_sha != sha or got_size != size:
        return Served(
            note=f"the served {kind} in the store is not what was published (sha256 {got_sha}): not shown"
        )
    served = Served(link=(base + site_key) if base else f"evidence/{site_key}")
    if not base:
        writer.copy_file(dest, f"evidence/{site_key}")
    elif site_key != key:  # linked in the store under the published id: the same bytes put there
        store.put_file(dest, key=site_key)
    if kind == "log":
        text, note = _read_log(dest, got_size)
        served.text, served.note = strip_terminal_codes(text), note
    elif got_size <= DEFAULT_MAX_RECORDING_MB * 1024**2:
        served.text = dest.read_bytes().decode("utf-8", errors="replace")
        # The player gets it with its terminal sizes clamped; the linked file stays as published.
        served.player_json, served.note = player_data(served.text)
    else:
        served.note = f"the served recording is {got_size} bytes, too large to embed: follow its link"
    dest.unlink(missing_ok=True)
    return served


def _log_parts(text: str | None) -> tuple[str, str]:
    """(head, tail): the tail is the log's last lines, where the attempt stopped."""
    if text is None:
        return "", ""
    lines = text.rstrip("\n").split("\n")
    cut = max(0, len(lines) - STOP_LINES)
    head = "\n".join(lines[:cut])
    return (head + "\n" if head else ""), "\n".join(lines[cut:])


def _write_assets(writer: SiteWriter) -> dict[str, str]:
    assets = load_player_assets()
    folder = player_assets_dir()
    writer.write_bytes("assets/site.css", (PAGE_CSS.strip() + "\n" + SITE_CSS).encode())
    writer.write_bytes("assets/asciinema-player.min.js", (folder / "asciinema-player.min.js").read_bytes())
    writer.write_bytes("assets/asciinema-player.css", (folder / "asciinema-player.css").read_bytes())
    writer.write_bytes("assets/asciinema-player-LICENSE.txt", (folder / "LICENSE").read_bytes())
    writer.write_bytes("assets/player-init.js", (INIT_SCRIPT + "\n").encode())
    return {"player_version": assets.version}


SITE_CSS = """
nav { margin-bottom: 1.2rem; } nav a { margin-right: 1rem; }
table.list { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; }
table.list th, table.list td { text-align: left; padding: .25rem .6rem .25rem 0; vertical-align: top;
  border-bottom: 1px solid #e3e3e3; }
table.list td.num, table.list th.num { text-align: right; }
.quote { font-style: italic; }
#stopped { background: #2b2411; display: block; border-left: 3px solid #e0b000; }
.demo { background: #ffe9e9; border-left: 4px solid #c00; padding: .5rem .8rem; }
.sponsor { font-size: .9em; color: #6b4a00; }
.doc table { border-collapse: collapse; margin: .5rem 0 1rem; }
.doc th, .doc td { text-align: left; padding: .25rem .6rem .25rem 0; vertical-align: top;
  border-bottom: 1px solid #e3e3e3; }
#dispute { margin-top: 1.5rem; border-top: 1px solid #e3e3e3; }
#rules a { margin-right: .3rem; }
#editions td:nth-child(-n+2) { white-space: nowrap; }
"""


def build_site(
    publish_dir: Path,
    front_cycle: str | None = None,
    *,
    store: EvidenceStore | None = None,
    out: Path | None = None,
    preview_of: str | None = None,
) -> Path:
    """Write the public site of every cycle published under ``publish_dir`` to ``publish_dir/site``
    (or ``out``), whole or not at all; returns the site's folder. ``preview_of``: a cycle whose board
    awaits approval; every page then says it is a preview, not published."""
    publish_dir = Path(publish_dir)
    cycles = published_cycles(publish_dir)
    front = choose_front(cycles, front_cycle)
    store = store or EvidenceStore()
    base = public_evidence_base()
    target = Path(out) if out else publish_dir / SITE_DIR
    make_published_dir(target.parent)
    # One build at a time per site (two publications at once): the later one swaps in last.
    with open(target.parent / f".{target.name}.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _build_into(target, cycles, front, store, base, preview_of, repair_export_files(publish_dir))
    return target


def repair_export_files(publish_dir: Path) -> list[tuple[str, Path]]:
    """The per-run repair aggregates exported for publication (``argusic.publication.repair_export``),
    as (file name, path): the files ``repair/export.json`` lists, each still with its listed sha256
    (SiteError otherwise); none when nothing was exported. The site copies them to ``repair/``."""
    folder = publish_dir / "repair"
    index = _load(folder / "export.json", required=False) if not folder.is_symlink() else None
    if not index:
        return []
    found = []
    for entry in index.get("files") or []:
        name = entry.get("file") if isinstance(entry, dict) else None
        if name not in ("runs.json", "runs.csv", "paired.json") or not _regular(folder / name):
            raise SiteError(f"{folder / 'export.json'}: file {name!r} refused")
        if hashlib.sha256((folder / name).read_bytes()).hexdigest() != entry.get("sha256"):
            raise SiteError(f"{folder / name}: its sha256 is not the one export.json lists")
        found.append((name, folder / name))
    return found


PAIRED_CRITERIA_WORDS = {
    "correctness": "Correctness", "change_scope": "Change scope", "consistency": "Consistency",
    "simplicity": "Simplicity", "tidiness": "Tidiness", "overall": "Overall",
}  # fmt: skip


def paired_page(path: Path) -> dict[str, Any]:
    """What the paired reviews' page shows, from the exported paired.json (schema checked)."""
    doc = _load(path) or {}
    pairs = []
    for pair in doc.get("pairs") or []:
        criteria = [
            {**c, "word": PAIRED_CRITERIA_WORDS.get(c.get("criterion"), c.get("criterion"))}
            for c in pair.get("criteria") or []
        ]
        pairs.append(
            {**pair, "criteria": criteria, "judged": any(c.get("status") == "judged" for c in criteria)}
        )
    return {"pairs": pairs, "key_id": doc.get("key_id"), "note": doc.get("note")}


def _build_into(
    target: Path,
    cycles: list[PublishedCycle],
    front: PublishedCycle,
    store: EvidenceStore,
    base: str | None,
    preview_of: str | None = None,
    repair_files: list[tuple[str, Path]] | None = None,
) -> None:
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        os.chmod(staging, PUBLISHED_DIR_MODE)
        writer = SiteWriter(staging)
        assets = _write_assets(writer)
        methodology_cycle, methodology = latest_carrying(front, cycles, "methodology")
        common = {
            "front": front.cycle_id,
            "cycles": [c.cycle_id for c in cycles],
            "harness_editions": harness_changelog(front, cycles),
            "methodology_editions": latest_carrying(front, cycles, "methodology_editions")[1] or [],
            "dispute_address": dispute_address(),
            "dispute_placeholder": DISPUTE_ADDRESS_PLACEHOLDER,
            "preview_of": preview_of,
            "repair_export": [name for name, _ in repair_files or []],
            **assets,
        }
        with tempfile.TemporaryDirectory(prefix="argusic-site-") as tmp:
            for cycle in cycles:
                _write_cycle(writer, cycle, store, base, Path(tmp), common)
        _write_cycle_board(writer, front, "index.html", common)
        shared = front.board
        writer.page(
            "hardware.html",
            "hardware.html.j2",
            hw=shared["hardware"],
            **common,
        )
        writer.page("kinds.html", "kinds.html.j2", kinds=shared["target_kinds"], **common)
        writer.page("instructions.html", "instructions.html.j2", ins=shared["instructions"], **common)
        writer.page("harness.html", "harness.html.j2", editions=common["harness_editions"], **common)
        writer.page(
            "methodology.html",
            "methodology.html.j2",
            doc=methodology,
            doc_cycle=methodology_cycle,
            rendered=render_markdown(methodology["text"]) if methodology else None,
            **common,
        )
        agents = published_agents(cycles)
        for agent in agents:
            writer.page(
                f"agents/{agent['identity']}.html",
                "agent.html.j2",
                agent=agent,
                canonical=agent["canonical"],
                cycles_of=agent["cycles"],
                **common,
            )
        writer.page("agents/index.html", "agents.html.j2", agents=agents, **common)
        writer.page("content.html", "content.html.j2", **common)
        writer.page("disputes.html", "disputes.html.j2", **common)
        for name, path in repair_files or []:  # per-run repair aggregates, masked item ids
            writer.copy_file(path, f"repair/{name}")
        paired = dict(repair_files or []).get("paired.json")
        if paired is not None:  # the paired patch reviews (issue 31): labels and masked ids only
            writer.page("repair/paired.html", "paired.html.j2", paired=paired_page(paired), **common)
        _swap(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap(staging: Path, target: Path) -> None:
    """Put the new site in place of the old one (two renames; the old tree is then removed)."""
    old = None
    if target.exists() or target.is_symlink():
        old = target.with_name(f".{target.name}.old.{os.getpid()}")
        os.replace(target, old)
    os.replace(staging, target)
    if old is not None:
        if old.is_dir() and not old.is_symlink():
            shutil.rmtree(old)
        else:
            old.unlink()


def harness_changelog(front: PublishedCycle, cycles: list[PublishedCycle]) -> list[dict[str, Any]]:
    """The harness changelog as the front cycle's publication carries it (else the latest that
    carries one: a board published before the changelog was has none)."""
    for cycle in [front, *sorted(cycles, key=lambda c: c.cycle_id, reverse=True)]:
        if cycle.board.get("harness_editions"):
            return cycle.board["harness_editions"]
    return []


def latest_carrying(front: PublishedCycle, cycles: list[PublishedCycle], key: str) -> tuple[str | None, Any]:
    """(cycle id, value): what the front cycle's board.json carries under ``key``, else the latest
    board that carries it (a board published before the methodology was has none)."""
    for cycle in [front, *sorted(cycles, key=lambda c: c.cycle_id, reverse=True)]:
        if cycle.board.get(key):
            return cycle.cycle_id, cycle.board[key]
    return None, None


def cycle_edition(cycle: PublishedCycle) -> str | None:
    """The harness edition the cycle ran, as published (its environment, else its board rows)."""
    environment = cycle.board.get("environment") or {}
    if environment.get("harness_edition"):
        return environment["harness_edition"]
    return next((r["harness_edition"] for r in cycle.board.get("rows", []) if r.get("harness_edition")), None)


def harness_of(attempt: dict[str, Any]) -> str | None:
    """The harness an attempt ran, as published (under its "configuration" since identities)."""
    configuration = attempt.get("configuration")
    if isinstance(configuration, dict) and configuration.get("harness_name"):
        return configuration["harness_name"]
    return attempt.get("harness_name")


# What the agent page shows beside the configuration but the identity is not the hash of.
NOT_HASHED = ("sha256", "source", "product", "models_answered", "agent_ids")


def published_agents(cycles: list[PublishedCycle]) -> list[dict[str, Any]]:
    """Every agent identity the cycles publish (board.json's "agents"), each with its configuration's
    canonical JSON (checked against its sha256 and its identity: a published identity that is not
    its configuration's hash stops the build) and its board rows in every cycle."""
    found: dict[str, dict[str, Any]] = {}
    for cycle in cycles:
        agents = cycle.board.get("agents")
        if not isinstance(agents, list):
            continue
        for agent in agents:
            if not isinstance(agent, dict) or not isinstance(agent.get("configuration"), dict):
                raise SiteError(f"cycle {cycle.cycle_id}: an agent entry without a configuration")
            code = _part(agent.get("identity"), "agent identity")
            configuration = agent["configuration"]
            hashed = {k: v for k, v in configuration.items() if k not in NOT_HASHED}
            canonical = json.dumps(hashed, sort_keys=True, separators=(",", ":"), allow_nan=False)
            digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
            if digest != configuration.get("sha256") or not code.endswith(digest[:6]):
                raise SiteError(
                    f"cycle {cycle.cycle_id}: agent {code} is not the hash of the configuration it "
                    f"publishes (sha256 {digest})"
                )
            entry = found.setdefault(code, {**agent, "canonical": canonical, "cycles": []})
            rows = [r for r in cycle.board.get("rows", []) if r.get("agent") == code]
            entry["cycles"] += [{**r, "cycle_id": cycle.cycle_id} for r in rows]
    return [found[code] for code in sorted(found)]


def _projects_of(cycle: PublishedCycle) -> list[dict[str, Any]]:
    """The cycle's projects (verdicts from board.json) with their attempts (from attempts.json)."""
    attempts_by_project: dict[str, list[dict[str, Any]]] = {}
    for attempt in cycle.attempts:
        attempts_by_project.setdefault(attempt["project_id"], []).append(attempt)
    projects = []
    for verdict in cycle.board.get("projects", []):
        attempts = [
            a
            for a in attempts_by_project.get(verdict["project_id"], [])
            if a["commit_sha"] == verdict["commit_sha"]
        ]
        projects.append({**verdict, "attempts": attempts})
    return projects


def _write_cycle_board(
    writer: SiteWriter, cycle: PublishedCycle, relative: str, common: dict[str, Any]
) -> None:
    writer.page(
        relative,
        "board.html.j2",
        board=cycle.board,
        cycle_id=cycle.cycle_id,
        projects=_projects_of(cycle),
        edition=cycle_edition(cycle),
        **common,
    )


def _write_cycle(
    writer: SiteWriter,
    cycle: PublishedCycle,
    store: EvidenceStore,
    base: str | None,
    tmp: Path,
    common: dict[str, Any],
) -> None:
    cid = cycle.cycle_id
    _write_cycle_board(writer, cycle, f"cycles/{cid}/index.html", common)
    writer.page(
        f"cycles/{cid}/pool.html",
        "pool.html.j2",
        cycle_id=cid,
        public=cycle.public_pool,
        private=cycle.private_pool,
        **common,
    )
    corrections = cycle.board.get("corrections", [])
    rerun_ids = {a["rerun_of"] for a in cycle.attempts if a.get("rerun_of")}
    for project in _projects_of(cycle):
        writer.page(
            project_page(cid, project["project_id"]),
            "project.html.j2",
            cycle_id=cid,
            p=project,
            rerun_ids=rerun_ids,
            **common,
        )
    instructions = cycle.board.get("instructions") or {}
    sponsors = {r["agent_id"]: r for r in cycle.board.get("rows", []) if r.get("sponsor")}
    for attempt in cycle.attempts:
        log = _served(attempt, "log", store, writer, base, tmp)
        recording = _served(attempt, "recording", store, writer, base, tmp)
        head, tail = _log_parts(log.text)
        own = [c for c in corrections if c["attempt_id"] == attempt["attempt_id"]]
        redoes = [c for c in corrections if c.get("rerun_attempt_id") == attempt["attempt_id"]]
        renderings = []
        for made in cycle.renderings.get(attempt["attempt_id"], []):
            writer.copy_file(made["path"], f"cycles/{cid}/renderings/{made['file']}")
            if made["manifest"]:
                folder = made["path"].parent
                writer.copy_file(folder / made["manifest"], f"cycles/{cid}/renderings/{made['manifest']}")
            renderings.append(made)
        writer.page(
            run_page(cid, attempt["attempt_id"]),
            "run.html.j2",
            cycle_id=cid,
            a=attempt,
            log=log,
            log_head=head,
            log_tail=tail,
            recording=recording,
            recording_json=Markup(recording.player_json) if recording.player_json is not None else None,
            masking=masking_words(attempt),
            corrections=own,
            redoes=redoes,
            in_cycle=cycle.by_id,
            instructed=harness_of(attempt) in instructions.get("harnesses", []),
            instructions_sha256=instructions.get("sha256"),
            sponsor=sponsors.get(attempt["agent_id"]),
            rerun_by=[x["attempt_id"] for x in cycle.attempts if x.get("rerun_of") == attempt["attempt_id"]],
            renderings=renderings,
            **common,
        )
