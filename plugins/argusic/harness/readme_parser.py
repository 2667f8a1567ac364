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
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

if __package__:
    from . import decode as _decode
    from . import shell_words as sw
else:  # run as a script from the harness directory
    import decode as _decode  # type: ignore[no-redef]
    import shell_words as sw  # type: ignore[no-redef]

# ---------------------------------------------------------------------------------------------------
# Finding the README
# ---------------------------------------------------------------------------------------------------

# Lower-cased names, best first: Markdown, reStructuredText, text, none.
README_NAMES = (
    "readme.md",
    "readme.markdown",
    "readme.mkdn",
    "readme.mkd",
    "readme.mdown",
    "readme.rst",
    "readme.rest",
    "readme.txt",
    "readme.text",
    "readme",
)


def find_readme(project: str) -> str | None:
    """The project's README: the first of README_NAMES, matched case-insensitively, in the root."""
    try:
        entries = os.listdir(project)
    except OSError:
        return None
    by_name: dict[str, str] = {}
    for entry in sorted(entries):
        path = os.path.join(project, entry)
        if os.path.isfile(path) and not os.path.islink(path):
            by_name.setdefault(entry.lower(), entry)
    for name in README_NAMES:
        if name in by_name:
            return os.path.join(project, by_name[name])
    return None


class Checkout:
    """What is in the project checkout, to answer "does ./configure exist?" like a person would."""

    def __init__(self, paths: Iterable[str] | None = None, root: str | None = None) -> None:
        self.root = root
        self.paths = {p.rstrip("/") for p in paths} if paths is not None else None

    @classmethod
    def from_dir(cls, root: str) -> Checkout:
        return cls(root=root)

    @classmethod
    def from_listing(cls, lines: Iterable[str]) -> Checkout:
        return cls(paths=[line.strip() for line in lines if line.strip()])

    @property
    def known(self) -> bool:
        return self.root is not None or self.paths is not None

    def exists(self, rel: str) -> bool | None:
        """True/False, or None when unknown (no listing, or a path outside the checkout)."""
        rel = rel.strip()
        if not rel or rel.startswith(("/", "~", "$")) or ".." in rel.split("/"):
            return None
        rel = os.path.normpath(rel)
        if rel in ("", "."):
            return True
        if self.root is not None:
            full = os.path.realpath(os.path.join(self.root, rel))
            root = os.path.realpath(self.root)
            if not (full == root or full.startswith(root + os.sep)):
                return None
            return os.path.exists(full)
        if self.paths is not None:
            return rel in self.paths
        return None


# ---------------------------------------------------------------------------------------------------
# The document
# ---------------------------------------------------------------------------------------------------


@dataclass
class Heading:
    level: int
    title: str
    line: int


@dataclass
class Code:
    lang: str  # "" when unlabelled
    lines: list[str]
    line: int
    origin: str  # fence, indented, literal, directive, pre, quote


@dataclass
class Prose:
    text: str
    line: int


Item = Heading | Code | Prose

SHELL_LANGS = {
    "sh", "bash", "shell", "zsh", "ksh", "console", "shell-session", "shellsession", "sh-session",
    "bash-session", "terminal", "shell-script", "shellscript", "command", "commands", "cli", "cmd-line",
}  # fmt: skip
PROMPT_LANGS = {"console", "shell-session", "shellsession", "sh-session", "bash-session", "terminal"}
WINDOWS_LANGS = {"bat", "batch", "cmd", "powershell", "ps", "ps1", "pwsh", "dosbatch", "doscon"}
UNLABELLED = {"", "none", "default", "code", "sample", "plain"}
_OUTPUT_LANGS = {"text", "txt", "plaintext", "output", "log", "console-output", "stdout", "ansi"}


def detect_format(text: str, filename: str) -> str:
    """markdown, rst or plain."""
    ext = os.path.splitext(filename.lower())[1]
    if ext in (".md", ".markdown", ".mkdn", ".mkd", ".mdown"):
        return "markdown"
    if ext in (".rst", ".rest"):
        return "rst"
    rst_signs = len(re.findall(r"(?m)^\.\. \w[\w-]*::|::\s*$|^\.\. _", text))
    md_signs = len(re.findall(r"(?m)^ {0,3}(```|~~~)|^#{1,6} \S|\]\([^)]+\)", text))
    if rst_signs >= 2 and rst_signs >= md_signs:
        return "rst"
    if md_signs >= 2:
        return "markdown"
    return "plain"


