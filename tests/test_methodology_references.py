"""References to the methodology name METHODOLOGY.md, the document the repository has, by its own
section numbers.

Two rules, read from every text file git tracks:
- no file names the methodology digest the pipeline was first written from (it is not in the
  repository, and its section numbers are not METHODOLOGY.md's);
- every `METHODOLOGY.md §N` names a numbered section of METHODOLOGY.md, and a quoted title right after
  it (`METHODOLOGY.md §7 "Project verdicts"`) is that section's title. Further `§N` on the same line
  (`METHODOLOGY.md §5 and §7`) are checked the same way, and so is `METHODOLOGY.md "<title>"`.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
METHODOLOGY = ROOT / "METHODOLOGY.md"
GONE = "RULES" + ".md"  # spelled in two parts so that this file does not name it
SELF = Path(__file__).resolve().relative_to(ROOT)  # its examples of wrong references are on purpose

HEADING = re.compile(r"^## (?:(\d+)\. )?(.+?)\s*$")
SECTION = re.compile(r'§(\d+)(?: "([^"]+)")?')
TITLE_ONLY = re.compile(r'METHODOLOGY\.md,? "([^"]+)"')


def _sections() -> tuple[dict[int, str], set[str]]:
    numbered: dict[int, str] = {}
    titles: set[str] = set()
    for line in METHODOLOGY.read_text(encoding="utf-8").splitlines():
        match = HEADING.match(line)
        if match:
            titles.add(match.group(2))
            if match.group(1):
                numbered[int(match.group(1))] = match.group(2)
    return numbered, titles


def _tracked_text_files() -> list[Path]:
    try:
        listed = subprocess.run(
            ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files cannot be listed")
    files = []
    for name in listed.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file() or path.is_symlink():
            continue
        head = path.read_bytes()[:8192]
        if b"\0" in head:  # binary
            continue
        files.append(path)
    return files


def _lines(files: list[Path]):
    """(path, line number, line) of every line that names METHODOLOGY.md or the digest."""
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if "METHODOLOGY.md" not in text and GONE not in text:
            continue
        relative = path.relative_to(ROOT)
        for number, line in enumerate(text.splitlines(), 1):
            if "METHODOLOGY.md" in line or GONE in line:
                yield relative, number, line


@pytest.fixture(scope="module")
def lines():
    return list(_lines(_tracked_text_files()))


def test_the_methodology_has_numbered_sections():
    numbered, _ = _sections()
    assert numbered, "METHODOLOGY.md has no '## N. Title' headings: the check below would pass vacuously"
    assert sorted(numbered) == list(range(1, max(numbered) + 1)), numbered


def test_no_file_names_the_digest_the_repository_does_not_have(lines):
    found = [f"{path}:{number}: {line.strip()}" for path, number, line in lines if GONE in line]
    assert not found, f"name METHODOLOGY.md and its section instead of {GONE}:\n" + "\n".join(found)


def test_every_methodology_section_reference_exists(lines):
    numbered, titles = _sections()
    wrong, seen = [], 0
    for path, number, line in lines:
        if path in (Path("METHODOLOGY.md"), SELF) or "METHODOLOGY.md" not in line:
            continue
        start = line.index("METHODOLOGY.md")
        for match in SECTION.finditer(line, start):
            seen += 1
            section, title = int(match.group(1)), match.group(2)
            if section not in numbered:
                wrong.append(f"{path}:{number}: §{section} is not a section of METHODOLOGY.md")
            elif title is not None and title != numbered[section]:
                wrong.append(f'{path}:{number}: §{section} is "{numbered[section]}", not "{title}"')
        for match in TITLE_ONLY.finditer(line):
            seen += 1
            if match.group(1) not in titles:
                wrong.append(f'{path}:{number}: METHODOLOGY.md has no section "{match.group(1)}"')
    assert seen, "no METHODOLOGY.md §N reference found at all: the pattern no longer matches"
    assert not wrong, "\n".join(wrong)


def test_the_check_catches_a_wrong_number_and_a_wrong_title():
    numbered, _ = _sections()
    line = 'see METHODOLOGY.md §7 "Scoring" and §99'
    found = [(int(m.group(1)), m.group(2)) for m in SECTION.finditer(line, line.index("METHODOLOGY.md"))]
    assert found == [(7, "Scoring"), (99, None)]
    assert numbered[7] != "Scoring" and 99 not in numbered
