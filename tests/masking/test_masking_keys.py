"""The attempt's own key is a known value of the masker, and our gateway's key shape is a rule.

Landing replaces the per-run key only as typed; the code under test can print it transformed, which
only a masker that knows the value finds (`test_masking_viewer.py` replays the forms). A gateway key
the masker was not told of (another attempt's) is found by its shape: `sk-` + 22 characters.
"""

from __future__ import annotations

from argusic.attempts.common import presentation_secrets
from argusic.attempts.keys import IssuedKey
from argusic.masking import find_leaks, mask_log

PER_RUN_KEY = "sk-Q7vKx2_mPd9LrT4wZb8N-e"  # "sk-" + secrets.token_urlsafe(16), as LiteLLM makes them


def test_per_run_key_is_a_known_value_of_the_presentation() -> None:
    key = IssuedKey(value=PER_RUN_KEY, kind="per_run", attempt_id="a1")
    assert PER_RUN_KEY in presentation_secrets(key)
    assert presentation_secrets(None) == presentation_secrets(
        IssuedKey(value="", kind="none", attempt_id="a")
    )


def test_gateway_key_shape_is_masked_without_being_known() -> None:
    other = "sk-Zy4_Pq1WnE8sRt5uVx2aB-"  # another attempt's key: the masker was not told of it
    result = mask_log(f"export OPENAI_BASE=x\ncurl -H 'x: {other}' http://gw/\n".encode(), [])
    assert not result.withheld and other.encode() not in result.data and b"[masked]" in result.data
    assert find_leaks(f"key {other}.", []) and not find_leaks("sk-learn-and-more-words-here", [])