def read_document(text: str, fmt: str) -> list[Item]:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(4).split("\n")
    if fmt == "rst":
        return _read_rst(lines)
    if fmt == "plain":
        return _read_plain(lines)
    return _read_markdown(lines)


# --- Markdown -------------------------------------------------------------------------------------

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t]*#*[ \t]*$")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE_RE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*\{?\s*\.?([\w+#.-]*)[^`]*$")
_BQ_RE = re.compile(r"^(\s{0,3}>\s?)+")
_LIST_RE = re.compile(r"^\s*([-*+]|\d+[.)])\s+")
_TAG_RE = re.compile(r"<[^>]+>")


def _read_markdown(lines: list[str]) -> list[Item]:
    items: list[Item] = []
    prose: list[str] = []
    prose_line = 0
    i = 0
    n = len(lines)

    def flush() -> None:
        nonlocal prose
        text = "\n".join(prose).strip()
        if text:
            items.append(Prose(text, prose_line))
        prose = []

    def add_prose(text: str, at: int) -> None:
        nonlocal prose_line
        if not prose:
            prose_line = at
        prose.append(text)

    while i < n:
        raw = lines[i]
        line = _BQ_RE.sub("", raw) if raw.lstrip().startswith(">") else raw
        stripped = line.strip()
        # HTML comments hide what they hold.
        if stripped.startswith("<!--"):
            while i < n and "-->" not in lines[i]:
                i += 1
            i += 1
            continue
        m = _FENCE_RE.match(line)
        if m:
            flush()
            indent, marker, lang = len(m.group(1)), m.group(2), m.group(3).lower()
            quoted = raw.lstrip().startswith(">")  # a fence inside a block quote: its lines are quoted too
            body: list[str] = []
            j = i + 1
            while j < n:
                inner = _BQ_RE.sub("", lines[j]) if quoted and lines[j].lstrip().startswith(">") else lines[j]
                if inner.strip().startswith(marker[0] * len(marker)) and not inner.strip().strip(marker[0]):
                    break
                body.append(inner[indent:] if inner[:indent].strip() == "" else inner.lstrip())
                j += 1
            items.append(Code(lang, body, i + 1, "fence"))
            i = j + 1
            continue
        if re.match(r"(?i)^\s*<pre\b", stripped):
            flush()
            body = []
            j = i
            first = re.sub(r"(?i)^\s*<pre[^>]*>", "", line)
            if re.search(r"(?i)</pre>", first):
                body.append(re.sub(r"(?i)</pre>.*", "", first))
            else:
                body.append(first)
                j += 1
                while j < n and not re.search(r"(?i)</pre>", lines[j]):
                    body.append(lines[j])
                    j += 1
                if j < n:
                    body.append(re.sub(r"(?i)</pre>.*", "", lines[j]))
            body = [_html_unescape(_TAG_RE.sub("", b)) for b in body if _TAG_RE.sub("", b).strip() or b == ""]
            items.append(Code("", body, i + 1, "pre"))
            i = j + 1
            continue
        if stripped.startswith("|") and i + 1 < n and re.match(r"^\s*\|?\s*:?-{3,}", lines[i + 1]):
            # A table: its rows' commands (first code span of a row) form one block.
            flush()
            body = []
            j = i + 2
            while j < n and lines[j].strip().startswith("|"):
                cells = [c.strip() for c in lines[j].strip().strip("|").split("|")]
                spans = [m.group(1) for c in cells for m in re.finditer(r"`([^`]+)`", c)]
                label = " ".join(re.sub(r"`[^`]*`", "", c) for c in cells)
                if spans and _platform_of(label) != "other":
                    body.append(spans[0])
                j += 1
            if body:
                items.append(Code("", body, i + 1, "table"))
            add_prose(" ".join(lines[i:j]), i + 1)
            flush()
            i = j
            continue
        m = _ATX_RE.match(line)
        if m and not raw.lstrip().startswith(">"):
            flush()
            items.append(Heading(len(m.group(1)), _clean_title(m.group(2) or ""), i + 1))
            i += 1
            continue
        if (
            stripped
            and i + 1 < n
            and _SETEXT_RE.match(lines[i + 1])
            and not line.startswith("    ")
            and not _LIST_RE.match(line)
            and "|" not in stripped
            and not prose  # a setext heading is a paragraph of its own
        ):
            flush()
            level = 1 if lines[i + 1].strip().startswith("=") else 2
            items.append(Heading(level, _clean_title(stripped), i + 1))
            i += 2
            continue
        m = re.match(r"(?i)^\s*<h([1-6])[^>]*>(.*?)</h\1>\s*$", stripped)
        if m:
            flush()
            items.append(Heading(int(m.group(1)), _clean_title(_TAG_RE.sub("", m.group(2))), i + 1))
            i += 1
            continue
        # Indented code: a run of lines indented 4+ columns after a blank line.
        if (
            line.startswith("    ")
            and stripped
            and (i == 0 or not lines[i - 1].strip())
            and not _LIST_RE.match(line)
            and not _in_list_para(lines, i)
        ):
            flush()
            body = []
            j = i
            while j < n and (lines[j].startswith("    ") or not lines[j].strip()):
                if lines[j].strip() and _LIST_RE.match(lines[j]) and _indent(lines[j]) < _indent(line):
                    break
                body.append(lines[j])
                j += 1
            while body and not body[-1].strip():
                body.pop()
                j -= 1
            items.append(Code("", _dedent_block(body), i + 1, "indented"))
            i = j
            continue
        if not stripped:
            flush()
        else:
            add_prose(_TAG_RE.sub(" ", line) if "<" in line else line, i + 1)
        i += 1
    flush()
    return items


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _in_list_para(lines: list[str], i: int) -> bool:
    """An indented line that continues a list item's paragraph text (not code)."""
    j = i - 1
    while j >= 0 and not lines[j].strip():
        j -= 1
    if j < 0:
        return False
    prev = lines[j]
    m = _LIST_RE.match(prev)
    if not m:
        return False
    content_indent = m.end()
    indent = len(lines[i]) - len(lines[i].lstrip())
    # Text at the list item's content indent continues it; code sits 4 columns deeper.
    return indent < content_indent + 4 and not sw.looks_like_command(sw.strip_prompt(lines[i])[0])


