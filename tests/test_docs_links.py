"""Relative links of the README and docs/ lead somewhere: the file exists and, for a `#fragment` into a
Markdown file, that file has a heading with that anchor (GitHub's rule: lower case, punctuation other
than `-` and `_` dropped, spaces to `-`). Links inside code blocks and to other sites are not read."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [
    ROOT / "README.md",
    ROOT / "METHODOLOGY.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    ROOT / "dbt_project" / "README.md",
    ROOT / "plugins" / "argusic" / "harness" / "README.md",
]
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*$", re.M)


def _anchor(heading: str) -> str:
    text = heading.replace("`", "").strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(h) for h in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8")))}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    text = FENCE.sub("", doc.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
            continue
        path, _, fragment = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in _anchors(dest):
            broken.append(f"{target}: {dest.relative_to(ROOT)} has no heading with that anchor")
    assert not broken, f"{doc.relative_to(ROOT)}:\n" + "\n".join(broken)


def test_the_anchor_rule():
    assert _anchor("8b. Project verdicts: does it run?") == "8b-project-verdicts-does-it-run"
    assert _anchor("`argusic_verdicts` — project verdicts") == "argusic_verdicts--project-verdicts"
    assert _anchor("More than 1,024 attempts in a cycle") == "more-than-1024-attempts-in-a-cycle"


def test_the_readme_is_a_front_door():
    """The README says what Argusic is and gives the two commands; the reference is in docs/."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 250
    assert "make demo" in readme and "make test" in readme
