"""A cycle's private projects stay sealed in everything published until the cycle's private part is
revealed (methodology section 6: the private 20% measures agents on projects they cannot have seen).

Which projects are private: the cycle's pool, as the warehouse holds it (``raw.pool_entries`` with
``visibility = 'private'``, loaded from the pool by ``load_pool_entries``) and as the runs store holds
it (``pools/<cycle>/pool.json``, written by ``rotate_pool``); a project private in either is private.

Whether the private part is revealed: ``<publish dir>/<cycle>/private_pool.json`` exists, is an
``argusic.private_pool/1`` of this cycle, and lists the project. Only ``reveal_private`` (through
``reveal_if_ended``, the pool rotation's ``reveal_previous_private`` task) writes that file, and only
after the cycle's end, so the publication learns the reveal from the same published file that
``pool.html`` shows. A private project that file does not list stays sealed.

(An attempt id as published also carries its agent's neutral identity code in place of the
operator's agent id, argusic.publication.agents; ``published_attempt`` maps both parts back.)

A sealed project is published under a label, "private project K of N" (page name and attempt-id part
``private-K-of-N``): N is the number of private projects of the pool, K their place in the order of
sha256(key, cycle id, project id), where the key is the sha256 of the private projects' ids and
pinned commits (what ``private_pool.json`` publishes at the reveal). Nobody can compute the order
before the reveal (it depends on every private project's name and commit), anybody can check it
after, and it is stable across republishing (a cycle's pool never changes once drawn).

What a sealed row keeps and loses (``seal_attempt``, ``seal_project``, ``seal_correction``): every
number (outcome, points, score, times, budget, tier, validity) and the raw evidence's sha256
fingerprints stay, so the board's numbers are the same sealed and revealed and the evidence is
committed to; the project id, commit, attempt id's project part, the agent's words (verified_how,
final_state: they may quote the README), a person's notes and the served copies (their fingerprints,
sizes and links: a served copy's address is made of its attempt id and sha256) go; the harness's
short texts (invalid reason, container fault, end reason) have the project's id, repository and
commit replaced by the label. Last, a sealed publication that still names a sealed project's commit
or repository anywhere is refused (``Seal.leaks``).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from argusic.attempts.identity import configuration_from_pin
from argusic.core.record import ATTEMPT_ID_RE
from argusic.core.runs_store import RunsStoreError, pull
from argusic.publication.agents import cycle_pin
from argusic.sources.pool import load_pool
from argusic.warehouse.dbt_build import PublicationBlocked

REVEALED_FILE = "private_pool.json"
REVEALED_SCHEMA = "argusic.private_pool/1"
SEALED_TEXT = "sealed until the cycle's private projects are revealed"
MAX_REVEALED_BYTES = 16 * 1024**2

# The attempt fields a sealed row loses whole (set to None): the agent's own words may quote the
# project's README; the served copies' fingerprints, sizes and links would address the copies.
SEALED_ATTEMPT_FIELDS = (
    "commit_sha",
    "verified_how",
    "final_state",
    "served_log_sha256",
    "served_log_bytes",
    "served_recording_sha256",
    "served_recording_bytes",
    "served_log_uri",
    "served_recording_uri",
)
# The project (verdict and review) fields a sealed row loses: a person's note, the commit.
SEALED_PROJECT_FIELDS = ("commit_sha", "decision_note")
# Short texts written by the harness or the container (not the agent) that a sealed row keeps, with
# the project's id, repository and commit replaced by its label.
SCRUBBED_FIELDS = ("invalid_reason", "container_fault", "end_reason")


@dataclass(frozen=True)
class PrivateProject:
    project_id: str
    commit: str | None = None
    repo_url: str | None = None

    def identifiers(self) -> list[str]:
        """The strings that name this project in text: id, commit, repository URL and its path."""
        found = [self.project_id]
        if self.commit:
            found.append(self.commit)
        if self.repo_url:
            url = self.repo_url.rstrip("/")
            found.append(url)
            bare = re.sub(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*", "", url).lstrip("/")
            bare = bare.removesuffix(".git")
            if bare and bare != self.project_id and len(bare) > 3:
                found.append(bare)
        return sorted(set(found), key=len, reverse=True)


@dataclass(frozen=True)
class Seal:
    """The private projects of one cycle and which of them are revealed."""

    cycle_id: str
    private: dict[str, PrivateProject] = field(default_factory=dict)
    revealed: frozenset[str] = frozenset()

    @property
    def sealed(self) -> dict[str, PrivateProject]:
        return {pid: p for pid, p in self.private.items() if pid not in self.revealed}

    def order(self) -> list[str]:
        """Every private project, in the published order of the labels (see the module's doc)."""
        return list(self._order)

    @cached_property
    def _order(self) -> tuple[str, ...]:
        listing = sorted((p.project_id, p.commit or "") for p in self.private.values())
        key = hashlib.sha256(json.dumps(listing, separators=(",", ":")).encode()).hexdigest()

        def place(pid: str) -> str:
            return hashlib.sha256(f"{key}\n{self.cycle_id}\n{pid}".encode()).hexdigest()

        return tuple(sorted(self.private, key=place))

    def number(self, project_id: str) -> tuple[int, int]:
        return self._order.index(project_id) + 1, len(self._order)

    def slug(self, project_id: str) -> str:
        k, n = self.number(project_id)
        return f"private-{k}-of-{n}"

    def label(self, project_id: str) -> str:
        k, n = self.number(project_id)
        return f"private project {k} of {n}"

    def is_sealed(self, project_id: Any) -> bool:
        return isinstance(project_id, str) and project_id in self.sealed

    def attempt_id(self, attempt_id: Any, project_id: str | None = None) -> Any:
        """An attempt id as published: the project part of a sealed project's attempt replaced by its
        label; an id outside the grammar, of a sealed project, by the label and a keyed digest."""
        if not isinstance(attempt_id, str):
            return attempt_id
        match = ATTEMPT_ID_RE.fullmatch(attempt_id)
        if match:
            if not self.is_sealed(match["project_id"]):
                return attempt_id
            start, end = match.span("project_id")
            return attempt_id[:start] + self.slug(match["project_id"]) + attempt_id[end:]
        if project_id is None or not self.is_sealed(project_id):
            return attempt_id
        key = "|".join(self.order())  # secret until the reveal, like the order itself
        digest = hashlib.sha256(f"{key}\n{attempt_id}".encode()).hexdigest()[:16]
        return f"{self.slug(project_id)}-{digest}"

    def unseal_attempt_id(self, published: str) -> str | None:
        """The attempt a published attempt id with a private project's label stands for (sealed
        still, or revealed since: a label on an old page keeps its meaning); None when the label is
        none of this cycle's."""
        match = ATTEMPT_ID_RE.fullmatch(published)
        if not match or match["cycle_id"] != self.cycle_id:
            return None
        for pid in self.private:
            if self.slug(pid) == match["project_id"]:
                start, end = match.span("project_id")
                return published[:start] + pid + published[end:]
        return None

    def scrub(self, text: Any, project_id: str) -> Any:
        """Text of a sealed row with the project's id, repository and commit replaced by its label."""
        if not isinstance(text, str):
            return text
        project = self.sealed[project_id]
        for name in project.identifiers():
            text = text.replace(name, self.slug(project_id))
        return text

    def leaks(self, text: str) -> list[str]:
        """Which sealed projects' commits or repositories ``text`` names (the last check before a
        sealed publication is written; ids are too short to search for without false alarms)."""
        found = []
        for project in self.sealed.values():
            for name in project.identifiers():
                if name != project.project_id and len(name) >= 7 and name in text:
                    found.append(f"{project.project_id}: {name}")
        return found


def seal_attempt(seal: Seal, attempt: dict[str, Any]) -> dict[str, Any]:
    """An attempts.json row as published: unchanged unless its project is sealed."""
    pid = attempt.get("project_id")
    out = dict(attempt)
    for key in ("rerun_of",):
        out[key] = seal.attempt_id(attempt.get(key), pid if isinstance(pid, str) else None)
    if not seal.is_sealed(pid):
        return out
    for key in SCRUBBED_FIELDS:
        if key in out:
            out[key] = seal.scrub(out[key], pid)
    out.update(dict.fromkeys(SEALED_ATTEMPT_FIELDS))
    out["attempt_id"] = seal.attempt_id(attempt["attempt_id"], pid)
    out["rerun_of"] = seal.attempt_id(attempt.get("rerun_of"), pid)
    out["project_id"] = seal.slug(pid)
    out["project_label"] = seal.label(pid)
    out["sealed"] = True
    return out


def seal_project(seal: Seal, project: dict[str, Any], project_of: dict[str, str]) -> dict[str, Any]:
    """A board.json project (verdict) row as published."""
    pid = project.get("project_id")
    out = dict(project)
    verified = project.get("verified_by_attempt_id")
    out["verified_by_attempt_id"] = seal.attempt_id(verified, project_of.get(verified) or pid)
    if not seal.is_sealed(pid):
        return out
    for key in SEALED_PROJECT_FIELDS:
        if key in out:
            out[key] = None
    out["verified_by_attempt_id"] = seal.attempt_id(verified, pid)
    out["project_id"] = seal.slug(pid)
    out["project_label"] = seal.label(pid)
    out["sealed"] = True
    return out


def seal_correction(seal: Seal, correction: dict[str, Any], project_of: dict[str, str]) -> dict[str, Any]:
    """A board.json correction row as published: a sealed attempt's ids relabelled, the note sealed."""
    out = dict(correction)
    sealed = False
    for key in ("attempt_id", "rerun_attempt_id"):
        value = correction.get(key)
        pid = project_of.get(value) if isinstance(value, str) else None
        out[key] = seal.attempt_id(value, pid)
        sealed = sealed or (out[key] != value)
    if sealed:
        out["note"] = SEALED_TEXT
    return out


def read_revealed(publish_dir: Path, cycle_id: str) -> frozenset[str]:
    """The projects ``<publish dir>/<cycle>/private_pool.json`` reveals (none when there is no such
    file). A file that is not a private pool of this cycle blocks the publication: it would be
    published beside the board."""
    path = Path(publish_dir) / cycle_id / REVEALED_FILE
    if not path.exists() and not path.is_symlink():
        return frozenset()
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_REVEALED_BYTES:
        raise PublicationBlocked(f"{path}: not a private pool file (a link, not a file, or too large)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise PublicationBlocked(f"{path}: not JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("schema") != REVEALED_SCHEMA or doc.get("cycle_id") != cycle_id:
        raise PublicationBlocked(f"{path}: not the {REVEALED_SCHEMA} of cycle {cycle_id!r}")
    projects = doc.get("projects")
    if not isinstance(projects, list):
        raise PublicationBlocked(f"{path}: no projects list")
    return frozenset(p["project_id"] for p in projects if isinstance(p, dict) and "project_id" in p)


def private_projects(con, cycle_id: str) -> dict[str, PrivateProject]:
    """The cycle's private projects: the warehouse's ``raw.pool_entries`` and the runs store's
    ``pools/<cycle>/pool.json`` (a store that cannot be read blocks: the seal cannot be known)."""
    found: dict[str, PrivateProject] = {}
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables "
        "WHERE table_schema = 'raw' AND table_name = 'pool_entries'"
    ).fetchone()[0]
    if exists:
        rows = con.execute(
            "SELECT project_id, commit_sha, repo_url FROM raw.pool_entries "
            "WHERE cycle_id = ? AND visibility = 'private' ORDER BY project_id",
            [cycle_id],
        ).fetchall()
        for pid, commit, url in rows:
            found[pid] = PrivateProject(pid, commit, url)
    try:
        path = pull(f"pools/{cycle_id}/pool.json")
    except (RunsStoreError, OSError) as err:
        raise PublicationBlocked(
            f"the pool of cycle {cycle_id!r} cannot be read from the runs store, so its private "
            f"projects cannot be sealed: {err}"
        ) from err
    if path is not None and path.is_file():
        try:
            pool = load_pool(path)
        except ValueError as err:
            raise PublicationBlocked(
                f"{path}: not a pool, its private projects cannot be sealed: {err}"
            ) from err
        if pool.cycle_id == cycle_id:
            for entry in pool.private:
                project = PrivateProject(entry.project_id, entry.commit, entry.repo_url)
                found.setdefault(entry.project_id, project)
    return found


SEALED_SLUG_RE = re.compile(r"private-[1-9][0-9]*-of-[1-9][0-9]*")


IDENTITY_CODE_RE = re.compile(r"A-[0-9a-f]{6}")  # argusic.attempts.identity: IDENTITY_PREFIX + 6 hex


def published_attempt(con, attempt_id: str, publish_folder: Path) -> str:
    """The attempt an id read on a published page names: itself, or the attempt it stands for when
    its project part is a private project's label (`private-K-of-N`) and/or its agent part a neutral
    identity's code (`A-3f9c0a`, argusic.publication.agents). LookupError when the cycle has no such
    private project, or no single agent of that identity ran that attempt."""
    match = ATTEMPT_ID_RE.fullmatch(attempt_id)
    if not match:
        return attempt_id
    cycle = match["cycle_id"]
    real = attempt_id
    if SEALED_SLUG_RE.fullmatch(match["project_id"]):
        seal = Seal(cycle, private_projects(con, cycle), read_revealed(publish_folder, cycle))
        unsealed = seal.unseal_attempt_id(attempt_id)
        if unsealed is None:
            raise LookupError(f"cycle {cycle!r} has no private project labelled {match['project_id']!r}")
        real = unsealed
    if IDENTITY_CODE_RE.fullmatch(match["agent_id"]):
        real = _operator_attempt(con, real, match["agent_id"], publish_folder)
    return real


def _agents_of_identity(con, cycle_id: str, code: str, publish_folder: Path) -> set[str]:
    """The operator's agent ids published under an identity in a cycle: as the cycle's published
    board.json lists them (each identity's ``configuration.agent_ids``), else recomputed from the
    cycle's pin for every agent with a record in the cycle."""
    found: set[str] = set()
    board = Path(publish_folder) / cycle_id / "board.json"
    try:
        if board.is_file() and not board.is_symlink() and board.stat().st_size <= MAX_REVEALED_BYTES * 4:
            for entry in json.loads(board.read_text(encoding="utf-8")).get("agents") or []:
                if isinstance(entry, dict) and entry.get("identity") == code:
                    found.update(a for a in (entry.get("configuration") or {}).get("agent_ids") or [])
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        found = set()
    if found:
        return found
    pin = cycle_pin(cycle_id)
    if pin is None:
        return found
    agents = [r[0] for r in con.execute(
        "SELECT DISTINCT agent_id FROM raw.run_records WHERE cycle_id = ?", [cycle_id]
    ).fetchall()]  # fmt: skip
    for agent_id in agents:
        configuration = configuration_from_pin(pin, agent_id)
        if configuration is not None and configuration.identity.code == code:
            found.add(agent_id)
    return found


def _operator_attempt(con, attempt_id: str, code: str, publish_folder: Path) -> str:
    match = ATTEMPT_ID_RE.fullmatch(attempt_id)
    assert match is not None
    start, end = match.span("agent_id")
    agents = _agents_of_identity(con, match["cycle_id"], code, publish_folder)
    candidates = [attempt_id[:start] + a + attempt_id[end:] for a in sorted(agents)]
    known = [
        c for c in candidates
        if con.execute("SELECT count(*) FROM raw.run_records WHERE attempt_id = ?", [c]).fetchone()[0]
    ]  # fmt: skip
    if len(known) != 1:
        what = "no agent" if not known else f"{len(known)} agents"
        raise LookupError(
            f"cycle {match['cycle_id']!r}: {what} of identity {code} ran this attempt "
            f"({', '.join(sorted(agents)) or 'no agent of the cycle has that identity'})"
        )
    return known[0]
