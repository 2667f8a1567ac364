"""Render HTML pages in headless Chromium, inside the rendering container (argusic.judging.render).

Run there as `python3 -I render_driver.py JOB_JSON` with only the standard library (the image is Debian's
python3 and chromium, nothing else). JOB_JSON: {"pages": ["/pages/index.html", ...], "page_seconds": 20,
"start_seconds": 60}. Every page gets its own Chromium (a page stuck in a loop cannot hold up the next
one), driven over the DevTools protocol on a pipe (--remote-debugging-pipe: no port is opened, and the
container has no network anyway). One JSON line per page on stdout, in order:
{"index": i, "outcome": ..., "console_errors": [...], "dropped_errors": n, "screenshots": [base64 PNG,
...], "detail": "..."}. A line {"index": i, "fatal": "..."} says the browser itself could not be used.

Outcomes: `timeout` when the page's bound ran out at any step (the load event never came, or the page's
main thread never answered: `while(true){}`, a requestAnimationFrame callback that never returns);
`not_rendered` when navigation failed or the body shows nothing (no visible text, media, coloured box, or
drawn canvas); `console_errors` when it rendered but console.error / an uncaught exception / a console
error Chromium itself logged happened; `clean` otherwise.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse

MAX_ERRORS = 20
MAX_ERROR_CHARS = 500
MAX_MESSAGE_BYTES = 64 * 1024 * 1024  # one DevTools message (a screenshot is the biggest)
MAX_SCREENSHOT_BYTES = 16 * 1024 * 1024
SHOT_MOMENTS = (("load", 0.0), ("1s", 1.0), ("3s", 3.0))  # seconds after the load event
WINDOW = (1280, 800)

# Marks a canvas as drawn when a page calls a drawing method on it (2D or WebGL): pixels of a WebGL
# canvas cannot be read back reliably, the calls can.
CANVAS_PROBE = """
(() => {
  const mark = () => { window.__argusicCanvasDrawn = true; };
  const wrap = (proto, names) => {
    if (!proto) return;
    for (const name of names) {
      const original = proto[name];
      if (typeof original !== 'function') continue;
      proto[name] = function (...args) { mark(); return original.apply(this, args); };
    }
  };
  wrap(window.CanvasRenderingContext2D && CanvasRenderingContext2D.prototype,
       ['fillRect', 'strokeRect', 'fill', 'stroke', 'fillText', 'strokeText', 'drawImage', 'putImageData']);
  for (const gl of [window.WebGLRenderingContext, window.WebGL2RenderingContext]) {
    wrap(gl && gl.prototype, ['drawArrays', 'drawElements', 'clear']);
  }
})();
"""

# What the body shows, judged from the DOM after the last screenshot.
VISIBLE_PROBE = """
(() => {
  const body = document.body;
  const canvasDrawn = !!window.__argusicCanvasDrawn;
  if (!body) return {body: false, visible: false, canvas: canvasDrawn, state: document.readyState};
  const shown = (el) => {
    const s = getComputedStyle(el);
    if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const media = new Set(['IMG', 'SVG', 'VIDEO', 'IFRAME', 'OBJECT', 'EMBED', 'INPUT', 'BUTTON',
                         'SELECT', 'TEXTAREA', 'svg']);
  let what = '';
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(), i = 0; n && i < 20000; n = walker.nextNode(), i++) {
    if (n.textContent.trim() && n.parentElement && shown(n.parentElement)) { what = 'text'; break; }
  }
  if (!what) {
    const all = body.querySelectorAll('*');
    for (let i = 0; i < all.length && i < 5000; i++) {
      const el = all[i];
      if (!shown(el)) continue;
      if (el.tagName === 'CANVAS') { if (canvasDrawn) { what = 'canvas'; break; } continue; }
      if (el.tagName === 'IMG' && !el.naturalWidth) continue;
      if (media.has(el.tagName)) { what = el.tagName.toLowerCase(); break; }
      const s = getComputedStyle(el);
      const bg = s.backgroundColor.match(/[\\d.]+/g);
      if (s.backgroundImage !== 'none' || (bg && (bg.length < 4 || parseFloat(bg[3]) > 0))) {
        what = 'box'; break;
      }
    }
  }
  return {body: true, visible: !!what, what: what, canvas: canvasDrawn, state: document.readyState};
})()
"""


class PageTimeout(Exception):
    """The page's time bound ran out."""


