"""What the tests share: reading MCP results, waiting for the browser, refs, and browsers that run
outside the manager (a Chromium with a CDP port, a Playwright browser server), always stopped."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, ImageContent, TextContent

from tabpilot import Snapshot
from tabpilot.server.response import parse_response

# -- MCP results ---------------------------------------------------------------------------------


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def section(result: CallToolResult, name: str) -> str:
    """The body of `### name` in a tool result ('' if the section is absent)."""
    return parse_response(text(result)).get(name, "")


def tab_line(result: CallToolResult, tab_id: int) -> str:
    """The line of `### Tabs` about one tab ('' if it is not listed)."""
    prefix = f"- tab {tab_id}:"
    return next((line for line in section(result, "Tabs").splitlines() if line.startswith(prefix)), "")


def data(result: CallToolResult) -> dict[str, Any]:
    """The structured content of a result."""
    content: dict[str, Any] | None = result.structured_content
    assert content is not None, text(result)
    return content


def ok(result: CallToolResult) -> CallToolResult:
    assert not result.is_error, text(result)
    return result


def error(result: CallToolResult) -> str:
    """The `### Error` text of a result that must be an error."""
    assert result.is_error, text(result)
    return section(result, "Error")


def result_of(result: CallToolResult) -> Any:
    """The structured `result` of a result that must not be an error."""
    return data(ok(result))["result"]


def ref_of(snapshot: str | Snapshot, needle: str) -> str:
    """The ref of the first snapshot line containing `needle`."""
    body = snapshot.text if isinstance(snapshot, Snapshot) else snapshot
    line = next(line for line in body.splitlines() if needle in line and "[ref=" in line)
    return line.split("[ref=")[1].split("]")[0]


def png_size(image: bytes | ImageContent) -> tuple[int, int]:
    """Width and height of a PNG (the IHDR chunk follows the 8-byte signature)."""
    raw = image if isinstance(image, bytes) else base64.b64decode(image.data)
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


# -- waiting -------------------------------------------------------------------------------------------


async def wait_until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    """Poll `predicate` every 20 ms; fail the test if it is not true within `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


# -- browsers outside the manager -----------------------------------------------------------------


def _stop(proc: subprocess.Popen[bytes], *, sig: int = signal.SIGTERM) -> None:
    """Stop a process started in its own session, with everything in its process group."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
    # Helpers that outlived their parent still belong to its group.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def child_pids(pid: int) -> list[int]:
    """Direct children of a process (from /proc, no ps needed)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.append(int(stat.parent.name))
    return children


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@dataclass
class RemoteChromium:
    """A Chromium started with --remote-debugging-port, as a user or a grid would start it."""

    proc: subprocess.Popen[bytes]
    port: int
    profile: str = ""
    """Its profile directory (where it writes DevToolsActivePort)."""

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _json(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(self.http + path, method=method)
        with urllib.request.urlopen(request, timeout=5) as reply:
            return json.loads(reply.read())

    def close_tab(self, target_id: str) -> None:
        """Close a tab as another CDP client would (the reply is plain text, not JSON)."""
        with urllib.request.urlopen(f"{self.http}/json/close/{target_id}", timeout=5) as reply:
            reply.read()

    def version(self) -> dict[str, Any]:
        """/json/version; raises if the browser does not answer."""
        result: dict[str, Any] = self._json("/json/version")
        return result

    @property
    def ws(self) -> str:
        return str(self.version()["webSocketDebuggerUrl"])

    def open_tab(self, url: str) -> str:
        """Open a tab as another CDP client would; returns its target id."""
        return str(self._json("/json/new?" + urllib.parse.quote(url, safe=""), method="PUT")["id"])

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)


@contextlib.contextmanager
def remote_chromium(browser_path: str) -> Iterator[RemoteChromium]:
    profile = tempfile.mkdtemp(prefix="tabpilot-test-remote-")
    proc = subprocess.Popen(
        [
            browser_path,
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            "--headless=new",
            "--no-sandbox",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--disable-background-networking",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        port = 0
        while not port:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the remote Chromium did not open its DevTools port")
            with contextlib.suppress(OSError, ValueError, IndexError):
                port = int(port_file.read_text().split()[0])
            time.sleep(0.02)
        yield RemoteChromium(proc, port, profile)
    finally:
        _stop(proc)
        shutil.rmtree(profile, ignore_errors=True)


@dataclass
class PlaywrightServer:
    """`python -m playwright launch-server`: a Playwright browser server, as a grid would run one."""

    proc: subprocess.Popen[bytes]
    ws: str

    def browser_pid(self) -> int:
        """The Chromium the server launched (a child of its Node driver)."""
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            for driver in [self.proc.pid, *child_pids(self.proc.pid)]:
                for pid in child_pids(driver):
                    with contextlib.suppress(OSError):
                        if "chrom" in Path(f"/proc/{pid}/comm").read_text():
                            return pid
            time.sleep(0.05)
        raise RuntimeError("no browser process under the Playwright server")


@contextlib.contextmanager
def playwright_server(browser_path: str) -> Iterator[PlaywrightServer]:
    workdir = tempfile.mkdtemp(prefix="tabpilot-test-pwserver-")
    config = Path(workdir) / "server.json"
    config.write_text(
        json.dumps({"executablePath": browser_path, "headless": True, "host": "127.0.0.1", "port": 0})
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "playwright",
            "launch-server",
            "--browser",
            "chromium",
            "--config",
            str(config),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline().decode().strip() if ready else ""
        if not line.startswith("ws://"):
            raise RuntimeError(f"the Playwright server did not print its ws URL (got {line!r})")
        yield PlaywrightServer(proc, line)
    finally:
        # Its Node driver starts Chromium in a group of its own and closes it on SIGTERM.
        browsers = [pid for driver in [proc.pid, *child_pids(proc.pid)] for pid in child_pids(driver)]
        _stop(proc)
        for pid in browsers:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        if proc.stdout is not None:
            proc.stdout.close()
        shutil.rmtree(workdir, ignore_errors=True)


@contextlib.contextmanager
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never answers: an endpoint that hangs."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(2)
        for conn in accepted:
            conn.close()
        server.close()


def free_port() -> int:
    """A port nothing listens on (bound and released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@dataclass
class ExtensionChromium:
    """A Chromium with the tabpilot extension loaded, as a user runs it, with one page of the user's
    own (never shared). Its debugging port is the test's alone (to open the connect page, read what
    Chromium has, stop the extension's service worker): tabpilot never uses it."""

    proc: subprocess.Popen[bytes]
    port: int

    def _json(self, path: str, method: str = "GET") -> Any:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method)
        with urllib.request.urlopen(request, timeout=5) as reply:
            return json.loads(reply.read())

    def open(self, url: str) -> str:
        """Open a tab as the user would (not shared with the agent); returns its target id."""
        return str(self._json("/json/new?" + urllib.parse.quote(url, safe=""), method="PUT")["id"])

    def pages(self) -> list[dict[str, Any]]:
        """Every page target Chromium has, shared or not."""
        return [t for t in self._json("/json/list") if t["type"] == "page"]

    def cdp(self, method: str, params: dict[str, Any] | None = None, *, target_type: str = "") -> Any:
        """One CDP command on the browser (or, with `target_type`, on the first target of that type)."""
        from websockets.sync.client import connect

        with connect(self._json("/json/version")["webSocketDebuggerUrl"], max_size=None) as socket:
            ids = iter(range(1, 100))

            def send(method: str, params: dict[str, Any], session: str | None = None) -> Any:
                message: dict[str, Any] = {"id": next(ids), "method": method, "params": params}
                if session:
                    message["sessionId"] = session
                socket.send(json.dumps(message))
                while True:
                    reply = json.loads(socket.recv(timeout=10))
                    if reply.get("id") == message["id"]:
                        if "error" in reply:
                            raise RuntimeError(f"{method}: {reply['error']}")
                        return reply["result"]

            if not target_type:
                return send(method, params or {})
            targets = send("Target.getTargets", {})["targetInfos"]
            target = next((t for t in targets if t["type"] == target_type), None)
            if target is None:
                raise RuntimeError(f"no {target_type} target")
            session = send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})[
                "sessionId"
            ]
            return send(method, params or {}, session)

    def in_extension(self, expression: str) -> Any:
        """Evaluate in the extension's service worker (awaiting a promise); the value."""
        result = self.cdp(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            target_type="service_worker",
        )
        if "exceptionDetails" in result:
            raise RuntimeError(str(result["exceptionDetails"]))
        return result["result"].get("value")

    def stop_service_worker(self) -> None:
        """Stop the extension's service worker, as Chrome does to an idle one (it starts again on its
        next event; its debugger attachments stay)."""
        targets = self.cdp("Target.getTargets")["targetInfos"]
        worker = next(t for t in targets if t["type"] == "service_worker")
        self.cdp("Target.closeTarget", {"targetId": worker["targetId"]})

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)


@contextlib.contextmanager
def extension_chromium(browser_path: str, user_page: str) -> Iterator[ExtensionChromium]:
    """Start Chromium with the shipped extension and `user_page` open (Chromium headless takes one
    start URL, and no extension page: the connect page is opened after start)."""
    from tabpilot import extension_path

    extension = str(extension_path())
    profile = tempfile.mkdtemp(prefix="tabpilot-test-extension-")
    proc = subprocess.Popen(
        [
            browser_path,
            "--headless=new",
            "--no-sandbox",
            f"--user-data-dir={profile}",
            f"--load-extension={extension}",
            f"--disable-extensions-except={extension}",
            "--remote-debugging-port=0",
            "--remote-debugging-address=127.0.0.1",
            "--no-first-run",
            "--disable-background-networking",
            user_page,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 20
        port = 0
        while not port:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the Chromium with the extension did not open its DevTools port")
            with contextlib.suppress(OSError, ValueError, IndexError):
                port = int(port_file.read_text().split()[0])
            time.sleep(0.02)
        chromium = ExtensionChromium(proc, port)
        while not any(t["type"] == "service_worker" for t in chromium._json("/json/list")):
            if time.monotonic() > deadline:
                raise RuntimeError("the extension's service worker did not start")
            time.sleep(0.05)
        yield chromium
    finally:
        _stop(proc)
        shutil.rmtree(profile, ignore_errors=True)
