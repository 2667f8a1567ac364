"""The attempt spec and the plan files that carry it from the planner to the attempt task."""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from argusic.core.layout import plan_dir
from argusic.core.record import Condition, IdPart, Sha256
from argusic.core.runs_store import (
    BATCH_THREADS,
    MAX_OBJECT_BYTES,
    RUNS_URL_ENV,
    RunsStoreConflict,
    RunsStoreError,
    local_path,
    push,
    shared,
)
from argusic.core.safe_io import Unreadable, read_capped, write_atomic
from argusic.core.settings import runs_dir


class RepairItemRef(BaseModel):
    """The repair item an attempt of purpose `repair` works on: found as
    `<items dir>/<project_id>/<item_id>.json` by the host that runs it, and refused there unless it
    is this revision (an item rebuilt since the plan is another item)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: IdPart
    revision: Sha256
    track: Literal["basic", "spec"]


class AttemptSpec(BaseModel):
    """Everything needed to run one attempt; small enough to travel through XCom."""

    model_config = ConfigDict(frozen=True)

    # The attempt id's parts (run record contract): they name folders and containers too.
    cycle_id: IdPart
    purpose: Literal["board", "verdict", "repair"] = "board"
    agent_id: IdPart
    project_id: IdPart
    repo_url: str
    commit: str
    tier: Literal["standard", "heavy", "gpu"]
    attempt_no: int = Field(ge=1)
    rerun_no: int = Field(0, ge=0)
    demo: bool = False
    budget_scale: float = Field(1.0, gt=0, le=1)
    # Purpose repair only (and required there): the item; project_id stays the pool project.
    item: RepairItemRef | None = None
    # Seed 002's comparison condition, when a plan names one (baseline | variant | external-<name>);
    # None: the agent's own (argusic.core.record.default_condition). Not written when None, so every
    # spec planned before stays byte for byte what it was (write-once packs compare bytes).
    condition: Condition | None = None

    @model_serializer(mode="wrap")
    def _without_unset_condition(self, handler):  # noqa: ANN001, ANN202 - pydantic's serializer protocol
        data = handler(self)
        if isinstance(data, dict) and data.get("condition") is None:
            data.pop("condition", None)
        return data

    @model_validator(mode="after")
    def _item_with_repair(self) -> AttemptSpec:
        if (self.purpose == "repair") != (self.item is not None):
            raise ValueError("item: an attempt of purpose 'repair' names its item, and only such an attempt")
        return self

    @property
    def attempt_id(self) -> str:
        base = f"{self.cycle_id}.{self.purpose}.{self.agent_id}.{self.project_id}.a{self.attempt_no}"
        return base if self.rerun_no == 0 else f"{base}.r{self.rerun_no}"

    @property
    def label(self) -> str:
        """How ops find the attempt in the Airflow UI."""
        rerun = f" (rerun {self.rerun_no})" if self.rerun_no else ""
        item = f" / item {self.item.item_id}" if self.item is not None else ""
        return f"{self.agent_id} / {self.project_id}{item} / attempt {self.attempt_no}{rerun}"

    def rerun(self) -> AttemptSpec:
        return self.model_copy(update={"rerun_no": self.rerun_no + 1})

    @property
    def rerun_of(self) -> str | None:
        if self.rerun_no == 0:
            return None
        return self.model_copy(update={"rerun_no": self.rerun_no - 1}).attempt_id


def write_spec(spec: AttemptSpec) -> str:
    """Write one planned attempt's spec (runs/<cycle>/plan/<attempt id>.json) and return what XCom
    carries to its attempt task: the local path, or on a cluster its URI in the runs store (the attempt
    runs on another host: argusic.core.runs_store)."""
    path = plan_dir(spec.cycle_id) / f"{spec.attempt_id}.json"
    write_atomic(path, spec.model_dump_json(indent=1) + "\n")
    return push(path)


class SpecConflict(RunsStoreConflict):
    """A planned attempt's spec already holds another spec: a plan never replaces one."""


class SpecMissing(FileNotFoundError):
    """A spec reference names a pack, or an attempt in a pack, that is not there."""


