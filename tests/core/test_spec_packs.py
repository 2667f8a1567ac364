"""A plan's specs in packs (argusic.core.spec): written once in content-addressed packs with one manifest
a batch, re-planned for nothing, a changed spec refused by attempt id, and every reader going through
read_spec, which finds the spec in its pack, checks both hashes and refuses a pack missing or tampered.
Plans written before packs (one file a spec) are still read and still never replaced."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from argusic.core import spec as spec_module
from argusic.core.spec import (
    AttemptSpec,
    SpecConflict,
    SpecMissing,
    SpecTampered,
    attempt_label,
    is_packed,
    planned_spec_reference,
    read_spec,
    spec_bytes,
    write_specs,
)


def _specs(cycle: str = "2026-12", projects: int = 100, commit: str = "a" * 40) -> list[AttemptSpec]:
    return [
        AttemptSpec(cycle_id=cycle, agent_id="readme-runner", project_id=f"p{i:03d}", repo_url="/r.git",
                    commit=commit, tier="standard", attempt_no=n)
        for i in range(projects) for n in (1, 2, 3)
    ]  # fmt: skip


def _plan_files(isolated: Path, cycle: str = "2026-12") -> dict[str, bytes]:
    folder = isolated / "runs" / cycle / "plan"
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture(autouse=True)
def _fresh_pack_cache():
    spec_module._PACKS.clear()  # every test reads its packs from where they are
    yield
    spec_module._PACKS.clear()


def test_a_plan_is_a_few_packs_and_one_manifest_read_back_spec_by_spec(isolated: Path) -> None:
    specs = _specs()  # 300 specs: two packs
    refs = write_specs(specs)
    files = _plan_files(isolated)
    packs = sorted(n for n in files if n.startswith("pack-"))
    assert len(packs) == 2 and sorted(files) == ["manifest-000001.json", *packs]
    # XCom carries one reference per attempt, named by its attempt id as a spec file was
    assert [Path(r).stem for r in refs] == [s.attempt_id for s in specs]
    assert all(is_packed(r) and Path(r).parent.name in packs for r in refs)
    assert [read_spec(r) for r in refs] == specs
    assert attempt_label(refs[4]) == specs[4].label
    manifest = json.loads(files["manifest-000001.json"])
    assert manifest["format"] == "argusic.spec-manifest/1"
    entries = {e[0]: (pack, *e[1:]) for pack, listed in manifest["packs"].items() for e in listed}
    assert set(entries) == {s.attempt_id for s in specs}
    pack, offset, length, sha = entries[specs[7].attempt_id]
    body = files[pack].partition(b"\n")[2]
    assert body[offset : offset + length] == spec_bytes(specs[7])  # the bytes a spec file held
    assert planned_spec_reference("2026-12", specs[7].attempt_id) == refs[7]
    assert planned_spec_reference("2026-12", "2026-12.board.readme-runner.nope.a1") is None


def test_a_replan_writes_nothing_a_larger_plan_adds_a_batch_and_a_changed_spec_is_refused(
    isolated: Path,
) -> None:
    specs = _specs(projects=10)
    refs = write_specs(specs)
    before = {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (isolated / "runs").rglob("*") if p.is_file()
    }
    assert write_specs(specs) == refs  # the same plan: the same references, nothing written
    assert write_specs(list(reversed(specs))) == list(reversed(refs))
    assert {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (isolated / "runs").rglob("*") if p.is_file()
    } == before

    more = _specs(projects=12)  # two projects more: their specs alone go in a new pack and batch
    refs_more = write_specs(more)
    assert refs_more[: len(refs)] == refs
    files = _plan_files(isolated)
    assert sorted(n for n in files if n.startswith("manifest-")) == [
        "manifest-000001.json",
        "manifest-000002.json",
    ]
    second = json.loads(files["manifest-000002.json"])
    assert sorted(e[0] for listed in second["packs"].values() for e in listed) == sorted(
        s.attempt_id for s in more[len(specs) :]
    )
    assert [read_spec(r) for r in refs_more] == more

    changed = [*more[:-2], more[-2].model_copy(update={"commit": "b" * 40}), more[-1]]
    changed[3] = changed[3].model_copy(update={"tier": "heavy"})
    held = _plan_files(isolated)
    with pytest.raises(SpecConflict, match=r"2 planned attempt\(s\) already have another spec: ") as err:
        write_specs(changed)
    assert more[3].attempt_id in str(err.value) and more[-2].attempt_id in str(err.value)
    assert _plan_files(isolated) == held  # refused before anything was written

    twice = [specs[0], specs[0].model_copy(update={"attempt_no": 1, "commit": "c" * 40})]
    with pytest.raises(SpecConflict, match="1 planned attempt"):
        write_specs(twice)


def test_a_missing_or_tampered_pack_is_refused_clearly(isolated: Path) -> None:
    specs = _specs(projects=3)
    refs = write_specs(specs)
    pack = Path(refs[0]).parent

    absent = f"{pack.parent}/pack-{'0' * 64}.specs/{specs[0].attempt_id}.json"
    with pytest.raises(SpecMissing, match="no such pack"):
        read_spec(absent)
    with pytest.raises(SpecMissing, match="holds no spec of attempt 2026-12.board.readme-runner.zz.a1"):
        read_spec(f"{pack}/2026-12.board.readme-runner.zz.a1.json")
    assert attempt_label(absent) == "readme-runner / p000 / attempt 1"  # the label from the id alone

    blob = pack.read_bytes()
    pack.write_bytes(blob.replace(b'"commit": "' + b"a" * 40, b'"commit": "' + b"f" * 40, 1))
    spec_module._PACKS.clear()  # another process: this one keeps the pack it checked already
    with pytest.raises(SpecTampered, match="not to its name: damaged or tampered"):
        read_spec(refs[0])

    # A pack whose name matches its bytes but whose spec is not the one its header lists
    head, _, body = blob.partition(b"\n")
    forged = head + b"\n" + body.replace(b"a" * 40, b"e" * 40, 1)
    name = f"pack-{spec_module._sha(forged)}.specs"
    (pack.parent / name).write_bytes(forged)
    with pytest.raises(SpecTampered, match="do not hash to the sha256 its pack lists"):
        read_spec(f"{pack.parent}/{name}/{specs[0].attempt_id}.json")


def test_a_pack_is_read_once_per_process(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _specs(projects=100)
    refs = write_specs(specs)
    reads = []
    real = spec_module.read_capped

    def counting(path, limit):
        reads.append(Path(path).name)
        return real(path, limit)

    monkeypatch.setattr(spec_module, "read_capped", counting)
    assert [read_spec(r) for r in refs] == specs
    assert sorted(reads) == sorted({Path(r).parent.name for r in refs})  # two packs, one read each


def test_plans_written_before_packs_are_read_and_never_replaced(isolated: Path) -> None:
    specs = _specs(projects=2)
    folder = isolated / "runs" / "2026-12" / "plan"
    folder.mkdir(parents=True)
    for s in specs:  # the former layout: one file a spec
        (folder / f"{s.attempt_id}.json").write_bytes(spec_bytes(s))
    (folder / f"manifest-{'0' * 24}.json").write_text("{}\n")  # a former batch's manifest: not read
    legacy = [str(folder / f"{s.attempt_id}.json") for s in specs]
    assert [read_spec(r) for r in legacy] == specs
    assert planned_spec_reference("2026-12", specs[1].attempt_id) == legacy[1]
    before = _plan_files(isolated)

    assert write_specs(specs) == legacy  # the same plan again: the files it has, nothing written
    assert _plan_files(isolated) == before
    with pytest.raises(SpecConflict, match=rf"1 planned attempt\(s\).*{specs[2].attempt_id}"):
        write_specs([*specs[:2], specs[2].model_copy(update={"commit": "b" * 40})])
    assert _plan_files(isolated) == before

    more = _specs(projects=3)  # a new project beside them: packed, the old files referenced as they are
    refs = write_specs(more)
    assert refs[: len(legacy)] == legacy and all(is_packed(r) for r in refs[len(legacy) :])
    assert [read_spec(r) for r in refs] == more


def test_a_batch_that_loses_its_manifest_slot_checks_the_winner(isolated: Path, monkeypatch) -> None:
    """Two planners of one cycle at once: both read the plan before either wrote. The second to create
    its manifest finds the slot taken, reads that batch, and refuses a spec it holds otherwise (or
    references the winner's copy of the same spec)."""
    specs = _specs(projects=4)
    stale = spec_module._plan_state("2026-12", None)  # the plan as both planners saw it: empty
    first = write_specs(specs)

    with monkeypatch.context() as patched:
        patched.setattr(spec_module, "_plan_state", lambda cycle, store, base=None: stale)
        changed = [s.model_copy(update={"commit": "b" * 40}) if s.project_id == "p002" else s for s in specs]
        with pytest.raises(SpecConflict, match=r"3 planned attempt\(s\) already have another spec"):
            write_specs(changed)
        stale.next_slot, stale.packed = 1, {}
        same = [*specs, *_specs(projects=5)[len(specs) :]]
        refs = write_specs(same)
    assert refs[: len(first)] == first  # the winner's references for what it holds
    assert sorted(n for n in _plan_files(isolated) if n.startswith("manifest-")) == [
        "manifest-000001.json",
        "manifest-000002.json",
    ]
    assert [read_spec(r) for r in refs] == same
    assert [planned_spec_reference("2026-12", s.attempt_id) for s in same] == refs


def test_a_correction_and_a_reproduction_find_a_packed_spec(isolated: Path) -> None:
    from argusic.workflows.corrections import correction_spec
    from argusic.workflows.reproduce import _plan_source

    specs = _specs(projects=2)
    refs = write_specs(specs)
    rerun = correction_spec(specs[4].attempt_id)
    assert (rerun.attempt_id, rerun.rerun_of) == (f"{specs[4].attempt_id}.r1", specs[4].attempt_id)
    record = SimpleNamespace(
        attempt_id=f"{specs[4].attempt_id}.r1", cycle_id="2026-12", agent_id="readme-runner",
        project_id=specs[4].project_id, attempt_no=specs[4].attempt_no, commit=specs[4].commit,
    )  # fmt: skip
    found = _plan_source(record, isolated / "runs")
    assert found is not None and (found.url, found.where) == ("/r.git", refs[4])
    assert _plan_source(SimpleNamespace(**{**vars(record), "commit": "b" * 40}), isolated / "runs") is None
