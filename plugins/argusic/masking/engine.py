"""The masking engine: a byte stream in windows → what to redact → a redacted stream, in rounds.

One *round* reads its input once, window by window (`WINDOW` raw bytes, the next window starting
`OVERLAP` characters of the stripped view before the end of the last one, so a secret cut by a window
boundary is whole in the next window however many escape bytes surround it), finds everything to
redact, and writes the redacted output as it goes: memory stays at a few windows whatever the input's
size. A round's finders (`scan_window`):

* token formats (the rule catalogue, `rules.py`) on every view; line rules on the views that keep
  line breaks; each hit masked in place and its value added to the known values;
* base64 and hex runs decoded and the rules run inside them (a token that only appears encoded);
* every known value (the caller's, then every detected one) in every form (plain, base64 at the three
  byte alignments, standard and url-safe, hex in both cases) on every view, so also URL-encoded,
  JSON-escaped, split by escapes or wrapped at any width;
* private-key bodies (markers kept), and the key material again wherever else it is printed;
* high-entropy text left next to a masked span (the signature of a JWT whose start was masked);
* vendor banner lines (first round only; a command line is never hidden).

Rounds repeat on their own output until one finds nothing to redact: that round is the verification
of the served bytes, and it does not rely only on the finders that produced them (known values in
every form and survivors next to masked spans are checked too). After `max_rounds` the copy is
withheld. A round over a file bigger than a segment (`stream.SEGMENT`) runs segment by segment, each
segment read with `CONTEXT` bytes around it and written only for its own range (`run_round`'s
`start`/`stop`), so segments can run in parallel processes.
"""

from __future__ import annotations

import binascii
import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import BinaryIO

import numpy as np

from argusic.masking.banners import Banners, banner_spans
from argusic.masking.policy import KEY_PLACEHOLDER, PLACEHOLDER, KeyBlock, MaskPolicy, MaskStats
from argusic.masking.rules import LINE, CompiledRules, Rule, compiled
from argusic.masking.values import STANDARD_ALPHABET, KnownValues
from argusic.masking.views import View, Views, maximal_runs, run_table

CRED, KEY, BANNER = 1, 2, 4
WINDOW = 4 << 20  # raw bytes per window
MAX_WINDOW = 32 << 20  # a window grows up to this when escapes leave too few visible characters
OVERLAP = 64 << 10  # stripped-view characters shared by consecutive windows
READ_CHUNK = 1 << 20

_PLACEHOLDER = PLACEHOLDER.encode()
_KEY_PLACEHOLDER = KEY_PLACEHOLDER.encode()

# -- value heuristics --------------------------------------------------------------------------------------

_PLACEHOLDERS = (_PLACEHOLDER, _KEY_PLACEHOLDER)
_PUNCT = re.compile(rb"[\s\"'`\[\](){}<>,;:=]")
_TEMPLATED = re.compile(
    rb"\$[A-Za-z_][A-Za-z0-9_]*|\$\{[^}]*\}|\$\([^)]*\)|\{\{.*\}\}|\{%.*%\}|<[^>]*>|%[A-Za-z_][A-Za-z0-9_]*%"
    rb"|\*+|x+|X+|\.+|-+|_+|#+|\?+"
)
_NO_VALUE_WORDS = frozenset(
    {b"none", b"null", b"nil", b"true", b"false", b"undefined", b"''", b'""', b"[]", b"{}", b"n/a"}
)
_REFERENCE = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+|[A-Za-z_][A-Za-z0-9_]*\[.*\]")


def is_placeholder_only(value: bytes) -> bool:
    rest = value
    for p in _PLACEHOLDERS:
        rest = rest.replace(p, b"")
    return len(_PUNCT.sub(b"", rest)) < 4 if rest != value else False


