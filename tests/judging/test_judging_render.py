"""argusic.judging.render: pages rendered in headless Chromium inside the locked rendering container.

The slow tests need Docker and the image of `make render-image` (scripts/build_render_image.sh); the
refusals (links, oversize, outside the folder) are decided before any container and run everywhere."""

from __future__ import annotations

import io
import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from argusic.judging import render
from argusic.judging.render import PageRender, render_pages

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "judging" / "html"
PAGES = (
    "clean.html",
    "canvas_only.html",
    "console_errors.html",
    "many_errors.html",
    "empty.html",
    "broken_script.html",
    "loop_forever.html",
    "raf_loop.html",
    "network.html",
)
PAGE_SECONDS = 8.0  # shorter than the default so the two endless pages do not make the test long


def _docker_and_image() -> str | None:
    try:
        import docker

        image = docker.from_env().images.get(render.render_image())
    except Exception as err:  # noqa: BLE001 - any reason to skip is named
        return f"render image {render.render_image()} unavailable ({err}): run `make render-image`"
    if (image.labels or {}).get(render.RENDER_LAYOUT_LABEL) != render.RENDER_LAYOUT:
        return f"render image {render.render_image()} has an old layout: run `make render-image`"
    return None


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PageRender]:
    if why := _docker_and_image():
        pytest.skip(why)
    artifacts = tmp_path_factory.mktemp("artifacts")
    shutil.copytree(FIXTURES, artifacts, dirs_exist_ok=True)
    out = tmp_path_factory.mktemp("shots")
    results = render_pages(
        [artifacts / name for name in PAGES],
        out_dir=out,
        timeout_seconds=PAGE_SECONDS,
        artifacts_root=artifacts,
    )
    assert [r.path for r in results] == list(PAGES)
    return {r.path: r for r in results}


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.parametrize(
    ("page", "outcome"),
    [
        ("clean.html", "clean"),
        ("canvas_only.html", "clean"),
        ("console_errors.html", "console_errors"),
        ("many_errors.html", "console_errors"),
        ("empty.html", "not_rendered"),
        ("broken_script.html", "not_rendered"),
        ("loop_forever.html", "timeout"),
        ("raf_loop.html", "timeout"),
    ],
)
def test_each_page_gets_its_outcome(rendered: dict[str, PageRender], page: str, outcome: str) -> None:
    result = rendered[page]
    assert result.outcome == outcome, result
    if outcome == "clean":
        assert result.console_errors == ()  # console.log and console.warn are not errors


@pytest.mark.slow
@pytest.mark.docker
def test_console_errors_are_captured_and_capped(rendered: dict[str, PageRender]) -> None:
    errors = rendered["console_errors.html"].console_errors
    assert any("explicit console.error from the page" in e for e in errors), errors
    assert any("undefinedFunctionCall" in e for e in errors), errors  # uncaught ReferenceError
    assert any("uncaught after a tick" in e for e in errors), errors  # thrown from a timer
    many = rendered["many_errors.html"]
    assert len(many.console_errors) == render.MAX_ERRORS
    assert all(len(e) <= render.MAX_ERROR_CHARS for e in many.console_errors)
    assert "more console errors not kept" in many.detail


@pytest.mark.slow
@pytest.mark.docker
def test_screenshots_are_real_pngs_at_three_moments(rendered: dict[str, PageRender]) -> None:
    from PIL import Image

    for page in ("clean.html", "canvas_only.html", "console_errors.html", "empty.html"):
        shots = rendered[page].screenshots
        assert [s.name.rsplit("-", 1)[1] for s in shots] == ["load.png", "1s.png", "3s.png"], shots
        for shot in shots:
            data = shot.read_bytes()
            assert data.startswith(b"\x89PNG\r\n\x1a\n")
            with Image.open(io.BytesIO(data)) as image:
                image.load()
                assert image.size[0] > 100 and image.size[1] > 100
    # The endless loop before the load event never gets a screenshot; none is invented.
    assert rendered["loop_forever.html"].screenshots == ()


