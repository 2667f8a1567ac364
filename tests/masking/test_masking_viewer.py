"""Known keys printed transformed by the code under test: every form is masked or the copy withheld.

Each form below is one a hostile project (or agent) can print with the key it finds in its
environment: the attempt's own per-run key (`sk-` + 22 characters, as the gateway makes them) and a
shared vendor key the orchestrator holds. Every form is replayed in a log and in a recording (one
event per chunk); the served copy must not show it. Ordinary logs with no key are served unchanged.
"""

from __future__ import annotations

import base64
import codecs
import gzip
import json
import re
import unicodedata
from pathlib import Path

import numpy as np
import pytest
from argusic.attempts.keys import IssuedKey
from argusic.masking import mask_log, mask_log_file, mask_recording, output_text, viewer
from argusic.masking.viewer import MAX_COLUMNS, check_text, drawn, shown, skeleton
from hypothesis import given, settings
from hypothesis import strategies as st

# Fixed, random-looking values (failures reproduce exactly).
PER_RUN_KEY = "sk-Q7vKx2_mPd9LrT4wZb8N-e"  # "sk-" + secrets.token_urlsafe(16): 22 characters
SHARED_KEY = "sk-ant-api03-Hq3Zp8WmX1vR7tKc9LbN2yFd5GsJ0uQe"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _chunks(key: str) -> dict[str, list[str]]:
    """{form: the chunks printed} (a recording makes one output event of each chunk)."""
    half = len(key) // 2
    right_to_left = "".join(f"\x1b[{20 + i}G{key[i]}" for i in reversed(range(len(key))))
    filler = "qwertyuiopasdfghjklzxcvbnm"
    return {
        "split over events": [key[:7], key[7:15], key[15:]],
        "one character per line": ["\n".join(key) + "\n"],
        "ANSI colour per character": ["".join(f"\x1b[3{i % 7 + 1}m{c}\x1b[0m" for i, c in enumerate(key))],
        "%XX": ["".join(f"%{ord(c):02X}" for c in key)],
        "\\uXXXX": ["".join(f"\\u{ord(c):04x}" for c in key)],
        "\\xXX": ["".join(f"\\x{ord(c):02x}" for c in key)],
        "UTF-16": [key.encode("utf-16-le").decode("latin-1")],
        "first half": [f"half: {key[:half]}\n"],
        "second half": [f"half: {key[half:]}\n"],
        "HTML &#NN;": ["".join(f"&#{ord(c)};" for c in key)],
        "HTML &#xHH;": ["".join(f"&#x{ord(c):x};" for c in key)],
        "hex codes": [" ".join(f"{ord(c):02x}" for c in key)],
        "0x codes": [", ".join(f"0x{ord(c):02X}" for c in key)],
        "decimal codes": [",".join(str(ord(c)) for c in key)],
        "reversed": [key[::-1]],
        "spaced": [" ".join(key)],
        "zero-width joined": ["\u200d".join(key)],
        "full-width": ["".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in key)],
        "upper case": [key.upper()],
        "rot13": [codecs.encode(key, "rot13")],
        "base32": [base64.b32encode(key.encode()).decode()],
        "gzip+base64": [base64.b64encode(gzip.compress(key.encode(), mtime=0)).decode()],
        "base64 of UTF-16": [base64.b64encode(key.encode("utf-16-le")).decode()],
        "interleaved": ["".join(c + filler[i % len(filler)] for i, c in enumerate(key))],
        "right to left with cursor moves": [right_to_left + "\n"],
        "backspace per character": ["".join(f"{c}_\b" for c in key)],
    }


FORMS = sorted(_chunks(PER_RUN_KEY))


def _log(chunks: list[str]) -> bytes:
    return ("build ok\n" + "".join(chunks) + "\ndone\n").encode("utf-8", "surrogatepass")


def _cast(chunks: list[str]) -> bytes:
    lines = [json.dumps({"version": 2, "width": 80, "height": 24})]
    lines += [json.dumps([0.1 * n, "o", c]) for n, c in enumerate(["$ make\r\n", *chunks, "\r\ndone\r\n"])]
    return ("\n".join(lines) + "\n").encode()


