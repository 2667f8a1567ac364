"""Private-pool rotation over a year (methodology section 6, issue #32): popularity windows by calendar
month that tile the calendar, no project private twice (never two cycles running, never after its
reveal), shortfalls reported with the rotation's reasons, the history read from the recorded pools, and
a draw that depends only on the catalogue and the earlier pools."""

from __future__ import annotations

import json
import subprocess
from collections import Counter, defaultdict
from datetime import date, timedelta
from pathlib import Path

import pytest
from argusic.sources.pool import (
    ALREADY_REVEALED,
    PRIVATE_LAST_CYCLE,
    CatalogueError,
    Pool,
    PoolSelection,
    cycle_window,
    draw_pool,
    load_pool_history,
    popularity_window,
    select_pool,
    write_pool,
)

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LANGUAGES = ["python", "go", "rust", "js", "shell"]


def candidate(pid: str, popular_since: date | str, i: int = 0, **over) -> dict:
    return {
        "project_id": pid,
        "repo_url": f"https://example.org/owner/{pid}.git",
        "commit": COMMIT,
        "language": LANGUAGES[i % len(LANGUAGES)],
        "licence": "MIT",
        "has_readme": True,
        "difficulty": ["easy", "medium", "hard"][i % 3],
        "size_mb": 1.0,
        "popular_since": str(popular_since),
    } | over


def write_catalogue(path: Path, items: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"schema": "argusic.catalogue/1", "candidates": items}))
    return path


def months(first_cycle: str, n: int) -> list[str]:
    start, _ = cycle_window(first_cycle)
    out = []
    for _ in range(n):
        out.append(f"{start.year:04d}-{start.month:02d}")
        start = cycle_window(out[-1])[1] + timedelta(days=1)
    return out


# --- windows -------------------------------------------------------------------------------------------


def test_windows_are_the_calendar_month_before_and_tile_the_calendar() -> None:
    cycles = months("2026-01", 60)  # five years: 28- and 29-day Februaries, 30- and 31-day months
    windows = [popularity_window(c) for c in cycles]
    covered = Counter()
    for first, last in windows:
        assert first.day == 1 and (last + timedelta(days=1)).day == 1  # a whole calendar month
        day = first
        while day <= last:
            covered[day] += 1
            day += timedelta(days=1)
    for (_, last), (first, _) in zip(windows, windows[1:], strict=False):
        assert first == last + timedelta(days=1)  # no gap, no overlap
    span_first, span_last = windows[0][0], windows[-1][1]
    assert len(covered) == (span_last - span_first).days + 1 and set(covered.values()) == {1}
    lengths = {(last - first).days + 1 for first, last in windows}
    assert lengths == {28, 29, 30, 31}
    assert popularity_window("2027-03") == (date(2027, 2, 1), date(2027, 2, 28))
    assert popularity_window("2028-03-demo") == (date(2028, 2, 1), date(2028, 2, 29))
    assert popularity_window("2027-01") == (date(2026, 12, 1), date(2026, 12, 31))
    # Each window ends the day before its cycle starts.
    for cycle, (_, last) in zip(cycles, windows, strict=True):
        assert last + timedelta(days=1) == cycle_window(cycle)[0]


def test_the_window_edges_decide(tmp_path) -> None:
    """2026-02-28 is recent for 2026-03 only; 2026-03-01 for 2026-04 only (a fixed 30 days before
    2026-03-01 started on 2026-01-30 and so counted late January twice)."""
    items = [candidate(f"e{i}", "2025-01-01", i) for i in range(8)]
    items += [candidate("feb28", "2026-02-28"), candidate("mar01", "2026-03-01", 1)]
    items += [candidate("jan30", "2026-01-30", 2)]
    path = write_catalogue(tmp_path / "c.json", items)
    assert {e.project_id for e in select_pool(path, "2026-03").private} == {"feb28"}
    assert {e.project_id for e in select_pool(path, "2026-04").private} == {"mar01"}
    assert {e.project_id for e in select_pool(path, "2026-02").private} == {"jan30"}
    march = draw_pool(path, "2026-03")
    assert march.popularity_window == (date(2026, 2, 1), date(2026, 2, 28))
    assert march.pool.excluded["mar01"] == "gained popularity after the cycle starts"
    assert "jan30" not in {e.project_id for e in march.pool.private}  # popular in January: public now


