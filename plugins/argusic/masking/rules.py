"""The catalogue of token formats, and the engines that find them fast.

Sources (none hand-picked):

* **kingfisher** (PyPI ``kingfisher-bin``, Apache-2.0, MongoDB): its built-in rules, exported offline by
  ``kingfisher rules list --format json``: the "betterleaks" rules (the gitleaks lineage, by gitleaks'
  author) and Google OSV-SCALIBR's "veles" rules. Exported once per kingfisher version and cached.
* **detect-secrets** (PyPI, Yelp): the ``denylist`` patterns of every regex plugin.
* **argusic** (ours, `SUPPLEMENTARY_PATTERNS` and below): formats neither set matches the way a log
  shows them (Anthropic/OpenAI keys of any length, JWTs whole with their signature whatever follows
  them), assignments whose name says secret/password/token/key, and quoted high-entropy strings.

A few rules are left out on purpose (`EXCLUDED_RULES`): private-key blocks have their own redaction
(markers kept, body fingerprinted), and public IP addresses are not credentials.

Engines: every rule goes into one Hyperscan database (single-match mode) that tells, in one pass at
hundreds of MB/s, which rules match a block; only those rules are then run with RE2 (linear time: a
hostile log cannot make a rule backtrack) to get the spans and capture groups. Patterns RE2 cannot
parse (lookarounds in a few detect-secrets plugins) are confirmed by Python's ``re`` on the block the
prefilter flagged. The compiled database is cached on disk, keyed by the catalogue's digest.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import hyperscan
import re2

log = logging.getLogger(__name__)

# Formats detect-secrets 1.5.0 has no plugin for, or that kingfisher only knows at one exact length.
SUPPLEMENTARY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("Anthropic/OpenAI sk- key", r"sk-(?:ant-|proj-|svcacct-|admin-)[A-Za-z0-9_\-]{30,}"),
    ("OpenAI sk- key", r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{30,}"),
    # Our gateway's per-run keys (LiteLLM: "sk-" + secrets.token_urlsafe(16), 22 characters), which the
    # rule above (30 or more) does not reach: a key of another attempt, or one the masker was not told.
    ("Gateway per-run key", r"\b(sk-[A-Za-z0-9_\-]{22})(?:[^A-Za-z0-9_\-]|$)"),
    ("GitHub fine-grained PAT", r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    ("GitHub token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("Bearer token", r"(?i)\bBearer\s+([A-Za-z0-9._~+/=\-]{16,})"),
    # A JWT whole, signature included, whatever character follows it.
    ("JWT", r"\beyJ[A-Za-z0-9_\-]{8,}={0,2}\.eyJ[A-Za-z0-9_\-]{8,}={0,2}\.[A-Za-z0-9_\-+/]*={0,2}"),
)

# Names that say "this is a secret": the last part of the name is one of these words.
SECRET_NAME_WORDS = r"password|passwd|passphrase|pwd|pass|secret|token|key|credentials?"
# `NAME=value`, `NAME: value`, `"name": "value"`, `--name=value`; quoted or not. Group 5 catches a
# call (`secret = get_secret()`): code, not a value.
ASSIGNMENT_RULE = (
    r"(?i)(?:^|[^A-Za-z0-9_.\-])(?:-{1,2})?[\"']?([A-Za-z0-9_.\-]*(?:" + SECRET_NAME_WORDS + r"))[\"']?"
    r"(?:[ \t]*(?::=|=>|=|:)[ \t]*)"
    r"(?:\"([^\"\r\n]*)\"|'([^'\r\n]*)'|([^\s\"'`,;(){}\[\]<>]+)(\()?)"
)
# `--token value` (a command-line flag followed by its value).
FLAG_RULE = (
    r"(?i)(?:^|\s)--([a-z0-9\-]*(?:" + SECRET_NAME_WORDS + r"))[ \t]+"
    r"(?:\"([^\"\r\n]*)\"|'([^'\r\n]*)'|([^\s\"'`,;(){}\[\]<>\-][^\s\"'`,;(){}\[\]<>]*)(\()?)"
)
QUOTED_HIGH_ENTROPY_RULE = r"[\"'][A-Za-z0-9+/=_\-]{20,}[\"']"  # no groups: the quotes are trimmed
QUOTED_ENTROPY_LIMIT = 4.5

EXCLUDED_RULES = frozenset(
    {
        "kingfisher/betterleaks.private-key",  # private keys: dedicated redaction (markers kept)
        "detect-secrets/Private Key",
        "detect-secrets/Public IP (ipv4)",  # not a credential
    }
)

# Rule kinds: a format rule runs on every view (joined views find wrapped tokens); a line rule only
# on the views that keep line breaks (its value would otherwise swallow the next line).
FORMAT, LINE = "format", "line"


@dataclass(frozen=True)
class Rule:
    id: str  # "<source>/<name>", e.g. kingfisher/betterleaks.github-pat
    pattern: str
    kind: str = FORMAT
    soft: bool = False  # the value goes through the no-value heuristics (templated, code, ...)
    min_entropy: float = 0.0  # the value's Shannon entropy must exceed this
    value_groups: tuple[int, ...] = ()  # the groups that hold the value (default: see engine.match_spans)
    reject_group: int = 0  # a group that, when it takes part, says "not a value" (a call: `get_secret()`)
    prefilter: str | None = None  # a wider pattern for Hyperscan when `pattern` uses what it lacks

    @property
    def source(self) -> str:
        return self.id.split("/", 1)[0]

    def excluded_by(self, excluded: Iterable[str]) -> bool:
        return any(self.id == x or self.id.startswith(x + "/") for x in excluded)


class RulesUnavailable(RuntimeError):
    """The rule catalogue could not be loaded (the copy is withheld rather than served unchecked)."""


# -- sources -------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    """ARGUSIC_CACHE_DIR, or $XDG_CACHE_HOME/argusic (~/.cache/argusic): exported rules, compiled DBs."""
    if explicit := os.environ.get("ARGUSIC_CACHE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "argusic"


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "absent"


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


def _valid_export(doc: object) -> list[dict]:
    if not isinstance(doc, list) or not doc:
        raise RulesUnavailable("kingfisher rules export is not a non-empty JSON list")
    for item in doc:
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("id", "pattern")):
            raise RulesUnavailable("kingfisher rules export has an entry without id/pattern strings")
    return doc


@lru_cache(maxsize=1)
def kingfisher_rules() -> tuple[dict, ...]:
    """kingfisher's built-in rules ({id, pattern, confidence, ...}), exported offline and cached."""
    kf_version = _package_version("kingfisher-bin")
    if kf_version == "absent":
        raise RulesUnavailable("kingfisher-bin is not installed (pip install -r requirements.txt)")
    cached = cache_dir() / f"kingfisher-rules-{kf_version}.json"
    try:
        return tuple(_valid_export(json.loads(cached.read_bytes())))
    except (OSError, ValueError, RulesUnavailable):
        pass
    # deferred: kingfisher-bin may be absent (RulesUnavailable above); only needed when the cache is cold
    from kingfisher import get_binary_path

    # --no-update-check: the export is offline; nothing else is read or written.
    cmd = [get_binary_path(), "rules", "list", "--format", "json", "--no-update-check", "--quiet"]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=120, check=True, stdin=subprocess.DEVNULL)
        rules = _valid_export(json.loads(done.stdout))
    except (OSError, subprocess.SubprocessError, ValueError) as err:
        raise RulesUnavailable(f"kingfisher rules export failed: {err}") from None
    try:
        _write_atomic(cached, json.dumps(rules).encode())
    except OSError as err:  # a read-only home: export again next time
        log.warning("cannot cache kingfisher rules in %s: %s", cached, err)
    return tuple(rules)


