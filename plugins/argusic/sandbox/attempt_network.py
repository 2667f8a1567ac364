"""The attempt network of methodology section 7: outbound access, nothing inbound, no control plane.

A real cycle's attempts (not a demo, not scaled) run on a Docker bridge network this installation
creates and owns (``network = "section7"`` in orchestrator.toml; tests and the demo keep ``none``):

- outbound: anything the host can route to, through Docker's masquerade -- a project downloads its
  dependencies, an agent reaches its model gateway;
- nothing inbound: no port is ever published;
- no neighbours: inter-container traffic is off on the bridge (``enable_icc`` false), so one attempt
  cannot reach another's container;
- no control plane: packets from the bridge to this host itself are rejected (iptables INPUT: the
  host's services -- Airflow, Postgres, Redis, the object store, the build worker, the Docker API --
  whatever address they listen on), except the ports named in ``allow_host_ports`` (the model gateway
  when it runs on the attempt host); forwarded packets to the blocked ranges (iptables DOCKER-USER:
  link-local, where cloud metadata answers, and the private ranges where a cluster's control plane
  lives; ``blocked``) are rejected too, except the ranges named in ``allow``.

The rules are ours by their comment (``argusic-s7 <installation>``), added once each (checked with
``iptables -C`` first) and removed by ``remove_network``. Anything that cannot be set up raises
ContainmentError: the attempt is then invalid as ours, and never runs on a network without its rules.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import shlex
import shutil
import subprocess
import threading
from dataclasses import dataclass

from argusic.core.settings import installation_id, orchestrator_config
from argusic.sandbox.containment import ContainmentError

log = logging.getLogger(__name__)

SECTION7 = "section7"  # the network setting that asks for this network
LABEL = "argusic.attempt-network"
POLICY = (
    "section 7: outbound open through NAT; no inbound; no other attempt; no host service"
    " (except the allowed ports); no link-local or blocked range"
)
_lock = threading.Lock()
_ready: dict[str, AttemptNetwork] = {}


@dataclass(frozen=True)
class NetworkPolicy:
    allow_host_ports: tuple[int, ...]
    blocked: tuple[str, ...]
    allow: tuple[str, ...]

    @classmethod
    def from_config(cls) -> NetworkPolicy:
        config = orchestrator_config()
        policy = cls(
            tuple(int(p) for p in config.network_allow_host_ports),
            tuple(config.network_blocked),
            tuple(config.network_allow),
        )
        for cidr in (*policy.blocked, *policy.allow):
            try:
                ipaddress.ip_network(cidr, strict=False)
            except ValueError as err:
                raise ContainmentError(f"[network] {cidr!r} is not an address range: {err}") from None
        for port in policy.allow_host_ports:
            if not 0 < port < 65536:
                raise ContainmentError(f"[network] allow_host_ports: {port} is not a port")
        return policy


@dataclass(frozen=True)
class AttemptNetwork:
    name: str  # the Docker network
    bridge: str  # its Linux bridge (iptables rules name it)
    subnet: str
    gateway: str  # the host's address on it


def network_name(installation: str | None = None) -> str:
    return f"argusic-s7-{installation or installation_id()}"


def bridge_name(installation: str | None = None) -> str:
    """A bridge name within Linux's 15 characters, the same for the same installation."""
    digest = hashlib.sha256((installation or installation_id()).encode()).hexdigest()[:10]
    return f"ars7-{digest}"


FIREWALL_NETNS_ENV = "ARGUSIC_FIREWALL_NETNS"  # a worker in a container: the host's /proc/1/ns/net


def _iptables(*args: str) -> subprocess.CompletedProcess:
    """iptables in the host's network namespace: this one, or the one ARGUSIC_FIREWALL_NETNS names
    (entered with nsenter) when the worker runs in a container of its own."""
    binary = shutil.which("iptables")
    if binary is None:
        raise ContainmentError("the section-7 network needs iptables on the attempt host (root)")
    argv = [binary, "-w", "5", *args]
    if netns := os.environ.get(FIREWALL_NETNS_ENV):
        argv = ["nsenter", f"--net={netns}", *argv]
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ContainmentError(f"iptables could not run ({' '.join(argv[:4])} ...): {err}") from None