def _dedent_block(body: list[str]) -> list[str]:
    indents = [len(b) - len(b.lstrip()) for b in body if b.strip()]
    cut = min(indents) if indents else 0
    return [b[cut:] if b.strip() else "" for b in body]


def _clean_title(title: str) -> str:
    title = re.sub(
        r"\[!\[[^\]]*\]\([^)]*\)\]\([^)]*\)|\[!\[[^\]]*\]\([^)]*\)\]\[[^\]]*\]|!\[[^\]]*\]\([^)]*\)",
        "",
        title,
    )
    title = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", title)  # links
    title = _TAG_RE.sub("", title)
    return title.strip().strip("#").strip()


def _html_unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&amp;", "&")


# --- reStructuredText -----------------------------------------------------------------------------

_RST_ADORN_RE = re.compile(r"^([=\-~^\"'`#*+:._])\1{2,}\s*$")
_DIRECTIVE_RE = re.compile(r"^(\s*)\.\.\s+([\w-]+)::\s*(.*)$")


def _read_rst(lines: list[str]) -> list[Item]:
    items: list[Item] = []
    styles: list[tuple[str, bool]] = []
    prose: list[str] = []
    prose_line = 0
    n = len(lines)
    i = 0

    def flush() -> None:
        nonlocal prose
        text = "\n".join(prose).strip()
        if text:
            items.append(Prose(text, prose_line))
        prose = []

    def prose_start_line(at: int) -> int:
        k = at
        while k > 0 and lines[k - 1].strip() and not _LIST_RE.match(lines[k]):
            k -= 1
        return k

    def level_of(char: str, over: bool) -> int:
        if (char, over) not in styles:
            styles.append((char, over))
        return styles.index((char, over)) + 1

    def block_after(start: int, parent_indent: int) -> tuple[list[str], int]:
        j = start
        while j < n and not lines[j].strip():
            j += 1
        body: list[str] = []
        while j < n:
            line = lines[j]
            if line.strip() and len(line) - len(line.lstrip()) <= parent_indent:
                break
            body.append(line)
            j += 1
        while body and not body[-1].strip():
            body.pop()
        return _dedent_block(body), j

    while i < n:
        line = lines[i]
        stripped = line.strip()
        # Headings: text underlined (and maybe overlined) with one repeated punctuation character.
        if (
            stripped
            and i + 1 < n
            and _RST_ADORN_RE.match(lines[i + 1])
            and not _RST_ADORN_RE.match(line)
            and len(lines[i + 1].strip()) >= max(3, len(stripped) * 0.6)
            and not line.startswith(" ")
        ):
            over = i > 0 and _RST_ADORN_RE.match(lines[i - 1]) is not None
            flush()
            if over and items and isinstance(items[-1], Prose):
                pass
            items.append(Heading(level_of(lines[i + 1].strip()[0], over), _clean_title(stripped), i + 1))
            i += 2
            continue
        if (
            _RST_ADORN_RE.match(line)
            and i + 2 < n
            and lines[i + 1].strip()
            and _RST_ADORN_RE.match(lines[i + 2])
        ):
            flush()  # an overlined title (its text may be indented)
            items.append(Heading(level_of(line.strip()[0], True), _clean_title(lines[i + 1].strip()), i + 2))
            i += 3
            continue
        m = _DIRECTIVE_RE.match(line)
        if m:
            flush()
            indent, name, arg = len(m.group(1)), m.group(2).lower(), m.group(3).strip()
            body, j = block_after(i + 1, indent)
            body = [b for b in body if not re.match(r"^\s*:[\w-]+:", b)] if body else body
            while body and not body[0].strip():
                body.pop(0)
            if name in ("code-block", "code", "sourcecode", "prompt"):
                items.append(Code(arg.split()[0].lower() if arg else "", body, i + 1, "directive"))
            i = j
            continue
        if stripped.endswith("::") and not stripped.startswith(".."):
            text = stripped[:-2].rstrip()
            if text:
                if not prose:
                    prose_line = i + 1
                prose.append(line.rstrip()[:-1] if not text.endswith(" ") else text)
            start = prose_start_line(i)
            flush()
            indent = len(line) - len(line.lstrip())
            m_list = _LIST_RE.match(lines[start])
            if m_list:
                indent = max(indent, m_list.end())
            body, j = block_after(i + 1, indent)
            items.append(Code("", body, i + 2, "literal"))
            i = j
            continue
        # An indented block that is not a literal block: a block quote (sometimes a command anyway).
        quote = stripped and line.startswith("  ") and (i == 0 or not lines[i - 1].strip()) and not prose
        if quote and not _LIST_RE.match(lines[i - 2] if i >= 2 else ""):
            indent = len(line) - len(line.lstrip())
            body, j = block_after(i, indent - 1)
            items.append(Code("", body, i + 1, "quote"))
            i = j
            continue
        if not stripped:
            flush()
        else:
            if not prose:
                prose_line = i + 1
            prose.append(line)
        i += 1
    flush()
    return items


