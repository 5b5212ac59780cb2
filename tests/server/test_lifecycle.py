"""`tabpilot serve` stops cleanly: end of stdin, SIGINT, SIGTERM and SIGHUP each leave no browser
process and no temporary profile behind within 2 s, and print no traceback; a browser killed under
the server leaves nothing in the temp dir either."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from starlette.requests import Request
from starlette.responses import Response

from support import (
    STDIO_HANDSHAKE,
    PlaywrightServer,
    RemoteChromium,
    SeleniumGrid,
    cmdline,
    comm,
    descendants,
    error,
    free_port,
    kill_driver,
    kill_served_driver,
    pid_alive,
    poll,
    result_of,
    section,
    served,
    tab_line,
    text,
    wait_until,
)
from tabpilot.demo.site import LocalSite


def _send(stdin: IO[bytes], message: dict[str, Any]) -> None:
    stdin.write((json.dumps(message) + "\n").encode())
    stdin.flush()


def _read_reply(stdout: IO[bytes], message_id: int, timeout: float = 60) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = stdout.readline()
        if not line:
            raise AssertionError("the server closed stdout")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == message_id:
            return message
    raise AssertionError(f"no reply to request {message_id}")


def _serve(browser_path: str, tmp: str, *options: str, own_group: bool = False) -> subprocess.Popen[bytes]:
    """`python -m tabpilot serve` over pipes (stdio unless `options` say --http), its temporary
    profiles in `tmp`; `own_group`: in a process group of its own, as a shell runs a command."""
    return subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser_path, *options],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "TMPDIR": tmp},
        start_new_session=own_group,
    )


def _assert_left_nothing(browsers: list[int], tmp: str, stderr: str) -> None:
    """Within 2 s no browser process is left, nothing in the temp dir (temporary profile, the
    driver's artifacts folders, Chromium's socket directory), and nothing was a traceback."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and any(pid_alive(p) for p in browsers):
        time.sleep(0.05)
    assert not [p for p in browsers if pid_alive(p)], "every browser process is gone"
    assert not list(Path(tmp).glob("tabpilot-profile-*")), "the temporary profile is removed"
    assert not list(Path(tmp).rglob("*")), "nothing is left in the temp dir"
    assert "Traceback" not in stderr, stderr


def _initialize(proc: subprocess.Popen[bytes]) -> None:
    """The MCP handshake with a server started by `_serve` (request id 1)."""
    assert proc.stdin is not None and proc.stdout is not None
    request, initialized = STDIO_HANDSHAKE
    _send(proc.stdin, request)
    _read_reply(proc.stdout, 1)
    _send(proc.stdin, initialized)


class Served:
    """`python -m tabpilot serve` with a browser running (a tool call started it)."""

    def __init__(self, browser_path: str, tmp: str) -> None:
        self.proc = _serve(browser_path, tmp)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        _initialize(self.proc)
        self._next_id = 2
        result = self.list_tabs()
        assert not result.get("isError"), result
        self.children = descendants(self.proc.pid)
        assert any("chrom" in comm(pid) for pid in self.children), "a browser runs"
        self.tmp = tmp

    def list_tabs(self) -> dict[str, Any]:
        """Call browser_tabs(action="list"); the call's result."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request_id, self._next_id = self._next_id, self._next_id + 1
        _send(
            self.proc.stdin,
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": "browser_tabs", "arguments": {"action": "list"}},
            },
        )
        result: dict[str, Any] = _read_reply(self.proc.stdout, request_id)["result"]
        return result

    def stop(self, how: str) -> tuple[float, str]:
        """Stop the server one way; how long it took to exit, and what it wrote on stderr."""
        assert self.proc.stdin is not None and self.proc.stderr is not None
        started = time.monotonic()
        if how == "stdin":
            self.proc.stdin.close()
        else:
            self.proc.send_signal(getattr(signal, how))
        try:
            self.proc.wait(10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        took = time.monotonic() - started
        return took, self.proc.stderr.read().decode(errors="replace")


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("how", ["stdin", "SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stop_leaves_no_browser_and_no_profile_and_no_traceback(browser_path: str, how: str) -> None:
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        served = Served(browser_path, tmp)
        took, stderr = served.stop(how)
        assert took < 5, f"stopping by {how} took {took:.1f} s"
        _assert_left_nothing(served.children, tmp, stderr)
        # As the HTTP server ends: stopped by SIGTERM (143 in a shell), 130 after Ctrl-C.
        expected = {"stdin": 0, "SIGINT": 130, "SIGTERM": -signal.SIGTERM, "SIGHUP": 0}[how]
        assert served.proc.returncode == expected, (how, served.proc.returncode)


@contextlib.contextmanager
def _browser_held_up(browsers: list[int]) -> Iterator[None]:
    """The browser's processes stopped (SIGSTOP): a server stopping now waits for its close (up to
    its bound) until a second signal comes. Killed on the way out if the server left them."""
    for pid in browsers:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in browsers:
            if pid_alive(pid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_a_second_signal_while_stopping_ends_the_server_at_once_and_leaves_nothing(
    browser_path: str, how: str
) -> None:
    # The user (or a supervisor) insists: the server leaves at once, as stopped by that signal (a
    # second SIGTERM exited 130, a Ctrl-C's status), its browser goes with it, and its temporary
    # profile too (it stayed in the temp dir).
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        served = Served(browser_path, tmp)
        with _browser_held_up([p for p in served.children if "chrom" in comm(p)]):
            served.proc.send_signal(getattr(signal, how))
            time.sleep(0.3)  # the stop waits for the browser to close
            took, stderr = served.stop(how)
            expected = {"SIGINT": 130, "SIGTERM": -signal.SIGTERM}[how]
            assert served.proc.returncode == expected and took < 5, served.proc.returncode
            assert f"{how} again while stopping: exiting at once" in stderr, stderr
            _assert_left_nothing(served.children, tmp, stderr)


@pytest.mark.parametrize("how", ["stdin", "SIGTERM", "http SIGTERM"])
def test_a_stop_while_starting_leaves_no_browser_and_no_profile(browser_path: str, how: str) -> None:
    """The browser starts while the server is still being built (the SDK imported; over HTTP, the
    shared browser as the server listens): a stop then closes it too. Stopped as soon as a browser
    process is seen, before any request."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        http = ("--http", f"127.0.0.1:{free_port()}") if how.startswith("http") else ()
        proc = _serve(browser_path, tmp, *http)
        assert proc.stdin is not None and proc.stderr is not None
        try:
            deadline = time.monotonic() + 30
            browsers: list[int] = []
            while not browsers and time.monotonic() < deadline and proc.poll() is None:
                browsers = [p for p in descendants(proc.pid) if "chrom" in comm(p)]
                time.sleep(0.01)
            assert browsers, "a browser starts without any request"
            if how == "stdin":
                proc.stdin.close()
            else:
                proc.send_signal(signal.SIGTERM)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
        _assert_left_nothing(browsers, tmp, proc.stderr.read().decode(errors="replace"))