def looks_like_no_value(value: bytes, code: bool = False) -> bool:
    """A template, a literal like `null`, masking's own placeholder: not a credential. In code
    (`name = value`, unquoted), a reference to something else (`self.password`) is not one either;
    elsewhere `X=GW.vsQFz9` is a literal and is masked."""
    v = value.strip()
    if not v or v.lower() in _NO_VALUE_WORDS:
        return True
    if any(p in v for p in _PLACEHOLDERS):
        return True
    return bool(_TEMPLATED.fullmatch(v) or (code and _REFERENCE.fullmatch(v)))


_CODE_ASSIGNMENT = re.compile(rb"\s=|=\s")


def entropy(data: bytes) -> float:
    """Shannon entropy in bits per byte."""
    if not data:
        return 0.0
    n = len(data)
    return -sum(c / n * math.log2(c / n) for c in Counter(data).values())


# -- spans of a rule match ---------------------------------------------------------------------------------

_HEAD_CONTEXT = re.compile(rb"[=:\s\"'`,>|]")
_TOKEN_CHAR = re.compile(rb"[A-Za-z0-9]")
_TERMINATORS = b" \t\r\n'\"`;,)>}]#"
_QUOTES = b"'\"`"
_SECRET_GROUP_NAME = re.compile(r"(?i)(?:^|_)(?:password|passwd|secret|token)$")


def match_spans(data: bytes, m, rule: Rule, names: dict[int, str], groups: int) -> list[tuple[int, int]]:
    """The spans of a match to mask in place (a rule's value groups; otherwise a uniform reading of a
    gitleaks-style rule: secret-named groups, else the last outermost group widened to the token)."""
    if rule.reject_group and m.span(rule.reject_group)[0] >= 0:
        return []
    if rule.value_groups:
        return [m.span(g) for g in rule.value_groups if m.span(g)[0] >= 0]
    ms, me = m.span()
    parts = [(*m.span(g), g) for g in range(1, groups + 1)]
    parts = [(s, e, g) for s, e, g in parts if s >= 0 and e > s]
    if not parts:
        s, e = ms, me
        while e > s and data[e - 1] in _TERMINATORS:
            e -= 1
        while s < e and data[s] in _QUOTES:
            s += 1
        return [(s, e)]

    def inside(a, b) -> bool:  # a strictly inside b
        return b[0] <= a[0] and a[1] <= b[1] and (a[0], a[1]) != (b[0], b[1])

    leaves = [p for p in parts if not any(inside(q, p) for q in parts)]
    named = [(s, e) for s, e, g in leaves if _SECRET_GROUP_NAME.search(names.get(g, "") or "")]
    if named:
        return named
    outer = [p for p in parts if not any(inside(p, q) for q in parts)]
    s, e, _ = max(outer, key=lambda p: (p[0], p[1]))
    if not _HEAD_CONTEXT.search(data, ms, s):
        s = ms
    if _TOKEN_CHAR.search(data, e, me):
        e = me
    while e > s + 1 and data[e - 1] in _TERMINATORS:  # a delimiter the rule consumed
        e -= 1
    return [(s, e)]


# -- private keys ------------------------------------------------------------------------------------------

_KEY_BEGIN = re.compile(rb"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----")
_PEM_LINE = re.compile(rb"[ \t]*(?:[A-Za-z0-9+/=]{8,}|[A-Za-z][\w-]*: [^\r\n]*)[ \t]*(?:\r\n|\r|\n|$)")
_KEY_RUN = re.compile(rb"[A-Za-z0-9+/=]{16,}")
_LEADING_BREAK = re.compile(rb"[ \t]*(?:\r\n|\r|\n)")


def _key_fingerprint(body: bytes) -> str:
    material = re.sub(rb"\\[nrt]|[^A-Za-z0-9+/=]", b"", body)
    return hashlib.sha256(material).hexdigest()


def _has_key_material(body: bytes) -> bool:
    rest = body.replace(_KEY_PLACEHOLDER, b"").replace(_PLACEHOLDER, b"")
    return _KEY_RUN.search(rest) is not None


