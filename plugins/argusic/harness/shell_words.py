"""What a line of shell is: prompts, complete commands, command kinds. Standard library only.

Used by the README reader (readme_*.py) to tell commands from output and prose, to group multi-line
constructs (functions, `if`/`fi`, loops, here-documents, pipelines continued on the next line) into
one command, to sort commands into install / test / run work, and to tell which platform a heading
or a sentence names. The rules are documented in README.md next to this file ("Reading a README").
"""

from __future__ import annotations

import re
import shlex

# --- prompts -----------------------------------------------------------------------------------------

# A prompt at the start of a line, followed by the command. `# ` (root) is only a prompt in blocks
# that show prompts elsewhere (a comment otherwise); `>>> ` is Python's and never shell.
_USER_HOST = r"[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s?[$#%]"  # user@host:~/dir$
_PROMPT_RES = [
    re.compile(r"^(?:\([\w.-]+\)\s+)?" + _USER_HOST + r"(?:\s+|$)"),  # (venv) user@host:~$ cmd
    re.compile(r"^(?:\([\w.-]+\)\s+)?(?:[\w.~/-]+\s)?[$]\s+"),  # $ cmd, (venv) $ cmd, ~/dir $ cmd
    re.compile(r"^(?:[$%])$"),  # a lone prompt
    re.compile(r"^PS [A-Za-z]:[^>]*>\s*"),  # PS C:\> cmd
    re.compile(r"^PS>\s*"),
    re.compile(r"^[›❯➜▶λ»]\s+"),  # zsh/fish themes: › ❯ ➜ ▶ λ »
]
# Prompts that are also common in output (diff's `> line`, `% Total`): only before a command.
_WEAK_PROMPT_RES = [re.compile(r"^%\s+"), re.compile(r"^>\s+(?!>)")]
_ROOT_PROMPT_RE = re.compile(r"^#\s+(?=\S)")
PYTHON_PROMPT_RE = re.compile(r"^(>>>|\.\.\.)(\s|$)")


def strip_prompt(line: str, allow_root: bool = False) -> tuple[str, bool]:
    """(line without its prompt, whether a prompt was there)."""
    s = line.strip()
    if PYTHON_PROMPT_RE.match(s):
        return s, False
    for rx in _PROMPT_RES:
        m = rx.match(s)
        if m:
            return s[m.end() :].strip(), True
    for rx in _WEAK_PROMPT_RES + ([_ROOT_PROMPT_RE] if allow_root else []):
        m = rx.match(s)
        if m and looks_like_command(s[m.end() :]):
            return s[m.end() :].strip(), True
    return s, False


def has_prompt(line: str) -> bool:
    return strip_prompt(line)[1]


# --- complete commands ---------------------------------------------------------------------------------

_OPENERS = {"if": "fi", "case": "esac", "for": "done", "while": "done", "until": "done", "select": "done"}
_HEREDOC_RE = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w-]*)\2")
_CONTINUES_RE = re.compile(r"(\|\||&&|\||\\)\s*$")


def _scan(text: str) -> tuple[bool, int, int, list[str]]:
    """Quote state and bracket depth after `text`: (in_quote, parens, braces, words)."""
    quote = ""
    parens = braces = 0
    words: list[str] = []
    word = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote == "'":
            if c == "'":
                quote = ""
            i += 1
            continue
        if quote == '"':
            if c == "\\":
                i += 2
                continue
            if c == '"':
                quote = ""
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            quote = c
            word += "x"
        elif c == "#" and not word:
            # a comment runs to the end of the line
            nl = text.find("\n", i)
            if nl < 0:
                break
            i = nl
            continue
        elif c in " \t\n;&|":
            if word:
                words.append(word)
                word = ""
            if c in ";&|\n":
                words.append(";")
        elif c == "(":
            parens += 1
            if word:
                words.append(word)
                word = ""
            words.append("(")
        elif c == ")":
            parens -= 1
            if word:
                words.append(word)
                word = ""
            words.append(")")
        elif c == "{":
            braces += 1
            word += c
        elif c == "}":
            braces -= 1
            word += c
        else:
            word += c
        i += 1
    if word:
        words.append(word)
    return bool(quote), parens, braces, words


def _keyword_depth(words: list[str]) -> int:
    """Open if/case/loops: keywords count only where a command starts."""
    depth = 0
    at_start = True
    for w in words:
        if w in (";", "(", ")"):
            at_start = True
            continue
        if at_start:
            if w in _OPENERS:
                depth += 1
            elif w in ("fi", "esac", "done"):
                depth -= 1
            at_start = w in ("then", "do", "else", "elif", "{", "!", "time")
        else:
            at_start = False
    return depth


