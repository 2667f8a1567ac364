"""Task definitions: one TOML file per task kind, refined per project, the one source of truth from
which the run instructions, the automated scenario and the review form are generated.

Files (``plugins/argusic/judging/tasks/``):

- ``<task_id>.toml`` for each kind (``install_and_run``: purposes board and verdict; ``repair``):
  ``version`` (a person bumps it), ``description``, ``prompt`` (the run instructions template,
  verbatim), ``needles`` (``id``, ``text`` or ``regex``, ``where`` in log | report | artifacts),
  ``tool_order`` (step names from ``STEPS``), ``artifacts`` (globs relative to the project folder) and
  ``[review]`` (``shows``: which computed facts the form shows; ``fields``: only what a person adds —
  look 0..2, decision promote|reject, note) and ``[judging]`` (Layer 2, model judges: ``criteria``,
  each ``id`` + ``question`` on the fixed scale 0..2, and the judge's ``prompt`` whose
  ``{{CRITERIA}}`` is filled from them; rendered to ``generated/<task_id>.judge.md``).
- ``projects/<project_id>.toml``: a refinement of one kind (``task = "..."``) for one project. Its
  ``needles`` and ``artifacts`` are added to the kind's (or replace them when named in ``replace``);
  its ``tool_order``, when given, replaces the kind's. A refinement never has a prompt: the prompt is
  the kind's, so every project gets the same instructions.

Everything is checked at load (pydantic, strict, unknown keys refused): every regex compiles, every
step name is in the vocabulary, counts and lengths are capped, and an error (``TaskDefinitionError``)
names the file and the field. ``revision`` is the sha256 of the canonical JSON of the merged
definition: it moves with any change, while ``version`` moves only when a person says the task changed.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import stat
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from argusic.core.record import CONDITION_PATTERN

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # plugins/argusic
TASKS_DIR = PACKAGE_DIR / "judging" / "tasks"  # the task data stays beside the judges that read it
PROJECTS_DIR = TASKS_DIR / "projects"
GENERATED_DIR = "judging/generated"  # relative to the package, like the prompt files below

TASK_IDS = ("install_and_run", "repair")
# Where each kind's prompt is emitted, relative to the package (what the drivers read today).
PROMPT_FILES = {"install_and_run": "external/instructions.md", "repair": "repair/prompt.md"}
PURPOSE_TASK = {"board": "install_and_run", "verdict": "install_and_run", "repair": "repair"}

# The tool-order vocabulary (docs in argusic.judging.tool_order).
STEPS = ("read", "search", "edit", "exec", "install", "test", "report")
WHERE = ("log", "report", "artifacts")
REVIEW_SHOWS = (
    "outcome", "needles", "rendering", "agent_logic", "screenshots", "duration_seconds",
    "input_tokens", "output_tokens", "cost_usd", "log", "recording", "patch", "grade",
)  # fmt: skip

MAX_FILE_BYTES = 256 * 1024
MAX_PROMPT_CHARS = 64 * 1024
MAX_NEEDLES = 64  # per file; a merged task holds at most 2 x this
MAX_NEEDLE_CHARS = 500
MAX_STEPS = 32
MAX_ARTIFACT_GLOBS = 32
MAX_GLOB_CHARS = 200
MAX_CRITERIA = 8
MAX_QUESTION_CHARS = 1000
CRITERIA_PLACEHOLDER = "{{CRITERIA}}"
# Judges never score what is measured elsewhere or what only a person can say (seed 004): agent
# logic (a dead file cannot show how the agent worked), look, needles, rendering.
FORBIDDEN_CRITERIA = ("agent_logic", "look", "needles", "rendering")

Id = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]{0,63}$")]
ProjectId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")]
Version = Annotated[str, StringConstraints(pattern=r"^[0-9]{1,6}$")]
Step = Literal["read", "search", "edit", "exec", "install", "test", "report"]
Where = Literal["log", "report", "artifacts"]


class TaskDefinitionError(ValueError):
    """A task file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Needle:
    id: str
    text: str | None
    regex: str | None
    where: tuple[str, ...]

    def found_in(self, text: str) -> bool:
        """Plain text: a substring; regex: ``re.search`` (compiled once, cached)."""
        if self.text is not None:
            return self.text in text
        return _compiled(self.regex or "").search(text) is not None

    def as_dict(self) -> dict:
        return {"id": self.id, "text": self.text, "regex": self.regex, "where": list(self.where)}


