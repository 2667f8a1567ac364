"""Publication approval: nothing is published before a person approves the exact board.

`prepare` composes the board as publishing would write it (same checks: expectations, evidence
audit), fingerprints it (sha256 of board.json's bytes) and says what changed since the cycle's last
publication: agents added or removed, scores, ranks, projects kept out by environment review,
attempts corrected by dispute. A person approves or rejects that board (Airflow form in
argusic_cycle, or `argusic publish --approve/--reject`); `record` stores the decision
(decisions.publication_decisions: cycle, board_sha256, decision, who, when, why). `publish_approved`
publishes only when the cycle's latest decision approves the board exactly as it is now: a board
that changed after the approval is refused (BoardChanged) and nothing is written.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from argusic.core.layout import publish_dir
from argusic.core.settings import runs_dir
from argusic.publication.board import Publication, compose_publication
from argusic.publication.build_worker import build_or_delegate, publish_or_delegate
from argusic.review.text import link, quoted
from argusic.warehouse import decisions
from argusic.warehouse.db import connect
from argusic.warehouse.dbt_build import PublicationBlocked, release_semaphores_at_exit

MAX_BOARD_BYTES = 16 * 1024**2  # a published board is a few KB per agent; anything bigger is not read


class NotApproved(PublicationBlocked):
    """No approval in force for the board that would be published (none, or the latest is a rejection)."""


@dataclass(frozen=True)
class AgentChange:
    agent_id: str
    score: float | None
    was_score: float | None
    rank: int | None
    was_rank: int | None
    sets_under_review: int
    was_sets_under_review: int | None


@dataclass(frozen=True)
class Changes:
    """What publishing would change, against the cycle's last published board.json (None: first)."""

    cycle_id: str
    first_publication: bool
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    agents: list[AgentChange] = field(default_factory=list)
    excluded: list[dict] = field(default_factory=list)  # projects kept out by environment review
    corrected: list[dict] = field(default_factory=list)  # attempts replaced by a correction rerun
    unchanged: bool = False
    harness_edition: str | None = None  # the harness edition the cycle ran (marts.board)
    sponsors: list[dict] = field(default_factory=list)  # agent_id, sponsor, sponsorship
    sealed: list[str] = field(default_factory=list)  # private projects' labels, sealed in this board
    revealing: list[str] = field(default_factory=list)  # private projects this board names first
    # Per agent: passes, failures, timeouts, invalid attempts and the pass rate (marts.board and
    # marts.attempt_scores); per set not counted on the board, the reason its score is "—".
    rates: list[dict] = field(default_factory=list)
    missing: list[dict] = field(default_factory=list)


@dataclass(frozen=True)
class Prepared:
    """What the approval form shows and binds; JSON-able (it travels through XCom). ``preview``:
    where the preview of the pages this board would publish was built (None when it could not be)."""

    cycle_id: str
    board_sha256: str
    subject: str
    body: str
    preview: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def last_published(cycle_id: str, out_dir: Path | None = None) -> dict | None:
    """The cycle's board.json as last published (None when never). Read with a size cap: it is our
    own file, but a file on disk all the same."""
    path = Path(out_dir or publish_dir()) / cycle_id / "board.json"
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_BOARD_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(raw) > MAX_BOARD_BYTES:
        raise PublicationBlocked(f"{path}: over {MAX_BOARD_BYTES} bytes, not read")
    board = json.loads(raw)
    if not isinstance(board, dict) or not isinstance(board.get("rows"), list):
        raise PublicationBlocked(f"{path}: not a board (no rows)")
    return board


def _review_state(cycle_id: str, db_path: Path | None) -> tuple[list[dict], list[dict]]:
    with connect(db_path, read_only=True) as con:
        excluded = con.execute(
            "SELECT project_id, review_status, decided_by, decision_note FROM marts.project_review "
            "WHERE cycle_id = ? AND excluded_from_board ORDER BY project_id",
            [cycle_id],
        ).fetchall()
        corrected = con.execute(
            "SELECT c.attempt_id, c.dispute_id, c.rerun_attempt_id, c.decided_by, c.note "
            "FROM marts.attempt_corrections AS c JOIN marts.attempt_scores AS s USING (attempt_id) "
            "WHERE s.cycle_id = ? AND c.rerun_attempt_id IS NOT NULL ORDER BY c.attempt_id",
            [cycle_id],
        ).fetchall()
    return (
        [dict(zip(("project_id", "status", "decided_by", "note"), r, strict=True)) for r in excluded],
        [
            dict(zip(("attempt_id", "dispute_id", "rerun_attempt_id", "decided_by", "note"), r, strict=True))
            for r in corrected
        ],
    )


