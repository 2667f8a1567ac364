"""The candidate catalogue (`argusic.catalogue/1`): what an operator writes, and how it is checked.

A catalogue is hostile input: every candidate and field is checked, and *every* problem of the file
is reported at once, each naming the candidate (its project_id, or its position) and the field, and
saying how to fix it. Licences are SPDX expressions; common spellings (`MIT License`, `Apache 2.0`,
`BSD 3-Clause`) are read as their SPDX id and reported as notices; anything else gets a suggestion.
Repository URLs are checked against their grammar here (argusic.sources.mirror.parse_source); whether they
can be fetched is the mirror's business, at pool time.

The pydantic model below is the single source of the rules; `schemas/catalogue-1.schema.json` is
generated from it (`python -m argusic.sources.catalogue --schema`) and a test keeps the two equal.
The format is documented in docs/catalogue.md.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from license_expression import AND, OR, LicenseSymbol, LicenseWithExceptionSymbol, get_spdx_licensing
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
    field_validator,
)

from argusic.core.settings import PACKAGE_DIR
from argusic.sources.mirror import parse_source

CATALOGUE_SCHEMA = "argusic.catalogue/1"
SCHEMA_FILE = PACKAGE_DIR / "schemas" / "catalogue-1.schema.json"

# Bounds: a catalogue is hostile input (sizes capped before anything is parsed).
MAX_CATALOGUE_BYTES = 32 * 1024 * 1024
MAX_CANDIDATES = 100_000
MAX_URL_CHARS = 2048

# Methodology section 6: a permissive licence. An expression is permissive when every AND part is and
# at least one OR branch is (`MIT OR Apache-2.0`, `Apache-2.0 WITH LLVM-exception`).
PERMISSIVE_LICENCES = frozenset(
    {"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "Zlib", "0BSD", "Unlicense", "MIT-0"}
)
SPDX_SPECIAL = ("NOASSERTION", "NONE")
_LICENSE_REF = re.compile(r"^(DocumentRef-[A-Za-z0-9.-]+:)?LicenseRef-[A-Za-z0-9.-]+$")

# Spellings seen in real catalogues and package metadata that the generic clean-up below does not
# reach. Keys are lower case with single spaces.
LICENCE_ALIASES = {
    "expat": "MIT",
    "mit/x11": "MIT",
    "x11": "X11",
    "asl 2.0": "Apache-2.0",
    "asl2": "Apache-2.0",
    "apache 2": "Apache-2.0",
    "apache2": "Apache-2.0",
    "apache-2": "Apache-2.0",
    "new bsd": "BSD-3-Clause",
    "modified bsd": "BSD-3-Clause",
    "revised bsd": "BSD-3-Clause",
    "bsd new": "BSD-3-Clause",
    "bsd-3": "BSD-3-Clause",
    "bsd3": "BSD-3-Clause",
    "3-clause bsd": "BSD-3-Clause",
    "bsd 3": "BSD-3-Clause",
    "simplified bsd": "BSD-2-Clause",
    "freebsd": "BSD-2-Clause",
    "bsd-2": "BSD-2-Clause",
    "bsd2": "BSD-2-Clause",
    "2-clause bsd": "BSD-2-Clause",
    "bsd 2": "BSD-2-Clause",
    "zero-clause bsd": "0BSD",
    "gplv2": "GPL-2.0-only",
    "gpl v2": "GPL-2.0-only",
    "gpl2": "GPL-2.0-only",
    "gpl-2": "GPL-2.0-only",
    "gplv2+": "GPL-2.0-or-later",
    "gplv3": "GPL-3.0-only",
    "gpl v3": "GPL-3.0-only",
    "gpl3": "GPL-3.0-only",
    "gpl-3": "GPL-3.0-only",
    "gplv3+": "GPL-3.0-or-later",
    "gnu gpl v2": "GPL-2.0-only",
    "gnu gpl v3": "GPL-3.0-only",
    "gnu gplv3": "GPL-3.0-only",
    "gnu gplv2": "GPL-2.0-only",
    "gnu general public 3.0": "GPL-3.0-only",
    "gnu general public 2.0": "GPL-2.0-only",
    "gnu general public v3.0": "GPL-3.0-only",
    "gnu general public v2.0": "GPL-2.0-only",
    "lgplv2.1": "LGPL-2.1-only",
    "lgpl v2.1": "LGPL-2.1-only",
    "lgplv3": "LGPL-3.0-only",
    "lgpl v3": "LGPL-3.0-only",
    "agplv3": "AGPL-3.0-only",
    "agpl v3": "AGPL-3.0-only",
    "mpl 2": "MPL-2.0",
    "mpl2": "MPL-2.0",
    "mozilla public 2.0": "MPL-2.0",
    "eclipse public 2.0": "EPL-2.0",
    "boost software 1.0": "BSL-1.0",
    "boost": "BSL-1.0",
    "wtfpl": "WTFPL",
    "cc0": "CC0-1.0",
    "zlib/libpng": "Zlib",
}

PROJECT_ID = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$"

ProjectId = Annotated[str, StringConstraints(pattern=PROJECT_ID)]
Commit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
Language = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9 +#._-]{0,39}$")]


class CatalogueError(ValueError):
    """A catalogue that cannot be used; `problems` lists every problem found, one line each."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


