"""browser_instance through a real MCP client: local and remote browsers at once, and losing one.
Everything runs on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.types import CallToolResult
from playwright.async_api import async_playwright

from support import (
    PlaywrightServer,
    RemoteChromium,
    free_port,
    ok,
    poll,
    ref_of,
    remote_chromium,
    result_of,
    section,
    served,
    tab_line,
    text,
)
from tabpilot import BrowserOptions, Instance
from tabpilot.demo.site import LocalSite
from tabpilot.server import ServerConfig, TabpilotServer, create_server


def own_browser_server(browser_path: str, **options: Any) -> TabpilotServer:
    """A server that launches or connects its own browser, as `tabpilot serve` does."""
    options.setdefault("structured_content", True)
    return create_server(ServerConfig(browser=BrowserOptions(browser_path=browser_path), **options))


async def call(client: Client, tool: str, **arguments: Any) -> CallToolResult:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text(result)
    return result


async def test_one_server_drives_a_cdp_browser_a_playwright_server_and_a_launched_browser(
    shared_browser: Instance,
    remote: RemoteChromium,
    pw_server: PlaywrightServer,
    browser_path: str,
    site: LocalSite,
) -> None:
    server = own_browser_server(browser_path, cdp_endpoint=remote.http)
    async with Client(server) as client:
        listed = result_of(await call(client, "browser_instance", action="list"))
        (first,) = listed["instances"]
        assert (first["kind"], first["endpoint"], first["health"], first["default"]) == (
            "cdp",
            remote.http,
            "open",
            True,
        )

        # The browser it started with, under another of its URLs, is refused: its tabs have ids already.
        for alias in (f"http://localhost:{remote.port}/", remote.ws):
            again = await client.call_tool("browser_instance", {"action": "connect", "cdpEndpoint": alias})
            assert again.is_error and section(again, "Error") == (
                f"The browser at {alias} is the one instance {first['id']} is connected to (as {remote.http}): "
                "one browser is driven by one instance, so that each of its tabs has one id. "
                f"Use instance {first['id']}: its tabs are in browser_tabs(action='list'); to connect the browser "
                f"again, close it first (browser_instance(action='close', instanceId={first['id']!r}))."
            ), text(again)
        assert [
            i["id"] for i in result_of(await call(client, "browser_instance", action="list"))["instances"]
        ] == [first["id"]]

        over_pw = result_of(await call(client, "browser_instance", action="connect", wsEndpoint=pw_server.ws))
        assert over_pw["kind"] == "playwright-server" and not over_pw["default"]
        launching = await call(client, "browser_instance", action="launch")
        launched = result_of(launching)
        assert launched["kind"] == "launched"
        # The result names the new browser's tab and ### Tabs shows it: no event says it again.
        (launched_tab,) = launched["tabIds"]
        assert section(launching, "Result").startswith(
            f"Launched instance {launched['instanceId']} (launched) with tab {launched_tab}. "
        )
        assert f"tab {launched_tab} opened" not in text(launching), text(launching)
        assert tab_line(launching, launched_tab).startswith(f"- tab {launched_tab}: "), text(launching)
        # The number alone names an instance too ("3" for inst_3), as a model writes after tab ids.
        number = launched["instanceId"].removeprefix("inst_")
        by_number = result_of(await call(client, "browser_tabs", action="list", instanceId=number))
        assert by_number["tabs"] and {t["instanceId"] for t in by_number["tabs"]} == {launched["instanceId"]}
        # So does the number as a JSON integer; a boolean is refused, never taken for instance 1.
        by_integer = result_of(await call(client, "browser_tabs", action="list", instanceId=int(number)))
        assert by_integer["tabs"] == by_number["tabs"]
        boolean = await client.call_tool("browser_tabs", {"action": "list", "instanceId": True})
        assert boolean.is_error and "'instanceId'" in text(boolean), text(boolean)

        # One tab in each, by instance; after that, tab ids alone are enough.
        tab_of: dict[str, int] = {}
        for instance_id in (first["id"], over_pw["instanceId"], launched["instanceId"]):
            opened = await call(client, "browser_tabs", action="new", instanceId=instance_id, background=True)
            tab_of[instance_id] = result_of(opened)["tabId"]
        listing = await call(client, "browser_tabs", action="list")
        everything = result_of(listing)
        # The tab list says which browser each tab is in. One tab is the active one (calls
        # without tabId use it); each other browser's own is marked as only its (two were [active]).
        tabs_text = section(listing, "Tabs")
        assert f"instance {over_pw['instanceId']}:" in tabs_text.splitlines()
        assert tabs_text.count("[active]") + tabs_text.count("[active,") == 1, tabs_text
        assert f"- tab {everything['activeTabId']}: " in next(
            line for line in tabs_text.splitlines() if "[active]" in line or "[active," in line
        )
        assert tabs_text.count("active in its instance") == 2, tabs_text
        ids = [t["id"] for t in everything["tabs"]]
        assert len(ids) == len(set(ids)) and set(tab_of.values()) <= set(ids)
        for instance_id, tab_id in tab_of.items():
            path = f"/page/{'abc'[list(tab_of).index(instance_id)]}"
            went = await call(client, "browser_navigate", url=site.url(path), tabId=tab_id)
            assert result_of(went)["url"] == site.url(path)
            filtered = await call(client, "browser_tabs", action="list", instanceId=instance_id)
            only = result_of(filtered)
            count = len(only["tabs"])
            assert section(filtered, "Result").startswith(f"{count} open tabs in instance {instance_id}; ")
            # That instance's tabs are listed in the result, not every instance's in ### Tabs.
            assert f"- tab {tab_id}: " in section(filtered, "Result"), text(filtered)
            assert "### Tabs" not in text(filtered), text(filtered)
            assert tab_id in [t["id"] for t in only["tabs"]]
            assert {t["instanceId"] for t in only["tabs"]} == {instance_id}
            assert next(t for t in only["tabs"] if t["id"] == tab_id)["url"] == site.url(path)

        # A tab another CDP client opens on the remote browser appears, with an event.
        target_id = remote.open_tab(site.url("/page/d"))
        listing = await poll(
            lambda: call(client, "browser_tabs", action="list", instanceId=first["id"]),
            lambda r: target_id in str(result_of(r)["tabs"]),
        )
        assert target_id in str(result_of(listing)["tabs"])
        external = next(t for t in result_of(listing)["tabs"] if t["targetId"] == target_id)
        # The browser's own tabs (opened by its user or another client, or there before the
        # connect) are the user's: close_others leaves them open, and closes the agent's.
        own = {t["id"]: t["usersOwn"] for t in result_of(listing)["tabs"]}
        assert own[external["id"]] and not own[tab_of[first["id"]]], own
        extra = result_of(
            await call(client, "browser_tabs", action="new", instanceId=first["id"], background=True)
        )["tabId"]
        kept = await call(client, "browser_tabs", action="close_others", keepTabId=tab_of[first["id"]])
        users = sorted(i for i, mine in own.items() if mine)
        assert result_of(kept)["closedCount"] == 1 and extra not in result_of(kept)["remainingTabIds"]
        assert sorted(result_of(kept)["remainingTabIds"]) == sorted([*users, tab_of[first["id"]]])
        assert f"Left the user's own tabs {', '.join(map(str, users))} open" in section(kept, "Result")
        # It closes the kept tab's instance's tabs, and says so with other instances' tabs open.
        assert section(kept, "Result").startswith(f"Closed 1 tab of instance {first['id']} ({extra})")
        assert "The tabs of other instances (" in section(kept, "Result")
        assert target_id in [t["id"] for t in remote.targets()]

        listed = result_of(await call(client, "browser_instance", action="list"))
        assert {i["id"]: i["tabCount"] for i in listed["instances"]}[first["id"]] >= 3
        assert next(i for i in listed["instances"] if i["kind"] == "launched")["pid"]

        # Closing connected instances disconnects; their browsers keep running.
        for instance_id in (first["id"], over_pw["instanceId"]):
            closed = await call(client, "browser_instance", action="close", instanceId=instance_id)
            assert "disconnected; the remote browser keeps running" in section(closed, "Result")
            # Its tabs left with it; the tab now active (in the default instance) is not denied.
            assert "no tab is active" not in section(closed, "Events")
            if instance_id == first["id"]:
                assert external["id"] in result_of(closed)["closedTabIds"]
                # The CDP browser's tabs stay open there: let go of, not closed.
                assert (
                    f"tab {external['id']} is no longer the agent's, as its instance was closed; it stays "
                    "open in its browser"
                ) in section(closed, "Events")
                assert target_id in [t["id"] for t in remote.targets()]
            else:  # the Playwright server's tabs were in the context tabpilot made: closed with it
                assert f"tab {tab_of[instance_id]} closed (by tool)" in section(closed, "Events")
        assert remote.version()["Browser"]
        async with async_playwright() as p:
            browser = await p.chromium.connect(pw_server.ws, timeout=5000)
            await browser.close()
        listed = result_of(await call(client, "browser_instance", action="list"))
        assert [i["id"] for i in listed["instances"]] == [launched["instanceId"]]
        assert listed["defaultInstanceId"] == launched["instanceId"]


async def test_a_connected_browser_that_quits_is_reported_as_quit(
    shared_browser: Instance, browser_path: str, site: LocalSite
) -> None:
    # A quit is told by each page's Target.targetDestroyed reaching tabpilot before the browser's
    # disconnect. Playwright's driver runs a socket's messages on the next turn of its loop but its
    # close at once, dropping what is left: when the last messages come in with the close (a loaded
    # machine), they are lost and the loss can only read "disconnected". So up to three quits: a
    # quit must be recognised in one, and none may be called anything but a quit or a disconnect.
    server = own_browser_server(browser_path)
    said_each: list[str] = []
    async with Client(server) as client:
        for _attempt in range(3):
            with remote_chromium(browser_path) as remote:
                connected = result_of(
                    await call(client, "browser_instance", action="connect", cdpEndpoint=remote.http)
                )
                remote.quit()  # as its user would
                seen: list[str] = []

                async def events(seen: list[str] = seen) -> str:
                    seen.append(section(await call(client, "browser_tabs", action="list"), "Events"))
                    return "".join(seen)

                said = await poll(events, lambda said: "was lost" in said)
            lost = f"instance {connected['instanceId']} was lost: "
            assert (
                f"{lost}the browser quit, closing its tabs first (its last window was closed, or it was told to quit)"
                in said
                or f"{lost}the browser disconnected" in said
            ), said
            (tab_id,) = connected["tabIds"]
            assert f"tab {tab_id} closed (its browser was lost)" in said
            said_each.append(said)
            if "the browser quit" in said:
                failed = await client.call_tool("browser_snapshot", {"tabId": tab_id})
                assert failed.is_error and "(the browser quit, closing its tabs first" in section(
                    failed, "Error"
                )
                break
    assert "the browser quit" in said_each[-1], said_each


async def test_a_killed_browser_takes_its_tabs_and_a_lost_local_default_is_relaunched(
    shared_browser: Instance, browser_path: str, site: LocalSite
) -> None:
    server = own_browser_server(browser_path)
    async with Client(server) as client:
        first_tab = result_of(await call(client, "browser_tabs", action="list"))["activeTabId"]
        listing = await call(client, "browser_instance", action="list")
        (local,) = result_of(listing)["instances"]
        assert local["kind"] == "launched" and local["default"]
        assert f"- {local['id']}: launched, 1 tab, open, default" in section(listing, "Result")

        with remote_chromium(browser_path) as doomed:
            connected = result_of(
                await call(client, "browser_instance", action="connect", cdpEndpoint=doomed.http)
            )
            remote_tab = result_of(
                await call(
                    client, "browser_tabs", action="new", instanceId=connected["instanceId"], background=True
                )
            )["tabId"]
            doomed.kill()
            deadline = time.monotonic() + 5
            events = ""
            while "was lost" not in events and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                events += section(await call(client, "browser_tabs", action="list"), "Events")
        assert f"instance {connected['instanceId']} was lost" in events
        for tab_id in connected["tabIds"] + [remote_tab]:
            assert f"tab {tab_id} closed (its browser was lost)" in events

        # A tool naming a lost tab fails at once and says why; the local browser keeps working.
        started = time.monotonic()
        failed = await client.call_tool("browser_navigate", {"url": site.url("/page/a"), "tabId": remote_tab})
        assert failed.is_error and f"Instance {connected['instanceId']} was lost" in section(failed, "Error")
        assert time.monotonic() - started < 2
        await call(client, "browser_navigate", url=site.url("/page/b"))
        listed = result_of(await call(client, "browser_instance", action="list"))
        health = {i["id"]: (i["health"], i["lostReason"]) for i in listed["instances"]}
        assert health[local["id"]] == ("open", None)
        assert health[connected["instanceId"]][0] == "lost"

        # Kill the local default browser: the next call that needs it relaunches it and says so.
        os.kill(local["pid"], signal.SIGKILL)
        await asyncio.sleep(0.3)
        # Naming it fails and says what replaces it; naming its tab says no tab is open.
        named = await client.call_tool("browser_tabs", {"action": "new", "instanceId": local["id"]})
        assert named.is_error and section(named, "Error").endswith(
            "A call without tabId and instanceId launches a new default browser in its place, with a blank tab."
        )
        gone = await client.call_tool("browser_snapshot", {"tabId": first_tab})
        assert gone.is_error and section(gone, "Error").endswith(
            "(no open tabs)\nNo tab is open: open one with browser_tabs(action='new', url=...)."
        )
        after = await call(client, "browser_navigate", url=site.url("/page/c"))
        events = section(named, "Events") + section(gone, "Events") + section(after, "Events")
        assert f"instance {local['id']} was lost" in events
        assert f"tab {first_tab} closed (its browser was lost)" in events
        assert f"launched in place of lost instance {local['id']}" in events
        listed = result_of(await call(client, "browser_instance", action="list"))
        replacement = next(i for i in listed["instances"] if i["default"])
        assert replacement["kind"] == "launched" and replacement["health"] == "open"
        assert replacement["id"] not in (local["id"], connected["instanceId"])
        assert (
            next(i for i in listed["instances"] if i["id"] == local["id"])["replacedBy"] == replacement["id"]
        )

        # The replacement is killed in turn: naming the first names the instance in place of both.
        os.kill(replacement["pid"], signal.SIGKILL)
        await asyncio.sleep(0.3)
        await call(client, "browser_navigate", url=site.url("/page/a"))
        newest = next(
            i
            for i in result_of(await call(client, "browser_instance", action="list"))["instances"]
            if i["default"]
        )
        assert newest["id"] not in (local["id"], replacement["id"]) and newest["health"] == "open"
        named = await client.call_tool("browser_tabs", {"action": "new", "instanceId": local["id"]})
        assert named.is_error and section(named, "Error").endswith(
            f"instance {newest['id']} took its place. Use instance {newest['id']} instead, or leave instanceId "
            "out for the default instance."
        ), section(named, "Error")

        # Closing the default leaves no open instance: the lost remote one, which nothing replaced,
        # becomes the default (not the replaced local ones), and a call needing it says so. Naming
        # an instance whose replacements are all gone says so. Closing a lost instance only takes
        # it off the list.
        closed = await call(client, "browser_instance", action="close", instanceId=newest["id"])
        assert f"Default instance: {connected['instanceId']}." in section(closed, "Result")
        named = await client.call_tool("browser_tabs", {"action": "new", "instanceId": local["id"]})
        assert (
            named.is_error
            and f"instance {replacement['id']} took its place, and is gone as well. "
            in section(named, "Error")
        )
        assert "Use instance" not in section(named, "Error")
        closed = await call(client, "browser_instance", action="close", instanceId=local["id"])
        assert "it had already been lost, and leaves the list" in section(closed, "Result")
        stuck = await client.call_tool("browser_tabs", {"action": "new"})
        assert stuck.is_error and section(stuck, "Error").endswith(
            "Launch or connect another instance with browser_instance."  # no other instance has a tab
        ), section(stuck, "Error")


async def test_bad_endpoints_and_arguments_get_clear_errors_at_once(
    shared_browser: Instance, make_server: Any, remote: RemoteChromium
) -> None:
    async with Client(make_server()) as client:
        cases = [
            ({"action": "connect", "cdpEndpoint": f"http://127.0.0.1:{free_port()}"}, "unreachable"),
            ({"action": "connect", "wsEndpoint": remote.http}, "connect it with cdpEndpoint"),
            ({"action": "connect"}, "exactly one of cdpEndpoint"),
            ({"action": "close"}, "close needs instanceId"),
            ({"action": "close", "instanceId": "inst_nope"}, "Instance 'inst_nope' not found"),
        ]
        for arguments, message in cases:
            started = time.monotonic()
            result = await client.call_tool("browser_instance", arguments)
            assert result.is_error and message in section(result, "Error"), text(result)
            # Refused or failed fast, not waited out: well under the 10 s connect timeout (a bound
            # wide enough for a loaded machine; what it catches is a wait for the timeout).
            assert time.monotonic() - started < 7


async def test_serve_with_an_endpoint_option_drives_that_browser_instead_of_launching(
    remote: RemoteChromium, pw_server: PlaywrightServer
) -> None:
    for option, endpoint, kind in (
        ("--cdp-endpoint", remote.http, "cdp"),
        ("--ws-endpoint", pw_server.ws, "playwright-server"),
    ):
        async with Client(served(option, endpoint, "--structured-content")) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert "browser_instance" in tools
            listed = result_of(await call(client, "browser_instance", action="list"))
            assert [(i["kind"], i["endpoint"], i["pid"]) for i in listed["instances"]] == [
                (kind, endpoint, None)
            ]
            assert result_of(await call(client, "browser_tabs", action="new"))["tabId"]
    assert remote.version()["Browser"], "the served client only disconnected"


async def test_calls_on_an_instance_another_call_closes_meanwhile_say_so(
    shared_browser: Instance, browser_path: str, site: LocalSite
) -> None:
    # Found by random calls at once: a new tab in the instance never answered, a load of one of
    # its tabs said the load was replaced (HTTP 204?), and a closed tab named "Active tab: None".
    async with Client(own_browser_server(browser_path)) as client:
        await call(client, "browser_tabs", action="list")  # the default instance, which stays

        async def launched() -> tuple[str, int]:
            """An instance with two tabs (its first one can be closed): its id and first tab."""
            result = result_of(await call(client, "browser_instance", action="launch"))
            (first_tab,) = result["tabIds"]
            await call(client, "browser_tabs", action="new", instanceId=result["instanceId"], background=True)
            return result["instanceId"], first_tab

        async def close_soon(instance_id: str, after: float = 0.005) -> CallToolResult:
            await asyncio.sleep(after)
            return await call(client, "browser_instance", action="close", instanceId=instance_id)

        instance_id, first_tab = await launched()
        opening, _ = await asyncio.wait_for(
            asyncio.gather(
                client.call_tool("browser_tabs", {"action": "new", "instanceId": instance_id}),
                close_soon(instance_id),
            ),
            30,
        )
        if opening.is_error:  # a tab opened first went with its instance
            assert f"Instance {instance_id} was closed during the call." in section(opening, "Error")

        instance_id, first_tab = await launched()
        loading, _ = await asyncio.gather(
            client.call_tool("browser_navigate", {"tabId": first_tab, "url": site.url("/api/slow?ms=3000")}),
            close_soon(instance_id, after=0.5),  # the load under way
        )
        assert loading.is_error and f"tab {first_tab} closed during the action" in section(loading, "Error")

        instance_id, first_tab = await launched()
        closing, _ = await asyncio.gather(
            client.call_tool("browser_tabs", {"action": "close", "tabId": first_tab}), close_soon(instance_id)
        )
        if not closing.is_error:
            assert "None" not in section(closing, "Result"), text(closing)

        # With no instance left, no tab is active: telemetry says so in words.
        for instance in result_of(await call(client, "browser_instance", action="list"))["instances"]:
            await call(client, "browser_instance", action="close", instanceId=instance["id"])
        observed = section(await call(client, "browser_observe", what="logs"), "Result")
        assert "(currently_tracked_tab: none," in observed, observed


async def test_a_page_back_from_the_back_forward_cache_is_loaded_with_its_own_title(
    remote: RemoteChromium, browser_path: str, site: LocalSite
) -> None:
    """A browser tabpilot connects to keeps a back/forward cache (the user's Chrome does; one
    Playwright launches does not): a page restored from it loads nothing, and no load event comes.
    The tab stayed `loading`, with the title of the page it left."""
    server = own_browser_server(browser_path, cdp_endpoint=remote.http)
    async with Client(server) as client:
        tab = result_of(await call(client, "browser_tabs", action="new", url=site.url("/page/a")))["tabId"]
        await call(client, "browser_navigate", tabId=tab, url=site.url("/page/b"))
        await call(client, "browser_navigate", tabId=tab, action="back")
        restored = remote.targets()
        assert any(t["url"] == site.url("/page/a") for t in restored)
        listed = {}
        for _ in range(20):  # the title comes from the page a moment after it is shown
            listed = next(
                t
                for t in result_of(await call(client, "browser_tabs", action="list"))["tabs"]
                if t["id"] == tab
            )
            if listed["title"] == "Page a" and listed["status"] == "complete":
                break
            await asyncio.sleep(0.1)
        assert (listed["url"], listed["title"], listed["status"]) == (
            site.url("/page/a"),
            "Page a",
            "complete",
        )


async def test_the_timeouts_a_launch_is_given_are_its_tabs_timeouts(
    make_server: Any, site: LocalSite
) -> None:
    # browser_instance launch took {"timeoutNavigation": ...} and said nothing, and its tabs went
    # on with the server's timeouts (30 s to load a page).
    slow = site.url("/api/slow?ms=3000")
    async with Client(make_server()) as client:
        launched = await call(client, "browser_instance", action="launch", options={"timeoutNavigation": 0.5})
        fresh = result_of(launched)["activeTabId"]
        went = await client.call_tool("browser_navigate", {"url": slow, "tabId": fresh})
        # Its page not come in 0.5 s, the tab is said to be loading it (a success: the browser waits on).
        assert f"Tab {fresh} is loading {slow}; its server has not sent it yet" in section(ok(went), "Result")
        # The server's own browser keeps the server's.
        kept = await client.call_tool("browser_navigate", {"url": slow, "tabId": 1})
        assert section(ok(kept), "Result") == "Navigated tab 1.", text(kept)


async def test_a_browser_the_options_name_that_cannot_be_had_leaves_browser_instance_working(
    browser_path: str, remote: RemoteChromium, site: LocalSite
) -> None:
    # Every call failed with the endpoint's error, browser_instance too: the agent could not
    # launch or connect another browser, only a restart helped.
    endpoint = f"http://127.0.0.1:{free_port()}"
    async with Client(own_browser_server(browser_path, cdp_endpoint=endpoint)) as client:
        for _ in range(2):  # each call that needs it tries it again, and says why it failed
            failed = await client.call_tool("browser_tabs", {"action": "list"})
            assert failed.is_error and f"Could not connect to {endpoint}" in text(failed), text(failed)
        listed = result_of(await call(client, "browser_instance", action="list"))
        assert listed["instances"] == [] and listed["defaultInstanceId"] is None
        connected = result_of(
            await call(client, "browser_instance", action="connect", cdpEndpoint=remote.http)
        )
        assert connected["default"] is True
        opened = await call(client, "browser_tabs", action="new", url=site.url("/page/a"))
        assert result_of(opened)["tabId"] in [
            t["id"] for t in result_of(await call(client, "browser_tabs", action="list"))["tabs"]
        ]


async def test_the_total_tab_limit_holds_against_a_launch(browser_path: str) -> None:
    # A launch opens its first tab whatever the total: 3 tabs were open under a limit of 2.
    async with Client(own_browser_server(browser_path, max_total_tabs=2)) as client:
        await call(client, "browser_tabs", action="new")
        refused = await client.call_tool("browser_instance", {"action": "launch"})
        assert (
            refused.is_error
            and "2 tabs are open" in text(refused)
            and "(--max-total-tabs 2)" in text(refused)
        ), text(refused)
        assert len(result_of(await call(client, "browser_tabs", action="list"))["tabs"]) == 2
        assert len(result_of(await call(client, "browser_instance", action="list"))["instances"]) == 1


async def test_losing_another_instance_tells_its_active_tab_as_its_own(browser_path: str) -> None:
    # The event said "no tab is active" while the default instance's tab 1 was active, and calls
    # without tabId went on in it.
    async with Client(own_browser_server(browser_path)) as client:
        launched = result_of(await call(client, "browser_instance", action="launch"))
        listed = result_of(await call(client, "browser_instance", action="list"))["instances"]
        pid = next(i["pid"] for i in listed if i["id"] == launched["instanceId"])
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.3)
        after = await call(client, "browser_tabs", action="list")
        gone, other = launched["activeTabId"], launched["instanceId"]
        assert (
            f"- tab {gone} closed (its browser was lost); instance {other} has no active tab"
            in section(after, "Events").splitlines()
        ), section(after, "Events")
        assert result_of(after)["activeTabId"] == 1


async def test_closing_a_tab_of_another_instance_names_the_tab_calls_without_tab_id_use(
    browser_path: str, site: LocalSite
) -> None:
    # "Closed tab 3. Active tab: 2." while calls without tabId went on in tab 1, of the default instance.
    async with Client(own_browser_server(browser_path)) as client:
        first = result_of(await call(client, "browser_tabs", action="list"))["activeTabId"]
        launched = result_of(await call(client, "browser_instance", action="launch"))
        other, its_tab = launched["instanceId"], launched["activeTabId"]
        opened = await call(client, "browser_tabs", action="new", url=site.url("/page/b"), instanceId=other)
        doomed = result_of(opened)["tabId"]
        await call(
            client, "browser_tabs", action="activate", tabId=first
        )  # its instance is the default again

        closed = await call(client, "browser_tabs", action="close", tabId=doomed)
        assert section(closed, "Result") == (
            f"Closed tab {doomed}. Instance {other}'s active tab: {its_tab}; "
            f"calls without tabId use tab {first}, of the default instance inst_1."
        )
        shown = await call(client, "browser_snapshot")
        assert section(shown, "Result") == f"Snapshot of tab {first}."


async def test_a_browser_launched_with_options_is_relaunched_with_them(
    browser_path: str, site: LocalSite
) -> None:
    # The relaunch in place of a lost default took the server's options: the viewport, user agent
    # and timeouts the agent had launched it with were gone, unsaid.
    async with Client(own_browser_server(browser_path)) as client:
        options = {"viewport": "800x500", "userAgent": "tabpilot-test-agent"}
        launched = result_of(await call(client, "browser_instance", action="launch", options=options))
        await call(
            client, "browser_tabs", action="activate", tabId=launched["activeTabId"]
        )  # the default now
        listed = result_of(await call(client, "browser_instance", action="list"))["instances"]
        pid = next(i["pid"] for i in listed if i["id"] == launched["instanceId"])
        os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.3)
        after = await call(client, "browser_navigate", url=site.url("/page/a"))
        assert f"launched in place of lost instance {launched['instanceId']}" in section(after, "Events")
        seen = await call(client, "browser_evaluate", function="() => [innerWidth, navigator.userAgent]")
        assert result_of(seen)["value"] == [800, "tabpilot-test-agent"], text(seen)


async def test_a_cdp_browser_whose_tab_waits_on_a_dialog_is_refused_naming_that_tab(
    make_server: Any, browser_path: str, site: LocalSite
) -> None:
    """Playwright's connection waits for every page, and a page showing a dialog answers nothing
    until its user does: the agent hears which tab holds it up and what to do, not that the
    endpoint gave no answer (it answered) and to check its host and port."""
    site.set_content("/asks", "<title>Asks</title><script>confirm('Discard your draft?')</script>")
    with remote_chromium(browser_path) as chromium:
        asking = chromium.open_tab(site.url("/asks"))
        await poll(
            lambda: asyncio.to_thread(chromium.targets), lambda ts: any(t["title"] == "Asks" for t in ts)
        )
        async with Client(make_server()) as client:
            refused = await client.call_tool(
                "browser_instance", {"action": "connect", "cdpEndpoint": chromium.http}
            )
            message = section(refused, "Error")
            assert refused.is_error, text(refused)
            assert f"'Asks' ({site.url('/asks')})" in message, message
            assert "dialog" in message and "then connect again" in message, message
            assert "host and port" not in message, message
            listed = result_of(await call(client, "browser_instance", action="list"))["instances"]
            assert [i["kind"] for i in listed] == ["context"], "nothing was left connected"
            chromium.close_tab(asking)  # what the error said to do
            connected = result_of(
                await call(client, "browser_instance", action="connect", cdpEndpoint=chromium.http)
            )
            tabs = result_of(await call(client, "browser_tabs", action="list"))["tabs"]
            assert [t["url"] for t in tabs if t["instanceId"] == connected["instanceId"]] == ["about:blank"]


async def test_an_unreachable_endpoint_the_server_starts_with_names_that_option_not_the_browser_path(
    browser_path: str,
) -> None:
    """--browser-path is for a browser the server launches; with --cdp-endpoint it launches none,
    so an endpoint that cannot be reached is no reason to check it."""
    endpoint = f"http://127.0.0.1:{free_port()}"
    async with Client(own_browser_server(browser_path, cdp_endpoint=endpoint)) as client:
        said = section(await client.call_tool("browser_tabs", {"action": "list"}), "Error")
        assert f"Could not connect to {endpoint}" in said and "Check --cdp-endpoint." in said, said
        assert "--browser-path" not in said, said


async def test_a_lost_default_that_nothing_replaces_names_the_tabs_of_the_other_instances(
    browser_path: str, site: LocalSite
) -> None:
    # The advice was "use a tab of another instance" without naming one (and said so as well where
    # no other instance had a tab: see the test above).
    async with Client(own_browser_server(browser_path)) as client:
        local_tab = result_of(await call(client, "browser_tabs", action="list"))["activeTabId"]
        with remote_chromium(browser_path) as doomed:
            connected = result_of(
                await call(client, "browser_instance", action="connect", cdpEndpoint=doomed.http)
            )
            remote_tab = connected["tabIds"][0]
            await call(
                client, "browser_tabs", action="activate", tabId=remote_tab
            )  # its instance: the default
            doomed.kill()
            await poll(
                lambda: _health(client, connected["instanceId"]), lambda health: health == "lost", timeout=5
            )
        stuck = await client.call_tool("browser_snapshot", {})
        said = section(stuck, "Error")
        assert stuck.is_error and said.startswith(f"Instance {connected['instanceId']} was lost"), said
        assert said.endswith(
            f"Pass tabId of a tab of another instance (tab {local_tab}), or browser_tabs(action='activate', "
            f"tabId={local_tab}) to make its instance the default; or launch or connect another instance with "
            "browser_instance."
        ), said
        await call(client, "browser_tabs", action="activate", tabId=local_tab)
        await call(client, "browser_navigate", url=site.url("/page/a"))
        assert result_of(await call(client, "browser_tabs", action="list"))["activeTabId"] == local_tab


async def _health(client: Client, instance_id: str) -> str:
    listed = result_of(await call(client, "browser_instance", action="list"))["instances"]
    return str(next(i["health"] for i in listed if i["id"] == instance_id))


async def test_closing_the_instance_of_the_active_tab_activates_the_tab_active_before_it(
    browser_path: str, site: LocalSite
) -> None:
    # The first instance opened became the default, whatever tab the agent had used before: calls
    # without tabId went on in a browser it had left, not in the tab it was at before.
    async with Client(own_browser_server(browser_path)) as client:
        second = result_of(await call(client, "browser_instance", action="launch"))
        third = result_of(await call(client, "browser_instance", action="launch"))
        before = third["activeTabId"]
        await call(client, "browser_navigate", url=site.url("/page/c"), tabId=before)
        await call(client, "browser_tabs", action="activate", tabId=before)
        await call(client, "browser_tabs", action="activate", tabId=second["activeTabId"])
        closed = await call(client, "browser_instance", action="close", instanceId=second["instanceId"])
        assert section(closed, "Result").endswith(
            f"Default instance: {third['instanceId']}, whose tab {before} is now the active tab."
        ), text(closed)
        assert (result_of(closed)["defaultInstanceId"], result_of(closed)["activeTabId"]) == (
            third["instanceId"],
            before,
        )
        seen = await call(client, "browser_evaluate", function="() => location.pathname")
        assert result_of(seen)["value"] == "/page/c", text(seen)
        # An instance that did not hold the active tab changes nothing, and says no more.
        other = await call(client, "browser_instance", action="close", instanceId="inst_1")
        assert section(other, "Result").endswith(f"Default instance: {third['instanceId']}."), text(other)


async def test_a_tabs_devtools_url_given_for_the_browser_names_the_browsers_url(
    make_server: Any, remote: RemoteChromium
) -> None:
    # A page's webSocketDebuggerUrl (/json/list) failed as "failed unexpectedly: ... Protocol error
    # (Target.attachToBrowserTarget): Not allowed ... it is a bug in tabpilot".
    page = next(t for t in remote.targets() if t["type"] == "page")["webSocketDebuggerUrl"]
    assert "/devtools/page/" in page
    async with Client(make_server()) as client:
        refused = await client.call_tool("browser_instance", {"action": "connect", "cdpEndpoint": page})
        assert refused.is_error and section(refused, "Error") == (
            f"{page} is the DevTools URL of one page of the browser (as /json/list gives it), not of the "
            f"browser: tabpilot drives the whole browser, every tab of it. Give {remote.http} instead (or the "
            f"browser's ws://.../devtools/browser/<id> URL, webSocketDebuggerUrl in {remote.http}/json/version)."
        ), text(refused)
        connected = result_of(
            await call(client, "browser_instance", action="connect", cdpEndpoint=remote.http)
        )
        await call(client, "browser_instance", action="close", instanceId=connected["instanceId"])


async def test_close_oldest_under_the_total_cap_makes_room_in_any_of_the_agents_browsers(
    browser_path: str, site: LocalSite
) -> None:
    # Room was made only in the browser the new tab went to: a tab asked for in a browser whose
    # one tab is its active one was refused, "close tabs you no longer need", under close-oldest
    # and with older tabs in another browser; a popup closed a newer tab than the oldest.
    server = own_browser_server(browser_path, max_total_tabs=4, tab_limit_policy="close-oldest")
    async with Client(server) as client:
        await call(client, "browser_tabs", action="list")  # tab 1
        await call(client, "browser_tabs", action="new")  # tab 2
        await call(client, "browser_tabs", action="new")  # tab 3, active
        launched = result_of(await call(client, "browser_instance", action="launch"))  # tab 4
        other = launched["instanceId"]
        opened = await call(client, "browser_tabs", action="new", instanceId=other, url=site.url("/"))
        assert (
            "- tab 1 closed (over the tab limit of all sessions and instances together, --max-total-tabs)"
            in section(opened, "Events").splitlines()
        ), text(opened)
        new = result_of(opened)["tabId"]
        shot = await call(client, "browser_snapshot", full=True)
        clicked = await call(client, "browser_click", ref=ref_of(text(shot), "Open popup"))
        events = section(clicked, "Events").splitlines()
        assert (
            "- tab 2 closed (over the tab limit of all sessions and instances together, --max-total-tabs)"
            in events
        ), text(clicked)
        listed = result_of(await call(client, "browser_tabs", action="list"))["tabs"]
        popup = next(t["id"] for t in listed if t["openerId"] == new)
        assert sorted((t["instanceId"], t["id"]) for t in listed) == sorted(
            [("inst_1", 3), (other, launched["activeTabId"]), (other, new), (other, popup)]
        )


async def test_a_launch_on_the_profile_an_open_instance_runs_on_names_that_instance(
    browser_path: str, tmp_path: Path
) -> None:
    # Chromium quit at once on its profile lock, and the error said only that "another Chromium"
    # may have the profile: the agent's own instance, which it could have used.
    profile = str(tmp_path / "profile")
    async with Client(own_browser_server(browser_path)) as client:
        first = result_of(await call(client, "browser_instance", action="launch", userDataDir=profile))
        again = await client.call_tool("browser_instance", {"action": "launch", "userDataDir": profile})
        iid = first["instanceId"]
        assert again.is_error and section(again, "Error") == (
            f"Instance {iid} runs on the profile {profile} already: one browser at a time can use a profile. "
            f"Use instance {iid}: its tabs are in browser_tabs(action='list'); to launch on that profile "
            f"again, close it first (browser_instance(action='close', instanceId={iid!r})), or launch "
            "without userDataDir for a fresh profile."
        ), text(again)
        await call(client, "browser_instance", action="close", instanceId=iid)
        relaunched = result_of(await call(client, "browser_instance", action="launch", userDataDir=profile))
        assert relaunched["kind"] == "launched"
