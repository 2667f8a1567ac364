"""Repair items in the runs store (issue #28): what every host of a cluster needs of an item.

On one machine an item lives in the items folder (``argusic.repair.items``) and its repository is
wherever the manifest says. On a cluster (ARGUSIC_RUNS_URL set, ``argusic.core.runs_store``) the round
builds and validates items on one host, a repair attempt runs on another and grades its patch there:
that host has neither the items folder nor the repository. So, when an item is built, its record and
what an attempt and the grader need of the repository — a git bundle of the pinned commit, shallow
(base's commit and files, no history) — go into the runs store; its validation record follows when it
is validated. Keys, per item revision (a revision is the sha256 of the item's content)::

    items/<project>/<item>/<revision>/item.json                 the item record, write-once
    items/<project>/<item>/<revision>/base-<sha256>.bundle      base, content-addressed, write-once
    items/<project>/<item>/<revision>/entry.json                {key, sha256} of both, write-once
                                                                (written last: first writer wins)
    items/<project>/<item>/<revision>/validation-<sha256>.json  a validation record, write-once
    items/<project>/<item>/<revision>/validated.json            {key, sha256} of the latest validation
    items/<project>/current/<item>.json                         {revision} the project's current one

Everything read back is checked: the entry names the item and revision asked for, every object it
lists must hold bytes of the listed sha256 (a missing or changed object is refused, naming it), the
bundle's commit must be the item's base (git checks each object's id against its content on fetch),
and the caller checks the item's own revision (``argusic.repair.items.load_stored_item``). The bundle
is unpacked once per host into a cache (``<items folder>/.repos/store/``).

This module speaks bytes and git only (the item's model is ``argusic.repair.items``, which calls it).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from argusic.core import runs_store
from argusic.repair import testrun

PREFIX = "items"
ENTRY_SCHEMA = "argusic.repair_item_entry/1"
MAX_BUNDLE_BYTES = 512 << 20  # a shallow bundle of one commit's files; a large repository fits
MAX_DOC_BYTES = 4 * 1024 * 1024  # an item record's own cap (argusic.repair.items.MAX_ITEM_BYTES)
ITEM_FILE = "item.json"
ENTRY_FILE = "entry.json"
VALIDATED_FILE = "validated.json"


class ItemStoreError(RuntimeError):
    """An item, its bundle or its validation missing from the runs store or not holding what its entry
    says (the message names the object and why)."""


def active() -> runs_store.RunsStore | None:
    """The cluster's runs store, or None on a single machine (items stay in the items folder)."""
    return runs_store.shared()


def revision_prefix(project_id: str, item_id: str, revision: str) -> str:
    key = f"{PREFIX}/{project_id}/{item_id}/{revision}"
    if problem := runs_store.key_problem(key):
        raise ItemStoreError(f"item {project_id}/{item_id} revision {revision[:70]!r}: {problem}")
    return key


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _doc(data: dict) -> bytes:
    return json.dumps(data, indent=1, sort_keys=True).encode() + b"\n"


def _parse(raw: bytes, where: str) -> dict:
    try:
        doc = json.loads(raw)
    except ValueError as err:
        raise ItemStoreError(f"{where}: not JSON ({err})") from None
    if not isinstance(doc, dict):
        raise ItemStoreError(f"{where}: not a JSON object")
    return doc


def _ref(store: runs_store.RunsStore, doc: dict, name: str, folder: str, where: str) -> tuple[str, str]:
    """(key, sha256) of the object `doc[name]` lists, refused unless it is inside `folder`."""
    ref = doc.get(name)
    key, sha = (ref.get("key"), ref.get("sha256")) if isinstance(ref, dict) else (None, None)
    if not isinstance(key, str) or not isinstance(sha, str) or len(sha) != 64:
        raise ItemStoreError(f"{where}: no {name} reference (key and sha256)")
    if not key.startswith(folder + "/") or runs_store.key_problem(key):
        raise ItemStoreError(f"{where}: {name} {key[:200]!r} is not an object of this item revision")
    return key, sha


def _checked(store: runs_store.RunsStore, key: str, sha: str, max_bytes: int = MAX_DOC_BYTES) -> bytes:
    """The object's bytes, refused when missing or not of the sha256 its reference says."""
    try:
        data = store.read(key, max_bytes=max_bytes)
    except runs_store.RunsStoreError as err:
        raise ItemStoreError(str(err)) from None
    if data is None:
        raise ItemStoreError(f"{store.uri_for(key)}: missing from the runs store")
    if _sha(data) != sha:
        raise ItemStoreError(
            f"{store.uri_for(key)}: holds sha256 {_sha(data)[:16]}…, its entry says {sha[:16]}…: "
            "changed since it was stored; refused"
        )
    return data