def _rules(net: AttemptNetwork, policy: NetworkPolicy, installation: str) -> list[tuple[str, list[str]]]:
    """(chain, rule) in the order they must match: the allowed before the rejected."""
    tag = ["-m", "comment", "--comment", f"argusic-s7 {installation}"]
    rules: list[tuple[str, list[str]]] = [
        ("INPUT", ["-i", net.bridge, "-m", "conntrack", "--ctstate", "ESTABLISHED,RELATED", "-j", "ACCEPT"]),
    ]
    for port in policy.allow_host_ports:
        rules.append(("INPUT", ["-i", net.bridge, "-p", "tcp", "--dport", str(port), "-j", "ACCEPT"]))
    rules += [
        ("INPUT", ["-i", net.bridge, "-p", "tcp", "-j", "REJECT", "--reject-with", "tcp-reset"]),
        ("INPUT", ["-i", net.bridge, "-j", "REJECT", "--reject-with", "icmp-port-unreachable"]),
    ]
    for cidr in policy.allow:
        rules.append(("DOCKER-USER", ["-i", net.bridge, "-d", cidr, "-j", "RETURN"]))
    for cidr in policy.blocked:
        rules.append(("DOCKER-USER", ["-i", net.bridge, "-d", cidr, "-j", "REJECT"]))
    # no neighbours: the bridge's own traffic, whatever Docker's icc rules do
    rules.append(("DOCKER-USER", ["-i", net.bridge, "-o", net.bridge, "-j", "REJECT"]))
    return [(chain, [*rule, *tag]) for chain, rule in rules]


def _apply(rules: list[tuple[str, list[str]]]) -> None:
    """Insert the rules that are missing, keeping their order at the top of each chain."""
    position: dict[str, int] = {}
    for chain, rule in rules:
        position[chain] = position.get(chain, 0) + 1
        if _iptables("-C", chain, *rule).returncode == 0:
            continue
        done = _iptables("-I", chain, str(position[chain]), *rule)
        if done.returncode != 0:
            raise ContainmentError(
                f"the section-7 network's firewall could not be set ({chain} {' '.join(rule)}): "
                f"{done.stderr.strip()[:300]}"
            )


def ensure_network(client, policy: NetworkPolicy | None = None) -> AttemptNetwork:
    """The installation's attempt network with its rules. The network is made once per process; its
    rules are checked (``iptables -C``) and put back if missing before every attempt, so a firewall
    reloaded since the last attempt never lets one run without them."""
    installation = installation_id()
    with _lock:
        policy = policy or NetworkPolicy.from_config()
        if installation in _ready:
            net = _ready[installation]
            _apply(_rules(net, policy, installation))
            return net
        import docker  # deferred: the docker SDK is slow to import

        name, bridge = network_name(installation), bridge_name(installation)
        try:
            try:
                network = client.networks.get(name)
            except docker.errors.NotFound:
                network = client.networks.create(
                    name,
                    driver="bridge",
                    internal=False,
                    labels={LABEL: installation},
                    options={
                        "com.docker.network.bridge.name": bridge,
                        "com.docker.network.bridge.enable_icc": "false",
                        "com.docker.network.bridge.enable_ip_masquerade": "true",
                    },
                )
            network.reload()
        except docker.errors.DockerException as err:
            raise ContainmentError(f"the section-7 network {name} could not be made: {err}") from None
        options = network.attrs.get("Options") or {}
        if options.get("com.docker.network.bridge.enable_icc") != "false":
            raise ContainmentError(f"network {name} exists with inter-container traffic on: remove it")
        config = (network.attrs.get("IPAM") or {}).get("Config") or [{}]
        net = AttemptNetwork(name, options.get("com.docker.network.bridge.name", bridge),
                             config[0].get("Subnet", ""), config[0].get("Gateway", ""))  # fmt: skip
        _apply(_rules(net, policy, installation))
        log.info("attempt network %s (bridge %s, %s): %s", name, net.bridge, net.subnet, POLICY)
        _ready[installation] = net
        return net


def remove_network(client, installation: str | None = None) -> list[str]:
    """Remove the installation's attempt network and every rule tagged for it; what was removed."""
    import docker  # deferred: the docker SDK is slow to import

    installation = installation or installation_id()
    removed = []
    for chain in ("INPUT", "DOCKER-USER"):
        listed = _iptables("-S", chain)
        for line in listed.stdout.splitlines():
            if f'"argusic-s7 {installation}"' in line and line.startswith(f"-A {chain} "):
                rule = shlex.split(line)[2:]  # the rule as iptables printed it, without "-A CHAIN"
                if _iptables("-D", chain, *rule).returncode == 0:
                    removed.append(f"{chain} rule")
    try:
        client.networks.get(network_name(installation)).remove()
        removed.append(network_name(installation))
    except docker.errors.NotFound:
        pass
    with _lock:
        _ready.pop(installation, None)
    return removed
