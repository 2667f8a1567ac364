"""Security masking for served copies of evidence (section 17, presentation layer).

Raw evidence is never touched: these functions take the raw bytes of a log or an asciicast v2
recording and return the bytes of a *served copy*, or withhold it.

What is removed from a served copy:

* Live credential values given by the caller (the attempt's key, the shared key, every secret value
  in the attempt's environment) in every form we know how to find: as typed; with terminal escape
  sequences, control characters, backspaces or line breaks interleaved; JSON/C escaped (``\\u0073``,
  ``\\x73``, ``\\/``); URL-encoded (``%73``); HTML numeric entities; hex (either case); and base64 /
  base64url of the value at each of the three byte alignments (the stable middle of the encoding,
  so it is found inside a longer base64 text, also when wrapped over lines).
* Token-shaped values found by detect-secrets' plugins (AWS, GitHub, GitLab, Slack, Stripe, JWT,
  basic-auth URLs, ``password = "..."`` keywords, quoted high-entropy base64, ...), plus a few
  formats detect-secrets 1.5 does not know (``SUPPLEMENTARY_PATTERNS``: Anthropic and current OpenAI
  ``sk-...`` keys, GitHub fine-grained PATs, Google API keys, Hugging Face tokens, Bearer headers).
  Every detected value is then masked in all the forms above, wherever else it occurs.
* Private-key bodies (``-----BEGIN ... PRIVATE KEY-----`` ... ``-----END ...-----``, also when the
  END line never came): the markers stay, the body becomes a placeholder, the body's fingerprint is
  reported. Generated key material is a project's own output: it flags ``masking_applied`` but is
  never a reason to withhold, unless its redaction cannot be verified.
* Vendor start-up banners (``BannerRule``): welcome boxes and banner lines of the underlying tool.
  A line that is a command (``CommandPatterns``: the harness's ``$ ...`` prompt echo and the log's
  ``STEP ...:`` lines) is never hidden; a credential *inside* a command is still masked.

A recording is masked on its concatenated output stream (a secret split over events is found) and
the redactions are mapped back onto the event boundaries: every event keeps its time, an event may
become shorter (or empty); a placeholder is placed in the event where the redaction starts.

After masking, a verification pass re-reads the *serialised* served copy and searches it again for
every known value in every form, runs the detectors again and checks private-key blocks. Masking is
repeated until nothing is found (at most ``max_rounds``); if anything is still there, or the input
cannot be parsed, the result is withheld (``MaskResult.withheld``), and the caller reruns the attempt.

Messages never contain secret values: a finding is described by index, form and view only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

MASKING_VERSION = "1"
PLACEHOLDER = "[masked]"
KEY_PLACEHOLDER = "[private key body redacted]"
MIN_SECRET_LEN = 6

# -- policy -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BannerRule:
    """A vendor start-up banner to hide.

    Either `line` (every matching line is hidden) or a box: from a line matching `start` to the first
    line matching `end` within `max_lines`, hidden only if some line of it matches `contains`.
    Patterns are matched against a line with terminal escapes removed.
    """

    name: str
    line: str | None = None
    start: str | None = None
    end: str | None = None
    contains: str | None = None
    max_lines: int = 24


DEFAULT_BANNERS: tuple[BannerRule, ...] = (
    BannerRule(
        "claude-code-welcome-box",
        start=r"^\s*╭[─━]",
        end=r"^\s*╰[─━]",
        contains=r"(?i)claude code|anthropic",
    ),
    BannerRule("claude-code-welcome-line", line=r"^\s*[│|]?\s*✻\s*Welcome to Claude Code"),
    BannerRule(
        "codex-welcome-box",
        start=r"^\s*╭[─━]",
        end=r"^\s*╰[─━]",
        contains=r"(?i)openai codex|>_ .*codex",
    ),
    BannerRule("codex-welcome-line", line=r"^\s*[│|]?\s*>_ OpenAI Codex\b"),
    BannerRule("aider-version-line", line=r"^Aider v\d+\.\d+"),
    BannerRule("aider-model-lines", line=r"^(?:Main|Weak|Editor) model: \S"),
)

# Lines that are the agent's commands: never hidden as a banner.
DEFAULT_COMMAND_PATTERNS: tuple[str, ...] = (
    r"^(?:\S+ )?\$ ",  # recorder.prompt(): "[<subdir> ]$ <command>"
    r"^> ",  # continuation lines of a multi-line command
    r"^\[[0-9T:.\-Z]+\] STEP [\w-]+: ",  # the log's step lines
)

# Formats detect-secrets 1.5.0 has no plugin for (its OpenAI plugin only knows the old T3BlbkFJ keys).
SUPPLEMENTARY_PATTERNS: tuple[tuple[str, str], ...] = (
    ("Anthropic/OpenAI sk- key", r"sk-(?:ant-|proj-|svcacct-|admin-)[A-Za-z0-9_\-]{30,}"),
    ("OpenAI sk- key", r"\bsk-[A-Za-z0-9][A-Za-z0-9_\-]{30,}"),
    ("GitHub fine-grained PAT", r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    ("GitHub token", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("Bearer token", r"(?i)\bBearer\s+([A-Za-z0-9._~+/=\-]{16,})"),
)

# detect-secrets plugins not used: private keys have their own handling (the plugin reports the BEGIN
# line, not the body), public IPs are not credentials, and hex high-entropy strings are every commit
# hash and checksum in a log.
EXCLUDED_DETECTORS = frozenset({"Private Key", "Public IP (ipv4)", "Hex High Entropy String"})
BASE64_ENTROPY_LIMIT = 4.5


@dataclass(frozen=True)
class MaskPolicy:
    banners: tuple[BannerRule, ...] = DEFAULT_BANNERS
    command_patterns: tuple[str, ...] = DEFAULT_COMMAND_PATTERNS
    use_detect_secrets: bool = True
    supplementary_patterns: tuple[tuple[str, str], ...] = SUPPLEMENTARY_PATTERNS
    excluded_detectors: frozenset[str] = EXCLUDED_DETECTORS
    redact_private_keys: bool = True
    min_secret_len: int = MIN_SECRET_LEN
    max_rounds: int = 4

    def fingerprint(self) -> str:
        """A stable digest of the policy (goes with the served copy, not a secret)."""
        doc = {
            "version": MASKING_VERSION,
            "banners": [vars(b) for b in self.banners],
            "commands": list(self.command_patterns),
            "detect_secrets": self.use_detect_secrets,
            "supplementary": [list(p) for p in self.supplementary_patterns],
            "excluded": sorted(self.excluded_detectors),
            "keys": self.redact_private_keys,
            "min": self.min_secret_len,
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


DEFAULT_POLICY = MaskPolicy()

# -- results ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyBlock:
    """One redacted private-key body: its label and the sha256 of its base64 characters."""

    label: str
    sha256: str


@dataclass
class MaskStats:
    credentials_masked: int = 0
    key_blocks: list[KeyBlock] = field(default_factory=list)
    banner_lines_hidden: int = 0
    banners: set[str] = field(default_factory=set)
    detector_types: set[str] = field(default_factory=set)
    ignored_short_values: int = 0
    rounds: int = 0

    def add_key(self, block: KeyBlock) -> None:
        if block not in self.key_blocks:
            self.key_blocks.append(block)


@dataclass
class MaskResult:
    """A served copy (`data`), or a withheld one (`data is None`, `reason` says why)."""

    data: bytes | None
    withheld: bool
    reason: str | None
    stats: MaskStats

    @property
    def masking_applied(self) -> bool:
        return self.stats.credentials_masked > 0 or bool(self.stats.key_blocks)

    @property
    def generated_key_material(self) -> bool:
        return bool(self.stats.key_blocks)

    def summary(self) -> dict:
        s = self.stats
        return {
            "withheld": self.withheld,
            "reason": self.reason,
            "masking_applied": self.masking_applied,
            "credentials_masked": s.credentials_masked,
            "generated_key_material": self.generated_key_material,
            "private_keys": [{"label": k.label, "sha256": k.sha256} for k in s.key_blocks],
            "banner_lines_hidden": s.banner_lines_hidden,
            "banners": sorted(s.banners),
            "detector_types": sorted(s.detector_types),
            "ignored_short_values": s.ignored_short_values,
            "masking_version": MASKING_VERSION,
        }


class MaskingError(ValueError):
    """Input that cannot be parsed as what it claims to be (the copy is withheld)."""


# -- encodings of a value ---------------------------------------------------------------------------


def _b64_fragments(raw: bytes) -> set[str]:
    """The stable middle of base64(x + raw + y) for every alignment of raw, standard and url-safe."""
    out: set[str] = set()
    n = len(raw)
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode()
        frag = enc[-(-8 * k // 6) : (8 * (k + n)) // 6]
        if len(frag) >= 4:
            out.add(frag)
            out.add(frag.translate(str.maketrans("+/", "-_")))
    return out


def secret_forms(value: str) -> dict[str, str]:
    """Every literal form of a value searched for in the (normalised) served text: {form: kind}."""
    raw = value.encode("utf-8")
    forms: dict[str, str] = {value: "plain"}
    for frag in sorted(_b64_fragments(raw)):
        forms.setdefault(frag, "base64")
    forms.setdefault(raw.hex(), "hex")
    forms.setdefault(raw.hex().upper(), "hex")
    return forms


def _candidate_values(secrets: Iterable[str], min_len: int, stats: MaskStats) -> list[str]:
    values: list[str] = []
    for secret in secrets:
        if not isinstance(secret, str):
            continue
        parts = {secret, secret.strip(), *(line.strip() for line in secret.splitlines())}
        for part in parts:
            if not part:
                continue
            if len(part) < min_len:
                if part == secret.strip():
                    stats.ignored_short_values += 1
                continue
            if part not in values:
                values.append(part)
    return values


# -- normalised views with a map back to the original text ----------------------------------------

_ANSI = (
    r"(?P<ansi>\x1b\[[0-?]*[ -/]*[@-~]"  # CSI
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (title etc.), terminated by BEL or ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS / SOS / PM / APC
    r"|\x1b[ -/]*[0-~]"  # other escape sequences
    r"|\x1b"  # a lone ESC
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|[\x00-\x07\x0b\x0c\x0e-\x1f\x7f]+)"  # other control characters (not \t \n \r, not backspace)
    r"|(?P<bs>\x08)"
)
_DECODE = (
    r"(?P<u>\\u[0-9a-fA-F]{4})|(?P<x>\\x[0-9a-fA-F]{2})|(?P<c>\\[/\\\"'nrt])"
    r"|(?P<pct>%[0-9a-fA-F]{2})|(?P<ent>&#[0-9]{1,7};|&#[xX][0-9a-fA-F]{1,6};)|(?P<amp>&amp;)"
)
_NL = r"(?P<nl>[\r\n]+)"
_C_ESCAPES = {"/": "/", "\\": "\\", '"': '"', "'": "'", "n": "\n", "r": "\r", "t": "\t"}


@lru_cache(maxsize=8)
def _view_pattern(ansi: bool, decode: bool, join: bool) -> re.Pattern[str]:
    parts = [p for p, on in ((_ANSI, ansi), (_DECODE, decode), (_NL, join)) if on]
    return re.compile("|".join(parts))


@dataclass
class View:
    """Normalised text with a map back to the original, kept as segments.

    Segment k covers view chars [vstart[k], vstart[k] + length[k]); an identity segment maps char i to
    original char ostart[k] + (i - vstart[k]); a decoded-token segment maps each of its chars to the
    whole token original[ostart[k]:oend[k]].
    """

    name: str
    text: str
    vstart: list[int]
    length: list[int]
    ostart: list[int]
    oend: list[int]
    identity: list[bool]

    def _orig(self, i: int) -> tuple[int, int]:
        k = bisect_right(self.vstart, i) - 1
        if self.identity[k]:
            o = self.ostart[k] + (i - self.vstart[k])
            return o, o + 1
        return self.ostart[k], self.oend[k]

    def span(self, i: int, j: int) -> tuple[int, int]:
        """Original span of view chars [i, j) (everything in between, escapes included)."""
        return self._orig(i)[0], self._orig(j - 1)[1]


class _ViewBuilder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.pieces: list[str] = []
        self.vstart: list[int] = []
        self.length: list[int] = []
        self.ostart: list[int] = []
        self.oend: list[int] = []
        self.identity: list[bool] = []
        self.size = 0

    def add(self, text: str, a: int, b: int, identity: bool) -> None:
        if not text:
            return
        self.pieces.append(text)
        self.vstart.append(self.size)
        self.length.append(len(text))
        self.ostart.append(a)
        self.oend.append(b)
        self.identity.append(identity)
        self.size += len(text)

    def pop(self) -> None:
        """Remove the last char (a backspace), unless it is a line break."""
        if not self.pieces or self.pieces[-1][-1] in "\r\n":
            return
        self.pieces[-1] = self.pieces[-1][:-1]
        self.length[-1] -= 1
        if self.identity[-1]:
            self.oend[-1] -= 1
        self.size -= 1
        if not self.pieces[-1]:
            for seq in (self.pieces, self.vstart, self.length, self.ostart, self.oend, self.identity):
                seq.pop()

    def build(self) -> View:
        return View(
            self.name, "".join(self.pieces), self.vstart, self.length, self.ostart, self.oend, self.identity
        )


def _decode_token(kind: str, tok: str) -> str:
    try:
        if kind in ("u", "x"):
            return chr(int(tok[2:], 16))
        if kind == "c":
            return _C_ESCAPES[tok[1]]
        if kind == "pct":
            return chr(int(tok[1:], 16))
        if kind == "ent":
            body = tok[2:-1]
            return chr(int(body[1:], 16) if body[:1] in "xX" else int(body))
        if kind == "amp":
            return "&"
    except (ValueError, OverflowError):
        pass
    return tok


def build_view(text: str, *, ansi: bool, decode: bool, join: bool, name: str = "") -> View:
    out = _ViewBuilder(name or "raw")
    if not (ansi or decode or join):
        out.add(text, 0, len(text), True)
        return out.build()
    pos = 0
    for m in _view_pattern(ansi, decode, join).finditer(text):
        a, b = m.span()
        if a > pos:
            out.add(text[pos:a], pos, a, True)
        kind = m.lastgroup
        if kind == "bs":
            out.pop()
        elif kind not in ("ansi", "nl"):
            decoded = _decode_token(kind, m.group())
            if join:
                decoded = decoded.replace("\r", "").replace("\n", "")
            out.add(decoded, a, b, False)
        pos = b
    if pos < len(text):
        out.add(text[pos:], pos, len(text), True)
    return out.build()


@dataclass
class _Views:
    raw: View
    l1: View  # escapes removed, lines kept
    l2: View  # escapes removed, \u/%/&# decoded, lines kept
    j1: View  # as l1, line breaks removed
    j2: View  # as l2, line breaks removed

    @property
    def search(self) -> tuple[View, ...]:
        return (self.raw, self.j1, self.j2)

    @property
    def lines(self) -> tuple[View, ...]:
        return (self.raw, self.l1, self.l2)


def _views(text: str) -> _Views:
    return _Views(
        raw=build_view(text, ansi=False, decode=False, join=False, name="raw"),
        l1=build_view(text, ansi=True, decode=False, join=False, name="stripped"),
        l2=build_view(text, ansi=True, decode=True, join=False, name="decoded"),
        j1=build_view(text, ansi=True, decode=False, join=True, name="stripped-joined"),
        j2=build_view(text, ansi=True, decode=True, join=True, name="decoded-joined"),
    )


_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


def _lines(view: View) -> Iterable[tuple[int, int, str]]:
    """(start, end-including-newline, line-without-newline) of every line of a view."""
    for m in _LINE.finditer(view.text):
        a, b = m.span()
        if a == b:
            continue
        yield a, b, m.group().rstrip("\r\n")


# -- finders ------------------------------------------------------------------------------------------

CRED, KEY, BANNER = 1, 2, 4


@lru_cache(maxsize=1)
def _detect_secrets_plugins() -> tuple:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    return tuple(
        (secret_type, cls()) for secret_type, cls in sorted(get_mapping_from_secret_type_to_class().items())
    )


def _entropy(data: str) -> float:
    if not data:
        return 0.0
    counts: dict[str, int] = {}
    for ch in data:
        counts[ch] = counts.get(ch, 0) + 1
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _is_placeholder_only(value: str) -> bool:
    rest = value.replace(PLACEHOLDER, "").replace(KEY_PLACEHOLDER, "")
    return len(re.sub(r"[\s\"'`\[\](){}<>,;:=]", "", rest)) < 4


# Detectors that guess from context (a keyword, a quoted string's entropy) rather than a token format:
# their hits go through detect-secrets' own false-positive heuristics first.
SOFT_DETECTORS = frozenset({"Secret Keyword", "Base64 High Entropy String"})


def _looks_like_no_value(value: str, line: str) -> bool:
    from detect_secrets.filters import heuristic as h

    return (
        h.is_sequential_string(value)
        or h.is_templated_secret(value)
        or h.is_prefixed_with_dollar_sign(value)
        or h.is_not_alphanumeric_string(value)
        or h.is_indirect_reference(line)
    )


def _detect_line(line: str, policy: MaskPolicy) -> frozenset[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    if len(line) < policy.min_secret_len:
        return frozenset()
    plugins = _detect_secrets_plugins() if policy.use_detect_secrets else ()
    for secret_type, plugin in plugins:
        if secret_type in policy.excluded_detectors:
            continue
        for value in plugin.analyze_string(line):
            if not isinstance(value, str) or len(value) < policy.min_secret_len:
                continue
            if secret_type == "Base64 High Entropy String" and _entropy(value) <= BASE64_ENTROPY_LIMIT:
                continue
            if secret_type in SOFT_DETECTORS and _looks_like_no_value(value, line):
                continue
            if not _is_placeholder_only(value):
                found.add((secret_type, value))
    for name, pattern in _compiled(policy.supplementary_patterns):
        for m in pattern.finditer(line):
            value = m.group(1) if pattern.groups else m.group()
            if len(value) >= policy.min_secret_len and not _is_placeholder_only(value):
                found.add((name, value))
    return frozenset(found)


@lru_cache(maxsize=8)
def _compiled(patterns: tuple[tuple[str, str], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((name, re.compile(p)) for name, p in patterns)


def _detect_values(
    lines: Iterable[str], policy: MaskPolicy, stats: MaskStats, cache: dict[str, frozenset]
) -> set[str]:
    """Token-shaped values in these lines (detect-secrets plugins plus the supplementary patterns)."""
    found: set[str] = set()
    for line in lines:
        hits = cache.get(line)
        if hits is None:
            hits = cache[line] = _detect_line(line, policy)
        for secret_type, value in hits:
            found.add(value)
            stats.detector_types.add(secret_type)
    return found


def _find_forms(views: _Views, values: Sequence[str]) -> list[tuple[int, int, int, str]]:
    """(value index, start, end, where) for every occurrence of every form of every value."""
    hits = []
    searched: list[View] = []
    for view in views.search:  # a view equal to an earlier one adds nothing
        if not any(view.text == other.text for other in searched):
            searched.append(view)
    for idx, value in enumerate(values):
        for form, kind in secret_forms(value).items():
            for view in searched:
                text = view.text
                i = text.find(form)
                while i >= 0:
                    s, e = view.span(i, i + len(form))
                    hits.append((idx, s, e, f"{kind} in {view.name} view"))
                    i = text.find(form, i + 1)
    return hits


_KEY_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_LINE = re.compile(r"[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z][\w-]*: [^\r\n]*)[ \t]*(?:\r\n|\r|\n|$)")
_B64_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")


def _key_bodies(view: View) -> list[tuple[int, int, str, str]]:
    """(start, end, label, body) of every private-key body in a view that still holds key material."""
    text = view.text
    found = []
    for m in _KEY_BEGIN.finditer(text):
        label = m.group(1)
        body_start = m.end()
        if nl := re.match(r"[ \t]*(?:\r\n|\r|\n)", text[body_start : body_start + 8]):
            body_start += nl.end()
        end = text.find(f"-----END {label}-----", body_start, body_start + 1_000_000)
        if end >= 0:
            body_end = end
        else:  # no END line (cut off): the PEM-looking lines that follow
            body_end = body_start
            while (pm := _PEM_LINE.match(text, body_end)) and pm.end() > body_end:
                body_end = pm.end()
        body = text[body_start:body_end]
        rest = body.replace(KEY_PLACEHOLDER, "").replace(PLACEHOLDER, "")
        if _B64_RUN.search(rest):
            found.append((body_start, body_end, label, body))
    return found


def _key_fingerprint(body: str) -> str:
    material = re.sub(r"\\[nrt]|[^A-Za-z0-9+/=]", "", body)
    return hashlib.sha256(material.encode()).hexdigest()


def _banner_lines(view: View, policy: MaskPolicy, stats: MaskStats) -> list[tuple[int, int]]:
    lines = list(_lines(view))
    commands = [re.compile(p) for p in policy.command_patterns]

    def is_command(line: str) -> bool:
        return any(c.search(line) for c in commands)

    hide: dict[int, str] = {}
    for rule in policy.banners:
        if rule.line:
            pattern = re.compile(rule.line)
            for n, (_, _, line) in enumerate(lines):
                if pattern.search(line) and not is_command(line):
                    hide.setdefault(n, rule.name)
        if rule.start and rule.end:
            start, end = re.compile(rule.start), re.compile(rule.end)
            contains = re.compile(rule.contains) if rule.contains else None
            n = 0
            while n < len(lines):
                if start.search(lines[n][2]):
                    last = next(
                        (k for k in range(n, min(len(lines), n + rule.max_lines)) if end.search(lines[k][2])),
                        None,
                    )
                    if last is not None:
                        block = range(n, last + 1)
                        if contains is None or any(contains.search(lines[k][2]) for k in block):
                            for k in block:
                                if not is_command(lines[k][2]):
                                    hide.setdefault(k, rule.name)
                            n = last + 1
                            continue
                n += 1
    spans = []
    for n in sorted(hide):
        a, b, _ = lines[n]
        spans.append(view.span(a, b))
        stats.banners.add(hide[n])
    stats.banner_lines_hidden += len(spans)
    return spans


# -- applying redactions to a chunked stream -----------------------------------------------------------


def _apply(chunks: Sequence[str], spans: Sequence[tuple[int, int, int]]) -> tuple[list[str], int]:
    """Redact spans (start, end, kind) of the concatenated chunks; return new chunks, credential runs."""
    text = "".join(chunks)
    flags = bytearray(len(text))
    for kind in (CRED, KEY, BANNER):  # later kinds win where spans overlap
        for s, e, k in spans:
            if k == kind and e > s:
                flags[s:e] = bytes([kind]) * (e - s)
    runs = []
    credential_runs = 0
    for m in re.finditer(rb"\x01+|\x02+|\x04+", bytes(flags)):
        s, e = m.span()
        kind = flags[s]
        if kind == BANNER:
            repl = ""
        else:
            newlines = "".join(ch for ch in text[s:e] if ch in "\r\n")
            repl = (PLACEHOLDER if kind == CRED else KEY_PLACEHOLDER) + newlines
            credential_runs += kind == CRED
        runs.append((s, e, repl))
    out: list[str] = []
    ri = 0
    a = 0
    for chunk in chunks:
        b = a + len(chunk)
        pieces = []
        p = a
        while p < b:
            while ri < len(runs) and runs[ri][1] <= p:
                ri += 1
            if ri < len(runs) and runs[ri][0] < b:
                rs, re_, repl = runs[ri]
                if rs > p:
                    pieces.append(text[p:rs])
                    p = rs
                if rs == p:
                    pieces.append(repl)
                p = min(re_, b)
            else:
                pieces.append(text[p:b])
                p = b
        out.append("".join(pieces))
        a = b
    return out, credential_runs


# -- the masking loop -----------------------------------------------------------------------------------


@dataclass
class _State:
    policy: MaskPolicy
    stats: MaskStats
    known: list[str]  # caller's values, then detected ones
    generated: list[str] = field(default_factory=list)  # base64 runs of redacted key bodies
    detector_cache: dict[str, frozenset] = field(default_factory=dict)  # line -> detector hits

    def add_known(self, values: Iterable[str]) -> None:
        for v in sorted(values):
            if v not in self.known and len(v) >= self.policy.min_secret_len:
                self.known.append(v)


def _findings(text: str, state: _State, banners: bool) -> tuple[list[tuple[int, int, int]], list[str]]:
    """Spans to redact in `text` and descriptions of what was found (no secret values)."""
    policy, stats = state.policy, state.stats
    views = _views(text)
    described: list[str] = []
    unique_lines: dict[str, None] = {}
    for view in views.lines:
        for _, _, line in _lines(view):
            unique_lines.setdefault(line, None)
    detected = _detect_values(unique_lines, policy, stats, state.detector_cache)
    new = detected - set(state.known)
    if new:
        described.append(f"{len(new)} token-shaped value(s) found by detectors")
    state.add_known(new)
    spans: list[tuple[int, int, int]] = []
    for idx, s, e, where in _find_forms(views, state.known):
        spans.append((s, e, CRED))
        described.append(f"known value #{idx} as {where}")
    if policy.redact_private_keys:
        for view in (views.l1, views.l2):
            for bs, be, label, body in _key_bodies(view):
                s, e = view.span(bs, be)
                spans.append((s, e, KEY))
                stats.add_key(KeyBlock(label, _key_fingerprint(body)))
                described.append(f"private key body ({label}) in {view.name} view")
                for run in _B64_RUN.findall(body.replace("\\n", "\n")):
                    if len(run) >= 24 and run not in state.generated:
                        state.generated.append(run)
    for idx, s, e, where in _find_forms(views, state.generated):
        spans.append((s, e, KEY))
        described.append(f"generated key material #{idx} as {where}")
    if banners and policy.banners:
        spans.extend((s, e, BANNER) for s, e in _banner_lines(views.l1, policy, stats))
    return spans, described


def _mask_stream(chunks: Sequence[str], state: _State, banners: bool) -> tuple[list[str], list[str]]:
    """Mask until a full scan finds nothing to redact (at most max_rounds); (chunks, remaining)."""
    stats = state.stats
    current = list(chunks)
    for round_no in range(state.policy.max_rounds):
        spans, described = _findings("".join(current), state, banners=banners and round_no == 0)
        stats.rounds = max(stats.rounds, round_no + 1)
        if not any(kind != BANNER for _, _, kind in spans):
            if spans:  # banners only
                current, _ = _apply(current, spans)
            return current, []
        current, creds = _apply(current, spans)
        stats.credentials_masked += creds
    return current, _verify(current, state)


def _verify(chunks: Sequence[str], state: _State) -> list[str]:
    """Findings left in a stream: every known value in every form, detectors, key bodies."""
    check = _State(state.policy, MaskStats(), list(state.known), list(state.generated), state.detector_cache)
    spans, described = _findings("".join(chunks), check, banners=False)
    return described if spans or described else []


def _new_state(secrets: Iterable[str], policy: MaskPolicy) -> _State:
    stats = MaskStats()
    return _State(policy, stats, _candidate_values(secrets, policy.min_secret_len, stats))


def mask_chunks(
    chunks: Sequence[str], secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY
) -> tuple[list[str], MaskStats, list[str]]:
    """Mask a stream given as consecutive chunks; returns (chunks, stats, remaining findings).

    Chunks keep their number and order; a redaction's placeholder goes into the chunk where the
    redaction starts. `remaining` is empty when the last full scan found nothing.
    """
    state = _new_state(secrets, policy)
    out, remaining = _mask_stream(chunks, state, banners=True)
    return out, state.stats, remaining


def find_leaks(text: str, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> list[str]:
    """What a served text still shows (descriptions only); empty means none of it is found."""
    return _verify([text], _new_state(secrets, policy))


# -- logs and recordings --------------------------------------------------------------------------------


def mask_text(
    text: str, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY
) -> tuple[str, MaskStats]:
    """Mask one text; raises MaskingError when it cannot be shown free of what it must not show."""
    chunks, stats, remaining = mask_chunks([text], secrets, policy)
    if remaining:
        raise MaskingError(_withhold_reason(remaining))
    return chunks[0], stats


def _withhold_reason(findings: list[str]) -> str:
    return "cannot be shown free of credentials: " + "; ".join(sorted(set(findings))[:5])


def mask_log(data: bytes, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> MaskResult:
    """A served copy of a plain-text log (bytes that are not UTF-8 are kept as they are)."""
    state = _new_state(secrets, policy)
    text = data.decode("utf-8", errors="surrogateescape")
    (masked,), remaining = _mask_stream([text], state, banners=True)
    served = masked.encode("utf-8", errors="surrogateescape")
    # The verification pass reads the bytes that will be served.
    remaining = remaining or _verify([served.decode("utf-8", errors="surrogateescape")], state)
    if remaining:
        return MaskResult(None, True, _withhold_reason(remaining), state.stats)
    return MaskResult(served, False, None, state.stats)


@dataclass
class Cast:
    header: dict
    events: list[list]  # [time, code, data]


def parse_cast(data: bytes) -> Cast:
    """Parse asciicast v2; MaskingError when it is not one."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise MaskingError(f"recording is not UTF-8: {err}") from None
    lines = text.split("\n")
    try:
        header = json.loads(lines[0])
    except (json.JSONDecodeError, IndexError) as err:
        raise MaskingError(f"recording header is not JSON: {err}") from None
    if not isinstance(header, dict) or header.get("version") != 2:
        raise MaskingError("recording is not asciicast v2 (header version)")
    events = []
    for n, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as err:
            raise MaskingError(f"recording line {n} is not JSON: {err}") from None
        if (
            not isinstance(event, list)
            or len(event) != 3
            or not isinstance(event[0], int | float)
            or isinstance(event[0], bool)
            or not isinstance(event[1], str)
            or not isinstance(event[2], str)
        ):
            raise MaskingError(f"recording line {n} is not an event [time, code, data]")
        events.append(event)
    return Cast(header, events)


