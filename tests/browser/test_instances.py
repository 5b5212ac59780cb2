"""Many browsers at once: a launched one, a Chromium over CDP and a Playwright browser server,
and losing one of them without losing the rest. Everything runs on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import async_playwright
from starlette.requests import Request
from starlette.responses import Response
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.server import ServerConnection, serve

from support import (
    PlaywrightServer,
    RemoteChromium,
    free_port,
    launch_options_header,
    pid_alive,
    playwright_run_server,
    playwright_server,
    remote_chromium,
    silent_port,
    wait_until,
)
from tabpilot import (
    BrowserOptions,
    ConnectError,
    Instance,
    InstanceLostError,
    InstanceNotFoundError,
    TabManager,
    TabNotFoundError,
    evaluate,
    navigate,
)
from tabpilot.demo.site import LocalSite
from tabpilot.server.advice import event_line


@pytest.fixture
async def manager(browser_path: str) -> AsyncIterator[TabManager]:
    async with TabManager(browser_path=browser_path) as m:
        yield m


def events(manager: TabManager, since: int, type: str, instance: Instance | None = None) -> list[Any]:
    return [
        e
        for e in manager.events.history(since=since)
        if e.type == type and (instance is None or e.instance_id == instance.id)
    ]


async def test_three_kinds_of_browser_share_one_tab_id_space_and_tabs_need_no_instance_id(
    manager: TabManager, remote: RemoteChromium, pw_server: PlaywrightServer, site: LocalSite
) -> None:
    launched = await manager.launch()
    over_cdp = await manager.connect_cdp(remote.http)
    over_pw = await manager.connect_ws(pw_server.ws)
    assert [i.kind for i in manager.instances] == ["launched", "cdp", "playwright-server"]
    assert len({launched.id, over_cdp.id, over_pw.id}) == 3

    # Each starts with a tab: the launched and remote browsers' own blank tab, the server's new one.
    assert all(len(i.tabs) >= 1 for i in manager.instances)
    pages = {}
    for instance, path in ((launched, "/page/a"), (over_cdp, "/page/b"), (over_pw, "/")):
        tab = await manager.new_tab(site.url(path), instance_id=instance.id)
        pages[tab.id] = (instance, path)
    ids = [t.id for t in manager.tabs()]
    assert len(ids) == len(set(ids)), "tab ids are unique across instances"

    # Act on each tab by its id alone: the manager finds its instance.
    for tab_id, (instance, path) in pages.items():
        tab = manager.tab(tab_id)
        assert tab.instance_id == instance.id
        assert await tab.page.evaluate("location.pathname") == path
        assert manager.tab(str(tab_id)) is tab

    infos = {i.id: i for i in manager.instance_infos()}
    assert infos[launched.id].pid == launched.pid and infos[launched.id].pid is not None
    assert infos[over_cdp.id].endpoint == remote.http and infos[over_cdp.id].pid is None
    assert infos[over_pw.id].endpoint == pw_server.ws
    assert all(i.state == "open" for i in infos.values())
    assert infos[over_pw.id].tab_count == len(over_pw.tabs) == 2
    # The instance of the most recently activated tab is the default.
    assert [i.id for i in infos.values() if i.default] == [over_pw.id]
    listing = over_cdp.info().to_dict()
    assert (
        listing["kind"] == "cdp" and listing["health"] == "open" and listing["tabCount"] == len(over_cdp.tabs)
    )

    await manager.close_instance(over_cdp.id)
    await manager.close_instance(over_pw.id)
    assert [i.id for i in manager.instances] == [launched.id]


async def test_a_tab_another_cdp_client_opens_on_a_remote_browser_appears_and_its_close_is_seen(
    manager: TabManager, remote: RemoteChromium, site: LocalSite
) -> None:
    instance = await manager.connect_cdp(remote.http)
    since = manager.events.last_seq

    target_id = remote.open_tab(site.url("/page/c"))
    await wait_until(lambda: instance.tab_for_target(target_id) is not None)
    await manager.settle()
    tab = manager.tab(target_id)
    (opened,) = events(manager, since, "tab_opened", instance)
    assert opened.tab_id == tab.id and opened.data["cause"] == "external"
    assert not manager.info(tab).active, "tabs other clients open are tracked, not activated"

    await asyncio.to_thread(remote.close_tab, target_id)
    await wait_until(lambda: tab.closed)
    await manager.settle()  # the close is reported once the browser is known to be still there
    (closed,) = events(manager, since, "tab_closed", instance)
    assert (closed.tab_id, closed.data["by"]) == (tab.id, "external")
    await manager.close_instance(instance.id)


async def test_back_and_forward_answer_in_browsers_with_a_back_forward_cache_and_wait_for_the_load(
    manager: TabManager, remote: RemoteChromium, site: LocalSite
) -> None:
    # tabpilot's own browsers have Chromium's back/forward cache off (Playwright turns it off);
    # a browser it connects to has it on (the user's Chrome, a grid's, this one over CDP). A page
    # that cache restores whole fires no load event: going back must not wait for one.
    asked: list[str] = []

    async def slow_image(request: Request) -> Response:  # asked again each time the page loads
        asked.append(request.url.path)
        await asyncio.sleep(0.5)
        return Response(b"", media_type="image/gif", headers={"Cache-Control": "no-store"})

    site.set_route("/slow.gif", slow_image)
    site.set_content("/slow-image", "<title>Slow</title><img src='/slow.gif' alt=''>")
    # The launched browser loads the page again (and its image); the connected one restores it
    # whole, without a response of its own.
    browsers = ((await manager.launch(), 2, 200), (await manager.connect_cdp(remote.http), 1, None))
    for instance, loads, status in browsers:
        asked.clear()
        tab = await manager.new_tab(site.url("/slow-image"), instance_id=instance.id)
        await navigate(tab, "goto", site.url("/page/b"), timeout=5)
        back = await navigate(tab, "back", timeout=5)
        assert (back.url, back.status, back.stayed) == (site.url("/slow-image"), status, False)
        # Going back waited for the page's load: its image was asked for again, and is in.
        assert len(asked) == loads
        assert (await evaluate(tab, "() => document.readyState")).value == "complete"
        forward = await navigate(tab, "forward", timeout=5)
        assert (forward.url, forward.stayed) == (site.url("/page/b"), False)


async def test_closing_connected_instances_leaves_their_browsers_running(
    manager: TabManager, remote: RemoteChromium, pw_server: PlaywrightServer
) -> None:
    over_cdp = await manager.connect_cdp(remote.ws)  # the ws:// form of a CDP endpoint works too
    over_pw = await manager.connect_ws(pw_server.ws)
    remote_tab = await manager.new_tab(instance_id=over_cdp.id)
    since = manager.events.last_seq

    await manager.close_instance(over_cdp.id)
    await manager.close_instance(over_pw.id)

    assert over_cdp.state == over_pw.state == "closed"
    assert manager.instances == []
    closed = {e.tab_id: e.data["by"] for e in events(manager, since, "tab_closed")}
    # The CDP browser's tab stays open there: let go of, not closed.
    assert closed[remote_tab.id] == "released"
    assert remote_tab.target_id in [t["id"] for t in remote.targets()]
    assert remote.version()["Browser"], "the remote Chromium still answers"
    async with async_playwright() as p:
        browser = await p.chromium.connect(pw_server.ws, timeout=5000)
        assert browser.is_connected(), "the Playwright server still serves"
        await browser.close()


async def test_a_browser_is_connected_once_whatever_url_names_it_so_each_of_its_tabs_has_one_id(
    manager: TabManager, remote: RemoteChromium
) -> None:
    connected = await manager.connect_cdp(remote.http)
    tab_ids = [t.id for t in manager.tabs()]
    aliases = (remote.http, remote.http + "/", f"http://localhost:{remote.port}", remote.ws)
    for alias in aliases:
        with pytest.raises(ConnectError) as refused:
            await manager.connect_cdp(alias)
        assert (refused.value.reason, refused.value.instance_id) == ("already_connected", connected.id)
        assert f"is the one instance {connected.id} is connected to" in str(refused.value)
    assert manager.instances == [connected] and [t.id for t in manager.tabs()] == tab_ids

    # Closed, it may be connected again, by any of its URLs.
    await manager.close_instance(connected.id)
    again = await manager.connect_cdp(f"http://localhost:{remote.port}/")
    assert again.state == "open" and manager.instances == [again]


async def test_a_killed_remote_browser_takes_only_its_own_tabs_and_naming_them_fails_fast(
    manager: TabManager, browser_path: str, pw_server: PlaywrightServer, site: LocalSite
) -> None:
    launched = await manager.launch()
    survivor = await manager.connect_ws(pw_server.ws)
    with remote_chromium(browser_path) as doomed_browser:
        doomed = await manager.connect_cdp(doomed_browser.http)
        gone = [await manager.new_tab(site.url("/page/a"), instance_id=doomed.id), *doomed.tabs]
        gone_ids = sorted({t.id for t in gone})
        since = manager.events.last_seq

        doomed_browser.kill()
        await wait_until(lambda: doomed.state == "lost")
        await doomed.loss_judged()  # instance_lost comes once why is known (a busy machine: later)
        await manager.settle()

    closed = events(manager, since, "tab_closed", doomed)
    assert sorted(e.tab_id for e in closed) == gone_ids
    assert {e.data["by"] for e in closed} == {"crash"}
    (lost,) = events(manager, since, "instance_lost")
    assert lost.instance_id == doomed.id
    assert doomed.info().state == "lost" and doomed.info().lost_reason
    assert not any(t.instance_id == doomed.id for t in (manager.tab(i.id) for i in manager.tabs()))

    started = time.monotonic()
    with pytest.raises(TabNotFoundError) as error:
        manager.tab(gone_ids[-1])
    assert f"Instance {doomed.id} was lost" in str(error.value)
    with pytest.raises(InstanceLostError, match="was lost") as lost:
        await manager.new_tab(instance_id=doomed.id)
    assert time.monotonic() - started < 1, "a lost tab fails at once, it never waits for a timeout"
    # Nothing takes its place: the error names the tabs work can go on in.
    elsewhere = [info.id for info in manager.tabs()]
    assert elsewhere and lost.value.elsewhere == tuple(elsewhere)
    assert lost.value.advice.startswith(
        f"Use a tab of another instance (tab{'s' if len(elsewhere) > 1 else ''} "
    )

    # The others keep working, and connecting again works.
    for instance in (launched, survivor):
        tab = await manager.new_tab(site.url("/page/b"), instance_id=instance.id)
        assert await tab.page.title() == "Page b"
    with remote_chromium(browser_path) as fresh_browser:
        fresh = await manager.connect_cdp(fresh_browser.http)
        assert fresh.state == "open" and fresh.tabs
        await manager.close_instance(fresh.id)
    await manager.close_instance(doomed.id)
    assert doomed.id not in {i.id for i in manager.instances}


async def test_a_killed_playwright_server_browser_is_reported_lost(
    manager: TabManager, browser_path: str
) -> None:
    with playwright_server(browser_path) as server:
        instance = await manager.connect_ws(server.ws)
        tab_ids = [t.id for t in instance.tabs]
        since = manager.events.last_seq
        os.kill(server.browser_pid(), signal.SIGKILL)
        await wait_until(lambda: instance.state == "lost")
        await manager.settle()
    closed = events(manager, since, "tab_closed", instance)
    assert [(e.tab_id, e.data["by"]) for e in closed] == [(i, "crash") for i in tab_ids]


async def test_a_remote_browser_that_stops_answering_is_lost_within_10_s_but_a_busy_local_one_is_not(
    manager: TabManager, browser_path: str, site: LocalSite
) -> None:
    local = await manager.launch()
    assert local.pid is not None
    with remote_chromium(browser_path) as frozen:
        remote = await manager.connect_cdp(frozen.http)
        tab = await manager.new_tab(site.url("/page/a"), instance_id=remote.id)
        since = manager.events.last_seq
        # Frozen, both keep their sockets open and answer nothing: only the heartbeat can tell.
        os.kill(frozen.proc.pid, signal.SIGSTOP)
        os.kill(local.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            # Work under way on it ends with the loss (a reload waited out its 30 s, then advised
            # to retry), as work that a closed connection fails does.
            reloading = asyncio.ensure_future(navigate(tab, "reload"))
            await wait_until(lambda: remote.state == "lost", timeout=10)
            assert time.monotonic() - started < 10
            assert remote.lost_reason == f"the browser at {frozen.http} stopped answering"
            with pytest.raises(InstanceLostError, match="stopped answering") as lost:
                await asyncio.wait_for(reloading, 2)
            # Not "Its tabs are gone": a frozen browser still has them, and gives them back.
            assert "if its browser still runs, connecting to it again gives the tabs" in str(lost.value)
            closed = events(manager, since, "tab_closed", remote)
            assert tab.id in [e.tab_id for e in closed] and {e.data["by"] for e in closed} == {"crash"}
            # A local browser is judged by its process, which is there: busy is not dead.
            assert local.state == "open"
        finally:
            os.kill(local.pid, signal.SIGCONT)
            frozen.kill()
    kept = await manager.new_tab(site.url("/page/b"), instance_id=local.id)
    assert await kept.page.title() == "Page b"


async def test_a_cdp_instance_follows_the_browsers_own_context_not_another_clients(
    manager: TabManager, browser_path: str, site: LocalSite
) -> None:
    # Playwright lists the pages of a context another client made with the browser's own: the
    # instance took whichever page came first for its context, half the time the other client's,
    # and then followed the tabs opened there, not the browser's own.
    with remote_chromium(browser_path) as browser:
        browser.open_in_own_context(site.url("/page/b"))
        instance = await manager.connect_cdp(browser.http)
        await manager.settle()
        assert [t.url for t in instance.tabs] == ["about:blank"]
        browser.open_in_own_context(site.url("/page/a"))
        browser.open_tab(site.url("/page/c"))
        await wait_until(lambda: len(instance.tabs) == 2)
        await manager.settle()
        assert [t.url for t in instance.tabs] == ["about:blank", site.url("/page/c")]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
async def test_a_run_server_that_goes_away_takes_its_tabs_as_a_crash(browser_path: str, stop: int) -> None:
    options = BrowserOptions(cdp_headers=(launch_options_header(browser_path),))
    with playwright_run_server() as server:
        async with TabManager(options=options) as manager:
            instance = await manager.connect_ws(server.ws)
            await manager.new_tab(instance_id=instance.id)
            tab_ids = sorted(t.id for t in instance.tabs)
            since = manager.events.last_seq
            # SIGTERM: the server closes its browser in order (pages first, the browser still
            # answering meanwhile); SIGKILL: everything goes at once.
            os.killpg(server.proc.pid, stop)
            await wait_until(lambda: instance.state == "lost")
            closed = events(manager, since, "tab_closed", instance)
            assert sorted((e.tab_id, e.data["by"]) for e in closed) == [(i, "crash") for i in tab_ids]
            # The event follows once tabpilot knows why (the driver is asked: it answers).
            await wait_until(lambda: bool(events(manager, since, "instance_lost", instance)))
            assert [e.type for e in manager.events.history(since=since)][-1] == "instance_lost"
            assert events(manager, since, "instance_lost", instance)[0].data["reason"] == instance.lost_reason
            assert "driver" not in str(instance.lost_reason)


async def test_a_browser_server_that_cannot_launch_its_browser_says_so(browser_path: str) -> None:
    cases = [(True, "/nonexistent/chromium"), (False, browser_path)]  # without --unsafe it ignores ours
    for unsafe, executable in cases:
        options = BrowserOptions(cdp_headers=(launch_options_header(executable),))
        with playwright_run_server(unsafe=unsafe) as server:
            async with TabManager(options=options) as manager:
                with pytest.raises(ConnectError) as error:
                    await manager.connect_ws(server.ws)
                message = str(error.value)
                assert message.startswith(f"The Playwright browser server at {server.ws} could not launch")
                assert "xecutable doesn't exist" in message and "not in Playwright's protocol" not in message
                assert manager.instances == []


async def test_a_killed_local_default_browser_is_relaunched_by_the_next_call_that_needs_it(
    manager: TabManager, site: LocalSite
) -> None:
    first = await manager.launch()
    old_tab = await manager.new_tab(site.url("/page/a"))
    pid = first.pid
    assert pid is not None and manager.default_instance is first
    since = manager.events.last_seq

    os.kill(pid, signal.SIGKILL)
    # Whether or not Playwright has reported it yet, a check notices the dead process.
    await wait_until(lambda: manager.check_health() == [first])
    # A killed process closes its pipe a moment before it stops counting as running: the reason is
    # known once the loss is judged.
    await manager.losses_judged()
    with pytest.raises(InstanceLostError, match=f"{first.id} was lost .*killed") as lost:
        manager.resolve(None)
    # The library's way, not a server's ("a call without a tab id" does nothing in the library).
    assert lost.value.advice == (
        "TabManager.ensure_default() launches a new default browser in its place, with a blank tab."
    )

    replacement = await manager.ensure_default()
    assert replacement is not None and replacement.id != first.id
    assert manager.default_instance is replacement and replacement.kind == "launched"
    assert first.info().replaced_by == replacement.id
    (relaunched,) = events(manager, since, "instance_relaunched")
    assert relaunched.instance_id == replacement.id and relaunched.data["replaces"] == first.id
    assert "launched in place of lost instance" in event_line(relaunched)
    assert await manager.ensure_default() is None, "a healthy default is left alone"

    tab = manager.resolve(None)
    assert tab.instance_id == replacement.id
    await tab.page.goto(site.url("/page/b"))
    with pytest.raises(TabNotFoundError, match="was lost"):
        manager.tab(old_tab.id)
    await manager.settle()
    assert {e.data["by"] for e in events(manager, since, "tab_closed", first)} == {"crash"}
    await wait_until(lambda: not pid_alive(pid))


async def test_an_instance_closed_by_two_calls_at_the_same_time_is_closed_once(manager: TabManager) -> None:
    # Before, the call that started the close failed with a bare KeyError once the other had
    # taken the instance off the list.
    first = await manager.launch()
    second = await manager.launch()
    results = await asyncio.gather(
        manager.close_instance(second.id), manager.close_instance(second.id), return_exceptions=True
    )
    assert results[0] is None
    assert isinstance(results[1], InstanceNotFoundError) and f"'{second.id}' not found" in str(results[1])
    assert [i.id for i in manager.instances] == [first.id] and manager.default_instance is first
    assert second.state == "closed"


async def test_a_tab_asked_for_in_an_instance_closed_meanwhile_is_refused_at_once(
    manager: TabManager,
) -> None:
    # Before, the new tab's call never answered: Playwright's new_page waited for ever on the
    # browser closed under it.
    await manager.launch()
    refused = []
    for delay in (0, 0.01, 0.03):
        doomed = await manager.launch()

        async def close_soon(instance_id: str = doomed.id, delay: float = delay) -> None:
            await asyncio.sleep(delay)
            await manager.close_instance(instance_id)

        opened, _ = await asyncio.wait_for(
            asyncio.gather(manager.new_tab(instance_id=doomed.id), close_soon(), return_exceptions=True), 15
        )
        assert doomed.state == "closed"
        if isinstance(opened, Exception):  # a tab that opened first went with its instance
            assert isinstance(opened, InstanceLostError), opened
            assert f"Instance {doomed.id} was closed during the call" in str(opened)
            refused.append(delay)
    assert 0 in refused  # the close starts while Playwright opens the tab


async def test_calls_that_need_a_killed_default_browser_at_the_same_time_relaunch_it_once(
    manager: TabManager,
) -> None:
    # Before, each call relaunched it: two browsers, the first replacement left open and unused.
    first = await manager.launch()
    assert first.pid is not None
    since = manager.events.last_seq
    os.kill(first.pid, signal.SIGKILL)
    await wait_until(lambda: manager.check_health() == [first])
    replacements = await asyncio.gather(*(manager.ensure_default() for _ in range(3)))
    (replacement,) = {r.id for r in replacements if r is not None}
    assert [i.id for i in manager.instances] == [first.id, replacement]
    assert [e.instance_id for e in events(manager, since, "instance_relaunched")] == [replacement]
    assert await manager.ensure_default() is None


async def test_a_browser_that_quits_in_order_is_reported_as_quit_and_one_killed_as_killed(
    manager: TabManager, browser_path: str, site: LocalSite
) -> None:
    """A browser that quits (its last window closed, told to quit) closes its tabs first; a killed
    one takes them along. Either way its tabs leave as a crash (the SPEC), but the reason differs."""
    quitting = await manager.launch()
    await manager.new_tab(site.url("/page/a"), instance_id=quitting.id)
    with remote_chromium(browser_path) as remote_browser:
        remote = await manager.connect_cdp(remote_browser.http)
        await manager.new_tab(site.url("/page/b"), instance_id=remote.id)
        since = manager.events.last_seq
        # What the browser does when its user quits it.
        remote_browser.quit()
        page = quitting.tabs[0].page
        with contextlib.suppress(Exception):
            await (await page.context.new_cdp_session(page)).send("Browser.close")
        await wait_until(lambda: quitting.state == "lost" and remote.state == "lost")
        await manager.losses_judged()
    for instance in (quitting, remote):
        assert instance.lost_reason is not None and instance.lost_reason.startswith(
            "the browser quit, closing its tabs first ("
        ), instance.lost_reason
        assert {e.data["by"] for e in events(manager, since, "tab_closed", instance)} == {"crash"}
        (lost,) = events(manager, since, "instance_lost", instance)
        assert lost.data["reason"] == instance.lost_reason

    killed = await manager.launch()
    assert killed.pid is not None
    await manager.new_tab(site.url("/page/c"), instance_id=killed.id)
    os.kill(killed.pid, signal.SIGKILL)
    await wait_until(lambda: killed.state == "lost")
    await manager.losses_judged()
    assert killed.lost_reason == f"the browser process (pid {killed.pid}) ended: it was killed or crashed"


async def test_unreachable_and_wrong_protocol_endpoints_fail_fast_with_clear_errors(
    manager: TabManager, remote: RemoteChromium, pw_server: PlaywrightServer, site: LocalSite
) -> None:
    cases: list[tuple[Callable[[], Any], str]] = [
        (lambda: manager.connect_cdp(f"http://127.0.0.1:{free_port()}"), "unreachable"),
        (lambda: manager.connect_ws(f"ws://127.0.0.1:{free_port()}/x"), "unreachable"),
        (lambda: manager.connect_ws(remote.http), "connect it over CDP instead"),
        (lambda: manager.connect_ws(remote.ws), "Chrome DevTools (CDP) URL"),
        (lambda: manager.connect_cdp(site.url("/")), "not as a Chrome DevTools endpoint"),
        (lambda: manager.connect_cdp(pw_server.ws), "not as a Chrome DevTools endpoint"),
        (lambda: manager.connect_ws(site.url("/").replace("http", "ws")), "not in Playwright's protocol"),
        (lambda: manager.connect_cdp("127.0.0.1:9222"), "not a CDP endpoint URL"),
        (lambda: manager.connect_cdp("http:///json"), "'http:///json' names no host"),
        (lambda: manager.connect_ws("ws://"), "'ws://' names no host"),
    ]
    for connect, message in cases:
        started = time.monotonic()
        with pytest.raises(ConnectError, match=message.replace("(", r"\(").replace(")", r"\)")):
            await connect()
        assert time.monotonic() - started < 3
    with silent_port() as port:
        # Each within its timeout (over CDP it was twice that: the browser's id was asked for
        # first, and then Playwright asked again).
        silent: list[Callable[[], Awaitable[Instance]]] = [
            lambda: manager.connect_cdp(f"http://127.0.0.1:{port}", timeout=1),
            lambda: manager.connect_ws(f"ws://127.0.0.1:{port}/x", timeout=1),
        ]
        for connect in silent:
            started = time.monotonic()
            with pytest.raises(ConnectError, match="no answer within 1 s"):
                await connect()
            assert time.monotonic() - started < 1.9
    assert manager.instances == []
    # A failed attempt leaves nothing behind: the next connect works.
    instance = await manager.connect_ws(pw_server.ws)
    assert instance.state == "open"


async def test_launch_gives_an_isolated_profile_unless_a_profile_directory_is_kept(
    manager: TabManager, site: LocalSite, tmp_path: Path
) -> None:
    kept_dir = tmp_path / "profile"
    kept = await manager.launch(user_data_dir=kept_dir)
    isolated = await manager.launch()
    assert kept.info().user_data_dir == str(kept_dir.resolve()) and isolated.info().user_data_dir is None

    page = (await manager.new_tab(site.url("/"), instance_id=kept.id)).page
    await page.evaluate("localStorage.setItem('who', 'kept')")
    other = (await manager.new_tab(site.url("/"), instance_id=isolated.id)).page
    assert await other.evaluate("localStorage.getItem('who')") is None

    await manager.close_instance(kept.id)
    assert kept_dir.is_dir(), "a given profile directory is kept"
    again = await manager.launch(user_data_dir=kept_dir)
    page = (await manager.new_tab(site.url("/"), instance_id=again.id)).page
    assert await page.evaluate("localStorage.getItem('who')") == "kept"


async def test_a_browser_that_fails_to_start_says_how_in_its_own_words(tmp_path: Path) -> None:
    """Two stand-ins for Chromium, really started by Playwright: one exits, one never answers."""
    noise = "Failed to call method: org.freedesktop.DBus.NameHasOwner: unknown error type:"
    exits = tmp_path / "exits"
    exits.write_text(
        "#!/bin/sh\n"
        f"echo '{noise}' >&2\n"
        "echo '[1124/153854.000000:ERROR:ozone_platform_x11.cc(240)] Missing X server' >&2\n"
        "exit 3\n"
    )
    hangs = tmp_path / "hangs"
    hangs.write_text(
        f"#!/bin/sh\necho '{noise}' >&2\necho 'waiting for a license server' >&2\nexec sleep 30\n"
    )
    for script in (exits, hangs):
        script.chmod(0o755)
    async with TabManager() as manager:
        with pytest.raises(ConnectError) as exited:
            await manager.launch(browser_path=str(exits))
        assert (
            str(exited.value.fact)
            == f"Chromium ({exits}) failed to start: it exited with code 3.\n  Missing X server\n"
        )
        assert exited.value.advice.startswith("A headed browser needs a display")

        with pytest.raises(ConnectError) as hung:
            await manager.launch(browser_path=str(hangs), timeout=2)
        assert str(hung.value.fact) == (
            f"Chromium ({hangs}) failed to start: it did not come up in time (Timeout 2000ms exceeded)."
            "\n  waiting for a license server\n"
        )
        assert manager.instances == []


@contextlib.contextmanager
def _long_temp_dir(length: int) -> Iterator[Path]:
    """A new directory whose path is `length` characters long (in /tmp: pytest's own temp dirs can
    be longer than that), removed after."""
    with tempfile.TemporaryDirectory(prefix="tabpilot-", dir="/tmp") as base:
        made = Path(base) / ("x" * (length - len(base) - 1))
        made.mkdir()
        yield made


@pytest.mark.parametrize(("length", "private"), [(50, True), (56, False)])
async def test_a_browser_launches_under_a_long_temp_dir_that_it_can_use_and_leaves_it_empty(
    browser_path: str, site: LocalSite, monkeypatch: pytest.MonkeyPatch, length: int, private: bool
) -> None:
    """Chromium makes a Unix socket in its TMPDIR, in a directory of 28 characters, and a socket's
    path is at most 107 characters long: with a TMPDIR of up to 62 characters it starts. The
    driver's private temp dir in the user's is used where the socket still fits under it, not
    where it would not (the driver's dir of 25 characters made every TMPDIR of 38 to 62 characters
    fail); either way nothing is left there once the manager stops."""
    with _long_temp_dir(length) as temp:
        monkeypatch.setenv("TMPDIR", str(temp))
        monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
        async with TabManager(browser_path=browser_path) as manager:
            await manager.launch()
            tab = await manager.new_tab(site.url("/page/a"))
            assert await tab.page.evaluate("document.title") == "Page a"
            used = [p.name for p in temp.iterdir() if p.name.startswith("tp-")]
            assert len(used) == (1 if private else 0), sorted(p.name for p in temp.iterdir())
        assert not list(temp.iterdir()), "the temp dir is left as it was"


async def test_a_temp_dir_too_long_for_chromium_is_named_as_the_reason_it_failed_to_start(
    browser_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chromium itself quits on a TMPDIR of 63 characters or more: the error says to use a shorter
    one, and the directory Chromium made there for its socket is not left behind."""
    with _long_temp_dir(70) as temp:
        monkeypatch.setenv("TMPDIR", str(temp))
        monkeypatch.setattr(tempfile, "tempdir", None)
        async with TabManager(browser_path=browser_path) as manager:
            with pytest.raises(ConnectError) as failed:
                await manager.launch()
        assert not list(temp.iterdir()), "the temp dir is left as it was"
    assert "Socket path too long" in failed.value.fact
    assert failed.value.advice.startswith("The path of its temp dir (TMPDIR) is too long"), (
        failed.value.advice
    )