@cache
def _spdx():
    return get_spdx_licensing()


@cache
def _spdx_keys() -> dict[str, str]:
    """lower-case key → canonical SPDX key, for suggestions (ScanCode's own LicenseRef-scancode-*
    keys left out: nobody means them by a misspelling)."""
    keys = {k for k in _spdx().known_symbols if not k.startswith("LicenseRef-")}
    return {k.lower(): k for k in keys}


def _parse_spdx(text: str) -> str | None:
    """The canonical rendering of a valid SPDX expression, or None."""
    if text in SPDX_SPECIAL or _LICENSE_REF.match(text):
        return text
    try:
        return _spdx().parse(text, validate=True, strict=True).render()
    except Exception:  # license_expression raises several kinds; any of them means "not SPDX"
        return None


def _cleaned(text: str) -> str:
    """`The MIT License` → `mit`; `Apache License, Version 2.0` → `apache 2.0`; `BSD 3-Clause "New"`
    → `bsd 3-clause new`."""
    text = text.lower().strip()
    text = re.sub(r"[\"'()\[\],;]", " ", text)
    text = re.sub(r"\b(the|licen[cs]e[sd]?|version|ver\.?)\b", " ", text)
    text = re.sub(r"\bv(?=\d)", "", text)  # v2.0 → 2.0
    return re.sub(r"\s+", " ", text).strip()


def normalise_licence(raw: str) -> tuple[str, str | None]:
    """(SPDX expression, notice) for a licence as written; ValueError with a suggestion otherwise.

    An exact SPDX expression comes back canonical (case, deprecated ids) with no notice unless it
    changed; a known spelling comes back as its SPDX id with a notice saying how it was read."""
    text = raw.strip()
    if not text:
        raise ValueError("empty: write the project's SPDX licence id, e.g. MIT or Apache-2.0")
    if canonical := _parse_spdx(text):
        notice = None if canonical == text else f"licence {raw!r} read as SPDX {canonical!r}"
        return canonical, notice
    cleaned = _cleaned(text)
    tries = [LICENCE_ALIASES.get(cleaned), cleaned.replace(" ", "-"), cleaned.replace(" ", "")]
    base = re.sub(r"(\s+(new|revised|modified|simplified|or|and))+$", "", cleaned)
    tries += [LICENCE_ALIASES.get(base), base.replace(" ", "-")]
    for attempt in tries:
        if attempt and (canonical := _parse_spdx(attempt)):
            return canonical, f"licence {raw!r} read as SPDX {canonical!r}"
    keys = _spdx_keys()
    close = difflib.get_close_matches(cleaned.replace(" ", "-"), list(keys), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(keys[c]) for c in close)}?" if close else ""
    raise ValueError(
        f"{raw!r} is not an SPDX licence id or expression{hint} (ids: https://spdx.org/licenses/; "
        "NOASSERTION when unknown)"
    )


def licence_is_permissive(expression: str) -> bool:
    if expression in SPDX_SPECIAL or _LICENSE_REF.match(expression):
        return False

    def permissive(node) -> bool:
        if isinstance(node, LicenseWithExceptionSymbol):
            return permissive(node.license_symbol)
        if isinstance(node, LicenseSymbol):
            return node.key in PERMISSIVE_LICENCES
        if isinstance(node, OR):
            return any(permissive(a) for a in node.args)
        if isinstance(node, AND):
            return all(permissive(a) for a in node.args)
        return False

    return permissive(_spdx().parse(expression))