# --- plain text -----------------------------------------------------------------------------------


def _read_plain(lines: list[str]) -> list[Item]:
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip() and len(line.split()) >= 6]
    base = max(set(indents), key=indents.count) if indents else 0
    items: list[Item] = []
    prose: list[str] = []
    prose_line = 0
    n = len(lines)
    i = 0

    def flush() -> None:
        nonlocal prose
        text = "\n".join(prose).strip()
        if text:
            items.append(Prose(text, prose_line))
        prose = []

    while i < n:
        line = lines[i]
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        blank_before = i == 0 or not lines[i - 1].strip()
        blank_after = i + 1 >= n or not lines[i + 1].strip()
        if stripped and i + 1 < n and _RST_ADORN_RE.match(lines[i + 1]) and indent <= base:
            flush()
            items.append(Heading(1 if lines[i + 1].strip()[0] == "=" else 2, _clean_title(stripped), i + 1))
            i += 2
            continue
        is_caps = (
            re.fullmatch(r"[A-Z][A-Z0-9 &/()-]{2,60}", stripped) is not None
            and indent < max(base, 1)
            and blank_before
        )
        is_star = re.fullmatch(r"\*\s+[A-Z][\w /&-]{1,50}", stripped) and indent == 0 and blank_after
        is_colon = (
            re.fullmatch(r"[A-Z][\w ,/&-]{1,40}:", stripped)
            and indent == 0
            and blank_before
            and blank_after
            and len(stripped.split()) <= 5
        )
        if is_caps or is_star or is_colon:
            flush()
            items.append(Heading(2, _clean_title(stripped.lstrip("*").rstrip(":")), i + 1))
            i += 1
            continue
        if stripped and indent > base and blank_before:
            flush()
            body = []
            j = i
            while j < n and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > base):
                body.append(lines[j])
                j += 1
            while body and not body[-1].strip():
                body.pop()
                j -= 1
            items.append(Code("", _dedent_block(body), i + 1, "indented"))
            i = j
            continue
        if not stripped:
            flush()
        else:
            if not prose:
                prose_line = i + 1
            prose.append(line)
        i += 1
    flush()
    return items