def is_complete(text: str) -> bool:
    """Whether `text` is one or more complete shell commands (nothing left open)."""
    if _CONTINUES_RE.search(text.rstrip()):
        return False
    # Here-documents: every `<<WORD` needs a line that is exactly WORD after it.
    lines = text.split("\n")
    pending: list[tuple[str, bool]] = []
    body: list[str] = []
    for line in lines:
        if pending:
            word, dash = pending[0]
            if (line.lstrip("\t") if dash else line) == word:
                pending.pop(0)
            continue
        body.append(line)
        for m in _HEREDOC_RE.finditer(line):
            pending.append((m.group(3), m.group(1) == "-"))
    if pending:
        return False
    in_quote, parens, braces, words = _scan("\n".join(body))
    if in_quote or parens > 0 or braces > 0:
        return False
    return _keyword_depth(words) <= 0


def group_commands(lines: list[str]) -> list[str]:
    """Join lines into complete commands: continuations, open quotes/brackets/keywords, heredocs."""
    commands: list[str] = []
    current: list[str] = []
    for line in lines:
        if not current and (not line.strip() or line.strip().startswith("#")):
            continue
        current.append(line.rstrip())
        text = "\n".join(current)
        if is_complete(text):
            commands.append(_dedent(text))
            current = []
    if current:
        commands.append(_dedent("\n".join(current).rstrip("\\").rstrip()))
    return commands


def _dedent(text: str) -> str:
    lines = text.split("\n")
    first = lines[0].strip()
    return "\n".join([first] + [line.rstrip() for line in lines[1:]])


# --- words of a command --------------------------------------------------------------------------------


def split_words(command: str) -> list[str]:
    """shlex words of a command (best effort: unbalanced quotes fall back to whitespace)."""
    text = command.replace("\\\n", " ")
    try:
        lex = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>")
        lex.whitespace_split = True
        lex.commenters = "#"
        return list(lex)
    except ValueError:
        return text.split()


ASSIGNMENT_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = {"sudo", "doas", "env", "time", "nohup", "exec", "command", "builtin", "nice", "xargs"}


def segments(command: str) -> list[list[str]]:
    """The simple commands of a command line (split at ; && || | & and parentheses)."""
    out: list[list[str]] = []
    cur: list[str] = []
    for w in split_words(command):
        if w and set(w) <= set(";&|()"):
            if cur:
                out.append(cur)
            cur = []
            continue
        cur.append(w)
    if cur:
        out.append(cur)
    return out


def program_words(words: list[str]) -> list[str]:
    """Words of a simple command without leading VAR=value, sudo/env/time wrappers and their flags."""
    i = 0
    while i < len(words):
        w = words[i]
        if ASSIGNMENT_RE.match(w):
            i += 1
            continue
        if w in _WRAPPERS:
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1
            continue
        break
    return words[i:]


def first_program(command: str) -> str:
    for seg in segments(command):
        words = program_words(seg)
        if words:
            return words[0]
    return ""


# --- is it a command at all? ---------------------------------------------------------------------------

SHELL_WORDS = {
    "cd", "export", "source", ".", "echo", "printf", "set", "unset", "alias", "eval", "exec", "if",
    "for", "while", "until", "case", "function", "test", "[", "[[", "true", "false", "read", "trap",
    "umask", "ulimit", "pushd", "popd", "type", "hash", "command", "builtin", "declare", "local",
    "readonly", "shopt", "wait", "sleep", "exit", "return", "(", "{", "time",
}  # fmt: skip

