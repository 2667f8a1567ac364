"""Choosing among what a README offers: which groups are followed, each command's phase, the install
route and the run steps. Stdlib only.

README.md next to this file, "Kinds and phases", "Choosing the install route" and "Choosing the
run steps": other systems' routes, the project's own clone and work outside the checkout are
dropped; install commands are install work wherever they are; one install route is chosen by score
(this checkout over a registry, Debian over other systems) and put in a workable order; run
sections are followed at their first level that holds commands. Every decision is a `Plan.notes`
line.
"""

from __future__ import annotations

import re

if __package__:
    from . import shell_words as sw
    from .readme_commands import INTERPRETERS, Group, files_made, last_sentence, missing_input, short
    from .readme_document import Checkout
    from .readme_plan import Plan
    from .readme_sections import (
        DEV,
        INSTALL,
        PREREQUISITE_RE,
        RUN,
        STRONG_RUN_RE,
        TEST_HEADING_RE,
        TUTORIAL_RE,
        Section,
        norm_title,
    )
else:  # run as a script from the harness directory
    import shell_words as sw  # type: ignore[no-redef]
    from readme_commands import INTERPRETERS, Group, files_made, last_sentence, missing_input, short  # type: ignore[no-redef]
    from readme_document import Checkout  # type: ignore[no-redef]
    from readme_plan import Plan  # type: ignore[no-redef]
    from readme_sections import (  # type: ignore[no-redef]
        DEV,
        INSTALL,
        PREREQUISITE_RE,
        RUN,
        STRONG_RUN_RE,
        TEST_HEADING_RE,
        TUTORIAL_RE,
        Section,
        norm_title,
    )

# --- which groups are followed -------------------------------------------------------------------


def followable(g: Group, sections: list[Section], has_install_section: bool) -> bool:
    cat = sections[g.section].category if g.section >= 0 else None
    if cat is None:
        # No heading about installing: install commands outside the categorised sections count.
        return not has_install_section and all(sw.command_kind(c) == sw.INSTALL for c in g.commands)
    return cat in (INSTALL, RUN, DEV)


def drop_other_platforms(groups: list[Group], sections: list[Section], plan: Plan) -> None:
    ours_in: set[int] = {g.section for g in groups if g.platform == "ours"}
    for g in groups:
        s_plat = sections[g.section].platform if g.section >= 0 else None
        if s_plat == "other" or g.platform == "other":
            plan.notes.append(f"line {g.line}: for another system")
            g.commands = []
            continue
        if g.platform == "fallback" and g.section in ours_in:
            plan.notes.append(f"line {g.line}: for other systems than Debian")
            g.commands = []
            continue
        if g.optional and (g.section < 0 or sections[g.section].category in (INSTALL, DEV)):
            plan.notes.append(f"line {g.line}: optional")
            g.commands = []
            continue
        kept = []
        for cmd in g.commands:
            if sw.other_platform_command(cmd):
                plan.notes.append(f"line {g.line}: `{short(cmd)}` is another system's tool")
            else:
                kept.append(cmd)
        if g.pick_one and len(kept) > 1:
            plan.notes.append(f"line {g.line}: one of {len(kept)} alternatives taken")
            kept = kept[:1]
        g.commands = kept


def number_units(groups: list[Group]) -> None:
    """Blocks introduced as another way ("or ...", "To build with CMake:") start a new unit."""
    counters: dict[int, int] = {}
    started: set[int] = set()
    for g in groups:
        if not g.commands:
            continue
        if g.alternative and g.section in started:
            counters[g.section] = counters.get(g.section, 0) + 1
        g.unit = counters.get(g.section, 0)
        started.add(g.section)


# --- the project's own clone, work outside the checkout -------------------------------------------

_CLONE_VALUE_OPTS = {
    "--depth", "-b", "--branch", "-o", "--origin", "-c", "--config", "--reference", "-j", "--jobs",
    "--filter", "--shallow-since", "-u", "--upload-pack", "--separate-git-dir", "--template",
}  # fmt: skip