def detect_secrets_patterns() -> list[tuple[str, str, int]]:
    """(secret type, pattern, re flags) of every detect-secrets regex plugin's denylist."""
    # deferred: detect-secrets takes ~1.5 s to import; its patterns are read only to build the catalogue
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.base import RegexBasedDetector  # deferred: detect-secrets, as above

    out = []
    for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items()):
        if isinstance(cls, type) and issubclass(cls, RegexBasedDetector):
            out += [(secret_type, p.pattern, p.flags & (re.IGNORECASE | re.VERBOSE)) for p in cls.denylist]
    return out


_NEGATIVE_CLASS_LOOKAHEAD = re.compile(r"\(\?!(\[(?:\\.|[^\]\\])+\])\)")


def linear_time_form(pattern: str) -> str:
    r"""detect-secrets' lookarounds as consumed context, so RE2 (linear time) can run the pattern:
    `(?<=\W)|(?<=^)` before a keyword, `(?!\w)` / `(?![...])` after a value, and repeat counts
    above RE2's limit of 1000. The value's capture group is what masking uses, so consuming one
    more character around it changes nothing that is masked (a consumed delimiter is trimmed)."""
    p = pattern.replace("(?:(?<=\\W)|(?<=^))", "(?:\\W|^)")
    p = p.replace("(?!\\w)", "(?:\\W|$)")
    p = _NEGATIVE_CLASS_LOOKAHEAD.sub(lambda m: f"(?:[^{m.group(1)[1:-1]}]|$)", p)
    return _cap_repeats(p)


