"""Telemetry lets go of the Playwright objects it recorded, and Playwright still works around them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tabpilot import TabManager
from tabpilot._telemetry import ConsoleEntry, NetworkEntry, Telemetry
from tabpilot.site import LocalSite
from waiting import wait_until

FETCHES = 30


@pytest.fixture(scope="module")
async def recorded(browser_path: str) -> AsyncIterator[tuple[TabManager, Telemetry]]:
    telemetry = Telemetry()
    async with TabManager(browser_path=browser_path) as manager:
        manager.add_hooks(context=telemetry.attach_context, page=telemetry.attach_page)
        await manager.launch()
        yield manager, telemetry


def _live(page: Any, kind: str) -> int:
    """Objects of a kind Playwright's connection still maps (what this process keeps for it)."""
    objects = page._impl_obj._connection._objects.values()
    return sum(1 for o in objects if type(o).__name__ == kind)


async def test_finished_requests_and_console_handles_are_let_go_and_still_recorded(
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
    tab = await manager.new_tab(site.url("/memory"))
    await tab.page.get_by_text("Done").wait_for()
    await wait_until(lambda: len(telemetry.query("network_bodies", url="/api/text").entries) == FETCHES)
    await telemetry.settle()

    # Everything is recorded ...
    logs = [e for e in telemetry.query("logs", tab_id=tab.id).entries if isinstance(e, ConsoleEntry)]
    assert [e.text for e in logs][:2] == ["line 0 {i: 0}", "line 1 {i: 1}"]
    fetched = telemetry.query("network_waterfall", tab_id=tab.id, url="/api/text").entries
    assert len(fetched) == FETCHES and all(isinstance(e, NetworkEntry) and e.status == 200 for e in fetched)
    bodies = telemetry.query("network_bodies", tab_id=tab.id, url="/api/text").to_dict()["entries"]
    assert all(len(b["responseBody"]) == 100 for b in bodies)
    # ... and neither the fetches nor the console arguments are kept for Playwright any more.
    assert _live(tab.page, "JSHandle") == 0
    assert _live(tab.page, "Request") <= 1  # the document's request: the navigation's response
    assert _live(tab.page, "Response") <= 1
    assert telemetry.listener_errors == 0


async def test_playwright_calls_still_work_on_released_and_kept_objects(
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
    # A response we hold keeps working after telemetry let go of it.
    assert await fetch_response.text() == "abcdefg"
    assert (await fetch_response.request.response()) is not None
    # Navigations and later calls are unaffected.
    again = await tab.page.goto(site.url("/fetch?path=/api/text?n=3"))
    assert again is not None and again.status == 200
    await tab.page.get_by_text("Done").wait_for()
    await manager.close_tab(tab.id)
    await telemetry.settle()
    assert telemetry.listener_errors == 0