RATES_SQL = """
SELECT b.agent_id, b.passes, b.valid_attempts, b.invalid_attempts, b.pass_rate, b.board_score,
       count(*) FILTER (WHERE s.outcome = 'fail') AS failures,
       count(*) FILTER (WHERE s.outcome = 'timeout') AS timeouts
FROM marts.board AS b
LEFT JOIN marts.attempt_scores AS s
  ON s.cycle_id = b.cycle_id AND s.agent_id = b.agent_id AND s.purpose = 'board'
WHERE b.cycle_id = ?
GROUP BY ALL
ORDER BY b.agent_id
"""

# Every set the board does not count, with what its "—" stands for (marts.pair_sets, the review's
# exclusions, the invalid attempts' reasons). A set counts when complete, not under review, and
# stable or unstable-counting-at-its-middle (marts.board's sets_counted).
MISSING_SQL = """
SELECT p.agent_id, p.project_id, p.valid_attempts, p.invalid_attempts, p.is_complete,
       p.is_unstable, p.unstable_counts_at_middle, p.spread_pct,
       coalesce(r.excluded_from_board, false) AS under_review,
       (SELECT string_agg(DISTINCT s.invalid_reason, '; ' ORDER BY s.invalid_reason)
        FROM marts.attempt_scores AS s
        WHERE s.cycle_id = p.cycle_id AND s.agent_id = p.agent_id AND s.project_id = p.project_id
          AND s.purpose = 'board' AND NOT s.is_valid) AS invalid_reasons
FROM marts.pair_sets AS p
LEFT JOIN marts.project_review AS r ON r.cycle_id = p.cycle_id AND r.project_id = p.project_id
WHERE p.cycle_id = ?
ORDER BY p.agent_id, p.project_id
"""


MISSING_LISTED = 40  # the form names this many sets without a score; the rest are counted by reason


def missing_reason(row: dict) -> str | None:
    """Why a set's score is "—" on the board (None when it counts)."""
    if row["under_review"]:
        return "kept out by environment review"
    if not row["is_complete"]:
        why = f"fewer than 3 valid attempts ({row['valid_attempts']} valid"
        if row["invalid_attempts"]:
            why += f", {row['invalid_attempts']} invalid: {row['invalid_reasons'] or 'reason not recorded'}"
        return why + ")"
    if row["is_unstable"] and not row["unstable_counts_at_middle"]:
        spread = row["spread_pct"]
        shown = "infinite" if spread is None or spread == float("inf") else f"{spread:.0f}%"
        return f"unstable: spread {shown} above 30%"
    return None


def _rates_and_gaps(cycle_id: str, db_path: Path | None, revealed: set[str]) -> tuple[list[dict], list[dict]]:
    with connect(db_path, read_only=True) as con:
        private = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'raw' AND table_name = 'pool_entries'"
        ).fetchone()[0]
        sealed_ids = set()
        if private:
            sealed_ids = {
                pid
                for (pid,) in con.execute(
                    "SELECT project_id FROM raw.pool_entries WHERE cycle_id = ? AND visibility = 'private'",
                    [cycle_id],
                ).fetchall()
            } - revealed
        cur = con.execute(RATES_SQL, [cycle_id])
        rates = [dict(zip([d[0] for d in cur.description], r, strict=True)) for r in cur.fetchall()]
        cur = con.execute(MISSING_SQL, [cycle_id])
        sets = [dict(zip([d[0] for d in cur.description], r, strict=True)) for r in cur.fetchall()]
    missing = []
    for row in sets:
        reason = missing_reason(row)
        if reason is not None:
            missing.append({"agent_id": row["agent_id"], "project_id": row["project_id"], "reason": reason,
                            "sealed": row["project_id"] in sealed_ids})  # fmt: skip
    return rates, missing


