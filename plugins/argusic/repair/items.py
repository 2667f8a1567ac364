"""Repair items (``argusic.repair_item/1``): the model, the manifest a person writes, and the build
from a repository's merged PRs (issue 13, seed 001).

Storage, write-once per revision: ``<out>/<project_id>/<item_id>.json`` is the current revision;
every revision ever written is also kept, never overwritten, at
``<out>/<project_id>/revisions/<item_id>/<revision>.json``. A rebuild giving the same revision changes
nothing; a different revision (new statement, new grader image, other test outcomes...) adds its
file and becomes the current one. ``revision`` is the sha256 of the canonical JSON (sorted keys, no
spaces, UTF-8) of every field except ``revision`` and ``built_at``.

On a cluster (ARGUSIC_RUNS_URL set) each revision built also goes into the runs store with a bundle of
its base (``publish_item``; ``argusic.repair.item_store``), and hosts that did not build it read it
from there (``load_stored_item``, ``repository_of``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
import tomllib
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)

from argusic.core.runs_store import RunsStoreError
from argusic.core.settings import project_root
from argusic.repair import item_store, testrun
from argusic.repair import paths as test_paths

SCHEMA = "argusic.repair_item/1"
MAX_ITEM_BYTES = 4 * 1024 * 1024
MAX_MANIFEST_BYTES = 1024 * 1024
MAX_TEXT_BYTES = 256 * 1024
ITEMS_DIR_ENV = "ARGUSIC_ITEMS_DIR"
ID_PART = r"^[A-Za-z0-9_-]{1,128}$"
SHA = r"^[0-9a-f]{40}$"

IdPart = Annotated[str, Field(pattern=ID_PART)]
Outcome = Literal["passed", "failed", "error", "skipped"]


class ItemError(Exception):
    """A refused item, manifest or build step; the message names the file, the field and the problem."""


def items_dir() -> Path:
    """ARGUSIC_ITEMS_DIR, default <project root>/items."""
    return Path(os.environ.get(ITEMS_DIR_ENV) or project_root() / "items")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class Source(_Strict):
    kind: Literal["merge", "commit", "range"]
    ref: Annotated[str, Field(pattern=r"^[0-9a-f]{40}(\.\.[0-9a-f]{40})?$")]


class Split(_Strict):
    original: IdPart
    topic: IdPart
    match: Annotated[str, Field(min_length=1, max_length=500)]
    files: list[str]  # the topic's partial gold patch: these non-test files of the gold patch


class States(_Strict):
    base: dict[str, Outcome]
    with_tests: dict[str, Outcome]
    with_gold: dict[str, Outcome]


class GraderImage(_Strict):
    reference: Annotated[str, Field(min_length=1, max_length=300)]
    digest: Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")]


Argv = Annotated[list[Annotated[str, Field(max_length=4096)]], Field(min_length=1, max_length=200)]


class ExcludedTest(_Strict):
    """A test set aside for the item (seed 001): it checks an implementation detail (exact call
    arguments and the like) that another correct fix would break, so it is neither fail-to-pass nor
    pass-to-pass, and the grader never reads its result."""

    test: Annotated[str, Field(min_length=1, max_length=500)]
    reason: Annotated[str, Field(min_length=1, max_length=500)]


class Item(_Strict):
    """One repair item, as stored. Build with `make_item` (which computes the revision)."""

    schema_: Literal["argusic.repair_item/1"] = Field(alias="schema")
    item_id: IdPart
    revision: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    project_id: IdPart
    repository: Annotated[str, Field(min_length=1, max_length=2000)]
    base: Annotated[str, Field(pattern=SHA)]
    source: Source
    track: Literal["basic", "spec"]
    problem_statement: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_BYTES)]
    interface_spec: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_BYTES)] | None
    test_patch: str
    gold_patch: str
    test_files: list[str]
    test_command: Argv
    setup_command: Argv | None
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    split: Split | None
    superseded_by_split: bool
    states: States
    built_at: datetime
    grader_image: GraderImage
    # Tests set aside (ExcludedTest); written only when there are some, so an item built before the
    # list existed keeps its revision.
    excluded_tests: list[ExcludedTest] = Field(default_factory=list, max_length=200)

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)

    @model_serializer(mode="wrap")
    def _without_an_empty_exclusion_list(self, handler):  # noqa: ANN001, ANN202 - pydantic's protocol
        data = handler(self)
        if isinstance(data, dict) and not data.get("excluded_tests"):
            data.pop("excluded_tests", None)
        return data

    @field_validator("built_at", mode="before")
    @classmethod
    def _parse_time(cls, value: object) -> object:
        if isinstance(value, str):
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Item:
        if (self.track == "spec") != (self.interface_spec is not None):
            raise ValueError("track must be 'spec' exactly when interface_spec is given")
        if not self.fail_to_pass:
            raise ValueError("fail_to_pass is empty")
        if set(self.fail_to_pass) & set(self.pass_to_pass):
            raise ValueError("a test is both in fail_to_pass and pass_to_pass")
        set_aside = {e.test for e in self.excluded_tests}
        if set_aside & (set(self.fail_to_pass) | set(self.pass_to_pass)):
            raise ValueError("an excluded test is still in fail_to_pass or pass_to_pass")
        if self.split is not None and not self.item_id.startswith(self.split.original + "-"):
            raise ValueError("a split item's id must be '<original>-<topic>'")
        if self.revision != revision_of(self.to_dict()):
            raise ValueError("revision does not match the item's content")
        return self

    def to_dict(self) -> dict:
        data = self.model_dump(mode="json", by_alias=True)
        data["built_at"] = self.built_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    @property
    def partial_gold_patch(self) -> str | None:
        """The topic's files of the gold patch (split items), else None."""
        if self.split is None:
            return None
        files = set(self.split.files)
        return testrun.filter_patch(self.gold_patch.encode(), lambda p: p in files).decode()