# ---------------------------------------------------------------------------------------------------
# Sections
# ---------------------------------------------------------------------------------------------------

INSTALL, RUN, DEV, SKIP, VERIFY, MOCK = "install", "run", "dev", "skip", "verify", "mock"

# Checked in this order; the first match gives the heading's category (README.md, "Sections").
CATEGORY_RULES: list[tuple[str, re.Pattern[str]]] = [
    (MOCK, re.compile(r"\bmock")),
    (RUN, re.compile(r"\bverif\w* (the |your )?install|\bcheck(ing)? (the |your )?install")),
    (
        SKIP,
        re.compile(
            r"\blicen[cs]e|\bcopyright|\bchange ?log|\bhistory\b|\brelease notes|\bcredits?\b|\bthanks"
            r"|\backnowledg|\bauthors?\b|\bsponsor|\bbackers\b|\bdonat|\bsupport\b|\bcontact|\bcommunity"
            r"|\bfaq\b|\btroubleshoot|\bknown (issues|problems|bugs)|\bcaveats?\b|\blimitations?\b"
            r"|\buninstall|\bremov(al|ing)\b|\bmigrat|\bconfigur|\bsettings?\b"
            r"|\boptions\b|\bflags\b|\benvironment variables|\bcustomi[sz]|\bcompletions?\b|\bintegrat"
            r"|\beditors?\b|\bplugins?\b|\bthemes?\b|\bapi\b|\breference\b|\bdocumentation\b|\bdocs\b"
            r"|\balternatives?\b|\brelated\b|\bsee also\b"
            r"|\bsimilar\b|\bdeploy|\bdocker|\bkubernetes|\bscreen ?shots?\b|\bfeatures?\b|\bstatus\b"
            r"|\broadmap|\btodo\b|\bsecurity\b|\bvulnerab|\bcit(ing|ation)\b|\bbadges?\b|\bcontents\b"
            r"|\babout\b|\bwhy\b|\bhow it works|\bbackground\b|\bdesign\b|\bphilosoph|\binternals?\b"
            r"|\barchitecture\b|\badvanced\b|\bmore (usage|examples)|\bpro[- ]tips\b"
            r"|\bsignatures?\b|\bchecksums?\b|\bpronunciation\b|\bmaintainers?\b|\bgovernance\b"
            r"|\bteam\b|\bcompar(ing|ison|e)\b|^benchmarks?( results)?$|^performance$"
        ),
    ),
    (VERIFY, re.compile(r"\bverif|\bvalidat|\bcheck(ing)? the (output|result)")),
    (DEV, re.compile(r"\bdevelop|\bcontribut|\bhacking\b|\bfor developers\b")),
    (
        INSTALL,
        re.compile(
            r"\binstall|\bset ?-?up\b|\bbuild|\bcompil|\bfrom source\b|\brequirements?\b|\bprerequisites?\b"
            r"|\bdependenc|\bget(ting)? the (code|source)\b"
        ),
    ),
    (SKIP, re.compile(r"\bupgrad|\bupdat(e|es|ing)\b")),  # after install: "Installing and Updating" installs
    (
        RUN,
        re.compile(
            r"\busage\b|\busing\b|\bhow to use\b|\bquick ?-?start|\bgetting started\b|\bget started\b"
            r"|\brun|\bexamples?\b|\bdemo\b|\btutorial\b|\btour\b|\btry\b|\btest"
            r"|\bwalk ?through\b|\bfirst steps?\b"
            r"|\bbasic\b|\bhello\b"
        ),
    ),
]
STRONG_RUN_RE = re.compile(
    r"\bexamples?\b|\bdemo\b|\btutorial\b|\btests?\b|\btesting\b|\bquick ?-?start|\bgetting started\b"
    r"|\busage\b"
)
TUTORIAL_RE = re.compile(r"\btutorial\b|\btour\b|\bwalk ?through\b")  # read through, every subsection
PREREQUISITE_RE = re.compile(
    r"^(system |build |runtime |software |other )?(requirements?|prerequisites?|dependencies)\b"
    r"|^install(ing)? (the )?(dependencies|requirements|prerequisites)\b|^before you (begin|start)"
)
TEST_HEADING_RE = re.compile(r"\btest")


