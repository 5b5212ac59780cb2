"""The user's own browser through the tabpilot extension, driven through MCP as an agent would: a
real Chromium with the shipped extension and a page of the user's own, `serve --extension`, and a
real MCP client (in memory, and over stdio as `tabpilot serve`). tabpilot gets no debugging port;
everything runs on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_sync_connect

import tabpilot.server.state
from support import (
    ExtensionChromium,
    data,
    error,
    extension_chromium,
    free_port,
    kill_served_driver,
    ok,
    poll,
    ref_of,
    remote_chromium,
    result_of,
    section,
    served,
    tab_line,
    text,
    wait_until,
)
from tabpilot import BrowserOptions, ExtensionBridge, cli, extension_id
from tabpilot.demo.site import LocalSite
from tabpilot.server import ServerConfig, TabpilotServer, create_server

TOKEN = "test-pairing-token"


@pytest.fixture
def chromium(browser_path: str, site: LocalSite) -> Iterator[ExtensionChromium]:
    with extension_chromium(browser_path, site.url("/page/user")) as browser:
        yield browser


def extension_server(port: int, **options: Any) -> TabpilotServer:
    config = ServerConfig(
        extension=True, extension_port=port, extension_token=TOKEN, structured_content=True, **options
    )
    return create_server(config)


def connect_url(port: int) -> str:
    return f"chrome-extension://{extension_id()}/connect.html?port={port}&token={TOKEN}"


def served_extension(port: int, **env: str) -> StdioServerParameters:
    """`tabpilot serve --extension` over stdio on `port`, with `env` added to this environment."""
    return served(
        "--extension",
        "--extension-port",
        str(port),
        "--extension-token",
        TOKEN,
        "--structured-content",
        **env,
    )


async def pair(chromium: ExtensionChromium, port: int) -> None:
    """Open the connect page as the user (or their automation) does."""
    await asyncio.to_thread(chromium.open, connect_url(port))


async def call(mcp: Client, tool: str, **arguments: Any) -> CallToolResult:
    result = await mcp.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return result


@contextlib.asynccontextmanager
async def paired_client(chromium: ExtensionChromium, **options: Any) -> AsyncIterator[tuple[Client, int]]:
    """A client of an extension server (`options` added to its config) on a free port, the
    extension paired with it; yields the client and the port."""
    port = free_port()
    async with Client(extension_server(port, **options)) as mcp:
        await pair(chromium, port)
        yield mcp, port


async def user_tab_alive(chromium: ExtensionChromium) -> bool:
    return any("/page/user" in p["url"] for p in await asyncio.to_thread(chromium.pages))


async def test_an_agent_works_in_its_own_tabs_of_the_users_browser_through_every_tool(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    async with paired_client(chromium) as (mcp, port):
        listed = result_of(await call(mcp, "browser_tabs", action="list"))
        # The agent's own blank tab only: the user's page is never listed.
        (start,) = listed["tabs"]
        assert start["url"] == "about:blank" and start["chromeTabId"] and start["windowId"]
        instances = result_of(await call(mcp, "browser_instance", action="list"))["instances"]
        assert [(i["kind"], i["endpoint"]) for i in instances] == [("extension", f"127.0.0.1:{port}")]

        home = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/")))["tabId"]
        await call(
            mcp,
            "browser_navigate",
            action="goto",
            url=site.url("/console?msg=hello-from-background"),
            tabId=start["id"],
        )
        snapshot = section(await call(mcp, "browser_snapshot", full=True, tabId=home), "Snapshot")
        assert 'heading "Home"' in snapshot

        # A link that opens a tab, and a popup: reported with their opener, not switched to.
        clicked = await call(mcp, "browser_click", ref=ref_of(snapshot, "Open A in new tab"))
        events = section(clicked, "Events")
        link_tab = int(events.split("opened (link) by tab")[0].rsplit("tab ", 1)[1].strip())
        assert f"tab {link_tab} opened (link) by tab {home}" in events
        popup = await call(mcp, "browser_click", ref=ref_of(snapshot, "Open popup"))
        assert f"opened (popup) by tab {home}" in section(popup, "Events")
        tabs = {t["id"]: t for t in result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]}
        assert tabs[link_tab]["openerId"] == home and tabs[home]["active"]
        assert 'heading "Page a"' in section(
            await call(mcp, "browser_snapshot", full=True, tabId=link_tab), "Snapshot"
        )

        # The user's cookies and logins are not copied.
        kept = error(await mcp.call_tool("browser_storage_state", {"path": "state.json"}))
        assert "is the user's own browser, reached through the tabpilot extension" in kept
        assert "launched or connected to instead" in kept

        # The console of a background tab.
        logs = result_of(await call(mcp, "browser_observe", what="logs", tabId=start["id"]))
        assert [e["text"] for e in logs["entries"]] == ["hello-from-background"]
        # And what Chrome itself logs for the page: a resource that failed to load.
        site.set_content(
            "/broken-image", "<!doctype html><link rel='icon' href='data:,'><img src='/no-such.png'>"
        )
        await call(mcp, "browser_navigate", url=site.url("/broken-image"), tabId=start["id"])
        failed = await poll(
            lambda: call(mcp, "browser_observe", what="logs", tabId=start["id"], level="error"),
            lambda observed: bool(result_of(observed)["entries"]),
        )
        assert [(e["source"], e["text"], e["location"]["url"]) for e in result_of(failed)["entries"]] == [
            (
                "network",
                "Failed to load resource: the server responded with a status of 404 (Not Found)",
                site.url("/no-such.png"),
            )
        ]

        # Back and forward in the user's Chrome, whose back/forward cache restores a page whole
        # (it fires no load event to wait for).
        await call(mcp, "browser_navigate", url=site.url("/page/b"), tabId=start["id"])
        back = await call(mcp, "browser_navigate", action="back", tabId=start["id"])
        assert section(back, "Result") == f"Went back on tab {start['id']}."
        assert result_of(back)["url"] == site.url("/broken-image")
        forward = await call(mcp, "browser_navigate", action="forward", tabId=start["id"])
        assert result_of(forward)["url"] == site.url("/page/b")

        # A download in the user's Chrome goes where Chrome puts it, and the agent hears of it.
        await call(mcp, "browser_navigate", url=site.url("/download"), tabId=start["id"])
        got = await call(mcp, "browser_navigate", url=site.url("/api/file"), tabId=start["id"])
        assert section(got, "Result").startswith(f"{site.url('/api/file')} is a file, not a page")
        line = f"tab {start['id']} started downloading 'tabpilot.txt' from {site.url('/api/file')}"
        assert f"- {line}" in section(got, "Events")
        # Chrome keeps the file where it saves downloads; the agent hears when it is whole.
        whole = f"- tab {start['id']} finished downloading 'tabpilot.txt'; the user's browser saved it in its downloads folder"
        told = section(got, "Events")
        for _ in range(100):  # 5 s at most
            if whole in told:
                break
            await asyncio.sleep(0.05)
            told += "\n" + section(await call(mcp, "browser_tabs", action="list"), "Events")
        assert whole in told.splitlines(), told
        assert os.listdir(chromium.downloads) == ["tabpilot.txt"]

        # A page that fails to load lists by the URL that failed, as the user's address bar shows it.
        down = f"http://127.0.0.1:{free_port()}/down"
        failed = await mcp.call_tool("browser_navigate", {"url": down, "tabId": start["id"]})
        assert failed.is_error and "ERR_CONNECTION_REFUSED" in text(failed), text(failed)
        on_error_page = await poll(
            lambda: call(mcp, "browser_tabs", action="list"),
            lambda listed: tab_line(listed, start["id"]).startswith(f"- tab {start['id']}: {down} ["),
        )
        assert (
            tab_line(on_error_page, start["id"])
            == f"- tab {start['id']}: {down} [failed to load (error page)]"
        )

        # close_others closes the agent's other tabs and never the user's.
        closed = result_of(await call(mcp, "browser_tabs", action="close_others", keepTabId=home))
        assert closed["remainingTabIds"] == [home] and closed["closedCount"] == len(tabs) - 1
        assert await user_tab_alive(chromium)
        pages = await asyncio.to_thread(chromium.pages)  # the user's (and the connect page) and the kept one
        web = sorted(p["url"] for p in pages if p["url"].startswith("http"))
        assert web == sorted([site.url("/page/user"), site.url("/")])


async def test_a_service_worker_restart_reconnects_with_the_same_tab_ids(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    async with paired_client(chromium) as (mcp, _):
        opened = await call(mcp, "browser_tabs", action="new", url=site.url("/page/a"))
        hi = ref_of(text(opened), 'button "Say hi"')
        before = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
        await asyncio.to_thread(chromium.stop_service_worker)
        deadline = time.monotonic() + 15
        while True:  # tools fail at once while it is away, and work again when it is back
            clicked = await mcp.call_tool("browser_click", {"ref": hi})
            if clicked.is_error and "cannot reach its browser now" not in error(clicked):
                break
            assert time.monotonic() < deadline, "the extension did not reconnect"
            await asyncio.sleep(0.2)
        # The page did not change, but its refs went with the old link: said so, not "page changed".
        said = error(clicked)
        assert (
            f"Ref {hi} no longer works on tab" in said and "the link to the user's browser dropped" in said
        ), said
        result = await call(mcp, "browser_snapshot", full=True)
        assert 'heading "Page a"' in section(result, "Snapshot")
        after = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
        assert [(t["id"], t["chromeTabId"]) for t in after] == [(t["id"], t["chromeTabId"]) for t in before]


def test_the_pairing_banner_hides_a_token_given_on_the_command_line_and_nothing_else(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tabpilot.server.state.announce_bridge(ExtensionBridge(port=9999, token="tok"))  # part of "token="
    banner = capsys.readouterr().err
    assert f"chrome-extension://{extension_id()}/connect.html?port=9999&token=<your token>" in banner


async def test_tools_say_how_to_connect_the_extension_until_it_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tabpilot.server.state, "EXTENSION_FIRST_WAIT", 0.2)
    port = free_port()
    async with Client(extension_server(port)) as mcp:
        # An agent that lists tabs first is told why there are none, and how to pair.
        listed = section(await call(mcp, "browser_tabs", action="list"), "Result")
        assert listed.startswith("0 open tabs; no tab is active. ") and "connect.html" in listed, listed
        message = error(
            await mcp.call_tool("browser_navigate", {"action": "goto", "url": "http://127.0.0.1/"})
        )
        assert f"has not connected to 127.0.0.1:{port}" in message
        assert f"chrome-extension://{extension_id()}/connect.html" in message
        waiting = result_of(await call(mcp, "browser_instance", action="connect", extension=True))
        assert waiting == {"waiting": True, "listening": f"127.0.0.1:{port}", "connectUrl": connect_url(port)}
        assert "It tried" not in message
        # The extension tries with another server's token (it was paired with one before): said, so
        # that the user pairs it again instead of waiting (only the server's log said so).
        with pytest.raises(InvalidStatus):
            origin = f"chrome-extension://{extension_id()}"
            async with ws_connect(f"ws://127.0.0.1:{port}/extension?token=old", origin=origin):  # type: ignore[arg-type]
                pass
        told = error(await mcp.call_tool("browser_navigate", {"action": "goto", "url": "http://127.0.0.1/"}))
        assert "It tried, with a token this server does not take" in told, told


async def test_a_port_in_use_is_said_with_what_to_do_and_the_next_call_tries_again(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(tabpilot.server.state, "EXTENSION_FIRST_WAIT", 0.2)
    # It said "Could not start the browser: ..." and to check that Chromium is installed.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with Client(extension_server(port)) as mcp:
            message = error(await mcp.call_tool("browser_tabs", {"action": "list"}))
            assert message.startswith(
                f"The server cannot listen on 127.0.0.1:{port} for the extension: Address already in use. "
                "Another program, perhaps another tabpilot server, uses that port: stop it"
            ), message
            assert "Chromium" not in message
            taken.close()  # the other program stops: the next call listens
            listed = section(await call(mcp, "browser_tabs", action="list"), "Result")
            assert f"the tabpilot extension has not connected to 127.0.0.1:{port}." in listed, listed
    # At start it was said once, in the log (it was also printed, so the user read it twice).
    told = capsys.readouterr().err + caplog.text
    assert told.count(f"cannot listen on 127.0.0.1:{port}") == 1, told


SHARE_USER_TAB = """(async () => {
  const tab = (await chrome.tabs.query({})).find((t) => (t.url || "").includes("/page/user"));
  await toggleSharing(tab);
  return tab.id;
})()"""


async def test_a_tab_the_user_stops_sharing_leaves_the_agent_saying_so_not_as_closed(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    async with paired_client(chromium) as (mcp, _):

        def user_tab(listed: CallToolResult) -> dict[str, Any] | None:
            tabs = result_of(listed)["tabs"]
            return next((t for t in tabs if "/page/user" in t["url"]), None)

        await call(mcp, "browser_tabs", action="list")  # paired and connected
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)  # the user shares it
        listed = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: user_tab(r) is not None
        )
        shared = user_tab(listed)
        assert shared is not None
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)  # and takes it back
        # The list that no longer has the tab tells why in its own ### Events. (Its result was read
        # before the response settled: a tab that left meanwhile was listed beside the event of its
        # leaving, and the next list, without it, had no event.)
        listed = await poll(lambda: call(mcp, "browser_tabs", action="list"), lambda r: user_tab(r) is None)
        said = section(listed, "Events")
        assert (
            f"tab {shared['id']} is no longer shared with the agent by the user; it stays open in their browser"
            in said
        )
        assert "closed (by external)" not in said
        gone = error(await mcp.call_tool("browser_snapshot", {"tabId": shared["id"]}))
        assert "The user stopped sharing it with the agent; it stays open in their browser." in gone, gone
        assert await user_tab_alive(chromium)


def users_own(listed: CallToolResult) -> list[int]:
    """The ids of the user's own tabs in a tab list."""
    return [t["id"] for t in result_of(listed)["tabs"] if t["usersOwn"]]


