"""The evidence viewer: a read-only web app for ops and analysts (issue 29, "evidence over HTTP" and
"a cycle viewer").

    /                                           the cycle viewer: every attempt of a cycle (agent,
                                                project, attempt, outcome, score, points, duration,
                                                invalid reason, correction), failures first,
                                                sortable and filterable, one click to log and recording
    /attempts/<attempt id>                      one attempt: `argusic report`'s page (facts, the served
                                                log, the recording in the vendored asciinema-player)
    /served/<attempt id>/<sha256>/<name>        a served (masked) copy by its content address:
                                                log.txt or recording.cast

What it reads: the analyst copy (the table: `marts.attempt_scores` and `marts.attempt_corrections`),
the attempt's record as `argusic play` finds it (`publication.replay.find_attempt`), and the evidence
store (``ARGUSIC_EVIDENCE_URL``: a folder, or S3 on a cluster). It writes nothing.

What it refuses (404, nothing read): a path that is not one of the three shapes, an attempt id off
its grammar, a served key that is not `served/<id>/<64 hex>/log.txt|recording.cast` exactly as the
store writes it, a sha256 that is not the one the attempt's validated record names for its served
copy (so only the masked copies an attempt's record points at are ever served, never raw evidence),
a copy whose bytes no longer hash to their record's sha256. A copy over ``max_mb`` is refused with
413 (`argusic play` plays it). No part of a request becomes a path: ids and hashes are checked
against their grammar, and the store builds the key itself and opens it without following links.

Authentication is the caller's: `create_app(dependencies=...)`. The Airflow plugin
(`argusic.orchestration.viewer_plugin`) passes Airflow's own (the JWT the UI holds, or a bearer
token, checked by the auth manager: whoever may read task logs may read the evidence).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import duckdb
from fastapi import FastAPI
from fastapi.params import Depends
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from argusic.core.evidence import EvidenceStore
from argusic.core.evidence_links import served_parts
from argusic.core.record import RecordError, parse_attempt_id
from argusic.core.safe_io import visible_bidi
from argusic.publication.attempt_page import PlayerMissing, write_report
from argusic.publication.replay import ReplayRefused, fetch_served, find_attempt, served_ref
from argusic.warehouse.analyst import AnalystCopyMissing, connect_analyst, copy_version, current_copy

DEFAULT_MAX_MB = 32  # a served copy larger than this is not sent (nor embedded in an attempt page)
OUTCOME_ORDER = ("fail", "timeout", "invalid", "pass_mock", "pass_full")  # failures first
ATTEMPT_ANCHOR = "recording"

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "private, no-store",
}


def _e(value: object) -> str:
    return html.escape(visible_bidi("" if value is None else str(value)), quote=True)


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


# -- the cycle viewer's rows -----------------------------------------------------------------------


@dataclass(frozen=True)
class AttemptRow:
    cycle_id: str
    agent_id: str
    project_id: str
    attempt_no: int
    attempt_id: str
    purpose: str
    outcome: str
    score: float | None
    points: str
    duration_seconds: float | None
    budget_seconds: float | None
    end_reason: str | None
    invalid_reason: str | None
    correction: str
    withheld: bool
    log_key: str | None  # the served log's key in the store (served/<id>/<sha>/log.txt)
    has_recording: bool


def _table_exists(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = ? AND table_name = ?",
            [schema, table],
        ).fetchone()[0]
    )


def cycles(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int]]:
    """Every cycle of the analyst copy with its number of attempts, the latest started first."""
    return [
        (str(c), int(n))
        for c, n in con.execute(
            "SELECT cycle_id, count(*) FROM marts.attempt_scores GROUP BY cycle_id "
            "ORDER BY max(started_at) DESC, cycle_id DESC"
        ).fetchall()
    ]


def _key_of(uri: str | None, store_url: str) -> str | None:
    base = store_url.rstrip("/") + "/"
    if not uri or not uri.startswith(base):
        return None
    key = uri[len(base) :]
    return key if served_parts(key) else None


def attempt_rows(con: duckdb.DuckDBPyConnection, cycle_id: str, store_url: str) -> list[AttemptRow]:
    """The attempts of `cycle_id`, failures first (fail, timeout, invalid, then passes), then agent,
    project, attempt and rerun. A corrected original says which rerun counts in its place; the rerun
    says whose correction it is."""
    corrections = _table_exists(con, "marts", "attempt_corrections")
    joins = (
        "LEFT JOIN marts.attempt_corrections c ON c.attempt_id = s.attempt_id "
        "LEFT JOIN marts.attempt_corrections o ON o.rerun_attempt_id = s.attempt_id "
        if corrections
        else ""
    )
    extra = (
        "c.rerun_attempt_id, c.note, c.attempt_id IS NOT NULL, o.attempt_id"
        if corrections
        else "NULL, NULL, false, NULL"
    )
    order = " ".join(f"WHEN '{o}' THEN {i}" for i, o in enumerate(OUTCOME_ORDER))
    rows = con.execute(
        f"""
        SELECT s.cycle_id, s.agent_id, s.project_id, s.attempt_no, s.attempt_id, s.purpose, s.outcome,
               s.score, s.install_points, s.run_points, s.recovery_points, s.depth_points,
               s.duration_seconds, s.effective_budget_seconds, s.end_reason, s.invalid_reason,
               coalesce(s.served_copy_withheld, false), s.served_log_uri, s.served_recording_uri,
               {extra}
        FROM marts.attempt_scores s {joins}
        WHERE s.cycle_id = ?
        ORDER BY CASE s.outcome {order} ELSE {len(OUTCOME_ORDER)} END, s.agent_id, s.project_id,
                 s.attempt_no, s.attempt_id
        """,
        [cycle_id],
    ).fetchall()
    out = []
    for r in rows:
        (cycle, agent, project, no, attempt_id, purpose, outcome, score, ins, run, rec, depth, secs, budget,
         end, why, withheld, log_uri, rec_uri, corrected_by, note, corrected, correction_of) = r  # fmt: skip
        if corrected:
            correction = (
                "corrected: "
                + (f"rerun {corrected_by} counts in its place" if corrected_by else "rerun not loaded yet")
                + (f" ({note})" if note else "")
            )
        elif correction_of:
            correction = f"correction rerun of {correction_of}"
        else:
            correction = ""
        points = "—" if ins is None else f"{ins}+{run}+{rec:g}+{depth}"
        out.append(
            AttemptRow(
                cycle_id=cycle,
                agent_id=agent,
                project_id=project,
                attempt_no=int(no),
                attempt_id=attempt_id,
                purpose=purpose or "",
                outcome=outcome,
                score=score,
                points=points,
                duration_seconds=secs,
                budget_seconds=budget,
                end_reason=end,
                invalid_reason=why,
                correction=correction,
                withheld=bool(withheld),
                log_key=None if withheld else _key_of(log_uri, store_url),
                has_recording=not withheld and _key_of(rec_uri, store_url) is not None,
            )
        )
    return out


# -- pages -------------------------------------------------------------------------------------------

PAGE_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.2rem; color: #1d1f21; background: #fafafa; }
h1 { font-size: 1.3rem; margin: 0 0 .3rem; } .muted { color: #555; }
form.controls { display: flex; gap: .8rem; flex-wrap: wrap; align-items: center; margin: .6rem 0; }
table.attempts { border-collapse: collapse; width: 100%; background: #fff; }
table.attempts th, table.attempts td { border-bottom: 1px solid #ddd; padding: .3rem .5rem; text-align: left;
  vertical-align: top; }
table.attempts th { background: #eef0f2; cursor: pointer; user-select: none; white-space: nowrap; }
table.attempts th[aria-sort=ascending]::after { content: " \\25B2"; }
table.attempts th[aria-sort=descending]::after { content: " \\25BC"; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.o-fail, .o-timeout { color: #a40000; font-weight: 600; } .o-invalid { color: #8a5a00; font-weight: 600; }
.o-pass_full, .o-pass_mock { color: #11642a; } .note { background: #fff6d6; padding: .4rem .7rem; }
"""
NAV_CSS = """nav.argusic { font: 14px/1.4 system-ui, sans-serif; background: #eef0f2; padding: .5rem 1rem;
  margin: -1rem -1rem 1rem; } nav.argusic a { margin-right: 1.2rem; } nav.argusic .muted { color: #555; }"""

