"""Selenium Grid instances through a real MCP client: two grid sessions and the local browser side
by side, a session the grid ends, and no session left behind. The grid is real (hub + node on
127.0.0.1, see the `grid` fixture)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from mcp import Client
from mcp.types import CallToolResult

from support import (
    SeleniumGrid,
    data,
    error,
    free_port,
    ok,
    poll,
    ref_of,
    result_of,
    section,
    served,
    text,
    wait_until,
)
from tabpilot import BrowserOptions
from tabpilot.demo.site import LocalSite
from tabpilot.server import ServerConfig, create_server


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    return ok(await client.call_tool(tool, arguments))


async def flow(client: Client, instance_id: str, site: LocalSite) -> int:
    """New tab, navigate, snapshot, a click that opens a tab; returns the tab it opened."""
    opened = await call(client, "browser_tabs", action="new", instanceId=instance_id, background=True)
    tab_id = result_of(opened)["tabId"]
    went = await call(client, "browser_navigate", url=site.url("/"), tabId=tab_id)
    assert result_of(went)["url"] == site.url("/")
    snapshot: str = data(await call(client, "browser_snapshot", full=True, tabId=tab_id))["snapshot"]
    clicked = await call(client, "browser_click", ref=ref_of(snapshot, "Open A in new tab"))
    (event,) = [e for e in data(clicked)["events"] if e["type"] == "tab_opened"]
    assert (event["openerId"], event["cause"], event["instanceId"]) == (tab_id, "link", instance_id)
    return int(event["tabId"])


async def test_two_grid_sessions_and_the_local_browser_side_by_side_and_a_session_the_grid_ends(
    grid: SeleniumGrid, browser_path: str, site: LocalSite
) -> None:
    before = set(grid.session_ids())
    config = ServerConfig(browser=BrowserOptions(browser_path=browser_path), structured_content=True)
    server = create_server(config)
    async with Client(server) as client:
        (local,) = result_of(await call(client, "browser_instance", action="list"))["instances"]
        connected = [
            result_of(
                await call(
                    client,
                    "browser_instance",
                    action="connect",
                    seleniumGrid=grid.url,
                    capabilities={"goog:chromeOptions": {"args": ["--lang=de"]}},
                )
            )
            for _ in range(2)
        ]
        sessions = [c["endpoint"].rsplit("/", 1)[-1] for c in connected]
        assert set(grid.session_ids()) - before == set(sessions)
        browsers = grid.browser_pids()
        assert len(browsers) == len(before) + 2, "one Chromium on the node per session"
        listed = result_of(await call(client, "browser_instance", action="list"))["instances"]
        assert [(i["kind"], i["endpoint"]) for i in listed] == [
            ("launched", None),
            *(("grid", f"{grid.url}/session/{s}") for s in sessions),
        ]

        opened = {
            i: await flow(client, i, site) for i in (local["id"], *(c["instanceId"] for c in connected))
        }
        tabs = result_of(await call(client, "browser_tabs", action="list"))["tabs"]
        ids = [t["id"] for t in tabs]
        assert len(ids) == len(set(ids)) and set(opened.values()) <= set(ids), "ids unique across instances"

        # The grid ends one session (as on its session timeout): lost within 10 s, as for a crash.
        doomed, kept = connected
        doomed_tabs = [t["id"] for t in tabs if t["instanceId"] == doomed["instanceId"]]
        await asyncio.to_thread(grid.delete_session, sessions[0])
        # A call made at once, before the loss is noticed, fails with the instance's loss: not as a
        # page that is busy or stuck in a script (the whole browser is silent).
        at_once = await client.call_tool(
            "browser_snapshot", {"full": True, "tabId": opened[doomed["instanceId"]]}
        )
        said = error(at_once)
        assert f"Instance {doomed['instanceId']} was lost" in said, said
        assert "not responding" not in said and "did not finish" not in said, said
        started = time.monotonic()
        events = section(at_once, "Events") if "### Events" in text(at_once) else ""
        while f"instance {doomed['instanceId']} was lost" not in events and time.monotonic() - started < 10:
            await asyncio.sleep(0.2)
            events += section(await call(client, "browser_tabs", action="list"), "Events")
        assert f"instance {doomed['instanceId']} was lost: the grid session" in events
        for tab_id in doomed_tabs:
            assert f"tab {tab_id} closed (its browser was lost)" in events

        started = time.monotonic()
        failed = error(
            await client.call_tool("browser_snapshot", {"full": True, "tabId": opened[doomed["instanceId"]]})
        )
        assert f"Instance {doomed['instanceId']} was lost" in failed
        assert time.monotonic() - started < 3

        # The other grid session and the local browser keep working.
        for instance_id in (local["id"], kept["instanceId"]):
            went = await call(client, "browser_navigate", url=site.url("/page/b"), tabId=opened[instance_id])
            assert "Page b" in section(went, "Page")
        listed = result_of(await call(client, "browser_instance", action="list"))["instances"]
        assert {i["id"]: i["health"] for i in listed} == {
            local["id"]: "open",
            doomed["instanceId"]: "lost",
            kept["instanceId"]: "open",
        }

        closed = await call(client, "browser_instance", action="close", instanceId=kept["instanceId"])
        assert "its grid session was ended" in section(closed, "Result")
        assert not grid.sessions_end(keep=before), "closing the instance ended its session"
    assert not grid.sessions_end(keep=before), "no grid session outlives the server"
    await wait_until(lambda: not set(grid.browser_pids()) & set(browsers), timeout=10)


async def test_grid_errors_are_clear_and_immediate(
    grid: SeleniumGrid, site: LocalSite, make_server: Any
) -> None:
    async with Client(make_server()) as client:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"seleniumGrid": f"http://127.0.0.1:{free_port()}"}, "it is unreachable"),
            ({"seleniumGrid": site.url("/")}, "answered, but not as a Selenium Grid"),
            (
                {"seleniumGrid": grid.url, "capabilities": {"browserName": "firefox"}},
                "offers browserName 'firefox'",
            ),
            (  # the grid would queue it until its timeout: it matches browserName exactly
                {"seleniumGrid": grid.url, "capabilities": {"browserName": "Chrome"}},
                "offers browserName 'Chrome'; its nodes offer chrome (the grid matches browserName exactly",
            ),
            (  # the grid would queue it until its timeout: no node runs on Windows
                {"seleniumGrid": grid.url, "capabilities": {"platformName": "Windows"}},
                "offers chrome on platformName 'Windows'; its nodes offer it on linux",
            ),
            ({"seleniumGrid": "ws://127.0.0.1:1"}, "is not a Selenium Grid URL"),
            (
                {"cdpEndpoint": "http://127.0.0.1:1", "capabilities": {}},
                "capabilities apply to a Selenium Grid",
            ),
            ({"seleniumGrid": grid.url, "wsEndpoint": "ws://127.0.0.1:1"}, "exactly one of"),
        ]
        for arguments, message in cases:
            started = time.monotonic()
            said = error(await client.call_tool("browser_instance", {"action": "connect", **arguments}))
            assert message in said
            assert time.monotonic() - started < 3
    assert not grid.sessions_end(), "a failed connect leaves no session"


async def test_serve_with_selenium_grid_starts_in_a_grid_session_and_ends_it_at_exit(
    grid: SeleniumGrid, site: LocalSite
) -> None:
    before = set(grid.session_ids())
    params = served(
        "--selenium-grid",
        grid.url,
        "--grid-capabilities",
        '{"platformName": "linux"}',
        "--structured-content",
    )
    async with Client(params) as client:
        listed = await call(client, "browser_instance", action="list")
        (instance,) = result_of(listed)["instances"]
        assert instance["kind"] == "grid" and instance["default"]
        # The session's first tab opened at the server's request, as a launched browser's does.
        opened = [(e["tabId"], e["cause"]) for e in data(listed)["events"] if e["type"] == "tab_opened"]
        assert opened == [(1, "tool")], opened
        session = instance["endpoint"].rsplit("/", 1)[-1]
        assert set(grid.session_ids()) - before == {session}
        went = await call(client, "browser_navigate", url=site.url("/page/a"))
        assert "Page a" in section(went, "Page")
    assert not grid.sessions_end(keep=before), "the server ended its grid session when it stopped"


async def test_a_server_whose_grid_session_ends_starts_a_new_one_on_the_next_call(
    grid: SeleniumGrid, browser_path: str, site: LocalSite
) -> None:
    """`--selenium-grid`: the grid ends the default's session (its session timeout, its node gone).
    The next call starts a new session on the same grid, as a crashed launched browser is launched
    again, instead of every call failing until the server is restarted."""
    before = set(grid.session_ids())
    config = ServerConfig(
        browser=BrowserOptions(browser_path=browser_path), structured_content=True, selenium_grid=grid.url
    )
    async with Client(create_server(config)) as client:
        await call(client, "browser_navigate", url=site.url("/page/a"))
        (first,) = result_of(await call(client, "browser_instance", action="list"))["instances"]
        await asyncio.to_thread(grid.delete_session, first["endpoint"].rsplit("/", 1)[-1])

        async def listed() -> Any:
            return result_of(await call(client, "browser_instance", action="list"))["instances"]

        await poll(listed, lambda instances: instances[0]["health"] == "lost", timeout=20)
        went = await call(client, "browser_navigate", url=site.url("/page/b"))
        assert result_of(went)["url"] == site.url("/page/b")
        (event,) = [e for e in data(went)["events"] if e["type"] == "instance_relaunched"]
        assert (event["replaces"], event["kind"], event["tabsKept"]) == (first["id"], "grid", False), event
        lost, now = await listed()
        assert (lost["health"], now["health"], now["kind"], now["default"]) == ("lost", "open", "grid", True)
        assert set(grid.session_ids()) - before == {now["endpoint"].rsplit("/", 1)[-1]}, "one new session"

        # Lost with its hub (stuck, then back): the session runs on, and is ended for the new one.
        with _hub_stuck(grid):
            await poll(listed, lambda instances: instances[-1]["health"] == "lost", timeout=20)
        went = await call(client, "browser_navigate", url=site.url("/page/a"))
        assert result_of(went)["url"] == site.url("/page/a")
        latest = (await listed())[-1]
        assert (latest["health"], latest["default"]) == ("open", True)
        left = set(grid.session_ids()) - before
        assert left == {latest["endpoint"].rsplit("/", 1)[-1]}, "the stuck hub's session was ended"
    assert not grid.sessions_end(keep=before), "the server ended the new session when it stopped"


def _serve_on(grid: SeleniumGrid) -> subprocess.Popen[str]:
    """`tabpilot serve --selenium-grid` over pipes (stderr read as text)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "serve", "--selenium-grid", grid.url],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_with_selenium_grid_ends_its_session_on_sigterm(grid: SeleniumGrid) -> None:
    """A client that gives up sends SIGTERM: the server still ends its grid session."""
    before = set(grid.session_ids())
    server = _serve_on(grid)
    try:
        # The browser starts with the server: the grid session appears before any call.
        deadline = time.monotonic() + 60
        while not set(grid.session_ids()) - before:
            assert server.poll() is None, server.communicate()[1]
            assert time.monotonic() < deadline, "the server opened no grid session"
            time.sleep(0.2)
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=10)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == -signal.SIGTERM, stderr  # ended as stopped by it
    assert "Traceback" not in stderr, stderr
    assert not grid.sessions_end(keep=before), "SIGTERM left the grid session running"