def _clone_target(words: list[str]) -> str:
    args: list[str] = []
    skip = False
    for w in words[2:]:
        if skip:
            skip = False
            continue
        if w in _CLONE_VALUE_OPTS:
            skip = True
            continue
        if w.startswith("-"):
            continue
        args.append(w)
    if len(args) >= 2:
        return args[1].rstrip("/")
    return re.sub(r"\.git$", "", args[0].rstrip("/").rsplit("/", 1)[-1]) if args else ""


def _clone_url(words: list[str]) -> str | None:
    return next((w for w in words[2:] if "://" in w or w.startswith("git@")), None)


def drop_project_clone(groups: list[Group], plan: Plan, known: frozenset[str] = frozenset()) -> None:
    """`git clone URL [dir]` then `cd dir`: getting the sources we already have. Both are dropped."""
    flat = [(g, i) for g in groups for i in range(len(g.commands))]
    drop: set[tuple[int, int]] = set()
    replace: dict[tuple[int, int], str] = {}
    for k, (g, i) in enumerate(flat):
        cmd = g.commands[i]
        parts = re.split(r"\s*&&\s*", cmd.replace("\\\n", " ").strip())
        words = sw.split_words(parts[0])
        if words[:2] != ["git", "clone"]:
            continue
        target = _clone_target(words)
        if len(parts) > 1 and re.fullmatch(r"cd\s+\S+", parts[1]):
            if parts[1].split()[1].rstrip("/") == target:
                rest = " && ".join(parts[2:])
                if rest:
                    replace[(id(g), i)] = rest
                else:
                    drop.add((id(g), i))
            continue
        if k + 1 < len(flat):
            g2, i2 = flat[k + 1]
            nxt = sw.split_words(g2.commands[i2])
            if g2.section == g.section and len(nxt) == 2 and nxt[0] == "cd" and nxt[1].rstrip("/") == target:
                drop.add((id(g), i))
                drop.add((id(g2), i2))
                continue
        url_name = re.sub(r"\.git$", "", (_clone_url(words) or "").rstrip("/").rsplit("/", 1)[-1]).lower()
        if url_name and url_name in known and len(parts) == 1:
            drop.add((id(g), i))  # the project's own repository (its name is the README's title)
    for g in groups:
        kept = []
        for i, cmd in enumerate(g.commands):
            if (id(g), i) in drop:
                plan.notes.append(f"line {g.line}: `{short(cmd)}`: the checkout is already here")
            elif (id(g), i) in replace:
                kept.append(replace[(id(g), i)])
            else:
                kept.append(cmd)
        g.commands = kept


def _leaves_checkout(cmd: str) -> bool:
    for seg in sw.segments(cmd):
        words = sw.program_words(seg)
        if words[:1] == ["cd"] and len(words) > 1 and words[1].startswith(("/", "~", "$HOME")):
            return True
    return False


def drop_outside_checkout(groups: list[Group], sections: list[Section], plan: Plan) -> None:
    """A section whose commands `cd` to an absolute path or home works elsewhere, not in this checkout."""
    leaving = {g.section for g in groups if any(_leaves_checkout(c) for c in g.commands)}
    for g in groups:
        if g.section in leaving and g.commands:
            plan.notes.append(f"line {g.line}: works outside the checkout")
            g.commands = []


# --- phases ---------------------------------------------------------------------------------------

Part = tuple[Group, list[str]]


