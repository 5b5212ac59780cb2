"""The user's own browser through the tabpilot extension: a real Chromium with the shipped extension
loaded, the bridge, and the library on top. tabpilot is given no debugging port: everything goes
through the extension's WebSocket to 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from support import ExtensionChromium, extension_chromium, free_port, remote_chromium, wait_until
from tabpilot import (
    ActionError,
    ConnectError,
    ConsoleEntry,
    ErrorEntry,
    ExtensionBridge,
    ExtensionNotConnectedError,
    Instance,
    InstanceUnreachableError,
    NetworkEntry,
    Query,
    Tab,
    TabManager,
    Telemetry,
    evaluate,
    extension_id,
    extension_path,
    navigate,
    press_key,
)
from tabpilot._watch import NEW_TAB_TIMEOUT
from tabpilot.demo.site import LocalSite


@pytest.fixture
def chromium(browser_path: str, site: LocalSite) -> Iterator[ExtensionChromium]:
    with extension_chromium(browser_path, site.url("/page/user")) as browser:
        yield browser


@pytest.fixture
async def bridge() -> AsyncIterator[ExtensionBridge]:
    async with ExtensionBridge(port=0, token="test-token", reconnect_grace=3) as started:
        yield started


@contextlib.asynccontextmanager
async def agent_tab(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> AsyncIterator[tuple[TabManager, Instance, Tab]]:
    """Pair the extension, connect to it, and open a tab of the agent's on /page/a."""
    chromium.open(bridge.connect_url)
    async with TabManager() as manager:
        instance = await manager.connect_extension(bridge, timeout=20)
        yield manager, instance, await manager.new_tab(site.url("/page/a"))


def user_tabs(chromium: ExtensionChromium) -> list[str]:
    return [p["url"] for p in chromium.pages() if "/page/user" in p["url"]]


def test_the_shipped_extension_has_a_fixed_id_and_asks_only_what_it_needs() -> None:
    manifest = json.loads((extension_path() / "manifest.json").read_text())
    assert manifest["manifest_version"] == 3
    assert extension_id() == extension_id(manifest["key"]) == "digpkllncpicmkoabocpecjmfbjflfim"
    assert set(manifest["permissions"]) == {"debugger", "tabs", "tabGroups", "storage", "alarms"}
    assert "host_permissions" not in manifest
    for name in ("service_worker.js", "connect.html", "connect.js"):
        assert (extension_path() / name).is_file()


async def test_the_bridge_refuses_other_origins_a_missing_or_wrong_token_and_discovery(
    bridge: ExtensionBridge,
) -> None:
    base = f"ws://{bridge.address}"
    good_origin = f"chrome-extension://{extension_id()}"
    refused = [
        (f"{base}/extension?token=test-token", "http://127.0.0.1:8000"),  # a web page on this machine
        (f"{base}/extension?token=test-token", "chrome-extension://" + "a" * 32),  # another extension
        (f"{base}/extension?token=test-token", None),
        (f"{base}/extension", good_origin),
        (f"{base}/extension?token=wrong", good_origin),
        (bridge.cdp_endpoint, "http://127.0.0.1:8000"),  # the relay, from a page that learnt its path
        (f"{base}/devtools/browser/guess", None),
    ]
    for url, origin in refused:
        with pytest.raises(InvalidStatus) as refusal:
            async with ws_connect(url, origin=origin):  # type: ignore[arg-type]
                pass
        assert refusal.value.response.status_code in (403, 404), (url, origin)
    for path in ("/json/version", "/json/list", "/json"):
        with pytest.raises(urllib.error.HTTPError) as missing:
            # In a thread: the bridge answers from this test's event loop.
            await asyncio.to_thread(urllib.request.urlopen, f"http://{bridge.address}{path}", timeout=5)
        assert missing.value.code in (404, 426)
    # The right origin and token get the welcome.
    async with ws_connect(f"{base}/extension?token=test-token", origin=good_origin) as socket:  # type: ignore[arg-type]
        welcome = json.loads(await asyncio.wait_for(socket.recv(), 5))
        relay = bridge.relay.browser_target_id
        assert welcome == {
            "type": "welcome",
            "scope": "agent",
            "files": False,
            "protocol": 1,
            "relay": relay,
            "hold": True,
        }
    assert not bridge.connected  # it never said hello


async def test_connecting_without_the_extension_says_how_to_pair_it(bridge: ExtensionBridge) -> None:
    async with TabManager() as manager:
        with pytest.raises(ExtensionNotConnectedError) as missing:
            await manager.connect_extension(bridge, timeout=0.2)
        assert bridge.address in missing.value.fact and "connect page" in missing.value.advice
        manager.watch_extension(bridge)
        with pytest.raises(ExtensionNotConnectedError):
            manager.instance()


