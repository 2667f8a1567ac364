"""Vendor start-up banners: lines and boxes hidden from served copies, command lines never.

Banner rules (`policy.BannerRule`) are Python regular expressions matched against one line of the
stripped view. A Hyperscan prefilter of every rule (UTF-8, multi-line) skips the many windows where
no banner can start; only windows that may hold one are decoded and read line by line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

import hyperscan

from argusic.masking.policy import BannerRule, MaskPolicy, MaskStats
from argusic.masking.rules import scan
from argusic.masking.views import View


@dataclass
class Banners:
    """A policy's banner rules, compiled."""

    line_rules: list[tuple[str, re.Pattern, re.Pattern]]  # (name, whole-text finder, line pattern)
    # (name, whole-text finder, line pattern, value pattern): only the value's group "v" is hidden
    value_rules: list[tuple[str, re.Pattern, re.Pattern, re.Pattern]]
    box_rules: list[tuple[BannerRule, re.Pattern, re.Pattern, re.Pattern, re.Pattern | None]]
    commands: list[re.Pattern]
    prefilter: object | None  # a Hyperscan database of every line and box-start pattern, if they compile

    @classmethod
    def of(cls, policy: MaskPolicy) -> Banners:
        """The policy's banners compiled, once per process and policy (compiling the Hyperscan
        prefilter took 18 ms, most of what masking a short log cost). Read-only once made: `scan`
        gives each thread its own scratch space."""
        return _compiled_banners(policy.banners, policy.command_patterns)

    @classmethod
    def compile(cls, banners: tuple[BannerRule, ...], command_patterns: tuple[str, ...]) -> Banners:
        line_rules, value_rules, box_rules, firsts = [], [], [], []
        for rule in banners:
            if rule.line and rule.value:
                finder, pattern = re.compile(rule.line, re.M), re.compile(rule.line)
                value_rules.append((rule.name, finder, pattern, re.compile(rule.value)))
                firsts.append(rule.line)
            elif rule.line:
                line_rules.append((rule.name, re.compile(rule.line, re.M), re.compile(rule.line)))
                firsts.append(rule.line)
            if rule.start and rule.end:
                contains = re.compile(rule.contains) if rule.contains else None
                start = re.compile(rule.start)
                box_rules.append((rule, re.compile(rule.start, re.M), start, re.compile(rule.end), contains))
                firsts.append(rule.start)
        commands = [re.compile(p) for p in command_patterns]
        return cls(line_rules, value_rules, box_rules, commands, _prefilter(firsts))

    def maybe_in(self, data: bytes) -> bool:
        """False when no banner can start in `data` (most windows): the line-by-line work is skipped."""
        if self.prefilter is None:
            return True
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:  # Hyperscan's UTF-8 mode needs valid UTF-8
            data = data.decode("utf-8", "replace").encode("utf-8")
        found = []
        scan(self.prefilter, data, lambda *args: found.append(1))
        return bool(found)

    def is_command(self, line: str) -> bool:
        return any(c.search(line) for c in self.commands)


@lru_cache(maxsize=16)
def _compiled_banners(banners: tuple[BannerRule, ...], command_patterns: tuple[str, ...]) -> Banners:
    return Banners.compile(banners, command_patterns)


def _prefilter(patterns: list[str]):
    """A Hyperscan database (UTF-8, multi-line) of Python patterns, or None if one does not compile."""
    if not patterns:
        return None
    flags = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SINGLEMATCH
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(
            expressions=[p.encode() for p in patterns],
            ids=list(range(len(patterns))),
            flags=[flags | hyperscan.HS_FLAG_PREFILTER] * len(patterns),
        )
        return db
    except hyperscan.error:
        return None


class _Lines:
    """Lines of a text around given positions, with byte offsets (computed incrementally)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._char = 0
        self._byte = 0

    def bounds(self, pos: int) -> tuple[int, int]:
        """(start, end-including-break) of the line holding char `pos`."""
        text = self.text
        start = max(text.rfind("\n", 0, pos), text.rfind("\r", 0, pos)) + 1
        ends = [i for i in (text.find("\n", pos), text.find("\r", pos)) if i >= 0]
        end = min(ends) if ends else len(text)
        if text.startswith("\r\n", end):
            end += 2
        elif end < len(text):
            end += 1
        return start, end

    def line(self, start: int, end: int) -> str:
        return self.text[start:end].rstrip("\r\n")

    def next_line(self, end: int) -> tuple[int, int] | None:
        return self.bounds(end) if end < len(self.text) else None

    def byte_offset(self, char: int) -> int:
        """Byte offset of a char offset; calls must come in non-decreasing order (else recomputed)."""
        if char < self._char:
            self._char, self._byte = 0, 0
        self._byte += len(self.text[self._char : char].encode("utf-8", "surrogateescape"))
        self._char = char
        return self._byte


def banner_spans(view: View, banners: Banners, stats: MaskStats) -> list[tuple[int, int]]:
    if not banners.maybe_in(view.data):
        return []
    text = view.data.decode("utf-8", "surrogateescape")
    lines = _Lines(text)
    hide: dict[int, tuple[int, str]] = {}  # line start (char) -> (line end, rule name)
    for name, finder, pattern in banners.line_rules:
        for m in finder.finditer(text):
            # A match of `^\s*...` may start on blank lines above: the line is the one it ends on.
            start, end = lines.bounds(max(m.start(), m.end() - 1))
            if start in hide:
                continue
            # The whole-text finder may have crossed a line break: check the line itself.
            line = lines.line(start, end)
            if pattern.search(line) and not banners.is_command(line):
                hide[start] = (end, name)
    for rule, finder, start_re, end_re, contains in banners.box_rules:
        for m in finder.finditer(text):
            first = lines.bounds(max(m.start(), m.end() - 1))
            if first[0] in hide or not start_re.search(lines.line(*first)):
                continue
            box = [first]
            found_end = False
            while len(box) < rule.max_lines:
                if end_re.search(lines.line(*box[-1])):
                    found_end = True
                    break
                nxt = lines.next_line(box[-1][1])
                if nxt is None:
                    break
                box.append(nxt)
            if not found_end:
                continue
            if contains is not None and not any(contains.search(lines.line(*b)) for b in box):
                continue
            for start, end in box:
                if not banners.is_command(lines.line(start, end)):
                    hide.setdefault(start, (end, rule.name))
    # Machine fields: within a kept line, only each value's text (group "v") is hidden.
    fields: dict[int, tuple[int, str]] = {}  # value start (char) -> (value end, rule name)
    for name, finder, pattern, value in banners.value_rules:
        for m in finder.finditer(text):
            start, end = lines.bounds(max(m.start(), m.end() - 1))
            if start in hide:
                continue
            line = lines.line(start, end)
            if not pattern.search(line) or banners.is_command(line):
                continue
            for found in value.finditer(line):
                if found.end("v") > found.start("v"):
                    fields.setdefault(start + found.start("v"), (start + found.end("v"), name))
    marked = [(start, end, name, True) for start, (end, name) in hide.items()]
    marked += [(start, end, name, False) for start, (end, name) in fields.items()]
    spans = []
    for start, end, name, whole in sorted(marked):
        b0 = lines.byte_offset(start)
        b1 = lines.byte_offset(end)
        if b1 > b0:
            spans.append(view.raw_span(b0, b1))
            stats.banners.add(name)
            if whole:
                stats.banner_lines_hidden += 1
            else:
                stats.machine_fields_hidden += 1
    return spans