def _pem_end(data: bytes, start: int) -> int:
    end = start
    while (pm := _PEM_LINE.match(data, end)) and pm.end() > end:
        end = pm.end()
    return end


# -- the state of one masking job --------------------------------------------------------------------------


@dataclass
class MaskState:
    """What one masking job knows: policy, compiled rules, known values, statistics, findings."""

    policy: MaskPolicy
    stats: MaskStats = field(default_factory=MaskStats)
    rules: CompiledRules | None = None
    known: KnownValues | None = None
    generated: KnownValues | None = None
    banners: Banners | None = None
    findings: dict[str, None] = field(default_factory=dict)  # of the current round (no secret values)
    key_carry: tuple[bytes, int] | None = None  # (label, body start) of a key body cut by a window end

    def __post_init__(self) -> None:
        self.rules = self.rules or compiled(self.policy.rules())
        self.known = self.known or KnownValues(self.policy.max_known_values, "known value")
        self.generated = self.generated or KnownValues(self.policy.max_known_values, "generated key material")
        self.banners = self.banners or Banners.of(self.policy)

    @classmethod
    def for_secrets(cls, secrets: Iterable[str], policy: MaskPolicy) -> MaskState:
        state = cls(policy)
        for value in candidate_values(secrets, policy.min_secret_len, state.stats):
            state.known.add(value)
        return state

    def add_value(self, value: bytes, *, soft: bool = False) -> None:
        """A detected value: masked everywhere from now on when long enough to be told apart.

        Values of context rules (assignments, quoted high-entropy strings, survivors) stop being
        added past `max_soft_values` (they are still masked where they are found): a log full of
        `key=...` lines must not fill the known values. Past `max_known_values` the copy is withheld."""
        value = value.strip()
        if len(value) < self.policy.min_secret_len or is_placeholder_only(value) or value in self.known.index:
            return
        if value.translate(None, _CONTROL_BYTES) != value:
            return  # control bytes: decoded garbage, not a value printed anywhere (masked where found)
        if soft and len(self.known) >= self.policy.max_soft_values:
            self.stats.values_not_tracked += 1
            return
        self.known.add(value)

    @property
    def overflow(self) -> bool:
        return self.known.overflow or self.generated.overflow


_CONTROL_BYTES = bytes([*range(32), 127])


def candidate_values(secrets: Iterable[str], min_len: int, stats: MaskStats) -> list[bytes]:
    """The caller's values (and each line of a multi-line one), UTF-8; short ones counted, not used."""
    values: list[bytes] = []
    for secret in secrets:
        if not isinstance(secret, str):
            continue
        parts = {secret, secret.strip(), *(line.strip() for line in secret.splitlines())}
        for part in sorted(parts):
            if not part:
                continue
            if len(part) < min_len:
                if part == secret.strip():
                    stats.ignored_short_values += 1
                continue
            raw = part.encode("utf-8", "surrogatepass")
            if raw not in values:
                values.append(raw)
    return values


# -- one window ---------------------------------------------------------------------------------------------

B64_MIN_RUN = 24  # base64 of 18 bytes: shorter tokens are not worth the cost
HEX_MIN_RUN = 32


