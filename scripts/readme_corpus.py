"""How well readme-runner reads real READMEs: its picks against a person's, over tests/fixtures/readmes/.

Each fixture folder holds a README exactly as found in a public repository, SOURCE (repository,
path, commit, licence), FILES (the checkout's paths, three levels deep, so the parser can look at the
checkout as the harness does) and EXPECTED, written by hand:

    # notes
    [install]
    $ command a person runs to install, in order
    [run]
    $ command a person runs to run the project or its tests, in order
    [other]
    $ a real command of the README that a person would not run here (another system, a variant...)
    $ prefix *        (any command starting with "prefix ")

A command spans several lines until the next `$ ` line or section. Commands are compared after
normalisation: backslash-newline joined, a trailing `# comment` dropped, whitespace collapsed.

Verdict per README:
  right   the install picks equal [install] and the run picks equal [run] (same commands, same order);
  wrong   nothing expected was picked (when something is expected), or a pick is not a command at
          all (in none of [install], [run], [other]: output, prose, a fragment, another language);
  partly  everything else.

Usage: python3 scripts/readme_corpus.py [--json] [--verbose] [NAME...]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))

from argusic.harness.readme_parser import Checkout, normalise, parse_readme  # noqa: E402

CORPUS = ROOT / "tests" / "fixtures" / "readmes"


@dataclass
class Expected:
    install: list[str] = field(default_factory=list)
    run: list[str] = field(default_factory=list)
    other: list[str] = field(default_factory=list)

    def is_command(self, cmd: str) -> bool:
        key = normalise(cmd)
        if key in self.install or key in self.run or key in self.other:
            return True
        return any(o.endswith(" *") and key.startswith(o[:-1]) for o in self.other)


def read_expected(path: Path) -> Expected:
    exp = Expected()
    section: list[str] | None = None
    current: list[str] | None = None

    def close() -> None:
        nonlocal current
        if current is not None and section is not None:
            section.append(normalise("\n".join(current)))
        current = None

    for line in path.read_text(encoding="utf-8").splitlines():
        if (
            line.startswith("[")
            and line.rstrip().endswith("]")
            and line.strip()[1:-1] in ("install", "run", "other")
        ):
            close()
            section = getattr(exp, line.strip()[1:-1])
            continue
        if line.startswith("$ ") or line == "$":
            close()
            current = [line[2:]]
            continue
        if line.startswith("#") and current is None:
            continue
        if current is not None:
            if line.strip() == "" and section is not None:
                close()
            else:
                current.append(line)
    close()
    return exp


def readme_of(folder: Path) -> Path:
    names = [p for p in folder.iterdir() if p.name not in ("SOURCE", "EXPECTED", "FILES")]
    if len(names) != 1:
        raise SystemExit(f"{folder}: expected exactly one README file, found {[p.name for p in names]}")
    return names[0]


def judge(folder: Path) -> dict:
    readme = readme_of(folder)
    exp = read_expected(folder / "EXPECTED")
    files = folder / "FILES"
    checkout = Checkout.from_listing(files.read_text().splitlines()) if files.exists() else Checkout()
    plan = parse_readme(readme.read_text(encoding="utf-8", errors="replace"), readme.name, checkout)
    got_install = [normalise(c) for c in plan.install]
    got_run = [normalise(c) for c in plan.run]
    expected_all = set(exp.install) | set(exp.run)
    picks = got_install + got_run
    not_commands = [c for c in picks if not exp.is_command(c)]
    hit = [c for c in picks if c in expected_all]
    if got_install == exp.install and got_run == exp.run:
        verdict = "right"
    elif not_commands or (expected_all and not hit):
        verdict = "wrong"
    else:
        verdict = "partly"
    source = dict(
        line.split(": ", 1) for line in (folder / "SOURCE").read_text().splitlines() if ": " in line
    )
    return {
        "name": folder.name,
        "readme": readme.name,
        "language": source.get("language", "?"),
        "set": source.get("set", "development").split(" ")[0],
        "format": plan.format,
        "verdict": verdict,
        "expected_empty": not expected_all,
        "missing_install": [c for c in exp.install if c not in got_install],
        "extra_install": [c for c in got_install if c not in exp.install],
        "missing_run": [c for c in exp.run if c not in got_run],
        "extra_run": [c for c in got_run if c not in exp.run],
        "not_commands": not_commands,
        "order_differs": (sorted(got_install) == sorted(exp.install) and got_install != exp.install)
        or (sorted(got_run) == sorted(exp.run) and got_run != exp.run),
        "notes": plan.notes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="fixture folders to judge (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON object (totals and verdicts)")
    parser.add_argument("--verbose", "-v", action="store_true", help="show the differences")
    parser.add_argument("--notes", action="store_true", help="with --verbose: also the parser's notes")
    args = parser.parse_args(argv)
    folders = sorted(p for p in CORPUS.iterdir() if p.is_dir() and (p / "EXPECTED").exists())
    if args.names:
        folders = [f for f in folders if f.name in args.names]
    results = [judge(f) for f in folders]
    total = len(results)
    counts = {v: sum(1 for r in results if r["verdict"] == v) for v in ("right", "partly", "wrong")}
    shares = {v: (counts[v] / total if total else 0.0) for v in counts}
    if args.json:
        print(json.dumps({"total": total, "counts": counts, "shares": shares, "results": results}, indent=1))
        return 0
    width = max((len(r["name"]) for r in results), default=10)
    for r in results:
        print(f"{r['name']:<{width}}  {r['readme']:<16} {r['verdict']}")
        if args.verbose and r["verdict"] != "right":
            for key in ("missing_install", "extra_install", "missing_run", "extra_run", "not_commands"):
                for c in r[key]:
                    print(f"{'':<{width}}    {key}: {c}")
            if r["order_differs"]:
                print(f"{'':<{width}}    (same commands, another order)")
            if args.notes:
                for n in r["notes"]:
                    print(f"{'':<{width}}    note: {n}")
    print()
    for key, title in (("language", "by language"), ("ext", "by README format"), ("set", "by set")):
        groups: dict[str, list[dict]] = {}
        for r in results:
            value = r[key] if key != "ext" else (Path(r["readme"]).suffix.lower() or "(none)")
            groups.setdefault(value, []).append(r)
        cells = []
        for value, rs in sorted(groups.items()):
            c = {v: sum(1 for r in rs if r["verdict"] == v) for v in ("right", "partly", "wrong")}
            cells.append(f"{value} {c['right']}/{c['partly']}/{c['wrong']}")
        print(f"{title} (right/partly/wrong): " + ", ".join(cells))
    print()
    print(
        f"{total} READMEs: right {counts['right']} ({shares['right']:.0%}), "
        f"partly {counts['partly']} ({shares['partly']:.0%}), wrong {counts['wrong']} ({shares['wrong']:.0%})"
    )
    empty = [r for r in results if r["expected_empty"]]
    if empty:
        rest = [r for r in results if not r["expected_empty"]]
        right_rest = sum(1 for r in rest if r["verdict"] == "right")
        print(
            f"  of which {len(empty)} READMEs name nothing to run (right when nothing is picked); "
            f"on the other {len(rest)}: right {right_rest} ({right_rest / max(1, len(rest)):.0%})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