class Candidate(BaseModel):
    """One candidate project at a pinned commit (docs/catalogue.md explains each field)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    project_id: ProjectId = Field(
        description="Stable id: letters, digits, '_' and '-' (no dots: it is one part of an attempt "
        "id), 1-100 characters, starting with a letter or digit. Appears in attempt ids and on the board."
    )
    repo_url: str = Field(
        max_length=MAX_URL_CHARS,
        description="https://, http://, ssh://, git:// or scp-style user@host:path of a remote "
        "repository (mirrored on the host), or the absolute path (or file:// URL) of a local bare "
        "repository under an allowed root.",
    )
    commit: Commit = Field(description="The pinned commit: the full 40-character lower-case id.")
    language: Language = Field(description="Main language, free text (e.g. python, shell, c).")
    licence: str = Field(
        max_length=200,
        description="SPDX licence id or expression (MIT, Apache-2.0, MIT OR Apache-2.0, "
        "NOASSERTION). Only permissive licences are eligible.",
    )
    has_readme: bool = Field(description="The repository has a README at its root (else ineligible).")
    difficulty: Literal["easy", "medium", "hard"]
    size_mb: float = Field(ge=0, le=1_000_000, description="Repository size in MB (over 500: heavy tier).")
    owner_marked_heavy: bool = Field(False, description="The owner marks it heavy (120-minute budget).")
    needs_gpu: bool = Field(False, description="Needs a GPU (gpu tier).")
    popular_since: date = Field(
        description="When it became popular (YYYY-MM-DD). In the calendar month before a cycle's month: "
        "eligible for the private 20% (once only: never two cycles running, never after its reveal); "
        "before that month: public; on or after the cycle's first day: not this cycle."
    )
    paid_account_required: bool = Field(False, description="Cannot run without a paid account.")

    @field_validator("commit", mode="before")
    @classmethod
    def _commit_lower(cls, value: Any) -> Any:
        return value.strip().lower() if isinstance(value, str) else value

    @field_validator("licence")
    @classmethod
    def _spdx_licence(cls, value: str) -> str:
        return normalise_licence(value)[0]

    @field_validator("repo_url")
    @classmethod
    def _source_grammar(cls, value: str) -> str:
        return parse_source(value).url


class CatalogueDocument(BaseModel):
    """The file: a schema tag and a list of candidates (other top-level keys are kept, unread)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    schema_: Literal["argusic.catalogue/1"] = Field(alias="schema")
    candidates: list[Candidate] = Field(max_length=MAX_CANDIDATES)


@dataclass(frozen=True)
class Catalogue:
    path: Path
    candidates: list[Candidate]
    sha256: str
    notices: list[str] = field(default_factory=list)  # how spellings were read (not problems)


def _fix_hint(field_name: str, error: dict, item: dict) -> str:
    """How to fix a field, in the operator's words."""
    kind = error["type"]
    if kind == "missing":
        near = difflib.get_close_matches(
            field_name, [k for k in item if k not in Candidate.model_fields], 1, 0.7
        )
        found = f" (found {near[0]!r}: the field is spelled {field_name!r})" if near else ""
        return f"required field missing{found}"
    msg = str(error["msg"]).removeprefix("Value error, ")
    got = error.get("input")
    shown = repr(got) if isinstance(got, (str, int, float, bool)) or got is None else type(got).__name__
    if len(shown) > 80:
        shown = shown[:77] + "..."
    if kind == "string_pattern_mismatch":
        msg = f"{shown} is not accepted"
    if field_name == "commit":
        return f"{msg}: write the full 40-character commit id (git rev-parse HEAD), not a branch or tag"
    if field_name == "project_id":
        return f"{msg}: use 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit"
    if field_name == "language":
        return f"{msg}: a short name such as python, shell, c (letters, digits, ' +#._-', at most 40)"
    if field_name == "popular_since":
        return f"{msg} (got {shown}): write a date as YYYY-MM-DD"
    if kind in ("literal_error", "bool_parsing", "bool_type", "float_parsing", "float_type"):
        return f"{msg} (got {shown})"
    return msg