@pytest.mark.slow
@pytest.mark.docker
def test_no_network_inside_the_container(rendered: dict[str, PageRender]) -> None:
    result = rendered["network.html"]
    # Whether a refused request is a console error is Chromium's call; a response never comes.
    assert result.outcome in ("clean", "console_errors"), result
    assert not any("NETWORK REACHED" in e for e in result.console_errors), result.console_errors


def _bridge_address() -> str | None:
    """The host's address on Docker's default bridge (what a container with a network would reach)."""
    done = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True)
    match = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", done.stdout)
    return match.group(1) if match else None


@pytest.mark.slow
@pytest.mark.docker
def test_a_listener_on_the_docker_bridge_is_never_reached(tmp_path: Path) -> None:
    if why := _docker_and_image():
        pytest.skip(why)
    if (address := _bridge_address()) is None:
        pytest.skip("no docker0 address on this host")
    with socket.socket() as listener:
        listener.bind((address, 0))
        listener.listen(8)
        listener.setblocking(False)
        url = f"http://{address}:{listener.getsockname()[1]}/"
        page = tmp_path / "probe.html"
        page.write_text(
            f'<p>probe</p><img src="{url}pixel.png"><script>fetch("{url}")'
            '.then(() => console.error("NETWORK REACHED"))</script>'
        )
        [result] = render_pages([page], out_dir=tmp_path / "shots")
        assert result.outcome in ("clean", "console_errors"), result
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody ever connected


@pytest.mark.slow
@pytest.mark.docker
def test_endless_page_alone_returns_timeout_and_the_container_was_locked_and_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if why := _docker_and_image():
        pytest.skip(why)
    from docker.models.containers import ContainerCollection

    import docker

    seen: list[dict] = []
    started: list[str] = []
    run = ContainerCollection.run

    def spy(self, image, command=None, **kwargs):
        seen.append(kwargs)
        container = run(self, image, command, **kwargs)
        started.append(container.id)
        return container

    monkeypatch.setattr(ContainerCollection, "run", spy)
    page = tmp_path / "a" / "loop.html"
    page.parent.mkdir()
    shutil.copy(FIXTURES / "loop_forever.html", page)
    [result] = render_pages([page], out_dir=tmp_path / "shots", timeout_seconds=3)
    assert (result.path, result.outcome) == ("loop.html", "timeout")
    assert "bound ran out" in result.detail
    [kwargs] = seen
    assert kwargs["network_disabled"] is True and kwargs["network_mode"] == "none"
    assert kwargs["read_only"] is True and kwargs["cap_drop"] == ["ALL"]
    assert kwargs["user"] == "10001:10001" and "no-new-privileges" in kwargs["security_opt"]
    assert kwargs["pids_limit"] and kwargs["mem_limit"] and kwargs["memswap_limit"] == kwargs["mem_limit"]
    assert {v["mode"] for v in kwargs["volumes"].values()} == {"ro"}
    assert all("noexec" in options for options in kwargs["tmpfs"].values())
    # this test's container only: other tests (run beside it by pytest-xdist) may be rendering now
    [container_id] = started
    with pytest.raises(docker.errors.NotFound):
        docker.from_env().containers.get(container_id)