# --- a year of cycles ----------------------------------------------------------------------------------


RECENT_PER_MONTH = [3, 2, 0, 4, 1, 3, 0, 2, 3, 1, 2, 2]  # recently popular candidates per window month


def base_catalogue(cycles: list[str]) -> list[dict]:
    """16 projects popular long ago, and for each cycle's window month a few popular in it, on the
    first day, the last day (the 28th, 29th, 30th or 31st) and days between; two popular after the
    year (never drawn)."""
    items = [candidate(f"old{i:02d}", date(2024, 1 + i % 12, 1 + i), i) for i in range(16)]
    for index, cycle in enumerate(cycles):
        first, last = popularity_window(cycle)
        days = [first, last, first + timedelta(days=14), last - timedelta(days=1)]
        for k in range(RECENT_PER_MONTH[index]):
            items.append(candidate(f"new{first:%Y%m}-{k}", days[k], index + k))
    after = cycle_window(cycles[-1])[1] + timedelta(days=1)
    items += [candidate("later0", after), candidate("later1", after + timedelta(days=40), 1)]
    return items


def catalogue_for(index: int, cycle: str, base: list[dict], history: list[Pool]) -> list[dict]:
    """The catalogue as refreshed for `cycle`: in two months of three, every project that was private
    before gained popularity again (its popular_since re-measured into this cycle's window), the
    adversarial case the rotation must refuse; in the third, the catalogue keeps its first dates (so
    projects revealed earlier are public candidates again)."""
    if index % 3 == 2:
        return base
    _, last = popularity_window(cycle)
    earlier_private = {e.project_id for p in history for e in p.private}
    return [c | {"popular_since": str(last)} if c["project_id"] in earlier_private else c for c in base]


def draw_year(
    root: Path, first_cycle: str
) -> tuple[list[str], dict[str, PoolSelection], dict[str, list[dict]]]:
    cycles = months(first_cycle, 12)
    base = base_catalogue(cycles)
    pools_dir, publish_dir = root / "runs" / "pools", root / "published"
    selections: dict[str, PoolSelection] = {}
    catalogues: dict[str, list[dict]] = {}
    for index, cycle in enumerate(cycles):
        history = load_pool_history(pools_dir)  # what the CLI and the DAG pass: the recorded pools
        items = catalogue_for(index, cycle, base, history)
        path = write_catalogue(root / "catalogues" / f"{cycle}.json", items)
        selection = draw_pool(path, cycle, history=history)
        again = draw_pool(path, cycle, history=load_pool_history(pools_dir))
        assert again.pool == selection.pool and again.to_json() == selection.to_json()  # deterministic
        write_pool(selection.pool, pools_dir, publish_dir)
        selections[cycle], catalogues[cycle] = selection, items
    return cycles, selections, catalogues


