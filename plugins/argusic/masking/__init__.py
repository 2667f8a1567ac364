"""Security masking for served copies of evidence (section 17, presentation layer).

Raw evidence is never touched: these functions read the raw bytes of a log or an asciicast v2
recording (in memory, or streamed file → file with bounded memory) and produce a *served copy*, or
withhold it.

What is removed from a served copy:

* Live credential values given by the caller, and every value a detector found, in every form: as
  typed; split by colour codes or other escapes, overtyped with backspaces, wrapped over lines or over
  recording events at any width; JSON/C escaped, URL-encoded, HTML entities; hex (either case); base64
  and base64url at each of the three byte alignments (also wrapped).
* Every token format of kingfisher's rule set (the gitleaks lineage and Google OSV-SCALIBR: 487 of its
  488 rules, its private-key rule aside) and of detect-secrets' regex plugins, plus a few of ours (JWTs
  whole, Anthropic/OpenAI keys of any length); tokens inside base64 or hex runs
  (``echo $TOKEN | base64``); values of assignments whose name
  says secret/password/token/key (quoted or not; short values are masked in place, values of at least
  `min_secret_len` characters everywhere); quoted high-entropy strings (`rules.py`).
* Private-key bodies (``-----BEGIN ... PRIVATE KEY-----`` ... ``-----END ...-----``, also when the END
  line never came): the markers stay, the body becomes a placeholder, the body's fingerprint is
  reported. Generated key material is a project's own output: it flags ``masking_applied`` but is never
  a reason to withhold, unless its redaction cannot be verified.
* Vendor start-up banners (``BannerRule``). A line that is a command (``CommandPatterns``: the
  harness's ``$ ...`` prompt echo and the log's ``STEP ...:`` lines) is never hidden; a credential
  *inside* a command is still masked.

Finally every served copy is checked the way a viewer sees it (`viewer.py`): the recording's
streams joined and drawn as a terminal draws them, then folded, stripped and decoded (reversed,
spaced, full-width, rot13, per-character codes, base64/base32/hex, gzip, halves...). A copy that
still shows one of the caller's values in any of those forms is withheld.

Masking runs in rounds (`engine.py`): each round reads the stream once in windows and writes it
redacted; rounds repeat until one finds nothing, which verifies the served bytes with every finder,
including checks that do not depend on the detectors (every known value in every form, high-entropy
text left next to a masked span). What is still found after `max_rounds` is withheld, and the caller
reruns the attempt; so is input that cannot be parsed.

Messages never contain secret values: a finding is described by rule, index, form and view only.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from argusic.core.settings import scratch_root
from argusic.masking.engine import MaskState
from argusic.masking.policy import (
    DEFAULT_BANNERS,
    DEFAULT_COMMAND_PATTERNS,
    DEFAULT_POLICY,
    KEY_PLACEHOLDER,
    MASKING_VERSION,
    MIN_SECRET_LEN,
    PLACEHOLDER,
    BannerRule,
    KeyBlock,
    MaskingError,
    MaskPolicy,
    MaskResult,
    MaskStats,
)
from argusic.masking.recording import mask_cast, parse_event, parse_header, verify_cast
from argusic.masking.rules import RulesUnavailable
from argusic.masking.stream import Buffer, Workspace, find_only, mask_rounds
from argusic.masking.values import value_forms
from argusic.masking.viewer import check_cast, check_log

SEPARATOR = b"\xff"  # ends every chunk of a chunked stream (never occurs in UTF-8)


def secret_forms(value: str) -> dict[str, str]:
    """Every literal form of a value searched for in the views: {form: kind}."""
    raw = value.encode("utf-8", "surrogatepass")
    return {f.decode("utf-8", "surrogatepass"): k for f, k in value_forms(raw).items()}


def _withhold_reason(findings: list[str]) -> str:
    return "cannot be shown free of credentials: " + "; ".join(sorted(set(findings))[:5])


def _new_state(secrets: Iterable[str], policy: MaskPolicy) -> MaskState:
    return MaskState.for_secrets(list(secrets), policy)


# -- streams of chunks and texts ------------------------------------------------------------------------


def mask_chunks(
    chunks: Sequence[str], secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY
) -> tuple[list[str], MaskStats, list[str]]:
    """Mask a stream given as consecutive chunks; returns (chunks, stats, remaining findings).

    Chunks keep their number and order; a redaction's placeholder goes into the chunk where the
    redaction starts. `remaining` is empty when the last full round found nothing.
    """
    state = _new_state(secrets, policy)
    data = b"".join(c.encode("utf-8", "surrogatepass") + SEPARATOR for c in chunks)
    clean, remaining = mask_rounds(Buffer(data=data), state, Workspace(None), banners=True)
    if clean is None:
        return list(chunks), state.stats, remaining
    pieces = clean.data.split(SEPARATOR)[:-1]
    if len(pieces) != len(chunks):  # cannot happen: redactions keep every separator
        raise AssertionError("masking changed the number of chunks")
    return [_decode(p) for p in pieces], state.stats, []


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def find_leaks(text: str, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> list[str]:
    """What a served text still shows (descriptions only); empty means none of it is found."""
    data = text.encode("utf-8", "surrogatepass")
    return find_only(Buffer(data=data), _new_state(secrets, policy))


def mask_text(
    text: str, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY
) -> tuple[str, MaskStats]:
    """Mask one text; raises MaskingError when it cannot be shown free of what it must not show."""
    chunks, stats, remaining = mask_chunks([text], secrets, policy)
    if remaining:
        raise MaskingError(_withhold_reason(remaining))
    return chunks[0], stats


# -- logs -------------------------------------------------------------------------------------------------


def mask_log(data: bytes, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> MaskResult:
    """A served copy of a plain-text log, in memory (bytes that are not UTF-8 are kept as they are)."""
    secrets = list(secrets)
    try:
        state = _new_state(secrets, policy)
    except RulesUnavailable as err:
        return MaskResult(None, True, f"masking rules unavailable: {err}", MaskStats())
    clean, remaining = mask_rounds(Buffer(data=data), state, Workspace(None), banners=True)
    if clean is None:
        return MaskResult(None, True, _withhold_reason(remaining), state.stats)
    if shown := check_log(io.BytesIO(clean.data), secrets):
        return MaskResult(None, True, _withhold_reason(shown), state.stats)
    return MaskResult(clean.data, False, None, state.stats)


def mask_log_file(
    src: Path,
    dst: Path,
    secrets: Iterable[str],
    policy: MaskPolicy = DEFAULT_POLICY,
    *,
    workdir: Path | None = None,
) -> MaskResult:
    """A served copy of the log at `src` written to `dst`, streamed (memory: a few windows).
    Intermediate rounds live in `workdir` (a private temporary folder by default)."""
    secrets = list(secrets)
    with _workdir(workdir) as folder:
        try:
            state = _new_state(secrets, policy)
        except RulesUnavailable as err:
            return MaskResult(None, True, f"masking rules unavailable: {err}", MaskStats())
        clean, remaining = mask_rounds(Buffer(path=Path(src)), state, Workspace(folder), banners=True)
        if clean is None:
            return MaskResult(None, True, _withhold_reason(remaining), state.stats)
        _place(clean, Path(src), Path(dst))
        with open(dst, "rb") as served:
            shown = check_log(served, secrets)
        if shown:
            Path(dst).unlink(missing_ok=True)
            return MaskResult(None, True, _withhold_reason(shown), state.stats)
        return MaskResult(None, False, None, state.stats, path=Path(dst))


def _place(clean: Buffer, src: Path, dst: Path) -> None:
    if clean.path == src:
        shutil.copyfile(src, dst)  # nothing to mask: the served copy is the raw bytes
    else:
        clean.path.replace(dst)


class _workdir:
    """A given folder, or a temporary one removed afterwards."""

    def __init__(self, folder: Path | None) -> None:
        self.given = folder
        self.tmp: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Path:
        if self.given is not None:
            self.given.mkdir(parents=True, exist_ok=True)
            return self.given
        root = scratch_root()
        root.mkdir(parents=True, exist_ok=True)
        self.tmp = tempfile.TemporaryDirectory(prefix="mask-", dir=root)
        return Path(self.tmp.name)

    def __exit__(self, *exc) -> None:
        if self.tmp is not None:
            self.tmp.cleanup()


# -- recordings -------------------------------------------------------------------------------------------


@dataclass
class Cast:
    header: dict
    events: list[list]  # [time, code, data]


def parse_cast(data: bytes) -> Cast:
    """Parse asciicast v2 (in memory, for tests and audits); MaskingError when it is not one."""
    lines = data.split(b"\n")
    header = parse_header(lines[0])
    events = [parse_event(line, n) for n, line in enumerate(lines[1:], start=2) if line.strip()]
    return Cast(header, events)


def dump_cast(cast: Cast) -> bytes:
    lines = [json.dumps(cast.header, ensure_ascii=False)]
    lines += [json.dumps(e, ensure_ascii=False) for e in cast.events]
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def output_text(data: bytes) -> str:
    """The concatenated output stream of a recording (for tests and audits)."""
    return "".join(e[2] for e in parse_cast(data).events if e[1] == "o")


def mask_recording(data: bytes, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> MaskResult:
    """A served copy of an asciicast v2 recording, in memory: same header keys and event times, masked
    data. Each event stream is masked as one text; banners only in the output stream; values found in
    one stream are masked in all of them and in the header."""
    secrets = list(secrets)
    try:
        state = _new_state(secrets, policy)
    except RulesUnavailable as err:
        return MaskResult(None, True, f"masking rules unavailable: {err}", MaskStats())
    out = io.BytesIO()
    try:
        findings = mask_cast(lambda: io.BytesIO(data), out, state, Workspace(None))
    except MaskingError as err:
        return MaskResult(None, True, f"unparseable recording: {err}", state.stats)
    if findings:
        return MaskResult(None, True, _withhold_reason(findings), state.stats)
    if shown := check_cast(io.BytesIO(out.getvalue()), secrets):
        return MaskResult(None, True, _withhold_reason(shown), state.stats)
    return MaskResult(out.getvalue(), False, None, state.stats)


def mask_recording_file(
    src: Path,
    dst: Path,
    secrets: Iterable[str],
    policy: MaskPolicy = DEFAULT_POLICY,
    *,
    workdir: Path | None = None,
) -> MaskResult:
    """A served copy of the recording at `src` written to `dst`, streamed (memory: a few windows and one
    event line). Intermediate streams live in `workdir` (a private temporary folder by default)."""
    secrets = list(secrets)
    with _workdir(workdir) as folder:
        try:
            state = _new_state(secrets, policy)
        except RulesUnavailable as err:
            return MaskResult(None, True, f"masking rules unavailable: {err}", MaskStats())
        try:
            with open(dst, "wb") as out:
                findings = mask_cast(lambda: Path(src).open("rb"), out, state, Workspace(folder))  # noqa: SIM115
        except MaskingError as err:
            Path(dst).unlink(missing_ok=True)
            return MaskResult(None, True, f"unparseable recording: {err}", state.stats)
        if not findings:
            with open(dst, "rb") as served:
                findings = check_cast(served, secrets)
        if findings:
            Path(dst).unlink(missing_ok=True)
            return MaskResult(None, True, _withhold_reason(findings), state.stats)
        return MaskResult(None, False, None, state.stats, path=Path(dst))


def verify_recording(served: bytes, secrets: Iterable[str], policy: MaskPolicy = DEFAULT_POLICY) -> list[str]:
    """Findings in a serialised recording (empty: clean). Unparseable is a finding."""
    return verify_cast(lambda: io.BytesIO(served), _new_state(secrets, policy), Workspace(None))


__all__ = [
    "DEFAULT_BANNERS",
    "DEFAULT_COMMAND_PATTERNS",
    "DEFAULT_POLICY",
    "KEY_PLACEHOLDER",
    "MASKING_VERSION",
    "MIN_SECRET_LEN",
    "PLACEHOLDER",
    "BannerRule",
    "Cast",
    "KeyBlock",
    "MaskPolicy",
    "MaskResult",
    "MaskStats",
    "MaskingError",
    "RulesUnavailable",
    "dump_cast",
    "find_leaks",
    "mask_chunks",
    "mask_log",
    "mask_log_file",
    "mask_recording",
    "mask_recording_file",
    "mask_text",
    "output_text",
    "parse_cast",
    "secret_forms",
    "verify_recording",
]
