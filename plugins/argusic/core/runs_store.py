"""The runs store: what every host of a cluster must see of a cycle, in object storage.

On one machine a cycle's files live in the runs folder (ARGUSIC_RUNS_DIR). On a cluster the hosts share
no folder: set ARGUSIC_RUNS_URL (e.g. `s3://argusic/runs`, or `file:///…` for a store on a local disk)
and each host's runs folder becomes a cache of the store, keyed the same way:

    <cycle>/pool.json                      the cycle's pool (prepare_pool)
    <cycle>/plan/pack-<sha256>.specs       the plan: its specs in packs of 256, named by their sha256,
                                           write-once, put in one batch (argusic.core.spec.write_specs;
                                           XCom carries <pack URI>/<attempt id>.json per attempt)
    <cycle>/plan/manifest-<n>.json         what batch n of the plan added: attempt id -> pack, offset,
                                           length, sha256 (written last, write-once in the next slot)
    <cycle>/plan/<attempt id>.json         a single spec (plans written before packs, verdict and
                                           repair rounds: argusic.core.spec.write_spec)
    <cycle>/environment.json               the cycle's pin, first writer wins (a conditional put)
    <cycle>/<attempt id>/run_record.json   every run record, write-once (the attempt task)
    items/<project>/<item>/<revision>/…    repair items, their bases' bundles, their validations
                                           (argusic.repair.item_store)

An attempt task pulls its spec, the pin and the records measured before (a retry on another host finds
them and measures nothing twice) and pushes each record as soon as it is written; ingest pulls the
plan's records. Everything read back is hostile input: keys are checked segment by segment, URIs must
be inside the store, objects are capped in size and land atomically. Unset: nothing here does anything.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from argusic.core.settings import runs_dir

RUNS_URL_ENV = "ARGUSIC_RUNS_URL"
MAX_OBJECT_BYTES = 4 << 20  # a record is capped at 1 MiB, a spec or pin far smaller; a pool of 3,669 fits
MAX_KEY_CHARS = 512
BATCH_THREADS = 32  # objects read or created at once by threads (file stores, reads of a rerun)
BATCH_REQUESTS = 64  # conditional puts in flight at once on an S3 store (one plan: thousands of specs)
_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,199}")


class RunsStoreError(RuntimeError):
    """The runs store refused or failed an operation; the message names the object and why."""


class RunsStoreConflict(RunsStoreError):
    """A write-once object (a run record) already holds other bytes."""


def runs_url() -> str | None:
    """ARGUSIC_RUNS_URL, or None on a single machine (the runs folder is all there is)."""
    url = os.environ.get(RUNS_URL_ENV, "").strip().rstrip("/")
    return url or None


def key_problem(key: str) -> str | None:
    """Why `key` cannot name an object of the runs store (None when it can)."""
    if not key or len(key) > MAX_KEY_CHARS:
        return f"expected 1-{MAX_KEY_CHARS} characters"
    bad = [s for s in key.split("/") if not _SEGMENT.fullmatch(s) or s in {".", ".."}]
    if bad:
        return f"segment {bad[0][:40]!r} is not a plain name (letters, digits, '.', '_', '-')"
    return None


def key_of_local(path: str | Path) -> str:
    """The store key of a file in this host's runs folder (ValueError for a file outside it)."""
    try:
        relative = Path(os.path.abspath(path)).relative_to(os.path.abspath(runs_dir()))
    except ValueError:
        raise ValueError(f"{path} is not in the runs folder {runs_dir()}") from None
    key = relative.as_posix()
    if problem := key_problem(key):
        raise ValueError(f"{path}: {problem}")
    return key