def _survives(result, chunks: list[str], recording: bool) -> bool:
    """Whether the served copy still holds what was printed (withheld: it does not)."""
    if result.withheld:
        return False
    served = output_text(result.data) if recording else result.data.decode("utf-8", "surrogatepass")
    return any(len(c.strip()) >= 8 and c.strip() in served for c in chunks) or "".join(chunks) in served


def _per_run_secrets() -> list[str]:
    key = IssuedKey(value=PER_RUN_KEY, kind="per_run", attempt_id="a1")
    return [*key.masking_values(), SHARED_KEY]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("recording", [False, True], ids=["log", "recording"])
@pytest.mark.parametrize("which", ["per-run", "shared"])
def test_transformed_key_is_masked_or_withheld(form: str, recording: bool, which: str) -> None:
    key = PER_RUN_KEY if which == "per-run" else SHARED_KEY
    secrets = _per_run_secrets() if which == "per-run" else [SHARED_KEY]
    chunks = _chunks(key)[form]
    data = _cast(chunks) if recording else _log(chunks)
    result = mask_recording(data, secrets) if recording else mask_log(data, secrets)
    assert not _survives(result, chunks, recording), f"{which} key {form!r} served in the {data[:0]!r}copy"
    if not result.withheld:  # served: nothing of the key is left for the viewer check either
        text = output_text(result.data) if recording else result.data.decode("utf-8", "replace")
        assert not check_text(text, [key])


def test_withheld_copy_is_reported_with_a_reason(tmp_path: Path) -> None:
    src, dst = tmp_path / "log.txt", tmp_path / "served.txt"
    src.write_bytes(_log(_chunks(PER_RUN_KEY)["reversed"]))
    result = mask_log_file(src, dst, _per_run_secrets())
    assert result.withheld and "known value 0" in result.reason and PER_RUN_KEY not in result.reason
    assert not dst.exists()


# -- no false withholding ---------------------------------------------------------------------------------

CONTROL_FILES = [
    FIXTURES / "judging/weatherfetch_readme_runner/log.txt",
    *sorted((FIXTURES / "judging/needles").glob("*/log.txt")),
    *sorted((FIXTURES / "sessions").glob("*/*.jsonl")),
]


