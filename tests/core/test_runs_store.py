"""The runs store (argusic.core.runs_store): a cycle's pool, plan, pin and run records in object storage, so
that hosts sharing no folder plan, run and ingest one cycle. Against moto's S3 server (a real S3
protocol endpoint) and a file:// store; "hosts" are separate runs folders in one process."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from argusic.core import runs_store
from argusic.core.runs_store import RunsStore, RunsStoreConflict, RunsStoreError, key_problem


@pytest.fixture
def s3_runs(s3_bucket: str, isolated: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"s3://{s3_bucket}/runs"
    monkeypatch.setenv("ARGUSIC_RUNS_URL", url)
    return url


def _host(monkeypatch: pytest.MonkeyPatch, root: Path, name: str) -> Path:
    """Become host `name`: its own runs folder and scratch (nothing shared but the store)."""
    folder = root / "hosts" / name
    monkeypatch.setenv("ARGUSIC_RUNS_DIR", str(folder / "runs"))
    monkeypatch.setenv("ARGUSIC_SCRATCH_DIR", str(folder / "scratch"))
    return folder / "runs"


@pytest.mark.parametrize(
    "key",
    ["", "/abs", "a//b", "../x", "a/../b", "a/./b", "a/b\\c", "a/ b", "a/.hidden", "a/\x00", "x" * 600],
)
def test_keys_that_could_leave_the_store_or_hide_are_refused(key: str) -> None:
    assert key_problem(key) is not None


def test_keys_of_the_layout_are_accepted() -> None:
    for key in (
        "2026-12/plan/2026-12.bench.readme-runner.p1.a1.json",
        "2026-12/environment.json",
        "2026-12/2026-12.bench.readme-runner.p1.a1.r1/run_record.json",
        "pools/2026-12/pool.json",
    ):
        assert key_problem(key) is None, key


def test_a_uri_outside_the_store_is_refused(s3_runs: str, s3_bucket: str) -> None:
    store = runs_store.shared()
    assert store is not None
    outside = (f"s3://{s3_bucket}/other/x.json", f"{s3_runs}/../x.json", "file:///etc/passwd", "/etc/passwd")
    for uri in outside:
        with pytest.raises(RunsStoreError):
            store.key_of_uri(uri)
    with pytest.raises(RunsStoreError, match="not in the runs store"):
        runs_store.local_path(f"s3://{s3_bucket}/elsewhere/spec.json")


def test_records_are_write_once_and_objects_are_capped(s3_runs: str, monkeypatch) -> None:
    store = RunsStore(s3_runs)
    store.write("c/a/run_record.json", b"one", write_once=True)
    store.write("c/a/run_record.json", b"one", write_once=True)  # the same bytes again: a no-op
    with pytest.raises(RunsStoreConflict, match="already holds other bytes"):
        store.write("c/a/run_record.json", b"two", write_once=True)
    assert store.read("c/a/run_record.json") == b"one"
    monkeypatch.setattr(runs_store, "MAX_OBJECT_BYTES", 8)
    store.write("c/big.json", b"x" * 9)
    with pytest.raises(RunsStoreError, match="over 8"):
        store.read("c/big.json")


@pytest.mark.parametrize("kind", ["s3", "file"])
def test_the_first_writer_wins_a_conditional_create(kind: str, s3_runs: str, tmp_path: Path) -> None:
    store = RunsStore(s3_runs if kind == "s3" else (tmp_path / "store").as_uri())
    assert store.create("c/environment.json", b"host-a") is True
    assert store.create("c/environment.json", b"host-b") is False
    assert store.read("c/environment.json") == b"host-a"


def test_a_pull_never_writes_through_a_link_in_the_cache(s3_runs: str, isolated: Path) -> None:
    runs_store.shared().write("c/plan/x.json", b"{}")
    target = isolated / "elsewhere.json"
    target.write_text("keep")
    local = Path(isolated / "runs" / "c" / "plan" / "x.json")
    local.parent.mkdir(parents=True)
    local.symlink_to(target)
    with pytest.raises(RunsStoreError, match="not a regular file"):
        runs_store.pull("c/plan/x.json")
    assert target.read_text() == "keep"


def test_single_machine_needs_no_store(isolated: Path, monkeypatch) -> None:
    monkeypatch.delenv("ARGUSIC_RUNS_URL", raising=False)
    path = isolated / "runs" / "c" / "plan" / "x.json"
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    assert runs_store.push(path) == str(path)
    assert runs_store.pull("c/plan/x.json") == path
    assert runs_store.local_path(str(path)) == path


def test_a_cycle_planned_on_one_host_runs_on_another_and_is_ingested_on_a_third(
    s3_runs: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hosts that share nothing but the store: the warehouse host draws the pool and plans (pinning the
    cycle); two attempt hosts each run attempts from the URIs XCom would carry; a retry on a third host
    finds the record in the store and measures nothing; ingest on the warehouse host reads them all."""
    from argusic.core.spec import read_spec
    from argusic.cycle.plan import write_plan
    from argusic.cycle.pools import resolve_pool
    from argusic.cycle.run import records_of_plan, run_planned_attempt
    from argusic.sandbox.executor import get_executor
    from argusic.sources.forge import build_forge
    from argusic.warehouse.load_runs import ingest_cycle_records

    catalogue = build_forge(isolated / "forge")
    warehouse_runs = _host(monkeypatch, isolated, "warehouse")
    pool = resolve_pool("2026-12-cl", catalogue=str(catalogue), size=2)
    assert pool.startswith(s3_runs + "/pools/2026-12-cl/")
    specs = write_plan(pool, ["readme-runner"], attempts_per_pair=1, demo=True, executor="local")
    assert len(specs) == 2 and all(s.startswith(s3_runs + "/2026-12-cl/plan/") for s in specs)
    pin = json.loads(runs_store.shared().read("2026-12-cl/environment.json"))
    assert pin["cycle_id"] == "2026-12-cl"

    made = {}
    for host, spec_uri in zip(("attempts-a", "attempts-b"), specs, strict=True):
        runs = _host(monkeypatch, isolated, host)
        assert not runs.exists()  # nothing of the cycle on this host before the task
        (record,) = run_planned_attempt(spec_uri, executor=get_executor("local", demo=True))
        assert Path(record).is_relative_to(runs)
        made[spec_uri] = Path(record).read_bytes()

    class NeverRun:  # a retry must find the record, never measure again
        name = "local"

        def __getattr__(self, item):
            raise AssertionError(f"the attempt was measured twice ({item})")

    _host(monkeypatch, isolated, "attempts-c")
    for spec_uri, data in made.items():
        (again,) = run_planned_attempt(spec_uri, executor=NeverRun())
        assert Path(again).read_bytes() == data

    _host(monkeypatch, isolated, "warehouse")
    found, missing = records_of_plan(specs)
    assert missing == [] and len(found) == 2
    assert all(Path(p).is_relative_to(warehouse_runs) for p in found)
    assert {Path(p).read_bytes() for p in found} == set(made.values())
    loaded = ingest_cycle_records("2026-12-cl", found)
    assert loaded["inserted"] == 2
    assert {read_spec(s).attempt_id for s in specs} == {Path(p).parent.name for p in found}


