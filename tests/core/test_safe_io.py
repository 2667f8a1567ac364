"""core.safe_io: hostile text made safe to show (bidi controls visible as escapes)."""

from __future__ import annotations

import pytest
from argusic.core.safe_io import BIDI_CONTROLS, visible_bidi

# Ordinary non-ASCII text is shown as written: Korean, accents, emoji (a joined sequence), Arabic.
ORDINARY = "한국어 테스트 · café naïve Ærø · 🎉 👩\u200d💻 · مرحبا"


@pytest.mark.parametrize("control", list(BIDI_CONTROLS))
def test_every_bidi_control_is_shown_as_its_escape(control: str) -> None:
    shown = visible_bidi(f"ok{control}evil")
    assert control not in shown
    assert shown == f"ok\\u{ord(control):04x}evil"


def test_the_listed_controls_are_the_bidi_ones() -> None:
    expected = {*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C}
    assert {ord(c) for c in BIDI_CONTROLS} == expected


def test_ordinary_text_is_left_as_it_is() -> None:
    assert visible_bidi(ORDINARY) is ORDINARY  # not even copied
    assert visible_bidi("\u202e" + ORDINARY) == "\\u202e" + ORDINARY