@pytest.mark.parametrize("path", CONTROL_FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_ordinary_logs_are_served_unchanged(path: Path) -> None:
    data = path.read_bytes()
    result = mask_log(data, _per_run_secrets())
    assert not result.withheld, result.reason
    cast = _cast([line + "\r\n" for line in data.decode("utf-8", "replace").splitlines()])
    assert not mask_recording(cast, _per_run_secrets()).withheld


def test_the_check_alone_finds_nothing_in_real_logs() -> None:
    for path in CONTROL_FILES:
        assert check_text(path.read_text("utf-8", "replace"), [PER_RUN_KEY, SHARED_KEY]) == [], path


# -- pieces -------------------------------------------------------------------------------------------------


def test_terminal_drawing() -> None:
    assert drawn("abc\rX") == "Xbc"
    assert drawn("\x1b[5Gb\x1b[4Ga") == "   ab"
    assert drawn("abc\x08\x08Z") == "aZc"
    assert drawn("abcdef\x1b[3D\x1b[K") == "abc"
    assert len(drawn(f"\x1b[{10**9}Gx" + "y" * 10)) <= MAX_COLUMNS + 1
    assert shown("\x1b[31mred\x1b[0m plain") == "red plain"


def test_skeleton_folds_width_case_and_separators() -> None:
    assert skeleton("ＡＢ-c\u200bd e\n") == "abcde"


def test_gzip_bomb_is_bounded() -> None:
    bomb = base64.b64encode(gzip.compress(b"\0" * (64 << 20))).decode()
    assert check_text(bomb, [PER_RUN_KEY]) == []


def test_a_key_spread_over_windows_is_found_by_the_carried_skeleton() -> None:
    gap = " " * (viewer.WINDOW // 8)  # 25 characters over about three windows
    assert check_text(gap.join(PER_RUN_KEY), [PER_RUN_KEY])
    assert not check_text(gap.join("an ordinary sentence of text"), [PER_RUN_KEY])


def test_a_key_in_the_recording_header_is_withheld() -> None:
    cast = _cast(["hello\r\n"]).replace(b'"width"', f'"title": "{PER_RUN_KEY[::-1]}", "width"'.encode(), 1)
    result = mask_recording(cast, _per_run_secrets())
    assert result.withheld and "recording header" in result.reason


def test_a_copy_too_long_to_check_is_withheld(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(viewer, "MAX_CHECKED", 1000)
    result = mask_log(b"ordinary line\n" * 100, _per_run_secrets())
    assert result.withheld and "not checked" in result.reason
    assert not mask_log(b"ordinary line\n" * 100, []).withheld  # no live key: nothing to look for


def test_utf16_bytes_that_spell_full_width_letters_are_folded_like_every_other_form() -> None:
    """Chosen characters whose UTF-16 bytes are valid UTF-8 of full-width letters: the UTF-16 reading
    goes through NFKC too (U+BCEF U+41A1 is EF BC A1 41: full-width A, then A)."""
    forms = dict(viewer.decoded_forms("\ubcef\u41a1"))
    assert forms["utf-16"] == "\uff21A" and skeleton(forms["utf-16"]) == "aa"
    # what the check looks in: a skeleton computed once for speed must be the form's own skeleton
    for text in ("\ubcef\u41a1", "ＳＫ-Ｑ７ｖ", "sk-Q7vKx2 %73%6b \\x73 &#x73;", "c2stUTd2S3gy"):
        for name, decoded, known in viewer._forms(text):
            assert known is None or known == viewer.skeleton_bytes(decoded), (text, name)


# -- the fast paths give what the plain definitions give (issue 27) -----------------------------------------

_TERMINAL_PIECES = [
    *"abZ1 é━\n\r\x08\x1b",
    "\r\n",
    "\x1b[K",
    "\x1b[0K",
    "\x1b[2K",
    "\x1b[1K",
    "\x1b[00K",
    "\x1b[;K",
    "\x1b[3C",
    "\x1b[2D",
    "\x1b[5G",
    "\x1b[31m",
    "\x1b[",
    "\x1b]0;t\x07",
    "\x1bP",
    "\x9b1K",
    "\x1b(B",
]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(_TERMINAL_PIECES), max_size=40))
def test_moves_left_undrawn_change_nothing(pieces: list[str]) -> None:
    """`shown` draws only the lines with a move that can change them: the same text as drawing
    every line with any cursor move."""
    text = "".join(pieces)
    assert shown(text) == viewer._shown(text, viewer._MOVES)


def test_long_lines_are_drawn_as_before() -> None:
    text = "x" * (MAX_COLUMNS + 10) + "\r\n" + "abc\x1b[K\r\n"
    assert shown(text) == viewer._shown(text, viewer._MOVES)
    assert len(shown(text).split("\n")[0]) == MAX_COLUMNS


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200), st.integers(min_value=1, max_value=20))
def test_runs_are_the_greedy_matches(data: bytes, minimum: int) -> None:
    data = data.translate(bytes.maketrans(b"\x00\x01\x02\x03", b"aZ+-"))
    for table, pattern in (
        (viewer._B64_RUN_TABLE, rb"[A-Za-z0-9+/_\-]"),
        (viewer._B32_RUN_TABLE, rb"[A-Z2-7]"),
        (viewer._HEX_RUN_TABLE, rb"[0-9a-f]"),
    ):
        assert viewer._runs(data, table, minimum) == re.findall(pattern + b"{%d,}" % minimum, data)


def test_the_compact_text_removes_what_the_pattern_removes() -> None:
    every = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    removed = "".join(viewer._WHITESPACE_AND_INVISIBLE.findall(every))
    outside_ascii = "".join(viewer._NON_ASCII_SPACE_AND_INVISIBLE.findall(every))
    assert removed == bytes(viewer._ASCII_SPACE_AND_CONTROLS).decode() + outside_ascii
    assert viewer._compact("a \t\x00b\x7fc") == b"abc"
    assert viewer._compact("a\u200bb\u3000c é") == "abcé".encode()


