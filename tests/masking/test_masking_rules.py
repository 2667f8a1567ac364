"""Every token format of the rule catalogue, planted in output in several shapes: none is served.

For each rule of the default catalogue (kingfisher's gitleaks-lineage and OSV-SCALIBR rules,
detect-secrets' regex plugins, ours), hypothesis generates a string from the rule's own regular
expression (`from_regex`, printable ASCII; Python's `re` parses every pattern once mid-pattern flags are
scoped and `\\z` is spelled `\\Z`). The string is planted in a short session in one shape (as printed,
folded at a random width, split by colour codes, or printed only in base64) and served as a log and as a
recording. The secret part of the example is read with Python's `re` (independently of the masker's
RE2 reading): every capture group of at least 8 characters that is not named as a user name, host or
scheme, or the whole match when the rule has no group. The oracle of test_masking reads the served
copy (plain, stripped, joined, de-escaped, base64- and hex-decoded).

Rules with value heuristics (assignments, quoted high-entropy strings) are left out here: a generated
`password=${X}` is a template, not a secret; their shapes are in test_masking's campaigns.
"""

from __future__ import annotations

import base64
import json
import re
import warnings
from collections import Counter

import pytest
from argusic.masking import DEFAULT_POLICY, mask_log, mask_recording, output_text
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_masking import ANSI_CODES, make_cast, oracle_leaks

_FLAG = re.compile(r"\(\?([aiLmsux]+)\)")


_POSIX = {"alnum": "a-zA-Z0-9", "alpha": "a-zA-Z", "digit": "0-9", "upper": "A-Z", "lower": "a-z",
          "xdigit": "0-9A-Fa-f", "space": r"\s", "word": r"\w", "punct": r"!-/:-@\[-`{-~"}  # fmt: skip


def python_form(pattern: str) -> str:
    r"""The pattern as Python's `re` reads it (as RE2 does): mid-pattern `(?i)` scoped to the rest of
    its group, POSIX classes spelled out, `\z` as `\Z`."""
    res = pattern.replace(r"\z", r"\Z")
    res = re.sub(r"\[:(\w+):\]", lambda m: _POSIX.get(m.group(1), m.group(0)), res)
    while True:
        m = next((m for m in _FLAG.finditer(res) if m.start() > 0), None)
        if m is None:
            with warnings.catch_warnings():  # a few patterns write `[[` (a FutureWarning in re)
                warnings.simplefilter("ignore", FutureWarning)
                re.compile(res)
            return res
        depth, j, in_class = 0, m.end(), False
        while j < len(res):
            c = res[j]
            if c == "\\":
                j += 2
                continue
            if in_class:
                in_class = c != "]"
            elif c == "[":
                in_class = True
            elif c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    break
                depth -= 1
            elif c == "|" and depth == 0:
                break
            j += 1
        res = f"{res[: m.start()]}(?{m.group(1)}:{res[m.end() : j]}){res[j:]}"


RULES = [r for r in DEFAULT_POLICY.rules() if not r.soft]
PRINTABLE = st.characters(min_codepoint=32, max_codepoint=126)
NOT_SECRET_GROUPS = re.compile(r"(?i)user|host|scheme|uri|endpoint|domain|^id$|_id$")


def secret_parts(rule, example: str) -> list[str]:
    """The parts of a generated example that must not be served (read with Python's re)."""
    m = re.compile(python_form(rule.pattern), re.MULTILINE).search(example)
    if m is None:
        return []
    names = {i: n for n, i in m.re.groupindex.items()}
    parts = [
        m.group(g)
        for g in range(1, (m.re.groups or 0) + 1)
        if m.group(g) is not None and not NOT_SECRET_GROUPS.search(names.get(g, ""))
    ]
    if not m.re.groups:
        parts = [m.group(0)]
    return sorted({p.strip() for p in parts if len(p.strip()) >= 8})


SHAPES = ["plain", "folded", "colour", "base64"]