class SpecTampered(ValueError):
    """A spec's pack, or the spec in it, is not what its reference names (damaged or tampered)."""


# --- the plan's packs -----------------------------------------------------------------------------
#
# A plan's specs are written as packs (runs/<cycle>/plan/pack-<sha256>.specs): each holds up to
# PACK_SPECS specs and is named by the sha256 of its bytes, so a pack is never rewritten and a copy
# anywhere is checked against its name. A pack is one header line (the format and, per spec, its
# attempt id, offset and length in the body, and its sha256) followed by the specs' documents, each
# the bytes a single spec file held. One manifest per batch, written last and write-once in the next
# free slot (runs/<cycle>/plan/manifest-<n>.json), names each spec it adds: attempt id -> pack,
# offset, length, sha256. The manifests are the plan's log: a batch is checked against every
# manifest before it, and a batch that loses a slot to another checks that one too, so an attempt id
# keeps the first spec written for it. XCom carries one reference per attempt, named by the attempt
# id as a spec file was: `<plan>/pack-<sha256>.specs/<attempt id>.json` (a local path, or on a
# cluster its URI in the runs store); read_spec finds the spec in the pack and checks both hashes.

PACK_SPECS = 256  # specs in one pack (a spec is about 400 bytes: a pack about 150 kB)
PACK_BODY_BYTES = 1 << 20  # a pack is closed before its specs pass 1 MiB
PACK_FORMAT = "argusic.spec-pack/1"
MANIFEST_FORMAT = "argusic.spec-manifest/1"
MAX_MANIFEST_BYTES = 64 << 20  # one manifest of a month's plan is about 1.5 MB
_PACK_NAME = re.compile(r"pack-([0-9a-f]{64})\.specs")
_MANIFEST_NAME = re.compile(r"manifest-(\d{6})\.json")
_PACK_CACHE_SIZE = 16  # packs kept parsed in this process (one per 256 attempts read)


def spec_bytes(spec: AttemptSpec) -> bytes:
    """A spec's document: the bytes its single file held, and its slice of a pack."""
    return (spec.model_dump_json(indent=1) + "\n").encode()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class _Where:
    """Where the plan holds one spec: its pack, its slice of the pack's body, its sha256."""

    pack: str
    offset: int
    length: int
    sha256: str


@dataclass
class _Plan:
    """What a cycle's plan holds already: packed specs (from the manifests), single spec files
    (written before packs, or by write_spec) and the next free manifest slot."""

    folder: str  # the store key, or the local folder
    packed: dict[str, _Where]
    singles: dict[str, int | None]  # attempt id -> size (None: unknown)
    next_slot: int


def _pack_blob(entries: list[tuple[str, bytes]]) -> tuple[str, bytes, dict[str, _Where]]:
    """(name, bytes, where each spec is) of the pack of `entries` (attempt id, spec bytes)."""
    index = []
    offset = 0
    for attempt_id, data in entries:
        index.append([attempt_id, offset, len(data), _sha(data)])
        offset += len(data)
    header = json.dumps({"format": PACK_FORMAT, "specs": index}, separators=(",", ":")).encode()
    blob = header + b"\n" + b"".join(data for _, data in entries)
    name = f"pack-{_sha(blob)}.specs"
    return name, blob, {i: _Where(name, o, n, s) for i, o, n, s in index}


def _packs_of(entries: list[tuple[str, bytes]]) -> list[tuple[str, bytes, dict[str, _Where]]]:
    """`entries` in packs, in order: PACK_SPECS specs a pack, fewer when their bytes pass the cap."""
    packs = []
    chunk: list[tuple[str, bytes]] = []
    size = 0
    for attempt_id, data in entries:
        if chunk and (len(chunk) >= PACK_SPECS or size + len(data) > PACK_BODY_BYTES):
            packs.append(_pack_blob(chunk))
            chunk, size = [], 0
        chunk.append((attempt_id, data))
        size += len(data)
    if chunk:
        packs.append(_pack_blob(chunk))
    return packs


@dataclass(frozen=True)
class _Pack:
    body: bytes
    index: dict[str, tuple[int, int, str]]