async def test_a_server_stopped_while_the_grid_queues_its_session_leaves_no_session_behind(
    grid: SeleniumGrid,
) -> None:
    """Every slot of the grid is in use: the server's session request waits in the grid's queue.
    A stop (the client closes stdin) exits at once and the request leaves the queue with the
    connection, so no session starts in the next free slot. The process waited for the request
    (up to its 60 s timeout) and then left the session the grid started running."""
    before = set(grid.session_ids())
    held = await grid.take_every_slot()
    server = None
    try:
        server = _serve_on(grid)
        await wait_until(lambda: len(grid.queued()) == 1, timeout=30)  # its start waits in the queue
        assert server.stdin is not None
        started = time.monotonic()
        server.stdin.close()
        await asyncio.to_thread(server.wait, 20)
        took = time.monotonic() - started
        assert server.stderr is not None
        stderr = server.stderr.read()
        assert took < 5, f"the stop took {took:.1f} s"
        assert "Traceback" not in stderr, stderr
        await wait_until(lambda: not grid.queued(), timeout=5)
        await grid.assert_no_late_session(held, before, "no session started for the stopped server")
    finally:
        if server is not None and server.poll() is None:
            server.kill()
            server.wait()
        for session in held:
            await session.delete()
    assert not grid.sessions_end(keep=before)


