"""Settings: environment variables with embedded defaults, and the orchestrator configuration."""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # plugins/argusic (this file is in core/)


def project_root() -> Path:
    """The checkout the package runs from (plugins/argusic/../..), or ARGUSIC_HOME."""
    if home := os.environ.get("ARGUSIC_HOME"):
        return Path(home).resolve()
    return PACKAGE_DIR.parent.parent


@dataclass(frozen=True)
class OrchestratorConfig:
    methodology_version: str
    budgets_minutes: dict[str, int]
    per_run_key_limit_usd: float
    heavy_repo_size_mb: int
    attempts_per_pair: int
    max_reruns: int
    container_cpus: float
    container_memory: str
    container_pids_limit: int
    # Containment (README "Threat model"): size caps of the writable places, network, watchdog grace.
    container_out_bytes: int = 3 * 1024**3
    container_work_bytes: int = 16 * 1024**3
    container_shm_bytes: int = 64 * 1024**2
    container_network: str = "none"  # a real cycle's attempts ("section7": argusic.sandbox.attempt_network)
    container_demo_network: str = "none"  # a demo's, or a scaled cycle's
    network_allow_host_ports: tuple[int, ...] = ()
    network_blocked: tuple[str, ...] = ()
    network_allow: tuple[str, ...] = ()
    network_pip_index_url: str = ""  # "": pip's default (PyPI)
    network_npm_registry: str = ""  # "": npm's default (registry.npmjs.org)
    watchdog_grace_seconds: int = 10
    # Landing /out: caps on what the orchestrator copies out of a finished container.
    landing_max_file_bytes: int = 1536 * 1024**2
    landing_max_total_bytes: int = 3 * 1024**3
    landing_max_entries: int = 4096
    # Landing artifacts (the project folder's files matching the task's globs): caps of their own.
    landing_artifacts_max_file_bytes: int = 5 * 1024**2
    landing_artifacts_max_total_bytes: int = 20 * 1024**2
    landing_artifacts_max_files: int = 200
    # The attempt container's virtual display, WIDTHxHEIGHTxDEPTH.
    display_size: str = "1280x800x24"

    def budget_seconds(self, tier: str) -> int:
        if tier not in self.budgets_minutes:
            raise ValueError(f"unknown tier {tier!r}; expected one of {sorted(self.budgets_minutes)}")
        return self.budgets_minutes[tier] * 60


@cache
def orchestrator_config(path: str | None = None) -> OrchestratorConfig:
    """Read plugins/argusic/orchestrator.toml (the values the methodology guards compare)."""
    config_path = Path(path) if path else PACKAGE_DIR / "orchestrator.toml"
    data = tomllib.loads(config_path.read_text())
    return OrchestratorConfig(
        methodology_version=str(data["methodology_version"]),
        budgets_minutes={k: int(v) for k, v in data["budgets_minutes"].items()},
        per_run_key_limit_usd=float(data["keys"]["per_run_limit_usd"]),
        heavy_repo_size_mb=int(data["tiers"]["heavy_repo_size_mb"]),
        attempts_per_pair=int(data["attempts"]["per_pair"]),
        max_reruns=int(data["attempts"]["max_reruns"]),
        container_cpus=float(data["container"]["cpus"]),
        container_memory=str(data["container"]["memory"]),
        container_pids_limit=int(data["container"]["pids_limit"]),
        container_out_bytes=parse_size(data["container"]["out_size"]),
        container_work_bytes=parse_size(data["container"]["work_size"]),
        container_shm_bytes=parse_size(data["container"]["shm_size"]),
        container_network=str(data["container"]["network"]),
        container_demo_network=str(data["container"].get("demo_network", "none")),
        network_allow_host_ports=tuple(int(p) for p in data.get("network", {}).get("allow_host_ports", [])),
        network_blocked=tuple(str(c) for c in data.get("network", {}).get("blocked", [])),
        network_allow=tuple(str(c) for c in data.get("network", {}).get("allow", [])),
        network_pip_index_url=str(data.get("network", {}).get("pip_index_url", "")),
        network_npm_registry=str(data.get("network", {}).get("npm_registry", "")),
        watchdog_grace_seconds=int(data["container"]["watchdog_grace_seconds"]),
        landing_max_file_bytes=parse_size(data["landing"]["max_file_size"]),
        landing_max_total_bytes=parse_size(data["landing"]["max_total_size"]),
        landing_max_entries=int(data["landing"]["max_entries"]),
        landing_artifacts_max_file_bytes=parse_size(data["landing"].get("artifacts_max_file_size", "5m")),
        landing_artifacts_max_total_bytes=parse_size(data["landing"].get("artifacts_max_total_size", "20m")),
        landing_artifacts_max_files=int(data["landing"].get("artifacts_max_files", 200)),
        display_size=str(data.get("display", {}).get("size", "1280x800x24")),
    )