def assign_phases(groups: list[Group], sections: list[Section]) -> tuple[list[Part], list[Part]]:
    """Each command's phase: its own kind, else its neighbours', else its section's category."""
    install: list[Part] = []
    run: list[Part] = []
    for g in groups:
        if not g.commands:
            continue
        cat = sections[g.section].category if g.section >= 0 else INSTALL
        phases: list[str] = []
        for cmd in g.commands:
            kind = sw.command_kind(cmd)
            if kind == sw.INSTALL:
                phases.append(INSTALL)
            elif kind == sw.TEST:
                phases.append(RUN)
            elif kind == sw.RUN:
                trying = bool(_TRY_PROSE_RE.search(last_sentence(g.prose))) if g.prose else False
                phases.append(INSTALL if cat == INSTALL and not (_runs_built_program(cmd) or trying) else RUN)
            else:
                phases.append("")
        for i, ph in enumerate(phases):
            if not ph:
                nxt = next((p for p in phases[i + 1 :] if p), "")
                prev = next((p for p in reversed(phases[:i]) if p), "")
                phases[i] = nxt or prev or (INSTALL if cat in (INSTALL, DEV) else RUN)
        cur_phase = ""
        cur: list[str] = []
        for cmd, ph in zip(g.commands, phases, strict=True):
            if ph != cur_phase and cur:
                (install if cur_phase == INSTALL else run).append((g, cur))
                cur = []
            cur_phase = ph
            cur.append(cmd)
        if cur:
            (install if cur_phase == INSTALL else run).append((g, cur))
    return install, run


_TRY_PROSE_RE = re.compile(
    r"(?i)^(?!.*\b(install|build|compile|set ?up|configure)\b).*\b(test|try|check|verify|confirm|see)\b"
)


def _runs_built_program(cmd: str) -> bool:
    """`./target/release/rg --version`, `t/sqitch`: running something from the checkout or the build."""
    prog = sw.first_program(cmd)
    if "/" in prog and not prog.startswith(("/", "~", "$")):
        return True
    return bool(re.search(r"\s(--version|-V|--help|-h)\s*$", cmd))


# --- choosing the install route -------------------------------------------------------------------

_LOCAL_BUILD_RE = re.compile(
    r"^(\./configure|configure|make|gmake|cmake|meson|ninja|\./build\.sh|build\.sh|\./autogen\.sh|"
    r"autoreconf|sh autogen\.sh|\./bootstrap|\.\./bootstrap|perl Makefile\.PL|perl Build\.PL|dzil|mvn|"
    r"\./mvnw|gradle|\./gradlew|ant|zig build|bash -n|python3? -m py_compile|python3? setup\.py|"
    r"\./configure\.py|npm (install|i|ci)( --?\S+)*$|yarn( install)?$|pnpm (install|i)$|cargo build|"
    r"cargo install --path|go build|go install \./|"
    r"(uv )?pip3? install (-e |--editable )?\.(\[[\w,]+\])?(\s|$)|"
    r"(uv )?pip3? install -r |python3? -m pip install (-e )?\.|bundle install|composer install|uv sync|"
    r"poetry install)"
)


def _is_local_build(cmd: str, strict: bool = False) -> bool:
    """Builds or installs this checkout (not a registry's release). `strict`: bare `make` is not enough."""
    for seg in sw.segments(cmd):
        words = sw.program_words(seg)
        if not words:
            continue
        text = " ".join(words)
        if _LOCAL_BUILD_RE.match(text) and not (strict and re.fullmatch(r"g?make( -j\s?\d*)?", text)):
            return True
    return False


def _ancestry(section: Section, sections: list[Section]) -> list[int]:
    out = []
    cur: Section | None = section
    while cur is not None:
        out.append(cur.index)
        cur = sections[cur.parent] if cur.parent is not None else None
    return out


