"""The raw session video of the virtual display (issue #30), as evidence.

ffmpeg's x11grab records the attempt's display :99 into /out/display.mkv from just after Xvfb
answers until the container ends (argusic.sandbox.executor._video_command: VIDEO_FPS frames a
second, at most VIDEO_MAX_BYTES and the budget in seconds). It is landed with the rest of /out
(argusic.sandbox.landing: a regular file with one link, under the landing caps, never followed),
then checked here before it is fingerprinted into the evidence store: a file over its cap, empty, or
not a Matroska file is not kept, and the record says why (``evidence.display_video_problem``).

What this proves and what it does not (docs/attempts.md, "Raw session video"): the recorder runs as
the agent's user inside the container, so the agent could stop it and write another Matroska file
in its place; the video is evidence with the same standing as the rest of /out (landed, fingerprinted
on arrival, write-once in the store, audited), not sealed by the harness. The host never decodes it
(hostile media): it reads the first bytes only. No served copy is ever made: pixels cannot be masked
like text, and there is no OCR check, so a credential on screen could not be found.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from argusic.core.evidence import EvidenceStore
from argusic.sandbox.launch import VIDEO_FILE, VIDEO_MAX_BYTES

# ffmpeg's -fs stops after the packet that crosses the cap: a little over it is still its own file
VIDEO_SLACK_BYTES = 1024**2
EBML_MAGIC = b"\x1a\x45\xdf\xa3"
HEAD_BYTES = 64  # the EBML header, with its DocType "matroska", fits in the first bytes


def video_problem(path: Path) -> str | None:
    """Why the landed video at `path` is not kept as evidence, or None when it is."""
    try:
        st = os.lstat(path)
    except OSError as err:
        return f"{VIDEO_FILE} cannot be examined ({err.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return f"{VIDEO_FILE} is not a regular file"
    if st.st_size > VIDEO_MAX_BYTES + VIDEO_SLACK_BYTES:
        return f"{VIDEO_FILE} is {st.st_size} bytes, over the video's cap of {VIDEO_MAX_BYTES} bytes"
    if st.st_size == 0:
        return f"{VIDEO_FILE} is empty: the recorder wrote no frame"
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        head = os.read(fd, HEAD_BYTES)
    finally:
        os.close(fd)
    if not head.startswith(EBML_MAGIC) or b"matroska" not in head:
        return f"{VIDEO_FILE} is not a Matroska file: not what the recorder writes"
    return None


def display_video_evidence(out_dir: Path, store: EvidenceStore) -> dict:
    """The record's evidence entries for the landed video: ``display_video`` (its reference in the
    store) when it is kept, ``display_video_problem`` when one was left but not kept, nothing when
    the attempt had no video (no display, or no ffmpeg in the image)."""
    path = Path(out_dir) / VIDEO_FILE
    if not os.path.lexists(path):
        return {}
    if (problem := video_problem(path)) is not None:
        return {"display_video_problem": problem}
    return {"display_video": store.put_file(path).as_ref()}