async def test_the_agent_works_in_its_own_tabs_of_the_users_browser_and_never_sees_the_users_tab(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    chromium.open(bridge.connect_url)
    async with TabManager() as manager:
        instance = await manager.connect_extension(bridge, timeout=20)
        assert instance.kind == "extension" and instance.endpoint == bridge.address
        # Nothing was in scope: the agent got one blank tab of its own, in the "tabpilot" group.
        (first,) = manager.tabs()
        assert first.url == "about:blank" and first.chrome_tab_id is not None and first.window_id is not None
        tab = await manager.new_tab(site.url("/page/a"))
        snapshot = await tab.snapshot()
        assert 'heading "Page a"' in snapshot.text
        infos = {i.id: i for i in manager.tabs()}
        assert set(infos) == {first.id, tab.id}
        assert all("/page/user" not in i.url for i in infos.values())
        grouped = await asyncio.to_thread(
            chromium.in_extension,
            "chrome.tabGroups.query({title: 'tabpilot'}).then(async ([g]) => "
            "(await chrome.tabs.query({groupId: g.id})).map(t => t.id))",
        )
        assert sorted(grouped) == sorted(i.chrome_tab_id or -1 for i in infos.values())  # -1: no id, fails
        assert user_tabs(chromium)  # still open, never touched


async def test_a_tab_the_user_shares_joins_and_leaves_as_the_button_toggles(
    chromium: ExtensionChromium, bridge: ExtensionBridge
) -> None:
    chromium.open(bridge.connect_url)
    async with TabManager() as manager:
        await manager.connect_extension(bridge, timeout=20)
        toggle = (
            "chrome.tabs.query({}).then(ts => toggleSharing(ts.find(t => t.url.includes('/page/user'))))"
            ".then(() => true)"
        )
        await asyncio.to_thread(chromium.in_extension, toggle)
        await wait_until(lambda: any("/page/user" in t.url for t in manager.tabs()), 10)
        await manager.settle()
        shared = next(t for t in manager.tabs() if "/page/user" in t.url)
        assert manager.events.history(tab_id=shared.id)[0].data["cause"] == "external"
        assert "Page user" in (await manager.tab(shared.id).snapshot()).text
        await asyncio.to_thread(chromium.in_extension, toggle)
        await wait_until(lambda: all("/page/user" not in t.url for t in manager.tabs()), 10)
        await manager.settle()
        closed = [e for e in manager.events.history(tab_id=shared.id) if e.type == "tab_closed"]
        assert closed and closed[0].data["by"] == "unshared"  # the user took it back: not closed
        assert user_tabs(chromium)


async def test_a_service_worker_restart_keeps_the_instance_and_every_tab_id(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    async with agent_tab(chromium, bridge, site) as (manager, instance, tab):
        before = [(t.id, t.target_id, t.chrome_tab_id) for t in manager.tabs()]
        reconnects: list[float] = []
        undo = bridge.on_connect(lambda: reconnects.append(time.monotonic()))
        await asyncio.to_thread(chromium.stop_service_worker)
        # An event can wake the worker at once: on a busy machine it may be back before a poll.
        await wait_until(lambda: not bridge.connected or reconnects, 5)
        if not bridge.connected:
            # Meanwhile page work fails at once, saying why.
            started = time.monotonic()
            with pytest.raises(InstanceUnreachableError):
                await tab.snapshot()
            assert time.monotonic() - started < 1
        assert await bridge.wait_connected(10)  # the worker's alarm woke it; it reconnected
        await wait_until(lambda: reconnects, 5)
        undo()
        assert instance.state == "open"
        assert [(t.id, t.target_id, t.chrome_tab_id) for t in manager.tabs()] == before
        assert 'heading "Page a"' in (await tab.snapshot()).text
        await navigate(tab, "goto", site.url("/page/b"))
        assert tab.title == "Page b"


async def test_a_tab_opened_as_the_service_worker_stops_is_named_as_possibly_open_and_listed_after(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """Chrome makes the tab, and the worker stops before it answers: the call fails, saying the tab
    may have opened all the same, and it is listed once the worker is back."""
    async with agent_tab(chromium, bridge, site) as (manager, _, _):
        before = {t.id for t in manager.tabs()}
        # The worker makes the tab and keeps it in scope, as its createTab does, and never answers.
        chromium.in_extension(
            "handlers.createTab = async ({ url }) => {"
            " const tab = await chrome.tabs.create({ url, active: false });"
            " state.scope.set(tab.id, { reason: 'agent' }); await saveScope();"
            " return new Promise(() => {}); }; true"
        )
        pages = len(chromium.pages())
        opening = asyncio.ensure_future(manager.new_tab())
        await wait_until(lambda: len(chromium.pages()) == pages + 1, 10)
        await asyncio.to_thread(chromium.stop_service_worker)
        with pytest.raises(InstanceUnreachableError) as failed:
            await asyncio.wait_for(opening, 10)
        assert failed.value.opening
        assert "may have opened all the same" in str(failed.value)
        assert await bridge.wait_connected(10)
        await wait_until(lambda: len({t.id for t in manager.tabs()} - before) == 1, 10)


async def test_a_popup_the_users_browser_blocks_is_not_waited_for_as_long_as_one_on_its_way(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """The user's Chrome blocks a window a page asks for with no user gesture (Chromium still says
    it was asked for): it is waited for briefly, not the whole time a tab on its way gets."""
    site.set_content("/opens-on-load", "<title>Opener</title><script>window.open('/page/b')</script>")
    async with agent_tab(chromium, bridge, site) as (manager, _, tab):
        await manager.settle()
        started = time.monotonic()
        await navigate(tab, "goto", site.url("/opens-on-load"))
        await manager.settle()
        assert time.monotonic() - started < NEW_TAB_TIMEOUT
        assert tab.title == "Opener"
        assert not [t for t in manager.tabs() if t.url.endswith("/page/b")]
        assert not [p for p in chromium.pages() if p["url"].endswith("/page/b")]  # blocked indeed


async def test_what_a_tab_does_while_the_service_worker_restarts_reaches_tabpilot(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    async with agent_tab(chromium, bridge, site) as (_, _, tab):
        # The user takes the tab elsewhere while the worker is away: its debugger events wake the
        # worker, which hands them on once it is connected again.
        await asyncio.to_thread(chromium.stop_service_worker_and_navigate, tab.target_id, site.url("/page/b"))
        assert await bridge.wait_connected(10)
        await wait_until(lambda: tab.url.endswith("/page/b"), 5)
        assert 'heading "Page b"' in (await tab.snapshot()).text
        assert tab.title == "Page b"


async def test_a_title_the_page_sets_reaches_the_tab_list_through_the_relay(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """The page's title report (a binding call) comes through the tab's one attachment: the relay
    hands it to tabpilot's session, which added the binding, and not to Playwright's."""
    async with agent_tab(chromium, bridge, site) as (manager, _, tab):
        await tab.page.evaluate("document.title = 'Renamed by the page'")
        await wait_until(
            lambda: [i.title for i in manager.tabs() if i.id == tab.id] == ["Renamed by the page"]
        )
        assert tab.title_live
        assert (await tab.snapshot()).title == "Renamed by the page"  # Playwright's page still answers


async def test_attachments_kept_for_another_server_state_are_started_afresh(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    async with agent_tab(chromium, bridge, site) as (manager, _, tab):
        # As if the worker had made its attachments for a server that is gone (it restarted
        # while that server stopped): their CDP domains are in a state this relay never saw.
        chromium.in_extension("state.relay = 'gone'; chrome.storage.local.set({relay: 'gone'})")
        reconnects: list[float] = []
        undo = bridge.on_connect(lambda: reconnects.append(time.monotonic()))
        await asyncio.to_thread(chromium.stop_service_worker)
        # An event can wake the worker at once: on a busy machine it may be back before a poll.
        await wait_until(lambda: not bridge.connected or reconnects, 5)
        undo()
        assert await bridge.wait_connected(10)

        # The tab is attached afresh: reported closed and new (never left half known), and works.
        def again() -> list[int]:
            return [t.id for t in manager.tabs() if t.chrome_tab_id == tab.chrome_tab_id]

        await wait_until(lambda: tab.closed and again(), 5)
        fresh = manager.tab(again()[0])
        assert fresh.id > tab.id and fresh.target_id == tab.target_id
        assert 'heading "Page a"' in (await fresh.snapshot()).text


async def test_a_call_under_way_when_the_service_worker_stops_leaves_its_tab_working_after_it(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    # The page keeps its main thread busy for a while, so the snapshot's first commands in the new
    # document are still under way when the worker stops: their answers are lost.
    site.set_content(
        "/busy",
        "<title>Busy</title><h1>Busy page</h1><script>setTimeout(() => {"
        " const end = Date.now() + 2500; while (Date.now() < end) {} }, 800)</script>",
    )
    async with agent_tab(chromium, bridge, site) as (_, _, tab):
        await navigate(tab, "goto", site.url("/busy"))
        await asyncio.sleep(1.2)
        under_way = asyncio.ensure_future(tab.snapshot())
        await asyncio.sleep(0.3)
        await asyncio.to_thread(chromium.stop_service_worker)
        with pytest.raises((InstanceUnreachableError, ActionError)):
            await under_way
        assert await bridge.wait_connected(10)
        # Once the page is free again, the tab answers as before: nothing of the lost answers stays.
        assert 'heading "Busy page"' in (await tab.snapshot()).text
        assert (await evaluate(tab, "() => document.title")).value == "Busy"


async def test_a_killed_browser_fails_tools_at_once_and_is_lost_after_the_grace(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    async with agent_tab(chromium, bridge, site) as (manager, instance, tab):
        chromium.kill()
        started = time.monotonic()
        # A call under way when the browser dies fails as the action it was; the next ones at once.
        with pytest.raises((ActionError, InstanceUnreachableError)):
            await asyncio.wait_for(tab.snapshot(), 10)
        with pytest.raises(InstanceUnreachableError):
            await asyncio.wait_for(tab.snapshot(), 10)
        assert time.monotonic() - started < 3
        await wait_until(lambda: instance.state == "lost", bridge.reconnect_grace + 5)
        assert "did not come back" in (instance.lost_reason or "")

        def closed() -> list[str]:
            return [e.data["by"] for e in manager.events.history(tab_id=tab.id) if e.type == "tab_closed"]

        await wait_until(closed, 5)
        # The user's tabs: tabpilot cannot tell a killed browser from a disabled extension.
        assert closed() == ["unreachable"]


async def test_auto_connect_finds_a_running_chrome_through_its_devtools_active_port(
    browser_path: str, tmp_path: Path
) -> None:
    with remote_chromium(browser_path) as remote:
        async with TabManager() as manager:
            instance = await manager.auto_connect(user_data_dir=remote.profile, timeout=10)
            assert instance.kind == "cdp" and instance.endpoint is not None
            assert instance.endpoint.startswith(f"ws://127.0.0.1:{remote.port}/devtools/browser/")
            assert len(manager.tabs()) == 1
        # No file: Chrome is not running there with remote debugging on; say how to turn it on.
        async with TabManager() as manager:
            with pytest.raises(ConnectError) as missing:
                await manager.auto_connect(user_data_dir=str(tmp_path))
            assert missing.value.reason == "no_debugging"
            assert "DevToolsActivePort" in missing.value.fact
            assert "chrome://inspect/#remote-debugging" in missing.value.advice
            # A file left behind by a Chrome that quit names a port nobody answers on.
            (tmp_path / "DevToolsActivePort").write_text(f"{free_port()}\n/devtools/browser/gone\n")
            with pytest.raises(ConnectError) as stale:
                await manager.auto_connect(user_data_dir=str(tmp_path), timeout=2)
            assert stale.value.reason == "no_debugging" and "did not answer" in stale.value.fact


async def test_with_scope_all_every_tab_is_the_agents_and_tabs_the_user_opens_are_reported(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    async with ExtensionBridge(port=0, token="test-token", scope="all") as bridge:
        await asyncio.to_thread(chromium.open, bridge.connect_url)
        async with TabManager() as manager:
            await manager.connect_extension(bridge, timeout=20)
            # The user's page is in scope; the extension's own page never is (no debugger there).
            assert [t.url for t in manager.tabs()] == [site.url("/page/user")]
            target = await asyncio.to_thread(chromium.open, site.url("/page/later"))
            await wait_until(lambda: any(t.target_id == target for t in manager.tabs()), 10)
            await manager.settle()
            later = next(t for t in manager.tabs() if t.target_id == target)
            assert manager.events.history(tab_id=later.id)[0].data["cause"] == "external"


USER_TYPES_INTO_A_NEW_TAB = """(async (url) => {
  const tab = await chrome.tabs.create({});  // Ctrl-T: Chrome's New Tab page, out of reach
  await new Promise((done) => setTimeout(done, 500));
  await chrome.tabs.update(tab.id, {url});  // the user types a URL into it
  return tab.id;
})"""


async def test_with_scope_all_a_new_tab_the_user_types_a_url_into_loads_and_answers(
    chromium: ExtensionChromium, site: LocalSite
) -> None:
    """It stayed `loading`, and every evaluate in it waited: the tab comes into scope loaded, the
    relay replayed its execution contexts to Playwright ahead of the frame tree Playwright had
    asked for first, and Playwright dropped its main world. (Half the tabs did; four are made.)"""
    async with ExtensionBridge(port=0, token="test-token", scope="all") as bridge:
        await asyncio.to_thread(chromium.open, bridge.connect_url)
        async with TabManager() as manager:
            await manager.connect_extension(bridge, timeout=20)
            for n in range(4):
                await user_types_into_a_new_tab(chromium, manager, site.url(f"/page/typed-{n}"))


async def user_types_into_a_new_tab(chromium: ExtensionChromium, manager: TabManager, url: str) -> None:
    await asyncio.to_thread(chromium.in_extension, f"{USER_TYPES_INTO_A_NEW_TAB}({json.dumps(url)})")
    await wait_until(lambda: any(t.url == url for t in manager.tabs()), 10)
    tab = manager.tab(next(t.id for t in manager.tabs() if t.url == url))
    assert (await evaluate(tab, "() => location.href")).value == url  # it answers
    await wait_until(lambda: tab.status == "complete", 5)
    assert manager.events.history(tab_id=tab.id)[0].data["cause"] == "external"


async def test_a_cross_site_iframe_works_through_the_child_sessions_of_the_tab(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    # localhost and 127.0.0.1 are different sites: the iframe runs in a process (target) of its own.
    site.set_content(
        "/framed", f'<h1>Outer</h1><iframe src="http://localhost:{site.port}/page/inner"></iframe>'
    )
    await asyncio.to_thread(chromium.open, bridge.connect_url)
    async with TabManager() as manager:
        await manager.connect_extension(bridge, timeout=20)
        tab = await manager.new_tab(site.url("/framed"))
        snapshot = await tab.snapshot()
        assert 'heading "Outer"' in snapshot.text and 'heading "Page inner"' in snapshot.text


async def test_an_iframe_inside_a_cross_site_iframe_loads_and_is_recorded_through_the_relay(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    # tabpilot's telemetry asks each cross-site iframe for the iframes of other sites inside it.
    # Passed on to Chrome's debugger, that held the inner iframe at its start for ever (the page
    # never finished loading); the relay hands those to it as it does the tab's own children.
    other = f"http://localhost:{site.port}"
    site.set_content(
        "/inner",
        "<h1>Inner</h1><script>console.log('inner on ' + location.host);"
        "fetch('/api/echo?from=inner').then((r) => console.log('inner fetched ' + r.status))</script>",
    )
    site.set_content("/mid", f'<h1>Mid</h1><iframe src="{site.url("/inner")}"></iframe>')
    site.set_content("/nested", f'<h1>Outer</h1><iframe src="{other}/mid"></iframe>')
    telemetry = Telemetry()
    await asyncio.to_thread(chromium.open, bridge.connect_url)
    async with TabManager() as manager:
        manager.add_target_hook(telemetry.attach_target)
        await manager.connect_extension(bridge, timeout=20)
        tab = await manager.new_tab(site.url("/nested"))

        def texts() -> list[str]:
            entries = telemetry.query(Query("logs", tab_id=tab.id)).entries
            return sorted(e.text for e in entries if isinstance(e, ConsoleEntry) and e.source == "console")

        def rows() -> dict[str, NetworkEntry]:
            entries = telemetry.query(Query("network_waterfall", tab_id=tab.id)).entries
            return {e.url: e for e in entries if isinstance(e, NetworkEntry)}

        await wait_until(lambda: texts() == ["inner fetched 200", f"inner on 127.0.0.1:{site.port}"], 10)
        for url in (site.url("/inner"), site.url("/api/echo?from=inner")):
            await wait_until(lambda url=url: url in rows())  # type: ignore[misc]
            assert rows()[url].status == 200
        pending = telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending
        assert [p.url for p in pending if "favicon" not in p.url] == []
        # Playwright's own sessions to the iframes work as before.
        snapshot = await tab.snapshot()
        assert 'heading "Mid"' in snapshot.text and 'heading "Inner"' in snapshot.text
        assert telemetry.listener_errors == 0


async def test_cross_site_iframes_and_workers_are_recorded_as_their_tabs_through_the_relay(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    # As in a browser tabpilot launched: a cross-site iframe and a worker run in targets of their
    # own, and their console lines, errors and requests are the tab's.
    other = f"http://localhost:{site.port}"
    site.set_content(
        "/mid",
        "<h1>Mid</h1><script>console.log('mid on ' + location.host);"
        "setTimeout(() => { throw new Error('mid broke') });"
        "fetch('/api/echo?from=mid').then((r) => console.log('mid fetched ' + r.status))</script>",
    )
    site.set_content("/slow-frame", "<script>fetch('/api/slow?ms=5000')</script>")
    site.set_content(
        "/worker.js",
        # On a message: a new worker runs before tabpilot's session to it has Network on (its very
        # first requests can be missed, and are counted as dropped); once its first line is in, it is.
        "console.log('worker up');"
        "onmessage = () => fetch('/api/echo?from=worker').then((r) => console.log('worker fetched ' + r.status));",
        content_type="text/javascript",
    )
    site.set_content(
        "/host",
        f'<h1>Host</h1><iframe src="{other}/mid"></iframe><iframe id="slow" src="{other}/slow-frame"></iframe>'
        "<script>window.w = new Worker('/worker.js')</script>",
    )
    telemetry = Telemetry()
    await asyncio.to_thread(chromium.open, bridge.connect_url)
    async with TabManager() as manager:
        manager.add_target_hook(telemetry.attach_target)
        await manager.connect_extension(bridge, timeout=20)
        tab = await manager.new_tab(site.url("/host"))

        def texts() -> list[str]:
            entries = telemetry.query(Query("logs", tab_id=tab.id)).entries
            # The page's own lines (the browser's, such as a missing icon's 404, may come too).
            return sorted(e.text for e in entries if isinstance(e, ConsoleEntry) and e.source == "console")

        def rows() -> dict[str, NetworkEntry]:
            entries = telemetry.query(Query("network_waterfall", tab_id=tab.id)).entries
            return {e.url: e for e in entries if isinstance(e, NetworkEntry)}

        await wait_until(lambda: "worker up" in texts(), 10)
        await evaluate(tab, "() => w.postMessage('fetch')")
        expected = ["mid fetched 200", f"mid on localhost:{site.port}", "worker fetched 200", "worker up"]
        await wait_until(lambda: texts() == expected, 10)
        await wait_until(lambda: telemetry.query(Query("errors", tab_id=tab.id)).entries)
        (error,) = telemetry.query(Query("errors", tab_id=tab.id)).entries
        assert isinstance(error, ErrorEntry) and error.message == "mid broke"
        # Each iframe's document is one finished row, not a request pending for ever.
        for url in (f"{other}/mid", f"{other}/api/echo?from=mid", f"{other}/slow-frame"):
            await wait_until(lambda url=url: url in rows())  # type: ignore[misc]
            assert rows()[url].status == 200
        await wait_until(lambda: site.url("/api/echo?from=worker") in rows())
        assert rows()[site.url("/api/echo?from=worker")].status == 200

        def pending() -> list[str]:  # the browser's own favicon request may be under way too
            entries = telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending
            return [p.url for p in entries if p.url.startswith(other)]

        assert pending() == [f"{other}/api/slow?ms=5000"]

        # An iframe that goes takes its requests with it: recorded as cut short, and why.
        await evaluate(tab, "() => document.getElementById('slow').remove()")
        await wait_until(lambda: f"{other}/api/slow?ms=5000" in rows())
        cut = rows()[f"{other}/api/slow?ms=5000"]
        assert cut.status is None and cut.failure == "its iframe went away before the request finished"
        assert pending() == []
        # Playwright's own sessions to the iframes work as before.
        snapshot = await tab.snapshot()
        assert 'heading "Host"' in snapshot.text and 'heading "Mid"' in snapshot.text
        assert telemetry.listener_errors == 0


BUTTON_ON = """(async () => {{
  const tab = (await chrome.tabs.query({{}})).find((t) => (t.url || t.pendingUrl || "").includes({part}));
  {before}
  return [await chrome.action.getTitle({{tabId: tab.id}}), await chrome.action.getBadgeText({{tabId: tab.id}})];
}})()"""
"""The tooltip and badge of the toolbar button on the tab at the URL, after `before` (with `tab`)."""


async def test_the_toolbar_button_says_what_a_click_does_on_a_tab_the_user_opens_after_pairing(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """A tab opened after pairing kept the manifest's "click to pair with a server", and a click on a
    page the agent may not have (a browser page) did nothing and said nothing."""
    chromium.open(bridge.connect_url)
    async with TabManager() as manager:
        await manager.connect_extension(bridge, timeout=20)
        chromium.open(site.url("/page/mine"))
        title, badge = await asyncio.to_thread(
            chromium.in_extension, BUTTON_ON.format(part='"/page/mine"', before="")
        )
        assert title == "tabpilot: click to share this tab with the agent" and badge == ""
        chromium.open("chrome://version")
        # Clicked once the page is there, as a user does: Chrome resets a tab's tooltip as its page
        # commits, so a click while chrome://version was still on its way could be undone.
        click = (
            'while ((await chrome.tabs.get(tab.id)).status !== "complete") '
            "await new Promise((r) => setTimeout(r, 50));\n  await toggleSharing(tab);"
        )
        title, badge = await asyncio.to_thread(
            chromium.in_extension, BUTTON_ON.format(part='"chrome://version"', before=click)
        )
        assert "cannot share" in title and "browser's own pages" in title and badge == "", title
        assert all("chrome://version" not in t.url for t in manager.tabs())


async def test_a_tab_the_user_shared_is_no_longer_shared_once_the_extension_forgets_the_server(
    chromium: ExtensionChromium, bridge: ExtensionBridge
) -> None:
    """It stayed shared (badge ON) after "Disconnect and forget the server", a click on the button
    then opened the pairing page instead of taking it back, and the next server paired got it."""
    chromium.open(bridge.connect_url)
    async with TabManager() as manager:
        await manager.connect_extension(bridge, timeout=20)
        share = "await toggleSharing(tab);"
        await asyncio.to_thread(chromium.in_extension, BUTTON_ON.format(part='"/page/user"', before=share))
        await wait_until(lambda: any("/page/user" in t.url for t in manager.tabs()), 10)
        await asyncio.to_thread(chromium.in_extension, "forget().then(() => true)")
        title, badge = await asyncio.to_thread(
            chromium.in_extension, BUTTON_ON.format(part='"/page/user"', before="")
        )
        assert badge == "" and title == "tabpilot: click to pair with a server"
        # The agent's own tab stays in its reach, for the next server: said so, not "pair" alone.
        title, badge = await button_on(chromium, "about:blank")
        assert badge == "WAIT" and "goes to the next server you pair with" in title, (title, badge)
    async with ExtensionBridge(port=0, token="another-token") as other, TabManager() as manager:
        chromium.open(other.connect_url)
        await manager.connect_extension(other, timeout=20)
        await manager.settle()
        assert all("/page/user" not in t.url for t in manager.tabs())
        assert user_tabs(chromium)


async def button_on(chromium: ExtensionChromium, part: str, before: str = "") -> tuple[str, str]:
    """The tooltip and badge of the toolbar button on the tab whose URL has `part` (see BUTTON_ON)."""
    title, badge = await asyncio.to_thread(
        chromium.in_extension, BUTTON_ON.format(part=json.dumps(part), before=before)
    )
    return title, badge


async def button_until(
    chromium: ExtensionChromium, part: str, done: Callable[[str, str], bool], timeout: float = 10
) -> tuple[str, str]:
    """The button on that tab once `done(title, badge)`, polled without holding up the event loop."""
    deadline = time.monotonic() + timeout
    title, badge = await button_on(chromium, part)
    while not done(title, badge) and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        title, badge = await button_on(chromium, part)
    return title, badge


async def test_a_shared_tab_says_no_server_holds_it_while_none_is_connected_and_is_on_again_after(
    chromium: ExtensionChromium,
) -> None:
    """Its badge said ON, "tabpilot can see and control this tab", while no server was connected
    (the server stopped, or the link dropped)."""
    async with ExtensionBridge(port=0, token="test-token", reconnect_grace=3) as bridge:
        chromium.open(bridge.connect_url)
        async with TabManager() as manager:
            await manager.connect_extension(bridge, timeout=20)
            await button_on(chromium, "/page/user", "await toggleSharing(tab);")
            await wait_until(lambda: any("/page/user" in t.url for t in manager.tabs()), 10)
            # The badge's text and its tooltip are set one after the other: wait for both.
            title, badge = await button_until(chromium, "/page/user", lambda title, badge: "control" in title)
            assert badge == "ON" and "can see and control this tab" in title, (title, badge)
        port = bridge.port
    title, badge = await button_until(chromium, "/page/user", lambda title, _badge: "control" not in title)
    assert badge == "WAIT", badge
    assert "stays shared, but no tabpilot server is connected now" in title, title
    # The server is back (the same port and token): the tab is the agent's again, and says so.
    async with ExtensionBridge(port=port, token="test-token") as bridge:
        assert await bridge.wait_connected(15)
        title, badge = await button_until(chromium, "/page/user", lambda title, _badge: "control" in title)
        assert badge == "ON" and "can see and control this tab" in title, (title, badge)


async def attached_pages(chromium: ExtensionChromium) -> list[str]:
    return await asyncio.to_thread(chromium.attached_pages)


async def test_closing_the_instance_lets_go_of_every_tab_until_the_agent_connects_the_browser_again(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """Closing the instance of the user's browser left the extension attached to every tab in its
    scope: Chrome kept its debugging bar, and the badges said ON, while no agent used them."""
    async with agent_tab(chromium, bridge, site) as (manager, instance, _):
        await button_on(chromium, "/page/user", "await toggleSharing(tab);")
        await wait_until(lambda: any("/page/user" in t.url for t in manager.tabs()), 10)
        assert site.url("/page/a") in await attached_pages(chromium)
        await manager.close_instance(instance.id)
        deadline = time.monotonic() + 10
        while await attached_pages(chromium) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert await attached_pages(chromium) == []
        for part in ("/page/user", "/page/a"):  # the user's tab and the agent's both stay open
            title, badge = await button_until(chromium, part, lambda title, _badge: "let go" in title)
            assert badge == "WAIT" and "the agent let go of this browser's tabs" in title, (title, badge)
        assert bridge.connected
        # Connected again, the agent has them again.
        await manager.connect_extension(bridge, timeout=5)
        assert {site.url("/page/a"), site.url("/page/user")} <= {t.url for t in manager.tabs()}
        assert {site.url("/page/a"), site.url("/page/user")} <= set(await attached_pages(chromium))
        title, badge = await button_until(chromium, "/page/user", lambda title, _badge: "control" in title)
        assert badge == "ON", (title, badge)


async def test_a_tab_the_user_shared_with_one_server_is_not_carried_over_to_another_they_pair_with(
    chromium: ExtensionChromium, bridge: ExtensionBridge
) -> None:
    """Pairing the extension with another server (another port or token) handed that server every
    tab the user had shared with the first one, unasked."""
    chromium.open(bridge.connect_url)
    async with TabManager() as manager:
        await manager.connect_extension(bridge, timeout=20)
        await button_on(chromium, "/page/user", "await toggleSharing(tab);")
        await wait_until(lambda: any("/page/user" in t.url for t in manager.tabs()), 10)
        async with ExtensionBridge(port=0, token="another-token") as other, TabManager() as elsewhere:
            chromium.open(other.connect_url)
            await elsewhere.connect_extension(other, timeout=20)
            await elsewhere.settle()
            assert all("/page/user" not in t.url for t in elsewhere.tabs())
            title, badge = await button_on(chromium, "/page/user")
            assert badge == "" and title == "tabpilot: click to share this tab with the agent", (title, badge)
            # Shared again, by the user, with this server: it gets it.
            await button_on(chromium, "/page/user", "await toggleSharing(tab);")
            await wait_until(lambda: any("/page/user" in t.url for t in elsewhere.tabs()), 10)
        assert user_tabs(chromium)


async def test_a_duplicate_the_user_makes_of_an_agent_tab_stays_the_users(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """Chrome's "Duplicate" on a tab of the agent's opens the user's own tab: not listed, and
    close_others leaves it open. It was the agent's when made within 3 s of the agent's input in
    that tab (taken for a middle click's tab): a duplicate comes with its page, a link's new tab
    with none yet. And it stayed in the agent's tab group, where Chrome puts it."""
    async with agent_tab(chromium, bridge, site) as (manager, _, tab):
        await manager.settle()
        before = {t.id for t in manager.tabs()}
        await press_key(tab, "Shift")  # the agent works in the tab as the user duplicates it
        duplicate = await asyncio.to_thread(
            chromium.in_extension, f"chrome.tabs.duplicate({tab.chrome_tab_id}).then((t) => t.id)"
        )
        await wait_until(
            lambda: len([p for p in chromium.pages() if p["url"] == site.url("/page/a")]) == 2, 10
        )
        await asyncio.sleep(1)  # what the extension would announce has come by now
        await manager.settle()
        assert {t.id for t in manager.tabs()} == before
        assert all(t.chrome_tab_id != duplicate for t in manager.tabs())
        grouped = f"chrome.tabs.get({duplicate}).then((t) => [t.groupId, chrome.tabGroups.TAB_GROUP_ID_NONE])"
        await wait_until(lambda: len(set(chromium.in_extension(grouped))) == 1, 5)  # in no group
        await manager.close_others(tab.id)
        assert len([p for p in chromium.pages() if p["url"] == site.url("/page/a")]) == 2


async def in_extension_until(chromium: ExtensionChromium, expression: str, timeout: float = 10) -> Any:
    """The value of `expression` in the extension's worker once it is truthy (the last one read when
    `timeout` seconds pass first), polled without holding up the event loop."""
    deadline = time.monotonic() + timeout
    value = await asyncio.to_thread(chromium.in_extension, expression)
    while not value and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        value = await asyncio.to_thread(chromium.in_extension, expression)
    return value


FOCUS_ASKED = """(() => {
  globalThis.focusAsked = [];
  const update = chrome.windows.update.bind(chrome.windows);
  chrome.windows.update = (windowId, info) => {
    if (info.focused) focusAsked.push(windowId);
    return update(windowId, info);
  };
  const send = chrome.debugger.sendCommand.bind(chrome.debugger);
  chrome.debugger.sendCommand = (target, method, params) => {
    if (method === "Page.bringToFront") focusAsked.push(`the window of tab ${target.tabId}`);
    return send(target, method, params);
  };
  return true;
})()"""
"""Record the windows the extension asks Chrome to focus (in `focusAsked`): headless Chromium
focuses none, every window reads as focused, and the last one opened stays the last focused."""


async def test_activating_a_tab_of_the_agents_leaves_the_window_the_user_works_in_in_front(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """Activating a tab of the agent's (and opening one, which activates it) brought its window to the
    front of the user's screen, over the window they were working in: Chrome's Page.bringToFront,
    which tabpilot sends, focuses the tab's window. The tab comes to the front of its window; its
    window to the front only from a window of the agent's tab group."""
    async with agent_tab(chromium, bridge, site) as (manager, _, tab):
        other = await manager.new_tab(site.url("/page/b"))
        assert await in_extension_until(
            chromium, f"chrome.tabs.get({other.chrome_tab_id}).then((t) => t.active)"
        )
        mine = json.dumps(site.url("/page/mine"))
        await asyncio.to_thread(
            chromium.in_extension, f"chrome.windows.create({{url: {mine}, focused: true}}).then(() => 1)"
        )
        await asyncio.to_thread(chromium.in_extension, FOCUS_ASKED)
        manager.activate(tab.id)
        assert await in_extension_until(
            chromium, f"chrome.tabs.get({tab.chrome_tab_id}).then((t) => t.active)"
        )
        page_c = json.dumps(site.url("/page/c"))
        await manager.new_tab(site.url("/page/c"))
        assert await in_extension_until(
            chromium, f"chrome.tabs.query({{active: true, url: {page_c}}}).then((ts) => ts.length === 1)"
        )
        assert await asyncio.to_thread(chromium.in_extension, "focusAsked") == []
        # The user is in a window of the agent's group (its tab b, moved to a window of its own):
        # the window of the agent's tab activated comes to the front.
        await asyncio.to_thread(
            chromium.in_extension,
            f"chrome.windows.create({{tabId: {other.chrome_tab_id}, focused: true}})"
            f".then(async () => {{ await group(await chrome.tabs.get({other.chrome_tab_id})); return 1; }})",
        )
        manager.activate(tab.id)
        asked = await in_extension_until(chromium, "focusAsked.length && focusAsked")
        assert asked == [tab.window_id], asked


async def worker_status(browser: ExtensionChromium) -> str:
    """What the extension's connect page says of its server ("" while its worker starts)."""
    try:
        return str(await asyncio.to_thread(browser.in_extension, "state.status"))
    except RuntimeError:  # its script has not run yet
        return ""


async def test_a_second_browser_paired_with_the_server_is_told_so_and_never_takes_the_place_of_the_first(
    browser_path: str, chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """A second browser (another Chrome profile with the extension, paired with the same server)
    was refused in words its worker cannot read: its connect page said no server answered, or the
    token was wrong. And while the first one's worker restarted, the second could connect in its
    place: the agent's tabs in the first browser went, the second's came, in the same instance."""
    async with agent_tab(chromium, bridge, site) as (manager, instance, _):
        before = [(t.id, t.target_id) for t in manager.tabs()]
        with extension_chromium(browser_path, site.url("/page/other")) as second:
            second.open(bridge.connect_url)
            deadline = time.monotonic() + 10
            while await worker_status(second) != "busy" and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            assert await worker_status(second) == "busy"
            # The first browser's worker stops, and the second tries again at once.
            reconnects: list[float] = []
            undo = bridge.on_connect(lambda: reconnects.append(time.monotonic()))
            await asyncio.to_thread(chromium.stop_service_worker)
            await asyncio.to_thread(
                second.in_extension, "state.nextAttempt = 0; state.socket = null; connect().then(() => true)"
            )
            await asyncio.sleep(1)
            assert await bridge.wait_connected(10)
            await wait_until(lambda: reconnects, 10)
            undo()
            assert instance.state == "open"
            assert [(t.id, t.target_id) for t in manager.tabs()] == before
            assert await worker_status(second) == "busy"


async def test_closing_the_agents_last_tab_when_it_is_the_last_of_the_users_chrome_keeps_chrome_open(
    chromium: ExtensionChromium, bridge: ExtensionBridge, site: LocalSite
) -> None:
    """The agent may close its last tab in the user's browser; when that is the last tab Chrome has,
    a desktop Chrome quits with it (headless Chromium stays, with no tab): a new tab page takes its
    place first."""
    async with agent_tab(chromium, bridge, site) as (manager, instance, tab):
        others = (
            f"chrome.tabs.query({{}}).then((ts) => Promise.all(ts.filter((t) => t.id !== {tab.chrome_tab_id})"
        )
        await asyncio.to_thread(
            chromium.in_extension, others + ".map((t) => chrome.tabs.remove(t.id)))).then(() => true)"
        )
        await wait_until(lambda: [t.id for t in manager.tabs()] == [tab.id], 10)
        await manager.close_tab(tab.id)
        await asyncio.sleep(1)
        assert chromium.proc.poll() is None, "Chrome quit"
        assert bridge.connected and instance.state == "open"
        (left,) = [p["url"] for p in chromium.pages()]
        assert left.startswith("chrome://new"), left  # Chromium's new tab page
        assert manager.tabs() == []