@dataclass(frozen=True)
class Check:
    """A deterministic check of seed 002 (Layer 1: shown beside the attempt, never a score).

    ``output_exact_match``: the final output equals ``expected_file`` (under ``tasks/expected/``), one
    newline at each end ignored and nothing else. ``tool_calls``: exactly ``count`` tool calls of
    ``category``, each on ``path`` when one is given. ``not_applicable``: the conditions the check
    does not apply to (e.g. a baseline that has no tools)."""

    id: str
    type: str
    expected_file: str | None = None
    category: str | None = None
    count: int | None = None
    path: str | None = None
    not_applicable: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {
            "id": self.id, "type": self.type, "expected_file": self.expected_file, "category": self.category,
            "count": self.count, "path": self.path, "not_applicable": list(self.not_applicable),
        }  # fmt: skip


@dataclass(frozen=True)
class Task:
    task_id: str  # "install_and_run" | "repair"
    project_id: str | None  # set when a project refinement was merged in
    version: str
    revision: str  # sha256 hex of the canonical JSON of the merged definition
    description: str
    prompt: str
    needles: tuple[Needle, ...]
    tool_order: tuple[str, ...]
    artifacts: tuple[str, ...]
    review: dict
    judging: dict  # {"criteria": [{"id", "question"}], "prompt": str} (Layer 2, model judges)
    checks: tuple[Check, ...] = ()  # seed 002's deterministic checks (Layer 1)

    def definition(self) -> dict:
        """The merged definition, as hashed into ``revision``."""
        return _definition(
            self.task_id, self.project_id, self.version, self.description, self.prompt,
            self.needles, self.tool_order, self.artifacts, self.review, self.judging, self.checks,
        )  # fmt: skip

    @property
    def criteria(self) -> tuple[str, ...]:
        """The judged criteria's ids, in the task's order."""
        return tuple(c["id"] for c in self.judging["criteria"])

    def judge_prompt(self) -> str:
        """The judge's instructions with ``{{CRITERIA}}`` filled: one line per criterion."""
        lines = "\n".join(f"- `{c['id']}` (0, 1 or 2): {c['question']}" for c in self.judging["criteria"])
        return self.judging["prompt"].replace(CRITERIA_PLACEHOLDER, lines)


@functools.lru_cache(maxsize=512)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


# --- the files' shapes -------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class _NeedleModel(_Strict):
    id: Id
    text: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NEEDLE_CHARS)] | None = None
    regex: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NEEDLE_CHARS)] | None = None
    where: list[Where] = Field(min_length=1, max_length=len(WHERE))

    @model_validator(mode="after")
    def _one_marker(self) -> _NeedleModel:
        if (self.text is None) == (self.regex is None):
            raise ValueError(f"needle {self.id!r}: give exactly one of text or regex")
        if len(set(self.where)) != len(self.where):
            raise ValueError(f"needle {self.id!r}: where repeats a source")
        if self.regex is not None:
            try:
                _compiled(self.regex)
            except re.error as err:
                raise ValueError(f"needle {self.id!r}: regex does not compile: {err}") from None
        return self


def _check_glob(glob: str) -> str:
    if not glob or len(glob) > MAX_GLOB_CHARS:
        raise ValueError(f"artifact glob {glob[:40]!r}: 1 to {MAX_GLOB_CHARS} characters")
    if glob.startswith("/") or "\\" in glob or "\x00" in glob:
        raise ValueError(f"artifact glob {glob!r}: must be relative to the project folder, with /")
    if any(part in ("", ".", "..") for part in glob.split("/")):
        raise ValueError(f"artifact glob {glob!r}: no empty, '.' or '..' parts")
    return glob