# --- writing (the host that builds and validates) --------------------------------------------------


def base_bundle(git_dir: Path, base: str) -> bytes:
    """A git bundle of `base` alone: its commit and files, shallow (no parent, no other commit), under
    the ref ``refs/tags/base``."""
    work = Path(tempfile.mkdtemp(prefix="argusic-bundle-"))
    try:
        repo = work / "base.git"
        testrun.git(["init", "-q", "--bare", str(repo)])
        testrun.git(
            ["--git-dir", str(repo), "fetch", "-q", "--no-tags", "--depth", "1",
             f"file://{Path(git_dir).resolve()}", f"{base}:refs/tags/base"]
        )  # fmt: skip
        testrun.git(
            ["--git-dir", str(repo), "bundle", "create", "-q", str(work / "base.bundle"), "refs/tags/base"]
        )
        return (work / "base.bundle").read_bytes()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def put_item(
    project_id: str, item_id: str, revision: str, item_bytes: bytes, git_dir: Path, base: str
) -> str | None:
    """Put one item revision into the runs store (record, bundle of base, then the entry listing both)
    and make it the project's current revision of the item; the entry's URI. A revision already
    entered is left as it is (first writer wins: the same revision is the same item). Single machine:
    None, nothing done."""
    store = active()
    if store is None:
        return None
    folder = revision_prefix(project_id, item_id, revision)
    entry_key = f"{folder}/{ENTRY_FILE}"
    if store.read(entry_key) is None:
        item_key = f"{folder}/{ITEM_FILE}"
        store.create(item_key, item_bytes)
        held = store.read(item_key)  # ours, or an earlier build's of the same revision
        bundle = base_bundle(git_dir, base)
        bundle_key = f"{folder}/base-{_sha(bundle)}.bundle"
        store.create(bundle_key, bundle)  # content-addressed: there already means these bytes
        entry = {
            "schema": ENTRY_SCHEMA,
            "project_id": project_id,
            "item_id": item_id,
            "revision": revision,
            "base": base,
            "item": {"key": item_key, "sha256": _sha(held)},
            "bundle": {"key": bundle_key, "sha256": _sha(bundle), "bytes": len(bundle)},
        }
        store.create(entry_key, _doc(entry))
    store.write(f"{PREFIX}/{project_id}/current/{item_id}.json", _doc({"revision": revision}))
    return store.uri_for(entry_key)


def put_validation(project_id: str, item_id: str, revision: str, data: bytes) -> str | None:
    """Put a validation record of an item revision into the runs store (write-once, by its sha256) and
    make it the revision's validation; its URI. Single machine: None."""
    store = active()
    if store is None:
        return None
    folder = revision_prefix(project_id, item_id, revision)
    key = f"{folder}/validation-{_sha(data)}.json"
    store.write(key, data, write_once=True)
    store.write(f"{folder}/{VALIDATED_FILE}", _doc({"validation": {"key": key, "sha256": _sha(data)}}))
    return store.uri_for(key)


# --- reading (any host) ----------------------------------------------------------------------------


def _store() -> runs_store.RunsStore:
    store = active()
    if store is None:
        raise ItemStoreError(f"no runs store: {runs_store.RUNS_URL_ENV} is not set on this host")
    return store


def read_entry(project_id: str, item_id: str, revision: str) -> dict:
    """The entry of an item revision, checked to name it; ItemStoreError when missing."""
    store = _store()
    folder = revision_prefix(project_id, item_id, revision)
    key = f"{folder}/{ENTRY_FILE}"
    raw = store.read(key)
    if raw is None:
        raise ItemStoreError(
            f"item {item_id} revision {revision[:12]}… of {project_id} is not in the runs store "
            f"({store.uri_for(key)} missing): build it on a host with {runs_store.RUNS_URL_ENV} set"
        )
    entry = _parse(raw, store.uri_for(key))
    named = (entry.get("schema"), entry.get("project_id"), entry.get("item_id"), entry.get("revision"))
    if named != (ENTRY_SCHEMA, project_id, item_id, revision):
        raise ItemStoreError(f"{store.uri_for(key)}: names another item or revision; refused")
    base = entry.get("base")
    if not isinstance(base, str) or len(base) != 40 or any(c not in "0123456789abcdef" for c in base):
        raise ItemStoreError(f"{store.uri_for(key)}: base is not a 40-hex commit id")
    return entry