# Tools a README commonly tells you to run. A line of an unlabelled block counts as a command when it
# starts with one of these, a path (./x, /x, ~/x, x/y) or a shell word.
KNOWN_TOOLS = {
    # system and shell utilities
    "sudo", "doas", "env", "ls", "cat", "cp", "mv", "rm", "mkdir", "rmdir", "ln", "chmod", "chown",
    "touch", "tar", "unzip", "gzip", "gunzip", "zcat", "xz", "curl", "wget", "git", "grep", "egrep",
    "fgrep", "sed", "awk", "find", "xargs", "sort", "uniq", "head", "tail", "wc", "diff", "patch",
    "tee", "cut", "tr", "ssh", "scp", "rsync", "openssl", "gpg", "bash", "sh", "zsh", "dash", "fish",
    "ksh", "install", "which", "whoami", "id", "pwd", "date", "kill", "pkill", "ps", "man", "less",
    "more", "nano", "vim", "vi", "emacs", "systemctl", "service", "crontab", "nc", "jq", "yq", "tmux",
    "screen", "watch", "timeout", "nohup", "dd", "file", "stat", "du", "df", "uname", "hostname",
    "mount", "useradd", "usermod", "groupadd", "ldconfig", "update-alternatives", "realpath",
    "basename", "dirname", "mktemp", "seq", "yes", "base64", "sha256sum", "md5sum", "shasum", "nroff",
    "groff", "autoload", "compinit", "setopt",
    # package managers
    "apt", "apt-get", "aptitude", "dpkg", "yum", "dnf", "zypper", "pacman", "yay", "apk", "emerge",
    "brew", "port", "pkg", "pkg_add", "pkgin", "xbps-install", "nix", "nix-env", "nix-shell", "guix",
    "snap", "flatpak", "choco", "scoop", "winget", "conda", "mamba", "micromamba", "pixi", "flox",
    "eopkg", "pacstall", "cave", "crew", "sbopkg", "softwareupdate", "vcpkg", "conan",
    # build systems and compilers
    "make", "gmake", "cmake", "ctest", "cpack", "ninja", "meson", "bazel", "buck", "scons", "autoreconf",
    "autoconf", "automake", "aclocal", "libtoolize", "autogen.sh", "configure", "gcc", "g++", "cc",
    "clang", "clang++", "ld", "ar", "strip", "pkg-config", "zig", "earthly",
    # languages and their tools
    "python", "python2", "python3", "py", "pip", "pip3", "pipx", "uv", "uvx", "poetry", "pdm",
    "hatch", "tox", "nox", "pytest", "virtualenv", "pyenv", "twine", "coverage", "mypy", "ruff",
    "flake8", "black", "isort", "node", "nodejs", "npm", "npx", "yarn", "pnpm", "bun", "deno", "tsc",
    "go", "gofmt", "cargo", "rustc", "rustup", "java", "javac", "mvn", "mvnw", "./mvnw", "gradle",
    "./gradlew", "gradlew", "ant", "sbt", "lein", "clojure", "ruby", "gem", "bundle", "bundler",
    "rake", "rails", "perl", "cpan", "cpanm", "prove", "dzil", "php", "composer", "lua", "luarocks",
    "dotnet", "mono", "swift", "kotlin", "ghc", "cabal", "stack", "ocaml", "opam", "dune", "erl",
    "rebar3", "mix", "elixir", "iex", "R", "Rscript", "julia", "docker", "docker-compose", "podman",
    "kubectl", "helm", "terraform", "ansible", "ansible-playbook", "vagrant", "heroku", "gh",
    "bats", "shellcheck", "valgrind", "gdb", "lldb", "strace",
}  # fmt: skip

_PATHLIKE_RE = re.compile(r"^(\.{1,2}/|/|~/|\$\{?[A-Za-z_]+\}?/)|^[\w.-]+/[\w./-]+$")
_PROSE_WORDS = {
    "the", "a", "an", "to", "of", "and", "is", "are", "you", "your", "it", "this", "that", "for",
    "with", "will", "be", "can", "in", "on", "by", "we", "if", "or", "as", "from", "at", "which",
}  # fmt: skip


STOP_WORDS = _PROSE_WORDS | {
    "readme", "for", "version", "the", "tool", "library", "project", "manager", "simple", "fast", "web",
    "server", "framework", "python", "node", "rust", "go", "java", "command", "line", "cli", "utility",
    "utilities", "app", "application", "guide", "introduction", "welcome", "new", "small", "tiny", "api",
}  # fmt: skip