class _ReviewField(_Strict):
    name: Literal["look", "decision", "note"]
    kind: Literal["integer", "choice", "text"]
    help: Annotated[str, StringConstraints(max_length=300)] = ""
    minimum: int | None = None
    maximum: int | None = None
    choices: list[str] | None = None
    max_length: int | None = Field(default=None, gt=0, le=10000)

    @model_validator(mode="after")
    def _fixed_shape(self) -> _ReviewField:
        # Only what a person adds, with its fixed meaning (seed 004): nothing computable is typed.
        wanted: dict[str, dict[str, Any]] = {
            "look": {"kind": "integer", "minimum": 0, "maximum": 2, "choices": None, "max_length": None},
            "decision": {"kind": "choice", "choices": ["promote", "reject"], "minimum": None,
                         "maximum": None, "max_length": None},
            "note": {"kind": "text", "minimum": None, "maximum": None, "choices": None},
        }  # fmt: skip
        for key, value in wanted[self.name].items():
            if getattr(self, key) != value:
                raise ValueError(f"review field {self.name!r}: {key} must be {value!r}")
        return self


class _Review(_Strict):
    shows: list[Literal[REVIEW_SHOWS]] = Field(max_length=len(REVIEW_SHOWS))  # type: ignore[valid-type]
    fields: list[_ReviewField] = Field(min_length=2, max_length=3)

    @model_validator(mode="after")
    def _fields_once(self) -> _Review:
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError("review fields: a name is repeated")
        if not {"look", "decision"} <= set(names):
            raise ValueError("review fields: look and decision are required")
        if len(set(self.shows)) != len(self.shows):
            raise ValueError("review shows: a fact is repeated")
        return self


class _Criterion(_Strict):
    id: Id
    question: Annotated[str, StringConstraints(min_length=1, max_length=MAX_QUESTION_CHARS)]

    @model_validator(mode="after")
    def _judgeable(self) -> _Criterion:
        if self.id in FORBIDDEN_CRITERIA:
            raise ValueError(f"criterion {self.id!r}: judges never score {', '.join(FORBIDDEN_CRITERIA)}")
        return self


class _Judging(_Strict):
    criteria: list[_Criterion] = Field(min_length=1, max_length=MAX_CRITERIA)
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROMPT_CHARS)]

    @model_validator(mode="after")
    def _checks(self) -> _Judging:
        ids = [c.id for c in self.criteria]
        if len(set(ids)) != len(ids):
            raise ValueError("criteria: an id is repeated")
        if self.prompt.count(CRITERIA_PLACEHOLDER) != 1:
            raise ValueError(f"prompt: must hold {CRITERIA_PLACEHOLDER} exactly once")
        return self


class _CheckModel(_Strict):
    id: Id
    type: Literal["output_exact_match", "tool_calls"]
    expected_file: Annotated[str, StringConstraints(min_length=1, max_length=MAX_GLOB_CHARS)] | None = None
    category: Literal["read", "search", "edit", "exec", "other"] | None = None
    count: int | None = Field(default=None, ge=0, le=10_000)
    path: Annotated[str, StringConstraints(min_length=1, max_length=MAX_GLOB_CHARS)] | None = None
    not_applicable: list[Annotated[str, StringConstraints(pattern=CONDITION_PATTERN)]] = Field(
        default_factory=list, max_length=16
    )

    @model_validator(mode="after")
    def _shape(self) -> _CheckModel:
        exact = self.type == "output_exact_match"
        given = {"expected_file": self.expected_file, "category": self.category, "count": self.count,
                 "path": self.path}  # fmt: skip
        needed = ("expected_file",) if exact else ("category", "count")
        allowed = set(needed) | (set() if exact else {"path"})
        for name, value in given.items():
            if name in needed and value is None:
                raise ValueError(f"check {self.id!r}: a {self.type} check needs {name}")
            if name not in allowed and value is not None:
                raise ValueError(f"check {self.id!r}: a {self.type} check takes no {name}")
        if self.expected_file is not None:
            _check_glob(self.expected_file)
            if any(c in self.expected_file for c in "*?["):
                raise ValueError(f"check {self.id!r}: expected_file names one file, not a pattern")
        return self