TABLE_SCRIPT = """(function () {
  "use strict";
  var table = document.getElementById("attempts");
  if (!table) { return; }
  var body = table.tBodies[0];
  var text = document.getElementById("filter-text");
  var outcome = document.getElementById("filter-outcome");
  var count = document.getElementById("shown-count");
  var cycle = document.getElementById("cycle");
  cycle.addEventListener("change", function () { cycle.form.submit(); });
  function apply() {
    var words = text.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var wanted = outcome.value, shown = 0;
    Array.prototype.forEach.call(body.rows, function (row) {
      var hay = row.textContent.toLowerCase();
      var ok = (!wanted || row.getAttribute("data-outcome") === wanted ||
                (wanted === "not-pass" && row.getAttribute("data-outcome").indexOf("pass") !== 0)) &&
               words.every(function (w) { return hay.indexOf(w) !== -1; });
      row.hidden = !ok; if (ok) { shown += 1; }
    });
    count.textContent = shown + " of " + body.rows.length + " shown";
  }
  text.addEventListener("input", apply);
  outcome.addEventListener("change", apply);
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, index) {
    th.addEventListener("click", function () {
      var ascending = th.getAttribute("aria-sort") !== "ascending";
      Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
        h.removeAttribute("aria-sort");
      });
      th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
      var numeric = th.getAttribute("data-type") === "number";
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function (a, b) {
        var x = a.cells[index].getAttribute("data-sort"), y = b.cells[index].getAttribute("data-sort");
        var c;
        if (numeric) {
          x = x === "" ? -Infinity : parseFloat(x); y = y === "" ? -Infinity : parseFloat(y); c = x - y;
        } else { c = x.localeCompare(y); }
        return ascending ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
  apply();
})();"""