def _operator(row: dict):
    """A board row's operator agent id: published rows carry the identity's code as ``agent_id`` and
    the operator's id in ``configuration`` (argusic.publication.agents); an older board, the id."""
    configuration = row.get("configuration")
    return (configuration.get("agent_id") if isinstance(configuration, dict) else None) or row.get("agent_id")


def changes(
    cycle_id: str,
    rows: list[dict],
    previous: dict | None,
    db_path: Path | None = None,
    private: dict | None = None,
) -> Changes:
    """The board rows about to be published against the last published board of the cycle;
    ``private``: the board's ``private_projects`` (sealed labels, revealed ids)."""
    excluded, corrected = _review_state(cycle_id, db_path)
    rates, missing = _rates_and_gaps(cycle_id, db_path, set((private or {}).get("revealed") or []))
    now = {_operator(r): r for r in rows}
    before = {_operator(r): r for r in (previous or {}).get("rows", []) if isinstance(r, dict)}
    agents = [
        AgentChange(
            agent_id=agent,
            score=row.get("board_score"),
            was_score=before.get(agent, {}).get("board_score"),
            rank=row.get("rank"),
            was_rank=before.get(agent, {}).get("rank"),
            sets_under_review=int(row.get("sets_under_review") or 0),
            was_sets_under_review=before[agent].get("sets_under_review") if agent in before else None,
        )
        for agent, row in now.items()
    ]
    same = previous is not None and [
        (_operator(r), r.get("board_score"), r.get("rank"), r.get("sets_under_review"))
        for r in previous["rows"]
    ] == [(_operator(r), r.get("board_score"), r.get("rank"), r.get("sets_under_review")) for r in rows]
    return Changes(
        cycle_id=cycle_id,
        first_publication=previous is None,
        added=sorted(set(now) - set(before)) if previous is not None else sorted(now),
        removed=sorted(a for a in set(before) - set(now) if a is not None),
        agents=agents,
        excluded=excluded,
        corrected=corrected,
        harness_edition=next((r.get("harness_edition") for r in rows), None),
        sponsors=[
            {"agent_id": _operator(r), "sponsor": r["sponsor"], "sponsorship": r.get("sponsorship")}
            for r in rows
            if r.get("sponsor")
        ],
        unchanged=same,
        sealed=list((private or {}).get("sealed") or []),
        revealing=sorted(
            set((private or {}).get("revealed") or [])
            - set(((previous or {}).get("private_projects") or {}).get("revealed") or [])
        ),
        rates=rates,
        missing=missing,
    )


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def _rate(rate: dict) -> str:
    if not rate["valid_attempts"]:
        return "— (no valid attempt)"
    return f"{rate['pass_rate']:.0%} ({rate['passes']} of {rate['valid_attempts']} valid)"