@pytest.mark.parametrize(
    "first_cycle",
    [
        pytest.param("2027-01", id="windows-dec-2026-to-nov-2027-feb-28-days"),
        pytest.param("2028-01", id="windows-dec-2027-to-nov-2028-leap-february"),
    ],
)
def test_a_year_of_rotations(tmp_path: Path, first_cycle: str) -> None:
    cycles, selections, catalogues = draw_year(tmp_path / "first", first_cycle)

    # The windows of the year tile it: each day of the twelve window months in exactly one window.
    windows = [selections[c].popularity_window for c in cycles]
    days = Counter()
    for first, last in windows:
        days.update(first + timedelta(days=n) for n in range((last - first).days + 1))
    assert set(days.values()) == {1}
    assert len(days) == (windows[-1][1] - windows[0][0]).days + 1
    assert {(last - first).days + 1 for first, last in windows} == {
        28 if first_cycle == "2027-01" else 29,
        30,
        31,
    }

    private_in: dict[str, list[int]] = defaultdict(list)
    public_in: dict[str, list[int]] = defaultdict(list)
    for index, cycle in enumerate(cycles):
        selection = selections[cycle]
        pool = selection.pool
        assert pool.entries and len(pool.private) == round(len(pool.entries) * 0.2)
        since = {c["project_id"]: date.fromisoformat(c["popular_since"]) for c in catalogues[cycle]}
        first, last = selection.popularity_window
        for entry in pool.private:
            assert first <= since[entry.project_id] <= last  # recently popular: in the window month
            private_in[entry.project_id].append(index)
        for entry in pool.public:
            assert since[entry.project_id] < first
            public_in[entry.project_id].append(index)

        # What the rotation had to leave out, computed here from the earlier pools alone.
        last_cycle = {e.project_id for e in selections[cycles[index - 1]].pool.private} if index else set()
        before = {e.project_id for c in cycles[: max(index - 1, 0)] for e in selections[c].pool.private}
        in_window = {pid for pid, d in since.items() if first <= d <= last}
        expected = {
            PRIVATE_LAST_CYCLE: len(last_cycle),
            ALREADY_REVEALED: len((before - last_cycle) & in_window),
        }
        assert selection.rotation_excluded == expected, cycle
        drawn = {e.project_id for e in pool.entries}
        assert not drawn & last_cycle  # private last cycle: neither private nor public now
        for pid in last_cycle:
            assert pool.excluded[pid].startswith(f"private in cycle {cycles[index - 1]}, the last cycle")
        for pid in (before - last_cycle) & in_window:
            assert "never private again" in pool.excluded[pid] and pid not in drawn
        assert selection.history == cycles[:index]

        # A shortfall is reported, never filled from those left out; its text names both reasons.
        text = "\n".join(selection.lines())
        assert (
            f"rotation: {sum(expected.values())} candidate(s) left out ({expected[PRIVATE_LAST_CYCLE]} "
            f"private last cycle, {expected[ALREADY_REVEALED]} already revealed)" in text
        )
        usable = selection.public_available + selection.recent_available
        assert (selection.shortfall is not None) == (len(pool.entries) < usable)
        if selection.shortfall and any(expected.values()):
            assert (
                f"The rotation left out {sum(expected.values())} candidate(s) "
                f"({expected[PRIVATE_LAST_CYCLE]} private last cycle, {expected[ALREADY_REVEALED]} "
                "already revealed); they are not used to fill it." in selection.shortfall
            )
        report = json.loads(selection.to_json())
        assert report["rotation_excluded"] == expected and report["shortfall"] == selection.shortfall

    # No project private twice; so none in consecutive cycles, none after its reveal.
    assert all(len(indexes) == 1 for indexes in private_in.values()), private_in
    for pid, (index,) in private_in.items():
        assert index + 1 not in public_in[pid]  # its cycle's private part was still sealed
    assert len(private_in) >= 12  # the private part really drew every month's newcomers
    # The adversarial catalogue really tried, and a thin month's shortfall named both reasons.
    totals = Counter()
    for selection in selections.values():
        totals.update(selection.rotation_excluded)
    assert totals[PRIVATE_LAST_CYCLE] > 0 and totals[ALREADY_REVEALED] > 0
    thin = [c for i, c in enumerate(cycles) if RECENT_PER_MONTH[i] == 0]
    for cycle in thin:
        selection = selections[cycle]
        assert not selection.pool.private and selection.recent_available == 0
        assert selection.shortfall and "0 recently popular candidate(s)" in selection.shortfall
    assert any(selections[c].shortfall and all(selections[c].rotation_excluded.values()) for c in thin), (
        "a thin month with both reasons"
    )
    # Projects revealed earlier come back as public candidates, and some are drawn.
    assert any(public_in[pid] and public_in[pid][-1] > index + 1 for pid, (index,) in private_in.items())

    # The same inputs give the same year, file for file.
    _, again, _ = draw_year(tmp_path / "second", first_cycle)
    for cycle in cycles:
        assert again[cycle].pool == selections[cycle].pool
        first_file = tmp_path / "first" / "runs" / "pools" / cycle / "pool.json"
        second_file = tmp_path / "second" / "runs" / "pools" / cycle / "pool.json"
        assert first_file.read_bytes() == second_file.read_bytes()


