"""Refuse to start an agent when an instruction file could reach it (seed 001, "Running agents").

    python3 -I -S check_instructions.py --workdir DIR --home DIR [--also DIR ...] [--write FILE]

An empty HOME is not enough: Claude Code also reads ``CLAUDE.md`` from every parent folder of its
working directory, Codex reads ``AGENTS.md`` the same way, and both read their user folders and a
machine-wide policy folder. This lists every such file or folder that exists (a link counts, even a
dangling one: it is never followed) in the working directory's parents, in HOME, in the CLIs' own
configuration folders named by the environment, and in the machine-wide places. The project's own
files (in the working directory itself) are the project's, shown to every agent alike: listed apart,
never a reason to refuse.

Exit 0 when nothing is reachable, 3 when something is (the attempt must not start), 2 on bad use.
Runs in the attempt container before the agent, on the image's python3: standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# Names looked for in each parent folder of the working directory (and in the working directory).
FOLDER_NAMES = ("CLAUDE.md", "CLAUDE.local.md", "AGENTS.md", "AGENTS.override.md", ".claude", ".codex")
# Names looked for in HOME.
HOME_NAMES = (
    "CLAUDE.md",
    "AGENTS.md",
    ".claude",
    ".claude.json",
    ".codex",
    ".config/claude",
    ".config/codex",
)
# Machine-wide places the CLIs read (managed policy and settings).
MACHINE_PLACES = ("/etc/claude-code", "/etc/codex", "/Library/Application Support/ClaudeCode")
# Folders named by the environment, and what in them would instruct the agent.
ENV_FOLDERS = {
    "CLAUDE_CONFIG_DIR": ("CLAUDE.md", "settings.json", "commands", "agents"),
    "CODEX_HOME": ("AGENTS.md", "AGENTS.override.md", "instructions.md", "config.toml"),
}


def _exists(path: str) -> bool:
    try:
        os.lstat(path)  # never follows a link
        return True
    except OSError:
        return False


def parents(workdir: str) -> list[str]:
    """The working directory's parent folders, nearest first, up to the root."""
    here = os.path.abspath(workdir)
    found = []
    while True:
        up = os.path.dirname(here)
        if up == here:
            return found
        found.append(up)
        here = up


def reachable(workdir: str, home: str | None, also: list[str] | None = None, env=None) -> dict:
    """{"refused": [paths that must not exist], "project_own": [the project's own files]}."""
    env = os.environ if env is None else env
    refused: list[str] = []
    for folder in parents(workdir) + list(also or []):
        refused += [p for p in (os.path.join(folder, n) for n in FOLDER_NAMES) if _exists(p)]
    if home:
        refused += [p for p in (os.path.join(home, n) for n in HOME_NAMES) if _exists(p)]
    refused += [p for p in MACHINE_PLACES if _exists(p)]
    for variable, names in ENV_FOLDERS.items():
        folder = env.get(variable)
        if folder:
            refused += [p for p in (os.path.join(folder, n) for n in names) if _exists(p)]
    project_own = [p for p in (os.path.join(workdir, n) for n in FOLDER_NAMES) if _exists(p)]
    return {"refused": sorted(set(refused)), "project_own": project_own}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="check_instructions.py")
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--home", default=os.environ.get("HOME"))
    parser.add_argument("--also", action="append", default=[])
    parser.add_argument("--write", default=None, help="also write the result (JSON) here")
    args = parser.parse_args(argv)
    result = reachable(args.workdir, args.home, args.also)
    text = json.dumps(result, indent=1) + "\n"
    if args.write:
        with open(args.write, "w", encoding="utf-8") as handle:
            handle.write(text)
    for path in result["refused"]:
        sys.stderr.write(f"instruction file reachable by the agent: {path}\n")
    return 3 if result["refused"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