class BrowserGone(Exception):
    """Chromium exited or closed its end of the pipe."""


def chromium_binary() -> str:
    # The real binary, not Debian's wrapper script (which only adds flags from /etc/chromium.d).
    for path in ("/usr/lib/chromium/chromium", shutil.which("chromium") or ""):
        if path and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("no chromium binary in the image (/usr/lib/chromium/chromium)")


class Browser:
    """One Chromium process and its DevTools pipe (fd 3: our commands in, fd 4: its answers out)."""

    def __init__(self, profile: str) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def plumb() -> None:  # in the child, before exec: the pipe ends land exactly on fds 3 and 4
            high_r, high_w = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [
            chromium_binary(),
            "--headless=new",  # the full browser, headless (old headless is a separate package since 132)
            "--no-sandbox",  # unprivileged in a locked container: no user namespaces, no setuid helper
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--disable-default-apps",
            "--mute-audio",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            "about:blank",
        ]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,  # our stdout is the result channel: nothing of Chromium's on it
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=plumb,  # noqa: PLW1509 - single-threaded driver
            start_new_session=True,  # its own process group, killed whole
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._next_id += 1
        message: dict = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            try:
                written = os.write(self._to_chrome, data)
            except (BrokenPipeError, OSError) as err:
                raise BrowserGone(f"pipe closed: {err}") from None
            data = data[written:]
        return self._next_id

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise PageTimeout
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                raise PageTimeout
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise BrowserGone("Chromium closed the DevTools pipe")
            self._buffer += chunk
            if len(self._buffer) > MAX_MESSAGE_BYTES:
                raise BrowserGone("a DevTools message over the size cap")
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw.decode("utf-8", errors="replace"))

    def call(self, method: str, params: dict | None, session: str | None, deadline: float) -> dict:
        """Send a command and wait for its answer (events met meanwhile are kept in self.events)."""
        wanted = self.send(method, params, session)
        while True:
            message = self._read_message(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error'].get('message', message['error'])}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_event(self, method: str, session: str | None, deadline: float) -> dict:
        for i, event in enumerate(self.events):
            if event.get("method") == method and event.get("sessionId") == session:
                return self.events.pop(i)
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method and message.get("sessionId") == session:
                return message
            if "method" in message:
                self.events.append(message)

    def drain(self) -> None:
        """Take in the events already written (non-blocking)."""
        try:
            while True:
                self.events.append(self._read_message(time.monotonic()))
        except (PageTimeout, BrowserGone):
            pass

    def close(self) -> None:
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)


