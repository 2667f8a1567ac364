"""`argusic paired review`: the paired patch review (issue #31, seed 001) without typing ids — choose
the pairs to judge from the graded repair attempts under the runs folder and run the judges on them
(``argusic.judging.paired_select``; docs/judging.md "Paired patch review").

Per item, two patches of different runs (two models first), P and Q drawn and recorded; the same
``--seed`` chooses the same pairs; pairs already judged (``<runs>/paired/<pair_id>/review.json``) are
not judged again, so a stopped run is resumed by running it again. Then `argusic_paired_review` (or
`argusic ingest`-like loading through that DAG) loads the reviews and asks a person about each bug.

Judges: ``--script-dir`` (each judge's real CLI against the model double answering a judgement
script, ``<dir>/<pair_id>/<judge>.json`` or ``<dir>/<judge>.json``), ``--replay-dir`` (recorded
sessions, ``<judge>.jsonl``: no model runs), or neither: the real CLIs on per-run keys through the
routing gateway (refused when none is configured).

Exit codes: 0 every chosen pair judged (or nothing left to judge); 1 some pair could not be judged
(each named); 2 refused input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from argusic.cli.common import console, fail
from argusic.judging.judges import JUDGES
from argusic.judging.paired import PairError
from argusic.judging.paired_select import (
    DEFAULT_JUDGES,
    DEFAULT_VERDICTS,
    review_pairs,
    run_real,
    run_recorded,
    run_scripted,
)

paired_app = typer.Typer(
    help="Paired patch review (seed 001): two patches of an item as P and Q, judged side by side.",
    no_args_is_help=True,
)
DEFAULT_SEED = "paired-review"


def _folder(option: str, given: Path | None) -> None:
    if given is not None and (given.is_symlink() or not given.is_dir()):
        fail(f"{option} {given}: not a folder")


@paired_app.command("review")
def review(
    seed: Annotated[
        str, typer.Option(help="Selection seed (or run id): the same seed chooses the same pairs")
    ] = DEFAULT_SEED,
    per_item: Annotated[int, typer.Option(min=1, help="Pairs per item (those already judged count)")] = 1,
    judges: Annotated[str, typer.Option(help="Judge ids, comma-separated (at least two)")] = ",".join(
        DEFAULT_JUDGES
    ),
    verdicts: Annotated[
        str, typer.Option(help="Grade verdicts a patch must have to be paired, comma-separated")
    ] = ",".join(DEFAULT_VERDICTS),
    limit: Annotated[int | None, typer.Option(min=1, help="Judge at most this many pairs now")] = None,
    script_dir: Annotated[
        Path | None,
        typer.Option("--script-dir", help="Judgement scripts: the real CLIs against the model double"),
    ] = None,
    replay_dir: Annotated[
        Path | None, typer.Option("--replay-dir", help="Recorded judge sessions (no model runs)")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only list the pairs that would be judged")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="The summary as one JSON object")] = False,
) -> None:
    """Choose the pairs to judge (per item, two patches of different runs) and run the judges."""
    judge_ids = [j.strip() for j in judges.split(",") if j.strip()]
    unknown = [j for j in judge_ids if j not in JUDGES]
    if len(judge_ids) < 2 or unknown:
        fail(f"judges: at least two known judges (unknown {unknown}; known: {', '.join(JUDGES)})")
    if script_dir is not None and replay_dir is not None:
        fail("--script-dir and --replay-dir: one or the other")
    _folder("--script-dir", script_dir)
    _folder("--replay-dir", replay_dir)
    if script_dir is not None:
        runner = run_scripted(script_dir, judge_ids)
    elif replay_dir is not None:
        runner = run_recorded(replay_dir)
    else:
        runner = run_real()
    wanted = tuple(v.strip() for v in verdicts.split(",") if v.strip())
    report = None if as_json else (lambda line: console.print(line, markup=False))
    try:
        summary = review_pairs(
            runner,
            seed=seed,
            judge_ids=judge_ids,
            per_item=per_item,
            verdicts=wanted,
            limit=limit,
            dry_run=dry_run,
            report=report,
        )
    except PairError as err:
        fail(str(err))
    if as_json:
        console.print_json(json.dumps(summary))
    else:
        if dry_run:
            for pair_id in summary["chosen"]:
                console.print(f"would judge {pair_id}", markup=False)
        console.print(
            f"seed {summary['seed']!r}: {summary['candidates']} graded patches, "
            f"{len(summary['chosen'])} pairs chosen, {len(summary['judged'])} judged, "
            f"{len(summary['already_judged'])} already judged, {len(summary['failed'])} not judged; "
            f"reviews in {summary['pairs_dir']}",
            markup=False,
        )
    if summary["failed"]:
        raise typer.Exit(code=1)