def _encodings(key: str) -> dict[str, str]:
    raw = key.encode()
    out = {}
    for k in range(3):  # each of base64's byte alignments, standard and url-safe
        out[f"base64 at {k}"] = base64.b64encode(b"x" * k + raw).decode()
        out[f"base64url at {k}"] = base64.urlsafe_b64encode(b"\xfb" * k + raw).decode()
    out["hex"] = raw.hex()
    out["odd hex"] = "f" + raw.hex()
    out["UTF-16"] = key.encode("utf-16-le").decode("latin-1")
    out["%XX"] = "".join(f"%{b:02X}" for b in raw)
    out["base32"] = base64.b32encode(raw).decode()
    out["decimal codes"] = ",".join(str(b) for b in raw)
    return out


@pytest.mark.parametrize("form", sorted(_encodings(PER_RUN_KEY)))
def test_an_encoded_key_across_a_window_border_is_found(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each encoding, cut by the border of two windows at every offset: found in the overlap."""
    monkeypatch.setattr(viewer, "WINDOW", 2048)
    monkeypatch.setattr(viewer, "OVERLAP", 512)
    encoded = _encodings(PER_RUN_KEY)[form]
    line = "compiling module.c ... ok\n"
    for cut in range(0, len(encoded) + 1, max(1, len(encoded) // 8)):
        head = (line * 100)[: 2048 - cut]
        text = head + " " + encoded + " \n" + line * 50
        assert check_text(text, [PER_RUN_KEY]), (form, cut)
    assert not check_text(line * 300, [PER_RUN_KEY])


# -- the skeleton's and compact text's fast paths (issue 27) --------------------------------------------


def test_the_characters_that_fold_into_ascii_are_these() -> None:
    """Every code point outside ASCII whose case folding holds an ASCII letter or digit is listed."""
    derived = "".join(
        chr(c)
        for c in range(0x80, 0x110000)
        if not 0xD800 <= c <= 0xDFFF
        and chr(c).casefold().encode("ascii", "ignore").translate(None, viewer._NOT_ALNUM_BYTES)
    )
    assert derived == viewer.FOLDS_INTO_ASCII


def _reference_skeleton(text: str) -> bytes:
    """The definition: NFKC, case folded, ASCII letters and digits kept."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return folded.encode("ascii", "ignore").translate(None, viewer._NOT_ALNUM_BYTES)


_FOLDING_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from(viewer.FOLDS_INTO_ASCII + "\u0301\u0307\u200bＡｚ１é\u3000\u00a0\ufffd\x00½ﬃǅΣσς"),
        st.characters(),
    ),
    max_size=60,
)


@settings(max_examples=800, deadline=None)
@given(_FOLDING_TEXT)
def test_the_folded_skeleton_is_the_casefolded_one(text: str) -> None:
    assert viewer.skeleton_bytes(text) == _reference_skeleton(text)
    nfkc = unicodedata.normalize("NFKC", text)
    assert viewer._folded_skeleton(nfkc) == _reference_skeleton(text)
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):  # the decoders read text, not surrogates
        forms = {name: skel for name, _, skel in viewer._forms(text) if skel is not None}
        assert forms["as shown"] == _reference_skeleton(text)


def test_the_composing_characters_are_these() -> None:
    """`_COMPOSING` is every second character of a two-character canonical decomposition, every
    character with a non-zero combining class, and the Hangul vowel and trailing jamo; no canonical
    decomposition pairs a Hangul character with another one (`_skeleton_nfkc`'s argument)."""
    derived = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    hangul = viewer._HANGUL
    for c in range(0x110000):
        decomposition = unicodedata.decomposition(chr(c))
        if unicodedata.combining(chr(c)):
            derived.add(c)
        if decomposition and not decomposition.startswith("<"):
            parts = [chr(int(p, 16)) for p in decomposition.split()]
            if len(parts) == 2:
                derived.add(ord(parts[1]))
            assert not any(hangul.match(p) for p in [chr(c), *parts]), hex(c)
    assert set(np.flatnonzero(viewer._COMPOSING).tolist()) == derived
    for c in [*range(0x1100, 0x1200), *range(0xA960, 0xA980), *range(0xAC00, 0xD800)]:
        assert hangul.match(chr(c))
        assert unicodedata.combining(chr(c)) == 0
        assert not _reference_skeleton(chr(c)), hex(c)