def _parse_pack(name: str, blob: bytes, where: str) -> _Pack:
    """A pack's bytes checked against its name and its header (SpecTampered when either fails)."""
    match = _PACK_NAME.fullmatch(name)
    if match is None:
        raise SpecTampered(f"{where}: {name!r} is not a pack's name")
    if _sha(blob) != match[1]:
        raise SpecTampered(
            f"{where}: the pack's bytes hash to sha256 {_sha(blob)[:16]}…, not to its name: damaged or "
            "tampered; refusing every spec in it"
        )
    head, newline, body = blob.partition(b"\n")
    try:
        header = json.loads(head) if newline else None
        if not isinstance(header, dict) or header.get("format") != PACK_FORMAT:
            raise ValueError(f"expected a {PACK_FORMAT} header")
        index: dict[str, tuple[int, int, str]] = {}
        for attempt_id, offset, length, sha in header["specs"]:
            if not (isinstance(attempt_id, str) and isinstance(sha, str)):
                raise ValueError("an entry is not (id, offset, length, sha256)")
            if not (isinstance(offset, int) and isinstance(length, int) and 0 <= offset <= len(body)):
                raise ValueError(f"{attempt_id}: offset {offset!r} outside the pack")
            if not 0 < length <= len(body) - offset:
                raise ValueError(f"{attempt_id}: length {length!r} outside the pack")
            index[attempt_id] = (offset, length, sha)
    except (ValueError, TypeError, KeyError) as err:
        raise SpecTampered(f"{where}: not a readable pack ({err})") from None
    return _Pack(body, index)


_PACKS: OrderedDict[str, _Pack] = OrderedDict()
_PACKS_LOCK = threading.Lock()


def _load_pack(pack_ref: str, name: str) -> _Pack:
    """The pack a reference names, checked against its name: from this host's runs folder (a local
    path, or the cached copy of a store object, fetched again when absent or not the named bytes),
    else from the runs store. Kept parsed for the next spec of the same pack (a pack is never
    rewritten: the same name is the same bytes)."""
    with _PACKS_LOCK:
        if (pack := _PACKS.get(pack_ref)) is not None:
            _PACKS.move_to_end(pack_ref)
            return pack
    if "://" in pack_ref:
        pack = _load_store_pack(pack_ref, name)
    else:
        path = Path(pack_ref)
        if not path.exists():
            raise SpecMissing(f"{pack_ref}: no such pack on this host: the plan that named it is gone")
        try:
            blob = read_capped(path, MAX_OBJECT_BYTES)
        except Unreadable as err:
            raise SpecTampered(f"{pack_ref}: {err}") from None
        pack = _parse_pack(name, blob, pack_ref)
    with _PACKS_LOCK:
        _PACKS[pack_ref] = pack
        while len(_PACKS) > _PACK_CACHE_SIZE:
            _PACKS.popitem(last=False)
    return pack


def _load_store_pack(uri: str, name: str) -> _Pack:
    store = shared()
    if store is None:
        raise RunsStoreError(f"{uri[:200]}: a runs store URI, but {RUNS_URL_ENV} is not set on this host")
    key = store.key_of_uri(uri)
    cached = runs_dir() / key
    if cached.is_file() and not cached.is_symlink():
        try:
            return _parse_pack(name, read_capped(cached, MAX_OBJECT_BYTES), str(cached))
        except (SpecTampered, Unreadable):
            pass  # not the named bytes: the store's copy replaces it
    blob = store.read(key)
    if blob is None:
        raise SpecMissing(f"{uri}: no such pack in the runs store: the plan that named it is gone")
    pack = _parse_pack(name, blob, uri)
    write_atomic(cached, blob)  # checked: this host's next attempt of the pack reads it here
    return pack


def _packed_reference(reference: str) -> tuple[str, str, str] | None:
    """(the pack's reference, the pack's name, the attempt id) of a reference to a packed spec; None
    for a single spec file."""
    head, slash, leaf = reference.rpartition("/")
    if not slash or not leaf.endswith(".json"):
        return None
    name = head.rpartition("/")[2]
    if _PACK_NAME.fullmatch(name) is None:
        return None
    return head, name, leaf[: -len(".json")]