class RunsStore:
    """The runs store rooted at a URL (one code path for s3:// and file://, through fsspec)."""

    def __init__(self, url: str) -> None:
        # deferred: fsspec loads requests once Airflow is imported; a DAG file parse reaches this
        # module (through the spec) but opens no store
        from fsspec.core import url_to_fs

        self.url = url.rstrip("/")
        self.fs, self.root = url_to_fs(self.url)
        self.protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        if self.protocol == "file":
            self.fs.makedirs(self.root, exist_ok=True)

    def uri_for(self, key: str) -> str:
        self._path(key)
        return f"{self.url}/{key}"

    def key_of_uri(self, uri: str) -> str:
        if not isinstance(uri, str) or not uri.startswith(self.url + "/"):
            raise RunsStoreError(f"{str(uri)[:200]} is not in the runs store ({self.url})")
        key = uri[len(self.url) + 1 :]
        if problem := key_problem(key):
            raise RunsStoreError(f"{uri[:200]}: {problem}")
        return key

    def _path(self, key: str) -> str:
        if problem := key_problem(key):
            raise RunsStoreError(f"runs store key {key[:200]!r}: {problem}")
        return f"{self.root}/{key}"

    def read(self, key: str, max_bytes: int | None = None) -> bytes | None:
        """An object's bytes (None when absent), refused past `max_bytes` (default MAX_OBJECT_BYTES; a
        larger cap for the few objects that need one, e.g. a repair item's repository bundle)."""
        max_bytes = MAX_OBJECT_BYTES if max_bytes is None else max_bytes
        path = self._path(key)
        try:
            size = self.fs.size(path)
        except FileNotFoundError:
            return None
        if size is None or size > max_bytes:
            raise RunsStoreError(f"{self.uri_for(key)}: {size} bytes, over {max_bytes}: refused")
        with self.fs.open(path, "rb") as handle:
            data = handle.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise RunsStoreError(f"{self.uri_for(key)}: grew past {max_bytes} bytes while read")
        return data

    def write(self, key: str, data: bytes, write_once: bool = False) -> None:
        """Store `data` under `key`. The same bytes again is a no-op. `write_once`: other bytes already
        there are refused (RunsStoreConflict); otherwise they are replaced."""
        held = self.read(key)
        if held == data:
            return
        if held is not None and write_once:
            raise RunsStoreConflict(
                f"{self.uri_for(key)} already holds other bytes (sha256 {_sha(held)[:16]}…); refusing to "
                f"replace them with sha256 {_sha(data)[:16]}…"
            )
        if held is None and write_once:
            self.create(key, data)
            return
        self._put(key, data)

    def create(self, key: str, data: bytes) -> bool:
        """Store `data` only if nothing is there yet (first writer wins, across hosts: S3's conditional
        put, If-None-Match: *). True when this call created it."""
        path = self._path(key)
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        if self.protocol == "file":
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            except FileExistsError:
                return False
            with os.fdopen(fd, "wb") as handle:  # a reader may see it short for a moment: local only
                handle.write(data)
            return True
        try:
            self.fs.pipe_file(path, data, mode="create")
        except (FileExistsError, OSError) as err:
            if _is_precondition_failed(err) or isinstance(err, FileExistsError):
                return False
            raise
        return True

    def create_many(self, items: dict[str, bytes], manifest: str | None = None) -> int:
        """Store every object of `items` write-once, in one batch: objects absent are created (first
        writer wins, as `create`), objects already holding the same bytes are left alone, and objects
        holding other bytes are refused by name (RunsStoreConflict, nothing else of the batch lost).

        `manifest`: the key of one object written last, listing every key with its sha256. A batch
        whose manifest is already in the store is complete (its objects are write-once, written before
        it): a rerun costs one read. Returns how many objects this call created."""
        for key in items:
            self._path(key)
        doc = manifest_bytes(items) if manifest is not None else b""
        if manifest is not None:
            self._path(manifest)
            held = self.read(manifest)
            if held == doc:
                return 0
            if held is not None:
                raise RunsStoreConflict(f"{self.uri_for(manifest)} already lists another batch; refusing it")
        present = self._sizes({key.rsplit("/", 1)[0] for key in items if "/" in key})
        absent = sorted(key for key in items if key not in present)
        created = dict(zip(absent, self._create_batch(absent, items), strict=True))

        def check(key: str) -> str | None:
            """The key when it holds other bytes than `items` says (None: the same bytes)."""
            data = items[key]
            size = present.get(key)
            if size is not None and size != len(data):
                return key
            return None if self.read(key) == data else key

        held = sorted(key for key in items if not created.get(key))  # there before, or a race lost
        with ThreadPoolExecutor(min(BATCH_THREADS, max(1, len(held)))) as pool:
            outcomes = [(False, key) for key in pool.map(check, held)]
        conflicts = [key for _, key in outcomes if key is not None]
        if conflicts:
            names = ", ".join(conflicts[:5]) + (
                f" and {len(conflicts) - 5} more" if len(conflicts) > 5 else ""
            )
            raise RunsStoreConflict(
                f"{len(conflicts)} object(s) of {self.url} already hold other bytes: {names}; refusing to "
                "replace them"
            )
        if manifest is not None and not self.create(manifest, doc) and self.read(manifest) != doc:
            raise RunsStoreConflict(f"{self.uri_for(manifest)} already lists another batch; refusing it")
        return sum(created.values())

    def _create_batch(self, keys: list[str], items: dict[str, bytes]) -> list[bool]:
        """`create` of every key (True: created by this call), many requests in flight at once: on
        the filesystem's own event loop when it has one (s3fs), else in threads."""
        if not keys:
            return []
        if self.protocol == "file" or not getattr(self.fs, "async_impl", False):
            for folder in {self._path(key).rsplit("/", 1)[0] for key in keys}:
                self.fs.makedirs(folder, exist_ok=True)
            with ThreadPoolExecutor(min(BATCH_THREADS, len(keys))) as pool:
                return list(pool.map(lambda key: self.create(key, items[key]), keys))
        import asyncio  # deferred: only a store with an event loop (s3fs) takes this path

        from fsspec.asyn import sync  # deferred: fsspec is imported with the store (see __init__)

        async def one(key: str, limit: asyncio.Semaphore) -> bool:
            async with limit:
                try:
                    await self.fs._pipe_file(self._path(key), items[key], mode="create")
                except (FileExistsError, OSError) as err:
                    if isinstance(err, FileExistsError) or _is_precondition_failed(err):
                        return False
                    raise
                return True

        async def every() -> list[bool]:
            limit = asyncio.Semaphore(BATCH_REQUESTS)
            return list(await asyncio.gather(*(one(key, limit) for key in keys)))

        return sync(self.fs.loop, every)

    def listing(self, folder: str) -> dict[str, int]:
        """{key: size} of the objects directly under `folder` (one listing, paged; {} when none), as
        the store has them now (not a listing this process cached: other hosts write there too)."""
        self.fs.invalidate_cache(self._path(folder))
        return self._sizes({folder})

    def _sizes(self, folders: set[str]) -> dict[str, int]:
        """{key: size} of the objects directly under each folder: one listing (paged) per folder."""
        sizes: dict[str, int] = {}
        root = self.root.rstrip("/")
        for folder in sorted(folders):
            try:
                listing = self.fs.ls(self._path(folder), detail=True)
            except (FileNotFoundError, NotADirectoryError):
                continue
            for info in listing:
                name = str(info.get("name", "")).rstrip("/")
                if info.get("type") == "file" and name.startswith(root + "/"):
                    sizes[name[len(root) + 1 :]] = int(info.get("size") or 0)
        return sizes

    def _put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        if self.protocol == "file":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            tmp = f"{path}.{os.getpid()}.partial"
            with open(tmp, "wb") as handle:
                handle.write(data)
            os.replace(tmp, path)  # atomic: a reader never sees half an object
            return
        self.fs.pipe_file(path, data)  # one PUT: S3 never shows half an object

    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self._path(key)))


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def manifest_bytes(items: dict[str, bytes]) -> bytes:
    """The manifest of a batch: {key: sha256} of every object, sorted, one JSON document."""
    return json.dumps({key: _sha(items[key]) for key in sorted(items)}, indent=0).encode() + b"\n"