def _without_comment(line: str) -> str:
    """The line without a trailing `# comment` (outside quotes)."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line


def looks_like_prose(line: str) -> bool:
    line = _without_comment(line)
    words = re.findall(r"[A-Za-z']+", line)
    if len(words) < 4:
        return False
    common = sum(1 for w in words if w.lower() in _PROSE_WORDS)
    plain = sum(1 for w in line.split() if re.fullmatch(r"[A-Za-z',.:;!?()]+", w))
    ends = line.rstrip().endswith((".", ":", "!", "?"))
    return (common >= 2 and plain / max(1, len(line.split())) > 0.7) or (ends and common >= 3)


def looks_like_command(line: str, known: frozenset[str] | set[str] = frozenset()) -> bool:
    """A single line that reads as a shell command (prompt already stripped).

    `known` adds the project's own command names (from the README's title) to the known tools.
    """
    s = _without_comment(line.strip())
    if not s or s.startswith("#") or looks_like_prose(s):
        return False
    if PYTHON_PROMPT_RE.match(s):
        return False
    words = split_words(s)
    if not words:
        return False
    prog = program_words(words)
    if not prog:
        return bool(ASSIGNMENT_RE.match(words[0]))
    head = prog[0]
    if re.fullmatch(r"[A-Za-z_][\w-]*\(\)", head) or (len(prog) > 1 and prog[1] == "("):
        return "{" in s or (len(prog) > 2 and prog[2:3] == [")"] and "{" in s)  # name() { ... }: a definition
    if head in SHELL_WORDS or head in KNOWN_TOOLS or head in known or _versioned_tool(head):
        return _plausible_arguments(prog)
    return bool(_PATHLIKE_RE.match(head)) and not head.endswith((":", ","))


def _versioned_tool(head: str) -> bool:
    """python3.11, pip3.12, gcc-12, clang++-17."""
    m = re.fullmatch(r"([a-z+]+?)[-.]?\d+(\.\d+)*", head)
    return bool(m) and m.group(1) in KNOWN_TOOLS


def _plausible_arguments(words: list[str]) -> bool:
    """Reject `make sure you ...`-style English that starts with a tool's name."""
    if len(words) >= 3 and all(re.fullmatch(r"[a-z']+", w) for w in words[1:4]):
        return sum(1 for w in words[1:] if w in _PROSE_WORDS) < 2
    return True


# --- kinds -------------------------------------------------------------------------------------------

INSTALL, TEST, RUN, NEUTRAL = "install", "test", "run", "neutral"

_NEUTRAL = {
    "cd", "pushd", "popd", "mkdir", "export", "source", ".", "eval", "set", "unset", "alias",
    "shopt", "setopt", "umask", "ulimit", "hash", "true", "[", "[[", "test", "declare", "readonly",
}  # fmt: skip
_PACKAGE_MANAGERS = {
    "apt", "apt-get", "aptitude", "dpkg", "yum", "dnf", "zypper", "pacman", "yay", "apk", "emerge",
    "brew", "port", "pkg", "pkg_add", "pkgin", "xbps-install", "nix-env", "guix", "snap", "flatpak",
    "choco", "scoop", "winget", "conda", "mamba", "micromamba", "pixi", "flox", "eopkg", "pacstall",
    "cave", "crew", "sbopkg", "vcpkg", "conan", "pipx",
}  # fmt: skip
_BUILD_TOOLS = {
    "cmake", "ninja", "meson", "bazel", "buck", "scons", "autoreconf", "autoconf", "automake",
    "aclocal", "libtoolize", "gcc", "g++", "cc", "clang", "clang++", "zig", "earthly", "rustup",
    "cpanm", "cpan", "luarocks", "opam", "cabal", "dzil",
}  # fmt: skip
_TEST_MAKE_TARGETS = {
    "test", "tests", "check", "verify", "test-all", "tests-all", "unittest", "unittests",
    "bench", "benchmark", "benchmarks", "testinstall",
}  # fmt: skip
_TEST_TOOLS = {"pytest", "py.test", "tox", "nox", "ctest", "prove", "bats", "phpunit", "rspec", "jest"}
_TEST_SCRIPT_RE = re.compile(r"(^|/)(test|tests|runtests|run_tests|run-tests|alltests|test_all)(\.\w+)?$")


def command_kind(command: str) -> str:
    """install / test / run / neutral, from the command's own words (see README.md, "Kinds")."""
    segs = [program_words(seg) for seg in segments(command)]
    heads = [w[0] for w in segs if w]
    if heads[:1] and heads[0] in ("curl", "wget") and any(h in ("sh", "bash", "zsh") for h in heads[1:]):
        return INSTALL  # curl ... | sh: an install script
    if re.search(r"\b(sh|bash|zsh)\s+-c\s+[\"']?\$\((curl|wget|fetch)\b", command):
        return INSTALL  # sh -c "$(curl ...)": the same
    kinds = [_segment_kind(words) for words in segs]
    kinds = [k for k in kinds if k != NEUTRAL] or [NEUTRAL]
    for k in (TEST, INSTALL, RUN):
        if k in kinds:
            if k == INSTALL and RUN in kinds and kinds[0] == RUN:
                return RUN  # `curl ... | sqlite-utils insert`: fetching data for a run
            return k
    return NEUTRAL


