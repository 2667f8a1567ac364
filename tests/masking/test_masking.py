"""Masking of served copies: planted secrets in every position and form are never served.

The campaign tests plant secrets in generated recordings and logs and count what they did; the counts
are printed (run with -s) and written to `<pytest basetemp>/masking_counts*.json`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import string
from collections import Counter
from pathlib import Path
from urllib.parse import unquote

import pytest
from argusic import masking
from argusic.masking import (
    KEY_PLACEHOLDER,
    PLACEHOLDER,
    MaskPolicy,
    find_leaks,
    mask_chunks,
    mask_log,
    mask_recording,
    output_text,
    parse_cast,
    secret_forms,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

# -- an oracle written independently of the masker's views ------------------------------------------

_SIMPLE_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def _backspaced(text: str) -> str:
    while True:
        new = re.sub(r"[^\x08\r\n]\x08", "", text)
        if new == text:
            return new.replace("\x08", "")
        text = new


def oracle_views(served: str) -> list[str]:
    stripped = _backspaced(_SIMPLE_ANSI.sub("", served))
    joined = re.sub(r"[\r\n]", "", stripped)
    decoded = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m[1], 16)), joined)
    decoded = decoded.replace("\\/", "/").replace('\\"', '"').replace("\\\\", "\\")
    decoded = re.sub(r"\\[nrt]", "", decoded)
    return [served, stripped, joined, decoded, unquote(decoded)]


def _b64_decodings(text: str) -> list[bytes]:
    out = []
    runs = re.findall(r"[A-Za-z0-9+/=_\-]{8,}", text)
    for run in runs + [p for r in runs if "=" in r for p in re.split("=+", r)]:
        std = run.replace("-", "+").replace("_", "/").rstrip("=")
        for off in range(4):
            part = std[off:]
            part = part[:-1] if len(part) % 4 == 1 else part
            part += "=" * (-len(part) % 4)
            with contextlib.suppress(ValueError):
                out.append(base64.b64decode(part, validate=False))
    return out


def oracle_leaks(served: str, secret: str) -> list[str]:
    """Where `secret` is still readable in `served` (plain, de-escaped, base64-decoded, hex-decoded)."""
    found = []
    raw = secret.encode()
    views = oracle_views(served)
    for n, view in enumerate(views):
        if secret in view:
            found.append(f"plain in oracle view {n}")
    for view in views[1:]:
        if any(raw in blob for blob in _b64_decodings(view)):
            found.append("base64")
        for run in re.findall(r"[0-9a-fA-F]{12,}", view):
            for off in (0, 1):
                part = run[off:]
                part = part[: len(part) // 2 * 2]
                if raw in bytes.fromhex(part):
                    found.append("hex")
    return found


# -- generators ---------------------------------------------------------------------------------------

ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits


def _b64url_json(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj, separators=(",", ":")).encode()).decode().rstrip("=")


TOKEN_KINDS = ["random", "anthropic", "openai", "github", "aws", "jwt", "slack", "stripe"]


@st.composite
def realistic_token(draw, kinds=tuple(TOKEN_KINDS)) -> str:
    kind = draw(st.sampled_from(kinds))
    if kind == "random":
        return draw(st.text(alphabet=ALNUM + "-_.~+/", min_size=16, max_size=64).filter(lambda s: s.strip()))
    if kind == "anthropic":
        return "sk-ant-api03-" + draw(st.text(alphabet=ALNUM + "-_", min_size=40, max_size=95))
    if kind == "openai":
        return "sk-proj-" + draw(st.text(alphabet=ALNUM + "-_", min_size=40, max_size=80))
    if kind == "github":
        return "ghp_" + draw(st.text(alphabet=ALNUM, min_size=36, max_size=36))
    if kind == "aws":
        return "AKIA" + draw(st.text(alphabet=UPPER_DIGITS, min_size=16, max_size=16))
    if kind == "slack":
        digits = st.text(alphabet=string.digits, min_size=10, max_size=13)
        tail = draw(st.text(alphabet=string.ascii_lowercase + string.digits, min_size=24, max_size=24))
        return f"xoxb-{draw(digits)}-{draw(digits)}-{tail}"
    if kind == "stripe":
        return "sk_live_" + draw(st.text(alphabet=ALNUM, min_size=24, max_size=24))
    sub = draw(st.text(alphabet=ALNUM, min_size=4, max_size=20))
    sig = draw(st.text(alphabet=ALNUM + "-_", min_size=43, max_size=43))
    head = _b64url_json({"alg": "HS256", "typ": "JWT"})
    return f"{head}.{_b64url_json({'sub': sub, 'iat': 1700000000})}.{sig}"


ANSI_CODES = [
    "\x1b[31m",
    "\x1b[0m",
    "\x1b[1;32m",
    "\x1b[2K",
    "\x1b[?25l",
    "\x1b]0;title\x07",
    "\x1b[38;5;208m",
]

# Forms the masker must remove for a value the caller names (a live key).
KNOWN_FORMS = [
    "raw",
    "ansi",
    "json_u",
    "json_dump",
    "url",
    "base64",
    "base64url",
    "base64_wrapped",
    "hex",
    "hex_upper",
    "folded",
    "backspace",
]
# Forms a detector can see for a value nobody named (a token-shaped value in the output).
DETECTOR_FORMS = ["raw", "ansi", "json_u", "url"]


@st.composite
def encoded(draw, secret: str, form: str) -> str:
    if form == "raw":
        return secret
    if form == "ansi":
        cuts = sorted(draw(st.lists(st.integers(1, len(secret) - 1), min_size=1, max_size=4)))
        pieces, last = [], 0
        for c in cuts:
            pieces += [secret[last:c], draw(st.sampled_from(ANSI_CODES))]
            last = c
        return "".join(pieces) + secret[last:]
    if form == "json_u":
        mask = draw(st.lists(st.booleans(), min_size=len(secret), max_size=len(secret)))
        return "".join(f"\\u{ord(c):04x}" if m else c for c, m in zip(secret, mask, strict=True))
    if form == "json_dump":
        return json.dumps({"api_key": secret}).replace("/", "\\/")
    if form == "url":
        mask = draw(st.lists(st.booleans(), min_size=len(secret), max_size=len(secret)))
        return "".join(f"%{ord(c):02X}" if m else c for c, m in zip(secret, mask, strict=True))
    if form in ("base64", "base64url", "base64_wrapped"):
        prefix = draw(st.binary(max_size=5))
        suffix = draw(st.binary(max_size=5))
        blob = prefix + secret.encode() + suffix
        text = (base64.urlsafe_b64encode if form == "base64url" else base64.b64encode)(blob).decode()
        if form == "base64_wrapped":
            width = draw(st.sampled_from([16, 60, 76]))
            text = "\n".join(text[i : i + width] for i in range(0, len(text), width))
        return text
    if form == "hex":
        return secret.encode().hex()
    if form == "hex_upper":
        return secret.encode().hex().upper()
    if form == "folded":
        at = draw(st.integers(1, len(secret) - 1))
        return secret[:at] + "\r\n" + secret[at:]
    if form == "backspace":
        at = draw(st.integers(1, len(secret) - 1))
        return secret[:at] + "Z\x08" + secret[at:]
    raise AssertionError(form)


COMMANDS = [
    "$ pip install -e .",
    "$ pytest -q tests",
    "$ python -m build",
    "src $ make test",
    "$ npm ci && npm test",
    "$ cargo build --release",
    "$ env | sort",
    "$ cat ~/.config/claude/settings.json",
    "$ pip install anthropic openai",
    "$ ls /home/claude/projects/codex-cli",
]
OUTPUT_WORDS = [
    "ok",
    "Collecting",
    "wheel",
    "passed",
    "failed",
    "error:",
    "building",
    "done",
    "in",
    "1.2s",
    "->",
]


@st.composite
def planted_recording(draw, forms=KNOWN_FORMS, known=True):
    """(stream chunks, secrets given to the masker, plants [(secret, planted text)], command lines)."""
    kinds = TOKEN_KINDS if known else TOKEN_KINDS[1:]  # a random string has no format to detect
    secrets = draw(st.lists(realistic_token(tuple(kinds)), min_size=1, max_size=3, unique=True))
    segments: list[str] = []
    plants: list[tuple[str, str]] = []
    commands: list[str] = []
    for _ in range(draw(st.integers(2, 8))):
        choice = draw(st.sampled_from(["command", "output", "plant"]))
        if choice == "command":
            cmd = draw(st.sampled_from(COMMANDS))
            commands.append(cmd)
            segments.append(f"\x1b[1m{cmd.split('$ ')[0]}$ \x1b[0m{cmd.split('$ ', 1)[1]}\r\n")
        else:
            words = draw(st.lists(st.sampled_from(OUTPUT_WORDS), min_size=1, max_size=6))
            line = " ".join(words)
            if choice == "plant":
                secret = draw(st.sampled_from(secrets))
                text = draw(encoded(secret, draw(st.sampled_from(forms))))
                plants.append((secret, text))
                at = draw(st.integers(0, len(line)))
                sep = "" if known else " "
                line = line[:at] + sep + text + sep + line[at:]
            segments.append(line + "\r\n")
    if not plants:  # every case plants at least one secret
        secret = secrets[0]
        text = draw(encoded(secret, draw(st.sampled_from(forms))))
        plants.append((secret, text))
        segments.insert(draw(st.integers(0, len(segments))), f"value: {text}\r\n")
    stream = "".join(segments)
    cuts = sorted(set(draw(st.lists(st.integers(0, len(stream)), max_size=12))))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    return chunks, (secrets if known else []), plants, commands


def make_cast(chunks: list[str], header: dict | None = None) -> bytes:
    head = header or {"version": 2, "width": 120, "height": 40, "timestamp": 1700000000}
    lines = [json.dumps(head)] + [json.dumps([round(0.25 * n, 6), "o", c]) for n, c in enumerate(chunks)]
    return ("\n".join(lines) + "\n").encode()


def check_case(case, counts: Counter) -> None:
    chunks, secrets, plants, commands = case
    cast = make_cast(chunks)
    log = "".join(chunks).encode()
    counts["attempts"] += 1  # one generated session, served as a recording and as a log
    counts["secrets_planted"] += len(plants)
    counts["distinct_secrets"] += len({s for s, _ in plants})
    for secret, _ in plants:  # the oracle is not vacuous: it reads every plant in the raw stream
        if not oracle_leaks("".join(chunks), secret):
            counts["oracle_misses"] += 1
    for kind, result in (("recording", mask_recording(cast, secrets)), ("log", mask_log(log, secrets))):
        counts[f"{kind}s"] += 1
        counts["plant_checks"] += len(plants)
        if result.withheld:
            counts["withheld"] += 1
            continue
        served = output_text(result.data) if kind == "recording" else result.data.decode()
        if kind == "recording":
            original = parse_cast(cast).events
            events = parse_cast(result.data).events
            assert [e[0] for e in events] == [e[0] for e in original], "event times changed"
            assert all(
                len(e[2]) <= len(o[2]) + len(PLACEHOLDER) + 8 for e, o in zip(events, original, strict=True)
            )
        leaks = 0
        for secret, planted in plants:
            if planted in served or oracle_leaks(served, secret):
                leaks += 1
        counts["leaks_found"] += leaks
        stripped = _SIMPLE_ANSI.sub("", served)
        for cmd in commands:
            if cmd not in stripped:
                counts["commands_lost"] += 1
        counts["commands_checked"] += len(commands)


def _write_counts(tmp_path_factory, name: str, counts: Counter) -> None:
    path = tmp_path_factory.getbasetemp() / f"{name}.json"
    path.write_text(json.dumps(dict(counts), indent=2, sort_keys=True))
    print(f"\n{name}: {json.dumps(dict(counts), sort_keys=True)} -> {path}")


_CAMPAIGN = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}


def _campaign(tmp_path_factory, name: str, n: int, strategy) -> Counter:
    counts: Counter = Counter()

    @settings(max_examples=n, **_CAMPAIGN)
    @given(case=strategy)
    def run(case) -> None:
        check_case(case, counts)

    run()
    _write_counts(tmp_path_factory, name, counts)
    return counts


def test_campaign_known_secrets_every_form(tmp_path_factory) -> None:
    """Live keys planted in every form, anywhere, split over random events: none is served."""
    counts = _campaign(tmp_path_factory, "masking_counts_known", 150, planted_recording())
    assert counts["recordings"] >= 100 and counts["secrets_planted"] >= 150
    assert counts["leaks_found"] == 0
    assert counts["withheld"] == 0  # every form here is one the masker can remove
    assert counts["commands_lost"] == 0 and counts["oracle_misses"] == 0


def test_campaign_token_formats_nobody_named(tmp_path_factory) -> None:
    """Token-shaped values that no caller named (detect-secrets + supplementary patterns)."""
    strategy = planted_recording(forms=DETECTOR_FORMS, known=False)
    counts = _campaign(tmp_path_factory, "masking_counts_detected", 80, strategy)
    assert counts["leaks_found"] == 0 and counts["withheld"] == 0 and counts["commands_lost"] == 0
    assert counts["oracle_misses"] == 0


@pytest.mark.slow
def test_campaign_known_secrets_large(tmp_path_factory) -> None:
    counts = _campaign(tmp_path_factory, "masking_counts_known_large", 1500, planted_recording())
    assert counts["leaks_found"] == 0 and counts["withheld"] == 0 and counts["commands_lost"] == 0
    assert counts["oracle_misses"] == 0


# -- encodings -------------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(secret=st.text(min_size=6, max_size=40), prefix=st.binary(max_size=6), suffix=st.binary(max_size=6))
def test_base64_forms_cover_every_alignment(secret: str, prefix: bytes, suffix: bytes) -> None:
    blob = prefix + secret.encode() + suffix
    forms = [f for f, kind in secret_forms(secret).items() if kind == "base64"]
    for encoder in (base64.b64encode, base64.urlsafe_b64encode):
        text = encoder(blob).decode()
        assert any(f in text for f in forms)


def test_short_values_are_counted_not_masked() -> None:
    chunks, stats, remaining = mask_chunks(["abc and abc\n"], ["abc"])
    assert chunks == ["abc and abc\n"] and stats.ignored_short_values == 1 and not remaining


# -- recordings --------------------------------------------------------------------------------------------

KEY = "sk-ant-api03-" + "Q" * 10 + "abcdefghijklmnopqrstuvwxyz0123456789"


def test_secret_split_over_events_keeps_times_and_event_count() -> None:
    chunks = [
        "$ env\r\nANTHROPIC_API_KEY=sk-ant-",
        "api03-QQQQQQQQQQabcdefghij",
        "klmnopqrstuvwxyz0123456789\r\nok\r\n",
    ]
    result = mask_recording(make_cast(chunks), [KEY])
    assert not result.withheld and result.masking_applied
    events = parse_cast(result.data).events
    assert [e[0] for e in events] == [0.0, 0.25, 0.5]
    assert events[0][2] == "$ env\r\nANTHROPIC_API_KEY=" + PLACEHOLDER
    assert events[1][2] == ""
    assert events[2][2] == "\r\nok\r\n"


def test_input_events_and_header_are_masked() -> None:
    header = {"version": 2, "width": 80, "height": 24, "title": f"run with {KEY}", "env": {"K": KEY}}
    lines = [json.dumps(header), json.dumps([0.1, "i", KEY[:20]]), json.dumps([0.2, "i", KEY[20:]])]
    lines.append(json.dumps([0.3, "o", "done\r\n"]))
    result = mask_recording(("\n".join(lines) + "\n").encode(), [KEY])
    assert not result.withheld
    assert KEY not in result.data.decode() and KEY[:20] not in result.data.decode()
    cast = parse_cast(result.data)
    assert cast.header["title"] == f"run with {PLACEHOLDER}" and cast.header["env"]["K"] == PLACEHOLDER


@pytest.mark.parametrize(
    "data",
    [b"not json\n", b'{"version": 1}\n', b'{"version": 2}\n[0.1, "o"]\n', b'{"version": 2}\n\xff\n'],
)
def test_unparseable_recording_is_withheld(data: bytes) -> None:
    result = mask_recording(data, [KEY])
    assert result.withheld and result.data is None and "unparseable" in result.reason


def test_copy_that_cannot_be_masked_is_withheld(monkeypatch: pytest.MonkeyPatch) -> None:
    """The verification pass is independent of the redaction step: a broken step means withheld."""
    monkeypatch.setattr(masking.engine, "_replacement", lambda kind, covered, continuation: bytes(covered))
    result = mask_recording(make_cast([f"key={KEY}\r\n"]), [KEY])
    assert result.withheld and result.data is None
    assert KEY not in result.reason and "known value #0" in result.reason
    assert mask_log(f"key={KEY}\n".encode(), [KEY]).withheld


def test_reasons_never_contain_the_secret() -> None:
    leaks = find_leaks(f"a {KEY} b {base64.b64encode(KEY.encode()).decode()}", [KEY])
    assert leaks and not any(KEY in s or KEY[:12] in s for s in leaks)


def test_log_bytes_that_are_not_utf8_are_kept() -> None:
    data = b"\xff\xfe binary \x80 " + KEY.encode() + b" tail\n"
    result = mask_log(data, [KEY])
    assert result.data == b"\xff\xfe binary \x80 " + PLACEHOLDER.encode() + b" tail\n"


# -- private keys ------------------------------------------------------------------------------------------

PEM_BODY = [
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
    "MzEfYyjiWA4R4/M2bS1GB4t7NXp98C3SC6dVMvDuictGeurT8jNbvJZHtCSuYEvu",
    "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
]
PEM = "-----BEGIN PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END PRIVATE KEY-----\n"


def test_generated_private_key_body_is_redacted_not_withheld() -> None:
    chunks = [
        "$ python keygen.py\r\n",
        PEM[:70].replace("\n", "\r\n"),
        PEM[70:].replace("\n", "\r\n"),
        "ok\r\n",
    ]
    result = mask_recording(make_cast(chunks), [KEY])
    assert not result.withheld and result.masking_applied and result.generated_key_material
    served = output_text(result.data)
    assert "-----BEGIN PRIVATE KEY-----" in served and "-----END PRIVATE KEY-----" in served
    assert KEY_PLACEHOLDER in served and "$ python keygen.py" in served
    assert not any(line[:20] in served for line in PEM_BODY)
    (block,) = result.stats.key_blocks
    assert block.label == "PRIVATE KEY" and len(block.sha256) == 64


def test_key_printed_again_json_escaped_and_truncated_is_redacted_too() -> None:
    escaped = json.dumps({"pem": PEM})
    truncated = PEM.split("-----END")[0]  # the output stopped before the END line
    text = f"$ cat key.json\n{escaped}\n$ head -3 key.pem\n{truncated}$ echo done\ndone\n"
    result = mask_log(text.encode(), [])
    assert not result.withheld and result.generated_key_material
    served = result.data.decode()
    assert not any(line[:20] in served for line in PEM_BODY)
    for cmd in ("$ cat key.json", "$ head -3 key.pem", "$ echo done"):
        assert cmd in served
    assert len({k.sha256 for k in result.stats.key_blocks}) == 1  # the same key, whatever the form


# -- banners and commands ----------------------------------------------------------------------------------

CLAUDE_BOX = [
    "╭───────────────────────────────────────────────────╮",
    "│ ✻ Welcome to Claude Code!                         │",
    "│                                                   │",
    "│   /help for help, /status for your current setup  │",
    "│                                                   │",
    "│   cwd: /work/project                              │",
    "╰───────────────────────────────────────────────────╯",
]
CODEX_BOX = [
    "╭──────────────────────────────────────────────╮",
    "│ >_ OpenAI Codex (v0.46.0)                    │",
    "│                                              │",
    "│ model:     gpt-5-codex   /model to change    │",
    "│ directory: /work/project                     │",
    "╰──────────────────────────────────────────────╯",
]


def test_vendor_banners_hidden_commands_and_vendor_words_in_work_kept() -> None:
    work = [
        "$ pip install anthropic openai",
        "Successfully installed anthropic-0.40.0 openai-1.50.0",
        "$ ls /home/claude/codex-cli",
        "README.md  src",
        "╭────────╮",
        "│ a table drawn by the project │",
        "╰────────╯",
        "$ git diff --stat",
        " src/claude_code_compat.py | 4 ++--",
    ]
    text = (
        "\r\n".join(["\x1b[38;5;174m" + line + "\x1b[0m" for line in CLAUDE_BOX] + CODEX_BOX + work) + "\r\n"
    )
    result = mask_recording(make_cast([text[i : i + 50] for i in range(0, len(text), 50)]), [])
    assert not result.withheld
    served = _SIMPLE_ANSI.sub("", output_text(result.data))
    assert "Welcome to Claude Code" not in served and "OpenAI Codex" not in served and "gpt-5" not in served
    assert served.splitlines() == work
    assert result.stats.banner_lines_hidden == len(CLAUDE_BOX) + len(CODEX_BOX)
    assert not result.masking_applied  # hiding banners is not security masking


def test_the_stream_json_start_message_is_hidden_like_a_banner_and_the_agent_work_stays() -> None:
    """claude-code's driver tees its stream-json to the terminal: the first message ("init": model,
    version, key source) is the tool's start banner in machine form (issue 32); what follows stays."""
    init = (
        '{"type":"system","subtype":"init","cwd":"/workspace/project","model":"claude-sonnet-4-5",'
        '"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.332","tools":["Bash"]}'
    )
    work = [
        '{"type":"assistant","message":{"content":[{"type":"text","text":"pip install anthropic"}]}}',
        "$ ls",
    ]
    text = "\n".join([init, *work]) + "\n"
    log = mask_log(text.encode(), [])
    assert log.data.decode().splitlines() == work and log.stats.banner_lines_hidden == 1
    cast = mask_recording(
        make_cast([text[i : i + 40].replace("\n", "\r\n") for i in range(0, len(text), 40)]), []
    )
    served = output_text(cast.data)
    assert "claude_code_version" not in served and "pip install anthropic" in served and "$ ls" in served