def manifest_key(folder: str, items: dict[str, bytes]) -> str:
    """Where a batch's manifest goes: `<folder>/manifest-<digest>.json`, named by what it lists (two
    shards of one plan, or the same plan twice, never share a manifest of other contents)."""
    return f"{folder}/manifest-{_sha(manifest_bytes(items))[:24]}.json"


def _is_precondition_failed(err: BaseException) -> bool:
    text = f"{type(err).__name__} {err}"
    return "PreconditionFailed" in text or "412" in text or "If-None-Match" in text


def shared() -> RunsStore | None:
    """The cluster's runs store, or None on a single machine."""
    url = runs_url()
    return RunsStore(url) if url else None


# --- what the tasks call (each a no-op on a single machine) ------------------------------------------


def push(path: str | Path, write_once: bool = False) -> str:
    """Push one file of this host's runs folder to the store; returns its reference for XCom: the
    store URI on a cluster, the local path on a single machine."""
    store = shared()
    if store is None:
        return str(path)
    key = key_of_local(path)
    store.write(key, Path(path).read_bytes(), write_once=write_once)
    return store.uri_for(key)


def push_many(paths: list[Path], manifest_folder: str | None = None) -> list[str]:
    """Push files of this host's runs folder to the store write-once, in one batch (RunsStore.create_many;
    with a manifest under `manifest_folder` when given); their references for XCom, in order. Single
    machine: the local paths."""
    store = shared()
    if store is None:
        return [str(path) for path in paths]
    keys = [key_of_local(path) for path in paths]
    items = {key: Path(path).read_bytes() for key, path in zip(keys, paths, strict=True)}
    manifest = manifest_key(manifest_folder, items) if manifest_folder is not None else None
    store.create_many(items, manifest)
    return [store.uri_for(key) for key in keys]