def _candidate_problems(index: int, item: Any) -> tuple[Candidate | None, list[str], str | None]:
    """(candidate or None, problems, notice) of one catalogue item."""
    if not isinstance(item, dict):
        return None, [f"candidate #{index + 1}: expected an object, got {type(item).__name__}"], None
    name = item.get("project_id")
    who = (
        f"candidate {name}"
        if isinstance(name, str) and re.match(PROJECT_ID, name)
        else f"candidate #{index + 1}"
    )
    notice = None
    if isinstance(item.get("licence"), str):
        with contextlib.suppress(ValueError):  # a bad licence is reported by the model below
            notice = normalise_licence(item["licence"])[1]
    try:
        return Candidate.model_validate(item), [], f"{who}: {notice}" if notice else None
    except ValidationError as err:
        problems = []
        for error in err.errors():
            field_name = ".".join(str(p) for p in error["loc"]) or "(candidate)"
            problems.append(f"{who}: {field_name}: {_fix_hint(field_name, error, item)}")
        return None, problems, None


def load_catalogue(path: Path) -> Catalogue:
    """Read and check a catalogue; CatalogueError lists every problem of the file."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError as err:
        raise CatalogueError(f"{path}: cannot read the catalogue: {err.strerror}") from None
    if size > MAX_CATALOGUE_BYTES:
        raise CatalogueError(f"{path}: {size} bytes, over the {MAX_CATALOGUE_BYTES} byte limit: split it")
    raw = path.read_bytes()
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise CatalogueError(f"{path}: not JSON: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("candidates"), list):
        raise CatalogueError(
            f'{path}: expected an object with a "candidates" list, e.g. '
            f'{{"schema": "{CATALOGUE_SCHEMA}", "candidates": [...]}} (docs/catalogue.md)'
        )
    problems: list[str] = []
    if doc.get("schema") != CATALOGUE_SCHEMA:
        got = "no schema" if "schema" not in doc else f"schema {doc.get('schema')!r}"
        problems.append(f'{got}: add "schema": "{CATALOGUE_SCHEMA}" at the top (the only version so far)')
    items = doc["candidates"]
    if len(items) > MAX_CANDIDATES:
        raise CatalogueError(f"{path}: {len(items)} candidates, over the limit of {MAX_CANDIDATES}: split it")
    candidates: list[Candidate] = []
    notices: list[str] = []
    for index, item in enumerate(items):
        candidate, found, notice = _candidate_problems(index, item)
        problems += found
        if notice:
            notices.append(notice)
        if candidate is not None:
            candidates.append(candidate)
    seen: dict[str, int] = {}
    for item in items:  # every item that names an id, valid or not
        if isinstance(item, dict) and isinstance(item.get("project_id"), str):
            seen[item["project_id"]] = seen.get(item["project_id"], 0) + 1
    for dupe in sorted(k for k, n in seen.items() if n > 1):
        problems.append(f"candidate {dupe}: project_id: used by {seen[dupe]} candidates; ids must be unique")
    if problems:
        head = f"{path}: {len(problems)} problem(s); nothing was drawn from this catalogue:"
        raise CatalogueError("\n".join([head, *(f"  - {p}" for p in problems)]), problems)
    return Catalogue(path, candidates, hashlib.sha256(raw).hexdigest(), notices)


def json_schema() -> dict[str, Any]:
    """The JSON Schema of argusic.catalogue/1, generated from the models above."""
    schema = CatalogueDocument.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://argusic.invalid/schemas/catalogue-1.schema.json",
        "title": "Argusic candidate catalogue, version 1 (argusic.catalogue/1)",
        "description": (
            "Candidate projects for Argusic pool rotation. Checked further by `argusic catalogue "
            "check` (SPDX licences, repository URL grammar, unique ids); see docs/catalogue.md."
        ),
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2, sort_keys=False) + "\n"


if __name__ == "__main__":  # python -m argusic.sources.catalogue --schema > plugins/argusic/schemas/...
    import sys

    if sys.argv[1:] == ["--schema"]:
        sys.stdout.write(schema_text())
    else:
        sys.exit("usage: python -m argusic.sources.catalogue --schema")