def prefilter_form(pattern: str) -> str:
    """A pattern that matches wherever `pattern` does, without lookarounds (Hyperscan has none)."""
    p = pattern.replace("(?:(?<=\\W)|(?<=^))", "")
    p = p.replace("(?!\\w)", "")
    return _cap_repeats(_NEGATIVE_CLASS_LOOKAHEAD.sub("", p))


def _cap_repeats(pattern: str) -> str:
    """Repeat counts above RE2's limit (1000) lowered to it."""
    return re.sub(r"\{(\d+),(\d{4,})\}", lambda m: f"{{{m.group(1)},{min(int(m.group(2)), 1000)}}}", pattern)


def _flags_prefix(flags: int) -> str:
    return "".join(f for f, bit in (("i", re.IGNORECASE), ("x", re.VERBOSE)) if flags & bit)


def catalogue(
    *,
    kingfisher: bool = True,
    detect_secrets: bool = True,
    supplementary: tuple[tuple[str, str], ...] = SUPPLEMENTARY_PATTERNS,
    assignments: bool = True,
    excluded: Iterable[str] = EXCLUDED_RULES,
) -> tuple[Rule, ...]:
    """Every rule of the policy, in a stable order."""
    excluded = frozenset(excluded)
    rules: list[Rule] = []
    if kingfisher:
        rules += [Rule(f"kingfisher/{r['id']}", r["pattern"]) for r in kingfisher_rules()]
    if detect_secrets:
        for n, (secret_type, pattern, flags) in enumerate(detect_secrets_patterns()):
            prefix = _flags_prefix(flags)
            confirm, wider = linear_time_form(pattern), prefilter_form(pattern)
            flags = f"(?{prefix})" if prefix else ""
            prefilter = flags + wider if wider != confirm else None
            rules.append(Rule(f"detect-secrets/{secret_type}/{n}", flags + confirm, prefilter=prefilter))
    rules += [Rule(f"argusic/{name}", pattern) for name, pattern in supplementary]
    if assignments:
        rules.append(Rule("argusic/assignment", ASSIGNMENT_RULE, LINE, True, 0.0, (2, 3, 4), 5))
        rules.append(Rule("argusic/flag", FLAG_RULE, LINE, True, 0.0, (2, 3, 4), 5))
        quoted = Rule(
            "argusic/quoted-high-entropy", QUOTED_HIGH_ENTROPY_RULE, LINE, True, QUOTED_ENTROPY_LIMIT
        )
        rules.append(quoted)
    return tuple(r for r in rules if not r.excluded_by(excluded))


def catalogue_digest(rules: Iterable[Rule]) -> str:
    doc: list = ["multiline", BASE_FLAGS]
    doc += [
        [r.id, r.pattern, r.kind, r.soft, r.min_entropy, r.value_groups, r.reject_group, r.prefilter]
        for r in rules
    ]
    return hashlib.sha256(json.dumps(doc).encode()).hexdigest()


# -- compiled forms ------------------------------------------------------------------------------------