def _item_schema_tweak(schema: dict) -> None:
    schema["$id"] = "https://argusic.invalid/schemas/repair-item-1.schema.json"


def item_json_schema() -> dict:
    """The JSON Schema of the record (committed as schemas/repair-item-1.schema.json)."""
    schema = Item.model_json_schema(by_alias=True, mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    _item_schema_tweak(schema)
    return schema


def canonical(data: dict) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def revision_of(data: dict) -> str:
    body = {k: v for k, v in data.items() if k not in ("revision", "built_at")}
    return hashlib.sha256(canonical(body)).hexdigest()


def _refusal(where: str, err: ValidationError) -> ItemError:
    problems = []
    for e in err.errors()[:8]:
        field = ".".join(str(p) for p in e["loc"]) or "(record)"
        problems.append(f"{field}: {e['msg']}")
    return ItemError(f"{where}: " + "; ".join(problems))


def make_item(data: dict, where: str = "item") -> Item:
    """An Item from fields without revision (computed here); ItemError naming the field."""
    data = {**data, "schema": SCHEMA}
    data["revision"] = revision_of({**data, "built_at": None})
    try:
        return Item.model_validate(data)
    except ValidationError as err:
        raise _refusal(where, err) from None


def load_item(path: Path) -> Item:
    """Read one item record; ItemError naming the file and the field."""
    path = Path(path)
    try:
        if path.is_symlink() or not path.is_file():
            raise ItemError(f"{path}: not a regular file (a symlink is refused)")
        with path.open("rb") as handle:
            raw = handle.read(MAX_ITEM_BYTES + 1)
    except OSError as err:
        raise ItemError(f"{path}: cannot read: {err.strerror}") from None
    if len(raw) > MAX_ITEM_BYTES:
        raise ItemError(f"{path}: over the {MAX_ITEM_BYTES} bytes cap")
    try:
        return Item.model_validate_json(raw)
    except ValidationError as err:
        raise _refusal(str(path), err) from None


def store_item(item: Item, out_dir: Path) -> Path:
    """Write the item (write-once per revision, see the module docstring); the current file's path."""
    text = item.to_json()
    if len(text.encode()) > MAX_ITEM_BYTES:
        raise ItemError(
            f"{item.item_id}: record is {len(text.encode())} bytes, over the {MAX_ITEM_BYTES} cap"
        )
    folder = Path(out_dir) / item.project_id
    history = folder / "revisions" / item.item_id
    history.mkdir(parents=True, exist_ok=True)
    kept = history / f"{item.revision}.json"
    if not kept.exists():
        write_record(kept, text)
    current = folder / f"{item.item_id}.json"
    try:
        same = load_item(current).revision == item.revision
    except ItemError:
        same = False
    if not same:
        write_record(current, text)
    return current


def write_record(path: Path, text: str) -> None:
    """Write a record whole or not at all (a temporary file beside it, then renamed), mode 0644."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            os.fchmod(handle.fileno(), 0o644)
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def list_items(root: Path | None = None) -> list[Path]:
    """Current item files under the items folder (<project>/<item>.json, validations left out)."""
    root = Path(root or items_dir())
    return sorted(p for p in root.glob("*/*.json") if not p.name.endswith(".validation.json"))


# ---------------------------------------------------------------------------------------------------
# The manifest


class TopicEntry(_Strict):
    name: IdPart
    match: Annotated[str, Field(min_length=1, max_length=500)]
    statement: str
    spec: str | None = None
    files: Annotated[list[str], Field(min_length=1)]


class ItemEntry(_Strict):
    id: IdPart
    # Tests to set aside (seed 001: ones that check implementation details), each with its reason.
    exclude_tests: list[ExcludedTest] = []
    merge: Annotated[str, Field(pattern=r"^[0-9A-Za-z._/-]{4,200}$")] | None = None
    range: Annotated[str, Field(pattern=r"^[0-9A-Za-z._/-]{4,200}\.\.[0-9A-Za-z._/-]{4,200}$")] | None = None
    statement: str
    spec: str | None = None
    topics: list[TopicEntry] = []

    @model_validator(mode="after")
    def _one_source(self) -> ItemEntry:
        if (self.merge is None) == (self.range is None):
            raise ValueError("give exactly one of merge and range")
        names = [t.name for t in self.topics]
        if len(set(names)) != len(names):
            raise ValueError("topic names repeat")
        if len(self.topics) == 1:
            raise ValueError("a split needs at least two topics")
        return self


class Manifest(_Strict):
    project_id: IdPart
    repository: Annotated[str, Field(min_length=1, max_length=2000)]
    test_command: Argv
    setup_command: list[str] = []
    test_paths: list[str] = []
    items: Annotated[list[ItemEntry], Field(min_length=1)]

    @model_validator(mode="after")
    def _unique(self) -> Manifest:
        ids = [i.id for i in self.items]
        ids += [f"{i.id}-{t.name}" for i in self.items for t in i.topics]
        if len(set(ids)) != len(ids):
            raise ValueError("item ids (split ids included) repeat")
        return self


def load_manifest(path: Path) -> Manifest:
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ItemError(f"{path}: cannot read: {err.strerror}") from None
    if len(raw) > MAX_MANIFEST_BYTES:
        raise ItemError(f"{path}: over {MAX_MANIFEST_BYTES} bytes")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ItemError(f"{path}: not TOML: {err}") from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as err:
        raise _refusal(str(path), err) from None


_URL = re.compile(r"(?i)\b(?:https?|ftp|git|ssh)://|\bwww\.[a-z0-9-]+\.|\bgithub\.com/|\bgitlab\.com/")


def check_statement(text: str, where: str, pr_numbers: set[str]) -> str:
    """A statement as written, or ItemError: empty-looking, a URL, or the PR's number."""
    words = re.findall(
        r"[^\W\d_]{2,}", "\n".join(x for x in text.splitlines() if not x.lstrip().startswith("#"))
    )
    if len(words) < 8:
        raise ItemError(f"{where}: statement looks empty ({len(words)} words outside headings)")
    if _URL.search(text):
        raise ItemError(f"{where}: statement contains a URL (no links to the fix or its PR)")
    for number in sorted(pr_numbers):
        if re.search(rf"(?i)(#|\bPR\s*#?|pull request\s*#?|\bpull/|!)\s*{number}\b", text):
            raise ItemError(f"{where}: statement contains the PR number {number}")
    if re.search(r"(?i)\b(pull request|PR)\s*#?\d+", text):
        raise ItemError(f"{where}: statement names a pull request by number")
    return text


def _read_text(manifest_path: Path, relative: str, field: str) -> str:
    base = manifest_path.resolve().parent
    path = (base / relative).resolve()
    if base not in path.parents:
        raise ItemError(f"{manifest_path}: {field}: {relative!r} is outside the manifest's folder")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise ItemError(f"{manifest_path}: {field}: cannot read {relative}: {err.strerror}") from None
    if len(raw) > MAX_TEXT_BYTES:
        raise ItemError(f"{manifest_path}: {field}: {relative} over {MAX_TEXT_BYTES} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ItemError(f"{manifest_path}: {field}: {relative} is not UTF-8") from None


# ---------------------------------------------------------------------------------------------------
# The repository


def local_git_dir(repository: str, cache: Path, need: str | None = None) -> Path:
    """A local git dir for `repository`: a local path or file:// URL as is, a git:// URL on 127.0.0.1
    mirrored (bare) into `cache` — fetched again unless it already has the commit `need`. Anything else
    is refused (no network beyond this machine)."""
    if repository.startswith("file://"):
        path = Path(repository[len("file://") :])
    elif re.match(r"^git://(127\.0\.0\.1|localhost)(:\d+)?/", repository):
        dest = cache / hashlib.sha256(repository.encode()).hexdigest()[:16]
        cache.mkdir(parents=True, exist_ok=True)
        with open(cache / f"{dest.name}.lock", "w") as lock:  # one fetch at a time per mirror
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                if not dest.exists():
                    testrun.git(["clone", "-q", "--mirror", repository, str(dest)])
                elif need is None or not _has_commit(dest, need):
                    testrun.git(
                        ["--git-dir", str(dest), "fetch", "-q", "--prune", "origin", "+refs/*:refs/*"]
                    )
            except testrun.StateError as err:
                raise ItemError(f"repository {repository!r}: {err}") from None
        return dest
    elif "://" in repository or repository.startswith("git@"):
        raise ItemError(
            f"repository {repository!r}: only a local path, file:// or git://127.0.0.1 is accepted"
        )
    else:
        path = Path(repository)
    path = path.resolve()
    try:
        out = testrun.git(["-C", str(path), "rev-parse", "--absolute-git-dir"]).decode().strip()
    except testrun.StateError as err:
        raise ItemError(f"repository {repository!r}: not a git repository ({err})") from None
    return Path(out)


def _has_commit(git_dir: Path, commit: str) -> bool:
    try:
        testrun.git(["--git-dir", str(git_dir), "cat-file", "-e", f"{commit}^{{commit}}"])
        return True
    except testrun.StateError:
        return False


def _commit(git_dir: Path, ref: str, where: str) -> str:
    try:
        return (
            testrun.git(["--git-dir", str(git_dir), "rev-parse", "--verify", "-q", f"{ref}^{{commit}}"])
            .decode()
            .strip()
        )
    except testrun.StateError:
        raise ItemError(f"{where}: {ref!r} is not a commit of the repository") from None


def _pr_numbers(git_dir: Path, commits: list[str]) -> set[str]:
    text = b""
    for commit in commits:
        text += testrun.git(["--git-dir", str(git_dir), "show", "-s", "--format=%B", commit])
    return set(re.findall(r"(?:#|pull request #?|!)(\d{1,7})\b", text.decode(errors="replace")))


# ---------------------------------------------------------------------------------------------------
# Building


def f2p_p2p(states: dict[str, dict[str, str]]) -> tuple[list[str], list[str]]:
    """fail-to-pass: passes with test+gold, not with the test patch alone (failing or absent);
    pass-to-pass: passes in all three states."""
    base, tests, gold = states["base"], states["with_tests"], states["with_gold"]
    f2p = sorted(t for t, o in gold.items() if o == "passed" and tests.get(t) != "passed")
    p2p = sorted(
        t for t, o in gold.items() if o == "passed" and tests.get(t) == "passed" and base.get(t) == "passed"
    )
    return f2p, p2p


def split_topics(
    item_id: str, f2p: list[str], topics: list[TopicEntry], gold_files: list[str], where: str
) -> dict[str, list[str]]:
    """{topic name: its f2p}; ItemError when an f2p test is in no topic or in several, a topic has no
    test, or a topic's files are not files of the gold patch."""
    by_topic = {t.name: [x for x in f2p if t.match in x] for t in topics}
    problems = []
    for test in f2p:
        owners = [name for name, tests in by_topic.items() if test in tests]
        if len(owners) != 1:
            problems.append(f"{test} is in {len(owners)} topics ({', '.join(owners) or 'none'})")
    for topic in topics:
        if not by_topic[topic.name]:
            problems.append(f"topic {topic.name} (match {topic.match!r}) has no fail-to-pass test")
        stray = sorted(set(topic.files) - set(gold_files))
        if stray:
            problems.append(f"topic {topic.name}: files not in the gold patch: {', '.join(stray)}")
    if problems:
        raise ItemError(
            f"{where}: item {item_id}: topics do not split its fail-to-pass tests: "
            + "; ".join(problems[:20])
        )
    return by_topic


def build_items(
    manifest_path: Path,
    out_dir: Path,
    repository: str | None = None,
    *,
    image: str | None = None,
    refusals: list[str] | None = None,
) -> list[Item]:
    """Build and store every item of a manifest (see the module docstring); the items (originals and
    split items). ItemError on the first refusal, naming manifest/item/field — or, when a `refusals`
    list is given, each refused manifest entry's message is appended to it and the others are built."""
    manifest_path = Path(manifest_path)
    manifest = load_manifest(manifest_path)
    repo = repository or manifest.repository
    if "://" not in repo:  # a local path: the manifest's relative to its folder; stored absolute
        repo = str(
            (manifest_path.resolve().parent / repo).resolve() if not repository else Path(repo).resolve()
        )
    image = image or testrun.grader_image()
    try:
        digest = testrun.image_id(image)
    except testrun.StateError as err:
        raise ItemError(str(err)) from None
    out_dir = Path(out_dir)
    git_dir = local_git_dir(repo, out_dir / ".repos")
    built: list[Item] = []
    for entry in manifest.items:
        try:
            try:
                built += _build_one(manifest_path, manifest, entry, repo, git_dir, image, digest)
            except testrun.StateError as err:
                raise ItemError(f"{manifest_path}: items.{entry.id}: {err}") from None
        except ItemError as err:
            if refusals is None:
                raise
            refusals.append(str(err))
    for item in built:
        store_item(item, out_dir)
        publish_item(item, out_dir, git_dir)
    return built


def publish_item(item: Item, out_dir: Path, git_dir: Path) -> str | None:
    """On a cluster, put a stored item into the runs store with a bundle of its base from `git_dir`
    (``argusic.repair.item_store``): the bytes of its kept revision file, the first one built. Its
    entry's URI; None on a single machine."""
    if item_store.active() is None:
        return None
    kept = Path(out_dir) / item.project_id / "revisions" / item.item_id / f"{item.revision}.json"
    try:
        return item_store.put_item(
            item.project_id, item.item_id, item.revision, kept.read_bytes(), git_dir, item.base
        )
    except (item_store.ItemStoreError, RunsStoreError, testrun.StateError, OSError) as err:
        raise ItemError(f"{item.item_id}: not put into the runs store: {err}") from None


def load_stored_item(project_id: str, item_id: str, revision: str) -> Item:
    """An item revision from the runs store (a cluster's hosts share no items folder): the entered
    bytes (sha256 checked), parsed, its revision recomputed from its content and matched with the one
    asked for; ItemError naming the object otherwise."""
    try:
        raw = item_store.read_item_bytes(project_id, item_id, revision)
    except item_store.ItemStoreError as err:
        raise ItemError(str(err)) from None
    where = f"runs store item {project_id}/{item_id} revision {revision[:12]}…"
    try:
        item = Item.model_validate_json(raw)
    except ValidationError as err:
        raise _refusal(where, err) from None
    if (item.project_id, item.item_id, item.revision) != (project_id, item_id, revision):
        raise ItemError(f"{where}: holds {item.project_id}/{item.item_id} revision {item.revision[:12]}…")
    return item


def repository_of(item: Item, cache: Path | None = None) -> Path:
    """A local git dir holding the item's base: on a cluster, unpacked from the item's bundle in the
    runs store (the manifest's repository is on the host that built it); on one machine, the item's
    repository (``local_git_dir``). `cache`: where mirrors and bundles are unpacked (default
    ``<items folder>/.repos``)."""
    cache = Path(cache or items_dir() / ".repos")
    if item_store.active() is None:
        return local_git_dir(item.repository, cache, need=item.base)
    try:
        return item_store.base_git_dir(item.project_id, item.item_id, item.revision, item.base, cache)
    except item_store.ItemStoreError as err:
        raise ItemError(str(err)) from None


def _build_one(
    manifest_path, manifest: Manifest, entry: ItemEntry, repo: str, git_dir: Path, image: str, digest: str
) -> list[Item]:
    where = f"{manifest_path}: items.{entry.id}"
    if entry.merge is not None:
        head = _commit(git_dir, entry.merge, f"{where}.merge")
        parents = (
            testrun.git(["--git-dir", str(git_dir), "rev-list", "--parents", "-n", "1", head])
            .decode()
            .split()[1:]
        )
        if not parents:
            raise ItemError(f"{where}.merge: {head} has no parent")
        base = parents[0]
        source = {"kind": "merge" if len(parents) > 1 else "commit", "ref": head}
        commits = [head]
    else:
        a, b = entry.range.split("..", 1)
        base, head = _commit(git_dir, a, f"{where}.range"), _commit(git_dir, b, f"{where}.range")
        source = {"kind": "range", "ref": f"{base}..{head}"}
        commits = testrun.git(["--git-dir", str(git_dir), "rev-list", f"{base}..{head}"]).decode().split()[
            :200
        ] or [head]
    pr_numbers = _pr_numbers(git_dir, commits)
    statement = check_statement(
        _read_text(manifest_path, entry.statement, f"items.{entry.id}.statement"),
        f"{where}.statement",
        pr_numbers,
    )
    spec = _read_text(manifest_path, entry.spec, f"items.{entry.id}.spec") if entry.spec else None
    if spec is not None:
        check_statement(spec, f"{where}.spec", pr_numbers)

    names = testrun.git(
        [
            "--git-dir",
            str(git_dir),
            "diff",
            "--no-ext-diff",
            "--no-textconv",
            "--name-only",
            "-z",
            "--no-renames",
            base,
            head,
        ]
    ).decode(errors="surrogateescape")
    changed = [n for n in names.split("\0") if n]
    tests, others = test_paths.split_paths(changed, manifest.test_paths)
    if not tests:
        raise ItemError(f"{where}: the change touches no test file (nothing to grade with)")
    if not others:
        raise ItemError(f"{where}: the change touches only test files (no gold patch)")
    diff = [
        "--git-dir",
        str(git_dir),
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--binary",
        "--no-renames",
        "--full-index",
        base,
        head,
        "--",
    ]
    test_patch = testrun.git([*diff, *tests]).decode("utf-8", errors="surrogateescape")
    gold_patch = testrun.git([*diff, *others]).decode("utf-8", errors="surrogateescape")

    setup = list(manifest.setup_command) or None
    states: dict[str, dict[str, str]] = {}
    plan = {
        "base": [],
        "with_tests": [("test_patch", test_patch.encode(errors="surrogateescape"), ())],
        "with_gold": [
            ("test_patch", test_patch.encode(errors="surrogateescape"), ()),
            ("gold_patch", gold_patch.encode(errors="surrogateescape"), ()),
        ],
    }
    for state, patches in plan.items():
        tree = testrun.real_temp_dir(f"argusic-item-{state}-")
        try:
            try:
                testrun.materialise(git_dir, base, patches, tree / "repo")
            except testrun.StateError as err:
                raise ItemError(f"{where}: state {state}: {err.step}: {err}") from None
            run = testrun.run_state(tree / "repo", manifest.test_command, setup, image=image)
        finally:
            shutil.rmtree(tree, ignore_errors=True)
        if run.problem:
            raise ItemError(f"{where}: state {state}: {run.problem}: {run.detail}")
        states[state] = run.results
    f2p, p2p = f2p_p2p(states)
    excluded = [e.model_dump() for e in entry.exclude_tests]
    unknown = [e["test"] for e in excluded if e["test"] not in states["with_gold"]]
    if unknown:
        raise ItemError(f"{where}.exclude_tests: not among the item's tests: {', '.join(unknown[:5])}")
    set_aside = {e["test"] for e in excluded}
    f2p = [t for t in f2p if t not in set_aside]
    p2p = [t for t in p2p if t not in set_aside]
    if not f2p:
        raise ItemError(f"{where}: no fail-to-pass test (the tests pass without the fix, or fail with it)")
    common = {
        "project_id": manifest.project_id,
        "repository": repo,
        "base": base,
        "source": source,
        "test_patch": test_patch,
        "gold_patch": gold_patch,
        "test_files": tests,
        "test_command": list(manifest.test_command),
        "setup_command": setup,
        "pass_to_pass": p2p,
        "states": states,
        "built_at": datetime.now(UTC).replace(microsecond=0),
        "grader_image": {"reference": image, "digest": digest},
    } | ({"excluded_tests": excluded} if excluded else {})
    original = make_item({
        **common, "item_id": entry.id, "track": "spec" if spec else "basic", "problem_statement": statement,
        "interface_spec": spec, "fail_to_pass": f2p, "split": None, "superseded_by_split": bool(entry.topics),
    }, where)  # fmt: skip
    items = [original]
    if entry.topics:
        by_topic = split_topics(entry.id, f2p, entry.topics, others, where)
        for topic in entry.topics:
            tw = f"{where}.topics.{topic.name}"
            t_statement = check_statement(
                _read_text(manifest_path, topic.statement, f"{tw}.statement"), f"{tw}.statement", pr_numbers
            )
            t_spec = _read_text(manifest_path, topic.spec, f"{tw}.spec") if topic.spec else None
            files = sorted(topic.files)
            split = {"original": entry.id, "topic": topic.name, "match": topic.match, "files": files}
            items.append(make_item({
                **common, "item_id": f"{entry.id}-{topic.name}", "track": "spec" if t_spec else "basic",
                "problem_statement": t_statement, "interface_spec": t_spec,
                "fail_to_pass": by_topic[topic.name], "split": split, "superseded_by_split": False,
            }, tw))  # fmt: skip
    return items