async def test_a_browser_whose_process_ends_while_it_starts_fails_the_launch_without_waiting_for_the_timeout(
    tmp_path: Path,
) -> None:
    """Playwright notices a browser that ends while it is launched only when the pipe to it
    closes, or at the launch timeout: a Chromium killed as it set up its first page left the
    launch waiting 30 s. The stand-in's process ends while a child of it keeps the pipe open.
    Without the process watch this launch fails only at its timeout (60 s)."""
    ends = tmp_path / "ends"
    ends.write_text(
        '#!/bin/sh\nprintf "%s\\n" "$@" > "$0.args"\nsleep 60 &\necho $! > "$0.child"\nsleep 0.5\nexit 0\n'
    )
    ends.chmod(0o755)
    try:
        async with TabManager() as manager:
            with pytest.raises(ConnectError) as ended:
                await manager.launch(browser_path=str(ends), timeout=60)
            assert re.fullmatch(
                rf"Chromium \({re.escape(str(ends))}\) failed to start: its process \(pid \d+\) ended while "
                r"it was starting \(it was killed, crashed or quit\)\.",
                str(ended.value.fact),
            )
            assert ended.value.advice.startswith("Try again: a launch starts a new browser.")
            assert manager.instances == []
            # The rest of the stand-in goes too, as a killed browser's does: else Playwright's
            # driver would wait for it when it stops.
            os.kill(int((tmp_path / "ends.child").read_text()), signal.SIGKILL)
            args = (tmp_path / "ends.args").read_text().splitlines()
            profile = next(a.split("=", 1)[1] for a in args if a.startswith("--user-data-dir="))
            assert not Path(profile).exists(), "the temporary profile is removed"
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((tmp_path / "ends.child").read_text()), signal.SIGKILL)