def _clip(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_ERROR_CHARS else text[: MAX_ERROR_CHARS - 1] + "…"


def _remote_text(arg: dict) -> str:
    if "value" in arg:
        value = arg["value"]
        return value if isinstance(value, str) else json.dumps(value)
    return str(arg.get("description") or arg.get("unserializableValue") or arg.get("type", ""))


def console_errors(events: list[dict], session: str) -> list[str]:
    """The console errors among the page's events, in order: console.error/assert, uncaught exceptions,
    and the errors Chromium logs itself (a resource that failed to load)."""
    found: list[str] = []
    for event in events:
        if event.get("sessionId") != session:
            continue
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            found.append(" ".join(_remote_text(a) for a in params.get("args", [])) or params["type"])
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exception = details.get("exception") or {}
            text = details.get("text", "Uncaught")
            described = exception.get("description") or exception.get("value")
            found.append(f"{text} {described}" if described and str(described) not in text else text)
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                where = entry.get("url")
                found.append(entry.get("text", "") + (f" ({where})" if where else ""))
    return [_clip(str(text)) for text in found]


def render_one(index: int, page: str, page_seconds: float, start_seconds: float) -> dict:
    result: dict = {"index": index, "screenshots": [], "console_errors": [], "dropped_errors": 0}
    profile = f"/tmp/chromium-profile-{index}"
    shutil.rmtree(profile, ignore_errors=True)
    try:
        browser = Browser(profile)
    except OSError as err:
        return {"index": index, "fatal": f"Chromium did not start: {err}"}
    session = None
    steps = "start"
    try:
        start_deadline = time.monotonic() + start_seconds
        try:
            target = browser.call("Target.createTarget", {"url": "about:blank"}, None, start_deadline)
            attached = browser.call(
                "Target.attachToTarget",
                {"targetId": target["targetId"], "flatten": True},
                None,
                start_deadline,
            )
            session = attached["sessionId"]
            for method in ("Page.enable", "Runtime.enable", "Log.enable"):
                browser.call(method, {}, session, start_deadline)
            browser.call(
                "Page.addScriptToEvaluateOnNewDocument", {"source": CANVAS_PROBE}, session, start_deadline
            )
        except (PageTimeout, BrowserGone, RuntimeError, KeyError) as err:
            why = "did not answer in time" if isinstance(err, PageTimeout) else str(err)
            return {"index": index, "fatal": f"Chromium did not start: {why}"}

        deadline = time.monotonic() + page_seconds
        steps = "navigate"
        url = "file://" + urllib.parse.quote(page)  # a name with spaces, '#' or '?' stays one path
        navigation = browser.call("Page.navigate", {"url": url}, session, deadline)
        if navigation.get("errorText"):
            result.update(outcome="not_rendered", detail=f"the page did not load: {navigation['errorText']}")
            return result
        steps = "load"
        browser.wait_event("Page.loadEventFired", session, deadline)
        loaded = time.monotonic()
        for name, after in SHOT_MOMENTS:
            steps = f"screenshot {name}"
            pause = loaded + after - time.monotonic()
            if pause > 0:
                if loaded + after > deadline:
                    raise PageTimeout
                time.sleep(pause)
            shot = browser.call("Page.captureScreenshot", {"format": "png"}, session, deadline)
            data = shot.get("data", "")
            if len(data) * 3 // 4 <= MAX_SCREENSHOT_BYTES:
                result["screenshots"].append(data)
        steps = "inspect"
        probe = browser.call(
            "Runtime.evaluate", {"expression": VISIBLE_PROBE, "returnByValue": True}, session, deadline
        )
        browser.drain()
        seen = probe.get("result", {}).get("value") or {}
        errors = console_errors(browser.events, session)
        result["console_errors"] = errors[:MAX_ERRORS]
        result["dropped_errors"] = max(0, len(errors) - MAX_ERRORS)
        if not seen.get("body"):
            result.update(outcome="not_rendered", detail="the document has no body")
        elif not seen.get("visible"):
            result.update(
                outcome="not_rendered", detail="the body shows nothing (no text, media, box or drawn canvas)"
            )
        elif errors:
            result.update(
                outcome="console_errors",
                detail=f"rendered ({seen.get('what')}); {len(errors)} console errors",
            )
        else:
            result.update(outcome="clean", detail=f"rendered ({seen.get('what')})")
        return result
    except PageTimeout:
        browser.drain()
        errors = console_errors(browser.events, session) if session else []
        result["console_errors"] = errors[:MAX_ERRORS]
        result["dropped_errors"] = max(0, len(errors) - MAX_ERRORS)
        result.update(outcome="timeout", detail=f"the page's {page_seconds:g} s bound ran out at: {steps}")
        return result
    except BrowserGone as err:
        result.update(outcome="not_rendered", detail=f"Chromium went away at {steps}: {err}")
        return result
    except RuntimeError as err:
        result.update(outcome="not_rendered", detail=f"DevTools error at {steps}: {_clip(str(err))}")
        return result
    finally:
        browser.close()
        shutil.rmtree(profile, ignore_errors=True)


def main(argv: list[str]) -> int:
    job = json.loads(argv[1])
    page_seconds = float(job.get("page_seconds", 20))
    start_seconds = float(job.get("start_seconds", 60))
    for index, page in enumerate(job["pages"]):
        began = time.monotonic()
        line = render_one(index, page, page_seconds, start_seconds)
        line["seconds"] = round(time.monotonic() - began, 3)
        sys.stdout.write(json.dumps(line) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