_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def parse_size(text: str | int) -> int:
    """Bytes from "512", "64m", "3g", "1536MiB" (binary multiples, as Docker reads "2g")."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"size {text!r}: expected a number of bytes with an optional k, m, g or t suffix")
    return int(match.group(1)) * 1024 ** "_kmgt".index((match.group(2) or "_").lower())


def warehouse_path() -> Path:
    """ARGUSIC_WAREHOUSE: the DuckDB file."""
    return Path(os.environ.get("ARGUSIC_WAREHOUSE", project_root() / "warehouse" / "argusic.duckdb"))


ANALYST_DIR_ENV = "ARGUSIC_ANALYST_DIR"


def analyst_dir(db_path: Path | None = None) -> Path:
    """ARGUSIC_ANALYST_DIR, else ``analyst/`` beside the warehouse file (``warehouse/analyst/``).
    Here rather than in warehouse.analyst so that the build worker's client needs nothing else."""
    if configured := os.environ.get(ANALYST_DIR_ENV, "").strip():
        return Path(configured)
    return Path(db_path or warehouse_path()).parent / "analyst"


def evidence_url() -> str:
    """ARGUSIC_EVIDENCE_URL: file://…/evidence_store (default) or s3://bucket/prefix."""
    return os.environ.get("ARGUSIC_EVIDENCE_URL", (project_root() / "evidence_store").as_uri())


def runs_dir() -> Path:
    """ARGUSIC_RUNS_DIR: per-attempt working folders and run records (runs/<cycle_id>/<attempt_id>/)."""
    return Path(os.environ.get("ARGUSIC_RUNS_DIR", project_root() / "runs"))


def runner_image() -> str:
    return os.environ.get("ARGUSIC_RUNNER_IMAGE", "argusic-runner:bookworm")


def agents_image() -> str:
    """ARGUSIC_AGENTS_IMAGE: the image with the external agent CLIs (scripts/build_agents_image.sh)."""
    return os.environ.get("ARGUSIC_AGENTS_IMAGE", "argusic-agents:bookworm")


def code_root() -> Path:
    """The checkout holding the code (dbt project, agents registry), whatever ARGUSIC_HOME says."""
    return PACKAGE_DIR.parent.parent


def dbt_project_dir() -> Path:
    return Path(os.environ.get("ARGUSIC_DBT_PROJECT", code_root() / "dbt_project"))


def forge_dir() -> Path:
    """ARGUSIC_FORGE_DIR: where the demo forge (fixture git repos + catalogue) is built."""
    return Path(os.environ.get("ARGUSIC_FORGE_DIR", project_root() / "forge"))


INSTALLATION_ENV = "ARGUSIC_INSTALLATION"
_INSTALLATION_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,23}$")


def installation_id() -> str:
    """ARGUSIC_INSTALLATION, or a short digest of where this installation keeps its warehouse and
    evidence. Every container, temp folder and model key carries it, and clean-up touches only objects
    that carry ours: two installations on one Docker daemon or one gateway never touch each other."""
    if explicit := os.environ.get(INSTALLATION_ENV):
        if not _INSTALLATION_ID.match(explicit):
            raise ValueError(
                f"{INSTALLATION_ENV}={explicit!r}: expected 1-24 characters of a-z, 0-9 and '-', "
                "starting with a letter or digit"
            )
        return explicit
    where = f"{warehouse_path().resolve()}\n{evidence_url()}"
    return "i" + hashlib.sha256(where.encode()).hexdigest()[:11]


def scratch_root() -> Path:
    """ARGUSIC_SCRATCH_DIR: this installation's temporary folders (default: <runs>/.scratch).

    Kept beside the runs rather than in /tmp so that a process killed with SIGKILL leaves nothing in
    shared places; a later run of the same installation sweeps folders whose owner process is gone."""
    return Path(os.environ.get("ARGUSIC_SCRATCH_DIR", runs_dir() / ".scratch"))


PUBLIC_EVIDENCE_BASE_ENV = "ARGUSIC_PUBLIC_EVIDENCE_BASE"


