"""Planning at the scale of a month: `write_plan` of N attempts beside a floor measured in the same run.

A synthetic pool (N / 3 projects, one agent, three attempts a pair: 11,007 attempts by default, a
month's board) is planned by `argusic.cycle.plan.write_plan` into a scratch runs folder, three ways:

* ``local``: one machine (no runs store): the spec files only;
* ``file``: a runs store on the local disk (``ARGUSIC_RUNS_URL=file://…``);
* ``s3``: a runs store on moto's S3 server (a real S3 protocol endpoint on 127.0.0.1, started in a
  process of its own), or on `--s3-endpoint` (e.g. the stack's MinIO).

Each is timed for the first plan and for a rerun (idempotent: nothing written again), and compared
with its floor: the same bytes (every spec, concatenated) written as one file (local, file) or put as
one object (s3). The plan's specs go into content-addressed packs with one manifest a batch
(argusic.core.spec.write_specs): a few dozen objects for a month, not one per attempt. The table gives
the planning process's CPU seconds and, for moto's server started here, the server's own (a Python
stand-in for S3: what it spends is not the plan's), then `read s`: every spec read back through
read_spec as ingest reads the plan, on another host (a fresh runs folder, nothing in memory).
``--one-by-one`` also times the former way (one `write_spec` per attempt: a read and a
put each) on the same stores, for the before/after figures. Timings on a shared machine are noisy: read
the ratios.

Usage: .venv/bin/python scripts/bench_plan.py [--attempts 11007] [--stores local,file,s3] [--one-by-one]
       [--s3-endpoint http://host:9000 with AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY set]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _pool(folder: Path, projects: int, cycle: str) -> Path:
    from argusic.sources.pool import Pool, PoolEntry

    entries = [
        PoolEntry(
            project_id=f"p{i:05d}",
            repo_url=f"https://example.org/r{i}.git",
            commit=f"{i:040x}",
            language="python",
            difficulty="easy",
            tier="standard",
            visibility="public",
        )
        for i in range(projects)
    ]
    pool = Pool(
        cycle_id=cycle,
        cycle_starts="2026-12-01",
        cycle_ends="2026-12-31",
        catalogue_sha256="0" * 64,
        entries=entries,
        excluded={},
    )
    path = folder / f"pool-{cycle}.json"
    path.write_text(pool.model_dump_json(by_alias=True))
    return path


def _floor(kind: str, url: str | None, blob: bytes, folder: Path) -> float:
    started = time.perf_counter()
    if kind == "s3":
        from argusic.core.runs_store import RunsStore

        RunsStore(url).write("floor/all-specs.json", blob)
    else:
        target = folder / "floor-all-specs.json"
        with open(target, "wb") as handle:
            handle.write(blob)
            handle.flush()
    return time.perf_counter() - started


def _store_url(kind: str, folder: Path, s3: str | None) -> str | None:
    if kind == "local":
        return None
    if kind == "file":
        return f"file://{folder / 'store'}"
    import boto3

    bucket = f"bench-{int(time.time() * 1000) % 10**9}"
    boto3.client("s3", endpoint_url=s3).create_bucket(Bucket=bucket)
    return f"s3://{bucket}/runs"


def _cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) a process has used so far: the S3 server's share of a plan (0 when
    the server is not ours to read: --s3-endpoint)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_for(url: str) -> None:
    import urllib.request

    for _ in range(200):
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"no S3 server at {url}")


def _read_back(refs: list[str], specs: list, runs: Path) -> float:
    """Seconds to read every spec back through read_spec on another host (its own runs folder, no
    pack in memory), as ingest reads the plan; each must be the spec planned."""
    from argusic.core import spec as spec_module

    os.environ["ARGUSIC_RUNS_DIR"] = str(runs)
    getattr(spec_module, "_PACKS", {}).clear()  # packs kept parsed by this process (none before packs)
    started = time.perf_counter()
    read = [spec_module.read_spec(ref) for ref in refs]
    elapsed = time.perf_counter() - started
    assert read == specs, "a spec read back is not the spec planned"
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=11007, help="attempts planned (3 per project)")
    parser.add_argument("--stores", default="local,file,s3")
    parser.add_argument("--s3-endpoint", help="an S3 endpoint to use (default: moto's server, started here)")
    parser.add_argument("--one-by-one", action="store_true", help="also time one write_spec per attempt")
    args = parser.parse_args()
    projects = max(1, args.attempts // 3)
    kinds = [k for k in args.stores.split(",") if k]
    scratch = Path(tempfile.mkdtemp(prefix="bench-plan-"))
    server = None
    s3 = None
    rows = []
    try:
        if "s3" in kinds:
            s3 = args.s3_endpoint
            if s3 is None:  # moto's S3 server in a process of its own (not sharing this one's GIL)
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", 0))
                    port = sock.getsockname()[1]
                cmd = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
                server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                s3 = f"http://127.0.0.1:{port}"
                _wait_for(s3)
            for key, value in {
                "AWS_ENDPOINT_URL": s3,
                "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "bench"),
                "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "bench"),
                "AWS_DEFAULT_REGION": "us-east-1",
            }.items():
                os.environ[key] = value
        from argusic.core.spec import write_spec
        from argusic.cycle.plan import plan_attempts, write_plan

        ways = [("batch", None)] + ([("one by one", write_spec)] if args.one_by_one else [])
        for kind in kinds:
            for way, single in ways:
                folder = scratch / f"{kind}-{way.replace(' ', '-')}"
                folder.mkdir()
                os.environ["ARGUSIC_RUNS_DIR"] = str(folder / "runs")
                os.environ["ARGUSIC_SCRATCH_DIR"] = str(folder / "scratch")
                url = _store_url(kind, folder, s3)
                if url:
                    os.environ["ARGUSIC_RUNS_URL"] = url
                else:
                    os.environ.pop("ARGUSIC_RUNS_URL", None)
                cycle = f"2026-12-{kind}{'b' if single is None else 'o'}"
                pool = _pool(folder, projects, cycle)
                specs = plan_attempts(pool, ["readme-runner"], 3, demo=True)
                blob = b"".join((s.model_dump_json(indent=1) + "\n").encode() for s in specs)
                floor = _floor(kind, url, blob, folder)
                times = []
                cpu = time.process_time()
                server_cpu = _cpu_of(server.pid if server is not None and url and kind == "s3" else None)
                for _ in ("first", "rerun"):
                    started = time.perf_counter()
                    if single is None:
                        refs = write_plan(pool, ["readme-runner"], 3, demo=True, executor="local")
                    else:
                        write_plan(pool, ["readme-runner"], 1, demo=True, executor="local")  # the pin
                        refs = [single(s) for s in specs]
                    times.append(time.perf_counter() - started)
                    if len(times) == 1:
                        cpu = time.process_time() - cpu
                        server_cpu = (
                            _cpu_of(server.pid if server is not None and url and kind == "s3" else None)
                            - server_cpu
                        )
                assert len(refs) == len(specs), (len(refs), len(specs))
                read = _read_back(refs, specs, folder / "reader-runs")
                rows.append((kind, way, len(specs), len(blob), floor, *times, cpu, server_cpu, read))
                print(
                    f"{kind:6} {way:11} {len(specs)} specs: {times[0]:.2f} s, rerun {times[1]:.2f} s, "
                    f"read {read:.2f} s",
                    flush=True,
                )
    finally:
        if server is not None:
            server.terminate()
            server.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    print()
    print(
        f"{'store':6} {'way':11} {'specs':>6} {'MB':>6} {'floor s':>8} {'plan s':>8} {'x floor':>8} "
        f"{'rerun s':>8} {'x floor':>8} {'plan CPU s':>10} {'server CPU s':>12} {'read s':>8}"
    )
    for kind, way, n, size, floor, first, rerun, cpu, server_cpu, read in rows:
        print(
            f"{kind:6} {way:11} {n:6d} {size / 1e6:6.2f} {floor:8.3f} {first:8.2f} {first / floor:8.0f} "
            f"{rerun:8.2f} {rerun / floor:8.0f} {cpu:10.2f} {server_cpu:12.2f} {read:8.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