def is_packed(reference: str | Path) -> bool:
    """Whether a spec reference names a spec in a pack (else a spec file of its own)."""
    return _packed_reference(str(reference)) is not None


def read_spec(spec_path: str | Path) -> AttemptSpec:
    """The spec an XCom reference names; every reader of a spec reads it here.

    A packed spec (`<plan>/pack-<sha256>.specs/<attempt id>.json`, a local path or a runs store URI):
    its pack is read (this host's copy when it holds the named bytes, else the store's), checked
    against the sha256 in its name, and the spec's slice against the sha256 the pack lists for it;
    SpecMissing when the pack or the attempt is not there, SpecTampered when a hash or the attempt id
    does not match. A single spec file (a plan written before packs, a verdict or repair round): a
    local path, or a runs store URI pulled into this host's runs folder first."""
    packed = _packed_reference(str(spec_path))
    if packed is None:
        return AttemptSpec.model_validate_json(local_path(spec_path).read_text())
    pack_ref, name, attempt_id = packed
    pack = _load_pack(pack_ref, name)
    entry = pack.index.get(attempt_id)
    if entry is None:
        raise SpecMissing(f"{spec_path}: pack {name} holds no spec of attempt {attempt_id}")
    offset, length, sha = entry
    data = pack.body[offset : offset + length]
    if _sha(data) != sha:
        raise SpecTampered(f"{spec_path}: the spec's bytes do not hash to the sha256 its pack lists")
    spec = AttemptSpec.model_validate_json(data)
    if spec.attempt_id != attempt_id:
        raise SpecTampered(f"{spec_path}: the pack's spec at that place is attempt {spec.attempt_id}")
    return spec


def _read_manifest(data: bytes, where: str) -> dict[str, _Where]:
    try:
        doc = json.loads(data)
        if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
            raise ValueError(f"expected {MANIFEST_FORMAT}")
        found = {}
        for pack, entries in doc["packs"].items():
            if _PACK_NAME.fullmatch(pack) is None:
                raise ValueError(f"{pack[:80]!r} is not a pack's name")
            for attempt_id, offset, length, sha in entries:
                found[str(attempt_id)] = _Where(pack, int(offset), int(length), str(sha))
        return found
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise SpecTampered(f"{where}: not a readable manifest of the plan ({err}); refusing it") from None


def _manifest_bytes(where: dict[str, _Where]) -> bytes:
    packs: dict[str, list] = {}
    for attempt_id, w in where.items():
        packs.setdefault(w.pack, []).append([attempt_id, w.offset, w.length, w.sha256])
    doc = {"format": MANIFEST_FORMAT, "packs": packs}
    return json.dumps(doc, separators=(",", ":")).encode() + b"\n"


def _plan_state(cycle_id: str, store, base: Path | None = None) -> _Plan:
    """What the plan of `cycle_id` holds: in the runs store on a cluster (one listing, then each
    manifest), else in the runs folder (`base`, default this host's)."""
    packed: dict[str, _Where] = {}
    singles: dict[str, int | None] = {}
    slots: list[tuple[int, str]] = []
    if store is not None:
        folder = f"{cycle_id}/plan"
        names = {key.rsplit("/", 1)[1]: size for key, size in store.listing(folder).items()}
    else:
        folder = str((base or runs_dir()) / cycle_id / "plan")
        try:
            names = {e.name: None for e in os.scandir(folder) if e.is_file(follow_symlinks=False)}
        except FileNotFoundError:
            names = {}
    for name, size in names.items():
        if match := _MANIFEST_NAME.fullmatch(name):
            slots.append((int(match[1]), name))
        elif name.endswith(".json") and not name.startswith((".", "manifest-")):
            singles[name[: -len(".json")]] = size
    for _, name in sorted(slots):
        for attempt_id, where in _manifest_of(folder, name, store).items():
            packed.setdefault(attempt_id, where)  # the first manifest that names it holds it
    return _Plan(folder, packed, singles, max((n for n, _ in slots), default=0) + 1)