async def test_a_browser_that_goes_away_while_it_is_set_up_fails_with_a_clear_connect_error(
    manager: TabManager, browser_path: str
) -> None:
    """A CDP relay in front of a real Chromium drops both sides at tabpilot's first command of its
    own (after Playwright's handshake), as a browser that dies in that moment would."""
    with remote_chromium(browser_path) as remote:
        upstream = remote.ws

        async def relay(client: ServerConnection) -> None:
            async with ws_connect(upstream, max_size=None) as browser:

                async def down() -> None:
                    async for message in browser:
                        await client.send(message)

                forwarding = asyncio.ensure_future(down())
                try:
                    async for message in client:
                        if "Target.setDiscoverTargets" in str(message):
                            return
                        await browser.send(message)
                finally:
                    forwarding.cancel()

        async with serve(relay, "127.0.0.1", 0, max_size=None) as server:
            port = next(iter(server.sockets)).getsockname()[1]
            with pytest.raises(ConnectError) as error:
                await manager.connect_cdp(f"ws://127.0.0.1:{port}/devtools/browser/relay")
        assert str(error.value.fact).startswith("The browser went away while tabpilot was setting it up (")
        assert error.value.advice == (
            f"Check that the browser at ws://127.0.0.1:{port}/devtools/browser/relay still runs, then connect again."
        )
        assert manager.instances == []
        assert remote.version()["Browser"], "the browser itself is fine"


