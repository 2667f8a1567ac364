"""Reading a README the way a careful engineer does: which commands install, which run. Stdlib only.

    plan = parse_readme(text, filename="README.md", checkout=Checkout.from_dir(project))

The README is split into headings, prose and code (Markdown, reStructuredText or plain text, chosen
by the file name and, for .txt and extension-less files, by the content). Code that is shell is told
from output, prose, configuration files and other languages; prompts are stripped, multi-line
constructs grouped. Sections get a category from their heading (install, run, development, skipped,
verify, mock); the commands are then sorted into install and run work: one install route is chosen
among the alternatives a README offers (this checkout over a registry, Debian over other systems),
commands that need the reader's own files or placeholders are left out, and the checkout is looked at
where a person would (is there a `configure` script, is `hello.py` here?). Every rule is documented in
README.md next to this file ("Reading a README"); `Plan.notes` says why commands were left out.

The steps live in modules of their own, in the order `parse_readme` takes them: readme_document.py
(the file and its headings, prose and code), readme_sections.py (what each section is about),
readme_commands.py (which code and sentences are commands), readme_routes.py (which of them are
followed, in which phase, by which install route) and readme_plan.py (the result). This module
runs them and applies the last checks (placeholders, the reader's own files, folders that are not
there, commands taken twice).
"""

from __future__ import annotations

import os
import re

if __package__:
    from . import decode as _decode
    from . import shell_words as sw
    from .readme_commands import (
        collect_groups,
        files_made,
        missing_input,
        normalise,
        placeholder_in,
        project_words,
        short,
    )
    from .readme_document import Checkout, Prose, detect_format, read_document
    from .readme_plan import Block, Plan
    from .readme_routes import (
        apply_configure_rule,
        assign_phases,
        choose_install,
        choose_runs,
        drop_other_platforms,
        drop_outside_checkout,
        drop_project_clone,
        drop_variants,
        followable,
        number_units,
        system_packages_first,
    )
    from .readme_sections import INSTALL, MOCK, RUN, VERIFY, build_sections
else:  # run as a script from the harness directory
    import decode as _decode  # type: ignore[no-redef]
    import shell_words as sw  # type: ignore[no-redef]
    from readme_commands import (  # type: ignore[no-redef]
        collect_groups,
        files_made,
        missing_input,
        normalise,
        placeholder_in,
        project_words,
        short,
    )
    from readme_document import Checkout, Prose, detect_format, read_document  # type: ignore[no-redef]
    from readme_plan import Block, Plan  # type: ignore[no-redef]
    from readme_routes import (  # type: ignore[no-redef]
        apply_configure_rule,
        assign_phases,
        choose_install,
        choose_runs,
        drop_other_platforms,
        drop_outside_checkout,
        drop_project_clone,
        drop_variants,
        followable,
        number_units,
        system_packages_first,
    )
    from readme_sections import INSTALL, MOCK, RUN, VERIFY, build_sections  # type: ignore[no-redef]

CODE_SPAN_RE = re.compile(r"`([^`\s]+)`")
PORT_RES = [re.compile(r"(?:127\.0\.0\.1|localhost):(\d{2,5})\b"), re.compile(r"--port[= ](\d{2,5})\b")]
_PHASE_ORDER = {INSTALL: 0, RUN: 1, VERIFY: 2, MOCK: 3}


