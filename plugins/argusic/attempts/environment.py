"""Same conditions for every attempt of a cycle (methodology sections 4, 5, 14 and 18; issue #15).

What an attempt runs under and the agent did not choose is its *environment*: the harness edition
and the hash of the harness files handed to the container (the scaffold), the standard instructions
(version and hash), the images by content digest (the image id: a tag is rebuilt in place, a digest
is not), the container limits and the budget. Every run record carries it (``RunRecord.environment``).

Planning a cycle **pins** it: ``runs/<cycle_id>/environment.json``, written once (first writer wins,
under a lock; later plans must agree). Every attempt is checked against its cycle's pin before it
starts: a changed harness, instructions file or limit refuses the attempt (``EnvironmentRefused``),
and the attempt runs in the pinned image *by digest*, so rebuilding a tag mid-cycle cannot change
what later attempts get. A pinned image is kept under a tag of its own (``<name>:pinned-<hex>``) so
that a rebuild leaves it in place for the rest of the cycle and for ``argusic reproduce``.

Harness changes are entries in the harness changelog (dbt seed ``harness_editions.csv``): each
edition names the scaffold hash it ships. Files that match no edition are refused before a cycle is
pinned: a harness change is deployed only with its changelog entry, between cycles.
"""

from __future__ import annotations

import csv
import fcntl
import hashlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from argusic import external
from argusic.core.record import Display, Environment, IdPart, ImageIdentity, InstructionsIdentity, Limits
from argusic.core.runs_store import create_once, pull, push
from argusic.core.settings import (
    PACKAGE_DIR,
    agents_image,
    dbt_project_dir,
    orchestrator_config,
    parse_size,
    runner_image,
    runs_dir,
)
from argusic.sandbox import executor as executors
from argusic.sandbox.containment import Containment
from argusic.sandbox.launch import read_display

PIN_FILE = "environment.json"
PIN_MAX_BYTES = 64 * 1024
# The harness files an attempt container is given (mounted read-only) or built from: the reference
# harness and recorder, the watchdog, the external drivers and the standard instructions.
SCAFFOLD_DIRS = ("harness", "external")
SCAFFOLD_SUFFIXES = (".py", ".md")
PINNED_TAG_PREFIX = "pinned-"

Role = Literal["runner", "agents"]


class EnvironmentError_(RuntimeError):  # noqa: N801 (the builtin EnvironmentError is OSError's alias)
    """Base of this module's refusals."""


class HarnessUnrecorded(EnvironmentError_):
    """The harness files match no edition of the harness changelog."""


class EnvironmentUnavailable(EnvironmentError_):
    """An input of the environment (an image, a file) cannot be had."""


class EnvironmentRefused(EnvironmentError_):
    """An attempt (or a plan) would run under another environment than its cycle's pin."""


# --- the harness changelog ----------------------------------------------------------------------------


@dataclass(frozen=True)
class HarnessEdition:
    edition: str
    written_on: date
    instructions_version: str
    scaffold_sha256: str
    summary: str


def changelog_path() -> Path:
    return dbt_project_dir() / "seeds" / "harness_editions.csv"