def test_a_revealed_project_may_be_public_later_but_not_the_month_after(tmp_path: Path) -> None:
    items = [candidate(f"e{i}", "2025-01-01", i) for i in range(8)] + [candidate("star", "2026-11-10")]
    path = write_catalogue(tmp_path / "c.json", items)
    pools_dir, pub = tmp_path / "pools", tmp_path / "pub"
    december = select_pool(path, "2026-12", size=5)
    assert [e.project_id for e in december.private] == ["star"]
    write_pool(december, pools_dir, pub)
    january = draw_pool(path, "2027-01", history=load_pool_history(pools_dir))
    assert "star" not in {e.project_id for e in january.pool.entries}
    assert january.rotation_excluded == {PRIVATE_LAST_CYCLE: 1, ALREADY_REVEALED: 0}
    write_pool(january.pool, pools_dir, pub)
    february = draw_pool(path, "2027-02", history=load_pool_history(pools_dir))
    # revealed: a public candidate like any other (drawn or not, by the seeded order)
    assert "star" not in february.pool.excluded
    assert "star" in {e.project_id for e in february.pool.public} | set(february.not_drawn)
    assert february.public_available == 9
    assert february.rotation_excluded == {PRIVATE_LAST_CYCLE: 0, ALREADY_REVEALED: 0}
    # Popular again in February's window: never private again, and not filled from.
    again = write_catalogue(tmp_path / "c2.json", [*items[:-1], candidate("star", "2027-02-03")])
    march = draw_pool(again, "2027-03", history=load_pool_history(pools_dir))
    assert march.pool.excluded["star"] == (
        "private in cycle 2026-12, revealed after it ended on 2026-12-31: never private again"
    )
    assert not march.pool.private and march.rotation_excluded == {PRIVATE_LAST_CYCLE: 0, ALREADY_REVEALED: 1}
    assert "1 already revealed" in (march.shortfall or "")
    # The same month's other pools (a trial, a -b) are alternatives of the cycle, not its history;
    # later months' pools are not history either.
    trial = select_pool(path, "2026-12-trial", size=5, history=load_pool_history(pools_dir))
    assert [e.project_id for e in trial.private] == ["star"]


def test_an_explicit_size_the_rotation_cannot_fill_is_refused_with_the_counts(tmp_path: Path) -> None:
    items = [candidate(f"e{i}", "2025-01-01", i) for i in range(8)] + [candidate("star", "2026-11-10")]
    path = write_catalogue(tmp_path / "c.json", items)
    write_pool(select_pool(path, "2026-12", size=5), tmp_path / "pools", tmp_path / "pub")
    again = write_catalogue(tmp_path / "c2.json", [*items[:-1], candidate("star", "2026-12-20")])
    with pytest.raises(CatalogueError) as refused:
        select_pool(again, "2027-01", size=5, history=load_pool_history(tmp_path / "pools"))
    text = str(refused.value)
    assert "allow at most 2" in text
    assert "rotation: 1 candidate(s) left out (1 private last cycle, 0 already revealed)" in text
    assert "earlier pools read: 2026-12" in text
    assert "star: private in cycle 2026-12, the last cycle" in text


# --- bad history ---------------------------------------------------------------------------------------


def _recorded(tmp_path: Path) -> Path:
    items = [candidate(f"e{i}", "2025-01-01", i) for i in range(8)] + [candidate("star", "2026-11-10")]
    path = write_catalogue(tmp_path / "c.json", items)
    write_pool(select_pool(path, "2026-12", size=5), tmp_path / "pools", tmp_path / "pub")
    return path


def test_an_invalid_pool_file_is_an_error_naming_it(tmp_path: Path) -> None:
    _recorded(tmp_path)
    bad = tmp_path / "pools" / "2026-10" / "pool.json"
    bad.parent.mkdir()
    bad.write_text('{"schema": "argusic.pool/1", "cycle_id": "2026-10"')
    with pytest.raises(CatalogueError, match=rf"earlier pool {bad} is not a valid pool"):
        load_pool_history(tmp_path / "pools")
    bad.write_bytes(b"\xff\xfe not utf-8")
    with pytest.raises(CatalogueError, match=rf"earlier pool {bad} is not a valid pool"):
        load_pool_history(tmp_path / "pools")


