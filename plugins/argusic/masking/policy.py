"""What masking removes (the policy) and what it reports (stats, results)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from argusic.masking.rules import EXCLUDED_RULES, SUPPLEMENTARY_PATTERNS, Rule, catalogue, catalogue_digest

MASKING_VERSION = "2"
PLACEHOLDER = "[masked]"
KEY_PLACEHOLDER = "[private key body redacted]"
MIN_SECRET_LEN = 6


@dataclass(frozen=True)
class BannerRule:
    """A vendor start-up banner to hide.

    Either `line` (every matching line is hidden) or a box: from a line matching `start` to the first
    line matching `end` within `max_lines`, hidden only if some line of it matches `contains`.
    With `value` beside `line`, a matching line is kept and only the text of the group ``v`` of each
    match of `value` in it is hidden: a machine field of the tool's own output (the model its JSON
    lines name), never the rest of the line (what the agent wrote or ran). Patterns are matched
    against a line with terminal escapes removed.
    """

    name: str
    line: str | None = None
    value: str | None = None
    start: str | None = None
    end: str | None = None
    contains: str | None = None
    max_lines: int = 24


DEFAULT_BANNERS: tuple[BannerRule, ...] = (
    BannerRule(
        "claude-code-welcome-box",
        start=r"^\s*╭[─━]",
        end=r"^\s*╰[─━]",
        contains=r"(?i)claude code|anthropic",
    ),
    BannerRule("claude-code-welcome-line", line=r"^\s*[│|]?\s*✻\s*Welcome to Claude Code"),
    # The start banner in machine form: the stream-json "init" message the CLI prints first (its
    # model, version, tools and key source), which the driver tees to the terminal (issue 32).
    BannerRule(
        "claude-code-stream-init",
        line=r'^\s*\{"type":\s*"system",\s*"subtype":\s*"init",.*"claude_code_version"',
    ),
    # The CLI's own machine fields that name the model, on every stream-json line it tees to the
    # terminal (issue 32): the "model" of an assistant message's header (before its content: the
    # agent's words and tool calls are never read) and the model names keying a result's
    # "modelUsage". Their values are emptied ("model":""); the rest of each line stays.
    BannerRule(
        "claude-code-stream-model",
        line=r'^\s*\{"type":\s*"assistant",\s*"message":\s*\{',
        value=r'^\s*\{"type":\s*"assistant",\s*"message":\s*\{[^{}\[\]]*?"model":\s*"(?P<v>[^"\\]+)"',
    ),
    BannerRule(
        "claude-code-stream-model-usage",
        line=r'^\s*\{"type":\s*"result",',
        value=r'(?:"modelUsage":\s*\{|\},\s*)"(?P<v>[^"\\]+)":\s*\{"inputTokens"',
    ),
    BannerRule(
        "codex-welcome-box",
        start=r"^\s*╭[─━]",
        end=r"^\s*╰[─━]",
        contains=r"(?i)openai codex|>_ .*codex",
    ),
    BannerRule("codex-welcome-line", line=r"^\s*[│|]?\s*>_ OpenAI Codex\b"),
    BannerRule("aider-version-line", line=r"^Aider v\d+\.\d+"),
    BannerRule("aider-model-lines", line=r"^(?:Main|Weak|Editor) model: \S"),
)

# Lines that are the agent's commands: never hidden as a banner.
DEFAULT_COMMAND_PATTERNS: tuple[str, ...] = (
    r"^(?:\S+ )?\$ ",  # recorder.prompt(): "[<subdir> ]$ <command>"
    r"^> ",  # continuation lines of a multi-line command
    r"^\[[0-9T:.\-Z]+\] STEP [\w-]+: ",  # the log's step lines
)

EXCLUDED_DETECTORS = EXCLUDED_RULES


@dataclass(frozen=True)
class MaskPolicy:
    banners: tuple[BannerRule, ...] = DEFAULT_BANNERS
    command_patterns: tuple[str, ...] = DEFAULT_COMMAND_PATTERNS
    use_kingfisher: bool = True  # gitleaks lineage + OSV-SCALIBR formats (kingfisher's rules)
    use_detect_secrets: bool = True  # detect-secrets' regex plugins
    use_assignments: bool = True  # NAME_PASSWORD=value, --token value, quoted high-entropy strings
    supplementary_patterns: tuple[tuple[str, str], ...] = SUPPLEMENTARY_PATTERNS
    excluded_detectors: frozenset[str] = EXCLUDED_DETECTORS  # rule ids or id prefixes
    redact_private_keys: bool = True
    decode_encoded_runs: bool = True  # base64/hex runs decoded and searched for tokens
    min_secret_len: int = MIN_SECRET_LEN
    max_rounds: int = 4
    max_known_values: int = 20_000  # more distinct credentials than this: withheld
    max_soft_values: int = 5_000  # assignment values tracked everywhere (beyond: masked where found)

    def rules(self) -> tuple[Rule, ...]:
        return _catalogue_of(
            self.use_kingfisher,
            self.use_detect_secrets,
            self.supplementary_patterns,
            self.use_assignments,
            frozenset(self.excluded_detectors),
        )

    def fingerprint(self) -> str:
        """A stable digest of the policy, the rule set's digest included (not a secret)."""
        doc = {
            "version": MASKING_VERSION,
            "banners": [vars(b) for b in self.banners],
            "commands": list(self.command_patterns),
            "rules": catalogue_digest(self.rules()),
            "keys": self.redact_private_keys,
            "decode": self.decode_encoded_runs,
            "min": self.min_secret_len,
            "rounds": self.max_rounds,
        }
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]


