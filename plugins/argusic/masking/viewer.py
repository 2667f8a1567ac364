"""The last check of a served copy: does it still show a known value to someone who looks hard?

The masking rounds (`engine.py`) redact what they find in place. This check runs afterwards, on the
served bytes, and only answers yes or no: a yes withholds the copy. It looks for the caller's known
values (the shared keys and the attempt's own per-run key) the way a viewer, or a patient reader,
would recover them:

* the stream as shown: a recording's events joined per stream (output, input, the rest), escape
  sequences removed, and each line that moves the cursor drawn on a line of cells (carriage return,
  backspace, cursor left/right/column, erase line), so text drawn right to left reads left to right;
* every text *skeleton*: NFKC (full-width and compatibility forms folded), case folded, everything
  but letters and digits removed (spaces, separators, line breaks, zero-width and control
  characters, the NULs of UTF-16 text);
* decoded forms: ``%XX``, ``\\uXXXX``/``\\xXX``/``\\U........``, HTML entities, sequences of hex or
  decimal character codes (``0x73 0x6b``, ``115,107``), runs of hex, base64 (standard and url-safe,
  every alignment) and base32 (every alignment), gzip inside base64 opened (output capped);
* the skeleton read at strides 2 and 3 (one value interleaved with another text);
* each value searched whole, reversed, in rot13, and as every fragment of 2/5 of its letters and
  digits (at least `MIN_FRAGMENT`): either half printed in clear is found.

Bounds (a served copy is hostile input): the text is read in windows of `WINDOW` characters that
overlap by `OVERLAP` (a form whose characters are spread wider than that across a window boundary is
only seen by the skeleton, which is carried from window to window); a line drawn with cursor moves is
at most `MAX_COLUMNS` cells wide; gzip output is capped at `MAX_INFLATE` bytes per stream found; a
copy of more than `MAX_CHECKED` characters is not checked at all and is withheld (a finding).
Memory is a few windows; time is linear in the input.

Speed (issue 27): every form above is still searched, on the same text; only work whose result is
already known is skipped, and the rest is done at C speed. Why each shortcut finds what the plain
definition finds:

* cursor moves that cannot change a line (`_HARMFUL_MOVES` leaves them out: a carriage return that
  ends a line, an erase to the right with no move before it, any erase before anything is drawn)
  are not drawn: `drawn` would give the line's text without its escapes, which is what removing the
  escapes gives (then the carriage returns before line breaks are dropped as drawing drops them).
  Only when no line is wider than `MAX_COLUMNS` (drawing cuts those) and no string escape can run past
  a line break; otherwise every move is drawn as before;
* without string escapes, what is shown of a text is what is shown of its lines, and a skeleton can
  be cut after a line break (a line break is a starter that composes with nothing, so NFKC never
  reaches across it): the lines before the last line break within WINDOW are drawn and folded once
  for the view and for the skeleton carried to the next window;
* a decoding that changes nothing (`%XX`, backslash escapes, HTML entities found nowhere) has the
  skeleton already searched; a decoding of the same runs (base64, base32, hex, decimal codes) as one
  already searched for the view gives the same bytes when the stripped text is searched;
* runs of an alphabet (base64, base32, hex) are the maximal runs of at least 16 of its characters,
  which is what the greedy patterns found, located with one `translate` and one numpy comparison
  (`test_runs_are_the_greedy_matches`); the compact text is the NFKC text without the characters
  `_WHITESPACE_AND_INVISIBLE` matches, deleted with `translate` when none of them is outside ASCII
  (`test_the_compact_text_removes_what_the_pattern_removes` checks every code point).
* the skeleton of text that is not ASCII (decoded binary read as UTF-16 above all) is taken from its
  NFKD with only the runs of composing characters composed and Hangul set aside (`_skeleton_nfkc`):
  the same letters and digits as NFKC, without CPython's character-by-character composition of the
  whole text (`test_the_skeleton_nfkc_gives_the_nfkc_skeleton`).
"""

from __future__ import annotations

import binascii
import codecs
import html
import re
import unicodedata
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import BinaryIO

import hyperscan
import numpy as np
import re2

from argusic.masking.policy import MaskingError
from argusic.masking.recording import MAX_LINE, STREAM_CODES, parse_event, parse_header
from argusic.masking.rules import scan
from argusic.masking.views import maximal_runs, run_table

WINDOW = 1 << 20  # characters decoded and searched at once
OVERLAP = 64 << 10  # characters shared by consecutive windows
SKELETON_CARRY = 4 << 10  # skeleton characters carried into the next window's skeleton
MAX_COLUMNS = 4096  # cells of a line drawn with cursor moves
MAX_INFLATE = 1 << 20  # bytes inflated from one gzip stream
MAX_GZIP_STREAMS = 64  # gzip streams opened per window
MAX_CHECKED = 512 << 20  # characters of one served copy; more is withheld unchecked
_READ = 1 << 20
# A fragment of this many letters and digits, or 2/5 of the value's if more, is significant: either half
# of a value holds one (half of `sk-` + 22 characters is 10 letters and digits once `sk-` is folded).
MIN_FRAGMENT = 10
MIN_FRAGMENT_DISTINCT = 6  # fragments with fewer distinct characters are not searched (only whole)

_ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[PX^_][^\x1b]*(?:\x1b\\)?|[ -/]*[0-~])?"
    r"|\x9b[0-?]*[ -/]*[@-~]"
)
_CURSOR = re.compile(r"\x1b\[([0-9;]*)([CDGK`])|\r|\x08")
_MOVES = re.compile(r"[\r\x08]|\x1b\[[0-9;]*[CDGK`]")
_NOT_ALNUM_BYTES = bytes(b for b in range(256) if not (48 <= b <= 57 or 97 <= b <= 122))
_WHITESPACE_AND_INVISIBLE = re.compile(r"[\s\x00-\x1f\x7f\u200b-\u200f\u2060-\u2064\ufeff\u00ad]+")
_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
_BACKSLASH = re.compile(
    r"\\(?:u\{([0-9a-fA-F]{1,6})\}|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2})|U([0-9a-fA-F]{8}))"
)
_DEC_CODES = re.compile(r"(?:\d{2,7}[^0-9A-Za-z]{1,4}){5,}\d{2,7}")
_DEC_TOKEN = re.compile(r"\d{2,7}")
# The same runs found by RE2 (linear, a DFA: a log of timestamps and versions costs Python's re a
# backtracking attempt at every digit); \p{Nd} is what Python's \d means in text.
_DEC_CODES_RE2 = re2.compile(_DEC_CODES.pattern.replace("\\d", "\\p{Nd}"))


def _dec_code_runs(text: str) -> list[str]:
    return [m.group(0) for m in _DEC_CODES_RE2.finditer(text)]


_ROT13 = str.maketrans(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "nopqrstuvwxyzabcdefghijklmNOPQRSTUVWXYZabcdefghijklm",
)


def skeleton_bytes(text: str | bytes) -> bytes:
    """Letters and digits only, compatibility forms and case folded (`ｓＫ-1` → `sk1`), as ASCII bytes.
    Bytes (decoded base64, hex...) are read as ASCII: other bytes fall out."""
    if isinstance(text, bytes):
        return text.lower().translate(None, _NOT_ALNUM_BYTES)
    if text.isascii():
        return text.lower().encode("ascii").translate(None, _NOT_ALNUM_BYTES)
    return _folded_skeleton(_skeleton_nfkc(text))


_ASCII_BYTES = bytes(range(128))

# The characters that a canonical composition can take as its second character (the second of every
# two-character canonical decomposition, and the Hangul vowel and trailing jamo), or that have a non-zero
# combining class: `test_the_composing_characters_are_these` derives the list from this Python's
# Unicode tables. Every other character is a starter that nothing before it composes with.
_COMPOSING_RANGES = (
    "300-34E 350-36F 483-487 591-5BD 5BF 5C1-5C2 5C4-5C5 5C7 610-61A 64B-65F 670 6D6-6DC 6DF-6E4 6E7-6E8 "
    "6EA-6ED 711 730-74A 7EB-7F3 7FD 816-819 81B-823 825-827 829-82D 859-85B 898-89F 8CA-8E1 8E3-8FF 93C "
    "94D 951-954 9BC 9BE 9CD 9D7 9FE A3C A4D ABC ACD B3C B3E B4D B56-B57 BBE BCD BD7 C3C C4D C55-C56 CBC "
    "CC2 CCD CD5-CD6 D3B-D3C D3E D4D D57 DCA DCF DDF E38-E3A E48-E4B EB8-EBA EC8-ECB F18-F19 F35 F37 F39 "
    "F71-F72 F74 F7A-F7D F80 F82-F84 F86-F87 FB5 FB7 FC6 102E 1037 1039-103A 108D 135D-135F 1714-1715 "
    "1734 17D2 17DD 18A9 1939-193B 1A17-1A18 1A60 1A75-1A7C 1A7F 1AB0-1ABD 1ABF-1ACE 1B34-1B35 1B44 "
    "1B6B-1B73 1BAA-1BAB 1BE6 1BF2-1BF3 1C37 1CD0-1CD2 1CD4-1CE0 1CE2-1CE8 1CED 1CF4 1CF8-1CF9 1DC0-1DFF "
    "20D0-20DC 20E1 20E5-20F0 2CEF-2CF1 2D7F 2DE0-2DFF 302A-302F 3099-309A A66F A674-A67D A69E-A69F "
    "A6F0-A6F1 A806 A82C A8C4 A8E0-A8F1 A92B-A92D A953 A9B3 A9C0 AAB0 AAB2-AAB4 AAB7-AAB8 AABE-AABF AAC1 "
    "AAF6 ABED FB1E FE20-FE2F 101FD 102E0 10376-1037A 10A0D 10A0F 10A38-10A3A 10A3F 10AE5-10AE6 "
    "10D24-10D27 10EAB-10EAC 10F46-10F50 10F82-10F85 11046 11070 1107F 110B9-110BA 11100-11102 11127 "
    "11133-11134 11173 111C0 111CA 11235-11236 112E9-112EA 1133B-1133C 1133E 1134D 11357 11366-1136C "
    "11370-11374 11442 11446 1145E 114B0 114BA 114BD 114C2-114C3 115AF 115BF-115C0 1163F 116B6-116B7 "
    "1172B 11839-1183A 11930 1193D-1193E 11943 119E0 11A34 11A47 11A99 11C3F 11D42 11D44-11D45 11D97 "
    "16AF0-16AF4 16B30-16B36 16FF0-16FF1 1BC9E 1D165-1D169 1D16D-1D172 1D17B-1D182 1D185-1D18B "
    "1D1AA-1D1AD 1D242-1D244 1E000-1E006 1E008-1E018 1E01B-1E021 1E023-1E024 1E026-1E02A 1E130-1E136 "
    "1E2AE 1E2EC-1E2EF 1E8D0-1E8D6 1E944-1E94A "
)
_COMPOSING = np.zeros(0x110000, dtype=np.bool_)  # by code point
for _lo, _, _hi in (r.partition("-") for r in _COMPOSING_RANGES.split()):
    _COMPOSING[int(_lo, 16) : int(_hi or _lo, 16) + 1] = True
