"""`argusic report ATTEMPT_ID`: one self-contained HTML page about an attempt.

The page holds the attempt's facts (agent, project, commit, outcome, points and score once built,
budget, end reason, invalid reason, masking note), its *served* log and its *served* recording in
asciinema-player, whose JavaScript, stylesheet and licence are inlined: the page opens from a
file:// URL with no network.

Log and recording are hostile text, so the page stays inert whatever they hold:

- the log is shown as text: terminal escape sequences removed, other control characters shown as
  visible symbols, then HTML-escaped inside a <pre>; in it and in every fact, Unicode bidi controls
  are shown as their escapes (``core.safe_io.visible_bidi``);
- the recording is embedded as a JSON string in a ``<script type="application/json">`` block (never
  run), with ``<``, ``>``, ``&`` and the line separators written as ``\\uXXXX`` escapes, so no
  ``</script>`` or ``<!--`` in it can end the block; the player draws it as terminal text;
- a Content-Security-Policy allows only the two inline scripts of the page (by their sha256), no
  network, no frames, no forms, no plugins: a script that got in anyway would not run (the player
  needs WebAssembly: 'wasm-unsafe-eval', which allows compiling WebAssembly, not eval).

The player files come from npm at build time (``scripts/vendor_player.sh``, run by ``make``) into
``plugins/argusic/vendor/asciinema-player/`` (ignored by git; ``ARGUSIC_PLAYER_ASSETS`` moves it).
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from argusic.core.evidence import EvidenceStore
from argusic.core.record import RunRecord
from argusic.core.safe_io import visible_bidi
from argusic.core.settings import PACKAGE_DIR
from argusic.publication.replay import (
    AttemptFacts,
    ReplayRefused,
    clamp_terminal_sizes,
    duration_words,
    ending_note,
    fetch_served,
    served_ref,
    strip_terminal_codes,
    time_split,
)

PLAYER_ASSETS_ENV = "ARGUSIC_PLAYER_ASSETS"
PLAYER_FILES = ("asciinema-player.min.js", "asciinema-player.css", "LICENSE", "VERSION")
LOG_HEAD_BYTES = 3 * 1024**2  # a longer served log is shown as its head and tail, with a note
LOG_TAIL_BYTES = 1024**2
DEFAULT_MAX_RECORDING_MB = 32  # a longer recording is not embedded: `argusic play` plays it


class PlayerMissing(RuntimeError):
    """asciinema-player is not vendored (run `make player`)."""


def player_assets_dir() -> Path:
    return Path(os.environ.get(PLAYER_ASSETS_ENV, PACKAGE_DIR / "vendor" / "asciinema-player"))


@dataclass(frozen=True)
class PlayerAssets:
    js: str
    css: str
    license: str
    version: str


def load_player_assets(folder: Path | None = None) -> PlayerAssets:
    folder = folder or player_assets_dir()
    missing = [name for name in PLAYER_FILES if not (folder / name).is_file()]
    if missing:
        raise PlayerMissing(
            f"asciinema-player is not vendored in {folder} (missing {', '.join(missing)}): run `make player` "
            "(scripts/vendor_player.sh fetches it from npm)"
        )
    assets = PlayerAssets(*((folder / name).read_text(encoding="utf-8").strip() for name in PLAYER_FILES))
    # Inlined as they are: an asset that could end its own element would break the page.
    if "</script" in assets.js.lower() or "<!--" in assets.js or "</style" in assets.css.lower():
        raise PlayerMissing(f"{folder}: the vendored player cannot be inlined (it holds </script or </style)")
    return assets


# -- embedding hostile text ------------------------------------------------------------------------

_JSON_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def json_for_script(value: object) -> str:
    """JSON that can sit inside a <script> element: no `<`, `>` or `&` in it, so neither `</script>`
    nor `<!--` can occur, whatever the value holds (inside JSON strings `\\u003c` is `<` again)."""
    text = json.dumps(value, ensure_ascii=False)
    for char, escape in _JSON_ESCAPES:  # str.replace: C speed, ~0.1 s for a 30 MB recording
        text = text.replace(char, escape)
    return text


def player_data(cast_text: str) -> tuple[str | None, str | None]:
    """A recording as the player gets it: (JSON for the page's data block, a note when its terminal
    sizes were clamped), or (None, why) when it is not a recording the player should get. The one
    way both pages (`argusic report`, the site's run page) embed one."""
    try:
        clamped = clamp_terminal_sizes(cast_text)
    except ReplayRefused as err:
        return None, f"The served recording is not played here: {err}."
    return json_for_script(clamped.text), clamped.note()


def _csp_hash(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode() + "'"


def _e(value: object) -> str:
    return html.escape(visible_bidi(str(value)), quote=True)


# -- facts ------------------------------------------------------------------------------------------


def _points(facts: AttemptFacts) -> tuple[str, str, str]:
    """(outcome, points, score) as shown."""
    record, scores = facts.record, facts.scores
    if record.invalid_reason is not None:
        return "invalid: not scored, rerun", "—", "—"
    if scores is None and facts.source_kind.startswith("its run record"):
        return "not in the warehouse yet (`argusic ingest`, then `argusic build`)", "—", "—"
    if scores is None:
        return "not built yet (run `argusic build`)", "—", "—"
    outcome = scores.get("outcome") or "—"
    parts = [scores.get(k) for k in ("install_points", "run_points", "recovery_points", "depth_points")]
    points = "—"
    if None not in parts:
        ins, run, rec, depth = parts
        points = f"install {ins} + run {run} + recovery {rec:g} + verification depth {depth}"
    score = scores.get("score")
    shown = "—" if score is None else f"{score:.2f} / 100"
    num, den = scores.get("score_numerator"), scores.get("score_denominator")
    if score is not None and num is not None and den not in (None, 1):
        shown += f" (exactly {num}/{den})"
    return outcome, points, shown


def fact_rows(facts: AttemptFacts) -> list[tuple[str, str]]:
    """(label, value) rows of the facts table, as plain text (escaped when rendered)."""
    r = facts.record
    outcome, points, score = _points(facts)
    budget = f"{r.tier}: {r.budget_seconds // 60} min"
    if r.demo and r.effective_budget_seconds:
        budget += f" (demo cycle: scaled to {duration_words(r.effective_budget_seconds)})"
    ran = f"{r.started_at:%Y-%m-%d %H:%M:%S} → {r.ended_at:%H:%M:%S} UTC"
    if r.executor:
        ran += f", {r.executor} executor" + (f", image {r.image}" if r.image else "")
    rows = [
        ("attempt", r.attempt_id),
        ("agent", r.agent_id + (f" ({r.harness.name} {r.harness.version})" if r.harness else "")),
        ("project", f"{r.project_id} at commit {r.commit}"),
        ("cycle", f"{r.cycle_id}, {r.purpose} attempt {r.attempt_no}"
         + (f", rerun of {r.rerun_of}" if r.rerun_of else "")),
        ("budget", budget),
        ("ran", ran),
        ("durations", time_split(r)),
        ("end reason", r.end_reason + (f": {ending}" if (ending := ending_note(r)) else "")),
        ("invalid reason", r.invalid_reason or "none: a valid attempt"),
        ("cut short in its container", r.container_fault or "no"),
        ("outcome", outcome),
        ("points", points),
        ("score", score),
    ]  # fmt: skip
    if r.model and (r.model.requested or r.model.responded):
        rows.append(("model", f"requested {r.model.requested or '—'}, answered {r.model.responded or '—'}"))
    if r.report is not None:
        rep = r.report
        rows += [
            ("claimed: installed / ran", f"{_yes(rep.install_ok)} / {_yes(rep.ran_ok)}"),
            ("claimed: errors fixed", f"{rep.errors_fixed} of {rep.errors_encountered} encountered"),
            ("claimed: verification", f"{rep.test_depth}: {rep.verified_how}"),
            ("final state (the agent's words)", rep.final_state),
        ]
    rows += observed_rows(r)
    if r.environment is not None:
        rows.append(("network", network_note(r.environment.limits.network)))
    rows.append(("masking", masking_note(r)))
    refs = {kind: getattr(r.evidence, kind) for kind in ("log", "recording", "report")}
    fingerprints = ", ".join(f"{kind} {ref.sha256}" for kind, ref in refs.items() if ref is not None)
    rows.append(("raw evidence (sha256)", fingerprints or "none"))
    rows.append(("found in", facts.source_kind))
    return rows


NETWORK_NOTES = {
    "none": "none: the container had no network at all (a demo or a test)",
    "section7": (
        "section 7: outbound access open (downloads, the model gateway); nothing inbound; no other "
        "attempt's container, no service of the host, no link-local or private control-plane range"
    ),
}


def network_note(network: str) -> str:
    """The network an attempt had and its policy, as the run page states it."""
    return NETWORK_NOTES.get(network, f"{network}: a Docker network the operator named")


def _yes(value: bool | None) -> str:
    return "could not tell" if value is None else ("yes" if value else "no")


def observed_rows(record: RunRecord) -> list[tuple[str, str]]:
    """What the harness observed, beside the claim (methodology 1.7: points come from it), and
    whether the landed files are what the harness sealed. Nothing for records older than both."""
    rows = []
    seen = record.observed
    if seen is not None:
        source = "its own commands" if seen.source == "harness" else "the CLI's session log"
        rows.append(("observed: from", source + (f" ({seen.note})" if seen.note else "")))
        rows.append(("observed: installed / ran", f"{_yes(seen.install_ok)} / {_yes(seen.ran_ok)}"))
        if seen.errors_encountered is not None:
            fixed = "?" if seen.errors_fixed is None else seen.errors_fixed
            rows.append(("observed: errors fixed", f"{fixed} of {seen.errors_encountered} encountered"))
        verified = (
            f"yes: `{seen.verify_command}`" if seen.verified and seen.verify_command
            else _yes(seen.verified) if seen.verified is not None else "could not tell"
        )  # fmt: skip
        rows.append(("observed: verification ran and succeeded", verified))
    elif record.report is not None:
        rows.append(("observed", "not recorded: this record predates observations (methodology 1.7)"))
    seal = record.seal
    if seal is not None:
        text = {
            "intact": "intact: every file the harness wrote landed as it wrote it",
            "altered": "changed after the harness wrote them: " + ", ".join(seal.altered),
            "missing": "no seal came from the harness",
            "no_channel": "this executor gave the harness no channel to seal through",
        }[seal.status]
        if seal.report_replaced:
            text += (
                " (the report shown is the one the harness sealed; the landed one is kept as "
                "report.landed.json)"
            )
        rows.append(("seal", text))
    return rows


def summary_line(facts: AttemptFacts) -> str:
    """One line under the title: outcome, score, how it ended and how long it took."""
    r = facts.record
    outcome, _, score = _points(facts)
    if r.agent_seconds is not None:
        took = f"agent {duration_words(r.agent_seconds)} of {duration_words(r.allowed_seconds)}"
        took += f", our overhead {duration_words(r.overhead_seconds or 0)}"
    else:
        took = f"{duration_words(r.wall_seconds)} (our overhead included)"
    parts = [outcome] if r.invalid_reason or facts.scores is None else [outcome, f"score {score}"]
    return " · ".join([*parts, f"{r.end_reason}: {took}"])


def masking_note(record: RunRecord) -> str:
    shown = record.presentation
    if shown is None:
        return "no served copies: this record predates the presentation layer; nothing is shown"
    if shown.withheld:
        return f"served copies withheld ({shown.withheld_reason}): nothing is shown; the attempt is rerun"
    if not shown.masking_applied:
        return "no masking was needed: the served copies hold the recorded bytes"
    note = (
        "masking was applied: the log and recording shown are served copies in which credentials, "
        "secret-shaped values, vendor banners or generated private-key bodies were replaced; the raw "
        "evidence keeps its fingerprint"
    )
    if shown.private_key_sha256:
        keys = shown.private_key_sha256
        note += f"; {len(keys)} generated private-key body(ies) redacted (sha256 {', '.join(keys)})"
    return note


# -- the page ---------------------------------------------------------------------------------------

PAGE_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem;
       color: #1d1f21; background: #fafafa; }
h1 { font-size: 1.4rem; margin-bottom: .2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.label { color: #555; margin-top: 0; } .summary { font-size: 1.1rem; font-weight: 600; }
table.facts { border-collapse: collapse; width: 100%; }
table.facts th { text-align: left; vertical-align: top; width: 14rem; color: #444; font-weight: 600;
                 padding: .25rem .8rem .25rem 0; }
table.facts td { padding: .25rem 0; overflow-wrap: anywhere; }
.note { background: #fff6d6; border-left: 4px solid #e0b000; padding: .5rem .8rem; }
pre.log { background: #121314; color: #e6e6e6; padding: .8rem; max-height: 36rem; overflow: auto;
          font: 12.5px/1.35 ui-monospace, "DejaVu Sans Mono", monospace; white-space: pre-wrap;
          overflow-wrap: anywhere; }
#player { max-width: 100%; }
.note.ending { border-left-color: #b00000; background: #ffecec; font-weight: 600; }
footer { margin-top: 2.5rem; color: #666; font-size: .85rem; }
footer pre { white-space: pre-wrap; font-size: .75rem; }
"""

INIT_SCRIPT = """(function () {
  "use strict";
  var data = document.getElementById("argusic-recording");
  var holder = document.getElementById("player");
  if (!data || !holder) { return; }
  window.argusicPlayer = AsciinemaPlayer.create(
    { data: JSON.parse(data.textContent) }, holder,
    { fit: "width", idleTimeLimit: 3, preload: true, terminalFontSize: "small" }
  );
})();"""


def _read_log(path: Path, size: int) -> tuple[str, str | None]:
    """The served log as text, head and tail when it is long, and a note saying what was cut."""
    with open(path, "rb") as handle:
        if size <= LOG_HEAD_BYTES + LOG_TAIL_BYTES:
            return handle.read().decode("utf-8", errors="replace"), None
        head = handle.read(LOG_HEAD_BYTES)
        handle.seek(size - LOG_TAIL_BYTES)
        tail = handle.read()
    cut = size - len(head) - len(tail)
    text = head.decode("utf-8", errors="replace") + f"\n\n[… {cut:,} bytes not shown …]\n\n"
    return text + tail.decode("utf-8", errors="replace"), (
        f"The served log is {size:,} bytes: its first {len(head):,} and last {len(tail):,} bytes are shown."
    )


def render_page(
    facts: AttemptFacts,
    log_text: str | None,
    log_note: str | None,
    cast_text: str | None,
    recording_note: str | None,
    assets: PlayerAssets,
    generated_at: datetime | None = None,
) -> str:
    """The page as one string: every text from the record, log or recording escaped, the
    recording's terminal sizes clamped."""
    r = facts.record
    recording_json = None
    if cast_text is not None:
        recording_json, clamp_note = player_data(cast_text)
        recording_note = " ".join(n for n in (recording_note, clamp_note) if n) or None
        cast_text = None if recording_json is None else cast_text  # no player for it
    title = f"{facts.label} — Argusic attempt"
    rows = "\n".join(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>" for k, v in fact_rows(facts))
    scripts = [assets.js, INIT_SCRIPT] if cast_text is not None else []
    csp = (
        "default-src 'none'; "
        + (f"script-src {' '.join(_csp_hash(s) for s in scripts)} 'wasm-unsafe-eval'; " if scripts else "")
        + "style-src 'unsafe-inline'; img-src data:; font-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>",
        f"<style>{PAGE_CSS}</style>",
        f"<style>{assets.css}</style>" if cast_text is not None else "",
        "</head><body>",
        f"<h1>{_e(facts.label)}</h1>",
        f'<p class="label">attempt <code>{_e(r.attempt_id)}</code> · cycle {_e(r.cycle_id)}</p>',
        f'<p class="summary">{_e(summary_line(facts))}</p>',
        f'<table class="facts">{rows}</table>',
        "<h2>Recording</h2>",
    ]
    if recording_note:
        parts.append(f'<p class="note">{_e(recording_note)}</p>')
    if cast_text is not None:
        parts.append('<div id="player"></div>')
    if ending := ending_note(r):  # said beside the recording, never written into it
        parts.append(f'<p class="note ending" id="recording-end">End of the recording: {_e(ending)}.</p>')
    parts.append("<h2>Log</h2>")
    if log_note:
        parts.append(f'<p class="note">{_e(log_note)}</p>')
    if log_text is not None:
        parts.append(f'<pre class="log" id="log">{_e(strip_terminal_codes(log_text))}</pre>')
    when = (generated_at or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    parts.append(
        f"<footer><p>Written by <code>argusic report</code> on {_e(when)} from the attempt's served "
        "copies (raw evidence is never shown).</p>"
    )
    if cast_text is not None:
        parts += [
            f"<details><summary>asciinema-player {_e(assets.version)} © Marcin Kulik, Apache License 2.0 "
            "(inlined in this page)</summary>",
            f"<pre>{_e(assets.license)}</pre></details>",
        ]
    parts.append("</footer>")
    if cast_text is not None:
        parts += [
            f'<script type="application/json" id="argusic-recording">{recording_json}</script>',
            f"<script>{assets.js}</script>",
            f"<script>{INIT_SCRIPT}</script>",
        ]
    parts.append("</body></html>")
    return "\n".join(p for p in parts if p) + "\n"


def write_report(
    facts: AttemptFacts,
    out: Path,
    *,
    store: EvidenceStore | None = None,
    max_recording_mb: float = DEFAULT_MAX_RECORDING_MB,
    assets: PlayerAssets | None = None,
) -> Path:
    """Fetch the served copies, render the page, write it atomically to `out`."""
    store = store or EvidenceStore()
    assets = assets or load_player_assets()
    log_text = cast_text = None
    log_note = recording_note = None
    with tempfile.TemporaryDirectory(prefix="argusic-report-") as tmp:
        try:
            ref = served_ref(facts, "log", store)
            log_path = fetch_served(facts, "log", Path(tmp) / "log.txt", store)
            log_text, log_note = _read_log(log_path, ref.bytes)
        except ReplayRefused as err:
            log_note = str(err)
        try:
            ref = served_ref(facts, "recording", store)
            if ref.bytes > max_recording_mb * 1024**2:
                recording_note = (
                    f"The served recording is {ref.bytes / 1024**2:,.1f} MiB, over the "
                    f"{max_recording_mb:g} MiB this page embeds: play it with "
                    f"`argusic play {facts.record.attempt_id}` "
                    "(or write the page again with a larger --max-recording-mb)."
                )
            else:
                path = fetch_served(facts, "recording", Path(tmp) / "recording.cast", store)
                cast_text = path.read_bytes().decode("utf-8", errors="replace")
        except ReplayRefused as err:
            recording_note = str(err)
    page = render_page(facts, log_text, log_note, cast_text, recording_note, assets)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        partial.write_text(page, encoding="utf-8")
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    return out


__all__ = [
    "PLAYER_ASSETS_ENV",
    "PlayerAssets",
    "PlayerMissing",
    "fact_rows",
    "json_for_script",
    "load_player_assets",
    "masking_note",
    "player_assets_dir",
    "player_data",
    "render_page",
    "write_report",
]
