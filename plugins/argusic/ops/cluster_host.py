"""Which "host" of the cluster this process is, and how many attempts it runs at once.

Airflow records the name of the worker that ran a task instance (its ``hostname`` column, shown in
the UI and the REST API) from ``[core] hostname_callable``. On the loopback cluster of
scripts/cluster.sh every worker runs on the same machine, so the machine's name would tell them
apart from nothing: each worker is given its own name in ``ARGUSIC_HOSTNAME`` and
``AIRFLOW__CORE__HOSTNAME_CALLABLE=argusic.ops.cluster_host.hostname`` makes Airflow record it. On real
hosts without that variable, the fully qualified domain name is what Airflow records by default.

``python -m argusic.ops.cluster_host concurrency`` prints the attempt concurrency of this host (the
script passes it to ``airflow celery worker --concurrency``).
"""

from __future__ import annotations

import math
import os
import re
import socket
import sys

from argusic.core.settings import orchestrator_config

HOSTNAME_ENV = "ARGUSIC_HOSTNAME"
# A DNS label-like name (letters, digits, dot, dash, underscore): it lands in the metadata DB, log
# paths and Celery node names, so anything else is refused rather than recorded.
_HOSTNAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,62})$")


def hostname() -> str:
    """ARGUSIC_HOSTNAME (checked), else socket.getfqdn() as Airflow's default callable does."""
    name = os.environ.get(HOSTNAME_ENV)
    if name is None or name == "":
        return socket.getfqdn()
    if not _HOSTNAME.fullmatch(name):
        raise ValueError(
            f"{HOSTNAME_ENV}={name!r} is not a host name: expected 1-63 letters, digits, '.', '-' "
            "or '_', starting with a letter or digit"
        )
    return name


def host_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or taskset limits)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def attempt_concurrency(cores: int | None = None, cpus_per_attempt: float | None = None) -> int:
    """How many attempts a worker host runs at once: its cores over the CPUs one attempt container
    gets (orchestrator.toml ``[container] cpus``), rounded down, at least 1."""
    cores = host_cores() if cores is None else cores
    cpus = orchestrator_config().container_cpus if cpus_per_attempt is None else cpus_per_attempt
    if cores < 1:
        raise ValueError(f"cores must be at least 1, got {cores}")
    if not math.isfinite(cpus) or cpus <= 0:
        raise ValueError(f"cpus per attempt must be a positive number, got {cpus}")
    # The small epsilon keeps 3 cores / 0.1 CPU from flooring to 29 through float error.
    return max(1, math.floor(cores / cpus + 1e-9))


def main(argv: list[str]) -> int:
    if argv == ["concurrency"]:
        print(attempt_concurrency())
        return 0
    if argv == ["hostname"]:
        print(hostname())
        return 0
    print("usage: python -m argusic.ops.cluster_host concurrency|hostname", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