async def test_a_grid_session_waiting_for_a_slot_reports_progress_until_one_frees(
    grid: SeleniumGrid, browser_path: str, site: LocalSite
) -> None:
    """Every slot is in use: the session request waits in the grid's queue, up to a minute, about
    as long as MCP clients wait for an answer. Progress notifications say what the call waits for,
    both for browser_instance connect and for the first call of a server whose browser is a grid
    session, so that a client that asked for them keeps waiting; the call goes on once a slot frees."""
    before = set(grid.session_ids())
    held = await grid.take_every_slot()
    config = ServerConfig(
        browser=BrowserOptions(browser_path=browser_path), structured_content=True, selenium_grid=grid.url
    )
    try:
        async with Client(create_server(config)) as client:
            await _waits_for_a_slot_with_progress(client, grid, held, "browser_tabs", action="list")
            await _waits_for_a_slot_with_progress(
                client, grid, held, "browser_instance", action="connect", seleniumGrid=grid.url
            )
            # The grid ends the default's session while every slot is in use: the session that
            # takes its place waits for a slot too.
            default = next(
                i
                for i in result_of(await call(client, "browser_instance", action="list"))["instances"]
                if i["default"]
            )
            ended = default["endpoint"].rsplit("/", 1)[-1]
            await asyncio.to_thread(grid.delete_session, ended)
            await wait_until(lambda: ended not in grid.session_ids(), timeout=10)
            held += await grid.take_every_slot()
            await poll(
                lambda: call(client, "browser_instance", action="list"),
                lambda listed: result_of(listed)["instances"][0]["health"] == "lost",
                timeout=20,
            )
            await _waits_for_a_slot_with_progress(
                client, grid, held, "browser_navigate", url=site.url("/page/a")
            )
    finally:
        for session in held:
            await session.delete()
    assert not grid.sessions_end(keep=before)


