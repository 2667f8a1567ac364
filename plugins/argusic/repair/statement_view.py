"""The statement writer's view (seed 001): what the tests say when they fail before the fix.

A person writing an item's problem statement (or checking an agent's draft) compares it with the
failure messages of the base with the test patch applied: does the statement ask for everything the
tests check, and for nothing they do not? This runs that state in the grader image (the same container,
limits and JUnit XML as ``argusic.repair.testrun``) and keeps, for every test that does not pass, its
outcome, whether it is one of the item's fail-to-pass tests, and its message: pytest's ``E`` lines
when there are some (the assertion and its values), else the last lines; trimmed to
``MAX_LINES``/``MAX_CHARS`` per test and ``MAX_TESTS`` tests, the container's paths written as
``<repo>``, then masked for credentials (``argusic.masking``; a message that cannot be shown clean is
withheld and says so). The gold patch is never applied: nothing here shows the fix.

The view is Markdown, written beside the item as ``<item_id>.statement-view.md`` (``argusic items
statement-view ITEM``).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from junitparser import Error, Failure, JUnitXml

from argusic.masking import MaskingError, mask_text
from argusic.repair import testrun
from argusic.repair.items import Item, ItemError, items_dir, repository_of, write_record

MAX_TESTS = 60
MAX_LINES = 24
MAX_CHARS = 2000


@dataclass
class FailedTest:
    test_id: str
    outcome: str  # failed or error (a collection error is an error of the file's pseudo-test)
    fail_to_pass: bool
    message: str


@dataclass
class StatementView:
    item_id: str
    revision: str
    track: str
    tests: list[FailedTest] = field(default_factory=list)
    left_out: int = 0  # tests over MAX_TESTS
    problem: str | None = None  # the state could not be run
    f2p_passing: list[str] = field(default_factory=list)  # f2p tests that passed here (should be none)

    def to_markdown(self) -> str:
        lines = [
            f"# Failure messages of {self.item_id}: base + test patch (before the fix)",
            "",
            f"Item revision {self.revision[:12]}, {self.track} track. The tests that do not pass on the "
            "base with the item's test patch applied, in the grader image; messages trimmed, container "
            "paths as `<repo>`, credentials masked. Compare with the statement: it should ask for what "
            "these check, and no more.",
            "",
        ]
        if self.problem:
            return "\n".join([*lines, f"**Not run:** {self.problem}", ""])
        f2p = sum(t.fail_to_pass for t in self.tests)
        lines.append(
            f"{len(self.tests) + self.left_out} test(s) do not pass; {f2p} of them are fail-to-pass tests "
            "of the item (the others fail before and after the fix, or are set aside)."
        )
        if self.f2p_passing:
            lines.append(f"Fail-to-pass tests that passed here: {', '.join(self.f2p_passing)}.")
        lines.append("")
        for test in self.tests:
            mark = "fail-to-pass" if test.fail_to_pass else "not graded"
            lines += [
                f"## `{test.test_id}`",
                "",
                f"{test.outcome}, {mark}",
                "",
                "```text",
                test.message,
                "```",
                "",
            ]
        if self.left_out:
            lines.append(f"({self.left_out} more not shown.)")
        return "\n".join(lines).rstrip() + "\n"


def trim(text: str) -> str:
    """pytest's ``E`` lines (the assertion and its values) when present, else the last lines; at most
    MAX_LINES lines and MAX_CHARS characters; container paths as ``<repo>``."""
    text = text.replace(testrun.REPO_IN_CONTAINER + "/", "").replace(testrun.REPO_IN_CONTAINER, "<repo>")
    rows = [r.rstrip() for r in text.strip().splitlines()]
    e_rows = [r for r in rows if r.startswith("E ") or r == "E"]
    chosen = e_rows or rows
    if len(chosen) > MAX_LINES:
        chosen = (chosen[:MAX_LINES] if e_rows else chosen[-MAX_LINES:]) + ["… (trimmed)"]
    out = "\n".join(chosen)
    return out if len(out) <= MAX_CHARS else out[:MAX_CHARS] + "… (trimmed)"


def mask(text: str) -> str:
    try:
        return mask_text(text, [])[0]
    except MaskingError as err:
        return f"(withheld: the message could not be shown free of credentials: {err})"


def failure_messages(data: bytes) -> dict[str, tuple[str, str]]:
    """{test id: (outcome, message text)} of the tests of a JUnit XML report that did not pass (read
    like ``testrun.parse_junit``: no DTD, entities or network)."""
    # deferred: lxml is no declared requirement (it comes with redshift_connector), as in testrun
    from lxml import etree

    if b"<!doctype" in data[:4096].lower() or b"<!entity" in data.lower():
        raise testrun.ReportError("report has a DTD or entity declaration: refused")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as err:
        raise testrun.ReportError(f"report is not well-formed XML: {err}") from None
    found: dict[str, tuple[str, str]] = {}
    for suite in JUnitXml.fromroot(root):
        for case in suite:
            test_id = f"{case.classname or ''}::{case.name or ''}"
            for result in case.result:
                if isinstance(result, Error | Failure):
                    outcome = "error" if isinstance(result, Error) else "failed"
                    body = "\n".join(x for x in (result.text or "", result.message or "") if x)
                    found.setdefault(test_id, (outcome, body))
    return found


def build_view(item: Item, *, image: str | None = None, git_dir: Path | None = None) -> StatementView:
    """Run base + test patch in the grader image and gather the view (never raises for the item's
    tests; what kept it from running is in ``problem``)."""
    view = StatementView(item.item_id, item.revision, item.track)
    image = image or testrun.grader_image()
    work = testrun.real_temp_dir("argusic-statement-view-")
    try:
        try:
            git_dir = git_dir or repository_of(item)
            testrun.materialise(
                git_dir, item.base, [("test_patch", item.test_patch.encode(errors="surrogateescape"), ())],
                work / "repo",
            )  # fmt: skip
            testrun.image_id(image)
        except (testrun.StateError, ItemError) as err:
            view.problem = str(err)[:500]
            return view
        out = work / "out"
        out.mkdir()
        limits = testrun.Limits()
        try:
            with testrun.GraderContainer(work / "repo", out, image, limits) as box:
                if item.setup_command:
                    code, output = box.exec(list(item.setup_command), limits.setup_seconds)
                    if code != 0:
                        view.problem = f"setup command exited {code}: {trim(output)}"
                        return view
                code, output = box.exec(
                    testrun.junit_argv(item.test_command, f"{testrun.OUT_IN_CONTAINER}/report.xml"),
                    limits.test_seconds,
                )
                data = testrun.read_report(out / "report.xml")
        except (testrun.docker_errors(), OSError) as err:
            view.problem = f"container: {str(err)[:300]}"
            return view
        if data is None:
            view.problem = f"the test command exited {code} and wrote no JUnit XML: {trim(output)}"
            return view
        try:
            failures = failure_messages(data)
        except testrun.ReportError as err:
            view.problem = str(err)
            return view
    finally:
        shutil.rmtree(work, ignore_errors=True)
    f2p = set(item.fail_to_pass)
    ordered = sorted(failures.items(), key=lambda kv: (kv[0] not in f2p, kv[0]))
    for test_id, (outcome, body) in ordered[:MAX_TESTS]:
        view.tests.append(FailedTest(test_id, outcome, test_id in f2p, mask(trim(body))))
    view.left_out = max(0, len(ordered) - MAX_TESTS)
    view.f2p_passing = sorted(f2p - set(failures) - _collection_covered(f2p, failures))
    return view


def _collection_covered(f2p: set[str], failures: dict[str, tuple[str, str]]) -> set[str]:
    """f2p tests absent from the report because their file failed to import (pytest reports one error
    for the file): not "passing"."""
    files = {
        re.sub(r"\.py$", "", k.split("::", 1)[1]).replace("/", ".") for k in failures if k.startswith("::")
    }
    return {t for t in f2p if any(t.split("::", 1)[0].startswith(f) for f in files if f)}


def write_view(view: StatementView, item: Item, out_dir: Path | None = None) -> Path:
    """``<out_dir>/<project_id>/<item_id>.statement-view.md`` (out_dir: the items folder)."""
    folder = Path(out_dir or items_dir()) / item.project_id
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{item.item_id}.statement-view.md"
    write_record(path, view.to_markdown())
    return path