def _unit_score(parts: list[Part], sections: list[Section], checkout: Checkout) -> int:
    """How well a route fits here (README.md, "Choosing the install route")."""
    g0 = parts[0][0]
    cmds = [c for _, cs in parts for c in cs]
    prose = " ".join(g.prose for g, _ in parts)
    score = 0
    if any(_is_local_build(c) for c in cmds):
        score += 4
    if g0.section >= 0:
        titles = " / ".join(norm_title(sections[i].title) for i in _ancestry(sections[g0.section], sections))
        near = norm_title(sections[g0.section].title)
    else:
        titles = near = ""
    if re.search(r"\bbuild|\bcompil|\bsource\b|\bgit\b|\bdevelop|\bcheck ?out|\bclone\b", near) or re.search(
        r"\bfrom (the )?(source|git)\b|\bgit (clone|checkout|repository)\b|\bcheck(ed)? ?out\b", _first(prose)
    ):
        score += 2
    if any(_DEBIAN_RE.search(g.prose) for g, _ in parts) or _DEBIAN_RE.search(near):
        score += 1
    if re.search(
        r"\bdeprecat|\blegacy\b|\bunsupported\b|\bexperimental\b|\bnot recommended\b", titles + " " + prose
    ):
        score -= 2
    if re.search(
        r"\bpackage manager|\bbinar|\brelease|\bprebuilt|\bpre-built|\bdownload|\btarball",
        titles + " " + _first(prose),
    ):
        score -= 1
    made: set[str] = set()
    for c in cmds:
        if missing_input(c, "", checkout, made) or _needs_generator([c], checkout, cmds):
            score -= 5
            break
        made |= files_made(c, "")
    return score


_DEBIAN_RE = re.compile(r"(?i)\b(debian|ubuntu|mint|devuan|raspbian|bookworm)\b")


def _first(prose: str) -> str:
    return prose.strip().split("\n")[0].lower() if prose.strip() else ""


def choose_install(
    parts: list[Part], sections: list[Section], checkout: Checkout, plan: Plan, known: frozenset[str]
) -> tuple[list[Part], set[tuple[int, int]]]:
    """Prerequisites and test set-up are kept; among the other routes one is chosen (best score)."""
    units: dict[tuple[int, int], list[Part]] = {}
    for g, cmds in parts:
        units.setdefault((g.section, g.unit), []).append((g, cmds))
    additive: set[tuple[int, int]] = set()
    routes: list[tuple[int, int]] = []
    for key, uparts in units.items():
        s = sections[key[0]] if key[0] >= 0 else None
        title = norm_title(s.title) if s else ""
        titles = " ".join(norm_title(sections[i].title) for i in _ancestry(s, sections)) if s else ""
        if s and (
            PREREQUISITE_RE.search(title) or (s.category in (RUN, DEV) and TEST_HEADING_RE.search(titles))
        ):
            additive.add(key)
        elif (
            s
            and s.category == DEV
            and not any(_is_local_build(c, strict=True) for _, cs in uparts for c in cs)
        ):
            plan.notes.append(f"{s.title}: development commands that do not build this checkout")
        elif all(sw.command_kind(c) == sw.RUN for _, cs in uparts for c in cs):
            plan.notes.append(f"{_unit_name(key, units, sections)}: installs nothing, not a route")
        else:
            routes.append(key)
    chosen_key: tuple[int, int] | None = None
    if routes:
        scored = sorted(
            ((_unit_score(units[k], sections, checkout), -units[k][0][0].line, k) for k in routes),
            reverse=True,
        )
        chosen_key = scored[0][2]
        for _, _, k in scored[1:]:
            plan.notes.append(f"install route not taken: {_unit_name(k, units, sections)}")
        plan.install_route = _unit_name(chosen_key, units, sections)
        plan.notes.append(f"install route: {plan.install_route}")
    keep = additive | ({chosen_key} if chosen_key else set())
    losing = {k for k in routes if k != chosen_key}
    chosen = [(g, cmds) for g, cmds in parts if (g.section, g.unit) in keep]
    # The project from a registry is superseded when the same route builds this checkout.
    if chosen_key and any(
        _is_local_build(c) for g, cs in chosen if (g.section, g.unit) == chosen_key for c in cs
    ):
        trimmed = []
        for g, cmds in chosen:
            kept = [c for c in cmds if _is_local_build(c) or not _installs_project_release(c, known)]
            for c in cmds:
                if c not in kept:
                    plan.notes.append(
                        f"line {g.line}: `{short(c)}`: the published release; this checkout is built instead"
                    )
            if kept:
                trimmed.append((g, kept))
        chosen = trimmed
    return chosen, losing