def _segment_kind(words: list[str]) -> str:
    if not words:
        return NEUTRAL
    is_path = "/" in words[0]
    head = words[0].rsplit("/", 1)[-1] if is_path else words[0]
    args = words[1:]
    first = args[0] if args else ""
    if head in _NEUTRAL and not is_path:
        return NEUTRAL
    if head in ("sh", "bash", "zsh") and args:
        if first == "-n":
            return INSTALL  # syntax check of a script: part of getting it ready
        if first == "-c" and len(args) > 1:
            return command_kind(args[1])
        if re.search(r"(^|/)(autogen|bootstrap|build|install|setup)\.sh$", first):
            return INSTALL
        return RUN
    if head in _PACKAGE_MANAGERS or head in _BUILD_TOOLS:
        return TEST if (head == "cmake" and "--build" in args and "test" in args) else INSTALL
    if head in ("make", "gmake"):
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        if any(t in _TEST_MAKE_TARGETS or t.startswith(("test", "check")) for t in targets):
            return TEST
        return INSTALL
    if head in ("mvn", "mvnw", "gradle", "gradlew", "ant", "sbt"):
        targets = [a for a in args if not a.startswith("-")]
        build = {"install", "package", "verify", "build", "assemble", "compile", "jar"}
        return TEST if "test" in targets and not build & set(targets) else INSTALL
    if head in ("ctest",) or head in _TEST_TOOLS:
        return TEST
    if head in ("configure", "configure.py", "autogen.sh", "bootstrap", "build.sh", "Build", "Build.PL"):
        return TEST if head == "Build" and first == "test" else INSTALL
    if head in ("pip", "pip3", "easy_install", "uv", "poetry", "pdm", "hatch", "virtualenv", "pipenv"):
        if head == "uv" and first in ("run",):
            return RUN
        return INSTALL
    if head in ("uvx",):
        return TEST if any(a in ("tox", "pytest", "nox") for a in args) else RUN
    if head.startswith("python") or head in ("py",):
        return _python_kind(args)
    if head in ("npm", "yarn", "pnpm", "bun"):
        if first in ("test", "t") or (first == "run" and len(args) > 1 and args[1].startswith("test")):
            return TEST
        if first in ("install", "i", "ci", "add", "link", "build", "rebuild") or (
            not args and head == "yarn"
        ):
            return INSTALL
        if first == "run" and len(args) > 1 and args[1] in ("build", "compile", "prepare"):
            return INSTALL
        return RUN
    if head == "cargo":
        return {"test": TEST, "bench": TEST, "run": RUN}.get(first, INSTALL)
    if head == "go":
        return {"test": TEST, "run": RUN, "vet": TEST}.get(first, INSTALL)
    if head in ("gem", "bundle", "bundler", "composer", "dotnet", "swift", "stack", "mix"):
        return TEST if first in ("test", "exec") and "rspec" in args else INSTALL
    if head in ("rake",):
        return TEST if (not args or first in ("test", "spec")) else INSTALL
    if head == "perl":
        return INSTALL if first.endswith(("Makefile.PL", "Build.PL")) else RUN
    if head == "git":
        return INSTALL if first in ("clone", "submodule", "lfs", "fetch", "pull", "checkout") else RUN
    if head in ("curl", "wget"):
        urls = [a for a in args if "://" in a]
        data = urls and re.search(
            r"\.(csv|tsv|json|txt|xml|ya?ml|md|html?|db|sqlite|log)(\?|$)", urls[0], re.I
        )
        return INSTALL if _is_download(args) and not data else RUN
    if head in ("tar", "unzip", "gunzip") or head in ("chmod",) and "+x" in args:
        return INSTALL
    if head in ("ln", "cp", "mv", "install") and any(
        re.search(r"(^|/)(bin|lib|share|include|opt)(/|$)", a) for a in args
    ):
        return INSTALL
    if head in ("docker", "podman") and first == "build":
        return INSTALL
    if _TEST_SCRIPT_RE.search(words[0]):
        return TEST
    return RUN


def _python_kind(args: list[str]) -> str:
    if not args:
        return RUN
    if args[0] == "-m" and len(args) > 1:
        mod = args[1]
        if mod in ("pip", "venv", "virtualenv", "ensurepip", "py_compile", "compileall", "build"):
            return INSTALL
        if mod in ("pytest", "unittest", "tox", "nox", "doctest"):
            return TEST
        return RUN
    script = args[0]
    if script.endswith("setup.py"):
        verb = args[1] if len(args) > 1 else ""
        return TEST if verb == "test" else INSTALL
    if script.endswith(("get-pip.py", "bootstrap.py", "configure.py")):
        return INSTALL
    if _TEST_SCRIPT_RE.search(script) or re.search(r"(^|/)test_\w+\.py$", script):
        return TEST
    return RUN