def _html_page(title: str, body: str, scripts: Sequence[str] = ()) -> HTMLResponse:
    csp = (
        "default-src 'none'; "
        + (f"script-src {' '.join(_csp_hash(s) for s in scripts)}; " if scripts else "")
        + "style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'self'; "
        "frame-ancestors 'self'"
    )
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{PAGE_CSS}</style></head><body>{body}"
        + "".join(f"<script>{s}</script>" for s in scripts)
        + "</body></html>"
    )
    return HTMLResponse(page, headers={**SECURITY_HEADERS, "Content-Security-Policy": csp})


def _duration(seconds: float | None, budget: float | None) -> str:
    if seconds is None:
        return "—"
    shown = f"{seconds:.1f} s" if seconds < 600 else f"{seconds / 60:.1f} min"
    return shown + (f" of {budget:g} s" if budget else "")


def cycle_page(rows: list[AttemptRow], cycle_id: str, all_cycles: list[tuple[str, int]], copy: str) -> str:
    options = "".join(
        f'<option value="{_e(c)}"{" selected" if c == cycle_id else ""}>{_e(c)} ({n})</option>'
        for c, n in all_cycles
    )
    outcomes = sorted({r.outcome for r in rows}, key=lambda o: (o not in OUTCOME_ORDER, o))
    outcome_options = (
        '<option value="">every outcome</option><option value="not-pass">not a pass</option>'
        + "".join(f'<option value="{_e(o)}">{_e(o)}</option>' for o in outcomes)
    )
    counts = {o: sum(r.outcome == o for r in rows) for o in outcomes}
    tally = ", ".join(f"{n} {o}" for o, n in counts.items())
    head = [
        ("agent", "text"), ("project", "text"), ("attempt", "number"), ("outcome", "text"),
        ("score", "number"), ("points", "text"), ("duration", "number"), ("invalid reason", "text"),
        ("correction", "text"), ("evidence", "text"),
    ]  # fmt: skip
    th = "".join(f'<th scope="col" data-type="{t}">{_e(n)}</th>' for n, t in head)
    body_rows = []
    for r in rows:
        page = f"attempts/{quote(r.attempt_id, safe='')}"
        rerun = parse_attempt_id(r.attempt_id)["rerun_no"]
        attempt = f"{r.attempt_no}" + (f" rerun {rerun}" if rerun else "")
        if r.withheld:
            evidence = "served copies withheld"
        else:
            links = [f'<a href="{_e(page)}">page</a>']
            if r.log_key:
                links.append(f'<a href="{_e(r.log_key)}">log</a>')
            if r.has_recording:
                links.append(f'<a href="{_e(page)}#{ATTEMPT_ANCHOR}">recording</a>')
            evidence = " · ".join(links)
        cells = [
            (r.agent_id, _e(r.agent_id), ""),
            (r.project_id, _e(r.project_id), ""),
            (f"{r.attempt_no}.{rerun}", f'<a href="{_e(page)}">{_e(attempt)}</a>', "num"),
            (r.outcome, f'<span class="o-{_e(r.outcome)}">{_e(r.outcome)}</span>', ""),
            ("" if r.score is None else f"{r.score}", "—" if r.score is None else f"{r.score:.1f}", "num"),
            (r.points, _e(r.points), ""),
            (
                "" if r.duration_seconds is None else f"{r.duration_seconds}",
                _e(_duration(r.duration_seconds, r.budget_seconds)),
                "num",
            ),
            (r.invalid_reason or "", _e(r.invalid_reason or ""), ""),
            (r.correction, _e(r.correction), ""),
            ("", evidence, ""),
        ]
        tds = "".join(
            f'<td data-sort="{_e(sort)}"{f" class={cls}" if cls else ""}>{shown}</td>'
            for sort, shown, cls in cells
        )
        body_rows.append(
            f'<tr data-outcome="{_e(r.outcome)}" data-attempt="{_e(r.attempt_id)}" '
            f'title="{_e(r.attempt_id)}">{tds}</tr>'
        )
    return (
        f"<h1>Argusic cycle viewer — cycle {_e(cycle_id)}</h1>"
        f'<p class="muted">{len(rows)} attempt(s): {_e(tally) or "none"}. Failures first; click a column '
        f"to sort. From the analyst copy {_e(copy)} (read-only; a build since shows on reload).</p>"
        '<form class="controls" method="get" action="">'
        f'<label>cycle <select name="cycle" id="cycle">{options}</select></label>'
        '<noscript><button type="submit">show</button></noscript>'
        f'<label>outcome <select id="filter-outcome">{outcome_options}</select></label>'
        '<label>filter <input id="filter-text" type="search" placeholder="agent, project, reason…"></label>'
        '<span id="shown-count" class="muted"></span></form>'
        f'<table class="attempts" id="attempts"><thead><tr>{th}</tr></thead>'
        f"<tbody>{''.join(body_rows)}</tbody></table>"
    )