@st.composite
def planted(draw, example: str, shape: str) -> str:
    line = f"output {example} done"
    if shape == "plain":
        return line
    if shape == "folded":
        width = draw(st.integers(4, max(4, len(line))))
        return "\n".join(line[i : i + width] for i in range(0, len(line), width))
    if shape == "colour":
        cuts = sorted(draw(st.lists(st.integers(1, len(line) - 1), min_size=1, max_size=6)))
        pieces, last = [], 0
        for c in cuts:
            pieces += [line[last:c], draw(st.sampled_from(ANSI_CODES))]
            last = c
        return "".join(pieces) + line[last:]
    text = base64.b64encode(line.encode() + b"\n").decode()
    return "$ echo $LINE | base64\n" + "\n".join(text[i : i + 76] for i in range(0, len(text), 76))


def _sweep(shapes: list[str], examples: int, kinds: tuple[str, ...]) -> dict:
    counts: dict[str, Counter] = {shape: Counter() for shape in shapes}
    leaks: dict[str, list[str]] = {shape: [] for shape in shapes}
    for rule in RULES:
        _sweep_rule(rule, shapes, examples, kinds, counts, leaks)
    return {"counts": {k: dict(v) for k, v in counts.items()}, "leaks": leaks}


def _sweep_rule(rule, shapes: list[str], examples: int, kinds: tuple[str, ...], counts, leaks) -> None:
    @settings(
        max_examples=examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        example=st.from_regex(python_form(rule.pattern), fullmatch=True, alphabet=PRINTABLE), data=st.data()
    )
    def run(example: str, data) -> None:
        secrets = secret_parts(rule, f"output {example} done")  # read in the line it is planted in
        if not secrets:
            counts[shapes[0]]["examples_without_secret_part"] += 1
            return
        for shape in shapes:
            text = data.draw(planted(example, shape))
            session = f"$ make\nbuilding\n{text}\nok\n"
            c = counts[shape]
            c["planted"] += len(secrets)
            c[f"planted_{rule.source}"] += len(secrets)
            for kind in kinds:
                if kind == "log":
                    result = mask_log(session.encode(), [])
                else:
                    result = mask_recording(make_cast([session[:20], session[20:]]), [])
                if result.withheld:
                    c[f"{kind}_withheld"] += 1
                    continue
                served = result.data.decode() if kind == "log" else output_text(result.data)
                for secret in secrets:
                    if oracle_leaks(served, secret):
                        c[f"{kind}_leaked"] += 1
                        leaks[shape].append(f"{rule.id}: {text!r}")

    run()


def _report(tmp_path_factory, name: str, report: dict) -> None:
    path = tmp_path_factory.getbasetemp() / f"{name}.json"
    path.write_text(json.dumps(report, indent=2, sort_keys=True))
    for shape, counts in report["counts"].items():
        print(f"\n{name} {shape}: {json.dumps(counts, sort_keys=True)}")
        if report["leaks"][shape]:
            print(f"  leaked: {sorted(set(report['leaks'][shape]))}")


def test_python_reads_every_rule() -> None:
    """The sweep below covers every rule: each pattern parses in Python's re after python_form."""
    assert len(RULES) > 480
    for rule in RULES:
        re.compile(python_form(rule.pattern))


def test_every_rule_format_as_printed(tmp_path_factory) -> None:
    report = _sweep(["plain"], 1, ("log",))
    _report(tmp_path_factory, "masking_rules_plain", report)
    counts = report["counts"]["plain"]
    assert counts["planted"] >= 450
    assert counts.get("log_leaked", 0) == 0 and counts.get("log_withheld", 0) == 0, report["leaks"]


@pytest.mark.slow
def test_every_rule_format_in_every_shape(tmp_path_factory) -> None:
    report = _sweep(SHAPES, 2, ("log", "recording"))
    _report(tmp_path_factory, "masking_rules_shapes", report)
    for shape in SHAPES:
        counts = report["counts"][shape]
        assert counts["planted"] >= 900
        for kind in ("log", "recording"):
            assert counts.get(f"{kind}_leaked", 0) == 0, (shape, kind, sorted(set(report["leaks"][shape])))
            assert counts.get(f"{kind}_withheld", 0) == 0, (shape, kind)