_SDK_NEVER_LOADS = """
import importlib.abc, importlib.machinery, runpy, sys, threading

class NeverLoads(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    # The MCP SDK, imported as the browser starts, never finishes loading (waiting in the
    # module's own code, as a slow import does: a finder waits holding every import's lock).
    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name == "mcp" else None

    def exec_module(self, module):
        threading.Event().wait()

sys.meta_path.insert(0, NeverLoads())
sys.argv = ["tabpilot", "serve", "--browser-path", sys.argv[1]]
runpy.run_module("tabpilot", run_name="__main__", alter_sys=True)
"""


def test_a_client_that_leaves_while_the_server_loads_is_not_kept_waiting_for_the_sdk(
    browser_path: str,
) -> None:
    """A client that gives up while the server starts (it closes stdin having asked nothing the
    early handshake did not answer): the server stops at once, its browser closed, without waiting
    for the MCP SDK to load (0.5-3 s of the 2 s a client gives a server after closing its input).
    Here the SDK never loads: the server waited for it for ever."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        proc = subprocess.Popen(
            [sys.executable, "-c", _SDK_NEVER_LOADS, browser_path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "TMPDIR": tmp},
        )
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        try:
            request, _initialized = STDIO_HANDSHAKE
            _send(proc.stdin, request)
            assert "serverInfo" in _read_reply(proc.stdout, 1)["result"]  # answered without the SDK
            deadline = time.monotonic() + 30
            browsers: list[int] = []
            while not browsers and time.monotonic() < deadline and proc.poll() is None:
                browsers = [p for p in descendants(proc.pid) if "chrom" in comm(p)]
                time.sleep(0.01)
            assert browsers, "a browser starts without any request"
            proc.stdin.close()
            assert proc.wait(30) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
        _assert_left_nothing(browsers, tmp, proc.stderr.read().decode(errors="replace"))


_INTERRUPTED_WHILE_LOADING = """
import os, runpy, signal, sys

class CtrlC:  # Ctrl-C as Python loads Playwright (the first moments of the command)
    def find_spec(self, name, path=None, target=None):
        if name == "playwright":
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
sys.argv = ["tabpilot", "serve", "--browser-path", sys.argv[2]]
if sys.argv_entry == "-m":
    runpy.run_module("tabpilot", run_name="__main__", alter_sys=True)
else:
    module, _, name = sys.argv_entry.partition(":")
    sys.exit(getattr(__import__(module, fromlist=[name]), name)())