async def test_closing_a_browser_closes_the_isolated_contexts_opened_in_it_as_closed_not_lost(
    browser_path: str, site: LocalSite
) -> None:
    # They were lost as if the browser had crashed (their tabs "closed by crash"), and one stayed
    # the default: the next new_tab failed, and nothing replaced it.
    async with TabManager(browser_path=browser_path) as m:
        first = await m.launch()
        inside = await m.attach_isolated(first)
        tab = await m.new_tab(site.url("/page/b"), instance_id=inside.id)
        await m.close_instance(first.id)
        assert m.instance_infos() == []
        (closed,) = [e for e in m.events.history(tab_id=tab.id) if e.type == "tab_closed"]
        assert closed.data["by"] == "tool", closed.data
        assert not [e for e in m.events.history() if e.type == "instance_lost"]
        again = await m.launch()
        assert (await m.new_tab(site.url("/page/a"))).instance_id == again.id


async def test_work_on_a_tab_held_past_its_managers_close_says_the_manager_is_closed(
    browser_path: str,
) -> None:
    # A Tab kept in a variable, used after the `async with` block: "No tab is open: open one.",
    # and opening one failed (the manager was closed).
    async with TabManager(browser_path=browser_path) as m:
        await m.launch()
        tab = await m.new_tab()
    for work in (tab.snapshot, lambda: evaluate(tab, "() => 1"), lambda: m.close_tab(tab.id)):
        with pytest.raises(TabNotFoundError) as gone:
            await work()
        said = str(gone.value)
        assert "It was closed as its manager shut down" in said and "This TabManager is closed" in said, said
        assert "open one" not in said and "Make a new TabManager" in said, said


async def test_a_tab_asked_of_a_closed_manager_says_the_manager_is_closed(browser_path: str) -> None:
    # It said "No tab is open: open one.", and opening one failed: the manager was closed.
    async with TabManager(browser_path=browser_path) as m:
        await m.launch()
        tab = await m.new_tab()
    with pytest.raises(TabNotFoundError) as gone:
        m.tab(tab.id)
    assert "This TabManager is closed" in str(gone.value) and "open one" not in str(gone.value), str(
        gone.value
    )