def body_of(
    changes: Changes, board_sha256: str, preview: str | None = None, preview_error: str | None = None
) -> str:
    """The approval form's body (Markdown): the preview of the pages, the changes, each agent's pass
    rate, the reason for every score shown as "—", then what approving does. Every number is read
    from the board rows or the marts; ids follow the record grammar; people's notes are quoted.
    ``preview``: the preview site's front page (an http(s) address is a link; a path is text to
    open); ``preview_error``: why there is none."""
    c = changes
    lines = [f"**Board of cycle `{c.cycle_id}`**, sha256 `{board_sha256}`", ""]
    if preview:
        lines += [
            "**Preview of the exact pages this board publishes** (built, not published): "
            + link(preview, "open the preview"),
            "",
        ]
    elif preview_error:
        lines += [f"No preview of the pages: {quoted(preview_error)}", ""]
    if c.first_publication:
        lines.append("First publication of this cycle: every agent below is new on the public board.")
    elif c.unchanged:
        lines.append("Scores and ranks are the same as in the last publication of this cycle.")
    else:
        lines.append("Changes since the last publication of this cycle:")
    if not c.first_publication:
        lines.append(f"- agents added: {', '.join(f'`{a}`' for a in c.added) or 'none'}")
        lines.append(f"- agents removed: {', '.join(f'`{a}`' for a in c.removed) or 'none'}")
    lines += [
        "",
        "| agent | score | was | rank | was | sets under review | was |",
        "|---|---|---|---|---|---|---|",
    ]
    for a in c.agents:
        was_review = "—" if a.was_sets_under_review is None else str(a.was_sets_under_review)
        lines.append(
            f"| `{a.agent_id}` | {_number(a.score)} | {_number(a.was_score)} | {a.rank or '—'} | "
            f"{a.was_rank or '—'} | {a.sets_under_review} | {was_review} |"
        )
    lines.append("")
    if c.rates:
        lines += [
            "Pass rates of this cycle's board attempts (a pass: verified for real or with mock services):",
            "",
            "| agent | pass rate | fail | timeout | invalid (rerun, never counted) |",
            "|---|---|---|---|---|",
        ]
        for r in c.rates:
            counts = f"{r['failures']} | {r['timeouts']} | {r['invalid_attempts']}"
            lines.append(f"| `{r['agent_id']}` | {_rate(r)} | {counts} |")
        lines.append("")
    if c.missing:
        lines.append('Why a score is "—" (sets the board does not count):')
        for m in c.missing[:MISSING_LISTED]:
            sealed = " (a private project: published sealed, under a label)" if m.get("sealed") else ""
            lines.append(f"- `{m['agent_id']}` on `{m['project_id']}`{sealed}: {m['reason']}")
        if len(c.missing) > MISSING_LISTED:
            kinds: dict[str, int] = {}
            for m in c.missing[MISSING_LISTED:]:
                kind = m["reason"].split(" (", 1)[0].split(":", 1)[0]
                kinds[kind] = kinds.get(kind, 0) + 1
            more = "; ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
            lines.append(f"- and {len(c.missing) - MISSING_LISTED} more sets ({more}): `marts.pair_sets`")
        no_score = [a.agent_id for a in c.agents if a.score is None]
        if no_score:
            lines.append(
                f"- no board score for {', '.join(f'`{a}`' for a in no_score)}: none of its sets counts"
            )
    else:
        lines.append('Every set counts: no score is "—".')
    lines.append("")
    edition = quoted(c.harness_edition) if c.harness_edition else "not recorded (records before environments)"
    lines.append(f"Harness edition of this cycle: {edition}.")
    for sp in c.sponsors:
        what = f" ({quoted(sp['sponsorship'])})" if sp.get("sponsorship") else ""
        lines.append(
            f"- `{sp['agent_id']}` sponsored by {quoted(sp['sponsor'])}{what}, shown next to its result"
        )
    if c.sealed:
        lines.append(
            f"Private projects sealed in this board (methodology section 6): {len(c.sealed)}, published "
            "as labels with no name, commit, agent's words, log or recording until the cycle's private "
            "pool is revealed."
        )
    if c.revealing:
        lines.append(
            "**This publication reveals** the cycle's private projects "
            + ", ".join(f"`{p}`" for p in c.revealing)
            + ": their names, commits, pages, logs and recordings become public."
        )
    lines.append("")
    if c.excluded:
        lines.append("Projects kept out of the scores by environment review:")
        for e in c.excluded:
            why = f" by {quoted(e['decided_by'])}: {quoted(e['note'])}" if e["decided_by"] else ""
            lines.append(f"- `{e['project_id']}`: {e['status'].replace('_', ' ')}{why}")
    else:
        lines.append("No project is kept out by environment review.")
    if c.corrected:
        lines.append("")
        lines.append("Attempts corrected after a dispute (the rerun counts in their place):")
        for e in c.corrected:
            lines.append(
                f"- `{e['attempt_id']}` → `{e['rerun_attempt_id']}` (dispute `{e['dispute_id']}`, "
                f"ruled by {quoted(e['decided_by'])}: {quoted(e['note'])})"
            )
    lines += [
        "",
        "**Approve** publishes exactly this board (the sha256 above); if the warehouse changes before "
        "`publish` runs, publishing is refused and the board needs a new approval. **Reject** publishes "
        "nothing; your note is recorded as the reason. A note is required either way.",
    ]
    return "\n".join(lines)