"""


@pytest.mark.parametrize("entry", ["script", "-m"])
def test_a_ctrl_c_while_the_command_loads_ends_it_without_a_traceback(browser_path: str, entry: str) -> None:
    """The `tabpilot` script (as pyproject names it) and `python -m tabpilot`, interrupted as they
    import the library: Python printed a KeyboardInterrupt traceback (the package's import came
    before the command's own `except KeyboardInterrupt`)."""
    scripts = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())["project"]["scripts"]
    code = _INTERRUPTED_WHILE_LOADING.replace(
        "sys.argv_entry", repr("-m" if entry == "-m" else scripts["tabpilot"])
    ).replace("sys.argv[2]", repr(browser_path))
    ended = subprocess.run(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, capture_output=True, text=True, timeout=60
    )
    assert "Traceback" not in ended.stderr and "KeyboardInterrupt" not in ended.stderr, ended.stderr
    assert ended.returncode == 130, (ended.returncode, ended.stderr)


def test_the_server_state_and_runner_load_without_the_mcp_sdk() -> None:
    """What `tabpilot serve` needs to start the browser imports no MCP SDK: the SDK (most of the
    start-up time) is imported while the browser starts, not before it."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, tabpilot.cli, tabpilot.server.runner, tabpilot.server.state;"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'mcp', 'mcp_types', 'uvicorn', 'starlette'}))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.strip() == "[]", loaded.stdout


def test_a_killed_browser_leaves_nothing_in_the_temp_dir_once_the_server_stops(browser_path: str) -> None:
    """A browser killed under the server (as by the OOM killer) leaves its temporary profile, the
    directory of its singleton socket and, when the driver stops as it learns of the kill, the
    driver's artifacts folder for it: the server removes them all, so the temp dir is empty."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        served = Served(browser_path, tmp)
        assert list(Path(tmp).glob("*/org.chromium.Chromium.*")), "Chromium's socket directory is there"
        assert list(Path(tmp).glob("*/playwright-artifacts-*")), "the driver's artifacts folder is there"
        for pid in served.children:
            if "chrom" in comm(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        took, stderr = served.stop("stdin")
        assert took < 5, f"stopping took {took:.1f} s"
        _assert_left_nothing(served.children, tmp, stderr)


def test_a_killed_driver_is_replaced_and_its_browser_leaves_nothing_behind(browser_path: str) -> None:
    """Playwright's driver killed under the server (as by the OOM killer) takes its browser with it:
    the next call launches a browser through a new driver, and the old browser, which stops by
    itself and writes its profile as it does, leaves nothing in the temp dir once the server stops."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        served = Served(browser_path, tmp)
        kill_driver(served.children)
        # The server learns of the death when the driver's pipe closes: list until a call is told.
        deadline = time.monotonic() + 15
        while True:
            result = served.list_tabs()
            said = result["content"][0]["text"]
            assert not result.get("isError"), said
            if "was launched in place of lost instance inst_1" in said or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert "was launched in place of lost instance inst_1" in said, said
        assert (
            "- tab 2: about:blank [active]" in said and "instance inst_2" not in said.split("### Tabs")[1]
        ), said
        children = served.children + descendants(served.proc.pid)
        assert any("chrom" in comm(pid) for pid in descendants(served.proc.pid)), "a new browser runs"
        took, stderr = served.stop("stdin")
        assert took < 5, f"stopping took {took:.1f} s"
        _assert_left_nothing(children, tmp, stderr)


def test_a_stop_right_after_the_driver_died_waits_for_its_browser_to_end(browser_path: str) -> None:
    """A browser whose driver died goes on a moment, writing into its profile as it stops: a stop
    right then waits for it (bounded), so the profile is removed after the last write."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        served = Served(browser_path, tmp)
        kill_driver(served.children)
        took, stderr = served.stop("stdin")
        assert took < 5, f"stopping took {took:.1f} s"
        _assert_left_nothing(served.children, tmp, stderr)
        time.sleep(1)  # a browser still stopping would write its profile again by now
        assert not list(Path(tmp).glob("tabpilot-profile-*")), "the temporary profile stays removed"


@pytest.mark.parametrize(
    "heartbeat_first", [False, True], ids=["found-by-the-call", "found-by-the-heartbeat"]
)
async def test_a_killed_driver_loses_a_cdp_browser_that_the_next_call_connects_again(
    remote: RemoteChromium, site: LocalSite, heartbeat_first: bool
) -> None:
    """A browser tabpilot only connected to outlives the driver, and tells nothing: the first call
    that finds its page gone declares the instance lost, saying the browser keeps its tabs, and the
    next call without a tab id connects it again (the agent may not know the endpoint). The
    liveness check may find the loss before any call does: a call naming the tab says the same."""
    with _served_in_own_temp("--cdp-endpoint", remote.http) as served:
        await _cdp_browser_outlives_the_driver(served, remote, site, heartbeat_first=heartbeat_first)


async def test_a_cdp_browser_the_agent_connects_again_by_hand_gives_its_pages_their_ids_back(
    remote: RemoteChromium, site: LocalSite
) -> None:
    """The agent connects the lost browser again itself: the pages still there keep the ids they
    had, and the one that was active is active again, as with the automatic reconnect."""
    with _served_in_own_temp("--cdp-endpoint", remote.http) as served:
        async with Client(served) as mcp:
            opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
            tab = result_of(opened)["tabId"]
            # A newer tab in the background: the browser lists it last (the tab it shows).
            newer = {"action": "new", "url": site.url("/page/b"), "background": True}
            assert not (await mcp.call_tool("browser_tabs", newer)).is_error
            before = [
                t["id"] for t in result_of(await mcp.call_tool("browser_tabs", {"action": "list"}))["tabs"]
            ]
            kill_served_driver(remote.http)
            error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))

            connected = result_of(
                await mcp.call_tool("browser_instance", {"action": "connect", "cdpEndpoint": remote.http})
            )
            assert tab in connected["tabIds"], connected
            # Active again: not the session's first, blank tab, nor the newer one.
            assert connected["activeTabId"] == tab, connected
            # full: this session read the tree before the loss (else: "unchanged", its refs read again).
            again = await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})
            assert not again.is_error and "Page a" in text(again), text(again)
            # The instance connected by hand is the default now: nothing connects the browser a
            # second time, and every page it has is listed once, under its old id.
            listed = await mcp.call_tool("browser_tabs", {"action": "list"})
            assert "in place of lost instance" not in text(listed), text(listed)
            assert sorted(t["id"] for t in result_of(listed)["tabs"]) == sorted(before), text(listed)
            assert tab_line(listed, tab) == f"- tab {tab}: Page a ({site.url('/page/a')}) [active]"


