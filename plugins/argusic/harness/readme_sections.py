"""What each section of a README is about: a category per heading, inherited by its subsections.

README.md next to this file, "Sections": the first rule of `CATEGORY_RULES` whose pattern the
heading's lower-cased text matches gives its category (install, run, dev, skip, verify, mock); a
heading without one takes its parent's, a skipped heading covers its subsections, and headings
name platforms (ours or another system's). Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

if __package__:
    from . import shell_words as sw
    from .readme_document import Heading, Item
else:  # run as a script from the harness directory
    import shell_words as sw  # type: ignore[no-redef]
    from readme_document import Heading, Item  # type: ignore[no-redef]

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


def norm_title(title: str) -> str:
    t = re.sub(r"[^\w\s+#./-]", " ", title.lower().replace("_", " "))
    return " ".join(t.split())


def classify_heading(title: str) -> str | None:
    t = norm_title(title)
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
            plat = sw.platform_of(item.title)
            sec.platform = plat or (sections[parent].platform if parent is not None else None)
            sections.append(sec)
            stack.append(sec.index)
            owner.append(sec.index)
        else:
            owner.append(stack[-1] if stack else -1)
    return sections, owner