def prepare(cycle_id: str, db_path: Path | None = None, out_dir: Path | None = None) -> Prepared:
    """The board as it would be published now (expectations and evidence audit included), and the
    approval form's subject and body. PublicationBlocked when it could not be published at all."""
    publication = compose_publication(cycle_id, db_path, out_dir=out_dir)
    board = json.loads(publication.board_text)
    found = changes(
        cycle_id, board["rows"], last_published(cycle_id, out_dir), db_path, board.get("private_projects")
    )
    subject = f"Publish the board of cycle {cycle_id}?"
    preview, error = None, None
    try:
        site = preview_site(cycle_id, publication, out_dir)
        preview = preview_address(site / "index.html")
    except Exception as err:  # a preview is help for the person, never a reason to withhold the form
        error = f"{type(err).__name__}: {err}"
    body = body_of(found, publication.board_sha256, preview, error)
    return Prepared(cycle_id, publication.board_sha256, subject, body, preview)


PREVIEW_DIR_ENV = "ARGUSIC_PREVIEW_DIR"
PREVIEW_BASE_ENV = "ARGUSIC_PREVIEW_BASE_URL"
PUBLISHED_FILES = ("board.json", "attempts.json", "public_pool.json", "private_pool.json")


def previews_dir() -> Path:
    """Where approval previews are built: ARGUSIC_PREVIEW_DIR, else <runs>/previews (never under the
    publish folder: a preview is not published)."""
    return Path(os.environ.get(PREVIEW_DIR_ENV) or runs_dir() / "previews")


def preview_site(cycle_id: str, publication: Publication, out_dir: Path | None = None) -> Path:
    """The public site as publishing this board would build it, in a preview folder:
    ``<previews>/<cycle>/<sha256[:12]>/site``. The published cycles' files are copied beside this
    cycle's board.json and attempts.json as they would be written, and the site builder
    (argusic.publication.site.build_site) builds from that copy; nothing under the publish folder
    is touched. Returns the site folder."""
    from argusic.publication.site.build import build_site  # deferred: jinja, markdown

    published = Path(out_dir or publish_dir())
    root = previews_dir() / cycle_id / publication.board_sha256[:12]
    files = root / "published"
    if files.exists():
        shutil.rmtree(files)
    files.mkdir(parents=True)
    if published.is_dir():
        for folder in published.iterdir():
            if folder.is_symlink() or not folder.is_dir() or not (folder / "board.json").is_file():
                continue
            for name in PUBLISHED_FILES:
                if (folder / name).is_file() and not (folder / name).is_symlink():
                    (files / folder.name).mkdir(exist_ok=True)
                    shutil.copyfile(folder / name, files / folder.name / name)
    (files / cycle_id).mkdir(exist_ok=True)
    (files / cycle_id / "board.json").write_text(publication.board_text, encoding="utf-8")
    (files / cycle_id / "attempts.json").write_text(publication.attempts_text, encoding="utf-8")
    return build_site(files, front_cycle=cycle_id, out=root / "site", preview_of=cycle_id)


def preview_address(page: Path) -> str:
    """The preview page's address: under ARGUSIC_PREVIEW_BASE_URL (the address that serves the
    previews folder, e.g. the evidence server's) when set, else its path on this machine."""
    base = os.environ.get(PREVIEW_BASE_ENV, "").strip().rstrip("/")
    if base:
        return f"{base}/{page.relative_to(previews_dir()).as_posix()}"
    return str(page)


def record(
    cycle_id: str,
    board_sha256: str,
    decision: str,
    by: str,
    at: datetime,
    note: str,
    db_path: Path | None = None,
) -> bool:
    """Record an approval or a rejection of one board (decisions.publication_decisions)."""
    return decisions.record(
        "publication_decisions",
        {
            "cycle_id": cycle_id,
            "board_sha256": board_sha256,
            "decision": decision,
            "decided_by": by,
            "decided_at": at,
            "note": note,
        },
        db_path,
    )