@contextlib.contextmanager
def _served_in_own_temp(*options: str) -> Iterator[StdioServerParameters]:
    """`tabpilot serve OPTIONS --structured-content` over stdio, in its own temp dir. Once the
    client closed it (the server then stops), nothing is left there, not even what the killed
    driver left."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        yield served(*options, "--structured-content", TMPDIR=tmp)
        deadline = time.monotonic() + 5
        while list(Path(tmp).rglob("*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not list(Path(tmp).rglob("*")), "nothing is left in the temp dir"


async def test_a_killed_driver_loses_a_playwright_server_browser_that_the_next_call_connects_again(
    pw_server: PlaywrightServer, site: LocalSite
) -> None:
    """A Playwright server's connection runs through the driver: killing the driver looks like a
    disconnect, and the server closes what it opened for tabpilot. The loss is put down to the
    driver, and the next call without a tab id connects to the server again, with a blank tab."""
    with _served_in_own_temp("--ws-endpoint", pw_server.ws) as served:
        async with Client(served) as mcp:
            opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
            tab = result_of(opened)["tabId"]
            kill_served_driver(pw_server.ws)

            def lost_to_the_driver(listed: list[dict[str, Any]]) -> bool:
                return bool(
                    listed[0]["lostReason"]
                    == "Playwright's driver stopped: it was killed or ran out of memory"
                )

            events: list[str] = []

            async def instances() -> CallToolResult:
                listed = await mcp.call_tool("browser_instance", {"action": "list"})
                events.append(section(listed, "Events"))
                return listed

            await poll(instances, lambda r: lost_to_the_driver(result_of(r)["instances"]))
            said = error(await mcp.call_tool("browser_tabs", {"action": "new", "instanceId": "inst_1"}))
            assert "The Playwright server closed the tabs it had opened for tabpilot." in said, said
            # The event gives the reason found, not the disconnect the driver's death looked like.
            assert "instance inst_1 was lost: Playwright's driver stopped" in "".join(events), events
            assert said.endswith(
                "A call without tabId and instanceId connects to it again as the default instance, with a blank tab."
            )
            listed = await mcp.call_tool("browser_tabs", {"action": "list"})
            assert (
                "instance inst_2 was connected in place of lost instance inst_1 (Playwright's driver"
                in text(listed)
            )
            assert result_of(listed)["tabs"] == [
                {**result_of(listed)["tabs"][0], "url": "about:blank", "instanceId": "inst_2"}
            ]
            navigated = await mcp.call_tool("browser_navigate", {"url": site.url("/page/b")})
            assert "Page b" in text(navigated) and not navigated.is_error
            said = error(await mcp.call_tool("browser_tabs", {"action": "new", "instanceId": "inst_1"}))
            assert said.endswith(
                "instance inst_2 took its place. Use instance inst_2 instead, or leave instanceId out for the "
                "default instance."
            ), said
            assert error(await mcp.call_tool("browser_snapshot", {"tabId": tab})).startswith(
                f"Tab {tab} not found"
            )


async def test_a_killed_driver_loses_a_grid_instance_that_the_next_call_drives_again_in_its_session(
    grid: SeleniumGrid, site: LocalSite
) -> None:
    """A grid session outlives the driver that connected to it: the next call without a tab id
    connects to the same session again, with its tabs, and the session ends once, with its last
    instance, when the server stops."""
    before = set(grid.session_ids())
    with _served_in_own_temp("--selenium-grid", grid.url) as served:
        async with Client(served) as mcp:
            opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
            tab = result_of(opened)["tabId"]
            (session,) = set(grid.session_ids()) - before
            other = await mcp.call_tool("browser_instance", {"action": "connect", "seleniumGrid": grid.url})
            other_tab = result_of(other)["tabIds"][0]
            (other_session,) = set(grid.session_ids()) - before - {session}
            kill_served_driver(grid.url)

            said = error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))
            assert "Its browser keeps its tabs, but tabpilot lost track of them." in said, said
            assert said.endswith(
                "A call without tabId and instanceId connects it again as the default instance; its tabs keep "
                "their ids."
            )
            # Only the default instance is connected again by itself.
            said = error(await mcp.call_tool("browser_snapshot", {"tabId": other_tab}))
            assert said.endswith(
                "Its browser keeps its tabs, but tabpilot lost track of them. Launch or connect another "
                "instance with browser_instance."
            ), said
            listed = text(await mcp.call_tool("browser_tabs", {"action": "list"}))
            assert "instance inst_3 was connected in place of lost instance inst_1" in listed, listed
            # The tab is back under its id, and active again (not the session's first, blank tab).
            assert f"- tab {tab}: Page a ({site.url('/page/a')}) [active]" in listed, listed
            instances = result_of(await mcp.call_tool("browser_instance", {"action": "list"}))["instances"]
            assert [
                (i["id"], i["kind"], i["endpoint"].rsplit("/", 1)[-1], i["health"]) for i in instances
            ] == [
                ("inst_1", "grid", session, "lost"),
                ("inst_2", "grid", other_session, "lost"),
                ("inst_3", "grid", session, "open"),
            ]
            # Closing the lost instance leaves the session to the one that drives it now.
            await mcp.call_tool("browser_instance", {"action": "close", "instanceId": "inst_1"})
            assert session in grid.session_ids()
            went = await mcp.call_tool("browser_navigate", {"url": site.url("/page/b")})
            assert not went.is_error and "Page b" in text(went), text(went)
            assert result_of(went)["tabId"] == tab, text(went)
    await wait_until(lambda: not {session, other_session} & set(grid.session_ids()), timeout=10)


async def _cdp_browser_outlives_the_driver(
    served: StdioServerParameters, remote: RemoteChromium, site: LocalSite, *, heartbeat_first: bool = False
) -> None:
    async with Client(served) as mcp:
        opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
        tab = result_of(opened)["tabId"]
        kill_served_driver(remote.http)
        if heartbeat_first:  # a listing of the instances asks no browser: only the heartbeat can tell
            instances = await poll(
                lambda: mcp.call_tool("browser_instance", {"action": "list"}),
                lambda r: result_of(r)["instances"][0]["health"] == "lost",
                timeout=10,
            )
            assert result_of(instances)["instances"][0]["health"] == "lost", text(instances)

        said = error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))
        assert "Its browser keeps its tabs, but tabpilot lost track of them." in said, said
        assert "A call without tabId and instanceId connects it again" in said
        if heartbeat_first:  # the tab is not open now: the error names it and lists the open tabs
            assert said.startswith(f"Tab {tab} not found. Instance inst_1 was lost (Playwright's driver"), (
                said
            )
            assert "Open tabs:" in said, said
        listed = text(await mcp.call_tool("browser_tabs", {"action": "list"}))
        assert "was connected in place of lost instance inst_1" in listed, listed
        assert "the tabs the browser still has keep their ids" in listed, listed
        # The tab is back under its id, and active again, as it was when the driver died.
        assert f"- tab {tab}: Page a ({site.url('/page/a')}) [active]" in listed, listed
        again = await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})
        assert not again.is_error and "Page a" in text(again), text(again)


WAITS_FOREVER = "async () => { await fetch('/started'); return new Promise(() => {}); }"
"""A script that says it runs (`_started_route`), then never ends: a call in flight."""


def _started_route(site: LocalSite) -> threading.Event:
    """Set when a page fetches /started of `site`."""
    started = threading.Event()

    async def mark(_request: Request) -> Response:
        started.set()
        return Response(b"")

    site.set_route("/started", mark)
    return started


@contextlib.asynccontextmanager
async def _served_over_http(
    browser_path: str, tmp: str, *, own_group: bool = False
) -> AsyncIterator[tuple[subprocess.Popen[bytes], Client, list[int]]]:
    """`tabpilot serve --http` with its browser started (a navigation), a client of it, and the
    browser's processes. The server is killed on the way out if it still runs."""
    port = free_port()
    proc = _serve(browser_path, tmp, "--http", f"127.0.0.1:{port}", own_group=own_group)
    try:
        await wait_until(lambda: _listening(port), 30)
        async with Client(f"http://127.0.0.1:{port}/mcp") as mcp:
            opened = await mcp.call_tool("browser_navigate", {"url": "about:blank"})
            assert not opened.is_error, text(opened)
            yield proc, mcp, [pid for pid in descendants(proc.pid) if "chrom" in comm(pid)]
    finally:
        if proc.poll() is None:
            proc.kill()


