"""Telemetry takes its data from CDP sessions, so Playwright keeps nothing alive for it."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import JSHandle, Request, Response

from support import wait_until
from tabpilot import ConsoleEntry, NetworkEntry, Query, TabManager, Telemetry
from tabpilot.demo.site import LocalSite

FETCHES = 30


@pytest.fixture(scope="module")
async def recorded(browser_path: str) -> AsyncIterator[tuple[TabManager, Telemetry]]:
    telemetry = Telemetry()
    async with TabManager(browser_path=browser_path) as manager:
        manager.add_target_hook(telemetry.attach_target)
        await manager.launch()
        yield manager, telemetry


def _live(kind: type) -> int:
    """Objects of a Playwright API type alive in this process."""
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, kind))


async def test_requests_and_console_arguments_are_recorded_without_playwright_objects(
    recorded: tuple[TabManager, Telemetry], site: LocalSite
) -> None:
    manager, telemetry = recorded
    site.set_content(
        "/memory",
        "<link rel='icon' href='data:,'><p id='done'></p><script>"
        f"for (let i = 0; i < {FETCHES}; i++) console.log('line', i, {{i}});"
        f"Promise.all(Array.from({{length: {FETCHES}}}, (_, i) => fetch('/api/text?n=100&i=' + i)"
        ".then((r) => r.text()))).then(() => { document.getElementById('done').textContent = 'Done'; });"
        "</script>",
    )
    before = (_live(Request), _live(Response), _live(JSHandle))
    tab = await manager.new_tab(site.url("/memory"))
    await tab.page.get_by_text("Done").wait_for()
    await wait_until(
        lambda: len(telemetry.query(Query("network_bodies", url="/api/text")).entries) == FETCHES
    )
    await telemetry.settle()

    # Everything is recorded ...
    logs = [e for e in telemetry.query(Query("logs", tab_id=tab.id)).entries if isinstance(e, ConsoleEntry)]
    assert [e.text for e in logs][:2] == ["line 0 {i: 0}", "line 1 {i: 1}"]
    fetched = telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/text")).entries
    assert len(fetched) == FETCHES and all(isinstance(e, NetworkEntry) and e.status == 200 for e in fetched)
    bodies = telemetry.query(Query("network_bodies", tab_id=tab.id, url="/api/text")).to_dict()["entries"]
    assert all(len(b["responseBody"]) == 100 for b in bodies)
    # ... and no request, response or console argument of Playwright's was made for it: the page's
    # own navigation is the only one (Playwright's goto answers with its response).
    after = (_live(Request), _live(Response), _live(JSHandle))
    assert after[0] - before[0] <= 1 and after[1] - before[1] <= 1 and after[2] == before[2]
    assert telemetry.listener_errors == 0


async def test_playwright_calls_keep_working_next_to_telemetry(
    recorded: tuple[TabManager, Telemetry], site: LocalSite
) -> None:
    manager, telemetry = recorded
    tab = await manager.new_tab(site.url("/console?msg=start"))
    async with tab.page.expect_response(lambda r: r.url.startswith(site.url("/api/text"))) as waited:
        response = await tab.page.goto(site.url("/fetch?path=/api/text?n=7"))
        await tab.page.get_by_text("Done").wait_for()
    assert response is not None and response.ok
    fetch_response = await waited.value
    await telemetry.settle()
    assert await fetch_response.text() == "abcdefg"
    assert (await fetch_response.request.response()) is not None
    again = await tab.page.goto(site.url("/fetch?path=/api/text?n=3"))
    assert again is not None and again.status == 200
    await wait_until(lambda: telemetry.query(Query("network_bodies", tab_id=tab.id, url="n=3")).entries)