class Confirmer:
    """A rule's regex compiled for confirmation: RE2 (Latin-1, bytes) or, failing that, Python's re."""

    def __init__(self, pattern: str) -> None:
        self.engine = "re2"
        source = pattern
        if (lead := re.match(r"\(\?([a-zA-Z]+)\)", source)) and "x" in lead.group(1):
            # RE2 has no extended mode: drop its whitespace and comments.
            flags = lead.group(1).replace("x", "")
            source = (f"(?{flags})" if flags else "") + _strip_extended(source[lead.end() :])
        source = _cap_repeats(source)
        options = re2.Options()
        options.encoding = re2.Options.Encoding.LATIN1
        options.log_errors = False
        try:
            # Multi-line: `^` and `$` at every line of a log, not only where a window happens to start.
            self.regex = re2.compile(b"(?m)" + source.encode("latin-1"), options)
        except (re2.error, UnicodeEncodeError):
            self.engine = "re"
            self.regex = re.compile(pattern.encode("latin-1", "backslashreplace"), re.MULTILINE)
        self.groups: int = self.regex.groups
        names = dict(self.regex.groupindex)
        self.names = {i: n.decode("latin-1") if isinstance(n, bytes) else n for n, i in names.items()}

    def finditer(self, data: bytes) -> Iterator:
        return self.regex.finditer(data)


