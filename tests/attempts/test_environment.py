"""Same conditions for every attempt of a cycle (issue #15): the environment every record carries, the
cycle's pin, refusals before an attempt starts, and the pinned image run by digest when its tag is
rebuilt mid-cycle."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from argusic.attempts import environment as env_mod
from argusic.attempts.environment import (
    EnvironmentRefused,
    HarnessUnrecorded,
    current_edition,
    ensure_pin,
    harness_editions,
    read_pin,
    scaffold_sha256,
)
from argusic.attempts.run import run_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.record import load_record_file, parse_record
from argusic.core.spec import AttemptSpec
from argusic.sandbox.executor import DockerExecutor, LocalExecutor, docker_available
from argusic.sandbox.launch import read_display
from test_attempt import scripted  # noqa: F401 (fixture)
from test_executor import make_repo

needs_docker = pytest.mark.skipif(not docker_available(), reason="no Docker daemon answers")


def _spec(repo: Path, commit: str, attempt_no: int = 1, **over) -> AttemptSpec:
    fields = dict(
        cycle_id="2026-12", agent_id="readme-runner", project_id="p", repo_url=str(repo), commit=commit,
        tier="standard", attempt_no=attempt_no, demo=True, budget_scale=1 / 360,
    )  # fmt: skip
    return AttemptSpec(**(fields | over))


def test_the_harness_files_are_the_latest_changelog_edition():
    """A harness change ships with its changelog entry: the files' hash is the newest edition's."""
    latest = harness_editions()[-1]
    assert scaffold_sha256() == latest.scaffold_sha256, (
        "the harness files changed without a changelog entry: add a row to "
        f"dbt_project/seeds/harness_editions.csv with scaffold_sha256 {scaffold_sha256()}"
    )
    assert current_edition() == latest


def test_unrecorded_harness_files_are_refused(monkeypatch):
    monkeypatch.setattr(env_mod, "scaffold_sha256", lambda *a: "0" * 64)
    with pytest.raises(HarnessUnrecorded, match="match no edition.*changelog entry"):
        current_edition()


def test_scaffold_hash_changes_with_any_harness_file(tmp_path):
    import shutil

    package = tmp_path / "argusic"
    for part in env_mod.SCAFFOLD_DIRS:
        shutil.copytree(env_mod.PACKAGE_DIR / part, package / part)
    before = scaffold_sha256(package)
    assert before == scaffold_sha256()
    instructions = package / "external" / "instructions.md"
    instructions.write_text(instructions.read_text() + "\nOne more rule.\n")
    assert scaffold_sha256(package) != before


def test_local_attempt_records_its_environment(isolated, tmp_path, scripted):  # noqa: F811
    repo, commit = make_repo(tmp_path, "ok")
    path = run_attempt(_spec(repo, commit), LocalExecutor(), EvidenceStore())
    environment = load_record_file(path).environment
    assert environment is not None
    edition = current_edition()
    assert environment.harness_edition == edition.edition
    assert environment.scaffold_sha256 == edition.scaffold_sha256
    assert environment.instructions.version == edition.instructions_version
    assert environment.images == []  # the local executor runs no image
    assert environment.limits.network == "host" and environment.limits.cpus is None
    assert environment.limits.budget_seconds == 15  # 90 min scaled by 1/360
    pin = read_pin("2026-12")
    assert pin is not None and pin.executor == "local" and pin.budget_for("standard") == 15


def test_changed_instructions_mid_cycle_refuse_the_next_attempt(isolated, tmp_path, scripted, monkeypatch):  # noqa: F811
    repo, commit = make_repo(tmp_path, "ok")
    first = run_attempt(_spec(repo, commit, 1), LocalExecutor(), EvidenceStore())
    pinned = load_record_file(first).environment.instructions.sha256
    changed = tmp_path / "instructions.md"
    changed.write_text("# Your task\n\nSomething else.\n")
    monkeypatch.setattr("argusic.external.INSTRUCTIONS_TEMPLATE", changed)
    second = _spec(repo, commit, 2)
    with pytest.raises(EnvironmentRefused, match=f"instructions: pinned .*{pinned}") as refused:
        run_attempt(second, LocalExecutor(), EvidenceStore())
    assert "plan a new cycle id" in str(refused.value)
    # Refused before it started: nothing of it exists.
    assert not (isolated / "runs" / "2026-12" / second.attempt_id).exists()


def test_a_plan_under_other_budgets_is_refused(isolated):
    ensure_pin("2027-01", "local", ["runner"], demo=True, budget_scale=0.1)
    assert ensure_pin("2027-01", "local", ["runner"], demo=True, budget_scale=0.1) == read_pin("2027-01")
    with pytest.raises(EnvironmentRefused, match="budget_scale: pinned 0.1, now 0.5"):
        ensure_pin("2027-01", "local", ["runner"], demo=True, budget_scale=0.5)


def test_a_damaged_pin_is_refused_not_replaced(isolated):
    ensure_pin("2027-02", "local", ["runner"], demo=True, budget_scale=1.0)
    path = isolated / "runs" / "2027-02" / "environment.json"
    path.write_text('{"schema": "argusic.environment_pin/1", "cycle_id": "2027-02"}')
    with pytest.raises(EnvironmentRefused, match="not a valid environment pin"):
        ensure_pin("2027-02", "local", ["runner"], demo=True, budget_scale=1.0)


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"kind": "xvfb", "width": 1280, "height": 800, "depth": 24}', (1280, 800, 24)),
        ('{"kind": "xvfb", "width": 1280, "height": 800, "depth": 24, "extra": 1}', None),
        ('{"kind": "wayland", "width": 1, "height": 1, "depth": 1}', None),
        ("not json", None),
        ("x" * 5000, None),
    ],
)
def test_display_file_from_the_container_is_validated(tmp_path, content, expected):
    (tmp_path / "display.json").write_text(content)
    display = read_display(tmp_path)
    assert (None if display is None else (display.width, display.height, display.depth)) == expected


def test_display_file_that_is_a_link_is_not_followed(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text('{"kind": "xvfb", "width": 1280, "height": 800, "depth": 24}')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "display.json").symlink_to(target)
    assert read_display(tmp_path / "out") is None


def test_records_from_before_environment_identity_stay_valid(record_doc):
    record = parse_record(record_doc)
    assert record.environment is None and record.reproduces is None


# --- real Docker: the runner image rebuilt in the middle of a cycle ------------------------------------


def _build(client, base: str, tag: str, label: str) -> str:
    """A runner image variant made offline from the local runner image (a container created, never
    started, committed with one more label: `docker build` would ask a registry for FROM)."""
    container = client.containers.create(base, command=["true"])
    try:
        repository, version = tag.rsplit(":", 1)
        image = container.commit(
            repository=repository, tag=version, changes=[f"LABEL argusic.test.variant={label}"]
        )
    finally:
        container.remove(force=True)
    return image.id


@pytest.mark.docker
@pytest.mark.slow
@needs_docker
def test_rebuilt_runner_image_mid_cycle_keeps_the_pinned_digest(isolated, tmp_path, monkeypatch, scripted):  # noqa: F811
    from argusic.core.settings import runner_image

    import docker

    client = docker.from_env()
    base = runner_image()
    tag = "argusic-runner:envtest"
    monkeypatch.setenv("ARGUSIC_RUNNER_IMAGE", tag)
    made: list[str] = []
    try:
        first_id = _build(client, base, tag, "first")
        made.append(first_id)
        repo, commit = make_repo(tmp_path, "ok")
        executor = DockerExecutor(image=tag)
        one = load_record_file(run_attempt(_spec(repo, commit, 1), executor, EvidenceStore()))
        assert [i.digest for i in one.environment.images] == [first_id]
        assert one.invalid_reason is None and one.image == tag  # the name; the digest is above

        second_id = _build(client, base, tag, "second")  # the tag now names another image
        made.append(second_id)
        assert second_id != first_id
        two = load_record_file(run_attempt(_spec(repo, commit, 2), executor, EvidenceStore()))
        assert [i.digest for i in two.environment.images] == [first_id]  # not the rebuilt one
        assert two.invalid_reason is None and two.image == tag
        assert two.environment == one.environment.model_copy(update={"display": two.environment.display})
        pinned_tag = env_mod.pinned_tag(tag, first_id)
        assert client.images.get(pinned_tag).id == first_id  # kept for the cycle and reproductions

        # The pinned image gone (someone pruned it): the next attempt is refused before it starts.
        client.images.remove(pinned_tag)  # its last name: the image goes with it
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(first_id)
        third = _spec(repo, commit, 3)
        with pytest.raises(EnvironmentRefused, match=f"pinned runner image {tag} .*{first_id}.* no longer"):
            run_attempt(third, executor, EvidenceStore())
        assert not (isolated / "runs" / "2026-12" / third.attempt_id).exists()
        pin = json.loads((isolated / "runs" / "2026-12" / "environment.json").read_text())
        assert pin["images"]["runner"]["digest"] == first_id
    finally:
        for ref in [env_mod.pinned_tag(tag, i) for i in made] + [tag, *made]:
            with contextlib.suppress(docker.errors.ImageNotFound):
                client.images.remove(ref, force=True)


def test_cli_shows_a_pin_and_what_would_refuse_the_next_attempt(isolated, monkeypatch, tmp_path):
    from argusic.cli.main import app
    from typer.testing import CliRunner

    runner = CliRunner()
    missing = runner.invoke(app, ["cycle", "environment", "--cycle", "2027-03"])
    assert missing.exit_code == 2 and "no pinned environment" in missing.output
    ensure_pin("2027-03", "local", ["runner"], demo=True, budget_scale=1.0)
    same = runner.invoke(app, ["cycle", "environment", "--cycle", "2027-03"])
    assert same.exit_code == 0, same.output
    assert '"harness_edition"' in same.output and "runs under the pinned environment" in same.output
    changed = tmp_path / "instructions.md"
    changed.write_text("# Your task\n\nSomething else.\n")
    monkeypatch.setattr("argusic.external.INSTRUCTIONS_TEMPLATE", changed)
    refused = runner.invoke(app, ["cycle", "environment", "--cycle", "2027-03"])
    assert refused.exit_code == 1
    assert "would be refused" in refused.output and "instructions: pinned" in refused.output


@pytest.mark.parametrize(
    "url",
    [
        "https://user:secret@mirror.example/simple",  # credentials every agent could read
        "ftp://mirror.example/simple",
        "https://mirror.example/simple?token=x",
        "https://mirror.example/simple\nX-Evil: 1",
        "mirror.example/simple",
    ],
)
def test_a_package_index_that_is_not_a_plain_url_is_refused_naming_the_setting(monkeypatch, url):
    from argusic.sandbox.containment import Containment

    monkeypatch.setenv("ARGUSIC_PIP_INDEX_URL", url)
    monkeypatch.setenv("ARGUSIC_CONTAINER_NETWORK", "argusic-test-net")
    with pytest.raises(ValueError, match=r"\[network\] pip_index_url \(ARGUSIC_PIP_INDEX_URL\)"):
        Containment.from_config(demo=False)


def test_the_package_indexes_are_given_pinned_and_recorded_only_with_a_network(monkeypatch):
    """The operator's mirrors reach every attempt on a network as PIP_INDEX_URL / npm_config_registry,
    are part of the cycle's pin (a change mid-cycle is a different environment) and of every record;
    an attempt without a network gets none (nothing to reach them with)."""
    from argusic.core.record import Limits
    from argusic.sandbox.containment import Containment

    monkeypatch.setenv("ARGUSIC_PIP_INDEX_URL", "http://198.51.100.2:8765/simple/")
    monkeypatch.setenv("ARGUSIC_NPM_REGISTRY", "https://npm.mirror.example/")
    monkeypatch.setenv("ARGUSIC_CONTAINER_NETWORK", "argusic-test-net")
    containment = Containment.from_config(demo=False)
    expected = {
        "PIP_INDEX_URL": "http://198.51.100.2:8765/simple/",
        "PIP_TRUSTED_HOST": "198.51.100.2:8765",  # pip ignores a plain-http index it does not trust
        "npm_config_registry": "https://npm.mirror.example/",
    }
    assert dict(containment.package_indexes) == expected
    executor = DockerExecutor(containment=containment)
    _, limits = env_mod.executor_profile(executor, demo=False)
    assert limits.package_indexes == expected
    assert Limits(**limits.model_dump(), budget_seconds=60).package_indexes == expected
    monkeypatch.setenv("ARGUSIC_CONTAINER_NETWORK", "none")
    assert Containment.from_config(demo=False).package_indexes == ()
