"""A real headless Chromium, driven over the DevTools protocol on a pipe (no websocket, no extra package).

Used to look at the HTML report the way a person's browser does: console errors, requests made,
what the page shows, and a screenshot. Debian's `chromium` is installed by .ci/setup.sh.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    return next((path for path in map(shutil.which, CANDIDATES) if path), None)


@dataclass
class PageVisit:
    """What happened while a page loaded."""

    console_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


class Browser:
    def __init__(self, profile_dir: Path, timeout_s: float = 60.0) -> None:
        executable = chromium_path()
        if executable is None:
            raise RuntimeError("no chromium on PATH: run .ci/setup.sh (it installs Debian's chromium)")
        self.timeout_s = timeout_s
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes() -> None:  # the DevTools pipe is fds 3 (commands in) and 4 (replies out)
            # out of the way first: a pipe end may itself be fd 3 or 4
            high_in = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            high_out = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        profile_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = profile_dir / "chromium.log"  # a file, not a pipe nobody drains
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [executable, "--headless=new", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             f"--user-data-dir={profile_dir}", "--no-first-run", "--no-default-browser-check",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
             "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log,
            preexec_fn=wire_pipes, close_fds=False)  # fds 3 and 4 must survive exec
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []

    # --- the protocol ----------------------------------------------------------------------------

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        return self._next_id

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], remaining)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    err = self.log_path.read_text(errors="replace")
                    raise RuntimeError(f"chromium closed the DevTools pipe: {err[-2000:]}")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        wanted = self._send(method, params, session)
        deadline = time.monotonic() + self.timeout_s
        while True:
            message = self._read_message(deadline)
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self._events.append(message)

    def wait_for_event(self, method: str, session: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        for i, event in enumerate(self._events):
            if event["method"] == method and event.get("sessionId") == session:
                return self._events.pop(i)
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method and message.get("sessionId") == session:
                return message
            if "method" in message:
                self._events.append(message)

    # --- what the tests use ------------------------------------------------------------------------

    def visit(self, path: Path, width: int = 1200, height: int = 900) -> tuple[str, PageVisit]:
        """Open a local file; returns the session to evaluate in, and what happened while it loaded."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for method in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.call(method, session=session)
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        self._events.clear()
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session)
        self.wait_for_event("Page.loadEventFired", session)
        self.call("Runtime.evaluate", {"expression": "1", "awaitPromise": False}, session)  # drain late events
        visit = PageVisit()
        for event in self._events:
            params = event.get("params", {})
            if event["method"] == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                visit.console_errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                                     for a in params.get("args", [])))
            elif event["method"] == "Runtime.exceptionThrown":
                visit.console_errors.append(str(params.get("exceptionDetails", {}).get("text")))
            elif event["method"] == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                visit.console_errors.append(str(params["entry"].get("text")))
            elif event["method"] == "Network.requestWillBeSent":
                visit.requests.append(str(params.get("request", {}).get("url")))
        return session, visit

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"evaluate failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, session: str, out: Path) -> Path:
        """The whole page, not just the viewport."""
        metrics = self.call("Page.getLayoutMetrics", session=session)
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        shot = self.call("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}}, session)
        out.write_bytes(base64.b64decode(shot["data"]))
        return out

    def close(self) -> None:
        try:
            self._send("Browser.close")
            self.process.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            self._log.close()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
