"""The section-7 network's choice and rules, without Docker (the real network is in
test_attempt_network.py): which cycles get it, the firewall's order, bad settings refused."""

from __future__ import annotations

import dataclasses

import pytest
from argusic.core.settings import orchestrator_config
from argusic.publication.attempt_page import network_note
from argusic.sandbox import attempt_network as an
from argusic.sandbox.containment import NETWORK_ENV, Containment, ContainmentError
from argusic.sandbox.executor import DockerExecutor, get_executor


def test_a_real_cycle_gets_section_7_and_a_demo_or_a_test_no_network(monkeypatch) -> None:
    monkeypatch.delenv(NETWORK_ENV, raising=False)
    assert orchestrator_config().container_network == "section7"
    assert Containment.from_config(demo=False).network == "section7"
    assert Containment.from_config().network == "none"  # the default: a demo, a test
    monkeypatch.setenv("ARGUSIC_EXECUTOR", "docker")
    assert get_executor(demo=False).network == "section7"
    assert get_executor(demo=True).network == "none"
    monkeypatch.setenv(NETWORK_ENV, "ops-net")  # the operator names another network: both get it
    assert Containment.from_config(demo=False).network == "ops-net" == Containment.from_config().network
    assert isinstance(get_executor(demo=False), DockerExecutor)


def test_the_firewall_lets_the_allowed_through_before_it_rejects() -> None:
    net = an.AttemptNetwork("argusic-s7-x", "ars7-abc", "172.30.0.0/16", "172.30.0.1")
    policy = an.NetworkPolicy(allow_host_ports=(4000,), blocked=("169.254.0.0/16", "10.0.0.0/8"),
                              allow=("10.1.2.3/32",))  # fmt: skip
    rules = an._rules(net, policy, "x")
    text = [f"{chain} {' '.join(rule)}" for chain, rule in rules]
    inputs = [t for t in text if t.startswith("INPUT")]
    assert "ESTABLISHED" in inputs[0] and "--dport 4000 -j ACCEPT" in inputs[1]
    assert all("REJECT" in t for t in inputs[2:]) and len(inputs) == 4
    forwarded = [t for t in text if t.startswith("DOCKER-USER")]
    assert "-d 10.1.2.3/32 -j RETURN" in forwarded[0]  # a gateway elsewhere, let through first
    assert "-d 169.254.0.0/16 -j REJECT" in forwarded[1] and "-d 10.0.0.0/8 -j REJECT" in forwarded[2]
    assert "-i ars7-abc -o ars7-abc -j REJECT" in forwarded[3]  # no neighbours
    assert all(t.endswith("--comment argusic-s7 x") for t in text)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("network_blocked", ("not-a-range",), "not an address range"),
     ("network_allow", ("10.0.0.0/33",), "not an address range"),
     ("network_allow_host_ports", (70000,), "not a port")],
)  # fmt: skip
def test_bad_network_settings_are_refused_by_name(monkeypatch, field, value, message) -> None:
    bad = dataclasses.replace(orchestrator_config(), **{field: value})
    monkeypatch.setattr(an, "orchestrator_config", lambda: bad)
    with pytest.raises(ContainmentError, match=message):
        an.NetworkPolicy.from_config()


def test_no_iptables_fails_closed(monkeypatch) -> None:
    monkeypatch.setattr(an.shutil, "which", lambda name: None)
    with pytest.raises(ContainmentError, match="needs iptables"):
        an._iptables("-S")


def test_bridge_names_fit_linux_and_stay_the_same() -> None:
    assert len(an.bridge_name("a-very-long-installation-name")) <= 15
    assert an.bridge_name("one") == an.bridge_name("one") != an.bridge_name("two")


def test_the_run_page_says_what_the_network_allowed() -> None:
    assert "outbound access open" in network_note("section7") and "no other attempt" in network_note(
        "section7"
    )
    assert network_note("none").startswith("none") and "operator named" in network_note("ops-net")


def test_the_rules_are_checked_again_before_every_attempt(monkeypatch) -> None:
    """A firewall reloaded between two attempts must not let the second run without the rules: the
    network is made once per process, its rules are checked (and put back) every time."""
    net = an.AttemptNetwork("argusic-s7-x", "ars7-abc", "172.30.0.0/16", "172.30.0.1")
    applied = []
    monkeypatch.setitem(an._ready, an.installation_id(), net)
    monkeypatch.setattr(an, "_apply", lambda rules: applied.append(len(rules)))
    policy = an.NetworkPolicy(allow_host_ports=(), blocked=("169.254.0.0/16",), allow=())
    assert an.ensure_network(None, policy) is net and an.ensure_network(None, policy) is net
    assert applied == [5, 5]  # three INPUT rules, the metadata range and the neighbours