async def test_the_tab_cap_and_close_others_leave_a_tab_the_user_shares_open(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    async with paired_client(chromium, max_tabs=3, tab_limit_policy="close-oldest") as (mcp, _):
        await call(mcp, "browser_tabs", action="list")  # paired and connected
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)

        listed = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: len(users_own(r)) == 1
        )
        (shared,) = users_own(listed)
        assert f"- tab {shared}: Page user ({site.url('/page/user')}) [the user's" in section(listed, "Tabs")
        # The agent's tabs fill the cap around it: the oldest of the agent's goes, never the user's.
        opened = []
        for name in ("a", "b", "c", "d"):
            new = await call(mcp, "browser_tabs", action="new", url=site.url(f"/page/{name}"))
            opened.append(result_of(new)["tabId"])
        listed = await call(mcp, "browser_tabs", action="list")
        ids = [t["id"] for t in result_of(listed)["tabs"]]
        assert shared in ids and opened[-3:] == [i for i in ids if i != shared], text(listed)
        assert await user_tab_alive(chromium)

        kept = await call(mcp, "browser_tabs", action="close_others", keepTabId=opened[-1])
        assert result_of(kept)["remainingTabIds"] == [shared, opened[-1]], text(kept)
        assert f"Left the user's own tab {shared} open" in section(kept, "Result"), text(kept)
        assert await user_tab_alive(chromium)
        # Closing it by its id is the agent's explicit choice: that still closes it.
        closed = await call(mcp, "browser_tabs", action="close", tabId=shared)
        assert result_of(closed)["closedTabId"] == shared
        await wait_until(lambda: not any("/page/user" in p["url"] for p in chromium.pages()))