def _manifest_of(folder: str, name: str, store) -> dict[str, _Where]:
    if store is not None:
        data = store.read(f"{folder}/{name}", max_bytes=MAX_MANIFEST_BYTES)
        if data is None:
            raise SpecMissing(f"{store.uri_for(folder)}/{name}: listed, then gone")
        return _read_manifest(data, store.uri_for(f"{folder}/{name}"))
    path = Path(folder) / name
    try:
        data = read_capped(path, MAX_MANIFEST_BYTES)
    except Unreadable as err:
        raise SpecTampered(f"{path}: {err}; refusing to plan") from None
    return _read_manifest(data, str(path))


def _single_bytes(plan: _Plan, attempt_id: str, store) -> bytes | None:
    if store is not None:
        return store.read(f"{plan.folder}/{attempt_id}.json")
    try:
        return (Path(plan.folder) / f"{attempt_id}.json").read_bytes()
    except FileNotFoundError:
        return None


def _reference(plan: _Plan, where: _Where | None, attempt_id: str, store) -> str:
    leaf = f"{attempt_id}.json" if where is None else f"{where.pack}/{attempt_id}.json"
    if store is not None:
        return store.uri_for(f"{plan.folder}/{leaf}")
    return str(Path(plan.folder) / leaf)


def planned_spec_reference(cycle_id: str, attempt_id: str, base: Path | None = None) -> str | None:
    """The reference (for read_spec) of the spec the plan of `cycle_id` holds for `attempt_id`: its
    place in a pack, else its single file (a plan written before packs); None when the plan has none.
    On a cluster the store's plan, else this host's runs folder (or `base`, another runs folder)."""
    store = shared() if base is None else None
    plan = _plan_state(cycle_id, store, base)
    if (where := plan.packed.get(attempt_id)) is not None:
        return _reference(plan, where, attempt_id, store)
    if attempt_id in plan.singles:
        return _reference(plan, None, attempt_id, store)
    return None


def write_specs(specs: list[AttemptSpec]) -> list[str]:
    """Write a plan's specs write-once, in packs with one manifest, and return what XCom carries, in
    order (one reference per spec, read by read_spec).

    Each cycle's plan is read first (on a cluster: the runs store's, one listing and its manifests):
    a spec it holds already with the same bytes is referenced where it is (a rerun of the plan writes
    nothing), one it holds with other bytes is refused by attempt id (SpecConflict), before anything
    is written. The new specs go into content-addressed packs (written once: created only where
    absent, in one batch of conditional puts on a store), then one manifest naming them is created in
    the plan's next manifest slot; a slot taken meanwhile by another batch is read and checked as
    well (its specs win), then the next slot is tried."""
    store = shared()
    by_cycle: dict[str, list[AttemptSpec]] = {}
    for spec in specs:
        by_cycle.setdefault(spec.cycle_id, []).append(spec)
    plans = {cycle_id: _plan_state(cycle_id, store) for cycle_id in by_cycle}
    conflicts: list[str] = []
    found: dict[str, _Where | None] = {}  # attempt id -> held already (None: its single file)
    new: dict[str, dict[str, bytes]] = {cycle_id: {} for cycle_id in by_cycle}
    singles_to_check: list[tuple[str, str, bytes]] = []
    for cycle_id, cycle_specs in by_cycle.items():
        plan = plans[cycle_id]
        for spec in cycle_specs:
            attempt_id = spec.attempt_id
            data = spec_bytes(spec)
            if (where := plan.packed.get(attempt_id)) is not None:
                if where.sha256 != _sha(data):
                    conflicts.append(attempt_id)
                found[attempt_id] = where
            elif attempt_id in plan.singles:
                singles_to_check.append((cycle_id, attempt_id, data))
                found[attempt_id] = None
            elif new[cycle_id].setdefault(attempt_id, data) != data:
                conflicts.append(attempt_id)  # twice in this plan, two specs
    if singles_to_check:

        def differs(item: tuple[str, str, bytes]) -> str | None:
            cycle_id, attempt_id, data = item
            plan = plans[cycle_id]
            size = plan.singles[attempt_id]
            if size is not None and size != len(data):
                return attempt_id
            return None if _single_bytes(plan, attempt_id, store) == data else attempt_id

        with ThreadPoolExecutor(min(BATCH_THREADS, len(singles_to_check))) as threads:
            conflicts += [a for a in threads.map(differs, singles_to_check) if a is not None]
    _refuse(conflicts)
    for cycle_id, todo in new.items():
        if todo:
            found.update(_write_packs(plans[cycle_id], todo, store))
    return [_reference(plans[s.cycle_id], found[s.attempt_id], s.attempt_id, store) for s in specs]