def _is_download(args: list[str]) -> bool:
    return any(a in ("-o", "-O", "-LO", "-Lo", "-fsSLo", "--output", "-qO-", "-O-") for a in args) or any(
        a.startswith(("-o", "--output")) for a in args
    )


# --- platform words ---------------------------------------------------------------------------------------

OTHER_PLATFORM_RE = re.compile(
    r"\b(mac ?os|os ?x|osx|darwin|windows|win32|win64|cygwin|msys2?|mingw|freebsd|openbsd|netbsd|"
    r"dragonfly|bsd|solaris|illumos|aix|hp-?ux|haiku|android|ios|alpine|arch ?linux|archlinux|"
    r"manjaro|fedora|centos|rhel|red ?hat|rocky|alma|opensuse|suse|gentoo|void ?linux|nixos|nix\b|"
    r"guix|slackware|exherbo|funtoo|termux|chromeos|homebrew|brew|macports|chocolatey|scoop|winget|"
    r"conda|anaconda|docker|podman|kubernetes|helm|vcpkg|conan|snap|flatpak|powershell|wsl|"
    r"visual studio|msvc|xcode|z/os|vms|amiga|os/2|dos)\b",
    re.I,
)
OTHER_DISTRO_RE = re.compile(
    r"\b(alpine|arch ?linux|archlinux|arch based|manjaro|fedora|centos|rhel|red ?hat|rocky|alma|opensuse|suse"
    r"|gentoo|void ?linux|nixos|guix|slackware|exherbo|funtoo|termux|chromeos|solus|clear linux|rhino)\b",
    re.I,
)
OUR_PLATFORM_RE = re.compile(r"\b(debian|ubuntu|linux|unix|posix|gnu|mint|devuan|raspbian|bookworm)\b", re.I)
OTHER_PLATFORM_TOOLS = {
    "brew", "port", "pkg", "pkg_add", "pkgin", "choco", "scoop", "winget", "yum", "dnf", "zypper",
    "pacman", "yay", "apk", "emerge", "xbps-install", "nix-env", "nix-shell", "guix", "eopkg",
    "pacstall", "cave", "crew", "sbopkg", "softwareupdate", "docker", "docker-compose", "podman",
    "vcpkg", "./vcpkg", "conan", "conda", "mamba", "micromamba", "pixi", "flox", "snap", "flatpak",
    "kubectl", "helm", "heroku", "md", "py", "mvnw.cmd", "gradlew.bat",
}  # fmt: skip


def platform_of(text: str) -> str | None:
    """ours (Debian, Linux, Unix), other (macOS, Windows, other distros, Docker...), fallback, or None."""
    t = text.lower()
    if re.search(r"\bother (systems|platforms|operating systems|os(es)?)\b", t):
        return "fallback"
    ours = OUR_PLATFORM_RE.search(t)
    debian = re.search(r"\b(debian|ubuntu|mint|devuan|raspbian|bookworm)\b", t)
    distro = OTHER_DISTRO_RE.search(t)
    other = OTHER_PLATFORM_RE.search(t)
    if debian:
        return "ours"
    if distro:
        return "other"  # "Alpine Linux", "Arch Linux": another Linux
    if other and not ours:
        return "other"
    if ours:
        return "ours"  # "UNIX/Mac OS X/Cygwin", "On macOS or Linux": works here too
    return None


_WINDOWS_PATH_RE = re.compile(r"^[A-Za-z]:\\|^\.{0,2}\\?[\w.-]{2,}(\\[\w.-]{2,})+\\?$")


def other_platform_command(command: str) -> bool:
    """A command for another system or a packaged release manager (brew, choco, docker, ...)."""
    for seg in segments(command):
        words = program_words(seg)
        if not words:
            continue
        head = words[0]
        if head in OTHER_PLATFORM_TOOLS or head.endswith((".bat", ".cmd", ".exe", ".ps1")):
            return True
        if "\\" in head and not head.startswith("\\"):  # py tools\buildhtml.py
            return True
        return any(_WINDOWS_PATH_RE.match(w) for w in words[1:])  # C:\x, tools\build.py
    return False