def gone_from(tab: int, listed: CallToolResult) -> bool:
    return tab not in [t["id"] for t in result_of(listed)["tabs"]]


CLOSE_SLOW_TAB = """(async () => {
  const tab = (await chrome.tabs.query({})).find((t) => (t.url || "").includes("/page/slow-work"));
  await chrome.tabs.remove(tab.id);
  return tab.id;
})()"""


async def test_a_tab_the_user_closes_during_a_call_fails_the_call_saying_it_closed(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Chrome's debugger refuses a command to a closed tab in its own words, and the tab's
    # document ends a moment before its page counts as closed: neither is passed on as the
    # reason (a protocol error, a navigation, a dialog).
    site.set_content("/page/slow-work", "<title>Slow work</title><h1>Slow work</h1>")
    # (tool, arguments, still running after 0.5 s); the quick ones may finish before the close.
    calls: list[tuple[str, dict[str, Any], bool]] = [
        ("browser_evaluate", {"function": "() => new Promise((done) => setTimeout(done, 5000))"}, True),
        ("browser_wait_for", {"text": "Never on this page"}, True),
        ("browser_screenshot", {}, False),
        ("browser_resize", {"width": 500, "height": 400}, False),
        ("browser_navigate", {"action": "reload"}, False),
    ]
    async with paired_client(chromium) as (mcp, _):
        for tool, arguments, slow in calls:
            for delay in (0.5, 0.0, 0.01, 0.03) if slow else (0.0, 0.01, 0.03):
                opened = await call(mcp, "browser_tabs", action="new", url=site.url("/page/slow-work"))
                tab = result_of(opened)["tabId"]

                async def user_closes(after: float) -> None:
                    await asyncio.sleep(after)
                    await asyncio.to_thread(chromium.in_extension, CLOSE_SLOW_TAB)

                result, _ = await asyncio.gather(
                    mcp.call_tool(tool, {"tabId": tab, **arguments}), user_closes(delay)
                )
                if slow or result.is_error:
                    said = error(result)
                    assert f"tab {tab} closed" in said.split("###")[0], (tool, delay, said)
                    for wrong in ("Protocol error", "navigated", "dialog", "Check the URL"):
                        assert wrong not in said, (tool, delay, said)
                await poll(lambda: call(mcp, "browser_tabs", action="list"), partial(gone_from, tab))


async def test_pilo_tells_a_tab_the_user_stops_sharing_as_staying_open_not_as_closed(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """The compatible sets print a tab's close cause; the ways a tab leaves the agent while it
    stays open read as such ("closed by unshared" before)."""
    async with paired_client(chromium, tools=("default", "pilo")) as (mcp, _):
        await call(mcp, "browser_tabs", action="new", url=site.url("/page/a"))  # the agent's own tab
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)  # the user shares a tab
        shared = await poll(
            lambda: call(mcp, "browser_tabs", action="list"),
            lambda r: any("/page/user" in t["url"] for t in result_of(r)["tabs"]),
        )
        (user,) = [t["id"] for t in result_of(shared)["tabs"] if "/page/user" in t["url"]]
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)  # and takes it back
        went = await poll(
            lambda: mcp.call_tool("goto", {"url": site.url("/page/b")}),
            lambda r: f"Tab {user}" in text(r),
        )
        said = text(went)
        assert (
            f"Tab {user}" in said
            and "(no longer shared with the agent by the user; it stays open in their browser)." in said
        ), said
        assert "closed by unshared" not in said
        assert await user_tab_alive(chromium)


@pytest.mark.parametrize(
    ("toolset", "tool", "arguments"),
    [
        ("pilo", "list_tabs", {}),
        ("browser-use", "browser_list_tabs", {}),
        ("browser-tab", "browser_tab", {"action": "list"}),
        ("foxmcp", "tabs_list", {}),
    ],
)
async def test_a_compatible_list_without_a_tab_the_user_stops_sharing_comes_with_the_event_of_its_leaving(
    chromium: ExtensionChromium, site: LocalSite, toolset: str, tool: str, arguments: dict[str, Any]
) -> None:
    """The compatible sets' lists were read when the tool ran, before the response settled: a tab
    leaving meanwhile was listed beside the event of its leaving (structured content), and the
    next list, without it, had no event. And a tab that left just as the browser was found
    settled (waiting passes through the event loop after that) was not listed, its event told
    only in the next response: in 5 of 8 runs under load, either way."""
    async with paired_client(chromium, tools=(toolset,)) as (mcp, _):

        def lists_user_tab(listed: CallToolResult) -> bool:
            assert not listed.is_error, text(listed)
            return "/page/user" in text(listed)

        await poll(lambda: mcp.call_tool(tool, arguments), lambda r: not r.is_error)  # connected
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)  # the user shares it
        await poll(lambda: mcp.call_tool(tool, arguments), lists_user_tab)
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)  # and takes it back
        listed = await poll(lambda: mcp.call_tool(tool, arguments), lambda r: not lists_user_tab(r))
        assert not lists_user_tab(listed)
        events = (listed.structured_content or {}).get("events", [])
        assert [e.get("by") for e in events if e["type"] == "tab_closed"] == ["unshared"], events
        assert await user_tab_alive(chromium)