def _installs_project_release(cmd: str, known: frozenset[str]) -> bool:
    """`pip install docutils`, `npm install -g express`: the project itself from a registry."""
    for seg in sw.segments(cmd):
        words = sw.program_words(seg)
        if len(words) >= 3 and (
            words[0] in ("pip", "pip3", "npm", "yarn", "gem", "cargo", "go")
            or re.fullmatch(r"python[\d.]*", words[0])
        ):
            names = [
                w.split("==")[0].split("@")[0].split("[")[0].lower()
                for w in words[2:]
                if not w.startswith("-")
            ]
            if any(n in known for n in names):
                return True
    return False


def _unit_name(
    key: tuple[int, int], units: dict[tuple[int, int], list[Part]], sections: list[Section]
) -> str:
    g = units[key][0][0]
    title = sections[key[0]].title if key[0] >= 0 else "(before the first heading)"
    return f"{title} (line {g.line})"


def _signature(cmd: str) -> str:
    for seg in sw.segments(cmd):
        words = sw.program_words(seg)
        if not words or words[0] in ("cd", "mkdir", "export", "sudo", "source", "."):
            continue
        base = words[0]
        if base in INTERPRETERS or base in (
            "cargo",
            "go",
            "npm",
            "yarn",
            "pip",
            "pip3",
            "git",
            "rustup",
            "uv",
        ):
            return " ".join(words[:2])
        return base
    return ""


def drop_variants(parts: list[Part], checkout: Checkout, plan: Plan) -> tuple[list[Part], set[int]]:
    """A later block of the same unit that rebuilds with the same tool is a variant of the first."""
    out: list[Part] = []
    dropped: set[int] = set()
    for g, cmds in parts:
        sigs = {_signature(c) for c in cmds if sw.command_kind(c) == sw.INSTALL} - {""}
        clash = next(
            (
                k
                for k, (g0, cmds0) in enumerate(out)
                if g0.section == g.section and g0.unit == g.unit and g0 is not g
                and sigs & {_signature(c) for c in cmds0 if sw.command_kind(c) == sw.INSTALL}
            ),
            None,
        )  # fmt: skip
        if clash is None:
            out.append((g, cmds))
            continue
        g0, cmds0 = out[clash]
        if any(map(_is_local_build, cmds)) != any(map(_is_local_build, cmds0)):
            out.append((g, cmds))  # a release and a build of this checkout: two different things
            continue
        if _needs_generator(cmds0, checkout, cmds0) and _has_generator(cmds):
            out[clash] = (g, cmds)
            dropped.add(id(g0))
            plan.notes.append(
                f"line {g0.line}: needs a configure script this checkout lacks; line {g.line} makes one"
            )
        else:
            dropped.add(id(g))
            plan.notes.append(f"line {g.line}: a variant of the block at line {g0.line}")
    return out, dropped


_GENERATOR_RE = re.compile(r"(^|\s|/)(autoreconf|autogen\.sh|bootstrap(\.sh)?|autoconf|buildconf)(\s|$)")
_CONFIGURE_RE = re.compile(r"(^|[\s;&(])\./configure(\s|$|;|&)")


def _has_generator(cmds: list[str]) -> bool:
    return any(_GENERATOR_RE.search(c) for c in cmds)


def _needs_generator(cmds: list[str], checkout: Checkout, unit: list[str]) -> bool:
    uses = any(_CONFIGURE_RE.search(c) for c in cmds)
    return uses and checkout.exists("configure") is False and not _has_generator(unit)