def _strip_extended(pattern: str) -> str:
    """Extended-mode pattern → plain: unescaped whitespace outside classes and #-comments removed."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c.isspace():
            i += 1
            continue
        elif c == "#":
            while i < len(pattern) and pattern[i] != "\n":
                i += 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _hs_compile_one(pattern: bytes, flags: int):
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[pattern], ids=[0], flags=[flags])
    return db


_THREAD = threading.local()


def scan(database, data, on_match) -> None:
    """`database.scan` with a scratch space of this thread's own (Hyperscan refuses a scratch in use:
    attempts may be presented from several threads at once)."""
    spaces = getattr(_THREAD, "spaces", None)
    if spaces is None:
        spaces = _THREAD.spaces = {}
    scratch = spaces.get(id(database))
    if scratch is None or scratch[0] is not database:
        scratch = spaces[id(database)] = (database, hyperscan.Scratch(database))
    database.scan(data, match_event_handler=on_match, scratch=scratch[1])


def _adder(found: set[int]):
    def on_match(rule_id: int, start: int, end: int, flags: int, context: object) -> None:
        found.add(rule_id)

    return on_match


BLOCK = 64 << 10  # the prefilter tells which rules may match in each block of a view
MARGIN = 8 << 10  # each block extended by this much: a match no longer than this lies in one block


@dataclass
class CompiledRules:
    """The catalogue ready to scan: Hyperscan databases (every rule, for the views that keep line
    breaks; format rules only, for the joined views) plus a confirmer per rule."""

    rules: tuple[Rule, ...]
    digest: str
    database: object  # hyperscan.Database of every rule; None when no rule compiled
    format_database: object  # the same without the line rules
    always: tuple[int, ...]  # rules Hyperscan could not take: confirmed on every block
    confirmers: tuple[Confirmer, ...]

    def candidates(self, data: bytes) -> list[int]:
        """Indexes of the rules that (may) match somewhere in `data`."""
        return sorted(self.candidate_ranges(data))

    def candidate_ranges(
        self, data: bytes, *, line_view: bool = True, block: int = BLOCK, margin: int = MARGIN
    ) -> dict[int, list]:
        """{rule index: [(start, end), ...]}: the parts of `data` where each rule may match (line
        rules only where `line_view`).

        `data` is scanned in blocks of `block` bytes, each extended by `margin` (a match no longer
        than `margin` lies whole in some extended block); neighbouring blocks of one rule are merged.
        Confirming a rule then costs the size of its ranges, not of the whole view."""
        hits: dict[int, list[list[int]]] = {}
        size = len(data)
        if not size:
            return {}
        database = self.database if line_view else self.format_database
        always = set(self.always) if line_view else {i for i in self.always if self.rules[i].kind != LINE}
        view = memoryview(data)
        for start in range(0, size, block):
            end = min(size, start + block + margin)
            found: set[int] = set(always)
            if database is not None:
                scan(database, view[start:end], _adder(found))
            for idx in found:
                ranges = hits.setdefault(idx, [])
                if ranges and ranges[-1][1] >= start:
                    ranges[-1][1] = end
                else:
                    ranges.append([start, end])
        return {idx: [(a, b) for a, b in ranges] for idx, ranges in hits.items()}


# Single match (the prefilter only needs to know which rules match in a block), multi-line.
BASE_FLAGS = 8 | 16 | 4  # HS_FLAG_SINGLEMATCH | HS_FLAG_ALLOWEMPTY | HS_FLAG_MULTILINE


def _hs_flags_for(pattern: bytes) -> int | None:
    """Single-match flags Hyperscan accepts for this pattern (prefilter mode as a fallback), or None."""
    for flags in (BASE_FLAGS, BASE_FLAGS | hyperscan.HS_FLAG_PREFILTER):
        try:
            _hs_compile_one(pattern, flags)
            return flags
        except hyperscan.error:
            continue
    return None


def _load_database(path: Path, sha256: str):
    blob = path.read_bytes()
    if hashlib.sha256(blob).hexdigest() != sha256:
        raise ValueError(f"{path} does not match its digest")
    database = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)
    return database


def _compile_databases(rules: tuple[Rule, ...], entries: list[tuple[bytes, int, int]]) -> dict[str, object]:
    """The database of every rule and the one of format rules only (joined views)."""
    databases: dict[str, object] = {}
    for name, chosen in (("all", entries), ("format", [e for e in entries if rules[e[1]].kind != LINE])):
        databases[name] = None
        if chosen:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(
                expressions=[e[0] for e in chosen], ids=[e[1] for e in chosen], flags=[e[2] for e in chosen]
            )
            databases[name] = db
    return databases


def compile_rules(rules: tuple[Rule, ...]) -> CompiledRules:
    """Compile (or load from the cache) the Hyperscan databases of a catalogue."""
    digest = catalogue_digest(rules)
    confirmers = tuple(Confirmer(r.pattern) for r in rules)
    key = hashlib.sha256(f"{digest}\n{_package_version('hyperscan')}".encode()).hexdigest()[:32]
    paths = {name: cache_dir() / f"hyperscan-{key}-{name}.db" for name in ("all", "format")}
    meta_path = cache_dir() / f"hyperscan-{key}.json"
    try:
        meta = json.loads(meta_path.read_bytes())
        databases = {name: _load_database(path, meta["sha256"][name]) for name, path in paths.items()}
        return CompiledRules(
            rules, digest, databases["all"], databases["format"], tuple(meta["always"]), confirmers
        )
    except (OSError, ValueError, KeyError, TypeError, hyperscan.error):
        pass
    patterns = [(r.prefilter or r.pattern).encode("latin-1", "backslashreplace") for r in rules]
    always: list[int] = []
    try:  # every pattern as it is, in one compilation (the usual case)
        databases = _compile_databases(rules, [(p, n, BASE_FLAGS) for n, p in enumerate(patterns)])
    except hyperscan.error:  # find the patterns that need prefilter mode, or cannot be taken
        entries = []
        for n, pattern in enumerate(patterns):
            f = _hs_flags_for(pattern)
            if f is None:
                always.append(n)
            else:
                entries.append((pattern, n, f))
        databases = _compile_databases(rules, entries)
    try:
        sums = {}
        for name, db in databases.items():
            if db is None:
                raise OSError("nothing to cache")
            blob = hyperscan.dumpb(db)
            _write_atomic(paths[name], blob)
            sums[name] = hashlib.sha256(blob).hexdigest()
        _write_atomic(meta_path, json.dumps({"sha256": sums, "always": always, "catalogue": digest}).encode())
    except (OSError, hyperscan.error) as err:
        log.warning("cannot cache the compiled rules in %s: %s", cache_dir(), err)
    return CompiledRules(rules, digest, databases["all"], databases["format"], tuple(always), confirmers)


@lru_cache(maxsize=4)
def compiled(rules: tuple[Rule, ...]) -> CompiledRules:
    return compile_rules(rules)


def warm() -> str:
    """Export and compile the default catalogue into the cache (`python -m argusic.masking.rules`)."""
    rules = catalogue()
    compiled(rules)
    counts: dict[str, int] = {}
    for r in rules:
        counts[r.source] = counts.get(r.source, 0) + 1
    sources = ", ".join(f"{k}: {v}" for k, v in sorted(counts.items()))
    return f"{len(rules)} rules ({sources}), digest {catalogue_digest(rules)[:16]}"


if __name__ == "__main__":  # pragma: no cover - a convenience for image builds
    print(warm(), file=sys.stdout)