DEFAULT_POLICY = MaskPolicy()


@dataclass(frozen=True)
class KeyBlock:
    """One redacted private-key body: its label and the sha256 of its base64 characters."""

    label: str
    sha256: str


@dataclass
class MaskStats:
    credentials_masked: int = 0
    key_blocks: list[KeyBlock] = field(default_factory=list)
    banner_lines_hidden: int = 0
    machine_fields_hidden: int = 0  # values of a tool's own machine fields (BannerRule.value) emptied
    banners: set[str] = field(default_factory=set)
    detector_types: set[str] = field(default_factory=set)
    ignored_short_values: int = 0
    values_not_tracked: int = 0  # assignment-like values masked where found only (max_soft_values)
    rounds: int = 0

    def add_key(self, block: KeyBlock) -> None:
        if block not in self.key_blocks:
            self.key_blocks.append(block)


@dataclass
class MaskResult:
    """A served copy (`data`, or `path` for file → file masking), or a withheld one (`reason` says why)."""

    data: bytes | None
    withheld: bool
    reason: str | None
    stats: MaskStats
    path: Path | None = None

    @property
    def masking_applied(self) -> bool:
        return self.stats.credentials_masked > 0 or bool(self.stats.key_blocks)

    @property
    def generated_key_material(self) -> bool:
        return bool(self.stats.key_blocks)

    def summary(self) -> dict:
        s = self.stats
        return {
            "withheld": self.withheld,
            "reason": self.reason,
            "masking_applied": self.masking_applied,
            "credentials_masked": s.credentials_masked,
            "generated_key_material": self.generated_key_material,
            "private_keys": [{"label": k.label, "sha256": k.sha256} for k in s.key_blocks],
            "banner_lines_hidden": s.banner_lines_hidden,
            "machine_fields_hidden": s.machine_fields_hidden,
            "banners": sorted(s.banners),
            "detector_types": sorted(s.detector_types),
            "ignored_short_values": s.ignored_short_values,
            "values_not_tracked": s.values_not_tracked,
            "rounds": s.rounds,
            "masking_version": MASKING_VERSION,
        }


class MaskingError(ValueError):
    """Input that cannot be parsed as what it claims to be (the copy is withheld)."""


@lru_cache(maxsize=16)
def _catalogue_of(
    kingfisher: bool,
    detect_secrets: bool,
    supplementary: tuple[tuple[str, str], ...],
    assignments: bool,
    excluded: frozenset[str],
) -> tuple[Rule, ...]:
    """The rule catalogue of a policy's settings, built once per process: every masking job starts a
    state from its policy, and building the 500-rule catalogue each time cost more than masking a
    short log (a served log of a few lines took 22 ms, 3.5 ms of them here)."""
    return catalogue(
        kingfisher=kingfisher,
        detect_secrets=detect_secrets,
        supplementary=supplementary,
        assignments=assignments,
        excluded=excluded,
    )