def system_packages_first(chosen: list[Part], plan: Plan) -> None:
    """Debian packages a route names (apt install ...) are installed before it builds anything."""
    flat = [(k, c) for k, (_, cmds) in enumerate(chosen) for c in cmds]
    first_build = next((n for n, (_, c) in enumerate(flat) if _is_local_build(c)), None)
    if first_build is None:
        return
    late = [(n, k, c) for n, (k, c) in enumerate(flat) if n > first_build and _is_system_package(c)]
    if not late:
        return
    for _, k, c in late:
        chosen[k][1].remove(c)
    k0 = flat[first_build][0]
    at = chosen[k0][1].index(flat[first_build][1])
    for _, _, c in reversed(late):
        chosen[k0][1].insert(at, c)
        plan.notes.append(f"`{short(c)}` moved before the build: system packages first")


def _is_system_package(cmd: str) -> bool:
    words = sw.program_words(sw.segments(cmd)[0]) if sw.segments(cmd) else []
    return words[:2] in (["apt", "install"], ["apt-get", "install"])


def apply_configure_rule(chosen: list[Part], checkout: Checkout, plan: Plan) -> None:
    """No `configure` in the checkout: the generator the README names runs before `./configure`."""
    if checkout.exists("configure") is not False:
        return
    flat = [(k, i, c) for k, (_, cmds) in enumerate(chosen) for i, c in enumerate(cmds)]
    first_conf = next((n for n, (_, _, c) in enumerate(flat) if _CONFIGURE_RE.search(c)), None)
    gen = next((n for n, (_, _, c) in enumerate(flat) if _GENERATOR_RE.search(c)), None)
    if first_conf is None or gen is None or gen < first_conf:
        return
    k, i, cmd = flat[gen]
    chosen[k][1].pop(i)
    k0, i0, _ = flat[first_conf]
    chosen[k0][1].insert(i0, cmd)
    plan.notes.append(f"`{short(cmd)}` moved before ./configure: this checkout has no configure script")


# --- choosing the run steps -----------------------------------------------------------------------


def choose_runs(
    parts: list[Part], sections: list[Section], chosen: list[Part], losing: set[tuple[int, int]]
) -> list[Part]:
    """Run sections are followed at their first level that holds commands; tests wherever they are."""
    chosen_units = {(g.section, g.unit) for g, _ in chosen}
    with_cmds = {g.section for g, cmds in parts if cmds}

    def leads_to_cmds(idx: int) -> bool:
        return idx in with_cmds or any(leads_to_cmds(c) for c in sections[idx].children)

    def followed(idx: int) -> set[int]:
        """The section's own commands, else its first subsection that leads to commands; and the
        subsections whose own heading is a run heading (Examples, Running the tests...)."""
        out: set[int] = set()
        if idx in with_cmds:
            out.add(idx)
        else:
            for c in sections[idx].children:
                if leads_to_cmds(c):
                    if sections[c].category in (RUN, None):
                        out |= followed(c)
                    break
        read_through = TUTORIAL_RE.search(norm_title(sections[idx].title))
        for c in sections[idx].children:
            strong = STRONG_RUN_RE.search(norm_title(sections[c].title))
            if sections[c].category == RUN and (read_through or strong):
                out |= followed(c)
        return out

    tops = [
        s.index
        for s in sections
        if s.category == RUN and (s.parent is None or sections[s.parent].category != RUN)
    ]
    allowed: set[int] = set()
    for top in tops:
        allowed |= followed(top)
    out: list[Part] = []
    for g, cmds in parts:
        key = (g.section, g.unit)
        cat = sections[g.section].category if g.section >= 0 else None
        if key in losing and cat != RUN:
            continue  # the checks and tests of a route not taken
        keep = []
        for cmd in cmds:
            test = sw.command_kind(cmd) == sw.TEST and cat in (RUN, DEV)
            if g.section in allowed or key in chosen_units or test:
                keep.append(cmd)
        if keep:
            out.append((g, keep))
    return out