def _nav(attempt_id: str, cycle_id: str, log_key: str | None, recording_key: str | None) -> str:
    links = [f'<a href="../?cycle={_e(quote(cycle_id, safe=""))}">&larr; cycle {_e(cycle_id)}</a>']
    if log_key:
        links.append(f'<a href="../{_e(log_key)}">served log (text)</a>')
    if recording_key:
        links.append(f'<a href="../{_e(recording_key)}" download>served recording (.cast)</a>')
    return f'<nav class="argusic">{"".join(links)}<span class="muted">{_e(attempt_id)}</span></nav>'


# -- the app -----------------------------------------------------------------------------------------


def _refused(status: int, message: str) -> PlainTextResponse:
    return PlainTextResponse(message + "\n", status_code=status, headers=SECURITY_HEADERS)


def create_app(
    *,
    dependencies: Sequence[Depends] = (),
    store_url: str | None = None,
    max_mb: float = DEFAULT_MAX_MB,
    root_path: str = "",
) -> FastAPI:
    """The viewer as a FastAPI app. `dependencies` run before every route (authentication: the Airflow
    plugin passes Airflow's); `store_url` is the evidence store (default ``ARGUSIC_EVIDENCE_URL``);
    `max_mb` caps what is sent or embedded."""
    app = FastAPI(
        title="Argusic evidence viewer",
        dependencies=list(dependencies),
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        root_path=root_path,
    )

    def store() -> EvidenceStore:
        return EvidenceStore(store_url)

    def find(attempt_id: str):
        try:
            parse_attempt_id(attempt_id)
        except ValueError:
            return None
        try:
            return find_attempt(attempt_id)
        except (ReplayRefused, RecordError):
            return None

    @app.get("/", response_class=HTMLResponse)
    def cycle_viewer(cycle: str | None = None) -> Response:
        try:
            folder = current_copy()
            con = connect_analyst()
        except AnalystCopyMissing as err:
            return _html_page(
                "Argusic cycle viewer", f'<h1>Argusic cycle viewer</h1><p class="note">{_e(err)}</p>'
            )
        with contextlib.closing(con):
            try:
                all_cycles = cycles(con)
            except duckdb.CatalogException:
                all_cycles = []
            if not all_cycles:
                return _html_page(
                    "Argusic cycle viewer",
                    '<h1>Argusic cycle viewer</h1><p class="note">The analyst copy holds no attempts yet '
                    "(run a cycle: `argusic demo`, or the argusic_cycle DAG).</p>",
                )
            known = {c for c, _ in all_cycles}
            if cycle is not None and cycle not in known:
                return _refused(404, "no such cycle in the analyst copy")
            chosen = cycle or all_cycles[0][0]
            rows = attempt_rows(con, chosen, store().url)
        body = cycle_page(rows, chosen, all_cycles, copy_version(folder))
        return _html_page(f"Argusic cycle {chosen}", body, [TABLE_SCRIPT])

    @app.get("/attempts/{attempt_id}", response_class=HTMLResponse)
    def attempt_page(attempt_id: str) -> Response:
        facts = find(attempt_id)
        if facts is None:
            return _refused(404, "no such attempt")
        evidence = store()
        keys: dict[str, str | None] = {}
        for kind in ("log", "recording"):
            try:
                keys[kind] = evidence.key_of_uri(served_ref(facts, kind, evidence).uri)
            except (ReplayRefused, ValueError):
                keys[kind] = None
        with tempfile.TemporaryDirectory(prefix="argusic-viewer-") as tmp:
            try:
                out = write_report(facts, Path(tmp) / "page.html", store=evidence, max_recording_mb=max_mb)
            except PlayerMissing as err:
                return _refused(503, str(err))
            page = out.read_text(encoding="utf-8")
        nav = _nav(attempt_id, facts.record.cycle_id, keys["log"], keys["recording"])
        page = page.replace("<body>", f"<body><style>{NAV_CSS}</style>{nav}", 1)
        page = page.replace("<h2>Recording</h2>", f'<h2 id="{ATTEMPT_ANCHOR}">Recording</h2>', 1)
        return HTMLResponse(
            page, headers={**SECURITY_HEADERS, "Content-Security-Policy": "frame-ancestors 'self'"}
        )

    @app.get("/served/{segment}/{sha256}/{name}")
    def served(segment: str, sha256: str, name: str) -> Response:
        parts = served_parts(f"served/{segment}/{sha256}/{name}")
        if parts is None:
            return _refused(404, "not a served copy's address")
        attempt_id, kind, sha = parts
        facts = find(attempt_id)
        if facts is None:
            return _refused(404, "no such attempt")
        evidence = store()
        try:
            ref = served_ref(facts, kind, evidence)
        except ReplayRefused:
            return _refused(404, f"no served {kind} for this attempt")
        if ref.sha256 != sha:
            return _refused(404, f"not this attempt's served {kind}")
        if ref.bytes > max_mb * 1024**2:
            return _refused(
                413,
                f"the served {kind} is {ref.bytes / 1024**2:,.1f} MiB, over the {max_mb:g} MiB this viewer "
                f"sends: `argusic play {attempt_id}` plays it",
            )
        with tempfile.TemporaryDirectory(prefix="argusic-viewer-") as tmp:
            try:
                path = fetch_served(facts, kind, Path(tmp) / name, evidence)
            except ReplayRefused:
                return _refused(404, f"the served {kind} cannot be read as its record names it")
            data = path.read_bytes()
        headers = {**SECURITY_HEADERS, "Content-Security-Policy": "default-src 'none'; sandbox"}
        if kind == "recording":
            headers["Content-Disposition"] = f'attachment; filename="{attempt_id}.cast"'
            return Response(data, media_type="application/x-asciicast", headers=headers)
        headers["Content-Disposition"] = f'inline; filename="{attempt_id}.log.txt"'
        return Response(data, media_type="text/plain; charset=utf-8", headers=headers)

    return app


__all__ = ["DEFAULT_MAX_MB", "AttemptRow", "attempt_rows", "create_app", "cycles"]