def decision_in_force(cycle_id: str, db_path: Path | None = None) -> dict | None:
    """The cycle's latest publication decision (None when nobody decided yet)."""
    path = Path(db_path) if db_path else None
    with connect(path, read_only=True) as con:
        exists = con.execute(
            "SELECT count(*) FROM information_schema.tables "
            "WHERE table_schema = 'decisions' AND table_name = 'publication_decisions'"
        ).fetchone()[0]
        if not exists:
            return None
        cur = con.execute(
            "SELECT * FROM decisions.publication_decisions WHERE cycle_id = ? "
            "ORDER BY decided_at DESC, decided_by DESC LIMIT 1",
            [cycle_id],
        )
        row = cur.fetchone()
        return dict(zip([d[0] for d in cur.description], row, strict=True)) if row else None


def publish_approved(
    cycle_id: str, board_sha256: str | None = None, out_dir: Path | None = None, db_path: Path | None = None
) -> Path:
    """Publish the cycle's board if, and only if, the cycle's latest decision approves it.

    `board_sha256`: the board this caller expects (the one its form showed); another approved board
    is refused too. NotApproved when there is no approval in force; BoardChanged (from publish_board)
    when the board is not the approved one. Through the build worker when one answers."""
    decision = decision_in_force(cycle_id, db_path)
    if decision is None:
        raise NotApproved(
            f"board of cycle {cycle_id!r} not published: nobody approved it yet (the argusic_cycle "
            f"form approve_publication, or `argusic publish --cycle {cycle_id} --approve --by WHO "
            "--note WHY`)"
        )
    if decision["decision"] != "approved":
        raise NotApproved(
            f"board of cycle {cycle_id!r} not published: rejected by {decision['decided_by']} at "
            f"{decision['decided_at']:%Y-%m-%d %H:%M:%S} UTC ({decision['note']})"
        )
    if board_sha256 is not None and decision["board_sha256"] != board_sha256:
        raise NotApproved(
            f"board of cycle {cycle_id!r} not published: the approval in force is for board "
            f"{decision['board_sha256'][:12]}…, not {board_sha256[:12]}…"
        )
    return Path(
        publish_or_delegate(
            cycle_id, Path(out_dir or publish_dir()), db_path, approved_sha256=decision["board_sha256"]
        )
    )


def refresh_after_decision(db_path: Path | None = None) -> str:
    """Build again once a board is published or rejected, so the analyst copy says so at once
    (marts.board_publication, the copy's meta table; `argusic board` shows the latest *published*
    board). Only what reads the decisions is rebuilt (dbt_build's decision-only build); without it,
    a just-approved board read as pending until the next cycle's build. Called by the pipeline's
    publish steps (the cycle DAG's publish task, `argusic cycle run`, `argusic demo`, `argusic
    publish`), not by publish_approved itself: its callers with a warehouse of their own making (tests
    that write marts directly) would see them rebuilt from the raw layer."""
    return build_or_delegate(db_path)


HIGHLIGHT_VIDEOS = 4  # rendered after each publication: fixes and failures alternating (render.cards)


def share_published_cycle(cycle_id: str, videos: int = HIGHLIGHT_VIDEOS) -> str:
    """The step after publication (issue 30): the board's share images, a card per published attempt
    and up to ``videos`` highlight videos, drawn from the published files and the served recordings
    only (``argusic share-images``), then the site again so each run page lists its renderings.
    Returns the renderings folder."""
    # deferred: Pillow, pyte and ffmpeg's wrapper, and the site's jinja, only for this step
    from argusic.publication.render.cards import share_images
    from argusic.publication.site import build_site

    out = share_images(cycle_id, publish_dir(), videos=videos)
    build_site(publish_dir(), front_cycle=cycle_id)
    return str(out)


def publish_cycle_board(cycle_id: str, board_sha256: str | None = None) -> str:
    """The board of the cycle, re-validated under the writer lock, published only when the cycle's
    latest publication decision approves it exactly as it is (argusic.review.publication; with
    `board_sha256`, only that board); returns the published path."""
    release_semaphores_at_exit()
    published = str(publish_approved(cycle_id, board_sha256, publish_dir()))
    refresh_after_decision()
    return published
