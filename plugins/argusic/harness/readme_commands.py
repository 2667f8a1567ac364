"""Which lines of a README's code and prose are commands, and what a command reads and writes. Stdlib only.

README.md next to this file, "Commands in code": a code block's commands (its label, its prompts,
what reads as a command of a known tool; output, help text and a file's content are not), the
commands a sentence gives ("run `make check`"), and the sentence before a block that says what
the block is (output, another way, optional, a shell profile). `collect_groups` turns a document
into groups: the commands of one block or sentence with what surrounds them. Last, what a command
holds or needs ("Last checks"): a placeholder, a file the reader brings, the files it makes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

if __package__:
    from . import shell_words as sw
    from .readme_document import Checkout, Heading, Item, Prose
    from .readme_plan import Plan
    from .readme_sections import DEV, INSTALL, RUN, Section
else:  # run as a script from the harness directory
    import shell_words as sw  # type: ignore[no-redef]
    from readme_document import Checkout, Heading, Item, Prose  # type: ignore[no-redef]
    from readme_plan import Plan  # type: ignore[no-redef]
    from readme_sections import DEV, INSTALL, RUN, Section  # type: ignore[no-redef]

SHELL_LANGS = {
    "sh", "bash", "shell", "zsh", "ksh", "console", "shell-session", "shellsession", "sh-session",
    "bash-session", "terminal", "shell-script", "shellscript", "command", "commands", "cli", "cmd-line",
}  # fmt: skip
PROMPT_LANGS = {"console", "shell-session", "shellsession", "sh-session", "bash-session", "terminal"}
WINDOWS_LANGS = {"bat", "batch", "cmd", "powershell", "ps", "ps1", "pwsh", "dosbatch", "doscon"}
UNLABELLED = {"", "none", "default", "code", "sample", "plain"}
_OUTPUT_LANGS = {"text", "txt", "plaintext", "output", "log", "console-output", "stdout", "ansi"}


# ---------------------------------------------------------------------------------------------------
# Commands out of code and prose
# ---------------------------------------------------------------------------------------------------

# The last sentence before a block says what the block is.
_OUTPUT_PROSE_RE = re.compile(
    r"(?i)(\b(the|its|this|sample|example|expected|following|command'?s?|program'?s?)\s+output\b(?!\s+(of|from|to|into)\b)"
    r"|\boutput\s*(is\b|looks\b|will\b|should\b|similar\b)|^\W*(sample |example )?output\W*$"
    r"|\bshould be output\b"
    r"|\byou('ll| will| should| would)? (see|get)\b|\bpresented with\b|\bresembling\b"
    r"|\bwill (print|output|display|show|look like|produce)\b"
    r"|\bprints?( out)? (something|the following|like)\b"
    r"|\blooks like this\b|\bsomething like\b|\bsimilar to the following\b|\bshould (print|output|return)\b)"
)
_ALT_PROSE_RE = re.compile(
    r"(?i)^\W*(or\b|alternatively\b|otherwise\b|you can also\b|you may also\b|another (way|option)\b"
    r"|instead\b|to (get|build|install|compile|use)\b[^.:]*\b(with|using|from|via)\b"
    r"|if you (are using|use|prefer)\b"
    r"|(with|using|via)\s+\S+[^.]{0,40}:\s*$)"
)
_OPTIONAL_PROSE_RE = re.compile(
    r"(?i)\boptional(ly)?\b|\bif you (want|wish|like)\b|\bif you need\b|\bnot (necessary|required)\b"
    r"|\bfor (advanced|expert) users\b"
)
_PROFILE_PROSE_RE = re.compile(
    r"(?i)\b(add|put|place|append|paste|insert)\b[^.]{0,60}\b(to|in|into|at the end of)\b[^.]{0,30}"
    r"(\.bashrc|\.bash_profile|\.zshrc|\.profile|config\.fish|shell (profile|config|startup|rc)"
    r"|rc file|dotfiles)"
)
_FILE_CONTENT_RE = re.compile(
    r"(?i)^#\s*(file|filename|content of|contents of|in)\s*[:\w./-]*[:]?\s*\S+\.\w+"
    r"|^#\s*[~$\w.{}-]*/[\w./-]+:?\s*$|^#\s*[\w.-]+\.(ya?ml|toml|ini|conf|cfg|json|fish|zsh|bashrc|profile):?\s*$"
)


@dataclass
class Group:
    """Commands from one code block (or one instructing sentence), with what surrounds them."""

    commands: list[str]
    section: int
    line: int
    origin: str
    prose: str = ""  # the paragraph right before the block, in the same section
    alternative: bool = False  # introduced as another way ("or ...", "you can also ...")
    optional: bool = False
    platform: str | None = None
    unit: int = 0  # alternatives within a section are numbered units
    pick_one: bool = False  # "one of the following": the first command that applies here


def block_commands(
    lang: str, lines: list[str], origin: str = "fence", known: frozenset[str] = frozenset()
) -> tuple[list[str], list[str]]:
    """Commands of one code block and, when there are none, why (README.md, "Commands in code").

    Prompted lines are commands and the lines after them are their output; without prompts, a
    labelled shell block is all commands, while an unlabelled or prompt-less console block must read
    as commands of known tools. Shebang or `# file:` blocks are a file's content, not commands.
    """
    lang = lang.lower().lstrip(".{").rstrip("}")
    if lang in WINDOWS_LANGS:
        return [], ["a Windows shell block"]
    shell = lang in SHELL_LANGS
    if not shell and lang not in UNLABELLED:
        return [], [f"a {lang} block"]
    body = [ln.rstrip() for ln in lines]
    significant = [ln for ln in body if ln.strip()]
    if not significant:
        return [], ["an empty block"]
    first = significant[0].strip()
    if first.startswith("#!") or _FILE_CONTENT_RE.match(first):
        return [], ["a file's content (shebang or file-name comment)"]
    if sw.PYTHON_PROMPT_RE.match(first):
        return [], ["a Python session"]
    if re.match(r"(?i)^(usage|synopsis|options|commands|arguments|flags)\s*:", first):
        return [], ["a program's help text"]
    if any(sw.has_prompt(ln) for ln in significant):
        # Lines at a prompt are commands, the lines after them their output; in a shell block,
        # unprompted lines before the first prompt are commands too.
        first = next(i for i, ln in enumerate(body) if ln.strip() and sw.has_prompt(ln))
        head = sw.group_commands(body[:first]) if shell and lang not in PROMPT_LANGS else []
        return head + _prompted_commands(body[first:], known), []
    if lang in PROMPT_LANGS or not shell:
        candidates = [ln for ln in significant if not ln.strip().startswith("#")]
        if not candidates:
            return [], ["only comments"]
        heads = [ln for ln in candidates if not ln.startswith((" ", "\t"))] or candidates
        if not sw.looks_like_command(heads[0], known):
            return [], ["it does not read as commands"]
        # Lines that do not read as commands are the output of the ones before them.
        kept = [
            ln
            for ln in body
            if not ln.strip()
            or ln.startswith((" ", "\t"))
            or ln.strip().startswith("#")
            or sw.looks_like_command(ln, known)
        ]
        commands = sw.group_commands(kept)
        return [c for c in commands if "\n" in c or sw.looks_like_command(c, known)], []
    return sw.group_commands([sw.strip_prompt(ln)[0] if sw.has_prompt(ln) else ln for ln in body]), []


def _prompted_commands(body: list[str], known: frozenset[str] = frozenset()) -> list[str]:
    """Commands at prompts; continuation lines kept; everything else is output."""
    out: list[str] = []
    current: list[str] | None = None
    for raw in body:
        if current is not None:
            cont = raw
            m = re.match(r"^>\s?", cont)
            if m:
                cont = cont[m.end() :]  # a PS2 prompt at the margin (an indented `> file` is a redirection)
            current.append(cont.rstrip())
            text = "\n".join(current)
            if sw.is_complete(text):
                out.append(text)
                current = None
            continue
        cmd, had = sw.strip_prompt(raw)
        if not had:
            root, had = sw.strip_prompt(raw, allow_root=True)  # `# make install`: a root prompt
            cmd = root if had and sw.looks_like_command(root, known) else ""
        if not had or not cmd:
            continue
        if sw.is_complete(cmd):
            out.append(cmd)
        else:
            current = [cmd]
    if current:
        out.append("\n".join(current).rstrip("\\").rstrip())
    return [c for c in out if c.strip() and not c.strip().startswith("#")]


def _alternatives_in_block(commands: list[str], body: list[str]) -> list[bool]:
    """Per command: does it follow a `# or` / `# alternatively` / `# instead` comment in the block?"""
    marks: list[bool] = []
    alt = False
    pos = 0
    text_lines = [ln.strip() for ln in body]
    for cmd in commands:
        first = cmd.split("\n")[0].strip()
        while pos < len(text_lines) and sw.strip_prompt(text_lines[pos])[0] != first:
            if re.match(
                r"(?i)^(#\s*)?(or\b|alternativ|instead)|^#\s*(and if\b|if you (don't|do not|want))",
                text_lines[pos],
            ):
                alt = True
            pos += 1
        marks.append(alt)
        pos += 1
    return marks


_VERB_RE = re.compile(
    r"(?i)\b(run|running|type|typing|execute|executing|invoke|invoking|invoked|with|do|try|call|enter"
    r"|issue|just|simply)\s*(the (command|script)\s*)?:?\s*$"
)
_SPAN_RES = {
    "markdown": re.compile(r"(?<!`)`([^`\n]+)`(?!`)"),
    "rst": re.compile(r"``([^`\n]+)``"),
    "plain": re.compile(r"`([^'`\n]{2,80})'"),
}


def inline_commands(text: str, fmt: str, known: frozenset[str] = frozenset()) -> list[str]:
    """Commands given in a sentence: a code span right after "run", "type", "execute", "with" ..."""
    found: list[str] = []
    flat = " ".join(text.split())
    for m in _SPAN_RES[fmt].finditer(flat):
        span = next(g for g in m.groups() if g is not None).strip()
        before = re.split(r"[.;!?]\s", flat[max(0, m.start() - 40) : m.start()])[-1]
        after = re.split(r"[.;!?](\s|$)", flat[m.end() : m.end() + 80])[0]
        if not _VERB_RE.search(before) or _OPTIONAL_PROSE_RE.search(after):
            continue
        span, _ = sw.strip_prompt(span)
        words = sw.split_words(span)
        if not words or not sw.looks_like_command(span, known):
            continue
        kind = sw.command_kind(span)
        if kind == sw.NEUTRAL:
            continue
        if len(words) == 1 and not (words[0] in ("make", "ctest", "tox", "nox", "pytest") or "/" in words[0]):
            continue
        found.append(span)
    return found


def project_words(items: list[Item], filename: str) -> frozenset[str]:
    """The project's own command names, as far as the README's title tells (`gron`, `docutils`)."""
    words: set[str] = set()
    for item in items[:40]:
        if isinstance(item, Heading):
            for w in re.findall(r"[A-Za-z][\w-]{1,30}", item.title):
                if w.lower() not in sw.STOP_WORDS:
                    words.add(w.lower())
                    words.add(w)
            break
    return frozenset(words)


# --- groups: the commands of a block or sentence, with what surrounds them ---------------------------


def collect_groups(
    items: list[Item], owner: list[int], sections: list[Section], fmt: str, known: frozenset[str], plan: Plan
) -> list[Group]:
    groups: list[Group] = []
    last_prose: dict[int, tuple[str, int]] = {}
    last_code_pos: dict[int, int] = {}
    for pos, item in enumerate(items):
        s = owner[pos]
        cat = sections[s].category if s >= 0 else None
        if isinstance(item, Heading):
            continue
        if isinstance(item, Prose):
            last_prose[s] = (item.text, pos)
            for label, cmd in _list_item_commands(item.text, known):
                g = Group([cmd], s, item.line, "inline", prose=label)
                g.platform = sw.platform_of(label) or "fallback"
                groups.append(g)
            for cmd in inline_commands(item.text, fmt, known):
                if _changes_commit(cmd):
                    continue
                g = Group([cmd], s, item.line, "inline", prose=item.text)
                g.platform = sw.platform_of(item.text)
                groups.append(g)
            continue
        commands, why = block_commands(item.lang, item.lines, item.origin, known)
        text, at = last_prose.get(s, ("", -1))
        prose = text if at > last_code_pos.get(s, -1) else ""
        if not commands:
            if why and cat in (INSTALL, RUN, DEV):
                plan.notes.append(f"line {item.line}: not commands ({why[0]})")
            if item.origin in ("indented", "quote") and len(item.lines) <= 2:
                last_prose[s] = (" ".join(item.lines), pos)  # text that still labels what follows
            continue
        last_code_pos[s] = pos
        sentence = last_sentence(prose)
        if sentence and _OUTPUT_PROSE_RE.search(sentence) and not any(sw.has_prompt(ln) for ln in item.lines):
            plan.notes.append(f"line {item.line}: the output of a command, not commands")
            continue
        marks = _alternatives_in_block(commands, item.lines)
        pick_one = bool(re.search(r"(?i)\bone of the following\b|\beither of\b", " ".join(prose.split())))
        kept = [c for c, alt in zip(commands, marks, strict=True) if not alt]
        for c, alt in zip(commands, marks, strict=True):
            if alt:
                plan.notes.append(f"line {item.line}: `{short(c)}` is an alternative (`# or` in the block)")
        kept2 = []
        for c in kept:
            if re.match(r"^alias\s+[\w.-]+=", c.strip()):
                plan.notes.append(f"line {item.line}: `{short(c)}` is shell configuration")
                continue
            if _changes_commit(c):
                plan.notes.append(f"line {item.line}: `{short(c)}` would leave the pinned commit")
                continue
            kept2.append(c)
        if not kept2:
            continue
        g = Group(kept2, s, item.line, item.origin, prose=prose)
        g.pick_one = pick_one
        first_line = prose.strip().split("\n")[0] if prose.strip() else ""
        g.alternative = bool(first_line and _ALT_PROSE_RE.match(first_line))
        g.optional = bool(prose and _OPTIONAL_PROSE_RE.search(prose))
        if prose and _PROFILE_PROSE_RE.search(sentence or prose):
            plan.notes.append(f"line {item.line}: lines for a shell profile (configuration), not steps")
            continue
        g.platform = sw.platform_of(sentence or prose) if prose else None
        groups.append(g)
    # A sentence that names a step the section's code then shows in full adds nothing.
    code_segments: dict[int, set[str]] = {}
    for g in groups:
        if g.origin != "inline":
            for c in g.commands:
                for part in re.split(r"\s*(?:&&|\|\||;)\s*", c):
                    code_segments.setdefault(g.section, set()).add(normalise(part))
    return [
        g
        for g in groups
        if g.origin != "inline" or normalise(g.commands[0]) not in code_segments.get(g.section, set())
    ]


_LIST_CMD_RE = re.compile(r"(?m)^\s*[-*+]\s+([^`:\n]{2,80}):\s*`([^`\n]+)`")


def _list_item_commands(text: str, known: frozenset[str]) -> list[tuple[str, str]]:
    """`- Ubuntu / Debian: `apt install x``: an install command per system, in a list."""
    out = []
    for m in _LIST_CMD_RE.finditer(text):
        label, cmd = m.group(1).strip(), m.group(2).strip()
        if sw.looks_like_command(cmd, known) and sw.command_kind(cmd) == sw.INSTALL and sw.platform_of(label):
            out.append((label, cmd))
    return out


def _changes_commit(cmd: str) -> bool:
    """`git checkout v1.2`, `git pull`, `git reset --hard`: the attempt is about the pinned commit."""
    for seg in sw.segments(cmd):
        words = sw.program_words(seg)
        if words[:1] != ["git"] or len(words) < 2:
            continue
        sub = words[1]
        if sub in ("pull", "reset", "switch", "rebase", "merge"):
            return True
        if sub == "checkout" and not any(w in ("--", "-b", "-B") for w in words[2:]):
            return True
    return False


def last_sentence(text: str) -> str:
    flat = " ".join(text.replace("`", "").replace("**", "").split())
    parts = re.split(r"(?<=[.!?])\s+", flat)
    return parts[-1] if parts else ""


def short(cmd: str) -> str:
    one = " ".join(cmd.split())
    return one if len(one) <= 60 else one[:57] + "..."


def normalise(cmd: str) -> str:
    """Whitespace-normalised command without a trailing comment (how picks are compared)."""
    text = cmd.replace("\\\n", " ")
    out = []
    quote = ""
    for i, c in enumerate(text):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or text[i - 1] in " \t") and "\n" not in text[i:]:
            break
        out.append(c)
    return " ".join("".join(out).split())


# ---------------------------------------------------------------------------------------------------
# Placeholders and the reader's own files
# ---------------------------------------------------------------------------------------------------

_PLACEHOLDER_RES = [
    re.compile(r"<[A-Za-z][\w .|/-]*>"),  # <file>, <your app>
    re.compile(r"(?<!\S)\[[A-Za-z][\w .|/()-]*(\.\.\.)?\]"),  # [options], [file(s)-or-folder]
    re.compile(r"(^|\s)\.\.\.(\s|$)|\w\.\.\.(\s|$)"),  # ...
    re.compile(r"(^|[\s='\"(])/?(path/to|some)/|://\["),
    re.compile(r"\byour[_-]\w+|\byour(app|file|project|name)\b", re.I),
    re.compile(r"(^|\s)(\./)?(foo|bar|baz)(/(foo|bar|baz))*/?(\s|$)"),  # ./foo, foo/bar
]
_CAPS_TOKEN_RE = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
_CAPS_OK = {
    "HEAD", "README", "LICENSE", "TODO", "ALL", "GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS",
    "TRACE", "SIGTERM", "SIGHUP", "SIGINT", "SIGKILL", "SIGUSR1", "SIGUSR2", "INFO", "DEBUG", "WARN",
    "WARNING", "ERROR", "TRUE", "FALSE", "ON", "OFF", "YES", "NO", "NONE", "NULL", "UTF-8", "UTF8", "JSON",
    "YAML", "CSV", "XML",
}  # fmt: skip
_SOURCE_EXT = (".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".pl", ".rb", ".php", ".lua", ".r", ".jl")
_CODE_EXT = (
    ".rs",
    ".c",
    ".h",
    ".cc",
    ".cpp",
    ".hpp",
    ".go",
    ".java",
    ".kt",
    ".cs",
    ".swift",
    ".scala",
    ".hs",
    ".ml",
)
_DATA_EXT = (
    ".csv", ".tsv", ".json", ".txt", ".rst", ".md", ".xml", ".yaml", ".yml", ".toml", ".ini", ".log",
    ".jpg", ".jpeg", ".png", ".gif", ".pdf", ".db", ".sqlite", ".sqlite3", ".tar", ".gz", ".tgz", ".zip",
    ".xz", ".bz2", ".deb", ".rpm", ".whl",
)  # fmt: skip
_WRITERS = {
    "touch", "mkdir", "rm", "rmdir", "tee", "mktemp", "ln", "wget", "curl", "echo", "printf", "install",
    "chmod", "chown", "git", "cd", "export", "cp", "mv", "dd", "truncate", "openssl", "ssh-keygen",
}  # fmt: skip
INTERPRETERS = {
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "ruby",
    "perl",
    "bash",
    "sh",
    "php",
    "deno",
}


def placeholder_in(command: str) -> str | None:
    """The placeholder a command holds (`<file>`, `[options]`, `...`, path/to/, FILE), if any."""
    text = command.replace("\\\n", " ")
    bare = re.sub(r"'[^']*'", "''", text)
    for k, rx in enumerate(_PLACEHOLDER_RES):
        m = rx.search(bare)
        if not m:
            continue
        if k == 1 and re.search(r"\[\[|\[\s", text):
            continue  # [ -x file ], [[ ... ]]
        return m.group(0).strip()
    for seg in sw.segments(text):
        for w in sw.program_words(seg)[1:]:
            if _CAPS_TOKEN_RE.match(w) and w not in _CAPS_OK and _placeholder_word(w):
                return w
    return None


_PLACEHOLDER_WORDS = {
    "FILE", "FILES", "FILENAME", "PATH", "DIR", "DIRECTORY", "FOLDER", "NAME", "URL", "URI", "HOST",
    "HOSTNAME", "PORT", "USER", "USERNAME", "PASSWORD", "PASS", "TOKEN", "KEY", "SECRET", "VERSION", "ARGS",
    "ARG", "OPTIONS", "OPTION", "PATTERN", "COMMAND", "CMD", "INPUT", "OUTPUT", "SRC", "SOURCE", "DEST",
    "TARGET", "ID", "VALUE", "TAG", "BRANCH", "EMAIL", "PROJECT", "REPO", "PACKAGE", "MODULE", "QUERY",
}  # fmt: skip


def _placeholder_word(token: str) -> bool:
    """FILE, TEST_NAME, SOMEFILE, YOUR_TOKEN: a word standing for something the reader supplies."""
    parts = token.split("_")
    if any(p in _PLACEHOLDER_WORDS for p in parts):
        return True
    return token.startswith(("SOME", "YOUR", "MY_")) or any(
        token.endswith(w) for w in ("FILE", "NAME", "PATH", "DIR")
    )


def _inputs(command: str) -> list[str]:
    """Files a command reads first: the script given to an interpreter, else its first data file."""
    segs = sw.segments(command)
    if not segs:
        return []
    words = sw.program_words(segs[0])
    if not words:
        return []
    prog = words[0]
    found = []
    if prog.lower().endswith(_SOURCE_EXT) and "/" in prog:
        found.append(prog)
    args: list[str] = []
    redirect = False
    for w in words[1:]:
        if w in (">", ">>", "2>", "&>", "2>>", ">|"):
            redirect = True  # what follows is written, not read
            continue
        if redirect:
            redirect = False
            continue
        if w.strip("()") and w != "<":
            args.append(w.strip("()"))
    base = prog.rsplit("/", 1)[-1]
    if base in _WRITERS:
        return found  # their file arguments are what they create or change
    if base in INTERPRETERS or re.fullmatch(r"python\d(\.\d+)?", base):
        script = next((a for a in args if not a.startswith("-")), "")
        if args and args[0] in ("-m", "-c"):
            script = ""
        if script and (
            script.lower().endswith(_SOURCE_EXT + (".pl", ".pm")) or base in ("perl",) and "." in script
        ):
            found.append(script)
    else:
        data = next(
            (
                a
                for a in args
                if not a.startswith("-") and a.lower().endswith(_DATA_EXT + _SOURCE_EXT + _CODE_EXT)
            ),
            "",
        )
        if data and "*" not in data and "://" not in data and "$" not in data:
            found.append(data)
    return found


def missing_input(command: str, cwd: str, checkout: Checkout, made: set[str]) -> str | None:
    """A file the command reads that is neither in the checkout nor made by an earlier command."""
    if not checkout.known or cwd == "/":
        return None
    for seg in sw.segments(command):
        words = sw.program_words(seg)
        for opt, value in zip(words, words[1:], strict=False):
            if opt in ("--path", "--manifest-path", "-C") and value.startswith("./"):
                folder = os.path.normpath(os.path.join(cwd, value))
                if folder not in made and "*" not in made and checkout.exists(folder) is False:
                    return value  # `cargo install --path ./x`: a folder that is not here
    for cand in _inputs(command):
        path = os.path.normpath(os.path.join(cwd, cand)) if cwd else os.path.normpath(cand)
        if path in made or cand in made or any(path.startswith(m + "/") for m in made):
            continue
        parent = os.path.dirname(path) or "."
        if checkout.exists(path) is False and checkout.exists(parent) is not False:
            return (
                cand  # its folder is here, it is not: the reader's file (an output's folder would be missing)
            )
    return None


def files_made(command: str, cwd: str) -> set[str]:
    """Files and folders a command writes (redirections, -o, -B, mkdir, touch, clone, tar)."""
    made: set[str] = set()
    here = "" if cwd == "/" else cwd
    for m in re.finditer(r"(?<![<>\d&])>{1,2}\s*([^\s;&|)]+)", command):
        made.add(os.path.normpath(os.path.join(here, m.group(1))))
    for seg in sw.segments(command):
        words = sw.program_words(seg)
        if not words:
            continue
        for i, w in enumerate(words):
            if w in ("-o", "--output", "--out", "-B", "-O") and i + 1 < len(words):
                made.add(os.path.normpath(os.path.join(here, words[i + 1])))
            elif w.startswith("-B") and len(w) > 2 and words[0] == "cmake":
                made.add(os.path.normpath(os.path.join(here, w[2:])))
            elif words[0] in ("touch", "mkdir") and i > 0 and not w.startswith("-"):
                made.add(os.path.normpath(os.path.join(here, w)))
        if words[:2] == ["git", "clone"]:
            args = [a for a in words[2:] if not a.startswith("-")]
            if len(args) >= 2:
                made.add(os.path.normpath(os.path.join(here, args[1])))
            elif args:
                made.add(re.sub(r"\.git$", "", args[0].rstrip("/").rsplit("/", 1)[-1]))
        if words[0] in ("tar", "unzip"):
            made.add("*")  # unpacks something: any folder may exist now
        if words[0] in ("wget", "curl") and not any(w in ("-O", "-o", "-qO-", "-O-") for w in words):
            urls = [w for w in words if "://" in w]
            if urls and (words[0] == "wget" or any(w in ("-O", "--remote-name", "-LO") for w in words)):
                made.add(os.path.normpath(os.path.join(here, urls[0].rstrip("/").rsplit("/", 1)[-1])))
    return made