def _refuse(conflicts: list[str]) -> None:
    if conflicts:
        conflicts = list(dict.fromkeys(conflicts))
        more = f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
        raise SpecConflict(
            f"{len(conflicts)} planned attempt(s) already have another spec: "
            f"{', '.join(conflicts[:5])}{more}; a plan never replaces a spec (plan the changed "
            "attempts as a new cycle or a rerun)"
        )


def _write_packs(plan: _Plan, todo: dict[str, bytes], store) -> dict[str, _Where]:
    """The new specs of one cycle's plan in packs, then their manifest in the next free slot; where
    each spec is held (a batch that took a slot first holds the specs it names)."""
    packs = _packs_of(list(todo.items()))
    where = {attempt_id: w for _, _, index in packs for attempt_id, w in index.items()}
    if store is not None:
        store.create_many({f"{plan.folder}/{name}": blob for name, blob, _ in packs})
        for name, blob, _ in packs:  # this host's cache: its own attempts and `cycle run` read it here
            write_atomic(runs_dir() / plan.folder / name, blob)
    else:
        Path(plan.folder).mkdir(parents=True, exist_ok=True)
        for name, blob, _ in packs:
            _create_file(Path(plan.folder) / name, blob)
    held: dict[str, _Where] = {}  # specs a batch that took a slot first holds
    slot = plan.next_slot
    while where:
        name = f"manifest-{slot:06d}.json"
        if _create_slot(plan, name, _manifest_bytes(where), store):
            break
        taken = _manifest_of(plan.folder, name, store)  # another batch took the slot meanwhile
        _refuse([a for a, w in where.items() if a in taken and taken[a].sha256 != w.sha256])
        for attempt_id in [a for a in where if a in taken]:
            held[attempt_id] = taken[attempt_id]
            del where[attempt_id]
        slot += 1
    plan.next_slot = slot + 1
    plan.packed.update(where)
    plan.packed.update(held)
    return {**where, **held}


def _create_slot(plan: _Plan, name: str, doc: bytes, store) -> bool:
    if store is not None:
        return store.create(f"{plan.folder}/{name}", doc)
    path = Path(plan.folder) / name
    tmp = path.with_name(f".{name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(doc)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _create_file(path: Path, data: bytes) -> None:
    """`data` at `path` whole and only if nothing is there (another writer's same bytes are fine)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        if path.read_bytes() != data:
            raise SpecConflict(
                f"{path}: another file holds this name with other bytes; refusing to replace it"
            ) from None
    finally:
        tmp.unlink(missing_ok=True)


def attempt_label(spec_path: str | Path) -> str:
    """`agent / project / attempt N` for the Airflow UI's map index; falls back to the file name."""
    try:
        return read_spec(spec_path).label
    except (OSError, ValueError):
        return label_of_attempt_id(Path(str(spec_path)).stem)


_ATTEMPT_ID = re.compile(
    r"^[^.]+\.[^.]+\.(?P<agent>[^.]+)\.(?P<project>[^.]+)\.a(?P<no>\d+)(?:\.r(?P<rerun>\d+))?$"
)


def label_of_attempt_id(attempt_id: str) -> str:
    """The label of an attempt from its id alone (`<cycle>.<purpose>.<agent>.<project>.a<N>`), the same
    as AttemptSpec.label: what the scheduler shows for an attempt that has not started yet (it reads
    the plan's paths, never the spec files). Anything else is returned as it is."""
    match = _ATTEMPT_ID.match(attempt_id)
    if not match:
        return attempt_id[:MAP_LABEL_MAX]
    rerun = f" (rerun {match['rerun']})" if match["rerun"] else ""
    return f"{match['agent']} / {match['project']} / attempt {int(match['no'])}{rerun}"[:MAP_LABEL_MAX]


MAP_LABEL_MAX = 250  # Airflow's rendered_map_index column