def test_an_unreadable_pool_file_is_an_error_naming_it(tmp_path: Path) -> None:
    _recorded(tmp_path)
    bad = tmp_path / "pools" / "2026-11" / "pool.json"
    bad.mkdir(parents=True)  # a folder where the file should be: cannot be read, whoever runs this
    with pytest.raises(CatalogueError, match=rf"earlier pool {bad} cannot be read"):
        load_pool_history(tmp_path / "pools")
    bad.rmdir()
    bad.symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(CatalogueError, match=rf"earlier pool {bad} cannot be read"):
        load_pool_history(tmp_path / "pools")


def test_a_pool_in_another_cycles_folder_is_an_error_naming_it(tmp_path: Path) -> None:
    _recorded(tmp_path)
    moved = tmp_path / "pools" / "2026-09" / "pool.json"
    moved.parent.mkdir()
    moved.write_text((tmp_path / "pools" / "2026-12" / "pool.json").read_text())
    with pytest.raises(CatalogueError, match=rf"earlier pool {moved} is the pool of cycle '2026-12'"):
        load_pool_history(tmp_path / "pools")


def test_folders_without_a_pool_are_not_history(tmp_path: Path) -> None:
    _recorded(tmp_path)
    (tmp_path / "pools" / "scratch").mkdir()
    assert [p.cycle_id for p in load_pool_history(tmp_path / "pools")] == ["2026-12"]
    assert load_pool_history(tmp_path / "no-pools-yet") == []


# --- the callers: the pools folder is the history ------------------------------------------------------


def _bare_repo(root: Path) -> tuple[Path, str]:
    work, bare = root / "work", root / "repo.git"
    work.mkdir(parents=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    (work / "README.md").write_text("# r\n")
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-q", "-m", "r"], check=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    commit = subprocess.run(
        ["git", "-C", str(bare), "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()
    return bare, commit


def test_the_cli_draws_with_the_pools_folder_as_history(isolated: Path, monkeypatch) -> None:
    from argusic.cli.main import app
    from argusic.core.layout import pools_dir
    from typer.testing import CliRunner

    repo, commit = _bare_repo(isolated / "repos")
    monkeypatch.setenv("ARGUSIC_REPO_ROOTS", str(isolated / "repos"))
    local = {"repo_url": str(repo), "commit": commit}
    items = [candidate(f"e{i}", "2025-01-01", i, **local) for i in range(8)]
    items.append(candidate("star", "2026-11-10", **local))
    december = write_catalogue(isolated / "december.json", items)
    runner = CliRunner()
    result = runner.invoke(app, ["pool", "--cycle", "2026-12", "--catalogue", str(december), "--size", "5"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())  # the console wraps long lines
    assert "rotation: 0 candidate(s) left out" in output and "no earlier pool recorded" in output
    january = write_catalogue(
        isolated / "january.json", [*items[:-1], candidate("star", "2026-12-24", **local)]
    )
    result = runner.invoke(app, ["pool", "--cycle", "2027-01", "--catalogue", str(january)])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "rotation: 1 candidate(s) left out (1 private last cycle, 0 already revealed)" in output
    assert "earlier pools read: 2026-12" in output
    assert "excluded star: private in cycle 2026-12, the last cycle" in output
    assert "The rotation left out 1 candidate(s)" in output  # the shortfall says why it is smaller
    report = json.loads((pools_dir() / "2027-01" / "selection.json").read_text())
    assert report["rotation_excluded"] == {PRIVATE_LAST_CYCLE: 1, ALREADY_REVEALED: 0}
    assert report["history"] == ["2026-12"]
    assert "star" not in (isolated / "published" / "2027-01" / "public_pool.json").read_text()
    # A damaged earlier pool stops the next draw with the file's name, before anything is fetched.
    (pools_dir() / "2026-12" / "pool.json").write_text("{}")
    result = runner.invoke(app, ["pool", "--cycle", "2027-02", "--catalogue", str(january)])
    assert result.exit_code == 2
    assert str(pools_dir() / "2026-12" / "pool.json") in "".join(result.output.split())
    assert "is not a valid pool" in " ".join(result.output.split())
    assert not (pools_dir() / "2027-02").exists()
