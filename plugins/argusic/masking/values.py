"""The values masked wherever they occur, in every form, and their search."""

from __future__ import annotations

import binascii

import hyperscan

from argusic.masking.rules import scan


def _b64_fragments(raw: bytes) -> set[bytes]:
    """The stable middle of base64(x + raw + y) for every alignment of raw, standard and url-safe."""
    out: set[bytes] = set()
    n = len(raw)
    for k in range(3):
        enc = binascii.b2a_base64(b"\0" * k + raw, newline=False)
        frag = enc[-(-8 * k // 6) : (8 * (k + n)) // 6]
        if len(frag) >= 4:
            out.add(frag)
            out.add(frag.translate(_URLSAFE))
    return out


_URLSAFE = bytes.maketrans(b"+/", b"-_")
STANDARD_ALPHABET = bytes.maketrans(b"-_", b"+/")


def value_forms(raw: bytes) -> dict[bytes, str]:
    """Every literal form of a value searched for in the views: {form: kind}."""
    forms: dict[bytes, str] = {raw: "plain"}
    for frag in sorted(_b64_fragments(raw)):
        forms.setdefault(frag, "base64")
    forms.setdefault(raw.hex().encode(), "hex")
    forms.setdefault(raw.hex().upper().encode(), "hex")
    return forms


class KnownValues:
    """Values masked wherever they occur, in every form, found with Hyperscan literal databases.

    New values go into a small database of their own; small databases are merged once there are
    several, so a log that keeps revealing values costs O(n log n) compilations, not O(n^2)."""

    MAX_GENERATIONS = 2  # every view is scanned once per generation: few, merged often

    def __init__(self, limit: int, label: str) -> None:
        self.limit = limit
        self.label = label
        self.values: list[bytes] = []
        self.index: dict[bytes, int] = {}
        self.overflow = False
        self._generations: list[tuple[object, list[tuple[int, int, str]], int, int]] = []  # db, forms, lo, hi
        self._compiled_upto = 0

    def __len__(self) -> int:
        return len(self.values)

    def add(self, value: bytes) -> bool:
        if value in self.index:
            return False
        if len(self.values) >= self.limit:
            self.overflow = True
            return False
        self.index[value] = len(self.values)
        self.values.append(value)
        return True

    def _compile(self, lo: int, hi: int):
        expressions: list[bytes] = []
        forms: list[tuple[int, int, str]] = []
        for idx in range(lo, hi):
            for form, kind in value_forms(self.values[idx]).items():
                expressions.append(form)
                forms.append((idx, len(form), kind))
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=expressions, ids=list(range(len(expressions))), literal=True)
        return db, forms, lo, hi

    def _refresh(self) -> None:
        if self._compiled_upto == len(self.values):
            return
        self._generations.append(self._compile(self._compiled_upto, len(self.values)))
        self._compiled_upto = len(self.values)
        if len(self._generations) > self.MAX_GENERATIONS:
            # Merge the newest generations with every older one no bigger than them (binary counter).
            gens = self._generations
            lo = newest = gens[-1][2]
            while len(gens) > 1 and gens[-2][3] - gens[-2][2] <= 2 * (gens[-1][3] - lo):
                lo = gens[-2][2]
                gens.pop(-2)
            if lo != newest:
                gens[-1] = self._compile(lo, self._compiled_upto)

    def scan(self, data: bytes) -> list[tuple[int, int, int, str]]:
        """(start, end, value index, form kind) of every occurrence of every form."""
        self._refresh()
        if not data:
            return []
        hits: list[tuple[int, int, int, str]] = []
        for db, forms, _, _ in self._generations:

            def on_match(form_id: int, start: int, end: int, flags: int, ctx: object, forms=forms) -> None:
                idx, length, kind = forms[form_id]
                hits.append((end - length, end, idx, kind))

            scan(db, data, on_match)
        return hits
