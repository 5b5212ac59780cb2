"""`tabpilot demo --extension`: a stand-in for the user's own browser, a Chromium with the tabpilot
extension loaded and one page of the user's own (never shared with the agent).

The demo plays the user: it opens the extension's connect page the way a user pastes it into the
address bar, through this Chromium's own debugging port on 127.0.0.1 (headless Chromium takes one
start URL and no extension page). tabpilot never uses that port: the server reaches the browser
only through the extension.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .. import extension_path, find_browser
from .._profile import remove_profile

START_TIMEOUT = 20.0


class UserBrowser:
    """A running Chromium with the extension; see the module docstring."""

    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc = proc
        self._port = port

    def _json(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self._port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=5) as reply:
            return json.loads(reply.read())

    def open(self, url: str) -> None:
        """Open a tab at `url`, as the user would."""
        self._json("/json/new?" + urllib.parse.quote(url, safe=""), method="PUT")

    def page_urls(self) -> list[str]:
        """The URL of every page the browser has, shared or not."""
        return [str(t["url"]) for t in self._json("/json/list") if t["type"] == "page"]


@contextlib.contextmanager
def user_browser(user_page: str, *, browser_path: str | None, headed: bool) -> Iterator[UserBrowser]:
    extension = str(extension_path())
    profile = tempfile.mkdtemp(prefix="tabpilot-demo-browser-")
    args = [
        find_browser(browser_path),
        f"--user-data-dir={profile}",
        f"--load-extension={extension}",
        f"--disable-extensions-except={extension}",
        "--remote-debugging-port=0",
        "--remote-debugging-address=127.0.0.1",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        user_page,
    ]
    if not headed:
        args.insert(1, "--headless=new")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.insert(1, "--no-sandbox")  # Chromium refuses to run as root with its sandbox
    proc = subprocess.Popen(
        args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + START_TIMEOUT
        port = 0
        while not port:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the demo's Chromium with the extension did not start")
            with contextlib.suppress(OSError, ValueError, IndexError):
                port = int(port_file.read_text().split()[0])
            time.sleep(0.05)
        yield UserBrowser(proc, port)
    finally:
        # SIGINT, as a Ctrl-C would: Chromium then shuts down cleanly (it leaves the directory of
        # its singleton socket in /tmp on SIGTERM). Then whatever of its process group is still
        # there (children on their way out, or all of it after 5 s); `remove_profile` removes that
        # directory too should the browser have been killed.
        proc.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(5)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
        remove_profile(profile)