def _norm_title(title: str) -> str:
    t = re.sub(r"[^\w\s+#./-]", " ", title.lower().replace("_", " "))
    return " ".join(t.split())


def classify_heading(title: str) -> str | None:
    t = _norm_title(title)
    for category, pattern in CATEGORY_RULES:
        if pattern.search(t):
            return category
    return None


@dataclass
class Section:
    index: int  # -1 for the text before the first heading
    title: str
    level: int
    parent: int | None
    own: str | None  # the heading's own category
    category: str | None = None  # effective category (own, inherited, or skip from an ancestor)
    children: list[int] = field(default_factory=list)
    platform: str | None = None  # ours / other / None


def build_sections(items: list[Item]) -> tuple[list[Section], list[int]]:
    """Sections of the document and, per item, the index of the section it belongs to."""
    sections: list[Section] = []
    owner: list[int] = []
    stack: list[int] = []
    title_seen = False
    titles_at_level: dict[int, int] = {}
    for item in items:
        if isinstance(item, Heading):
            titles_at_level[item.level] = titles_at_level.get(item.level, 0) + 1
    empty_label: tuple[int, str | None] | None = None  # (level, category) of a heading with no content
    for item in items:
        if isinstance(item, Heading):
            if (
                stack
                and sections[stack[-1]].index == len(sections) - 1
                and owner
                and owner[-1] == stack[-1]
                and isinstance(items[len(owner) - 1], Heading)
            ):
                prev = sections[stack[-1]]
                if prev.level == item.level and prev.category not in (None, SKIP):
                    empty_label = (prev.level, prev.category)
            while stack and sections[stack[-1]].level >= item.level:
                stack.pop()
            parent = stack[-1] if stack else None
            own = classify_heading(item.title)
            if not title_seen and item.level == 1 and titles_at_level.get(1, 0) == 1:
                own = None  # the document's title names the project, whatever its words
            title_seen = True
            sec = Section(len(sections), item.title, item.level, parent, own)
            sec.category = own
            if empty_label and own is None and empty_label[0] == item.level:
                sec.category = empty_label[1]  # "### Installation" then "### Binary Release": one topic
            elif empty_label and item.level <= empty_label[0] and own is not None:
                empty_label = None
            if parent is not None:
                p = sections[parent]
                p.children.append(sec.index)
                if p.category == SKIP:
                    sec.category = SKIP
                elif own is None:
                    sec.category = p.category
            plat = _platform_of(item.title)
            sec.platform = plat or (sections[parent].platform if parent is not None else None)
            sections.append(sec)
            stack.append(sec.index)
            owner.append(sec.index)
        else:
            owner.append(stack[-1] if stack else -1)
    return sections, owner