def test_command_lines_are_never_hidden_even_inside_a_banner_box() -> None:
    policy = MaskPolicy()
    text = "╭──╮\n│ Claude Code │\n$ rm -rf build\n╰──╯\n"
    chunks, stats, _ = mask_chunks([text], [], policy)
    assert chunks == ["$ rm -rf build\n"] and stats.banner_lines_hidden == 3


@settings(max_examples=60, deadline=None)
@given(
    commands=st.lists(st.sampled_from(COMMANDS), min_size=1, max_size=6),
    with_banner=st.booleans(),
    cuts=st.lists(st.integers(0, 2000), max_size=10),
)
def test_every_command_line_survives(commands: list[str], with_banner: bool, cuts: list[int]) -> None:
    lines = (CLAUDE_BOX if with_banner else []) + [x for c in commands for x in (c, "output line")]
    stream = "\r\n".join(lines) + "\r\n"
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    chunks = [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    result = mask_recording(make_cast(chunks), [KEY])
    served_lines = output_text(result.data).split("\r\n")
    for cmd in commands:
        assert cmd in served_lines
    log = mask_log(stream.replace("\r\n", "\n").encode(), [KEY]).data.decode().splitlines()
    assert [x for x in log if x.startswith(("$", "src $"))] == commands


def test_ordinary_log_text_is_left_alone() -> None:
    text = (
        "$ cat settings.py\n"
        'DB_PASSWORD = "${DB_PASSWORD}"\n'
        "secret = get_secret()\n"
        'token = "<your token here>"\n'
        "commit 0123456789abcdef0123456789abcdef01234567\n"
        "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
        "Successfully installed anthropic-0.40.0 requests-2.32.3\n"
    )
    result = mask_log(text.encode(), [KEY])
    assert result.data.decode() == text and not result.masking_applied


# -- the shapes campaign: every shape, planted and counted on its own --------------------------------------
#
# Each shape is a way a secret shows up in real output that a plain search misses. A case is a session
# (output lines, commands, cut into recording events at random) with one to three secrets planted in
# one shape; it is served as a recording and as a log. "leaked" counts plants whose whole value the
# oracle still reads; "partial" counts plants of which 8 consecutive characters are still readable.

MORE_KINDS = ["npm", "digitalocean", "gitlab", "huggingface", "sendgrid"]


@st.composite
def any_token(draw, kinds: tuple[str, ...]) -> str:
    kind = draw(st.sampled_from(kinds))
    if kind in TOKEN_KINDS:
        return draw(realistic_token((kind,)))
    if kind == "npm":
        return "npm_" + draw(st.text(alphabet=ALNUM, min_size=36, max_size=36))
    if kind == "digitalocean":
        return "dop_v1_" + draw(st.text(alphabet="0123456789abcdef", min_size=64, max_size=64))
    if kind == "gitlab":
        return "glpat-" + draw(st.text(alphabet=ALNUM + "-_", min_size=20, max_size=20))
    if kind == "huggingface":
        return "hf_" + draw(st.text(alphabet=ALNUM, min_size=34, max_size=34))
    sg = st.text(alphabet=ALNUM + "-_", min_size=22, max_size=22)
    return f"SG.{draw(sg)}.{draw(st.text(alphabet=ALNUM + '-_', min_size=43, max_size=43))}"


SECRET_NAMES = ["DB_PASSWORD", "SOMETHING_PASSWORD", "api_key", "GITHUB_TOKEN", "client_secret", "PGPASS"]


@st.composite
def shaped(draw, secret: str, shape: str, known: bool = True) -> str:
    """`secret` in one shape (the text planted in the output). A value nobody named is found by its
    format, and a format is a whole token: inside decoded bytes, as in plain text, it must not be glued
    to letters or digits (`xhf_…` is no token; random neighbours made such cases now and then)."""
    if shape == "fold_any_width":  # `fold -w N`, or a terminal of N columns, from any column
        width = draw(st.integers(1, len(secret) + 8))
        column = draw(st.integers(0, width - 1))
        cut = [max(0, width - column)] if width - column < len(secret) else []
        while cut and cut[-1] + width < len(secret):
            cut.append(cut[-1] + width)
        bounds = [0, *cut, len(secret)]
        sep = draw(st.sampled_from(["\n", "\r\n"]))
        return sep.join(secret[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a)
    if shape == "colour_every_char":
        return "".join(c + draw(st.sampled_from(ANSI_CODES)) for c in secret)
    if shape == "base64_echo":  # `echo $TOKEN | base64` (wrapped at 76 like coreutils)
        text = base64.b64encode(secret.encode() + b"\n").decode()
        return "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    if shape == "base64url_inside":  # in the middle of a longer base64url text
        before, after = draw(st.binary(min_size=1, max_size=9)), draw(st.binary(max_size=9))
        if not known:  # a token's own edges, as a delimiter would give them in plain text
            edge = st.sampled_from([b" ", b"\n", b'"', b";", b"\x00", b"\xff"])
            before, after = before + draw(edge), draw(edge) + after
        blob = before + secret.encode() + after
        return base64.urlsafe_b64encode(blob).decode().rstrip("=")
    if shape == "hex_xxd":  # `xxd -p`: lower-case hex, 60 digits a line
        text = secret.encode().hex()
        return "\n".join(text[i : i + 60] for i in range(0, len(text), 60))
    if shape == "url_every_char":
        return "".join(f"%{b:02X}" for b in secret.encode())
    if shape == "json_escaped":
        return json.dumps(json.dumps({"token": secret}))[1:-1]  # printed twice-encoded, as logs do
    if shape == "assignment":
        name = draw(st.sampled_from(SECRET_NAMES))
        style = draw(st.sampled_from(["{n}={v}", "export {n}={v}", '{n}="{v}"', "{n}: {v}", '"{n}": "{v}"']))
        return style.format(n=name, v=secret)
    raise AssertionError(shape)


KNOWN_SHAPES = ["fold_any_width", "colour_every_char", "base64_echo", "base64url_inside", "hex_xxd",
                "url_every_char", "json_escaped"]  # fmt: skip
DETECTED_SHAPES = [*KNOWN_SHAPES, "assignment"]


@st.composite
def shape_case(draw, shape: str, known: bool):
    """(chunks, secrets told to the masker, [(secret, planted text)], command lines) for one shape."""
    if shape == "assignment":
        value = st.text(alphabet=ALNUM + "!@#%^*-_.", min_size=8, max_size=40)
        secrets = draw(st.lists(value, min_size=1, max_size=3, unique=True))
    else:
        kinds = TOKEN_KINDS + MORE_KINDS if known else TOKEN_KINDS[1:] + MORE_KINDS
        secrets = draw(st.lists(any_token(tuple(kinds)), min_size=1, max_size=3, unique=True))
    lines, plants, commands = [], [], []
    for secret in secrets:
        for _ in range(draw(st.integers(0, 3))):
            cmd = draw(st.sampled_from(COMMANDS))
            commands.append(cmd)
            lines.append(f"\x1b[1m{cmd.split('$ ')[0]}$ \x1b[0m{cmd.split('$ ', 1)[1]}")
            lines.append(" ".join(draw(st.lists(st.sampled_from(OUTPUT_WORDS), min_size=1, max_size=5))))
        text = draw(shaped(secret, shape, known))
        plants.append((secret, text))
        lines.append(f"{draw(st.sampled_from(OUTPUT_WORDS))} {text} {draw(st.sampled_from(OUTPUT_WORDS))}")
    stream = "\r\n".join(lines) + "\r\n"
    cuts = sorted(set(draw(st.lists(st.integers(0, len(stream)), max_size=12))))
    bounds = [0, *cuts, len(stream)]
    chunks = [stream[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    return chunks, (secrets if known else []), plants, commands


def fragment_leaks(served: str, secret: str, size: int = 8) -> bool:
    """Whether `size` consecutive characters of `secret` are still readable (plain or decoded)."""
    views = oracle_views(served)
    pieces = {secret[i : i + size] for i in range(len(secret) - size + 1)}
    return any(p in v for v in views for p in pieces)


def check_shape_case(case, shape: str, counts: Counter) -> None:
    chunks, secrets, plants, commands = case
    counts["cases"] += 1
    counts["planted"] += len(plants)
    for secret, _ in plants:  # the oracle reads every plant in the unmasked stream
        if not (oracle_leaks("".join(chunks), secret) or shape == "assignment"):
            counts["oracle_misses"] += 1
    log = "".join(chunks).replace("\r\n", "\n").encode()
    for kind, result in (
        ("recording", mask_recording(make_cast(chunks), secrets)),
        ("log", mask_log(log, secrets)),
    ):
        if result.withheld:
            counts[f"{kind}_withheld"] += 1
            continue
        served = output_text(result.data) if kind == "recording" else result.data.decode()
        for secret, planted in plants:
            if planted in served or oracle_leaks(served, secret):
                counts[f"{kind}_leaked"] += 1
            elif fragment_leaks(served, secret):
                counts[f"{kind}_partial"] += 1
        stripped = _SIMPLE_ANSI.sub("", served)
        counts[f"{kind}_commands_lost"] += sum(1 for cmd in commands if cmd not in stripped)


def _one_shape(shape: str, known: bool, n: int) -> Counter:
    counts: Counter = Counter()

    @settings(max_examples=n, **_CAMPAIGN)
    @given(case=shape_case(shape, known))
    def run(case) -> None:
        check_shape_case(case, shape, counts)

    run()
    return counts


def _shape_campaign(tmp_path_factory, name: str, shapes: list[str], known: bool, n: int) -> dict:
    report: dict[str, Counter] = {}
    for shape in shapes:
        report[shape] = _one_shape(shape, known, n)
    path = tmp_path_factory.getbasetemp() / f"{name}.json"
    path.write_text(json.dumps({k: dict(v) for k, v in report.items()}, indent=2, sort_keys=True))
    for shape, counts in report.items():
        print(f"\n{name} {shape}: {json.dumps(dict(counts), sort_keys=True)}")
    return report


def _assert_clean(report: dict) -> None:
    for shape, counts in report.items():
        assert counts["oracle_misses"] == 0, shape
        for kind in ("recording", "log"):
            assert counts[f"{kind}_leaked"] == 0, (shape, kind, dict(counts))
            assert counts[f"{kind}_withheld"] == 0, (shape, kind, dict(counts))
            assert counts[f"{kind}_commands_lost"] == 0, (shape, kind, dict(counts))


def test_shapes_campaign_known_values(tmp_path_factory) -> None:
    """Live keys the caller names, in every shape: none is served, whole or in part."""
    report = _shape_campaign(tmp_path_factory, "masking_shapes_known", KNOWN_SHAPES, True, 25)
    _assert_clean(report)
    for shape, counts in report.items():
        assert counts["recording_partial"] == 0 and counts["log_partial"] == 0, (shape, dict(counts))


def test_shapes_campaign_detected_values(tmp_path_factory) -> None:
    """Token formats and secret assignments nobody named, in every shape: none is served whole."""
    report = _shape_campaign(tmp_path_factory, "masking_shapes_detected", DETECTED_SHAPES, False, 25)
    _assert_clean(report)


@pytest.mark.slow
def test_shapes_campaign_large(tmp_path_factory) -> None:
    known = _shape_campaign(tmp_path_factory, "masking_shapes_known_large", KNOWN_SHAPES, True, 200)
    detected = _shape_campaign(tmp_path_factory, "masking_shapes_detected_large", DETECTED_SHAPES, False, 200)
    _assert_clean(known)
    _assert_clean(detected)


REAL_STREAM = Path(__file__).parents[1] / "fixtures" / "judging" / "claude_code_read_last.jsonl"


def test_the_stream_json_model_fields_are_emptied_and_every_word_and_command_of_the_agent_stays() -> None:
    """A real claude-code stream-json session (tests/fixtures/judging), as its driver tees it to the
    terminal: every assistant line's header names the model ("model":"claude-sonnet-4-5-2025…") and
    the result keys its "modelUsage" by model name. Served copies empty those machine fields (issue
    32) and keep the rest of each line byte for byte: the agent's text, its tool calls and commands,
    the tool results, the usage numbers."""
    raw = REAL_STREAM.read_text(encoding="utf-8")
    lines = raw.splitlines()
    assert sum('"model":"claude-sonnet-4-5-20250929"' in line for line in lines) == 9
    # The agent once typed a model name in a command and in its words: those stay (never censored).
    typed = (
        '{"type":"assistant","message":{"id":"msg_X","type":"message","role":"assistant","model":'
        '"claude-sonnet-4-5-20250929","content":[{"type":"tool_use","id":"toolu_X","name":"Bash","input":'
        '{"command":"grep -r \\"model\\": config.json # claude-sonnet-4-5","model":"kept"}},{"type":"text",'
        '"text":"the \\"model\\":\\"claude-opus\\" key"}]}}'
    )
    text = "\n".join([*lines, typed]) + "\n"
    log = mask_log(text.encode(), [])
    served = log.data.decode().splitlines()
    header = re.compile(r'"role":"assistant","model":"[a-z0-9-]+"')
    usage = re.compile(r'"claude-[a-z0-9-]+":\{"inputTokens"')
    expected = [
        usage.sub('"":{"inputTokens"', header.sub('"role":"assistant","model":""', line, count=1))
        for line in [*lines[1:], typed]  # the first line, "init", is hidden whole (the start banner)
    ]
    assert served == expected
    assert "claude-sonnet-4-5-20250929" not in "\n".join(served[:-1])
    assert "claude-haiku" not in log.data.decode()
    assert '# claude-sonnet-4-5","model":"kept"' in served[-1] and '\\"claude-opus\\"' in served[-1]
    for line in served:
        json.loads(line)  # still JSON lines
    assert log.stats.banner_lines_hidden == 1 and log.stats.machine_fields_hidden == 10 + 1 + 2
    assert not log.masking_applied
    # The recording (the same bytes cut anywhere into output events): the same fields emptied.
    cast = mask_recording(
        make_cast([text[i : i + 97].replace("\n", "\r\n") for i in range(0, len(text), 97)]), []
    )
    shown = output_text(cast.data).replace("\r\n", "\n")
    assert shown.splitlines() == expected
