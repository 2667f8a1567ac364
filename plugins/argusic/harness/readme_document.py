"""Finding a project's README and splitting it into headings, prose and code. Stdlib only.

The first job of reading a README (README.md next to this file, "Finding and splitting it"): which
file is the README, which syntax it is written in (Markdown, reStructuredText or plain text), and
its items in order: headings, paragraphs of prose, and code (fenced, indented, literal and
directive blocks, <pre>, tables of code spans). `Checkout` answers what is in the project folder
the way a person looking at it would (is there a `configure` script?).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass

if __package__:
    from . import shell_words as sw
else:  # run as a script from the harness directory
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
                if spans and sw.platform_of(label) != "other":
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