def dump_cast(cast: Cast) -> bytes:
    lines = [json.dumps(cast.header, ensure_ascii=False)]
    lines += [json.dumps(e, ensure_ascii=False) for e in cast.events]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _header_strings(obj) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, list):
        return [s for v in obj for s in _header_strings(v)]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in (*_header_strings(k), *_header_strings(v))]
    return []


def _mask_header(obj, state: _State, findings: list[str]):
    """Mask every string inside a JSON value (the recording header); banners are not looked for."""
    if isinstance(obj, str):
        (masked,), remaining = _mask_stream([obj], state, banners=False)
        findings.extend(f"header: {f}" for f in remaining)
        return masked
    if isinstance(obj, list):
        return [_mask_header(v, state, findings) for v in obj]
    if isinstance(obj, dict):
        return {_mask_header(k, state, findings): _mask_header(v, state, findings) for k, v in obj.items()}
    return obj


def _streams(cast: Cast) -> dict[str, list[int]]:
    """Event indexes per event code, output ("o") first."""
    by_code: dict[str, list[int]] = {}
    for n, event in enumerate(cast.events):
        by_code.setdefault(event[1], []).append(n)
    return dict(sorted(by_code.items(), key=lambda kv: (kv[0] != "o", kv[0])))


def mask_recording(data: bytes, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> MaskResult:
    """A served copy of an asciicast v2 recording: same header keys and event times, masked data.

    Each event stream ("o" output, "i" input, "m" markers, ...) is masked as one concatenated text;
    banners are only looked for in the output stream. Values detected in one stream are masked in
    all of them and in the header.
    """
    state = _new_state(secrets, policy)
    try:
        cast = parse_cast(data)
    except MaskingError as err:
        return MaskResult(None, True, f"unparseable recording: {err}", state.stats)
    findings: list[str] = []
    events = [list(e) for e in cast.events]
    for code, indexes in _streams(cast).items():
        chunks, remaining = _mask_stream([cast.events[n][2] for n in indexes], state, banners=code == "o")
        findings.extend(f"{code!r} events: {f}" for f in remaining)
        for n, chunk in zip(indexes, chunks, strict=True):
            events[n][2] = chunk
    header = _mask_header(cast.header, state, findings)
    if findings:
        return MaskResult(None, True, _withhold_reason(findings), state.stats)
    served = dump_cast(Cast(header, events))
    leaks = _verify_cast(served, state)
    if leaks:
        return MaskResult(None, True, _withhold_reason(leaks), state.stats)
    return MaskResult(served, False, None, state.stats)


def _verify_cast(served: bytes, state: _State) -> list[str]:
    try:
        cast = parse_cast(served)
    except MaskingError as err:
        return [f"unparseable: {err}"]
    findings = []
    for code, indexes in _streams(cast).items():
        text = "".join(cast.events[n][2] for n in indexes)
        findings += [f"{code!r} events: {f}" for f in _verify([text], state)]
    for s in _header_strings(cast.header):
        findings += [f"header: {f}" for f in _verify([s], state)]
    return findings


def verify_recording(served: bytes, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> list[str]:
    """Findings in a serialised recording (empty: clean). Unparseable is a finding."""
    return _verify_cast(served, _new_state(secrets, policy))


def output_text(data: bytes) -> str:
    """The concatenated output stream of a recording (for tests and audits)."""
    return "".join(e[2] for e in parse_cast(data).events if e[1] == "o")


__all__ = [
    "DEFAULT_BANNERS",
    "DEFAULT_COMMAND_PATTERNS",
    "DEFAULT_POLICY",
    "KEY_PLACEHOLDER",
    "MASKING_VERSION",
    "PLACEHOLDER",
    "BannerRule",
    "KeyBlock",
    "MaskPolicy",
    "MaskResult",
    "MaskStats",
    "MaskingError",
    "build_view",
    "dump_cast",
    "find_leaks",
    "mask_chunks",
    "mask_log",
    "mask_recording",
    "mask_text",
    "output_text",
    "parse_cast",
    "secret_forms",
    "verify_recording",
]