def _platform_of(text: str) -> str | None:
    """ours (Debian, Linux, Unix), other (macOS, Windows, other distros, Docker...), fallback, or None."""
    t = text.lower()
    if re.search(r"\bother (systems|platforms|operating systems|os(es)?)\b", t):
        return "fallback"
    ours = sw.OUR_PLATFORM_RE.search(t)
    debian = re.search(r"\b(debian|ubuntu|mint|devuan|raspbian|bookworm)\b", t)
    distro = sw.OTHER_DISTRO_RE.search(t)
    other = sw.OTHER_PLATFORM_RE.search(t)
    if debian:
        return "ours"
    if distro:
        return "other"  # "Alpine Linux", "Arch Linux": another Linux
    if other and not ours:
        return "other"
    if ours:
        return "ours"  # "UNIX/Mac OS X/Cygwin", "On macOS or Linux": works here too
    return None


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
_INTERPRETERS = {
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
    if base in _INTERPRETERS or re.fullmatch(r"python\d(\.\d+)?", base):
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


# ---------------------------------------------------------------------------------------------------
# The plan
# ---------------------------------------------------------------------------------------------------


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
    groups = _collect_groups(items, owner, sections, fmt, known, plan)

    # Verify and mock sections keep their literal meaning: decoding needs them as written.
    for g in groups:
        cat = sections[g.section].category if g.section >= 0 else None
        if cat in (VERIFY, MOCK):
            getattr(plan, cat).extend(g.commands)
            plan.blocks.append(Block(cat, list(g.commands), sections[g.section].title, g.line))
    has_install_section = any(s.category == INSTALL for s in sections)
    groups = [g for g in groups if _followable(g, sections, has_install_section)]

    _drop_other_platforms(groups, sections, plan)
    _drop_project_clone(groups, plan, known)
    _drop_outside_checkout(groups, sections, plan)
    _number_units(groups)

    install_parts, run_parts = _assign_phases(groups, sections)
    install_parts, variants = _drop_variants(install_parts, checkout, plan)
    run_parts = [(g, cmds) for g, cmds in run_parts if id(g) not in variants]
    chosen, losing = _choose_install(install_parts, sections, checkout, plan, known)
    _apply_configure_rule(chosen, checkout, plan)
    _system_packages_first(chosen, plan)
    runs = _choose_runs(run_parts, sections, chosen, losing)

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
                    plan.notes.append(f"line {g.line}: `{_short(cmd)}` is already taken")
                    continue
                hole = placeholder_in(cmd)
                if hole:
                    plan.notes.append(f"line {g.line}: `{_short(cmd)}` has a placeholder ({hole})")
                    continue
                miss = missing_input(cmd, cwd, checkout, made)
                if miss:
                    plan.notes.append(f"line {g.line}: `{_short(cmd)}` reads {miss}, not in the checkout")
                    continue
                target = _cd_target(cmd)
                folder = os.path.normpath(os.path.join(cwd, target)) if target and cwd != "/" else ""
                if folder and "*" not in made and folder not in made and checkout.exists(folder) is False:
                    plan.notes.append(f"line {g.line}: `{_short(cmd)}`: no such folder in the checkout")
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


def _collect_groups(
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
                g.platform = _platform_of(label) or "fallback"
                groups.append(g)
            for cmd in inline_commands(item.text, fmt, known):
                if _changes_commit(cmd):
                    continue
                g = Group([cmd], s, item.line, "inline", prose=item.text)
                g.platform = _platform_of(item.text)
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
        sentence = _last_sentence(prose)
        if sentence and _OUTPUT_PROSE_RE.search(sentence) and not any(sw.has_prompt(ln) for ln in item.lines):
            plan.notes.append(f"line {item.line}: the output of a command, not commands")
            continue
        marks = _alternatives_in_block(commands, item.lines)
        pick_one = bool(re.search(r"(?i)\bone of the following\b|\beither of\b", " ".join(prose.split())))
        kept = [c for c, alt in zip(commands, marks, strict=True) if not alt]
        for c, alt in zip(commands, marks, strict=True):
            if alt:
                plan.notes.append(f"line {item.line}: `{_short(c)}` is an alternative (`# or` in the block)")
        kept2 = []
        for c in kept:
            if re.match(r"^alias\s+[\w.-]+=", c.strip()):
                plan.notes.append(f"line {item.line}: `{_short(c)}` is shell configuration")
                continue
            if _changes_commit(c):
                plan.notes.append(f"line {item.line}: `{_short(c)}` would leave the pinned commit")
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
        g.platform = _platform_of(sentence or prose) if prose else None
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
        if sw.looks_like_command(cmd, known) and sw.command_kind(cmd) == sw.INSTALL and _platform_of(label):
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


def _last_sentence(text: str) -> str:
    flat = " ".join(text.replace("`", "").replace("**", "").split())
    parts = re.split(r"(?<=[.!?])\s+", flat)
    return parts[-1] if parts else ""


def _followable(g: Group, sections: list[Section], has_install_section: bool) -> bool:
    cat = sections[g.section].category if g.section >= 0 else None
    if cat is None:
        # No heading about installing: install commands outside the categorised sections count.
        return not has_install_section and all(sw.command_kind(c) == sw.INSTALL for c in g.commands)
    return cat in (INSTALL, RUN, DEV)


def _drop_other_platforms(groups: list[Group], sections: list[Section], plan: Plan) -> None:
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
                plan.notes.append(f"line {g.line}: `{_short(cmd)}` is another system's tool")
            else:
                kept.append(cmd)
        if g.pick_one and len(kept) > 1:
            plan.notes.append(f"line {g.line}: one of {len(kept)} alternatives taken")
            kept = kept[:1]
        g.commands = kept


def _number_units(groups: list[Group]) -> None:
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


def _short(cmd: str) -> str:
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


def _drop_project_clone(groups: list[Group], plan: Plan, known: frozenset[str] = frozenset()) -> None:
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
                plan.notes.append(f"line {g.line}: `{_short(cmd)}`: the checkout is already here")
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


def _drop_outside_checkout(groups: list[Group], sections: list[Section], plan: Plan) -> None:
    """A section whose commands `cd` to an absolute path or home works elsewhere, not in this checkout."""
    leaving = {g.section for g in groups if any(_leaves_checkout(c) for c in g.commands)}
    for g in groups:
        if g.section in leaving and g.commands:
            plan.notes.append(f"line {g.line}: works outside the checkout")
            g.commands = []


# --- phases ---------------------------------------------------------------------------------------

Part = tuple[Group, list[str]]


def _assign_phases(groups: list[Group], sections: list[Section]) -> tuple[list[Part], list[Part]]:
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
                trying = bool(_TRY_PROSE_RE.search(_last_sentence(g.prose))) if g.prose else False
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
        titles = " / ".join(_norm_title(sections[i].title) for i in _ancestry(sections[g0.section], sections))
        near = _norm_title(sections[g0.section].title)
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


def _choose_install(
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
        title = _norm_title(s.title) if s else ""
        titles = " ".join(_norm_title(sections[i].title) for i in _ancestry(s, sections)) if s else ""
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
                        f"line {g.line}: `{_short(c)}`: the published release; this checkout is built instead"
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
        if base in _INTERPRETERS or base in (
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


def _drop_variants(parts: list[Part], checkout: Checkout, plan: Plan) -> tuple[list[Part], set[int]]:
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


def _system_packages_first(chosen: list[Part], plan: Plan) -> None:
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
        plan.notes.append(f"`{_short(c)}` moved before the build: system packages first")


def _is_system_package(cmd: str) -> bool:
    words = sw.program_words(sw.segments(cmd)[0]) if sw.segments(cmd) else []
    return words[:2] in (["apt", "install"], ["apt-get", "install"])


def _apply_configure_rule(chosen: list[Part], checkout: Checkout, plan: Plan) -> None:
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
    plan.notes.append(f"`{_short(cmd)}` moved before ./configure: this checkout has no configure script")


# --- choosing the run steps -----------------------------------------------------------------------


def _choose_runs(
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
        read_through = TUTORIAL_RE.search(_norm_title(sections[idx].title))
        for c in sections[idx].children:
            strong = STRONG_RUN_RE.search(_norm_title(sections[c].title))
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