def pull(key: str) -> Path | None:
    """Bring one object of the store into this host's runs folder (replacing the cached copy when the
    store's differs); its local path, or None when the store has none. Single machine: the local path
    when it exists."""
    if problem := key_problem(key):
        raise RunsStoreError(f"runs store key {key[:200]!r}: {problem}")
    local = runs_dir() / key
    store = shared()
    if store is None:
        return local if local.exists() else None
    data = store.read(key)
    if data is None:
        return None
    if local.is_symlink() or (local.exists() and not local.is_file()):
        raise RunsStoreError(f"{local}: not a regular file in the runs cache; refusing to replace it")
    if local.exists() and local.read_bytes() == data:
        return local
    local.parent.mkdir(parents=True, exist_ok=True)
    tmp = local.with_name(f".{local.name}.{os.getpid()}.pull")
    tmp.write_bytes(data)
    os.replace(tmp, local)
    return local


def pull_each(prefix: str, name: str) -> list[Path]:
    """Bring every object `<prefix>/<folder>/<name>` of the store into this host's runs folder (e.g.
    every cycle's `pools/<cycle>/pool.json`); their local paths. Single machine: nothing to bring, []."""
    store = shared()
    if store is None:
        return []
    if problem := key_problem(f"{prefix}/x/{name}"):
        raise RunsStoreError(f"runs store keys {prefix}/*/{name}: {problem}")
    found = store.fs.glob(f"{store.root}/{prefix}/*/{name}")
    keys = sorted(str(path)[len(store.root.rstrip("/")) + 1 :] for path in found)
    return [local for key in keys if (local := pull(key)) is not None]


def local_path(reference: str | Path) -> Path:
    """The local file an XCom reference names: a store URI is pulled into the runs folder (RunsStoreError
    when the store does not hold it, or the URI is outside the store); a path is returned as it is."""
    text = str(reference)
    if "://" not in text:
        return Path(text)
    store = shared()
    if store is None:
        raise RunsStoreError(f"{text[:200]}: a runs store URI, but {RUNS_URL_ENV} is not set on this host")
    key = store.key_of_uri(text)
    found = pull(key)
    if found is None:
        raise RunsStoreError(f"{text[:200]}: no such object in the runs store")
    return found


def key_of_reference(reference: str | Path) -> str:
    """The store key an XCom reference names, without reading anything (a URI or a local path)."""
    text = str(reference)
    store = shared()
    if "://" in text:
        if store is None:
            raise RunsStoreError(f"{text[:200]}: a runs store URI, but {RUNS_URL_ENV} is not set")
        return store.key_of_uri(text)
    return key_of_local(text)


def create_once(path: Path) -> bool:
    """Offer this host's file at `path` to the store as the first and only version (the cycle's pin):
    True when this host's copy won or the store already holds the same bytes; False when another host
    was first (the store's version has then replaced the local file). Single machine: True."""
    store = shared()
    if store is None:
        return True
    key = key_of_local(path)
    data = path.read_bytes()
    if store.create(key, data):
        return True
    pull(key)
    return path.read_bytes() == data


__all__ = [
    "RUNS_URL_ENV",
    "RunsStore",
    "RunsStoreConflict",
    "RunsStoreError",
    "create_once",
    "key_of_local",
    "key_of_reference",
    "key_problem",
    "local_path",
    "pull",
    "push",
    "push_many",
    "runs_url",
    "shared",
]