def _assert_stopped_cleanly(proc: subprocess.Popen[bytes], browsers: list[int], tmp: str) -> None:
    """Stopped by its SIGTERM, no ERROR logged, nothing left behind."""
    assert proc.returncode == -signal.SIGTERM
    assert proc.stderr is not None
    stderr = proc.stderr.read().decode(errors="replace")
    assert " ERROR " not in stderr, stderr
    _assert_left_nothing(browsers, tmp, stderr)


async def test_over_http_a_call_under_way_when_the_server_stops_is_answered(
    browser_path: str, site: LocalSite
) -> None:
    """A stop signal cuts a call in flight short with an answer that says why; uvicorn's own stop
    ended its response stream unanswered ("SSE stream ended without a response")."""
    started = _started_route(site)
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        async with _served_over_http(browser_path, tmp) as (proc, mcp, browsers):
            await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")})
            call = asyncio.create_task(mcp.call_tool("browser_evaluate", {"function": WAITS_FOREVER}))
            await wait_until(started.is_set, 30)  # the call runs in the page
            proc.send_signal(signal.SIGTERM)
            answer = await call
            await asyncio.to_thread(proc.wait, 10)
        assert answer.is_error
        assert error(answer) == (
            "The server is stopping: this call was cut short, and may have been done in part. "
            "Start the server again to go on."
        )
        _assert_stopped_cleanly(proc, browsers, tmp)