def test_a_second_host_that_plans_the_cycle_differently_is_refused(
    s3_runs: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pin is the store's: a host whose environment differs (here: other instructions) is refused,
    even though its own runs folder has never seen the cycle."""
    from argusic.attempts.environment import EnvironmentRefused
    from argusic.cycle.plan import write_plan
    from argusic.cycle.pools import resolve_pool
    from argusic.sources.forge import build_forge

    catalogue = build_forge(isolated / "forge")
    _host(monkeypatch, isolated, "one")
    pool = resolve_pool("2026-12-cm", catalogue=str(catalogue), size=2)
    write_plan(pool, ["readme-runner"], attempts_per_pair=1, demo=True, executor="local")
    _host(monkeypatch, isolated, "two")
    with pytest.raises(EnvironmentRefused, match="pinned to another environment"):
        write_plan(
            pool, ["readme-runner"], attempts_per_pair=1, demo=True, budget_scale=0.5, executor="local"
        )


def test_real_budgets_on_the_forge_are_checked_from_a_pool_in_the_store(
    s3_runs: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """plan's first check reads the pool prepare_pool left in the store (another host drew it): the
    forge's fixtures with real budgets are refused with the fix, any other pool passes."""
    from argusic.cycle.ids import ConfigurationError
    from argusic.cycle.plan import require_scaled_budgets_on_the_forge
    from argusic.cycle.pools import resolve_pool
    from argusic.sources.forge import build_forge

    catalogue = build_forge(isolated / "forge")
    _host(monkeypatch, isolated, "warehouse")
    pool = resolve_pool("2026-12-cb", catalogue=str(catalogue), size=2)
    assert pool.startswith(s3_runs + "/")
    _host(monkeypatch, isolated, "other")
    with pytest.raises(ConfigurationError, match="demo forge's fixture projects"):
        require_scaled_budgets_on_the_forge(pool, demo=False, budget_scale=None)
    require_scaled_budgets_on_the_forge(pool, demo=True, budget_scale=None)
    monkeypatch.setenv("ARGUSIC_FORGE_DIR", str(isolated / "another-forge"))
    require_scaled_budgets_on_the_forge(pool, demo=False, budget_scale=None)  # not the forge's pool


def test_the_key_sweep_keeps_keys_of_attempts_alive_on_other_hosts_and_deletes_a_dead_ones(
    s3_runs: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a cluster the warehouse host sees none of the attempt hosts' containers or folders: a key's
    attempt counts as running while its lease in the runs store is renewed (issue 26: before, a killed
    attempt that was never retried kept its key until the gateway's expiry, since it never got a
    record). Leases shortened here to seconds; the real ones are renewed every 60 s, valid 300 s."""
    import time
    from datetime import UTC, datetime

    from argusic.attempts import leases
    from argusic.attempts.keys import LiteLLMKeyBroker
    from argusic.ops.maintenance import running_attempt_ids, sweep_model_keys
    from test_keys import FakeBroker

    monkeypatch.setattr(leases, "LEASE_SECONDS", 2)
    monkeypatch.setattr(leases, "RENEW_SECONDS", 0.3)
    monkeypatch.setattr("argusic.sandbox.executor.docker_available", lambda: False)
    broker = FakeBroker()
    alive, killed = "2026-12-cl.board.readme-runner.p1.a1", "2026-12-cl.board.readme-runner.p1.a2"
    keys = {a: broker.create(a, 3.0) for a in (alive, killed)}
    _host(monkeypatch, isolated, "attempts-1")
    with leases.attempt_lease(killed):
        pass  # its worker was killed: nobody renews the lease from now on
    with leases.attempt_lease(alive):  # still running on this host
        _host(monkeypatch, isolated, "warehouse")
        assert running_attempt_ids({alive, killed}, datetime.now(UTC)) == {alive, killed}  # both leased
        time.sleep(3)
        now = datetime.now(UTC)
        assert running_attempt_ids({alive, killed, "../odd"}, now) == {alive}
        monkeypatch.setenv("LITELLM_BASE_URL", "http://127.0.0.1:9")
        monkeypatch.setenv("LITELLM_MASTER_KEY", "sk-master")
        monkeypatch.setattr(LiteLLMKeyBroker, "from_env", classmethod(lambda cls: broker))
        assert sweep_model_keys(now)["deleted"] == [keys[killed].alias]
        assert [ref.attempt_id for ref in broker.list_attempt_keys()] == [alive]
        with pytest.raises(ValueError, match="needs the time"):
            running_attempt_ids({alive})
    monkeypatch.delenv("ARGUSIC_RUNS_URL")
    assert running_attempt_ids({alive}) == set()  # one machine: its own containers and folders


@pytest.mark.parametrize("kind", ["s3", "file"])
def test_the_rotation_reads_the_pools_other_hosts_recorded(
    kind: str, request: pytest.FixtureRequest, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host drawing January's pool has never seen December's in its own runs folder: the rotation
    reads it from the store, and December's private project is left out of January."""
    from argusic.cycle.pools import pool_history, resolve_pool
    from argusic.sources.forge import build_forge
    from argusic.sources.pool import load_pool

    if kind == "s3":
        request.getfixturevalue("s3_runs")
    else:
        monkeypatch.setenv("ARGUSIC_RUNS_URL", (isolated / "store").as_uri())
    catalogue = build_forge(isolated / "forge")
    _host(monkeypatch, isolated, "december")
    december = load_pool(runs_store.local_path(resolve_pool("2026-12", catalogue=str(catalogue), size=5)))
    (star,) = [e.project_id for e in december.private]
    doc = json.loads(catalogue.read_text())
    for cand in doc["candidates"]:
        if cand["project_id"] == star:
            cand["popular_since"] = "2026-12-10"  # popular again in January's window
    january_catalogue = isolated / "forge" / "january.json"
    january_catalogue.write_text(json.dumps(doc))
    runs = _host(monkeypatch, isolated, "january")
    assert not (runs / "pools").exists()
    assert [p.cycle_id for p in pool_history()] == ["2026-12"]
    january = load_pool(runs_store.local_path(resolve_pool("2027-01", catalogue=str(january_catalogue))))
    assert star not in {e.project_id for e in january.entries}
    assert january.excluded[star].startswith("private in cycle 2026-12, the last cycle")
    selection = json.loads((runs / "pools" / "2027-01" / "selection.json").read_text())
    assert selection["rotation_excluded"] == {"private_last_cycle": 1, "already_revealed": 0}


@pytest.mark.parametrize("kind", ["s3", "file"])
def test_a_batch_is_written_once_rerun_for_free_and_a_conflict_is_refused_by_name(
    kind: str, request: pytest.FixtureRequest, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """create_many: every object created once; the same batch again changes nothing (its manifest is
    there); a batch that would change one object is refused naming it, and the object keeps its bytes."""
    url = request.getfixturevalue("s3_runs") if kind == "s3" else f"file://{isolated / 'store'}"
    store = RunsStore(url)
    items = {f"2026-12/plan/2026-12.board.a.p{i}.a1.json": f'{{"n": {i}}}\n'.encode() for i in range(50)}
    manifest = runs_store.manifest_key("2026-12/plan", items)
    assert store.create_many(items, manifest) == 50
    assert all(store.read(key) == data for key, data in items.items())
    assert json.loads(store.read(manifest)) == {k: hashlib.sha256(v).hexdigest() for k, v in items.items()}
    assert store.create_many(items, manifest) == 0  # a rerun: nothing written
    assert store.create_many(items) == 0  # without the manifest: each object compared, none replaced

    changed = dict(items)
    key = "2026-12/plan/2026-12.board.a.p7.a1.json"
    changed[key] = b'{"n": "other"}\n'
    changed["2026-12/plan/2026-12.board.a.p99.a1.json"] = b"{}\n"
    with pytest.raises(
        RunsStoreConflict,
        match=r"1 object\(s\) .* already hold other bytes: 2026-12/plan/2026-12\.board\.a\.p7\.a1\.json;",
    ):
        store.create_many(changed, runs_store.manifest_key("2026-12/plan", changed))
    assert store.read(key) == items[key]  # never replaced
    assert (
        store.read(runs_store.manifest_key("2026-12/plan", changed)) is None
    )  # no manifest of a refused batch


def test_a_plan_rerun_on_the_store_is_idempotent_and_a_changed_spec_is_refused(
    s3_runs: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """write_specs on a cluster: one batch, the same URIs on a rerun (from another host too), and a
    spec that would change refused by its attempt id in the store even when this host has no copy."""
    from argusic.core.spec import AttemptSpec, SpecConflict, read_spec, write_specs

    specs = [
        AttemptSpec(cycle_id="2026-12-bt", agent_id="readme-runner", project_id=f"p{i}", repo_url="/r.git",
                    commit="a" * 40, tier="standard", attempt_no=n)
        for i in range(20) for n in (1, 2, 3)
    ]  # fmt: skip
    _host(monkeypatch, isolated, "one")
    uris = write_specs(specs)
    assert len(uris) == 60 and all(u.startswith(s3_runs + "/2026-12-bt/plan/") for u in uris)
    store = runs_store.shared()

    def plan_objects() -> dict[str, bytes]:
        """Every object of the plan in the store (the references name places in its packs)."""
        return {key: store.read(key) for key in store.listing("2026-12-bt/plan")}

    before = plan_objects()
    assert sorted(k.rsplit("/", 1)[1].split("-")[0] for k in before) == ["manifest", "pack"]  # 60 specs
    assert write_specs(specs) == uris
    _host(monkeypatch, isolated, "two")
    assert write_specs(specs) == uris  # another host, nothing local: the store's manifest says done
    assert plan_objects() == before
    assert read_spec(uris[4]) == specs[4]

    _host(monkeypatch, isolated, "three")
    changed = [*specs[:-1], specs[-1].model_copy(update={"commit": "b" * 40})]
    with pytest.raises(RunsStoreConflict, match=r"2026-12-bt\.board\.readme-runner\.p19\.a3"):
        write_specs(changed)
    assert plan_objects() == before
    _host(monkeypatch, isolated, "one")
    with pytest.raises(
        SpecConflict, match=r"1 planned attempt\(s\) already have another spec: 2026-12-bt\.board"
    ):
        write_specs(changed)  # the host that planned it refuses too (the store's plan, not its copy)
    assert plan_objects() == before


def test_a_packed_spec_is_read_from_the_store_checked_and_cached_on_the_host(
    s3_runs: str, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attempt host reads its spec's pack from the store once (then from its runs folder), a copy
    on the host that is not the named bytes is fetched again, and a pack tampered in the store or gone
    from it is refused by name; a correction on another host finds the spec through the store's plan."""
    from argusic.core import spec as spec_module
    from argusic.core.spec import AttemptSpec, SpecMissing, SpecTampered, read_spec, write_specs
    from argusic.workflows.corrections import correction_spec

    specs = [
        AttemptSpec(cycle_id="2026-12-pk", agent_id="readme-runner", project_id=f"p{i}", repo_url="/r.git",
                    commit="a" * 40, tier="standard", attempt_no=n)
        for i in range(100) for n in (1, 2, 3)
    ]  # fmt: skip
    _host(monkeypatch, isolated, "warehouse")
    uris = write_specs(specs)
    store = runs_store.shared()
    pack_key = store.key_of_uri(uris[0].rsplit("/", 1)[0])
    runs = _host(monkeypatch, isolated, "attempts")
    spec_module._PACKS.clear()  # a new process on a new host
    assert read_spec(uris[0]) == specs[0]
    cached = runs / pack_key
    assert cached.read_bytes() == store.read(pack_key)
    cached.write_bytes(b"not the pack")  # a damaged copy on the host: the store's replaces it
    spec_module._PACKS.clear()
    assert read_spec(uris[1]) == specs[1] and cached.read_bytes() == store.read(pack_key)

    _host(monkeypatch, isolated, "other")
    assert correction_spec(specs[5].attempt_id).rerun_of == specs[5].attempt_id
    spec_module._PACKS.clear()
    store.write(pack_key, store.read(pack_key).replace(b"a" * 40, b"b" * 40, 1))  # tampered in the store
    with pytest.raises(SpecTampered, match=r"pack-.*not to its name: damaged or tampered"):
        read_spec(uris[2])
    store.fs.rm(store._path(pack_key))
    with pytest.raises(SpecMissing, match="no such pack in the runs store"):
        read_spec(uris[3])