@contextlib.asynccontextmanager
async def taken_by_another_server(
    chromium: ExtensionChromium, site: LocalSite
) -> AsyncIterator[tuple[Client, Client, int, int]]:
    """Two servers: the extension paired with the first, which opens a tab of /page/a, then with the
    second (the user pairs it with another server: the first has lost it until paired again).
    Yields the first server's client, the second's, the first's port and the tab's id."""
    first, second = free_port(), free_port()
    async with Client(extension_server(first)) as one, Client(extension_server(second)) as two:
        await pair(chromium, first)
        tab = result_of(await call(one, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        await pair(chromium, second)
        yield one, two, first, tab


async def test_a_server_whose_extension_is_paired_with_another_says_the_users_tabs_stay_open_and_how_to_get_them_back(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Before, the first server waited 15 s for an extension that was never coming back, then said
    # the user's tabs had crashed ("Its tabs are gone") and told the agent to launch a browser.
    async with taken_by_another_server(chromium, site) as (one, two, first, tab):
        assert any(
            t["url"] == site.url("/page/a")
            for t in result_of(await call(two, "browser_tabs", action="list"))["tabs"]
        )

        failed = await poll(
            lambda: one.call_tool("browser_snapshot", {"tabId": tab}), lambda r: "was lost" in text(r)
        )
        said = error(failed)
        assert (
            "Instance inst_1 was lost (the user paired the tabpilot extension with another tabpilot server)"
            in said
        )
        assert "the tab is out of reach, not closed by tabpilot." in said and "crashed" not in said, said
        events = section(failed, "Events")
        assert (
            f"tab {tab} is out of reach: the link to the user's browser was lost; it stays open there unless that browser closed"
            in events
        )
        assert "crash" not in events, events
        # Its tab's id, asked for again, leads to the same way on, not to opening a tab (which
        # fails while the user's browser is away).
        again = error(await one.call_tool("browser_snapshot", {"tabId": tab}))
        assert "Ask the user to pair the tabpilot extension with this server again" in again, again
        assert "open one with browser_tabs" not in again, again
        # What the agent is told to do next: have the extension paired again, not launch a browser.
        advice = error(await one.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/b")}))
        assert "The user's tabs are not closed by this, only out of this server's reach." in advice
        assert "Ask the user to pair the tabpilot extension with this server again" in advice
        assert "browser_instance(action='connect', extension=true) returns its connect page's URL" in advice
        assert "gone" not in advice and "Launch" not in advice, advice
        waiting = result_of(await call(one, "browser_instance", action="connect", extension=True))
        assert waiting["connectUrl"] == connect_url(first)
        assert any(p["url"] == site.url("/page/a") for p in await asyncio.to_thread(chromium.pages))

        await pair(chromium, first)  # paired again: the tab is back under its id
        back = await poll(
            lambda: call(one, "browser_tabs", action="list"),
            lambda r: any(t["id"] == tab for t in result_of(r)["tabs"]),
        )
        assert [t["url"] for t in result_of(back)["tabs"] if t["id"] == tab] == [site.url("/page/a")]


async def test_the_users_browser_connected_again_after_its_loss_is_told_as_back_with_its_tabs_under_their_ids(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Before, the instance that came back said nothing (the lost one was never replaced), and the
    # user's tabs came back as opened by someone external.
    async with taken_by_another_server(chromium, site) as (one, two, first, tab):
        await call(two, "browser_tabs", action="list")
        await poll(lambda: call(one, "browser_instance", action="list"), lambda r: "LOST" in text(r))
        await pair(chromium, first)
        events = ""

        async def listed() -> CallToolResult:
            nonlocal events
            result = await call(one, "browser_tabs", action="list")
            events += section(result, "Events")
            return result

        back = await poll(listed, lambda _r: "connected the user's browser again" in events)
        assert (
            "instance inst_2 connected the user's browser again in place of lost instance inst_1 (the user paired "
            "the tabpilot extension with another tabpilot server); the tabs it still has are back under their ids"
        ) in events
        assert (
            f"tab {tab} is back under its id (its browser is connected again): {site.url('/page/a')}"
            in events
        )
        assert "opened (external)" not in events, events
        assert [t["url"] for t in result_of(back)["tabs"] if t["id"] == tab] == [site.url("/page/a")]
        instances = result_of(await call(one, "browser_instance", action="list"))["instances"]
        assert [(i["id"], i["health"], i["replacedBy"], i["default"]) for i in instances] == [
            ("inst_1", "lost", "inst_2", False),
            ("inst_2", "open", None, True),
        ]
        # Naming the lost instance points to the one in its place.
        said = error(await one.call_tool("browser_tabs", {"action": "new", "instanceId": "inst_1"}))
        assert "Use instance inst_2 instead" in said, said


async def test_after_its_instance_is_closed_the_users_browser_is_connected_again_by_the_call_the_errors_name(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Before, errors told the agent to launch a bundled browser, and browser_instance connect
    # extension=true said the (connected) extension had not connected yet, connecting nothing.
    async with paired_client(chromium) as (mcp, port):
        await call(mcp, "browser_tabs", action="new", url=site.url("/page/a"))
        closed = section(await call(mcp, "browser_instance", action="close", instanceId="inst_1"), "Result")
        assert (
            "none (browser_instance(action='connect', extension=true) connects the user's browser again)"
            in closed
        )
        said = error(await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/b")}))
        assert (
            f"the tabpilot extension is connected at 127.0.0.1:{port}, but no instance uses the user's browser"
            in said
        )
        assert "Connect it again with browser_instance(action='connect', extension=true)." in said
        assert "launch" not in said.lower(), said
        again = result_of(await call(mcp, "browser_instance", action="connect", extension=True))
        assert again["kind"] == "extension" and again["default"], again
        listed = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
        assert site.url("/page/a") in [t["url"] for t in listed]
        assert await user_tab_alive(chromium)


async def test_closing_the_users_browser_instance_lets_go_of_its_tabs_saying_they_stay_open_and_how_to_connect_again(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Before, its tabs were told as closed by a tool call (they stay open in the user's browser),
    # and a call on one of them said to open a tab, which no instance was there to do.
    async with paired_client(chromium) as (mcp, _):
        tab = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        closed = await call(mcp, "browser_instance", action="close", instanceId="inst_1")
        events = section(closed, "Events")
        assert (
            f"tab {tab} is no longer the agent's, as its instance was closed; it stays open in its browser"
            in events
        )
        assert "closed (by" not in events, events
        gone = error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))
        assert "The agent let go of it as its instance was closed; it stays open in its browser." in gone
        assert "closed by a call to tabpilot" not in gone, gone
        assert gone.endswith("Connect it again with browser_instance(action='connect', extension=true)."), (
            gone
        )
        listed = section(await call(mcp, "browser_tabs", action="list"), "Result")
        assert listed.startswith("0 open tabs; no tab is active. No browser instance is open: ")
        assert listed.endswith("Connect it again with browser_instance(action='connect', extension=true)."), (
            listed
        )
        assert any(p["url"] == site.url("/page/a") for p in await asyncio.to_thread(chromium.pages))


async def test_the_users_browser_whose_instance_was_closed_stays_let_go_of_until_the_agent_connects_it_again(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """The extension stayed attached to every tab after the close (Chrome's debugging bar stayed);
    and once it came back (its service worker, or Chrome, restarted) the server connected the
    user's browser again unasked, its tabs the agent's again."""
    async with paired_client(chromium) as (mcp, _):
        await call(mcp, "browser_tabs", action="new", url=site.url("/page/a"))
        await call(mcp, "browser_instance", action="close", instanceId="inst_1")
        await poll(partial(asyncio.to_thread, chromium.attached_pages), lambda pages: not pages, 10)
        assert await asyncio.to_thread(chromium.attached_pages) == []
        await asyncio.to_thread(chromium.stop_service_worker)
        status = partial(asyncio.to_thread, chromium.in_extension, "state.status")
        await poll(partial(_or_empty, status), lambda said: said == "connected", 15)
        listed = result_of(await call(mcp, "browser_instance", action="list"))
        assert [i for i in listed["instances"] if i["health"] == "open"] == [], listed
        assert await asyncio.to_thread(chromium.attached_pages) == []
        # Asked for, the browser is the agent's again, with its tabs.
        await call(mcp, "browser_instance", action="connect", extension=True)
        tabs = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
        assert site.url("/page/a") in [t["url"] for t in tabs]
        assert site.url("/page/a") in await asyncio.to_thread(chromium.attached_pages)


async def _or_empty(read: Any) -> Any:
    """What `read()` gives, or "" while it fails (the service worker starts)."""
    try:
        return await read()
    except RuntimeError:
        return ""


async def test_a_chrome_the_user_restarts_at_once_is_the_same_browser_to_the_agent(
    browser_path: str, site: LocalSite, tmp_path: Path
) -> None:
    # Restarted within the grace time, Chrome's profile context had a new id: the relay announced
    # the new tabs in it, and every tab the agent opened was "closed at once" (left open in Chrome).
    port, profile = free_port(), str(tmp_path / "profile")
    async with Client(extension_server(port)) as mcp:
        with extension_chromium(browser_path, site.url("/page/user"), profile=profile) as first:
            await pair(first, port)
            await call(mcp, "browser_tabs", action="new", url=site.url("/page/a"))
        with extension_chromium(browser_path, site.url("/page/user"), profile=profile) as second:
            # The extension connects again by itself: its pairing is in the profile.
            opened = await poll(
                lambda: mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/b")}),
                lambda result: not result.is_error,
                timeout=15,
            )
            tab = result_of(opened)["tabId"]
            snap = await call(mcp, "browser_snapshot", full=True, tabId=tab)
            assert 'heading "Page b"' in section(snap, "Snapshot")
            assert any("/page/b" in p["url"] for p in await asyncio.to_thread(second.pages))


async def test_tabpilot_serve_extension_over_stdio_drives_the_browser_and_fails_fast_once_it_is_killed(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    port = free_port()
    async with Client(served_extension(port)) as mcp:
        await pair(chromium, port)
        start = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"][0]["id"]
        await call(mcp, "browser_navigate", action="goto", url=site.url("/page/b"), tabId=start)
        assert 'heading "Page b"' in section(
            await call(mcp, "browser_snapshot", full=True, tabId=start), "Snapshot"
        )
        # A web page (any Origin but the extension's) and a caller without the token are refused.
        for origin, query in ((site.origin, f"?token={TOKEN}"), (f"chrome-extension://{extension_id()}", "")):
            with pytest.raises(InvalidStatus) as refused:
                async with ws_connect(f"ws://127.0.0.1:{port}/extension{query}", origin=origin):  # type: ignore[arg-type]
                    pass
            assert refused.value.response.status_code == 403
        await asyncio.to_thread(chromium.kill)
        started = time.monotonic()
        failed = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": start})
        assert failed.is_error and time.monotonic() - started < 3, text(failed)
        assert "extension" in error(failed)
        # Until its grace is over, its tabs are listed as they were: the list says they are out of
        # reach (it looked as if nothing had happened).
        listed = await call(mcp, "browser_tabs", action="list")
        assert "Instance inst_1 cannot be reached now: the tabpilot extension disconnected" in text(listed)
        assert "Calls on its tabs fail until it is back." in text(listed)
        (ext,) = result_of(await call(mcp, "browser_instance", action="list"))["instances"]
        assert ext["health"] == "open" and "it has 15 s to come back" in ext["unreachable"], ext


async def test_a_killed_driver_loses_the_extension_instance_and_the_next_call_connects_it_again(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # The user's browser outlives Playwright's driver (killed, out of memory) and tells nothing:
    # before, every call failed with "tab closed" while the tab list still showed the tabs.
    port = free_port()
    # Its own temp dir: once the server stopped, nothing the killed driver used is left there.
    with tempfile.TemporaryDirectory(prefix="tabpilot-test-") as tmp:
        await _driver_killed_under(served_extension(port, TMPDIR=tmp), chromium, site, port)
        await wait_until(lambda: not list(Path(tmp).rglob("*")))


async def _driver_killed_under(
    params: StdioServerParameters, chromium: ExtensionChromium, site: LocalSite, port: int
) -> None:
    async with Client(params) as mcp:
        await pair(chromium, port)
        tab = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        kill_served_driver(str(port))

        lost = error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))
        assert "was lost (Playwright's driver stopped: it was killed or ran out of memory)" in lost, lost
        assert (
            "Its browser keeps its tabs" in lost
            and "A call without tabId and instanceId connects it again" in lost
        )
        again = await call(mcp, "browser_tabs", action="new", url=site.url("/page/b"))
        assert "connected the user's browser again in place of lost instance inst_1" in section(
            again, "Events"
        )
        assert f"tab {tab} is back under its id" in section(again, "Events")
        assert 'heading "Page b"' in section(again, "Snapshot")
        listed = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
        assert sorted(t["url"] for t in listed) == sorted(
            ["about:blank", site.url("/page/a"), site.url("/page/b")]
        )
        # The user's tab that the agent had opened is back under its id.
        assert [t["id"] for t in listed if t["url"] == site.url("/page/a")] == [tab]
        assert await user_tab_alive(chromium)


async def test_serve_auto_connect_attaches_to_the_running_chrome_or_says_how_to_turn_debugging_on(
    browser_path: str, tmp_path: Path
) -> None:
    with remote_chromium(browser_path) as remote:
        config = ServerConfig(
            auto_connect=True, browser=BrowserOptions(user_data_dir=remote.profile), structured_content=True
        )
        async with Client(create_server(config)) as mcp:
            (instance,) = result_of(await call(mcp, "browser_instance", action="list"))["instances"]
            assert instance["kind"] == "cdp" and f"127.0.0.1:{remote.port}" in instance["endpoint"]
    config = ServerConfig(auto_connect=True, browser=BrowserOptions(user_data_dir=str(tmp_path)))
    async with Client(create_server(config)) as mcp:
        message = error(await mcp.call_tool("browser_tabs", {"action": "list"}))
        assert "no DevToolsActivePort file" in message
        assert "chrome://inspect/#remote-debugging" in message and "--auto-connect" in message


def test_serve_flags_for_the_users_browser(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABPILOT_EXTENSION_TOKEN", "from-the-environment")
    config = cli.config_from_args(
        cli.build_parser().parse_args(
            ["serve", "--extension", "--extension-port", "9999", "--extension-scope", "all"]
        )
    )
    assert (config.extension, config.extension_port, config.extension_scope) == (True, 9999, "all")
    assert config.extension_token == "from-the-environment"
    for refused in (
        ["--extension", "--auto-connect"],
        ["--extension", "--cdp-endpoint", "http://127.0.0.1:9222"],
        ["--extension", "--http", "127.0.0.1:8931"],
    ):
        with pytest.raises(ValueError):
            cli.config_from_args(cli.build_parser().parse_args(["serve", *refused]))
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["serve", "--extension-id", "not-an-id"])


def test_tabpilot_extension_prints_the_folder_to_load_and_the_id(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["extension", "path"]) == 0
    assert Path(capsys.readouterr().out.strip(), "manifest.json").is_file()
    assert cli.main(["extension", "id"]) == 0
    assert capsys.readouterr().out.strip() == extension_id()


async def test_a_screenshot_of_a_tab_the_users_browser_hides_says_so_at_once(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """The user's browser draws no picture of a tab behind another: the capture waited for one,
    then said "did not finish within 10 s. The page may be busy" (a retry waited as long)."""
    async with paired_client(chromium) as (mcp, _):
        front = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        ok(await mcp.call_tool("browser_tabs", {"action": "activate", "tabId": front}))
        shown = await mcp.call_tool("browser_screenshot", {"tabId": front})
        assert not shown.is_error, text(shown)
        other = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/b")))["tabId"]
        ok(await mcp.call_tool("browser_tabs", {"action": "activate", "tabId": other}))
        ok(await mcp.call_tool("browser_screenshot", {"tabId": other}))  # in front: drawn
        # The first tab is behind the other now.
        with anyio.fail_after(6):
            hidden = error(await mcp.call_tool("browser_screenshot", {"tabId": front}))
        assert hidden.startswith(f"Screenshot of tab {front} failed: tab {front} is hidden"), hidden
        assert hidden.endswith(
            f"Bring it to the front with browser_tabs(action='activate', tabId={front}) (if its window is "
            "minimized, ask the user to show it), then take the screenshot again."
        ), hidden
        ok(await mcp.call_tool("browser_tabs", {"action": "activate", "tabId": front}))
        again = await mcp.call_tool("browser_screenshot", {"tabId": front})
        assert not again.is_error, text(again)


def user_runs_in(chromium: ExtensionChromium, url_part: str, expression: str) -> None:
    """The user does something in their own tab (a click's script, with a user gesture)."""
    (page,) = [p for p in chromium.pages() if url_part in p["url"]]
    with ws_sync_connect(page["webSocketDebuggerUrl"]) as ws:
        params = {"expression": expression, "userGesture": True}
        ws.send(json.dumps({"id": 1, "method": "Runtime.evaluate", "params": params}))
        while json.loads(ws.recv(timeout=5)).get("id") != 1:
            pass


async def test_a_tab_the_user_opens_from_their_shared_tab_is_theirs(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """It was the agent's: close_others (and the tab cap) closed a tab the user had just opened."""
    async with paired_client(chromium) as (mcp, _):
        await call(mcp, "browser_tabs", action="list")  # paired and connected
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)

        listed = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: len(users_own(r)) == 1
        )
        (shared,) = users_own(listed)
        await asyncio.to_thread(user_runs_in, chromium, "/page/user", "window.open('/page/b')")
        listed = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: len(users_own(r)) == 2
        )
        (opened,) = [
            t for t in result_of(listed)["tabs"] if t["id"] in users_own(listed) and t["id"] != shared
        ]
        assert opened["openerId"] == shared and opened["url"] == site.url("/page/b"), opened
        agent = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        kept = await call(mcp, "browser_tabs", action="close_others", keepTabId=agent)
        assert set(result_of(kept)["remainingTabIds"]) >= {shared, opened["id"], agent}, text(kept)
        assert any(p["url"] == site.url("/page/b") for p in chromium.pages())


async def test_a_call_under_way_when_the_user_stops_sharing_its_tab_says_so(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """It said the tab closed (or its browser went away), while the same answer's events said the
    tab stays open in the user's browser."""
    async with paired_client(chromium) as (mcp, _):

        def user_tab(listed: CallToolResult) -> int | None:
            return next((t["id"] for t in result_of(listed)["tabs"] if t["usersOwn"]), None)

        await call(mcp, "browser_tabs", action="list")  # paired and connected
        await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)
        listed = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: user_tab(r) is not None
        )
        shared = user_tab(listed)

        async def take_back() -> None:
            await asyncio.sleep(0.8)
            await asyncio.to_thread(chromium.in_extension, SHARE_USER_TAB)

        waited, _ = await asyncio.gather(
            mcp.call_tool("browser_wait_for", {"text": "never there", "tabId": shared}), take_back()
        )
        said = error(waited)
        assert said.startswith(
            f"Waiting for text 'never there' to appear on tab {shared} failed: tab {shared} left the agent's "
            "reach during the action. The user stopped sharing it with the agent; it stays open in their browser."
        ), said
        assert await user_tab_alive(chromium)


async def agent_tab_the_user_sends(
    mcp: Client, chromium: ExtensionChromium, site: LocalSite, url: str
) -> int:
    """An agent tab (on /page/a) that the user then sends to `url` in their browser; its id."""
    tab = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
    listed = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
    (chrome_id,) = [t["chromeTabId"] for t in listed if t["id"] == tab]
    await asyncio.to_thread(
        chromium.in_extension, f"chrome.tabs.update({chrome_id}, {{url: {url!r}}}).then(t => t.id)"
    )
    return int(tab)


async def test_an_agent_tab_the_user_sends_to_a_chrome_page_is_out_of_reach_not_closed(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """The extension's debugger may not follow a tab to chrome://: it was told as closed (by
    external), though it stays open in the user's browser."""
    async with paired_client(chromium) as (mcp, _):
        tab = await agent_tab_the_user_sends(mcp, chromium, site, "chrome://version")
        gone = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: gone_from(tab, r), timeout=10
        )
        said = section(gone, "Events")
        assert f"tab {tab} is out of reach: it went to a page the tabpilot extension may not reach" in said, (
            said
        )
        assert "closed (by external)" not in said
        refused = error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))
        assert "it stays open in the user's browser" in refused, refused
        assert any(p["url"].startswith("chrome://version") for p in chromium.pages())


@pytest.mark.parametrize("page", ["the extension's connect page", "a local file"])
async def test_a_shared_tab_whose_history_leads_to_a_page_the_agent_may_not_have_leaves_its_reach(
    chromium: ExtensionChromium, site: LocalSite, tmp_path: Path, page: str
) -> None:
    """The user went there in that tab before sharing it; the agent went back: the connect page
    runs with the extension's powers (every tab of the user, the pairing), and a local file is
    refused by the URL policy when the agent asks for it. The agent had both, and read them."""
    local = tmp_path / "local.html"
    local.write_text("<title>Local</title><p>a local secret</p>")
    url = f"chrome-extension://{extension_id()}/connect.html" if page.startswith("the") else local.as_uri()
    async with paired_client(chromium) as (mcp, _):
        await call(mcp, "browser_tabs", action="list")  # paired and connected
        # The user, in their own tab: that page, then a site of theirs; then they share the tab.
        went_on = f"""(async () => {{
          const tab = (await chrome.tabs.query({{}})).find((t) => (t.url || "").includes("/page/user"));
          const at = async (url) => {{
            await chrome.tabs.update(tab.id, {{url}});
            for (let i = 0; i < 100 && (await chrome.tabs.get(tab.id)).url !== url; i++) {{
              await new Promise((r) => setTimeout(r, 50));
            }}
          }};
          await at({url!r});
          await at({site.url("/page/b")!r});
          await toggleSharing(await chrome.tabs.get(tab.id));
          return tab.id;
        }})()"""
        await asyncio.to_thread(chromium.in_extension, went_on)
        listed = await poll(
            lambda: call(mcp, "browser_tabs", action="list"),
            lambda r: any(t["url"] == site.url("/page/b") for t in result_of(r)["tabs"]),
        )
        (shared,) = [t["id"] for t in result_of(listed)["tabs"] if t["url"] == site.url("/page/b")]
        back = await mcp.call_tool("browser_navigate", {"action": "back", "tabId": shared})
        assert "secret" not in text(back) and "connect.html" not in section(back, "Page"), text(back)
        if back.is_error:  # it left as it went (not "closed (or its browser went away)")
            assert f"tab {shared} left the agent's reach during the action." in text(back), text(back)
        gone = await poll(
            lambda: call(mcp, "browser_tabs", action="list"), lambda r: gone_from(shared, r), timeout=10
        )
        assert gone_from(shared, gone), text(gone)
        refused = error(
            await mcp.call_tool("browser_evaluate", {"function": "() => document.title", "tabId": shared})
        )
        assert "it stays open in the user's browser" in refused, refused


async def test_closing_a_tab_whose_page_asks_before_it_is_left_closes_it_without_asking(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Chrome's tabs.remove, which the extension closes a tab with, runs the page's beforeunload
    # handler (a close over CDP does not): the close waited for the dialog, for ever, 4 runs in 7.
    async with paired_client(chromium) as (mcp, _):
        tab = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/beforeunload")))["tabId"]
        snap = section(await call(mcp, "browser_snapshot", tabId=tab, full=True), "Snapshot")
        await call(mcp, "browser_type", ref=ref_of(snap, 'textbox "Unsaved text"'), text="draft")
        with anyio.fail_after(20):
            closed = await call(mcp, "browser_tabs", action="close", tabId=tab)
        assert section(closed, "Result").startswith(f"Closed tab {tab}"), text(closed)
        assert "dialog" not in text(closed), text(closed)
        await wait_until(lambda: not any("/beforeunload" in p["url"] for p in chromium.pages()), timeout=5)


async def test_a_tab_that_leaves_reach_while_the_extension_restarts_is_told_as_out_of_reach_not_closed(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Chrome stopped the extension's worker; meanwhile the tab went to a page the extension may not
    # reach. The worker's word of it was dropped before its hello, and the server, missing the tab
    # there, told it closed by someone else: it is open in the user's browser.
    async with paired_client(chromium) as (mcp, _):
        tab = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        listed = result_of(await call(mcp, "browser_tabs", action="list"))["tabs"]
        (target,) = [t["targetId"] for t in listed if t["id"] == tab]
        await asyncio.to_thread(chromium.stop_service_worker_and_navigate, target, "chrome://version")
        gone = await poll(
            lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
            lambda r: not r.is_error and gone_from(tab, r),
            timeout=20,
        )
        said = section(gone, "Events")
        assert f"tab {tab} is out of reach" in said and "closed (by external)" not in said, said
        assert any(p["url"].startswith("chrome://version") for p in chromium.pages())


async def test_a_navigation_the_url_policy_refuses_in_the_users_browser_is_told_once(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    # Playwright's route and the tab's own session both refuse it there: it was told twice.
    other = f"http://localhost:{site.port}"
    async with paired_client(chromium, blocked_origins=(other,)) as (mcp, _):
        tab = await agent_tab_the_user_sends(mcp, chromium, site, f"{other}/page/b")
        told: list[dict[str, Any]] = []
        said: list[str] = []

        async def listed() -> CallToolResult:
            answer = await call(mcp, "browser_tabs", action="list")
            told.extend(e for e in data(answer)["events"] if e["type"] == "navigation_blocked")
            said.append(section(answer, "Events"))
            return answer

        await poll(listed, lambda r: "blocked by the URL policy" in tab_line(r, tab))
        await asyncio.sleep(1)
        await listed()
        assert [(e["tabId"], e["url"]) for e in told] == [(tab, f"{other}/page/b")], told
        assert "".join(said).count("was kept from loading") == 1, said


def user_closes(url_part: str) -> str:
    """The extension's worker closes the tab at the URL as the user does in Chrome (its X, Ctrl-W)."""
    return f"""(async () => {{
  const tab = (await chrome.tabs.query({{}})).find((t) => (t.url || "").includes({json.dumps(url_part)}));
  await chrome.tabs.remove(tab.id);
  return tab.id;
}})()"""


async def test_a_tab_of_the_agents_the_user_closes_in_their_browser_is_told_as_closed_by_them(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """The agent's own tab the user closed was told as closed (by external); a tab a page opened
    that closes itself is told so, as before. (A tab a page opened that the user closes is told
    as its page's: Chrome does not say which of the two closed it, and a page's listener for its
    own close held up Chrome's close of a tab reloading.)"""
    site.set_content(
        "/page/openers", "<title>Openers</title><a href='/close-self?n=1' target='_blank'>One</a>"
    )
    async with paired_client(chromium) as (mcp, _):
        agent = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/openers")))[
            "tabId"
        ]
        snapshot = section(await call(mcp, "browser_snapshot", full=True, tabId=agent), "Snapshot")
        clicked = await call(mcp, "browser_click", ref=ref_of(snapshot, "One"))
        (itself,) = result_of(clicked)["openedTabIds"]
        page = section(await call(mcp, "browser_snapshot", full=True, tabId=itself), "Snapshot")
        closed = await call(mcp, "browser_click", ref=ref_of(page, "Close me"))
        told = text(closed)
        await asyncio.to_thread(chromium.in_extension, user_closes("/page/openers"))
        listed = await poll(lambda: call(mcp, "browser_tabs", action="list"), partial(gone_from, agent))
        told += text(listed)
        assert f"Tab {itself} closed itself afterwards." in told, told
        assert f"tab {agent} closed (by the user, in their browser)" in told, told
        assert "by external" not in told, told


CHROME_SHOWS = """(async () => (await chrome.tabs.query({active: true})).map((t) => t.url))()"""
"""The URLs of the tabs Chrome shows, one per window."""


async def test_a_tab_a_click_opens_in_the_users_browser_is_not_said_to_be_in_the_background(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """It was said "in the background" while Chrome showed it in front: the words now say what
    is the case, that tabpilot's active tab did not change."""
    async with paired_client(chromium) as (mcp, _):
        home = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/")))["tabId"]
        snapshot = section(await call(mcp, "browser_snapshot", full=True, tabId=home), "Snapshot")
        clicked = await call(mcp, "browser_click", ref=ref_of(snapshot, "Open A in new tab"))
        (opened,) = result_of(clicked)["openedTabIds"]
        said = section(clicked, "Result")
        assert f"It opened tab {opened}, which did not become the active tab (use tabId={opened})." in said
        assert "background" not in said, said
        assert site.url("/page/a") in await asyncio.to_thread(chromium.in_extension, CHROME_SHOWS)
        assert f"- tab {home}: " in tab_line(clicked, home) and "[active]" in tab_line(clicked, home)


def user_shows(url_part: str) -> str:
    """The user brings the tab at the URL to the front of its window in Chrome."""
    return f"""(async () => {{
  const tab = (await chrome.tabs.query({{}})).find((t) => (t.url || "").includes({json.dumps(url_part)}));
  await chrome.tabs.update(tab.id, {{active: true}});
  return tab.id;
}})()"""


async def test_a_window_the_users_own_tab_opens_behind_an_agent_tab_stays_the_users(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """Chrome names the tab in front as the opener of a window a background tab opens: a window the
    user's own tab (never shared) opened while the agent's tab was in front became the agent's
    (listed, read, closed by close_others). And an agent's middle click on its tab behind the
    user's was never told: Chrome named the user's tab as its opener."""
    site.set_content("/page/links", "<title>Links</title><a href='/page/a'>Plain A</a>")
    async with paired_client(chromium) as (mcp, _):
        agent = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/links")))["tabId"]
        await call(mcp, "browser_tabs", action="activate", tabId=agent)  # in front in Chrome
        await asyncio.to_thread(
            user_runs_in, chromium, "/page/user", f"window.open({json.dumps('/page/private')})"
        )
        await wait_until(lambda: any("/page/private" in p["url"] for p in chromium.pages()), 5)
        await asyncio.sleep(1)  # what the extension would announce has come by now
        listed = await call(mcp, "browser_tabs", action="list")
        assert "/page/private" not in text(listed), text(listed)
        await call(mcp, "browser_tabs", action="close_others", keepTabId=agent)
        assert any("/page/private" in p["url"] for p in chromium.pages())

        await asyncio.to_thread(chromium.in_extension, user_shows("/page/user"))
        snapshot = section(await call(mcp, "browser_snapshot", full=True, tabId=agent), "Snapshot")
        clicked = await call(mcp, "browser_click", ref=ref_of(snapshot, "Plain A"), button="middle")
        (opened,) = result_of(clicked)["openedTabIds"]
        assert f"tab {opened} opened (link) by tab {agent}" in section(clicked, "Events"), text(clicked)


async def user_closes_one_and_one_closes_itself(
    mcp: Client, chromium: ExtensionChromium, url: str, users: str, closes: str
) -> str:
    """The agent opens `url` in a tab and clicks its button `users` and its button "Pay", each
    opening a tab of /close-self; the user closes the first (`closes`, a script of the extension's),
    the second closes itself when its "Close me" is clicked. Checks the first is told as closed by
    the user and the second by itself; returns the snapshot of the page at `url`."""
    agent = result_of(await call(mcp, "browser_tabs", action="new", url=url))["tabId"]
    snapshot = section(await call(mcp, "browser_snapshot", full=True, tabId=agent), "Snapshot")
    (closed_by_user,) = result_of(await call(mcp, "browser_click", ref=ref_of(snapshot, users)))[
        "openedTabIds"
    ]
    (closes_itself,) = result_of(await call(mcp, "browser_click", ref=ref_of(snapshot, "Pay")))[
        "openedTabIds"
    ]
    await asyncio.to_thread(chromium.in_extension, closes)
    listed = await poll(lambda: call(mcp, "browser_tabs", action="list"), partial(gone_from, closed_by_user))
    told = text(listed)
    page = section(await call(mcp, "browser_snapshot", full=True, tabId=closes_itself), "Snapshot")
    told += text(await call(mcp, "browser_click", ref=ref_of(page, "Close me")))
    assert f"tab {closed_by_user} closed (by the user, in their browser)" in told, told
    assert f"Tab {closes_itself} closed itself afterwards." in told, told
    return snapshot


def user_closes_window(url_part: str) -> str:
    """The extension's worker closes the window of the tab at the URL as the user does in Chrome
    (the window's X: a popup's window, or a window of tabs)."""
    return f"""(async () => {{
  const tab = (await chrome.tabs.query({{}})).find((t) => (t.url || "").includes({json.dumps(url_part)}));
  await chrome.windows.remove(tab.windowId);
  return tab.id;
}})()"""


async def test_a_popup_window_the_user_closes_is_told_as_closed_by_them_and_one_that_closes_itself_as_its_pages(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """A popup whose window the user closed was told as closed by its page: Chrome does not say who
    closed a tab, but it does say when the tab went as its window closed, which a page never does."""
    popup = "popup,width=500,height=400"
    site.set_content(
        "/page/popups",
        "<title>Popups</title>"
        f"<button onclick=\"window.open('/close-self?n=1', 'one', '{popup}')\">Sign in</button>"
        f"<button onclick=\"window.open('/close-self?n=2', 'two', '{popup}')\">Pay</button>",
    )
    async with paired_client(chromium) as (mcp, _):
        await user_closes_one_and_one_closes_itself(
            mcp, chromium, site.url("/page/popups"), "Sign in", user_closes_window("/close-self?n=1")
        )


def user_closes_tab(url_part: str) -> str:
    """The extension's worker closes the tab at the URL as Chrome's tab strip does (its X, Ctrl-W):
    the browser closes it, not its page."""
    return f"""(async () => {{
  const tab = (await chrome.tabs.query({{}})).find((t) => (t.url || "").includes({json.dumps(url_part)}));
  await chrome.tabs.remove(tab.id);
  return tab.id;
}})()"""


async def test_a_tab_a_page_opened_that_the_user_closes_alone_is_told_as_closed_by_them_not_by_its_page(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """A link's tab (or a popup) the user closed by its X or Ctrl-W, its window staying open, was
    told as closed by its page: Chrome does not say who closed a tab, but the browser hides the page
    before its tab goes, and a page that closes itself is gone before it could say so. A page that
    closes itself as it loads, after its tab went from another page, is still its own close."""
    site.set_content("/page/hop", "<title>Hop</title><script>location.replace('/page/shut')</script>")
    site.set_content(
        "/page/shut", "<title>Shut</title><script>addEventListener('load', () => window.close())</script>"
    )
    site.set_content(
        "/page/links",
        "<title>Links</title>"
        "<button onclick=\"window.open('/close-self?n=1', 'one')\">Docs</button>"
        "<button onclick=\"window.open('/close-self?n=2', 'two')\">Pay</button>"
        "<button onclick=\"window.open('/page/hop', 'three')\">Sign in</button>",
    )
    async with paired_client(chromium) as (mcp, _):
        snapshot = await user_closes_one_and_one_closes_itself(
            mcp, chromium, site.url("/page/links"), "Docs", user_closes_tab("/close-self?n=1")
        )
        clicked = await call(mcp, "browser_click", ref=ref_of(snapshot, "Sign in"))
        (shut,) = result_of(clicked)["openedTabIds"]
        told = text(clicked) + text(
            await poll(lambda: call(mcp, "browser_tabs", action="list"), partial(gone_from, shut))
        )
        assert f"tab {shut} closed (by page)" in told or f"Tab {shut} closed itself" in told, told


async def test_the_agent_closes_its_last_tab_in_the_users_browser_and_opens_another_after(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """It was refused ("Cannot close last tab"), as in a browser tabpilot launched, whose last tab
    closing would end it: the agent's last tab in the user's Chrome ends nothing, and stayed open
    there for good. Pilo's close_tab, which reads no active tab as its browser gone, says so too."""
    async with paired_client(chromium, tools=("default", "pilo")) as (mcp, _):
        listed = result_of(await call(mcp, "browser_tabs", action="list"))
        (only,) = [t["id"] for t in listed["tabs"]]
        closing = await call(mcp, "browser_tabs", action="close", tabId=only)
        closed = result_of(closing)
        assert closed["success"] and closed["closedTabId"] == only and closed["activeTabId"] is None
        said = section(closing, "Result")
        assert "has no tab open now (its browser stays open)" in said and "went away" not in said, said
        assert result_of(await call(mcp, "browser_tabs", action="list"))["tabs"] == []
        assert await user_tab_alive(chromium)  # the user's Chrome goes on
        nothing = await mcp.call_tool("browser_snapshot", {})
        assert nothing.is_error and "browser_tabs(action='new'" in error(nothing), error(nothing)
        opened = result_of(await call(mcp, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        assert opened > only
        assert "Page a" in section(await call(mcp, "browser_snapshot", full=True, tabId=opened), "Snapshot")
        said = text(await call(mcp, "close_tab", tabId=str(opened)))
        assert f"Closed tab {opened}. No tab is open now: goto(url=...) opens one." in said, said
