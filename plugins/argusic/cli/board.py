"""`argusic board` and `argusic attempts`: a cycle's board and its attempts, read from the analyst copy
(never the pipeline's own file: never waits); the same tables close `cycle run` and `demo`.

`argusic board` shows the latest *published* board unless asked otherwise (`--cycle ID`, or
`--any-state` for the latest board whatever its state), and its header says the board's publication
state as the copy has it (marts.board_publication: published, rejected, pending). The state is the
copy's: a decision recorded after the copy's build reaches it with the next build."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from argusic.cli.common import console, fail, warehouse_errors
from argusic.cycle.pools import latest_cycle_of
from argusic.warehouse.analyst import (
    BOARD_STATES,
    META_TABLE,
    AnalystCopyMissing,
    CycleState,
    analyst_db_path,
    connect_analyst,
)


def _analyst():
    """A read-only connection to the analyst copy (never the pipeline's own file: never waits)."""
    try:
        return connect_analyst()
    except AnalystCopyMissing as err:
        fail(str(err))


def _copy_name() -> str:
    return f"the analyst copy {analyst_db_path()}"


def _cycles(con) -> list[tuple[str, object, CycleState | None]]:
    """(cycle_id, end of its latest attempt, its board's state or None when the copy has no
    marts.board_publication) of every cycle with a board in the copy."""
    try:
        rows = con.execute(
            "SELECT b.cycle_id, max(a.ended_at) FROM (SELECT DISTINCT cycle_id FROM marts.board) b "
            "LEFT JOIN marts.attempt_scores a USING (cycle_id) GROUP BY b.cycle_id"
        ).fetchall()
    except Exception:  # no marts yet (nothing built)
        return []
    states = _states(con)
    return [(cycle, ended, states.get(cycle)) for cycle, ended in rows]


def _states(con) -> dict[str, CycleState]:
    """Each cycle's board state in the copy (marts.board_publication); empty for a copy built before it."""
    schema, table = BOARD_STATES
    try:
        rows = con.execute(
            "SELECT cycle_id, publication_state, ever_published, decided_by, decided_at, decision_note, "
            f"is_demo_cycle, NULL FROM {schema}.{table}"
        ).fetchall()
    except Exception:  # a copy built before marts.board_publication
        return {}
    return {row[0]: CycleState(*row) for row in rows}


def _built_at(con) -> str:
    """ " at <when>" the copy's build ran (its meta table), or "" for a copy without one."""
    try:
        (when,) = con.execute(f"SELECT built_at FROM {META_TABLE}").fetchone()
    except Exception:  # a copy from before the meta table
        return ""
    return f" at {when:%Y-%m-%d %H:%M:%S} UTC"


def latest_cycle(any_state: bool = True) -> str:
    """The latest cycle in the analyst copy: by the cycle's month, then the end of its latest attempt
    (never by sorting names: `2026-12-demo` is not later than `2027-01`). ``any_state=False``: the
    latest whose board is published (a copy without board states: the latest, with a note)."""
    with _analyst() as con:
        rows = _cycles(con)
    if not rows:
        fail(f"no cycle has a board in {_copy_name()} yet: run `argusic cycle run` (or `argusic demo`)")
    latest = latest_cycle_of([(cycle, ended) for cycle, ended, _ in rows])
    if any_state:
        return latest
    if all(state is None for _, _, state in rows):
        console.print(
            f"  {_copy_name()} has no board states (built before marts.board_publication): showing the "
            "latest board whatever its state",
            markup=False,
        )
        return latest
    published = [
        (cycle, ended) for cycle, ended, state in rows if state and state.publication_state == "published"
    ]
    if not published:
        state = next(s for c, _, s in rows if c == latest)
        fail(
            f"no published board in {_copy_name()}: the latest is {state.sentence if state else latest}; "
            f"`argusic board --cycle {latest}` (or --any-state) shows it"
        )
    return latest_cycle_of(published)


def print_board(cycle_id: str) -> None:
    """The board of ``cycle_id`` as the analyst copy has it, its publication state in the header."""
    with _analyst() as con:
        state = _states(con).get(cycle_id)
        built = _built_at(con)
        rows = con.execute(
            """
            SELECT rank, agent_id, board_score, pass_rate, valid_attempts, sets_counted, sets_unstable,
                   sets_under_review, sets_incomplete, sets_total, harness_edition, sponsor, sponsorship,
                   is_demo_cycle
            FROM marts.board WHERE cycle_id = ? ORDER BY rank NULLS LAST, agent_id
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        fail(f"no board for cycle {cycle_id!r} in {_copy_name()}")
    demo = any(r[-1] for r in rows)
    shown = state.publication_state.upper() if state and state.publication_state else "state unknown"
    title = f"Argusic board — cycle {cycle_id} — {shown}" + (
        " (scaled budgets: not a real cycle)" if demo else ""
    )
    table = Table(title=title)
    for column in ("rank", "agent", "score", "pass rate", "attempts", "sets", "unstable", "in review"):
        table.add_column(column, justify="left" if column == "agent" else "right", no_wrap=True)
    edition = rows[0][10]  # the cycle's, the same on every row
    notes = [
        "publication: "
        + (
            state.sentence.split(": ", 1)[1]
            if state
            else "unknown (this copy has no marts.board_publication)"
        )
        + f" (as of this analyst copy's build{built}; a decision recorded later shows after the next build)",
        f"harness edition of this cycle: {edition or 'not recorded (records before environments)'}",
    ]
    for row in rows:
        rank, agent, score, pass_rate, attempts, counted, unstable, review, incomplete, total = row[:10]
        sponsor, sponsorship = row[11:13]
        if sponsor:  # disclosed next to the result (methodology section 13)
            notes.append(f"{agent}: sponsored by {sponsor}" + (f" ({sponsorship})" if sponsorship else ""))
        table.add_row(
            "—" if rank is None else str(rank),
            agent,
            "no score" if score is None else f"{score:.2f}",
            f"{pass_rate:.0%}" if pass_rate is not None else "—",
            str(attempts),
            str(counted),
            str(unstable),
            str(review),
        )
        if score is None:
            notes.append(
                f"{agent}: no score because none of its {total} set(s) counts: {review} under review "
                f"(a project that failed for every agent waits for a person's review), {unstable} unstable "
                f"(spread over 30%), {incomplete} incomplete (fewer than three valid runs)"
            )
    console.print(table)
    for note in notes:
        console.print(f"  {note}", markup=False)  # registry text, shown as written


def print_attempts(cycle_id: str) -> None:
    """One row per attempt (reruns included): outcome, points, score, and why an attempt is invalid."""
    with _analyst() as con:
        rows = con.execute(
            """
            SELECT agent_id, project_id, attempt_no, attempt_id, outcome, install_points, run_points,
                   recovery_points, depth_points, score, end_reason, invalid_reason,
                   round(epoch(ended_at) - epoch(started_at), 1)
            FROM marts.attempt_scores WHERE cycle_id = ?
            ORDER BY agent_id, project_id, attempt_no, attempt_id
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        fail(f"no attempts for cycle {cycle_id!r} in {_copy_name()}")
    table = Table(title=f"attempts — cycle {cycle_id} (points: install + run + recovery + depth)")
    for column in ("agent", "project", "#", "outcome", "points", "score", "ended", "seconds", "note"):
        table.add_column(column, no_wrap=column != "note", justify="right" if column == "seconds" else "left")
    for agent, project, no, attempt_id, outcome, ins, run, rec, depth, score, end, why, secs in rows:
        rerun = attempt_id.rsplit(".", 1)[-1] if attempt_id.rsplit(".", 1)[-1].startswith("r") else ""
        points = "—" if ins is None else f"{ins}+{run}+{rec:g}+{depth}"
        table.add_row(
            agent,
            project,
            f"{no}{' ' + rerun if rerun else ''}",
            outcome,
            points,
            "—" if score is None else f"{score:.1f}",
            end,
            str(secs),
            why or "",
        )
    console.print(table)


def board(
    cycle: Annotated[
        str | None, typer.Option(help="Cycle id, whatever its board's state (default: the latest published)")
    ] = None,
    any_state: Annotated[
        bool,
        typer.Option(
            "--any-state", help="The latest board whatever its state: published, rejected or pending"
        ),
    ] = False,
) -> None:
    """Print the latest published board from the analyst copy, or the one asked for (never waits for
    the pipeline); the header says whether it is published, rejected or pending."""
    with warehouse_errors():
        print_board(cycle or latest_cycle(any_state=any_state))


def attempts(
    cycle: Annotated[str | None, typer.Option(help="Cycle id (default: the latest cycle)")] = None,
) -> None:
    """Print every attempt of a cycle: outcome, points, score, and the reason of an invalid one (from the
    analyst copy)."""
    with warehouse_errors():
        print_attempts(cycle or latest_cycle())


def print_repair_rates(cycle_id: str) -> None:
    """The repair track's rates of a cycle (marts.repair_rates), per agent and track, with their
    95% half-widths; nothing when the cycle had no repair attempts."""
    with _analyst() as con:
        rows = con.execute(
            """
            SELECT agent_label, track, n, resolved, rate, half_width_95, resolved_after_rerun, items, prs
            FROM marts.repair_rates WHERE source_kind = 'attempt' AND source_set = ?
            ORDER BY track, agent_label
            """,
            [cycle_id],
        ).fetchall()
    if not rows:
        return
    table = Table(title=f"Repair track — cycle {cycle_id} (resolution rate ± 95% half-width)")
    for column in ("agent", "track", "resolved / n", "rate", "after re-run", "items", "PRs"):
        table.add_column(column, justify="left" if column in ("agent", "track") else "right", no_wrap=True)
    for agent, track, n, resolved, rate, half, after_rerun, items, prs in rows:
        shown = "—" if rate is None else f"{rate:.0%} ± {half:.0%}"
        table.add_row(agent, track, f"{resolved} / {n}", shown, str(after_rerun), str(items), str(prs))
    console.print(table)
    console.print(
        "  basic and spec tracks are never pooled; items split from one PR are not independent samples "
        "(PRs beside items); resolved_after_rerun is counted apart",
        markup=False,
    )