_B64_TABLE = run_table(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_HEX_TABLE = run_table(b"0123456789abcdefABCDEF")


def decoded_runs(data: bytes) -> bytes:
    """Every base64 run (4 alignments, standard or url-safe) and hex run (2 alignments), decoded,
    one decoding per alignment for all runs at once (each run padded to whole quanta and ended
    by zero bytes, so runs never run into each other).

    A run is a maximal run of at least `B64_MIN_RUN` base64 characters (`HEX_MIN_RUN` hex digits):
    what the greedy `[A-Za-z0-9+/_\\-]{24,}` / `[0-9a-fA-F]{32,}` find, located with one `translate`
    and one numpy comparison (`maximal_runs`) rather than a Hyperscan match and a regex per run
    (`test_decoded_runs_are_the_greedy_runs_decoded` compares it with the regex definition)."""
    # Base64 of text always holds capitals (each 3-byte group starts with I-Z for any byte below
    # 'h'); runs of hex digits are decoded as hex only (they are every hash in a log).
    runs = maximal_runs(data, _B64_TABLE, B64_MIN_RUN)
    b64 = [r for r in runs if r.translate(None, _NOT_CAPITALS) and r.translate(None, _HEX_DIGITS)]
    # Hex digits are base64 characters: a run of HEX_MIN_RUN (>= B64_MIN_RUN) hex digits lies in a
    # base64 run, so the hex runs of the base64 runs (one byte apart) are the hex runs of the text.
    hexes = maximal_runs(b"\n".join(r for r in runs if len(r) >= HEX_MIN_RUN), _HEX_TABLE, HEX_MIN_RUN)
    out: list[bytes] = []
    if b64:
        # Each run padded to whole quanta plus one zero quantum; alignment k = k characters
        # skipped = (4 - k) % 4 filler characters before each run and k after it.
        standard = b"\n".join(b64).translate(STANDARD_ALPHABET).split(b"\n")
        runs = [r + b"A" * (-len(r) % 4 + 4) for r in standard]
        for k in range(4):
            before, after = b"A" * ((4 - k) % 4), b"A" * k
            out.append(binascii.a2b_base64(before + (after + before).join(runs) + after))
    if hexes:
        runs = [r + b"0" * (len(r) % 2 + 4) for r in hexes]
        out.append(binascii.unhexlify(b"".join(runs)))
        out.append(binascii.unhexlify(b"0" + b"00".join(runs) + b"0"))
    return b"\n".join(out)


_HEX_DIGITS = b"0123456789abcdefABCDEF"
_NOT_CAPITALS = bytes(b for b in range(256) if not 65 <= b <= 90)


def _continues_token(tail: bytes) -> bool:
    """Whether text at the start of the next line reads as the rest of a wrapped token (mixed
    letters and digits, or inner capitals) rather than a word or a command of its own."""
    tail = tail.strip(_TERMINATORS)
    if len(tail) < 6:
        return False
    digit = any(48 <= c <= 57 for c in tail)
    lower = any(97 <= c <= 122 for c in tail)
    inner_upper = any(65 <= c <= 90 for c in tail[1:])
    letter = lower or inner_upper or 65 <= tail[0] <= 90
    return (digit and letter) or (lower and inner_upper)


class _Shifted:
    """A match found in a slice, with spans moved back to the offsets of the whole text."""

    def __init__(self, match, offset: int) -> None:
        self.match, self.offset = match, offset

    def span(self, group: int = 0) -> tuple[int, int]:
        s, e = self.match.span(group)
        return (s + self.offset, e + self.offset) if s >= 0 else (s, e)

    def start(self, group: int = 0) -> int:
        return self.span(group)[0]

    def end(self, group: int = 0) -> int:
        return self.span(group)[1]


def _break_inside(view: View, start: int, end: int) -> int | None:
    """Last offset in (start, end) of a joined view where a removed line break was, or None."""
    vstart = view.map.segment_starts()
    k = int(np.searchsorted(vstart, end, side="left")) - 1
    if k >= 1 and vstart[k] > start:
        return int(vstart[k])
    return None


def _matches_in(confirmer, data: bytes, ranges: list[tuple[int, int]]):
    """Matches of a rule within the ranges where it may match (a match cut by a range's end is
    taken again whole from its start)."""
    size = len(data)
    for start, end in ranges:
        for m in confirmer.regex.finditer(data, start, end):
            ms, me = m.span()
            if me == end < size and ms < end:
                m = confirmer.regex.match(data, ms) or m
            yield m


def _in_placeholder(data: bytes, s: int, e: int) -> bool:
    """Whether [s, e) is part of masking's own placeholder text (a rule that matches `masked`)."""
    for placeholder in _PLACEHOLDERS:
        at = data.find(placeholder, max(0, s - len(placeholder)), e + len(placeholder))
        if at >= 0 and at < e and s < at + len(placeholder) and at <= s and e <= at + len(placeholder):
            return True
    return False


def _code_assignment(data: bytes, m, rule: Rule, value_start: int) -> bool:
    """An unquoted value after `=` with a space around it (`token = config.token`): code."""
    if not rule.value_groups or m.span(rule.value_groups[-1])[0] != value_start:
        return False  # quoted, or not an assignment rule
    return _CODE_ASSIGNMENT.search(data, m.end(1), value_start) is not None


def _rule_hits(data: bytes, state: MaskState, line_view: bool, joined: View | None = None):
    """(rule, spans, match span) for every confirmed match of every candidate rule in `data`.

    A match that runs over line breaks (removed, in a joined view) is read as a wrapped token, unless
    its text up to the last break already matches alone and what follows on the last line does not
    read as the rest of a token (a token at the end of a line, then a word: the word is not masked)."""
    rules = state.rules
    for idx, ranges in sorted(rules.candidate_ranges(data, line_view=line_view).items()):
        rule = rules.rules[idx]
        if rule.kind == LINE and not line_view:
            continue
        confirmer = rules.confirmers[idx]
        for m in _matches_in(confirmer, data, ranges):
            ms, me = m.span()  # once: each call of the RE2 wrapper's Match costs a few checks
            if joined is not None:
                brk = _break_inside(joined, ms, me)
            else:
                last = max(data.rfind(b"\n", ms, me), data.rfind(b"\r", ms, me))
                if last > ms and data[last - 1 : last + 1] == b"\r\n":
                    last -= 1
                brk = last if last > ms else None
            if brk is not None:
                # The text before the last line break alone (RE2 reads past an `endpos` for `$`).
                first = confirmer.regex.match(data[ms:brk])
                if first is not None and not _continues_token(data[ms + first.end() : me]):
                    m = _Shifted(first, ms)
            spans = []
            for s, e in match_spans(data, m, rule, confirmer.names, confirmer.groups):
                value = data[s:e]
                # Every test below only drops a span: the cheapest, which drops most (a quoted hash
                # in a JSON log line has too little entropy), goes first.
                if rule.min_entropy and (
                    len(value) < 2**rule.min_entropy  # cannot reach it: fewer distinct bytes than needed
                    or not value.translate(None, _HEX_DIGITS)  # hex digits: at most 4 bits a byte
                    or entropy(value) <= rule.min_entropy
                ):
                    continue
                if not value or is_placeholder_only(value) or _in_placeholder(data, s, e):
                    continue
                if rule.soft and looks_like_no_value(value, _code_assignment(data, m, rule, s)):
                    continue
                spans.append((s, e))
            if spans:
                yield rule, spans, m.span()


_TOKEN_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_=.-"
_JOINERS = b"._~+/=:-"
_PLACEHOLDER_RE = re.compile(re.escape(_PLACEHOLDER) + b"|" + re.escape(_KEY_PLACEHOLDER))
SURVIVOR_MIN = 16
SURVIVOR_ENTROPY = 3.5


def _survivor(run: bytes) -> bool:
    classes = sum(1 for lo, hi in ((97, 122), (65, 90), (48, 57)) if any(lo <= c <= hi for c in run))
    return len(run) >= SURVIVOR_MIN and classes >= 2 and entropy(run) >= SURVIVOR_ENTROPY


def _survivor_spans(view: View) -> list[tuple[int, int]]:
    """High-entropy text glued to a placeholder (e.g. `[masked].SflKxwRJSMeKKF2QT4fw...`)."""
    data = view.data
    spans = []
    if _PLACEHOLDER not in data and _KEY_PLACEHOLDER not in data:
        return spans
    for m in _PLACEHOLDER_RE.finditer(data):
        s, e = m.span()
        after = data[e : e + 4096]
        start = 1 if after[:1] and after[0] in _JOINERS else 0
        rest = after[start:].lstrip(_TOKEN_BYTES)
        run = after[start : len(after) - len(rest)]
        if _survivor(run):
            spans.append((e + start, e + start + len(run)))
        before = data[max(0, s - 4096) : s]
        end = len(before) - 1 if before[-1:] and before[-1] in _JOINERS else len(before)
        head = before[:end].rstrip(_TOKEN_BYTES)
        run = before[len(head) : end]
        if _survivor(run):
            spans.append((s - len(before) + len(head), s - len(before) + end))
    return spans


def scan_window(views: Views, pos: int, state: MaskState, *, banners: bool, at_eof: bool) -> list[tuple]:
    """Spans (start, end, kind) of a window (offsets in the window) to redact; detected values join
    the known values. `pos` is the window's offset in the stream."""
    policy, stats = state.policy, state.stats
    distinct = views.all()
    line_names = {"stripped", "decoded", "escapes", "typed"}
    found: dict[int, tuple[View, list[tuple[int, int, int]]]] = {}  # per view: (start, end, kind)
    described = state.findings

    def add(view: View, s: int, e: int, kind: int) -> None:
        found.setdefault(id(view), (view, []))[1].append((s, e, kind))

    for view in distinct:
        joined = view if view.name in ("joined", "decoded-joined") else None
        for rule, rule_spans, _ in _rule_hits(view.data, state, view.name in line_names, joined):
            stats.detector_types.add(rule.id)
            described[f"token format {rule.id} in {view.name} view"] = None
            for s, e in rule_spans:
                add(view, s, e, CRED)
                state.add_value(view.data[s:e], soft=rule.soft)

    if policy.decode_encoded_runs:
        for view in (views.joined, views.decoded_joined):
            if view is None:
                continue
            blob = decoded_runs(view.data)
            for rule, rule_spans, (ms, me) in _rule_hits(blob, state, line_view=True):
                stats.detector_types.add(rule.id)
                described[f"token format {rule.id} inside an encoded run in {view.name} view"] = None
                for s, e in rule_spans:
                    state.add_value(blob[s:e], soft=rule.soft)
                # Nothing can be masked in place inside the encoding: the whole match is a value too
                # (a credential URL whose password is too short to be one on its own).
                state.add_value(blob[ms:me], soft=rule.soft)

    if policy.redact_private_keys:
        carry_in, carry_out = state.key_carry, None
        if carry_in is not None and carry_in[1] >= pos:
            carry_in = None  # its BEGIN line is in this window: found again from there
        for view in views.line_views():
            if view.name not in ("stripped", "decoded"):
                continue
            bodies, carry = _key_bodies(view.data, carry_in[0] if carry_in else None, at_eof)
            for s, e, label, body in bodies:
                add(view, s, e, KEY)
                stats.add_key(KeyBlock(label.decode(), _key_fingerprint(body)))
                described[f"private key body ({label.decode()}) in {view.name} view"] = None
                for run in _KEY_RUN.findall(body.replace(b"\\n", b"\n")):
                    if len(run) >= 24:
                        state.generated.add(run)
                if carry is not None and carry_out is None:
                    carry_out = (carry, carry_in[1] if carry_in and s == 0 else pos + view.raw_span(s, e)[0])
        state.key_carry = carry_out

    # A value within a line of the stripped view is also in the joined one: joined views suffice
    # (and the escapes' text and what was typed before it was rubbed out).
    literal_views = [v for v in distinct if v.name not in ("stripped", "decoded")]
    for values, kind in ((state.known, CRED), (state.generated, KEY)):
        if not len(values):
            continue
        for view in literal_views:
            for s, e, idx, form in values.scan(view.data):
                add(view, s, e, kind)
                described[f"{values.label} #{idx} as {form} in {view.name} view"] = None

    for view in views.line_views():
        for s, e in _survivor_spans(view):
            add(view, s, e, CRED)
            described[f"high-entropy text next to a masked span in {view.name} view"] = None
            state.add_value(view.data[s:e], soft=True)

    spans: list[tuple[int, int, int]] = []
    for view, items in found.values():
        raw = view.raw_spans([(s, e) for s, e, _ in items])
        spans.extend((rs, re_, kind) for (rs, re_), (_, _, kind) in zip(raw, items, strict=True))
    if banners and policy.banners:
        spans.extend((s, e, BANNER) for s, e in banner_spans(views.stripped, state.banners, stats))
    return spans


def _key_bodies(
    data: bytes, carry: bytes | None, at_eof: bool
) -> tuple[list[tuple[int, int, bytes, bytes]], bytes | None]:
    """(start, end, label, body) of every private-key body in a view that still holds key material,
    and the label of a body cut by the end of the view (it goes on in the next window)."""
    found = []
    carry_out = None
    starts: list[tuple[int, bytes]] = [(0, carry)] if carry is not None else []
    for m in _KEY_BEGIN.finditer(data):
        body_start = m.end()
        if nl := _LEADING_BREAK.match(data, body_start):
            body_start = nl.end()
        starts.append((body_start, m.group(1)))
    for body_start, label in starts:
        end = data.find(b"-----END " + label + b"-----", body_start, body_start + 1_000_000)
        body_end = end if end >= 0 else _pem_end(data, body_start)
        if end < 0 and body_end >= len(data) and not at_eof:
            carry_out = label
        body = data[body_start:body_end]
        if _has_key_material(body):
            found.append((body_start, body_end, label, body))
    return found, carry_out


# -- applying redactions ----------------------------------------------------------------------------------


def _clusters(spans: list[tuple[int, int, int]]) -> list[tuple[int, int, list[tuple[int, int, int]]]]:
    """Spans grouped where they overlap or touch: (start, end, members), sorted."""
    out: list[tuple[int, int, list]] = []
    for s, e, k in sorted(spans):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            cs, ce, members = out[-1]
            members.append((s, e, k))
            out[-1] = (cs, max(ce, e), members)
        else:
            out.append((s, e, [(s, e, k)]))
    return out


_RUNS = re.compile(rb"\x01+|\x02+|\x04+")
_SEPARATOR_BYTES = re.compile(rb"[\r\n\xff]")


def _replacement(kind: int, covered: bytes, continuation: bool) -> bytes:
    """A hidden banner line leaves nothing (but its recording-event boundaries); a redaction leaves
    its placeholder (unless it continues the previous one) and the line breaks it covered."""
    if kind == BANNER:
        return b"\xff" * covered.count(b"\xff")
    kept = b"".join(_SEPARATOR_BYTES.findall(covered))
    if continuation:
        return kept
    return (_PLACEHOLDER if kind == CRED else _KEY_PLACEHOLDER) + kept


class _Writer:
    """Writes a round's output: raw bytes with the redactions applied, in order, from `start`."""

    def __init__(self, dst: BinaryIO | None, stats: MaskStats, start: int = 0) -> None:
        self.dst = dst
        self.stats = stats
        self.written = start  # raw offset up to which output is final

    def emit(
        self,
        buf: bytes,
        buf_start: int,
        upto: int,
        pending: list[tuple[int, int, int]],
        limit: int | None = None,
    ) -> list:
        """Write raw [written, upto) with the spans that start before `upto` (cut at `limit`, the end
        of this writer's segment); return the spans that start later.

        A redaction that began before `written` (written already, by this writer or by the previous
        segment's) is continued without a second placeholder."""
        later = [sp for sp in pending if sp[0] >= upto]
        now = [sp for sp in pending if sp[0] < upto and sp[1] > self.written]
        for cs, ce, members in _clusters(now):
            start_at = max(cs, self.written)
            end_at = ce if limit is None else min(ce, limit)
            if end_at <= start_at:
                continue
            if start_at > self.written:
                self._write(buf, buf_start, self.written, start_at)
            flags = bytearray(end_at - start_at)
            for kind in (CRED, KEY, BANNER):  # later kinds win where spans overlap
                for s, e, k in members:
                    if k == kind:
                        a, b = max(s, start_at) - start_at, min(e, end_at) - start_at
                        if b > a:
                            flags[a:b] = bytes([kind]) * (b - a)
            for m in _RUNS.finditer(bytes(flags)):
                a, b = m.span()
                kind = flags[a]
                continuation = a == 0 and cs < start_at
                covered = buf[start_at + a - buf_start : start_at + b - buf_start]
                if self.dst is not None:
                    self.dst.write(_replacement(kind, covered, continuation))
                if kind == CRED and not continuation:
                    self.stats.credentials_masked += 1
                self.written = start_at + b
        if upto > self.written:
            self._write(buf, buf_start, self.written, upto)
        return later

    def _write(self, buf: bytes, buf_start: int, a: int, b: int) -> None:
        if self.dst is not None and b > a:
            self.dst.write(buf[a - buf_start : b - buf_start])
        self.written = b


@dataclass
class RoundReport:
    redactions: int = 0  # credential and key spans found (in the round's own range)
    banner_spans: int = 0
    size_in: int = 0


CONTEXT = 1 << 20  # raw bytes read before and after a segment so that spans crossing its ends are found


def run_round(
    src: BinaryIO,
    dst: BinaryIO | None,
    state: MaskState,
    *,
    banners: bool,
    start: int = 0,
    stop: int | None = None,
) -> RoundReport:
    """One pass over `src` (or its segment [start, stop), read with CONTEXT bytes around it): find
    and (when `dst` is given) write the redacted bytes of the segment."""
    report = RoundReport()
    state.findings = {}
    state.key_carry = None
    pos = max(0, start - CONTEXT)
    if pos:
        src.seek(pos)
    buf = bytearray()
    buf_start = pos
    eof = False
    size = WINDOW
    pending: list[tuple[int, int, int]] = []
    writer = _Writer(dst, state.stats, start)
    while True:
        while not eof and buf_start + len(buf) < pos + size:
            chunk = src.read(max(READ_CHUNK, pos + size - buf_start - len(buf)))
            if not chunk:
                eof = True
                break
            buf += chunk
        end = min(buf_start + len(buf), pos + size)
        at_eof = eof and end == buf_start + len(buf)
        views = Views(bytes(buf[pos - buf_start : end - buf_start]))
        next_pos = None
        if not at_eof:
            next_pos = _next_window_start(views, pos, size)
            if next_pos is None:  # too few visible characters: grow the window and look again
                size *= 2
                continue
        spans = scan_window(views, pos, state, banners=banners, at_eof=at_eof)
        del views
        for s, e, k in spans:
            if pos + e > start and (stop is None or pos + s < stop):
                if k == BANNER:
                    report.banner_spans += 1
                else:
                    report.redactions += 1
        pending.extend((pos + s, pos + e, k) for s, e, k in spans)
        last = at_eof or (stop is not None and end >= stop + CONTEXT)
        if last:
            final = end if stop is None else min(end, stop)
            writer.emit(buf, buf_start, final, pending, stop)
            report.size_in = final - start
            return report
        upto = next_pos if stop is None else min(next_pos, stop)
        pending = writer.emit(buf, buf_start, upto, pending, stop)
        cut = min(writer.written, next_pos) - buf_start
        if cut > 0:
            del buf[:cut]
            buf_start += cut
        pos = next_pos
        size = WINDOW


def _next_window_start(views: Views, pos: int, size: int) -> int | None:
    """Where the next window starts: OVERLAP stripped-view characters before this one's end."""
    stripped = views.stripped
    if len(stripped.data) > 2 * OVERLAP:
        return pos + stripped.raw_offset(len(stripped.data) - OVERLAP)
    if size < MAX_WINDOW:
        return None
    return pos + size // 2  # an escape flood: move on (documented limit)