def _unique_checks(checks: list[_CheckModel], where: str = "checks") -> None:
    ids = [c.id for c in checks]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"{where}: ids repeated: {', '.join(repeated)}")


def _check(model: _CheckModel) -> Check:
    return Check(
        model.id, model.type, model.expected_file, model.category, model.count, model.path,
        tuple(model.not_applicable),
    )  # fmt: skip


def _unique_needles(needles: list[_NeedleModel]) -> None:
    ids = [n.id for n in needles]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"needle ids repeated: {', '.join(repeated)}")


class _KindFile(_Strict):
    version: Version
    description: Annotated[str, StringConstraints(min_length=1, max_length=2000)]
    prompt: Annotated[str, StringConstraints(min_length=1, max_length=MAX_PROMPT_CHARS)]
    needles: list[_NeedleModel] = Field(default_factory=list, max_length=MAX_NEEDLES)
    tool_order: list[Step] = Field(default_factory=list, max_length=MAX_STEPS)
    artifacts: list[str] = Field(default_factory=list, max_length=MAX_ARTIFACT_GLOBS)
    review: _Review
    judging: _Judging
    checks: list[_CheckModel] = Field(default_factory=list, max_length=MAX_NEEDLES)

    @model_validator(mode="after")
    def _checks(self) -> _KindFile:
        _unique_needles(self.needles)
        _unique_checks(self.checks)
        for glob in self.artifacts:
            _check_glob(glob)
        return self


class _ProjectFile(_Strict):
    version: Version
    task: Literal[TASK_IDS]  # type: ignore[valid-type]
    description: Annotated[str, StringConstraints(max_length=2000)] = ""
    needles: list[_NeedleModel] = Field(default_factory=list, max_length=MAX_NEEDLES)
    tool_order: list[Step] | None = Field(default=None, max_length=MAX_STEPS)
    artifacts: list[str] = Field(default_factory=list, max_length=MAX_ARTIFACT_GLOBS)
    replace: list[Literal["needles", "artifacts"]] = Field(default_factory=list, max_length=2)
    checks: list[_CheckModel] = Field(default_factory=list, max_length=MAX_NEEDLES)

    @model_validator(mode="after")
    def _checks(self) -> _ProjectFile:
        _unique_needles(self.needles)
        _unique_checks(self.checks)
        for glob in self.artifacts:
            _check_glob(glob)
        return self


# --- loading -----------------------------------------------------------------------------------


