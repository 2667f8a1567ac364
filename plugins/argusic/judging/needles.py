"""Needles: content markers that must appear in an attempt's evidence (Layer 1 hint, never a score).

Sources, all read from the attempt's landed output (``<attempt_dir>/out``), which is hostile:

- ``log``: ``out/log.txt`` (the recorder's terminal log);
- ``report``: the report's ``verified_how`` and ``final_state`` (from the validated run record);
- ``artifacts``: the text of every regular file under ``out/artifacts/`` (landed by the executor).

Files are opened without following links (``O_NOFOLLOW``; a symbolic link anywhere is skipped and
named), only regular files with one link are read, each under a size cap (a file over its cap is not
read: that source is unavailable, and says why), and decoded as UTF-8 with invalid bytes replaced.
A needle is found when any of its ``where`` sources holds it. Score: all found 1, some 0.5, none 0;
when a needle was not found but one of its sources could not be read, the outcome is undetermined
unless the others already fix it (some found and some surely missing is 0.5 whatever the rest).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from argusic.core.safe_io import Unreadable, read_capped
from argusic.core.tasks import Needle

LOG_MAX_BYTES = 32 * 1024**2
ARTIFACT_MAX_BYTES = 4 * 1024**2  # per file
ARTIFACTS_MAX_TOTAL_BYTES = 32 * 1024**2
ARTIFACTS_MAX_FILES = 200
ARTIFACTS_MAX_DEPTH = 16


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


@dataclass
class Sources:
    """The texts needles look in; a source missing from ``texts`` is unavailable (``problems`` says why)."""

    texts: dict[str, list[str]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def artifact_files(artifacts_dir: Path, notes: list[str]) -> list[tuple[str, Path]]:
    """(path relative to the folder, path) of regular files under it, sorted, without following links;
    links and other kinds are skipped and named in ``notes``; at most ARTIFACTS_MAX_FILES."""
    found: list[tuple[str, Path]] = []

    def walk(folder: Path, prefix: str, depth: int) -> None:
        if depth > ARTIFACTS_MAX_DEPTH:
            notes.append(f"artifacts/{prefix}: deeper than {ARTIFACTS_MAX_DEPTH} levels: not read")
            return
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as err:
            notes.append(f"artifacts/{prefix}: cannot be listed: {err.strerror}")
            return
        for entry in entries:
            relative = f"{prefix}{entry.name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as err:  # gone meanwhile, or unreadable
                notes.append(f"artifacts/{relative}: cannot be looked at: {err.strerror}")
                continue
            if stat.S_ISLNK(info.st_mode):
                notes.append(f"artifacts/{relative} is a symbolic link: not followed")
            elif stat.S_ISDIR(info.st_mode):
                walk(Path(entry.path), relative + "/", depth + 1)
            elif stat.S_ISREG(info.st_mode):
                if len(found) >= ARTIFACTS_MAX_FILES:
                    notes.append(f"artifacts/{relative}: over {ARTIFACTS_MAX_FILES} files: not read")
                else:
                    found.append((relative, Path(entry.path)))
            else:
                notes.append(f"artifacts/{relative} is not a regular file: not read")

    try:
        info = os.lstat(artifacts_dir)
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        notes.append("artifacts is not a folder (or is a link): not read")
        return []
    walk(artifacts_dir, "", 0)
    return found


def gather_sources(out_dir: Path, report: dict | None, wanted: Sequence[str]) -> Sources:
    """Read the sources the needles need (only those)."""
    sources = Sources()
    if "log" in wanted:
        try:
            sources.texts["log"] = [decode(read_capped(out_dir / "log.txt", LOG_MAX_BYTES))]
        except Unreadable as err:
            sources.problems["log"] = str(err)
    if "report" in wanted:
        if report is None:
            sources.problems["report"] = "the attempt has no valid report"
        else:
            sources.texts["report"] = [
                f"{report.get('verified_how') or ''}\n{report.get('final_state') or ''}"
            ]
    if "artifacts" in wanted:
        folder = out_dir / "artifacts"
        texts, total, problems = [], 0, []
        files = artifact_files(folder, sources.notes)
        for relative, path in files:
            try:
                data = read_capped(path, ARTIFACT_MAX_BYTES)
            except Unreadable as err:
                problems.append(f"artifacts/{relative}: {err}")
                continue
            if total + len(data) > ARTIFACTS_MAX_TOTAL_BYTES:
                problems.append(f"artifacts over {ARTIFACTS_MAX_TOTAL_BYTES} bytes in all: the rest not read")
                break
            total += len(data)
            texts.append(decode(data))
        problems.extend(n for n in sources.notes if n.startswith("artifacts"))
        if problems:
            # a file we could not read may hold the needle: the source is not whole
            sources.problems["artifacts"] = "; ".join(problems[:5]) + (
                f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            )
        elif not files:
            sources.problems["artifacts"] = (
                "no artifact files were landed (out/artifacts/ is empty or missing)"
            )
        if texts:  # what was read still counts: a needle found there is found
            sources.texts["artifacts"] = texts
    return sources


def evaluate_needles(needles: Sequence[Needle], sources: Sources) -> dict:
    """The needles hint: ``{score, status, found, missing, sources, detail}``."""
    if not needles:
        return {"score": None, "status": "not_applicable", "found": [], "missing": [], "sources": [],
                "detail": "the task defines no needles"}  # fmt: skip
    found, missing, undetermined = [], [], []
    for needle in needles:
        if any(needle.found_in(t) for w in needle.where for t in sources.texts.get(w, [])):
            found.append(needle.id)
        elif any(w in sources.problems for w in needle.where):
            undetermined.append(needle.id)
        else:
            missing.append(needle.id)
    used = sorted(
        {w for n in needles for w in n.where if w in sources.texts}, key=("log", "report", "artifacts").index
    )
    detail = None
    if undetermined:
        unread = sorted(
            {w for n in needles if n.id in undetermined for w in n.where if w in sources.problems}
        )
        detail = f"not determined: {', '.join(undetermined)}; " + "; ".join(
            f"{w}: {sources.problems[w]}" for w in unread
        )
        if found and missing:
            return {"score": 0.5, "status": "measured", "found": found, "missing": missing, "sources": used,
                    "detail": detail}  # fmt: skip
        return {"score": None, "status": "unavailable", "found": found, "missing": missing, "sources": used,
                "detail": detail}  # fmt: skip
    score = 1.0 if not missing else (0.5 if found else 0.0)
    return {"score": score, "status": "measured", "found": found, "missing": missing, "sources": used,
            "detail": detail}  # fmt: skip