def public_evidence_base() -> str | None:
    """ARGUSIC_PUBLIC_EVIDENCE_BASE: the public https:// (or http://) address under which the served
    copies are published with the store's layout (``<base>/served/<attempt id>/<sha256>/log.txt``).

    Unset: the published files link the copies the site holds, by relative links. Never a file://
    or s3:// address (those name this machine's or the operator's store, not a public place)."""
    base = _public_address(
        PUBLIC_EVIDENCE_BASE_ENV,
        r"https?://[^\s\"'<>\\]+",
        "a public http(s):// address (no spaces or quotes); leave it unset to link the site's own copies",
    )
    return None if base is None else base.rstrip("/") + "/"


VIEWER_URL_ENV = "ARGUSIC_VIEWER_URL"


def viewer_url() -> str | None:
    """ARGUSIC_VIEWER_URL: the evidence viewer's http(s) address as the people reading forms and task
    logs reach it, e.g. ``http://127.0.0.1:8080/argusic`` (the Airflow API server's base URL and the
    viewer plugin's prefix: docs/airflow.md, "Evidence viewer"), without a trailing slash.

    Unset: forms and log lines show an evidence URI as text to copy, as before there was a server."""
    base = _public_address(
        VIEWER_URL_ENV,
        r"https?://[^\s\"'<>\\()\[\]`]+",
        "an http(s):// address (no spaces, quotes or brackets); leave it unset to show evidence as text",
    )
    return None if base is None else base.rstrip("/")


def _public_address(env: str, pattern: str, expected: str) -> str | None:
    """The address setting `env` (None when unset or blank), refused with ValueError naming it and
    what was `expected` unless it matches `pattern` whole: it goes into public pages as a link."""
    value = os.environ.get(env, "").strip()
    if value and not re.fullmatch(pattern, value):
        raise ValueError(f"{env}={value!r}: expected {expected}")
    return value or None


DISPUTE_ADDRESS_ENV = "ARGUSIC_DISPUTE_ADDRESS"
DISPUTE_ADDRESS_PLACEHOLDER = "not configured yet"


def dispute_address() -> str | None:
    """ARGUSIC_DISPUTE_ADDRESS: where the public site tells a maintainer to send a dispute of a
    result: a public https:// page (a form, an issue tracker) or a ``mailto:`` address the operator
    reads. Whoever reads it files the dispute as today (``argusic dispute file`` or the
    ``argusic_disputes`` DAG). Unset: the pages say no address is configured yet
    (``DISPUTE_ADDRESS_PLACEHOLDER``); nothing is invented."""
    return _public_address(
        DISPUTE_ADDRESS_ENV,
        r"https://[^\s\"'<>\\]+|mailto:[^\s\"'<>\\@/]+@[^\s\"'<>\\@/]+",
        "a public https:// address or a mailto: address (no spaces or quotes); leave it unset until "
        "there is one",
    )


# Package indexes a real cycle's attempts are pointed at: (setting, variable overriding it, variable
# the attempt gets). Unset: the public ones, as the methodology's open outbound network reaches them.
PACKAGE_INDEXES = (
    ("pip_index_url", "ARGUSIC_PIP_INDEX_URL", "PIP_INDEX_URL"),
    ("npm_registry", "ARGUSIC_NPM_REGISTRY", "npm_config_registry"),
)
_INDEX_URL = re.compile(r"https?://[A-Za-z0-9.\-\[\]:]+(/[A-Za-z0-9._~/%+\-]*)?")


def package_index_env() -> dict[str, str]:
    """The variables every attempt on a network gets for the package indexes the operator set
    (orchestrator.toml [network] pip_index_url / npm_registry, or ARGUSIC_PIP_INDEX_URL /
    ARGUSIC_NPM_REGISTRY): a mirror or caching proxy of PyPI and npm. The same for every attempt of
    a cycle and pinned with it. An address with credentials, or that is not a plain http(s) URL, is
    refused (ValueError naming the setting): whatever is given here, every agent can read."""
    config = orchestrator_config()
    found = {}
    for setting, override, variable in PACKAGE_INDEXES:
        value = os.environ.get(override) or getattr(config, f"network_{setting}")
        if not value:
            continue
        if len(value) > 500 or not _INDEX_URL.fullmatch(value):
            raise ValueError(
                f"[network] {setting} ({override}) {value[:80]!r} is not a plain http(s) URL without "
                "credentials (scheme, host[:port], path; no user:password@, query or fragment)"
            )
        found[variable] = value
        if variable == "PIP_INDEX_URL" and value.startswith("http://"):
            # pip ignores a plain-http index unless its host is trusted: the operator chose it
            found["PIP_TRUSTED_HOST"] = value.split("/", 3)[2]
    return found
