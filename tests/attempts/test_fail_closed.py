"""Never fail open (issue 25): a stopped Docker daemon fails the attempt as ours (invalid, rerun),
never moves it onto the host; a cycle that is not a demo is never pinned to the local executor, and
a plan never pins it by inference."""

from __future__ import annotations

import pytest
from argusic.attempts import environment as env_mod
from argusic.attempts.environment import EnvironmentRefused, EnvironmentUnavailable, ensure_pin, read_pin
from argusic.attempts.run import run_attempt
from argusic.core.evidence import EvidenceStore
from argusic.core.record import ImageIdentity, load_record_file
from argusic.core.spec import AttemptSpec
from argusic.cycle.run import run_with_reruns
from test_executor import make_repo, stopped_daemon  # noqa: F401 (fixture)

DAEMON_REASON = "executor error: the Docker daemon did not answer at "


def _spec(repo, commit, **over) -> AttemptSpec:
    fields = dict(
        cycle_id="2027-05", agent_id="readme-runner", project_id="p", repo_url=str(repo), commit=commit,
        tier="standard", attempt_no=1,
    )  # fmt: skip
    return AttemptSpec(**(fields | over))


def _write_pin(pin: env_mod.Pin) -> None:
    path = env_mod.pin_path(pin.cycle_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    env_mod._write(path, pin)


def _docker_pin(cycle_id: str, demo: bool = False, budget_scale: float = 1.0) -> None:
    """The pin a plan made while the daemon answered (images resolved then); made here without one."""
    pin = env_mod.current_pin(cycle_id, "docker", [], demo=demo, budget_scale=budget_scale)
    image = ImageIdentity(role="runner", reference="argusic-runner:latest", digest="sha256:" + "0" * 64)
    _write_pin(pin.model_copy(update={"images": {"runner": image}}))


@pytest.mark.parametrize("demo", [False, True])
def test_a_plan_never_pins_local_when_the_daemon_is_down(isolated, stopped_daemon, demo):  # noqa: F811
    """Before: planning on a host whose daemon did not answer pinned the whole cycle to `local`."""
    with pytest.raises(EnvironmentUnavailable, match="cannot be pinned: the Docker daemon did not answer"):
        ensure_pin("2027-05", None, ["runner"], demo=demo, budget_scale=1.0)
    assert read_pin("2027-05") is None


def test_local_is_refused_for_a_cycle_that_is_not_a_demo(isolated, stopped_daemon, monkeypatch):  # noqa: F811
    with pytest.raises(EnvironmentRefused, match="cycle 2027-05: the local executor .* demo cycles only"):
        ensure_pin("2027-05", "local", ["runner"], demo=False, budget_scale=1.0)
    monkeypatch.setenv("ARGUSIC_EXECUTOR", "local")
    with pytest.raises(EnvironmentRefused, match="demo cycles only"):
        ensure_pin("2027-05", None, ["runner"], demo=False, budget_scale=1.0)
    assert read_pin("2027-05") is None
    # A local pin of a cycle that is not a demo (as the old fallback wrote them) runs nothing more.
    old = env_mod.current_pin("2027-06", "local", [], demo=True, budget_scale=1.0)
    _write_pin(old.model_copy(update={"demo": False}))
    with pytest.raises(EnvironmentRefused, match="demo cycles only"):
        ensure_pin("2027-06", None, ["runner"], demo=False, budget_scale=1.0)
    # a demo cycle may name it
    assert ensure_pin("2027-07", None, ["runner"], demo=True, budget_scale=1.0).executor == "local"


def test_an_attempt_with_an_unreachable_daemon_is_invalid_as_ours(isolated, tmp_path, stopped_daemon):  # noqa: F811
    """The cycle is pinned to docker; the daemon is down when its attempt runs: the record says so
    (invalid, our fault), the attempt is rerun, and nothing ran on the host."""
    repo, commit = make_repo(tmp_path, "ok")
    _docker_pin("2027-05")
    spec = _spec(repo, commit)
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    record = load_record_file(run_attempt(spec, None, store))
    assert record.executor == "docker" and record.end_reason == "harness_error"
    assert record.invalid_reason is not None and record.invalid_reason.startswith(DAEMON_REASON)
    assert "start dockerd" in record.invalid_reason
    assert not list((isolated / "scratch").glob("*/out/*"))  # nothing ran in a local scratch folder
    chain = [load_record_file(p) for p in run_with_reruns(spec, None, store)]
    assert len(chain) > 1  # rerun, bounded
    assert all(r.invalid_reason and r.invalid_reason.startswith(DAEMON_REASON) for r in chain)


@pytest.mark.usefixtures("stopped_daemon")
def test_a_repair_attempt_with_an_unreachable_daemon_is_invalid_as_ours(isolated, tmp_path, monkeypatch):
    from argusic.attempts import repair_run as repair
    from test_repair_attempts import make_item_repo, repair_spec

    _, item = make_item_repo(tmp_path)
    monkeypatch.setattr(repair, "load_repair_item", lambda spec: item)
    spec = repair_spec(item)
    _docker_pin(spec.cycle_id, demo=True, budget_scale=spec.budget_scale)
    store = EvidenceStore((tmp_path / "evidence").as_uri())
    record = repair.run_repair_attempt(spec, None, store).record
    assert record.executor == "docker" and record.end_reason == "harness_error"
    assert record.invalid_reason is not None and record.invalid_reason.startswith(DAEMON_REASON)