def _read_toml(path: Path) -> dict:
    """A task file, read without following links, size-capped, strict UTF-8, parsed as TOML."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TaskDefinitionError(f"{path}: no such task file") from None
    except OSError as err:
        raise TaskDefinitionError(
            f"{path}: cannot be read ({err.strerror}; links are not followed)"
        ) from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise TaskDefinitionError(f"{path}: not a regular file")
        data = handle.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise TaskDefinitionError(f"{path}: over {MAX_FILE_BYTES} bytes")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise TaskDefinitionError(f"{path}: not UTF-8 (byte {err.start})") from None
    except tomllib.TOMLDecodeError as err:
        raise TaskDefinitionError(f"{path}: not TOML: {err}") from None


def _validate(model: type[BaseModel], doc: dict, path: Path) -> Any:
    try:
        return model.model_validate(doc)
    except ValidationError as err:
        parts = []
        for e in err.errors():
            where = ".".join(str(p) for p in e["loc"]) or "(file)"
            parts.append(f"{where}: {e['msg'].removeprefix('Value error, ')}")
        raise TaskDefinitionError(f"{path}: " + "; ".join(parts)) from None


def _needle(model: _NeedleModel) -> Needle:
    return Needle(model.id, model.text, model.regex, tuple(model.where))


def _definition(
    task_id,
    project_id,
    version,
    description,
    prompt,
    needles,
    tool_order,
    artifacts,
    review,
    judging,
    checks=(),
) -> dict:
    # Checks join the hashed definition only when there are some: a task without checks keeps the
    # revision it had before checks existed.
    extra = {"checks": [c.as_dict() for c in checks]} if checks else {}
    return extra | {
        "task_id": task_id,
        "project_id": project_id,
        "version": version,
        "description": description,
        "prompt": prompt,
        "needles": [n.as_dict() for n in needles],
        "tool_order": list(tool_order),
        "artifacts": list(artifacts),
        "review": review,
        "judging": judging,
    }


def canonical_json(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _task_path(task_id: str) -> Path:
    if task_id not in TASK_IDS:
        raise TaskDefinitionError(f"task {task_id!r}: unknown (known: {', '.join(TASK_IDS)})")
    return TASKS_DIR / f"{task_id}.toml"


def _project_path(project_id: str) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]{0,99}", project_id):
        raise TaskDefinitionError(f"project {project_id!r}: not a project id")
    return PROJECTS_DIR / f"{project_id}.toml"


def load_task(task_id: str, project_id: str | None = None, *, tasks_dir: Path | None = None) -> Task:
    """The kind's definition, with the project's refinement merged in when one exists for this kind.

    ``tasks_dir`` (tests): read the files from there instead of the package's ``tasks/``."""
    path = _task_path(task_id)
    if tasks_dir is not None:
        path = tasks_dir / path.name
    kind: _KindFile = _validate(_KindFile, _read_toml(path), path)
    version, description = kind.version, kind.description.strip()
    needles = [_needle(n) for n in kind.needles]
    tool_order, artifacts = list(kind.tool_order), list(kind.artifacts)
    checks = [_check(c) for c in kind.checks]
    merged_project = None
    if project_id is not None:
        ppath = _project_path(project_id)
        if tasks_dir is not None:
            ppath = tasks_dir / "projects" / ppath.name
        if ppath.exists() or ppath.is_symlink():
            refinement: _ProjectFile = _validate(_ProjectFile, _read_toml(ppath), ppath)
            if refinement.task == task_id:
                merged_project = project_id
                version = f"{kind.version}/{refinement.version}"
                if refinement.description.strip():
                    description = f"{description}\n\n{refinement.description.strip()}"
                extra = [_needle(n) for n in refinement.needles]
                needles = extra if "needles" in refinement.replace else needles + extra
                ids = [n.id for n in needles]
                repeated = sorted({i for i in ids if ids.count(i) > 1})
                if repeated:
                    raise TaskDefinitionError(
                        f"{ppath}: needles: ids repeat the kind's: {', '.join(repeated)}"
                    )
                if refinement.tool_order is not None:
                    tool_order = list(refinement.tool_order)
                if "artifacts" in refinement.replace:
                    artifacts = list(refinement.artifacts)
                else:
                    artifacts += [g for g in refinement.artifacts if g not in artifacts]
                checks += [_check(c) for c in refinement.checks]
                repeated = sorted({c.id for c in checks if [d.id for d in checks].count(c.id) > 1})
                if repeated:
                    raise TaskDefinitionError(
                        f"{ppath}: checks: ids repeat the kind's: {', '.join(repeated)}"
                    )
                if len(artifacts) > MAX_ARTIFACT_GLOBS:
                    raise TaskDefinitionError(
                        f"{ppath}: artifacts: over {MAX_ARTIFACT_GLOBS} globs once merged"
                    )
    review = kind.review.model_dump(mode="json", exclude_none=True)
    judging = kind.judging.model_dump(mode="json")
    definition = _definition(
        task_id, merged_project, version, description, kind.prompt, needles, tool_order, artifacts, review,
        judging, checks,
    )  # fmt: skip
    return Task(
        task_id=task_id,
        project_id=merged_project,
        version=version,
        revision=hashlib.sha256(canonical_json(definition)).hexdigest(),
        description=description,
        prompt=kind.prompt,
        needles=tuple(needles),
        tool_order=tuple(tool_order),
        artifacts=tuple(artifacts),
        review=review,
        judging=judging,
        checks=tuple(checks),
    )