_COMPOSING[0x1161:0x1176] = _COMPOSING[0x11A8:0x11C3] = True  # Hangul vowels and trailing consonants
# Hangul: syllables and conjoining jamo (all starters; none holds or folds into an ASCII letter or
# digit, and they compose only with each other).
_HANGUL = re.compile("[\u1100-\u11ff\ua960-\ua97f\uac00-\ud7ff]")


def _skeleton_nfkc(text: str) -> str:
    """A text whose skeleton is the skeleton of `unicodedata.normalize("NFKC", text)`, at a fraction of
    its cost on text that is not mostly ASCII (decoded binary read as UTF-16: CPython composes
    character by character).

    Why the skeleton is the same (`test_the_skeleton_nfkc_gives_the_nfkc_skeleton`):

    * NFKC is NFC of NFKD, and NFC of a text already fully decomposed only composes: a starter with a
      following character that can be the second of a composition, or that has a non-zero combining
      class (`_COMPOSING`; reordering too only moves those). A character of neither kind is a starter
      that nothing composes with from before and that blocks every composition across it, so the
      composition of the NFKD text is the composition of each piece made of a maximal run of
      composing characters and the character before it, every other character staying as it is: only
      those pieces are composed;
    * Hangul characters (syllables and conjoining jamo) are replaced by NUL first. They are starters
      that compose only with each other (no canonical decomposition pairs them with anything else) and
      hold no ASCII letter or digit even case folded; NUL is a starter that composes with nothing and
      falls out of the skeleton. So no other character composes or reorders differently, and the
      skeleton loses nothing it had. Only the skeleton is the same: this is not the NFKC text.
    """
    if unicodedata.is_normalized("NFKC", text):  # the usual text: a quick check, no copy
        return text
    if _HANGUL.search(text):
        text = _HANGUL.sub("\0", text)
    decomposed = unicodedata.normalize("NFKD", text)
    codes = np.frombuffer(decomposed.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    at = np.flatnonzero(_COMPOSING[codes])
    if not len(at):
        return decomposed
    breaks = np.flatnonzero(np.diff(at) != 1)
    starts = np.maximum(at[np.concatenate(([0], breaks + 1))] - 1, 0).tolist()
    ends = (at[np.concatenate((breaks, [len(at) - 1]))] + 1).tolist()
    out: list[str] = []
    pos = 0
    for start, end in zip(starts, ends, strict=True):
        out.append(decomposed[pos:start])
        out.append(unicodedata.normalize("NFC", decomposed[start:end]))
        pos = end
    out.append(decomposed[pos:])
    return "".join(out)


def _non_ascii(text: str, encoded: bytes) -> str:
    """The characters of `text` outside ASCII, in order (`encoded`: its UTF-8, surrogates passed)."""
    return encoded.translate(None, _ASCII_BYTES).decode("utf-8", "surrogatepass")


# The characters outside ASCII whose case folding holds an ASCII letter or digit (`ß` → `ss`, the
# Kelvin sign → `k`, `ﬁ` → `fi`): `test_the_characters_that_fold_into_ascii_are_these` derives the
# list from every code point of this Python's Unicode tables.
FOLDS_INTO_ASCII = "\u00df\u0130\u0149\u017f\u01f0\u1e96\u1e97\u1e98\u1e99\u1e9a\u1e9e\u212a" + "".join(
    map(chr, range(0xFB00, 0xFB07))
)
_FOLDS_INTO_ASCII = re.compile("[" + re.escape(FOLDS_INTO_ASCII) + "]")


def _folded_skeleton(nfkc: str) -> bytes:
    """`nfkc.casefold()` encoded as ASCII (others ignored), letters and digits only: at C speed when no
    character outside ASCII case-folds into an ASCII letter or digit (the usual case).

    Why it is the same: `str.casefold` folds each code point on its own (full case folding has no
    context), so the folded text is the concatenation of every character folded. An ASCII character
    folds as `bytes.lower` lowers it; a character outside ASCII whose folding holds no ASCII letter or
    digit adds nothing to the skeleton (its other ASCII characters are punctuation, removed anyway),
    and its UTF-8 bytes (all 0x80 or above) are removed by the same translation
    (`test_the_folded_skeleton_is_the_casefolded_one`)."""
    encoded = nfkc.encode("utf-8", "surrogatepass")
    if len(encoded) != len(nfkc) and _FOLDS_INTO_ASCII.search(_non_ascii(nfkc, encoded)):
        return nfkc.casefold().encode("ascii", "ignore").translate(None, _NOT_ALNUM_BYTES)
    return encoded.lower().translate(None, _NOT_ALNUM_BYTES)


# What `_WHITESPACE_AND_INVISIBLE` removes outside ASCII (Python's \s there, and the invisible
# characters it names); inside ASCII it removes every control character and the space.
_NON_ASCII_SPACE_AND_INVISIBLE = re.compile(
    "[\x85\xa0\xad\u1680\u2000-\u200f\u2028\u2029\u202f\u205f\u2060-\u2064\u3000\ufeff]"
)
_ASCII_SPACE_AND_CONTROLS = bytes([*range(0x21), 0x7F])


def _compact(nfkc: str) -> bytes:
    """The NFKC text without whitespace and invisible characters, as UTF-8: what base64 and base32
    runs are read in. `_WHITESPACE_AND_INVISIBLE.sub("", nfkc)` encoded, at C speed when the text has
    no such character outside ASCII (the usual case)."""
    encoded = nfkc.encode("utf-8", "surrogatepass")
    # The characters searched for are all outside ASCII: searched among those only (C speed).
    if len(encoded) == len(nfkc) or not _NON_ASCII_SPACE_AND_INVISIBLE.search(_non_ascii(nfkc, encoded)):
        return encoded.translate(None, _ASCII_SPACE_AND_CONTROLS)
    return _WHITESPACE_AND_INVISIBLE.sub("", nfkc).encode("utf-8", "surrogatepass")


def skeleton(text: str | bytes) -> str:
    return skeleton_bytes(text).decode("ascii")


@dataclass(frozen=True)
class _Needle:
    value: int  # index of the known value
    form: str  # whole, fragment, reversed ..., rot13 ...


def needles_of(values: Iterable[str]) -> dict[str, _Needle]:
    """{skeleton literal: what it stands for} for every value: whole, its significant fragments, each
    also reversed, in rot13, and both."""
    out: dict[str, _Needle] = {}
    for index, value in enumerate(values):
        whole = skeleton(value)
        if len(whole) < 6:
            continue  # nothing this short can be told apart from ordinary text once folded
        width = min(len(whole), max(MIN_FRAGMENT, len(whole) * 2 // 5))
        pieces = {whole: "whole"}
        for start in range(len(whole) - width + 1):
            piece = whole[start : start + width]
            if piece != whole and len(set(piece)) >= MIN_FRAGMENT_DISTINCT:
                pieces.setdefault(piece, "fragment")
        for piece, kind in pieces.items():
            for literal, form in (
                (piece, kind),
                (piece[::-1], f"{kind} reversed"),
                (piece.translate(_ROT13), f"{kind} rot13"),
                (piece[::-1].translate(_ROT13), f"{kind} reversed rot13"),
            ):
                out.setdefault(literal, _Needle(index, form))
    return out


@dataclass
class _Search:
    """The needles, searched with `bytes.find` in short texts and with a Hyperscan literal database
    (compiled on first need) in long ones: most served copies are short, and compiling costs more
    than searching them."""

    needles: dict[str, _Needle]
    literals: list[bytes] = field(init=False)
    database: object = field(init=False, default=None)

    SHORT = 1 << 18  # text length × needle count below which bytes.find is cheaper than compiling

    def __post_init__(self) -> None:
        self.literals = [n.encode() for n in sorted(self.needles)]

    @property
    def empty(self) -> bool:
        return not self.literals

    def find(self, skel: bytes) -> list[_Needle]:
        if not self.literals or not skel:
            return []
        if self.database is None and len(skel) * len(self.literals) < self.SHORT:
            found = [i for i, literal in enumerate(self.literals) if literal in skel]
        else:
            found = self._scan(skel)
        return [self.needles[self.literals[i].decode()] for i in found]

    def _scan(self, skel: bytes) -> list[int]:
        if self.database is None:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(
                expressions=self.literals,
                ids=list(range(len(self.literals))),
                flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(self.literals),
                literal=True,
            )
            self.database = db
        hits: list[int] = []

        def on_match(idx: int, start: int, end: int, flags: int, context: object) -> None:
            hits.append(idx)

        scan(self.database, skel, on_match)
        return sorted(set(hits))


@lru_cache(maxsize=4)
def _search_for(values: tuple[str, ...]) -> _Search:
    """The compiled search of a set of values: one per set, not per copy (an attempt's log and
    recording, and every attempt of one agent with the same shared keys, share it)."""
    return _Search(needles_of(values))


# -- what a terminal shows -------------------------------------------------------------------------------


def drawn(line: str) -> str:
    """One line as a terminal shows it after carriage returns, backspaces and horizontal cursor
    moves (CSI C/D/G/`/K); other escapes removed first. At most MAX_COLUMNS cells."""
    cells: list[str] = []
    col = 0

    def put(text: str) -> None:
        """Write the text's visible characters at the cursor (nothing past MAX_COLUMNS)."""
        nonlocal col
        visible = _ESCAPES.sub("", text) if "\x1b" in text or "\x9b" in text else text
        visible = visible[: max(0, MAX_COLUMNS - col)]
        if not visible:
            return
        if col > len(cells):
            cells.extend(" " * (col - len(cells)))
        cells[col : col + len(visible)] = visible  # overwrites the cells there, appends the rest
        col += len(visible)

    pos = 0
    for m in _CURSOR.finditer(line):
        put(line[pos : m.start()])
        pos = m.end()
        token = m.group(0)
        if token == "\r":
            col = 0
        elif token == "\x08":
            col = max(0, col - 1)
        else:
            n = int((m.group(1) or "1").split(";")[0] or "1")
            op = m.group(2)
            if op == "C":
                col = min(MAX_COLUMNS, col + n)
            elif op == "D":
                col = max(0, col - n)
            elif op in "G`":
                col = min(MAX_COLUMNS, max(0, n - 1))
            elif op == "K":
                mode = m.group(1) or "0"
                if mode == "0":
                    del cells[col:]
                elif mode == "1":
                    cells[: col + 1] = [" "] * min(col + 1, len(cells))
                else:
                    cells.clear()
    put(line[pos:])
    return "".join(cells)


def shown(text: str) -> str:
    """The text with escapes removed, and lines that move the cursor drawn as a terminal draws them."""
    if _STRING_ESCAPE.search(text) or max(map(len, text.split("\n"))) > MAX_COLUMNS:
        return _shown(text, _MOVES)
    # Moves that cannot change what a line shows are not drawn: they are removed like escapes
    # (`_HARMFUL_MOVES`); the carriage returns that end lines are dropped as drawing drops them.
    out = _shown(text, _HARMFUL_MOVES).replace("\r\n", "\n")
    return out[:-1] if out.endswith("\r") and text.endswith("\r") else out


# The cursor moves of `_MOVES` that change what a line shows, when no line is wider than MAX_COLUMNS
# and no string escape (OSC, DCS...) can run past a line break. The others are left out, being no-ops
# in `drawn`: a carriage return at the end of a line (then nothing is written), an erase to the right
# (`ESC[K`, `ESC[0K`: with no move before it in the line the cursor is at the end of what is drawn),
# and any erase at the very start of a line (nothing drawn yet). What remains of them in a line that
# is not drawn is an escape (removed with the others) or a carriage return before a line break
# (dropped by `shown`).
_HARMFUL_MOVES = re.compile(r"\r(?!\n|\Z)|\x08|\x1b\[[0-9;]*[CDG`]|\x1b(?<!\n\x1b)\[(?!0?K)[0-9;]*K")


def _shown(text: str, moves: re.Pattern) -> str:
    out: list[str] = []
    pos = 0
    while m := moves.search(text, pos):
        start = text.rfind("\n", pos, m.start()) + 1 if m.start() > pos else pos
        if start < pos:
            start = pos
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        out.append(_stripped_lines(text[pos:start]))  # whole lines without a cursor move
        out.append(drawn(text[start:end]))
        pos = end
    out.append(_stripped_lines(text[pos:]) if pos else _ESCAPES.sub("", text))
    return "".join(out)


_STRING_ESCAPE = re.compile(r"\x1b[\]PX^_]")  # the escapes whose text may run past a line break


def _shown_and_stripped(text: str) -> tuple[str, str]:
    """(`shown(text)`, the text with its escapes removed), the escapes removed once for both.

    Without string escapes and with no line wider than MAX_COLUMNS, `shown` is the text with its
    escapes removed except in the lines that hold a cursor move that changes them (`_HARMFUL_MOVES`),
    which are drawn; then carriage returns before line breaks dropped. No escape there can run past
    a line break (`_ESCAPES` matches no line break then), so removing the escapes from the whole text
    removes them from each line: the lines of the stripped text are the lines of the text stripped,
    one for one, and the drawn lines replace theirs (`test_shown_and_stripped_are_shown_and_stripped`).
    """
    stripped = _ESCAPES.sub("", text)
    if _STRING_ESCAPE.search(text) or max(map(len, text.split("\n"))) > MAX_COLUMNS:
        return shown(text), stripped
    lines: list[str] | None = None
    pos = line_no = 0
    while m := _HARMFUL_MOVES.search(text, pos):  # the lines `_shown` draws, found as it finds them
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        line_no += text.count("\n", pos, start)
        if lines is None:
            lines = stripped.split("\n")
        lines[line_no] = drawn(text[start:end])
        pos = end
    out = (stripped if lines is None else "\n".join(lines)).replace("\r\n", "\n")
    return (out[:-1] if out.endswith("\r") and text.endswith("\r") else out), stripped


def _stripped_lines(text: str) -> str:
    """Escapes removed line by line (in one pass when none could run past a line's end)."""
    if not _STRING_ESCAPE.search(text):
        return _ESCAPES.sub("", text)
    return "\n".join(_ESCAPES.sub("", line) for line in text.split("\n"))


# -- decoders ----------------------------------------------------------------------------------------------


def _backslash_char(m: re.Match) -> str:
    code = int(next(g for g in m.groups() if g is not None), 16)
    return chr(code) if code < 0x110000 else ""


def _codes(run: str, token: re.Pattern, base: int) -> str:
    codes = (int(t, base) for t in token.findall(run))
    return "".join(chr(c) for c in codes if c < 0x110000)


def _inflated(data: bytes, budget: list[int]) -> Iterator[str]:
    start = data.find(b"\x1f\x8b")
    while start >= 0 and budget[0] > 0:
        budget[0] -= 1
        inflater = zlib.decompressobj(wbits=47)
        try:
            out = inflater.decompress(data[start:], MAX_INFLATE)
        except zlib.error:
            out = b""
        if out:
            yield out.decode("utf-8", "replace")
            yield out.decode("utf-16-le", "replace")
        start = data.find(b"\x1f\x8b", start + 2)


_runs = maximal_runs  # the runs of an alphabet (tests call it by this name)
_alphabet = run_table


# Base64 runs, standard or url-safe (`=` ends a run and is dropped, as a trailing `={0,2}` then
# `.replace("=", "")` did; url-safe letters are read as the standard ones).
_B64_RUN_TABLE = _alphabet(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
_TO_STANDARD_B64 = bytes.maketrans(b"-_", b"+/")
_B32_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_RUN_TABLE = _alphabet(_B32_ALPHABET)
_HEX_RUN_TABLE = _alphabet(b"0123456789abcdef")
_B32_AS_DIGITS_BYTES = bytes.maketrans(_B32_ALPHABET, b"0123456789ABCDEFGHIJKLMNOPQRSTUV")


def _base64_decodings(compact: str | bytes, budget: list[int]) -> Iterator[str | bytes]:
    """Every base64 run at its 4 alignments, one decoding per alignment for all runs at once (each
    run padded to whole quanta plus one zero quantum, so runs never run into each other; a run's
    last partial quantum is decoded too, its padding bits zero)."""
    if isinstance(compact, str):
        compact = compact.encode("utf-8", "surrogatepass")  # runs are ASCII: the same runs
    yield from _base64_of_runs(_runs(compact, _B64_RUN_TABLE, 16), budget)


def _base64_of_runs(found: list[bytes], budget: list[int]) -> Iterator[bytes | str]:
    if not found:
        return
    runs = [r + b"A" * (-len(r) % 4 + 4) for r in b"\n".join(found).translate(_TO_STANDARD_B64).split(b"\n")]
    for skip in range(4):
        before, after = b"A" * ((4 - skip) % 4), b"A" * skip
        data = binascii.a2b_base64(before + (after + before).join(runs) + after)
        yield data
        yield from _inflated(data, budget)


def _base32_decodings(compact: str | bytes) -> Iterator[bytes]:
    """Every base32 run (upper case, as encoders write it) at its 8 alignments, decoded at C speed
    (base32 read as a base-32 number)."""
    if isinstance(compact, str):
        compact = compact.encode("utf-8", "surrogatepass")
    yield from _base32_of_runs(_runs(compact, _B32_RUN_TABLE, 16))


def _base32_of_runs(found: list[bytes]) -> Iterator[bytes]:
    runs = [r.translate(_B32_AS_DIGITS_BYTES) for r in found]
    for skip in range(8):
        chunks = []
        for run in runs:
            part = run[skip:]
            part = part[: len(part) - len(part) % 8]
            if part:
                chunks.append(int(part, 32).to_bytes(len(part) * 5 // 8, "big"))
        if chunks:
            yield b"\n".join(chunks)


def _hex_decodings(skel: bytes) -> Iterator[str | bytes]:
    """Every run of hex digits at its 2 alignments, one decoding per alignment for all runs at once."""
    yield from _hex_of_runs(_runs(skel, _HEX_RUN_TABLE, 16))


def _hex_of_runs(runs: list[bytes]) -> Iterator[str | bytes]:
    if not runs:
        return
    runs = [r + b"0" * (len(r) % 2) for r in runs]
    for data in (binascii.unhexlify(b"".join(runs)), binascii.unhexlify(b"0" + b"00".join(runs) + b"0")):
        yield data
        yield data.decode("utf-16-le", "replace")


def decoded_forms(text: str) -> Iterator[tuple[str, str | bytes]]:
    """(name, text) of every decoding of a window of shown text (the text itself first)."""
    for name, decoded, _ in _forms(text):
        yield name, decoded


def _forms(
    text: str, skel: bytes | None = None, seen: set | None = None
) -> Iterator[tuple[str, str | bytes, bytes | None]]:
    """`decoded_forms`, each with its skeleton when it is already known (the text's own: NFKC and
    case folding done once for the text, its skeleton and its hex runs).

    `skel`: the text's skeleton when the caller has it. `seen`: the runs whose decodings were already
    given for another text of the same window (the view and the stripped text differ in a few lines):
    a decoding of the same runs is the same bytes, so it is not given again."""
    ascii_only = text.isascii()
    nfkc = text if ascii_only else unicodedata.normalize("NFKC", text)
    if skel is None:
        skel = skeleton_bytes(text) if ascii_only else _folded_skeleton(nfkc)
    seen = set() if seen is None else seen

    def new(kind: str, runs: list) -> bool:
        key = (kind, tuple(runs))
        if key in seen:
            return False
        seen.add(key)
        return True

    yield "as shown", text, skel
    # A decoding that changes nothing has the skeleton just searched: it is not searched again.
    if "%" in text:
        decoded, n = _PERCENT.subn(lambda m: chr(int(m.group(0)[1:], 16)), text)
        if n:
            yield "percent-decoded", decoded, None
    if "\\" in text:
        decoded, n = _BACKSLASH.subn(_backslash_char, text)
        if n:
            yield "backslash-decoded", decoded, None
    if "&" in text:
        decoded = html.unescape(text)
        if decoded != text:
            yield "html-decoded", decoded, None
    dec_runs = _dec_code_runs(text)
    if dec_runs and new("decimal", dec_runs):
        yield "decimal codes", "\n".join(_codes(run, _DEC_TOKEN, 10) for run in dec_runs), None
    compact = _compact(nfkc)
    budget = [MAX_GZIP_STREAMS]
    b64_runs = _runs(compact, _B64_RUN_TABLE, 16)
    if new("base64", b64_runs):
        for decoded in _base64_of_runs(b64_runs, budget):
            yield "base64", decoded, None
    b32_runs = _runs(compact, _B32_RUN_TABLE, 16)
    if b32_runs and new("base32", b32_runs):
        for decoded in _base32_of_runs(b32_runs):
            yield "base32", decoded, None
    # Hex codes however separated (`73 6b`, `0x73,0x6b`, `\\x73`, `U+0073`, `&#x73;`) are one hex run
    # once the separators and the prefixes are gone.
    for variant in {skel, skel.replace(b"0x", b""), skel.replace(b"0x", b"").translate(None, b"ux")}:
        hex_runs = _runs(variant, _HEX_RUN_TABLE, 16)
        if new("hex", hex_runs):
            for decoded in _hex_of_runs(hex_runs):
                yield "hex", decoded, None
    # UTF-16 text read as UTF-8. Its skeleton goes through NFKC like every other form: the UTF-16
    # bytes of chosen characters can spell valid UTF-8 of full-width letters, which NFKC folds to ASCII.
    yield "utf-16", text.encode("utf-16-le", "surrogatepass").decode("utf-8", "replace"), None


# -- the check ---------------------------------------------------------------------------------------------


class ViewerCheck:
    """Fed a served stream's text piece by piece; `finish()` says which known values it still shows."""

    def __init__(self, values: Iterable[str], label: str) -> None:
        self.search = _search_for(tuple(sorted({v for v in values if isinstance(v, str)})))
        self.label = label
        self.parts: list[str] = []
        self.parts_size = 0
        self.carry = b""  # the last skeleton characters of the stream so far
        self.size = 0
        self.findings: dict[str, None] = {}

    @property
    def active(self) -> bool:
        return not self.search.empty

    def feed(self, text: str) -> None:
        if not self.active or self.findings:
            return
        self.size += len(text)
        if self.size > MAX_CHECKED:
            self.findings[f"{self.label}: over {MAX_CHECKED} characters, not checked"] = None
            self.parts, self.parts_size = [], 0
            return
        self.parts.append(text)
        self.parts_size += len(text)
        if self.parts_size < WINDOW + OVERLAP:
            return
        pending = "".join(self.parts)  # many small events: joined once per window, not per event
        while len(pending) >= WINDOW + OVERLAP and not self.findings:
            self._window(pending[: WINDOW + OVERLAP], final=False)
            pending = pending[WINDOW:]
        self.parts, self.parts_size = [pending], len(pending)

    def finish(self) -> list[str]:
        if self.active and not self.findings and (self.parts_size or self.size == 0):
            self._window("".join(self.parts), final=True)
        self.parts, self.parts_size = [], 0
        return list(self.findings)

    def _window(self, text: str, *, final: bool) -> None:
        # The skeleton goes on across windows (only the part this window adds after the overlap).
        # Without string escapes (the only escapes that run past a line break) what is shown of a text
        # is what is shown of its lines, and the skeleton of text after a line break is the skeleton
        # of the text before it followed by that of the rest (NFKC never reaches across a line break:
        # a line break is a starter that composes with nothing): the lines before the last line break
        # within WINDOW are drawn and folded once for both.
        cut = -1 if final or _STRING_ESCAPE.search(text) else text.rfind("\n", 0, WINDOW)
        view_skel = None
        if final:
            view = shown(text)
            skel_stream = self.carry + skeleton_bytes(view)
            view_skel = skel_stream[len(self.carry) :]
        elif cut < 0:
            view = shown(text)
            skel_stream = self.carry + skeleton_bytes(shown(text[:WINDOW]))
        else:
            (head, head_stripped), (rest, rest_stripped) = (
                _shown_and_stripped(text[: cut + 1]),
                _shown_and_stripped(text[cut + 1 :]),
            )
            head_skel = skeleton_bytes(head)
            view = head + rest
            view_skel = head_skel + skeleton_bytes(rest)
            skel_stream = self.carry + head_skel + skeleton_bytes(shown(text[cut + 1 : WINDOW]))
            # Escapes never run past a line break here: the text's is its two parts' stripped text.
            stripped = head_stripped + rest_stripped
        self._look("skeleton", skel_stream)
        self.carry = skel_stream[-SKELETON_CARRY:]
        if cut < 0:
            stripped = _ESCAPES.sub("", text)
        seen: set = set()
        for shown_text in [view] if stripped == view else [view, stripped]:
            known_skel = view_skel if shown_text is view else None
            for name, decoded, known in _forms(shown_text, known_skel, seen):
                skel = known if known is not None else skeleton_bytes(decoded)
                self._look(name, skel)
                if name == "as shown":
                    for stride in (2, 3):
                        for phase in range(stride):
                            self._look(f"every {stride}nd character", skel[phase::stride])
                if self.findings:
                    return

    def _look(self, name: str, skel: bytes) -> None:
        for needle in self.search.find(skel):
            self.findings[f"{self.label}: known value {needle.value} ({needle.form}, {name})"] = None


def check_text(text: str, values: Iterable[str], label: str = "text") -> list[str]:
    """Findings of one text (empty: it shows none of the values)."""
    check = ViewerCheck(values, label)
    check.feed(text)
    return check.finish()


def check_log(stream: BinaryIO, values: Iterable[str]) -> list[str]:
    """Findings of a served log read from `stream` (UTF-8; bytes that are not are replaced, and NULs
    of UTF-16 text fall out of the skeleton)."""
    check = ViewerCheck(values, "log")
    if not check.active:
        return []
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    while chunk := stream.read(_READ):
        check.feed(decoder.decode(chunk))
        if check.findings:
            break
    check.feed(decoder.decode(b"", final=True))
    return check.finish()


def check_cast(stream: BinaryIO, values: Iterable[str]) -> list[str]:
    """Findings of a served asciicast v2 recording: each event stream joined as a viewer's player
    plays it (output, input, the rest), and the header's strings. Unparseable is a finding."""
    values = [v for v in values if isinstance(v, str)]
    checks = [ViewerCheck(values, f"recording {name!r} events") for name in STREAM_CODES]
    if not checks[0].active:
        return []
    try:
        header = parse_header(stream.readline(MAX_LINE + 1))
        findings = check_text("\n".join(_strings(header)), values, "recording header")
        n = 1
        while line := stream.readline(MAX_LINE + 1):
            n += 1
            if len(line) > MAX_LINE:
                return [f"recording line {n} is longer than {MAX_LINE} bytes"]
            if line.strip():
                event = parse_event(line, n)
                checks[0 if event[1] == "o" else 1 if event[1] == "i" else 2].feed(event[2])
    except MaskingError as err:
        return [f"unparseable recording: {err}"]
    for check in checks:
        findings += check.finish()
    return findings


def _strings(obj: object) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)


__all__ = [
    "MAX_CHECKED",
    "MAX_COLUMNS",
    "MAX_INFLATE",
    "OVERLAP",
    "WINDOW",
    "ViewerCheck",
    "check_text",
    "decoded_forms",
    "drawn",
    "check_cast",
    "check_log",
    "needles_of",
    "shown",
    "skeleton",
]