_COMPOSING_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(max_codepoint=0x7F),
        st.sampled_from("\u0301\u0300\u0307\u030c\u0327\u0308\u3099\u309a\u0bbe\u0cd5\u1b35\u0345"),
        st.sampled_from("\u1100\u1161\u11a8\uac00\uac01\u3131\u314f\u3260\uffa1\ud7b0"),
        st.sampled_from("eEjJiIaAoOuUkKsS\u0130\u01f0\u017f\u1e9e\u00df\u212a\u3046\u30a6\u0b92\u0cc6"),
        st.characters(),
    ),
    max_size=80,
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(_COMPOSING_TEXT, st.binary(max_size=200).map(lambda b: b.decode("utf-16-le", "replace"))))
def test_the_skeleton_nfkc_gives_the_nfkc_skeleton(text: str) -> None:
    """Composing only the runs of composing characters (Hangul set aside) gives the skeleton of NFKC:
    combining marks after ASCII letters, Hangul syllables with jamo, decoded binary read as UTF-16."""
    assert viewer._folded_skeleton(viewer._skeleton_nfkc(text)) == _reference_skeleton(text)
    assert viewer.skeleton_bytes(text) == _reference_skeleton(text)
    if not viewer._HANGUL.search(text):
        assert viewer._skeleton_nfkc(text) == unicodedata.normalize("NFKC", text)


@settings(max_examples=500, deadline=None)
@given(_FOLDING_TEXT)
def test_the_compact_text_is_the_pattern_applied(text: str) -> None:
    nfkc = unicodedata.normalize("NFKC", text)
    expected = viewer._WHITESPACE_AND_INVISIBLE.sub("", nfkc).encode("utf-8", "surrogatepass")
    assert viewer._compact(nfkc) == expected


_TERMINAL_PIECES = st.lists(
    st.sampled_from(
        [
            "ab",
            "Z9",
            "\n",
            "\r",
            "\r\n",
            "\x08",
            "\x1b[K",
            "\x1b[0K",
            "\x1b[1K",
            "\x1b[2K",
            "\x1b[3D",
            "\x1b[2C",
            "\x1b[5G",
            "\x1b[31m",
            "\x1b[0m",
            "\x1b]0;title\x07",
            "\x1bP1$r\x1b\\",
            "\x1b(B",
            "\x1b",
            "\x9b1m",
            "é",
            "ｓ",
            " ",
            "sk-Q7vKx2",
        ]
    ),
    max_size=40,
)


@settings(max_examples=500, deadline=None)
@given(_TERMINAL_PIECES)
def test_shown_and_stripped_are_shown_and_stripped(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert viewer._shown_and_stripped(text) == (shown(text), viewer._ESCAPES.sub("", text))
    cut = text.rfind("\n")
    if cut >= 0 and not viewer._STRING_ESCAPE.search(text):  # a window cut after a line break
        head, rest = viewer._shown_and_stripped(text[: cut + 1]), viewer._shown_and_stripped(text[cut + 1 :])
        assert head[1] + rest[1] == viewer._ESCAPES.sub("", text)


@pytest.mark.parametrize("cut", [0, 7, 13, 20])
def test_a_key_written_with_letters_that_fold_into_ascii_is_found_in_a_long_log(
    cut: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ﬁ` and `ß` fold into `fi` and `ss`: the skeleton's fast path falls back to case folding, also
    when the key is cut by a window border (every character of the window but these is ASCII)."""
    monkeypatch.setattr(viewer, "WINDOW", 2048)
    monkeypatch.setattr(viewer, "OVERLAP", 512)
    key = "sk-fissure-Q7vKx2mPd9LrT4wZb8Ne"
    printed = key.replace("fi", "\ufb01").replace("ss", "\u00df").replace("K", "\u212a")
    line = "compiling module.c ... ok\n"
    head = line * (2048 // len(line)) + "x" * (2048 % len(line))
    text = head[: len(head) - cut] + printed + "\n" + line * 200
    assert check_text(text, [key]), cut
    assert check_text(text.replace(printed, "sk-[masked]"), [key]) == []
