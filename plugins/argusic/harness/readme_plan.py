"""The plan reading a README gives the runner: its install, run, verify and mock commands, the blocks
they run as, and why other commands were left out (`notes`). Stdlib only.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Block:
    """Commands that run as one script, in order (one README code block, or the part of one a phase takes)."""

    phase: str  # install / run / verify / mock
    commands: list[str]
    section: str
    line: int


@dataclass
class Plan:
    install: list[str] = field(default_factory=list)
    run: list[str] = field(default_factory=list)
    verify: list[str] = field(default_factory=list)
    verify_artifacts: list[str] = field(default_factory=list)
    mock: list[str] = field(default_factory=list)
    mock_artifacts: list[str] = field(default_factory=list)
    mock_ports: list[int] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    format: str = "markdown"
    install_route: str = ""
    notes: list[str] = field(default_factory=list)

    def phase_blocks(self, phase: str) -> list[Block]:
        return [b for b in self.blocks if b.phase == phase]
