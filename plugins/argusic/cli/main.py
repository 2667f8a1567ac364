"""The `argusic` command line (typer; the console script `argusic.cli.entry:main` runs `app`, after
sending `argusic build` to a build worker when one answers, and `python -m argusic.cli` runs the same):
this module only registers the commands; each lives in the module of its job in this package, and what
they share is in `argusic.cli.common`.

- `warehouse`: ingest, build, build-worker, sql, docs, audit
- `board`: board, attempts (from the analyst copy)
- `pool`: pool, catalogue check
- `cycle`: cycle run, cycle environment
- `demo`: demo
- `attempt`: play (an attempt's recording in the terminal), report (its HTML page), reproduce
- `render`: render (an attempt's served recording as mp4, gif or png), share-images (a cycle's cards)
- `site`: site build, site serve
- `verdicts`, `review` (review, dispute, publish), `repair` (items, grade), `judging` (tasks, hints),
  `judge`, `judging_review` (judging), `paired` (paired review: choose pairs and judge them)
- `model_double`: model-double serve (a scripted model service for the agent CLIs)
- `double_attempt`: model-double attempt (a real agent CLI's whole attempt against that service)

The command modules import at the top. The few imports left inside a command (each marked
`# deferred:`) wait for what `argusic --help` must not pay for: pandas and pyarrow, which the build
and publication modules pull in through the expectations engine; requests, which running attempts
pulls in through the key broker; jinja2, which only the site's two commands need. DuckDB is imported
at the top: nearly every command opens the warehouse.
"""

from __future__ import annotations

import sys

import typer

from argusic.cli import (
    attempt,
    board,
    cycle,
    demo,
    double_attempt,
    emergency,
    judge,
    judging,
    judging_review,
    model_double,
    paired,
    pool,
    render,
    repair,
    review,
    site,
    verdicts,
    warehouse,
)

app = typer.Typer(help="Argusic pipeline: a public referee for AI coding agents.", no_args_is_help=True)

# Commands, in the order `argusic --help` lists them.
app.command("ingest")(warehouse.ingest)
app.command("build")(warehouse.build)
app.command("build-worker")(warehouse.build_worker)
app.command("board")(board.board)
app.command("attempts")(board.attempts)
app.command("sql")(warehouse.sql)
app.command("docs")(warehouse.docs)
app.command("pool")(pool.pool)
app.command("demo")(demo.demo)
app.command("audit")(warehouse.audit)
app.command("play")(attempt.play)
app.command("report")(attempt.report)
app.command("reproduce")(attempt.reproduce)
app.command("render")(render.render)
app.command("share-images")(render.share_images)
# People's decisions: publication approval (with `review` and `dispute` below).
app.command("publish")(review.publish)
# Repair items' grader (issue 13; `items` below).
app.command("grade")(repair.grade)
# Model judges, Layer 2 (issue 14).
app.command("judge")(judge.judge)
# The emergency stop (issue 26): every running attempt ended and recorded, keys deleted.
app.command("stop")(emergency.stop)
app.command("resume")(emergency.resume_attempts)
app.command("stop-status")(emergency.stop_status)

# Command groups.
app.add_typer(pool.catalogue_app, name="catalogue")
app.add_typer(verdicts.verdicts_app, name="verdicts")
app.add_typer(cycle.cycle_app, name="cycle")
app.add_typer(site.site_app, name="site")
app.add_typer(review.review_app, name="review")
app.add_typer(review.dispute_app, name="dispute")
app.add_typer(repair.items_app, name="items")
# Task definitions and Layer 1 hints (issue 14).
app.add_typer(judging.tasks_app, name="tasks")
app.add_typer(judging.hints_app, name="hints")
# The person's review of judged attempts (issue 14, Layer 3).
app.add_typer(judging_review.judging_app, name="judging")
# The paired patch review (issue 31, seed 001): choose pairs of repair patches and judge them.
app.add_typer(paired.paired_app, name="paired")
# The scripted model service the agent CLIs are tested against (issue 28), and a whole attempt of a
# real agent CLI against it.
model_double.model_double_app.command("attempt")(double_attempt.attempt)
app.add_typer(model_double.model_double_app, name="model-double")


def main() -> None:  # pragma: no cover - console entry
    sys.exit(app())


if __name__ == "__main__":  # pragma: no cover
    main()