async def test_over_http_a_stop_with_a_client_connected_ends_its_stream_and_logs_no_error(
    browser_path: str,
) -> None:
    """The SDK client keeps a notification stream (GET) open; at a stop the SDK left it without its
    end, and uvicorn logged "ERROR ... ASGI callable returned without completing response" at
    every stop of a server with a client connected."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        async with _served_over_http(browser_path, tmp) as (proc, _mcp, browsers):
            proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(proc.wait, 10)
        _assert_stopped_cleanly(proc, browsers, tmp)


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGHUP"])
async def test_a_stop_signal_to_the_process_group_stops_the_server_with_no_warning_and_leaves_nothing(
    browser_path: str, how: str
) -> None:
    # A terminal's Ctrl-C (and its closing: SIGHUP; a supervisor's stop: SIGTERM to the whole
    # group) signals Playwright's driver and the browser too, which closed the browser as the server
    # was closing it: "WARNING tabpilot: instance inst_1 (launched) was lost: the browser quit,
    # closing its tabs first" at every such stop over HTTP.
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        async with _served_over_http(browser_path, tmp, own_group=True) as (proc, _mcp, browsers):
            os.killpg(proc.pid, getattr(signal, how))
            await asyncio.to_thread(proc.wait, 10)
        expected = {"SIGINT": 130, "SIGTERM": -signal.SIGTERM, "SIGHUP": 0}[how]
        assert proc.returncode == expected and proc.stderr is not None
        stderr = proc.stderr.read().decode(errors="replace")
        assert " WARNING " not in stderr and " ERROR " not in stderr, stderr
        _assert_left_nothing(browsers, tmp, stderr)


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
async def test_over_http_a_second_signal_while_stopping_exits_at_once_and_leaves_nothing(
    browser_path: str, how: str
) -> None:
    # uvicorn's forced exit cut its shutdown short and raised the signals again: two tracebacks
    # (uvicorn's lifespan, asyncio's shutdown). Exiting at once then left the temporary profile.
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        async with _served_over_http(browser_path, tmp) as (proc, _mcp, browsers):
            with _browser_held_up(browsers):
                proc.send_signal(getattr(signal, how))
                await asyncio.sleep(0.3)  # the stop waits for the browser to close
                proc.send_signal(getattr(signal, how))
                await asyncio.to_thread(proc.wait, 10)
                expected = {"SIGINT": 130, "SIGTERM": -signal.SIGTERM}[how]
                assert proc.returncode == expected and proc.stderr is not None
                stderr = proc.stderr.read().decode(errors="replace")
                assert " ERROR " not in stderr and f"{how} again while stopping: exiting at once" in stderr, (
                    stderr
                )
                _assert_left_nothing(browsers, tmp, stderr)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
async def test_over_stdio_a_call_under_way_when_the_server_stops_is_answered(
    browser_path: str, site: LocalSite, how: str
) -> None:
    """A stop signal cuts a call in flight short with an answer that says why, as over HTTP; the
    client waited for an answer that never came."""
    started = _started_route(site)
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        served = Served(browser_path, tmp)
        proc = served.proc
        assert proc.stdin is not None and proc.stdout is not None
        for request_id, name, arguments in (
            (90, "browser_navigate", {"url": site.url("/page/a")}),
            (91, "browser_evaluate", {"function": WAITS_FOREVER}),
        ):
            _send(
                proc.stdin,
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                },
            )
            if request_id == 90:
                assert not _read_reply(proc.stdout, 90)["result"].get("isError")
        await wait_until(started.is_set, 30)  # the call runs in the page
        took, stderr = served.stop(how)
        answer = _read_reply(proc.stdout, 91, timeout=5)["result"]
        assert answer["isError"], answer
        assert answer["content"][0]["text"] == (
            "### Error\nThe server is stopping: this call was cut short, and may have been done in part. "
            "Start the server again to go on."
        )
        assert took < 5, f"stopping by {how} took {took:.1f} s"
        _assert_left_nothing(served.children, tmp, stderr)


async def test_over_http_a_killed_driver_takes_the_shared_browser_and_sessions_carry_on(
    browser_path: str,
) -> None:
    """Over HTTP the sessions live in contexts of one shared browser. When the driver dies, a
    session's next call says its browser was lost and gives it a context of a new shared browser
    (through a new driver); a new session gets one too."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        port = free_port()
        command = [
            sys.executable,
            "-m",
            "tabpilot",
            "serve",
            "--browser-path",
            browser_path,
            "--http",
            str(port),
        ]
        proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": tmp}
        )
        url = f"http://127.0.0.1:{port}/mcp"
        try:
            await wait_until(lambda: _listening(port), 30)
            async with Client(url) as first:
                assert not (await first.call_tool("browser_tabs", {"action": "list"})).is_error
                children = descendants(proc.pid)
                browsers = [pid for pid in children if "chrom" in comm(pid)]
                assert browsers, [comm(pid) for pid in children]
                kill_driver(children)
                # The browser stops by itself once its driver is gone.
                await wait_until(lambda: not any(pid_alive(p) for p in browsers), 10)
                listed = await first.call_tool("browser_tabs", {"action": "list"})
                said = listed.content[0].text  # type: ignore[union-attr]
                assert not listed.is_error, said
                assert "instance inst_1 was lost: the browser process" in said, said
                assert "was launched in place of lost instance inst_1" in said, said
                opened = await first.call_tool("browser_tabs", {"action": "new"})
                assert not opened.is_error, opened.content
            async with Client(url) as second:
                listed = await second.call_tool("browser_tabs", {"action": "list"})
                assert not listed.is_error, listed.content
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            finally:
                if proc.poll() is None:
                    proc.kill()
        assert proc.stderr is not None
        stderr = proc.stderr.read().decode(errors="replace")
        assert "Traceback" not in stderr, stderr
        assert not list(Path(tmp).glob("tabpilot-profile-*")), "every temporary profile is removed"