async def _waits_for_a_slot_with_progress(
    client: Client, grid: SeleniumGrid, held: list[Any], tool: str, **arguments: Any
) -> None:
    """Call `tool`, whose grid session waits in the queue; check it reports progress while it
    waits, free one of `held`'s slots, and check the call then succeeds."""
    said: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    calling = asyncio.ensure_future(client.call_tool(tool, arguments, progress_callback=on_progress))
    await wait_until(lambda: len(grid.queued()) == 1, timeout=30)
    await wait_until(lambda: len(said) >= 2, timeout=10)
    assert not calling.done()
    await held.pop().delete()  # a slot frees: the queued request gets it
    ok(await asyncio.wait_for(calling, 60))
    assert any("connecting" in m for m in said), said


async def test_closing_a_grid_instance_whose_grid_does_not_answer_says_its_session_may_run_on(
    grid: SeleniumGrid, make_server: Any
) -> None:
    """The hub is stuck (stopped): the session cannot be ended, and it runs on, holding a slot,
    once the hub is back. The answer says so and how to end it, instead of that it was ended."""
    before = set(grid.session_ids())
    async with Client(make_server()) as client:
        connected = await _connect_grid(client, grid)
        with _hub_stuck(grid):
            closed = await client.call_tool(
                "browser_instance", {"action": "close", "instanceId": connected["instanceId"]}
            )
        said = section(ok(closed), "Result")
        session = connected["endpoint"]
        assert f"its grid session {session} could not be ended" in said, said
        assert f"end it there (DELETE {session})" in said and "was ended" not in said, said
        running = grid.session_ids()
        for left in set(running) - before:  # what the answer says to do
            grid.delete_session(left)
        assert session.rsplit("/", 1)[-1] in running, "it does run on"
    assert not grid.sessions_end(keep=before)


async def test_a_grid_whose_hub_stops_answering_is_named_as_the_reason_its_instance_was_lost(
    grid: SeleniumGrid, make_server: Any
) -> None:
    """The hub is stuck (stopped), not the session ended nor its node gone: the loss says so, so
    that whoever reads it looks at the hub."""
    before = set(grid.session_ids())
    async with Client(make_server()) as client:
        connected = await _connect_grid(client, grid)

        async def lost() -> Any:
            listed = result_of(await client.call_tool("browser_instance", {"action": "list"}))["instances"]
            return next(i for i in listed if i["id"] == connected["instanceId"])

        with _hub_stuck(grid):
            listed = await poll(lost, lambda i: i["health"] == "lost", timeout=20)
        assert listed["lostReason"].startswith(
            f"the Selenium Grid at {grid.url} stopped answering (its hub is down or stuck)"
        ), listed
        ok(
            await client.call_tool(
                "browser_instance", {"action": "close", "instanceId": connected["instanceId"]}
            )
        )
    assert not grid.sessions_end(keep=before)


async def _connect_grid(client: Client, grid: SeleniumGrid) -> Any:
    """browser_instance connect to `grid`: its result (instanceId, endpoint: the session's URL)."""
    return result_of(
        await client.call_tool("browser_instance", {"action": "connect", "seleniumGrid": grid.url})
    )


@contextlib.contextmanager
def _hub_stuck(grid: SeleniumGrid) -> Iterator[None]:
    """The grid's hub stopped (SIGSTOP) for the block: a hub that hangs, taking connections and
    answering nothing, while its node and sessions run on."""
    os.kill(grid.hub.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(grid.hub.pid, signal.SIGCONT)