def parse_readme(text: str, filename: str = "README.md", checkout: Checkout | None = None) -> Plan:
    """The install, run, verify and mock steps a careful engineer takes from this README."""
    checkout = checkout or Checkout()
    fmt = detect_format(text, filename)
    items = read_document(text, fmt)
    sections, owner = build_sections(items)
    known = project_words(items, filename)
    plan = Plan(format=fmt)
    groups = collect_groups(items, owner, sections, fmt, known, plan)

    # Verify and mock sections keep their literal meaning: decoding needs them as written.
    for g in groups:
        cat = sections[g.section].category if g.section >= 0 else None
        if cat in (VERIFY, MOCK):
            getattr(plan, cat).extend(g.commands)
            plan.blocks.append(Block(cat, list(g.commands), sections[g.section].title, g.line))
    has_install_section = any(s.category == INSTALL for s in sections)
    groups = [g for g in groups if followable(g, sections, has_install_section)]

    drop_other_platforms(groups, sections, plan)
    drop_project_clone(groups, plan, known)
    drop_outside_checkout(groups, sections, plan)
    number_units(groups)

    install_parts, run_parts = assign_phases(groups, sections)
    install_parts, variants = drop_variants(install_parts, checkout, plan)
    run_parts = [(g, cmds) for g, cmds in run_parts if id(g) not in variants]
    chosen, losing = choose_install(install_parts, sections, checkout, plan, known)
    apply_configure_rule(chosen, checkout, plan)
    system_packages_first(chosen, plan)
    runs = choose_runs(run_parts, sections, chosen, losing)

    # Checkout-aware filters and de-duplication, then the final lists and blocks.
    seen: dict[str, int] = {}  # command -> the section it was taken from
    for phase, parts in ((INSTALL, chosen), (RUN, runs)):
        cwd = ""
        made: set[str] = set()
        for g, cmds in parts:
            kept = []
            for cmd in cmds:
                key = normalise(cmd)
                if seen.get(key, g.section) != g.section and not _repeatable(cmd):
                    plan.notes.append(f"line {g.line}: `{short(cmd)}` is already taken")
                    continue
                hole = placeholder_in(cmd)
                if hole:
                    plan.notes.append(f"line {g.line}: `{short(cmd)}` has a placeholder ({hole})")
                    continue
                miss = missing_input(cmd, cwd, checkout, made)
                if miss:
                    plan.notes.append(f"line {g.line}: `{short(cmd)}` reads {miss}, not in the checkout")
                    continue
                target = _cd_target(cmd)
                folder = os.path.normpath(os.path.join(cwd, target)) if target and cwd != "/" else ""
                if folder and "*" not in made and folder not in made and checkout.exists(folder) is False:
                    plan.notes.append(f"line {g.line}: `{short(cmd)}`: no such folder in the checkout")
                    continue
                kept.append(cmd)
                seen.setdefault(key, g.section)
                made |= files_made(cmd, cwd)
                cwd = _cwd_after(cmd, cwd)
            if kept:
                getattr(plan, phase).extend(kept)
                plan.blocks.append(
                    Block(phase, kept, sections[g.section].title if g.section >= 0 else "", g.line)
                )
    plan.blocks.sort(key=lambda b: (_PHASE_ORDER[b.phase], b.line))

    # Verification targets: output files named in verify/mock prose, mock ports.
    prose = {VERIFY: [], MOCK: []}  # type: dict[str, list[str]]
    for pos, item in enumerate(items):
        s = owner[pos]
        if isinstance(item, Prose) and s >= 0 and sections[s].category in prose:
            prose[sections[s].category].append(item.text)
    plan.verify_artifacts = _artifacts("\n".join(prose[VERIFY]))
    mock_text = "\n".join(prose[MOCK] + plan.mock)
    plan.mock_artifacts = _artifacts(mock_text)
    ports: list[int] = []
    for pattern in PORT_RES:
        for p in pattern.findall(mock_text):
            if int(p) not in ports and 0 < int(p) < 65536:
                ports.append(int(p))
    plan.mock_ports = ports
    return plan


def _cwd_after(cmd: str, cwd: str) -> str:
    """The working folder (relative to the checkout) after a command's top-level `cd`s."""
    for seg in sw.segments(cmd):
        words = sw.program_words(seg)
        if words[:1] == ["cd"]:
            target = words[1] if len(words) > 1 else "~"
            if target.startswith(("/", "~", "$")):
                return "/"  # outside the checkout: nothing below is checked
            cwd = os.path.normpath(os.path.join(cwd, target)) if cwd != "/" else cwd
            cwd = "" if cwd == "." else cwd
    return cwd


def _cd_target(cmd: str) -> str | None:
    words = sw.split_words(cmd)
    if len(words) == 2 and words[0] == "cd" and not words[1].startswith(("/", "~", "$", "-")):
        return words[1].rstrip("/")
    return None


def _repeatable(cmd: str) -> bool:
    return sw.first_program(cmd) in ("cd", "pushd", "popd", "mkdir", "export")


def _artifacts(text: str) -> list[str]:
    found = []
    for span in CODE_SPAN_RE.findall(text):
        if span.startswith("-") or "://" in span or "$" in span:
            continue
        if _decode.decoder_for(span) is None:
            continue
        if span not in found:
            found.append(span)
    return found
