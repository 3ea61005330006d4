"""Headless Chromium driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`):
a test types into a page and clicks as a person would, with nothing installed but Chromium.

Chromium reads commands on its file descriptor 3 and writes replies and events on 4, each a JSON
message ended by a NUL byte. Every wait is for a message (a reply, or the load event of the
navigation in question), bounded by `timeout`; nothing waits by sleeping.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, chromium: str, profile: Path, timeout: float = 60.0) -> None:
        commands_read, self._commands = os.pipe()
        self._replies, replies_write = os.pipe()
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands_read, replies_write)]

        def on_fds_3_and_4() -> None:
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--hide-scrollbars", "--window-size=1280,1400", "--remote-debugging-pipe",
             f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=on_fds_3_and_4, pass_fds=(3, 4))
        for fd in (commands_read, replies_write, *high):
            os.close(fd)
        self.timeout = timeout
        self.events: list[dict[str, Any]] = []
        self._buffer = b""
        self._id = 0

    def send(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode("utf-8") + b"\0")
        while True:
            reply = self._next()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str, **match: Any) -> dict[str, Any]:
        """The first event `method` of the session whose params have the `match` values."""
        def fits(event: dict[str, Any]) -> bool:
            params = event.get("params", {})
            return event.get("method") == method and event.get("sessionId") == session and all(
                params.get(key) == value for key, value in match.items())

        for index, event in enumerate(self.events):
            if fits(event):
                return self.events.pop(index)
        while not fits(event := self._next()):
            self.events.append(event)
        return event

    def _next(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._replies], [], [], self.timeout)
            if not ready:
                raise BrowserError(f"Chromium sent nothing for {self.timeout:g} s")
            chunk = os.read(self._replies, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed the pipe")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def open(self) -> Tab:
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send("Page.setLifecycleEventsEnabled", {"enabled": True}, session=session)
        return Tab(self, session)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except BrowserError:
            pass
        try:
            self.process.wait(timeout=self.timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self._commands)
            os.close(self._replies)


class Tab:
    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session
        self.navigated: dict[str, Any] = {}
        """The navigation `submit` started."""

    def go(self, url: str) -> None:
        loader = self._send("Page.navigate", {"url": url})["loaderId"]
        self._loaded(loader)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (the page itself runs none)."""
        reply = self._send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in reply:
            raise BrowserError(f"{expression}: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    def click(self, selector: str) -> None:
        """Click the element, then wait for the page its click navigates to to have loaded."""
        self.submit(selector)
        self.loaded()

    def submit(self, selector: str) -> None:
        """Click the element and return once the page it navigates to has started to arrive,
        not once it has loaded: a streamed page is read while it comes."""
        self.browser.events = [event for event in self.browser.events if not (
            event.get("sessionId") == self.session and event.get("method") == "Page.frameNavigated")]
        self.evaluate(f"document.querySelector({json.dumps(selector)}).click()")
        self.navigated = self.browser.wait_for("Page.frameNavigated", self.session)

    def loaded(self) -> None:
        """Wait for the page that `submit` navigated to to have loaded in full."""
        self._loaded(self.navigated["params"]["frame"]["loaderId"])

    def wait_until(self, condition: str) -> None:
        """Wait until the JavaScript `condition` holds in the page, tested again at each change
        its parser makes (a MutationObserver in DevTools' world resolves the wait; the page
        itself runs no script). Bounded by the browser's timeout."""
        found = self._send("Runtime.evaluate", {"awaitPromise": True, "expression": (
            f"new Promise(done => {{ const holds = () => Boolean({condition}); "
            "if (holds()) return done(true); new MutationObserver((_, observer) => { "
            "if (holds()) { observer.disconnect(); done(true); } }).observe(document, "
            "{childList: true, subtree: true, characterData: true}); })")})
        if found.get("result", {}).get("value") is not True:
            raise BrowserError(f"{condition}: {found}")

    def screenshot(self, path: Path) -> None:
        data = self._send("Page.captureScreenshot", {"format": "png"})["data"]
        path.write_bytes(base64.b64decode(data))

    def log(self) -> list[dict[str, Any]]:
        """What the page logged: Log entries and console calls, oldest first."""
        return [event["params"] for event in self.browser.events
                if event.get("sessionId") == self.session and event.get("method") in (
                    "Log.entryAdded", "Runtime.consoleAPICalled", "Runtime.exceptionThrown")]

    def _loaded(self, loader: str) -> None:
        self.browser.wait_for("Page.lifecycleEvent", self.session, loaderId=loader, name="load")

    def _send(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)


def installed_chromium() -> str:
    """Chromium's path; the test is skipped where it is not installed."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return found


@contextmanager
def browser(chromium: str, profile: Path) -> Iterator[Browser]:
    started = Browser(chromium, profile)
    try:
        yield started
    finally:
        started.close()
