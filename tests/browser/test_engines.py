"""The same instance tests on every engine a browser can come from: a local launch, a Chromium
over CDP, a Playwright browser server and a Selenium Grid 4 (hub + node). Everything runs on
127.0.0.1; the grid is real (see the `grid` fixture)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import pytest

from support import playwright_server, ref_of, remote_chromium, wait_until
from tabpilot import (
    ActionError,
    ConsoleEntry,
    Instance,
    InstanceLostError,
    NetworkEntry,
    Query,
    TabEvent,
    TabManager,
    TabNotFoundError,
    Telemetry,
    click,
    navigate,
    wait_for,
)
from tabpilot.demo.site import LocalSite

ENGINES = ["launched", "cdp", "playwright-server", "grid"]
LOST_WITHIN = 10.0
"""Seconds within which a lost browser must be declared lost (SPEC 7)."""


@dataclass
class Engine:
    kind: str
    manager: TabManager
    instance: Instance
    telemetry: Telemetry
    lose: Callable[[], None]
    """Lose the browser as it happens in the field: kill it, stop its server, end its grid session."""


@pytest.fixture(params=ENGINES)
async def engine(request: pytest.FixtureRequest, browser_path: str) -> AsyncIterator[Engine]:
    kind: str = request.param
    telemetry = Telemetry()
    with contextlib.ExitStack() as outside:
        async with TabManager(browser_path=browser_path) as manager:
            manager.add_target_hook(telemetry.attach_target)
            lose: Callable[[], None]
            if kind == "launched":
                instance = await manager.launch()
                pid = instance.pid
                assert pid is not None
                lose = lambda: os.kill(pid, signal.SIGKILL)  # noqa: E731
            elif kind == "cdp":
                remote = outside.enter_context(remote_chromium(browser_path))
                instance = await manager.connect_cdp(remote.http)
                lose = remote.kill
            elif kind == "playwright-server":
                server = outside.enter_context(playwright_server(browser_path))
                instance = await manager.connect_ws(server.ws)
                # Stopped as a service manager stops it: it closes its browser in order, then exits.
                lose = lambda: os.killpg(server.proc.pid, signal.SIGTERM)  # noqa: E731
            else:
                grid = request.getfixturevalue("grid")
                instance = await manager.connect_grid(grid.url)
                session_id = instance.endpoint.rsplit("/", 1)[-1] if instance.endpoint else ""
                assert session_id in grid.session_ids()
                lose = lambda: grid.delete_session(session_id)  # noqa: E731
            assert instance.kind == kind
            yield Engine(kind, manager, instance, telemetry, lose)


def events(manager: TabManager, since: int, type: str, instance: Instance) -> list[TabEvent]:
    return [e for e in manager.events.history(since=since) if e.type == type and e.instance_id == instance.id]


async def test_tabs_are_listed_opened_navigated_and_snapshotted(engine: Engine, site: LocalSite) -> None:
    manager, instance = engine.manager, engine.instance
    first = [t.id for t in instance.tabs]
    assert first, "every engine starts with a tab to work in"
    tab = await manager.new_tab(instance_id=instance.id)
    assert manager.active_tab(instance.id) is tab

    went = await navigate(tab, "goto", site.url("/page/a"))
    assert (went.url, went.status) == (site.url("/page/a"), 200)
    await wait_until(lambda: manager.info(tab).title == "Page a")
    listed = manager.tabs(instance.id)
    assert [i.id for i in listed] == [*first, tab.id]
    assert {i.instance_id for i in listed} == {instance.id}
    assert next(i for i in listed if i.id == tab.id).url == site.url("/page/a")

    snapshot = await tab.snapshot()
    assert 'heading "Page a"' in snapshot.text
    assert ref_of(snapshot, "heading").startswith(f"{tab.id}e")
    assert [i.to_dict()["kind"] for i in manager.instance_infos()] == [engine.kind]


async def test_a_click_that_opens_a_tab_reports_it_with_its_opener_in_the_background(
    engine: Engine, site: LocalSite
) -> None:
    manager, instance = engine.manager, engine.instance
    home = await manager.new_tab(site.url("/"), instance_id=instance.id)
    since = manager.events.last_seq

    result = await click(home, ref_of(await home.snapshot(), "Open A in new tab"))
    (opened_id,) = result.opened_tab_ids
    await manager.settle()

    opened = manager.tab(opened_id)
    await wait_until(lambda: opened.url == site.url("/page/a"))
    info = manager.info(opened)
    assert (info.opener_id, info.active, info.instance_id) == (home.id, False, instance.id)
    assert manager.active_tab(instance.id) is home
    (event,) = events(manager, since, "tab_opened", instance)
    assert (event.tab_id, event.data["openerId"], event.data["cause"]) == (opened_id, home.id, "link")


async def test_telemetry_records_console_and_network_of_a_background_tab(
    engine: Engine, site: LocalSite
) -> None:
    manager, instance, telemetry = engine.manager, engine.instance, engine.telemetry
    active = await manager.new_tab(site.url("/page/a"), instance_id=instance.id)
    background = await manager.new_tab(
        site.url("/fetch?path=/api/text?n=5"), background=True, instance_id=instance.id
    )
    await background.page.get_by_text("Done").wait_for()
    assert manager.active_tab(instance.id) is active

    logs = telemetry.query(Query("logs", tab_id=background.id)).entries
    assert [(e.tab_id, e.text) for e in logs if isinstance(e, ConsoleEntry)] == [
        (background.id, "fetched /api/text?n=5 200")
    ]
    await wait_until(
        lambda: len(telemetry.query(Query("network_waterfall", tab_id=background.id)).entries) == 2
    )
    network = telemetry.query(Query("network_waterfall", tab_id=background.id)).entries
    assert [(e.url.removeprefix(site.origin), e.status) for e in network if isinstance(e, NetworkEntry)] == [
        ("/fetch?path=/api/text?n=5", 200),
        ("/api/text?n=5", 200),
    ]
    assert telemetry.listener_errors == 0


async def test_losing_the_browser_takes_only_its_tabs_with_crash_events_and_fails_fast(
    engine: Engine, site: LocalSite, request: pytest.FixtureRequest
) -> None:
    manager, doomed = engine.manager, engine.instance
    survivors = [await manager.launch()]
    if engine.kind == "grid":
        survivors.append(await manager.connect_grid(request.getfixturevalue("grid").url))
    tab = await manager.new_tab(site.url("/page/a"), instance_id=doomed.id)
    gone = sorted(t.id for t in doomed.tabs)
    # An action under way when the browser goes must end then too, not at its own timeout.
    waiting = asyncio.ensure_future(wait_for(tab, text="never shown", timeout=20))
    await asyncio.sleep(0.3)
    since = manager.events.last_seq

    started = time.monotonic()
    await asyncio.to_thread(engine.lose)
    await wait_until(lambda: doomed.state == "lost", timeout=LOST_WITHIN)
    lost_at = time.monotonic()
    assert lost_at - started < LOST_WITHIN
    await manager.settle()

    closed = events(manager, since, "tab_closed", doomed)
    assert sorted(e.tab_id for e in closed if e.tab_id is not None) == gone
    assert {e.data["by"] for e in closed} == {"crash"}
    await doomed.loss_judged()  # a connected browser's event waits for the driver check
    (lost,) = events(manager, since, "instance_lost", doomed)
    assert lost.data["reason"] == doomed.lost_reason
    with contextlib.suppress(ActionError, InstanceLostError, TabNotFoundError):
        await asyncio.wait_for(waiting, 3)  # fails, or ends as an action whose tab closed
    assert time.monotonic() - lost_at < 3

    started = time.monotonic()
    with pytest.raises(TabNotFoundError, match=f"Instance {doomed.id} was lost"):
        manager.tab(tab.id)
    with pytest.raises((InstanceLostError, TabNotFoundError)):
        await tab.snapshot()
    with pytest.raises(InstanceLostError, match="was lost"):
        await manager.new_tab(instance_id=doomed.id)
    assert time.monotonic() - started < 3, "a lost tab fails at once, never at a timeout"

    for survivor in survivors:
        kept = await manager.new_tab(site.url("/page/b"), instance_id=survivor.id)
        assert 'heading "Page b"' in (await kept.snapshot()).text
        assert survivor.state == "open"
    await manager.close_instance(doomed.id)
    assert [i.id for i in manager.instances] == [s.id for s in survivors]


async def test_a_grid_instance_id_in_use_is_refused_and_leaves_no_session(
    browser_path: str, request: pytest.FixtureRequest
) -> None:
    grid = request.getfixturevalue("grid")
    async with TabManager(browser_path=browser_path) as manager:
        first = await manager.connect_grid(grid.url)
        before = set(grid.session_ids())
        with pytest.raises(ValueError, match="in use"):
            await manager.connect_grid(grid.url, instance_id=first.id)
        assert set(grid.session_ids()) == before, "no session is left for it"
        assert [i.id for i in manager.instances] == [first.id] and first.state == "open"
    assert first.endpoint is not None
    ended = first.endpoint.rsplit("/", 1)[-1]
    # the hub learns of an ended session from its node a moment after the DELETE is answered
    assert ended not in grid.sessions_end(keep=before - {ended}), "closing ended the session"