@pytest.mark.slow
@pytest.mark.docker
def test_the_caller_kills_a_container_that_outlives_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver keeps its per-page bound; should it not, the caller's wait on the container ends and
    kills it. Simulated by a caller's margin that ends the wait 3 s in, long before the page's 60 s."""
    if why := _docker_and_image():
        pytest.skip(why)
    page_seconds = 60.0
    life = int((render.START_SECONDS + page_seconds + 5) + 10)
    monkeypatch.setattr(render, "CONTAINER_MARGIN_SECONDS", 3 - life)
    page = tmp_path / "loop.html"
    shutil.copy(FIXTURES / "loop_forever.html", page)
    [result] = render_pages([page], out_dir=tmp_path / "shots", timeout_seconds=page_seconds)
    assert result.outcome == "timeout"
    assert "killed" in result.detail, result.detail


# Refusals: decided on the host before any container starts (no Docker needed).


def test_symlinked_page_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "secret.html"
    outside.write_text("<p>not an artifact</p>")
    artifacts = tmp_path / "artifacts"
    (artifacts / "real").mkdir(parents=True)
    (artifacts / "index.html").symlink_to(outside)
    (artifacts / "linked").symlink_to(artifacts / "real")
    (artifacts / "real" / "page.html").write_text("<p>hi</p>")
    results = render_pages(
        [artifacts / "index.html", artifacts / "linked" / "page.html"],
        out_dir=tmp_path / "shots",
        artifacts_root=artifacts,
    )
    assert [(r.path, r.outcome) for r in results] == [
        ("index.html", "not_rendered"),
        ("linked/page.html", "not_rendered"),
    ]
    assert "index.html is a symbolic link" in results[0].detail
    assert "symbolic link" in results[1].detail
    assert all(r.screenshots == () and r.detail.startswith("refused:") for r in results)


def test_a_linked_artifacts_folder_is_refused(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / "index.html").write_text("<p>hi</p>")
    (tmp_path / "artifacts").symlink_to(real)
    [result] = render_pages(
        [tmp_path / "artifacts" / "index.html"],
        out_dir=tmp_path / "shots",
        artifacts_root=tmp_path / "artifacts",
    )
    assert result.outcome == "not_rendered"
    assert "is a symbolic link" in result.detail and result.detail.startswith("refused:")


def test_oversize_special_and_outside_pages_are_refused(tmp_path: Path) -> None:
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    big = artifacts / "big.html"
    with big.open("wb") as handle:
        handle.truncate(render.MAX_PAGE_BYTES + 1)
    fifo = artifacts / "pipe.html"
    os.mkfifo(fifo)
    linked = artifacts / "twice.html"
    linked.write_text("<p>two names</p>")
    os.link(linked, artifacts / "twice-again.html")
    elsewhere = tmp_path / "elsewhere.html"
    elsewhere.write_text("<p>x</p>")
    results = render_pages(
        [big, fifo, linked, artifacts / "missing.html", elsewhere, artifacts / ".." / "elsewhere.html"],
        out_dir=tmp_path / "shots",
        artifacts_root=artifacts,
    )
    assert all(r.outcome == "not_rendered" and r.detail.startswith("refused:") for r in results), results
    big_r, fifo_r, linked_r, missing_r, outside_r, dotdot_r = results
    assert f"over the {render.MAX_PAGE_BYTES} byte cap" in big_r.detail
    assert "not a regular file" in fifo_r.detail
    assert "2 hard links" in linked_r.detail
    assert "cannot open" in missing_r.detail
    assert "outside the artifacts folder" in outside_r.detail
    assert "outside the artifacts folder" in dotdot_r.detail


def test_caps_on_the_call(tmp_path: Path) -> None:
    assert render_pages([], out_dir=tmp_path) == []
    with pytest.raises(ValueError, match="at most 50"):
        render_pages([tmp_path / f"{i}.html" for i in range(51)], out_dir=tmp_path)
    with pytest.raises(ValueError, match="positive"):
        render_pages([tmp_path / "a.html"], out_dir=tmp_path, timeout_seconds=0)


def test_only_long_finished_rendering_containers_are_swept() -> None:
    """A container a dead caller left behind is removed; one a live caller is still reading is not."""
    from datetime import UTC, datetime, timedelta

    class Fake:
        def __init__(self, finished: str) -> None:
            self.attrs = {"State": {"FinishedAt": finished}}
            self.removed = False

        def remove(self, force: bool = False) -> None:
            self.removed = True

    now = datetime.now(UTC)
    old = Fake((now - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S.123456789Z"))
    recent = Fake((now - timedelta(seconds=5)).strftime("%Y-%m-%dT%H:%M:%S.123456789Z"))
    garbled = Fake("not a time")
    asked: list[dict] = []

    class Containers:
        def list(self, all: bool, filters: dict) -> list[Fake]:  # noqa: A002 - the SDK's name
            asked.append(filters)
            return [old, recent, garbled]

    class Client:
        containers = Containers()

    render._sweep_finished(Client())
    assert asked == [{"label": render.CONTAINER_LABEL, "status": "exited"}]
    assert (old.removed, recent.removed, garbled.removed) == (True, False, False)