async def test_a_call_that_comes_as_the_server_stops_is_answered_without_a_traceback(
    make_server: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    # A stop signal during start-up closed the state while a call waited for its browser session:
    # the call got "could not start the browser" and the log a traceback at ERROR level.
    server = make_server()
    async with Client(server) as mcp:
        assert server.state is not None
        await server.state.close()
        with caplog.at_level(logging.INFO, logger="tabpilot"):
            stopped = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert stopped.is_error
        assert (
            text(stopped)
            == "### Error\nThe server is stopping: this call was not run. Start the server again to go on."
        )
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING or r.exc_info]


@contextlib.contextmanager
def _silent_endpoint() -> Iterator[tuple[str, threading.Event]]:
    """An address that accepts connections and never answers (a hung CDP endpoint, a grid that
    queues), and an event set once something connected to it."""
    connected = threading.Event()
    held: list[socket.socket] = []
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.2)

        def accept() -> None:
            while listener.fileno() != -1:
                try:
                    held.append(listener.accept()[0])
                except TimeoutError:
                    continue
                except OSError:
                    return
                connected.set()

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{listener.getsockname()[1]}", connected
        finally:
            listener.close()
            thread.join(2)
            for sock in held:
                sock.close()


@pytest.mark.parametrize("how", ["stdin", "SIGTERM"])
def test_a_call_waiting_for_its_browser_is_answered_at_once_when_the_server_stops(
    browser_path: str, how: str
) -> None:
    """A CDP endpoint that accepts and never answers: a call waits for the browser; a stop answers
    it at once (it was left waiting, unanswered, until the browser's start was given up on), and
    the process exits at once (it waited 10 s for the request's worker thread)."""
    with (
        tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp,
        _silent_endpoint() as (url, connected),
    ):
        proc = _serve(browser_path, tmp, "--cdp-endpoint", url)
        try:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            _initialize(proc)
            call = {"name": "browser_tabs", "arguments": {"action": "list"}}
            _send(proc.stdin, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
            # Messages are read in order: once a later ping is answered, the call is under way.
            _send(proc.stdin, {"jsonrpc": "2.0", "id": 3, "method": "ping"})
            _read_reply(proc.stdout, 3)
            assert connected.wait(30), "the server asked the endpoint"
            started = time.monotonic()
            if how == "stdin":
                proc.stdin.close()
            else:
                proc.send_signal(signal.SIGTERM)
            reply = _read_reply(proc.stdout, 2, timeout=5)
            proc.wait(10)
            took = time.monotonic() - started
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert took < 5, f"stopping by {how} took {took:.1f} s"
        if how == "stdin":  # the client is gone: the SDK answers what is under way as closed
            assert reply.get("error", {}).get("message") == "Connection closed", reply
        else:
            assert reply["result"]["isError"], reply
            assert reply["result"]["content"][0]["text"] == (
                "### Error\nThe server is stopping: this call was not run (its browser was still being "
                "started or connected). Start the server again to go on."
            )
        stderr = proc.stderr.read().decode(errors="replace")
        assert "Traceback" not in stderr, stderr


def test_over_http_a_stop_in_the_first_moments_ends_as_stopped_without_a_traceback(browser_path: str) -> None:
    """SIGTERM just after the port listens (a supervisor that changed its mind): the start-up
    message read the port of the socket uvicorn had already closed, and the process exited 1 with
    an OSError traceback (9 of 12 tries)."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        for delay in (0.0, 0.005, 0.01, 0.02, 0.03, 0.04):
            port = free_port()
            proc = _serve(browser_path, tmp, "--http", f"127.0.0.1:{port}")
            try:
                deadline = time.monotonic() + 30
                while not _listening(port):
                    assert time.monotonic() < deadline and proc.poll() is None, "the server listens"
                    time.sleep(0.002)
                time.sleep(delay)
                proc.send_signal(signal.SIGTERM)
                _, stderr = proc.communicate(timeout=20)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            said = stderr.decode(errors="replace")
            assert "Traceback" not in said, said
            assert proc.returncode == -signal.SIGTERM, (delay, proc.returncode, said)


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT"])
def test_requests_the_server_had_not_started_when_it_stops_are_answered(browser_path: str, how: str) -> None:
    """A stop signal right after the handshake, while the server still loads: the call sent with
    the handshake was never answered (8 of 8 tries), the client left waiting."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:
        proc = _serve(browser_path, tmp)
        try:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            request, initialized = STDIO_HANDSHAKE
            call = {"name": "browser_tabs", "arguments": {"action": "list"}}
            for message in (
                request,
                initialized,
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            ):
                _send(proc.stdin, message)
            _read_reply(proc.stdout, 1)  # answered at once, before the server has loaded
            proc.send_signal(getattr(signal, how))
            called = _read_reply(proc.stdout, 2, timeout=10)
            listed = _read_reply(proc.stdout, 3, timeout=10)
            proc.wait(10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        said = called["result"]["content"][0]["text"]
        assert called["result"]["isError"] and said.startswith(
            "### Error\nThe server is stopping: this call "
        ), said
        # Any other request is answered as well: the tool list, or the error that the server stops.
        assert "result" in listed or listed["error"]["message"].startswith("The server is stopping"), listed
        stderr = proc.stderr.read().decode(errors="replace")
        assert "Traceback" not in stderr, stderr


async def test_what_a_killed_server_left_in_the_temp_dir_the_next_one_removes() -> None:
    """SIGKILL leaves a server no time to remove its browser's profile and the driver's temp dir
    (2 MB each time, kept until the machine restarts): the next tabpilot to start removes them, as
    their maker runs no more; its own stay until it stops."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-lifecycle-") as tmp:

        def ours() -> list[str]:
            return sorted(
                p.name for p in Path(tmp).iterdir() if p.name.startswith(("tp-", "tabpilot-profile-"))
            )

        async with Client(served("--max-tabs", "47", TMPDIR=tmp)) as killed:
            assert not (await killed.call_tool("browser_tabs", {"action": "list"})).is_error
            (server,) = [p for p in descendants(os.getpid()) if "serve --max-tabs 47" in cmdline(p)]
            below = descendants(server)
            left = ours()
            assert [n.split("-")[0] for n in left] == ["tabpilot", "tp"], left
            os.kill(server, signal.SIGKILL)
            await wait_until(lambda: not any(pid_alive(p) for p in [server, *below]), timeout=10)
            assert ours() == left  # nothing of it ran to remove them

        async with Client(served(TMPDIR=tmp)) as mcp:
            assert not (await mcp.call_tool("browser_tabs", {"action": "list"})).is_error
            await wait_until(lambda: not set(left) & set(ours()), timeout=10)
            assert len(ours()) == 2  # its own
        await wait_until(lambda: not list(Path(tmp).iterdir()), timeout=5)