def harness_editions(path: Path | None = None) -> list[HarnessEdition]:
    """The harness changelog, oldest first."""
    with open(path or changelog_path(), newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    return [
        HarnessEdition(
            edition=row["edition"],
            written_on=date.fromisoformat(row["written_on"]),
            instructions_version=row["instructions_version"],
            scaffold_sha256=row["scaffold_sha256"],
            summary=row["summary"],
        )
        for row in rows
    ]


def scaffold_files(package_dir: Path = PACKAGE_DIR) -> list[Path]:
    files = []
    for name in SCAFFOLD_DIRS:
        files += [
            p
            for p in (package_dir / name).rglob("*")
            if p.is_file() and p.suffix in SCAFFOLD_SUFFIXES and "__pycache__" not in p.parts
        ]
    return sorted(files, key=lambda p: p.relative_to(package_dir).as_posix())


def scaffold_sha256(package_dir: Path = PACKAGE_DIR) -> str:
    """One hash of the harness files: each file's path (relative) and content, in path order."""
    digest = hashlib.sha256()
    for path in scaffold_files(package_dir):
        digest.update(path.relative_to(package_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def current_edition(path: Path | None = None) -> HarnessEdition:
    """The changelog edition these harness files are; HarnessUnrecorded when they are none."""
    scaffold = scaffold_sha256()
    for edition in reversed(harness_editions(path)):
        if edition.scaffold_sha256 == scaffold:
            return edition
    raise HarnessUnrecorded(
        f"the harness files (scaffold sha256 {scaffold}) match no edition of {path or changelog_path()}: "
        "a harness change is deployed only with a changelog entry (a new row: edition, written_on, "
        "instructions_version, scaffold_sha256, summary), between cycles"
    )


def instructions_identity(edition: HarnessEdition) -> InstructionsIdentity:
    return InstructionsIdentity(
        version=edition.instructions_version,
        sha256=hashlib.sha256(Path(external.INSTRUCTIONS_TEMPLATE).read_bytes()).hexdigest(),
    )


# --- images ------------------------------------------------------------------------------------------


def image_digest(reference: str) -> str:
    """The content digest (image id) of a local image; EnvironmentUnavailable when absent."""
    # deferred: the docker SDK is slow to import; only a docker attempt resolves images
    from docker.errors import DockerException, ImageNotFound

    client = executors.docker_client()  # DaemonUnreachable: our side failed, not the pin or the image
    try:
        return client.images.get(reference).id
    except ImageNotFound:
        raise EnvironmentUnavailable(f"image {reference} is not on this Docker engine") from None
    except DockerException as err:
        raise EnvironmentUnavailable(f"image {reference}: the Docker engine did not answer: {err}") from None


def pinned_tag(reference: str, digest: str) -> str:
    name = reference.rsplit(":", 1)[0] if ":" in reference.rsplit("/", 1)[-1] else reference
    return f"{name}:{PINNED_TAG_PREFIX}{digest.removeprefix('sha256:')[:16]}"


def keep_image(reference: str, digest: str) -> None:
    """Tag a pinned image so that rebuilding its tag does not leave it dangling (and pruned)."""
    import docker  # deferred: the docker SDK is slow to import; only a docker attempt keeps images

    tag = pinned_tag(reference, digest)
    repository, version = tag.rsplit(":", 1)
    docker.from_env().images.get(digest).tag(repository, version)


def role_reference(role: Role) -> str:
    return runner_image() if role == "runner" else agents_image()


# --- the pin -----------------------------------------------------------------------------------------


class ContainerLimits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cpus: float | None
    memory_bytes: int | None
    pids: int | None
    disk_bytes: int | None
    network: str
    # variable -> URL of the package indexes the attempts are pointed at ({}: the public ones)
    package_indexes: dict[str, str] = Field(default_factory=dict)


class AgentPin(BaseModel):
    """What a pin records of one agent (argusic.attempts.identity.agent_pin): with the pin's
    instructions and limits, the agent's whole configuration and so its neutral identity."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str | None
    model_version: str | None
    harness: str
    harness_version: str
    harness_args: list[str] = Field(default_factory=list)


class Pin(BaseModel):
    """A cycle's environment, fixed when it is planned (``runs/<cycle_id>/environment.json``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: Literal["argusic.environment_pin/1"] = Field("argusic.environment_pin/1", alias="schema")
    cycle_id: IdPart
    harness_edition: str
    scaffold_sha256: str
    instructions: InstructionsIdentity
    executor: Literal["docker", "local"]
    images: dict[Role, ImageIdentity] = Field(default_factory=dict)
    container: ContainerLimits | None  # None for the local executor (no container)
    budgets_seconds: dict[str, int]  # per tier, the real budgets
    budget_scale: float
    demo: bool
    display: str | None  # the virtual display's configured size (WxHxDEPTH), None without one
    # Each agent planned into the cycle (model version included): pinned on first use, like a role;
    # empty in pins written before agents were pinned.
    agents: dict[str, AgentPin] = Field(default_factory=dict)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, indent=2) + "\n"

    def budget_for(self, tier: str) -> int:
        """The budget an attempt of this tier is allowed (scaled in demo cycles)."""
        budget = self.budgets_seconds[tier]
        return max(1, round(budget * self.budget_scale)) if self.demo else budget


def _limits(containment, network: str) -> ContainerLimits:
    return ContainerLimits(
        cpus=containment.cpus,
        memory_bytes=parse_size(containment.memory),
        pids=containment.pids_limit,
        disk_bytes=containment.out_bytes + containment.work_bytes,
        network=network,
        package_indexes=dict(containment.package_indexes) if network != "none" else {},
    )


def executor_profile(executor, demo: bool = True) -> tuple[str, ContainerLimits | None]:
    """(executor name, container limits) of an executor, or of an executor's name (None: the one
    ARGUSIC_EXECUTOR names, default docker; never inferred from a daemon's answer) without starting
    it: planning pins what the attempts will get."""
    if executor is None or isinstance(executor, str):
        name = executors.executor_name(executor)
        if name != "docker":
            return "local", None
        containment = Containment.from_config(demo=demo)
        return "docker", _limits(containment, containment.network)
    containment = getattr(executor, "containment", None)
    if getattr(executor, "name", None) != "docker" or containment is None:
        return "local", None
    return "docker", _limits(containment, getattr(executor, "network", containment.network))


def current_pin(cycle_id: str, executor, roles: Iterable[Role], demo: bool, budget_scale: float) -> Pin:
    """The environment this host would give the cycle now (images resolved to their digests)."""
    edition = current_edition()
    config = orchestrator_config()
    executor_name, limits = executor_profile(executor, demo)
    try:  # a cycle that is not a demo is never pinned to (nor checked against) the local executor
        executors.check_executor_allowed(executor_name, demo)
    except executors.ExecutorRefused as err:
        raise EnvironmentRefused(f"cycle {cycle_id}: {err}") from None
    docker_run = executor_name == "docker"
    images = {}
    if docker_run:
        for role in sorted(set(roles)):
            reference = role_reference(role)
            try:
                digest = image_digest(reference)
            except executors.DaemonUnreachable as err:  # no pin without the daemon: planning stops
                raise EnvironmentUnavailable(f"cycle {cycle_id} cannot be pinned: {err}") from None
            images[role] = ImageIdentity(role=role, reference=reference, digest=digest)
    return Pin(
        cycle_id=cycle_id,
        harness_edition=edition.edition,
        scaffold_sha256=edition.scaffold_sha256,
        instructions=instructions_identity(edition),
        executor=executor_name,
        images=images,
        container=limits,
        budgets_seconds={tier: config.budget_seconds(tier) for tier in sorted(config.budgets_minutes)},
        budget_scale=budget_scale,
        demo=demo,
        display=getattr(config, "display_size", None) if docker_run else None,
    )


def pin_path(cycle_id: str, base: Path | None = None) -> Path:
    return (base or runs_dir()) / cycle_id / PIN_FILE


def read_pin(cycle_id: str, base: Path | None = None) -> Pin | None:
    path = pin_path(cycle_id, base)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(PIN_MAX_BYTES + 1)
    if len(data) > PIN_MAX_BYTES:
        raise EnvironmentRefused(f"{path}: over {PIN_MAX_BYTES} bytes: not a pin this pipeline wrote")
    try:
        return Pin.model_validate_json(data)
    except ValidationError as err:
        raise EnvironmentRefused(f"{path}: not a valid environment pin: {err.errors()[0]['msg']}") from None


def differences(pinned: Pin, now: Pin) -> list[str]:
    """What differs between a cycle's pin and the environment now, one phrase each. Images are not
    compared: attempts run in the pinned image by digest, whatever its tag names now."""
    found = []
    for name in ("harness_edition", "scaffold_sha256", "instructions", "executor", "container",
                 "budgets_seconds", "budget_scale", "demo", "display"):  # fmt: skip
        a, b = getattr(pinned, name), getattr(now, name)
        if a != b:
            a, b = (v.model_dump() if isinstance(v, BaseModel) else v for v in (a, b))
            found.append(f"{name}: pinned {a}, now {b}")
    return found


def agent_differences(pinned: Pin, agents: dict[str, AgentPin]) -> list[str]:
    """What differs between the agents a pin records and the same agents' configurations now."""
    found = []
    for agent_id, now in sorted(agents.items()):
        was = pinned.agents.get(agent_id)
        if was is not None and was != now:
            found.append(f"agent {agent_id}: pinned {was.model_dump()}, now {now.model_dump()}")
    return found


def _locked(cycle_id: str, base: Path | None):
    folder = (base or runs_dir()) / cycle_id
    folder.mkdir(parents=True, exist_ok=True)
    handle = open(folder / ".environment.lock", "a")  # noqa: SIM115 (closed by the caller)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _write(path: Path, pin: Pin) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(pin.to_json())
    os.replace(tmp, path)


def ensure_pin(
    cycle_id: str,
    executor,
    roles: Iterable[Role],
    demo: bool,
    budget_scale: float,
    base: Path | None = None,
    agents: dict[str, AgentPin] | None = None,
) -> Pin:
    """The cycle's pin: written now when the cycle has none; else checked against the environment
    now (EnvironmentRefused naming every difference). A role the pin lacks (an agent of another
    harness joining the cycle) is pinned on first use, and so is an agent (``agents``: each agent's
    configuration now, argusic.attempts.identity.agent_pins); an agent the pin records with another
    configuration (a new model version, harness version or arguments) is refused. Idempotent."""
    roles = sorted(set(roles))
    agents = dict(agents or {})
    with _locked(cycle_id, base):
        if base is None:  # on a cluster the pin lives in the runs store: another host may have made it
            pull_pin(cycle_id)
        pinned = read_pin(cycle_id, base)
        if pinned is None:
            now = current_pin(cycle_id, executor, roles, demo, budget_scale)
            now = now.model_copy(update={"agents": dict(sorted(agents.items()))})
            for image in now.images.values():
                keep_image(image.reference, image.digest)
            _write(pin_path(cycle_id, base), now)
            if base is not None or _offer_pin(cycle_id):
                return now
            pinned = read_pin(cycle_id, base)  # another host pinned first: its pin is the cycle's
            assert pinned is not None
        missing = [r for r in roles if r not in pinned.images and pinned.executor == "docker"]
        now = current_pin(cycle_id, executor, missing, demo, budget_scale)
        found = differences(pinned, now) + agent_differences(pinned, agents)
        if found:
            raise EnvironmentRefused(
                f"cycle {cycle_id} is pinned to another environment ({pin_path(cycle_id, base)}): "
                + "; ".join(found)
                + ". A cycle runs under one harness: finish it as pinned, or plan a new cycle id"
            )
        new_agents = {a: c for a, c in agents.items() if a not in pinned.agents}
        if missing or new_agents:
            for role in missing:
                keep_image(now.images[role].reference, now.images[role].digest)
            added = {role: now.images[role] for role in missing}
            update = {
                "images": {**pinned.images, **added},
                "agents": dict(sorted({**pinned.agents, **new_agents}.items())),
            }
            pinned = pinned.model_copy(update=update)
            _write(pin_path(cycle_id, base), pinned)
            if base is None:  # a role or agent joins (rare, at planning): the last writer's wins
                push(pin_path(cycle_id))
        return pinned


def pull_pin(cycle_id: str) -> None:
    """Bring the cycle's pin from the runs store into this host's runs folder (a no-op on one machine)."""
    pull(f"{cycle_id}/{PIN_FILE}")


def _offer_pin(cycle_id: str) -> bool:
    """Offer this host's new pin to the runs store, first writer wins (S3's conditional put). False
    when another host pinned the cycle first: its pin has replaced ours in this host's runs folder."""
    return create_once(pin_path(cycle_id))


def check_pinned_image(pin: Pin, role: Role) -> str:
    """The digest an attempt of this role runs in; EnvironmentRefused when the pinned image is gone,
    executors.DaemonUnreachable when the daemon does not answer (the attempt fails as ours)."""
    image = pin.images[role]
    try:
        found = image_digest(image.digest)
    except EnvironmentUnavailable as err:
        raise EnvironmentRefused(
            f"cycle {pin.cycle_id}: its pinned {role} image {image.reference} ({image.digest}) is no "
            f"longer available ({err}); the cycle cannot go on under the same conditions"
        ) from None
    if found != image.digest:  # pragma: no cover (an id names one image)
        raise EnvironmentRefused(f"{image.digest} resolves to {found}")
    return image.digest


def attempt_environment(pin: Pin, role: Role, tier: str, display: Display | None) -> Environment:
    """What the record says the attempt ran under: the pin, narrowed to the attempt."""
    limits = pin.container or ContainerLimits(
        cpus=None, memory_bytes=None, pids=None, disk_bytes=None, network="host"
    )
    return Environment(
        harness_edition=pin.harness_edition,
        scaffold_sha256=pin.scaffold_sha256,
        images=[pin.images[role]] if role in pin.images else [],
        instructions=pin.instructions,
        limits=Limits(
            cpus=limits.cpus,
            memory_bytes=limits.memory_bytes,
            pids=limits.pids,
            disk_bytes=limits.disk_bytes,
            network=limits.network,
            package_indexes=limits.package_indexes,
            budget_seconds=pin.budget_for(tier),
        ),
        display=display,
    )


def attempt_display(pin: Pin, out_dir: Path) -> Display | None:
    """The display an attempt had: the harness's ``display.json`` when the cycle's environment starts
    one (a pin with a display size: the Docker executor) and the file names that very size. A file
    left by an attempt that was given no display (the local executor), or naming another size, is not
    believed. (The agent could still write the file when Xvfb did not answer: like the rest of /out,
    it is written by the agent's own user; see README "Threat model".)"""
    if not pin.display:
        return None
    display = read_display(out_dir)
    if display is None or f"{display.width}x{display.height}x{display.depth}" != pin.display:
        return None
    return display