def expected_output(check: Check, *, tasks_dir: Path | None = None, limit: int = MAX_FILE_BYTES) -> bytes:
    """The expected file of an ``output_exact_match`` check (under ``tasks/expected/``), read without
    following links, capped; TaskDefinitionError names what is wrong."""
    base = (tasks_dir or TASKS_DIR) / "expected"
    path = base / (check.expected_file or "")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as err:
        raise TaskDefinitionError(f"check {check.id!r}: expected file {path}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TaskDefinitionError(f"check {check.id!r}: expected file {path}: not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise TaskDefinitionError(f"check {check.id!r}: expected file {path}: over {limit} bytes")
    return data


def task_for(purpose: str, project_id: str) -> Task:
    """The task an attempt of this purpose on this project runs (board|verdict: install_and_run)."""
    try:
        task_id = PURPOSE_TASK[purpose]
    except KeyError:
        raise TaskDefinitionError(
            f"purpose {purpose!r}: no task (known: {', '.join(PURPOSE_TASK)})"
        ) from None
    return load_task(task_id, project_id)


def refined_projects(task_id: str, *, tasks_dir: Path | None = None) -> list[str]:
    """Project ids with a refinement of this kind, sorted."""
    folder = (tasks_dir or TASKS_DIR) / "projects"
    found = []
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        doc = _validate(_ProjectFile, _read_toml(path), path)
        if doc.task == task_id:
            found.append(path.stem)
    return found


# --- generation --------------------------------------------------------------------------------


def _scenario(task: Task) -> dict:
    return {
        "needles": [n.as_dict() for n in task.needles],
        "tool_order": list(task.tool_order),
        "artifacts": list(task.artifacts),
    }


def generated_files() -> dict[str, bytes]:
    """Every generated file (path relative to the package -> bytes), from the task files."""
    out: dict[str, bytes] = {}
    for task_id in TASK_IDS:
        task = load_task(task_id)
        out[PROMPT_FILES[task_id]] = task.prompt.encode("utf-8")
        projects = {pid: load_task(task_id, pid) for pid in refined_projects(task_id)}
        scenario = {
            "schema": "argusic.task_scenario/1",
            "generated_from": f"plugins/argusic/judging/tasks/{task_id}.toml (argusic tasks generate)",
            "task_id": task_id,
            "version": task.version,
            "revision": task.revision,
            "description": task.description,
            "prompt_file": f"plugins/argusic/{PROMPT_FILES[task_id]}",
            "prompt_sha256": hashlib.sha256(task.prompt.encode("utf-8")).hexdigest(),
            **_scenario(task),
            "projects": {
                pid: {"version": t.version, "revision": t.revision, **_scenario(t)}
                for pid, t in projects.items()
            },
        }
        review = {
            "schema": "argusic.task_review/1",
            "generated_from": f"plugins/argusic/judging/tasks/{task_id}.toml (argusic tasks generate)",
            "task_id": task_id,
            "version": task.version,
            "revision": task.revision,
            "description": task.description,
            "fields": task.review["fields"],
            "shows": task.review["shows"],
            "projects": {pid: {"version": t.version, "revision": t.revision} for pid, t in projects.items()},
        }
        for suffix, doc in (("scenario", scenario), ("review", review)):
            text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
            out[f"{GENERATED_DIR}/{task_id}.{suffix}.json"] = text.encode("utf-8")
        out[f"{GENERATED_DIR}/{task_id}.judge.md"] = task.judge_prompt().encode("utf-8")
    return out


def generate(out_dir: Path) -> list[Path]:
    """Write every generated file under ``out_dir`` (the package folder, plugins/argusic, or a copy
    of its layout), atomically; the paths written."""
    written = []
    for relative, data in generated_files().items():
        path = Path(out_dir) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        written.append(path)
    return written


def drifted(package_dir: Path = PACKAGE_DIR) -> list[str]:
    """Generated files whose committed copy differs from what the task files give (or is missing),
    and files in the generated folder that no task gives; relative to the package."""
    expected = generated_files()
    bad = []
    for relative, data in expected.items():
        path = package_dir / relative
        try:
            same = not path.is_symlink() and path.read_bytes() == data
        except OSError:
            same = False
        if not same:
            bad.append(relative)
    folder = package_dir / GENERATED_DIR
    if folder.is_dir():
        for path in sorted(folder.iterdir()):
            relative = f"{GENERATED_DIR}/{path.name}"
            if relative not in expected:
                bad.append(relative)
    return bad