def read_item_bytes(project_id: str, item_id: str, revision: str) -> bytes:
    """The item record's bytes as entered (sha256 checked)."""
    store = _store()
    entry = read_entry(project_id, item_id, revision)
    folder = revision_prefix(project_id, item_id, revision)
    key, sha = _ref(store, entry, "item", folder, store.uri_for(f"{folder}/{ENTRY_FILE}"))
    return _checked(store, key, sha)


def read_validation_bytes(project_id: str, item_id: str, revision: str) -> bytes | None:
    """The latest validation record of an item revision (sha256 checked), None when never validated."""
    store = _store()
    folder = revision_prefix(project_id, item_id, revision)
    raw = store.read(f"{folder}/{VALIDATED_FILE}")
    if raw is None:
        return None
    where = store.uri_for(f"{folder}/{VALIDATED_FILE}")
    key, sha = _ref(store, _parse(raw, where), "validation", folder, where)
    if key != f"{folder}/validation-{sha}.json":
        raise ItemStoreError(f"{where}: names {key[:200]!r}, not the validation of sha256 {sha[:16]}…")
    return _checked(store, key, sha)


def current_revisions(project_id: str) -> dict[str, str]:
    """{item id: current revision} of a project's items in the runs store ({} when none)."""
    store = _store()
    folder = f"{PREFIX}/{project_id}/current"
    if problem := runs_store.key_problem(folder):
        raise ItemStoreError(f"project {project_id[:70]!r}: {problem}")
    try:
        found = store.fs.glob(f"{store.root}/{folder}/*.json")
    except FileNotFoundError:
        return {}
    revisions = {}
    for path in sorted(str(p) for p in found):
        item_id = path.rsplit("/", 1)[-1][: -len(".json")]
        raw = store.read(f"{folder}/{item_id}.json")
        revision = _parse(raw, store.uri_for(f"{folder}/{item_id}.json")).get("revision") if raw else None
        if isinstance(revision, str) and len(revision) == 64:
            revisions[item_id] = revision
    return revisions


def base_git_dir(project_id: str, item_id: str, revision: str, base: str, cache: Path) -> Path:
    """A local bare repository holding `base` (shallow: its commit and files), unpacked from the item
    revision's bundle in the runs store into `cache` once per host; refused when the bundle is missing,
    not of its listed sha256, or does not hold `base`."""
    store = _store()
    entry = read_entry(project_id, item_id, revision)
    folder = revision_prefix(project_id, item_id, revision)
    where = store.uri_for(f"{folder}/{ENTRY_FILE}")
    if entry["base"] != base:
        raise ItemStoreError(f"{where}: base {entry['base']} is not the item's base {base}")
    key, sha = _ref(store, entry, "bundle", folder, where)
    dest = Path(cache) / "store" / f"{sha[:32]}.git"
    if dest.is_dir() and (dest / "argusic-verified").is_file() and _holds(dest, base):
        return dest
    bundle = _checked(store, key, sha, MAX_BUNDLE_BYTES)
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        repo = work / "repo.git"
        (work / "base.bundle").write_bytes(bundle)
        testrun.git(["init", "-q", "--bare", str(repo)])
        (repo / "shallow").write_text(base + "\n")  # base's parents are not in the bundle, by design
        try:
            testrun.git(
                ["--git-dir", str(repo), "-c", "transfer.fsckObjects=true", "fetch", "-q", "--no-tags",
                 str(work / "base.bundle"), "refs/tags/base:refs/tags/base"]
            )  # fmt: skip
        except testrun.StateError as err:
            raise ItemStoreError(f"{store.uri_for(key)}: not a bundle of {base}: {err}") from None
        if not _holds(repo, base) or _tag(repo) != base:
            raise ItemStoreError(f"{store.uri_for(key)}: does not hold the item's base {base}; refused")
        (repo / "argusic-verified").write_text(sha + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(repo, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest


def _holds(git_dir: Path, commit: str) -> bool:
    try:
        testrun.git(["--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{tree}}"])
    except testrun.StateError:
        return False
    return True


def _tag(git_dir: Path) -> str | None:
    try:
        return (
            testrun.git(["--git-dir", str(git_dir), "rev-parse", "--verify", "-q", "refs/tags/base"])
            .decode()
            .strip()
        )
    except testrun.StateError:
        return None


__all__ = [
    "ItemStoreError",
    "active",
    "base_bundle",
    "base_git_dir",
    "current_revisions",
    "put_item",
    "put_validation",
    "read_entry",
    "read_item_bytes",
    "read_validation_bytes",
    "revision_prefix",
]
