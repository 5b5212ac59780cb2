"""Per-tab telemetry on a real Chromium: every entry tagged with its tab, bounded, queryable per tab."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from playwright.async_api import Error as PlaywrightError
from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.websockets import WebSocket

from support import free_port, wait_until
from tabpilot import (
    BodyEntry,
    ConsoleEntry,
    ErrorEntry,
    Instance,
    NetworkEntry,
    Query,
    Tab,
    TabManager,
    TargetSession,
    Telemetry,
    WebSocketEntry,
    navigate,
)
from tabpilot.demo.site import LocalSite

Recorder = Callable[..., Awaitable[tuple[Telemetry, Instance]]]


class _Hooks:
    """Sends each instance's tabs to the telemetry of the test that created the instance."""

    def __init__(self) -> None:
        self.by_instance: dict[str, Telemetry] = {}
        self.late: dict[str, Callable[[TargetSession, Tab], Callable[[], None]]] = {}
        """Instead of a Telemetry: a hook of the test's own (one that attaches late)."""

    def attach_target(self, session: TargetSession, tab: Tab) -> Callable[[], None]:
        late = self.late.get(tab.instance_id)
        if late is not None:
            return late(session, tab)
        telemetry = self.by_instance.get(tab.instance_id)
        return telemetry.attach_target(session, tab) if telemetry else (lambda: None)


@pytest.fixture(scope="module")
async def hooks() -> _Hooks:
    return _Hooks()


@pytest.fixture(scope="module")
async def manager(browser_path: str, hooks: _Hooks) -> AsyncIterator[TabManager]:
    async with TabManager(browser_path=browser_path) as m:
        m.add_target_hook(hooks.attach_target)
        await m.launch()
        yield m


@pytest.fixture
async def record(manager: TabManager, hooks: _Hooks) -> AsyncIterator[Recorder]:
    """Make a Telemetry and a fresh browser context recorded by it, as an instance of its own."""
    made: list[Instance] = []

    async def make(**options: Any) -> tuple[Telemetry, Instance]:
        telemetry = Telemetry(**options)
        instance = await manager.attach_isolated(manager.instances[0])
        hooks.by_instance[instance.id] = telemetry
        made.append(instance)
        return telemetry, instance

    yield make
    for instance in made:
        await manager.close_instance(instance.id)


async def open_tab(manager: TabManager, instance: Instance, url: str, *, background: bool = False) -> Tab:
    return await manager.new_tab(url, background=background, instance_id=instance.id)


def texts(telemetry: Telemetry, **query: Any) -> list[str]:
    return [e.text for e in telemetry.query(Query("logs", **query)).entries if isinstance(e, ConsoleEntry)]


def rows_by_url(telemetry: Telemetry, tab_id: int) -> dict[str, NetworkEntry]:
    """A tab's finished (or cut short) requests, by URL."""
    entries = telemetry.query(Query("network_waterfall", tab_id=tab_id)).entries
    return {e.url: e for e in entries if isinstance(e, NetworkEntry)}


async def test_observing_a_background_tab_returns_only_its_entries_each_tagged_with_its_id(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    background = await open_tab(manager, instance, site.url("/fetch?path=/api/text?n=5"))
    await background.page.get_by_text("Done").wait_for()
    active = await open_tab(manager, instance, site.url("/fetch?path=/api/echo"))
    await active.page.get_by_text("Done").wait_for()
    # The browser reports a request finished a little after the page has used its response.
    await wait_until(lambda: telemetry.query(Query("network_waterfall")).returned_entries == 4)
    assert instance.active_tab is active

    logs = telemetry.query(Query("logs", tab_id=background.id), active_tab_id=active.id)
    assert [e.to_dict()["tabId"] for e in logs.entries] == [background.id]
    assert texts(telemetry, tab_id=background.id) == ["fetched /api/text?n=5 200"]
    assert logs.currently_tracked_tab == active.id
    assert logs.filtered_by_tab == background.id
    assert logs.total_entries_all_tabs == 2
    assert logs.returned_entries == 1

    network = telemetry.query(Query("network_waterfall", tab_id=background.id))
    urls = [e.url.removeprefix(site.origin) for e in network.entries if isinstance(e, NetworkEntry)]
    assert urls == ["/fetch?path=/api/text?n=5", "/api/text?n=5"]
    assert {e.tab_id for e in network.entries} == {background.id}
    api = network.entries[-1]
    assert isinstance(api, NetworkEntry)
    assert (api.method, api.status, api.resource_type, api.response_body_size) == ("GET", 200, "fetch", 5)
    assert api.duration_ms >= 0 and api.started > 0 and api.failure is None

    everything = telemetry.query(Query("logs")).to_dict()
    assert everything["filtered_by_tab"] is None
    assert [(e["tabId"], e["text"]) for e in everything["entries"]] == [
        (background.id, "fetched /api/text?n=5 200"),
        (active.id, "fetched /api/echo 200"),
    ]
    assert telemetry.listener_errors == 0


async def test_without_network_recording_console_and_errors_are_kept_and_no_request_is(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record(network=False)
    tab = await open_tab(manager, instance, site.url("/fetch?path=/api/text?n=5"))
    await tab.page.get_by_text("Done").wait_for()
    await navigate(tab, "goto", site.url("/console?msg=hello&error=broken"))
    await wait_until(lambda: "broken" in texts(telemetry, tab_id=tab.id))

    assert texts(telemetry, tab_id=tab.id) == ["fetched /api/text?n=5 200", "hello", "broken"]
    assert telemetry.error_counts_since(0) == {tab.id: 1}
    await telemetry.settle()
    for kind in ("network_waterfall", "network_bodies", "websocket_events"):
        assert telemetry.held(kind) == 0, kind
    assert tab.title_live  # the page still reports its title: Runtime stays on
    assert telemetry.listener_errors == 0


async def test_a_popups_very_first_console_line_and_request_are_captured(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    site.set_content(
        "/opens-popup",
        # The empty icon keeps Chromium from asking for /favicon.ico (a 404 in the opener's console).
        '<link rel="icon" href="data:,"><script>window.open("/console?msg=first-popup-line")</script>',
    )
    opener = await open_tab(manager, instance, site.url("/opens-popup"))
    await wait_until(lambda: len(instance.tabs) == 2)
    popup = next(t for t in instance.tabs if t is not opener)
    await wait_until(lambda: texts(telemetry, tab_id=popup.id))
    await wait_until(lambda: telemetry.query(Query("network_waterfall", tab_id=popup.id)).entries)

    assert texts(telemetry, tab_id=popup.id) == ["first-popup-line"]
    first_request = telemetry.query(Query("network_waterfall", tab_id=popup.id)).entries[0]
    assert isinstance(first_request, NetworkEntry)
    assert first_request.url == site.url("/console?msg=first-popup-line")
    assert first_request.navigation
    assert texts(telemetry, tab_id=opener.id) == []


def attached_late(telemetry: Telemetry) -> Callable[[TargetSession, Tab], Callable[[], None]]:
    """A target hook that attaches the telemetry half a second after the tab's target exists."""

    def attach_late(session: TargetSession, tab: Tab) -> Callable[[], None]:
        late: list[Callable[[], None]] = []
        timer = asyncio.get_running_loop().call_later(
            0.5, lambda: late.append(telemetry.attach_target(session, tab))
        )

        def dispose() -> None:
            timer.cancel()
            for later in late:
                later()

        return dispose

    return attach_late


async def test_a_popup_document_that_loaded_before_its_feed_was_on_is_recovered_from_its_timing(
    manager: TabManager, hooks: _Hooks, site: LocalSite
) -> None:
    """On a loaded machine Playwright can let a popup load before the feed's Network.enable
    arrives; attaching half a second late makes that certain. The document request is still
    in the waterfall, from the page's navigation timing."""
    telemetry = Telemetry()
    async with popup_attached_late(manager, hooks, telemetry, site.url("/page/a"), "/page/b") as popup:
        await wait_until(lambda: telemetry.query(Query("network_waterfall", tab_id=popup.id)).entries)
        (row,) = telemetry.query(Query("network_waterfall", tab_id=popup.id)).entries
        assert isinstance(row, NetworkEntry)
        assert (row.url, row.status, row.navigation, row.resource_type) == (
            site.url("/page/b"),
            200,
            True,
            "document",
        )
        assert row.duration_ms >= 0 and row.response_body_size


@contextlib.asynccontextmanager
async def popup_attached_late(
    manager: TabManager, hooks: _Hooks, telemetry: Telemetry, opener_url: str, popup_path: str
) -> AsyncIterator[Tab]:
    """The popup a page at `opener_url` opens on `popup_path`, in an instance of its own (closed
    after) whose tabs `telemetry` attaches to half a second late (`attached_late`)."""
    instance = await manager.attach_isolated(manager.instances[0])
    try:
        opener = await open_tab(manager, instance, opener_url)
        hooks.late[instance.id] = attached_late(telemetry)
        await opener.page.evaluate(f"window.open({json.dumps(popup_path)})")
        await wait_until(lambda: len(instance.tabs) == 2)
        yield next(t for t in instance.tabs if t is not opener)
    finally:
        await manager.close_instance(instance.id)


CHAIN = (("/r1", 302), ("/r2", 302), ("/final.html", 200))


def redirect_chain(site: LocalSite) -> None:
    """/r1 -> 302 /r2 -> 302 /final.html, a page with no icon to ask for."""

    def to(path: str) -> Callable[[Request], Awaitable[RedirectResponse]]:
        async def redirect(_request: Request) -> RedirectResponse:
            return RedirectResponse(path, status_code=302)

        return redirect

    site.set_route("/r1", to("/r2"))
    site.set_route("/r2", to("/final.html"))
    site.set_content("/final.html", '<link rel="icon" href="data:,"><title>final</title>')
    site.set_content("/opener", '<link rel="icon" href="data:,"><a href="/r1" target="_blank">go</a>')


def chain_rows(telemetry: Telemetry, site: LocalSite, tab_id: int) -> list[tuple[str, int | None]]:
    return [
        (e.url.removeprefix(site.origin), e.status)
        for e in telemetry.query(Query("network_waterfall", tab_id=tab_id)).entries
        if isinstance(e, NetworkEntry)
    ]


@pytest.mark.parametrize("opens", ["link", "window.open"])
async def test_a_popups_redirect_chain_is_recorded_hop_by_hop_or_counted_never_left_pending(
    manager: TabManager, record: Recorder, site: LocalSite, opens: str
) -> None:
    """A popup's chain can start before its feed hears it (often, for a link's target=_blank):
    the hops it missed are counted as dropped, and a document whose end the page sent before its
    Network was on is settled from its timing (it was pending for ever, hops were missing, and
    `dropped` said 0)."""
    telemetry, instance = await record()
    redirect_chain(site)
    opener = await open_tab(manager, instance, site.url("/opener"))
    if opens == "link":
        await opener.page.get_by_text("go").click()
    else:
        await opener.page.evaluate("window.open('/r1')")
    await manager.settle()
    popup = next(t for t in instance.tabs if t is not opener)
    await popup.ready()
    await popup.page.wait_for_load_state()

    def settled() -> bool:
        result = telemetry.query(Query("network_waterfall", tab_id=popup.id))
        return not result.pending and ("/final.html", 200) in chain_rows(telemetry, site, popup.id)

    await wait_until(settled)
    rows = chain_rows(telemetry, site, popup.id)
    dropped = telemetry.query(Query("network_waterfall", tab_id=popup.id)).dropped
    assert rows == list(CHAIN[dropped:]), f"{dropped} dropped"


async def test_a_popups_redirect_chain_that_went_before_its_feed_was_on_is_counted_as_dropped(
    manager: TabManager, hooks: _Hooks, site: LocalSite
) -> None:
    """Attached half a second late, the feed hears nothing of the chain: the document is recovered
    from the page's timing, and its two redirects, of which the page tells only the count, are
    counted as dropped."""
    telemetry = Telemetry()
    redirect_chain(site)
    async with popup_attached_late(manager, hooks, telemetry, site.url("/opener"), "/r1") as popup:
        await wait_until(lambda: chain_rows(telemetry, site, popup.id))
        await telemetry.settle()
        result = telemetry.query(Query("network_waterfall", tab_id=popup.id))
        assert (chain_rows(telemetry, site, popup.id), result.dropped, result.pending) == (
            [("/final.html", 200)],
            2,
            (),
        )


async def test_websocket_frames_in_both_directions_and_the_close_are_recorded_per_tab(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    other = await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/ws-page"), background=True)
    await tab.page.get_by_role("listitem").filter(has_text="hello").wait_for()
    await tab.page.get_by_role("button", name="Send ping").click()
    await tab.page.get_by_role("listitem").filter(has_text="pong").wait_for()
    await tab.page.evaluate("ws.close()")
    await wait_until(lambda: any(e.event == "close" for e in _ws(telemetry, tab_id=tab.id)))

    events = _ws(telemetry, tab_id=tab.id)
    assert [(e.event, e.preview, e.size) for e in events] == [
        ("open", None, None),
        ("sent", "hello", 5),
        ("received", "hello", 5),
        ("sent", "ping", 4),
        ("received", "pong", 4),
        ("close", None, None),
    ]
    assert {e.url for e in events} == {site.ws_url("/ws")}
    assert {e.tab_id for e in events} == {tab.id}
    assert [e.preview for e in _ws(telemetry, tab_id=tab.id, direction="received")] == ["hello", "pong"]
    assert [e.preview for e in _ws(telemetry, tab_id=tab.id, direction="sent")] == ["hello", "ping"]
    assert _ws(telemetry, tab_id=other.id) == []


async def test_a_websocket_whose_page_navigates_away_or_whose_tab_closes_is_recorded_as_closed(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    """Chromium reports no close then; the tab's in-flight requests are settled, and so are its
    open connections, each with why."""
    telemetry, instance = await record()
    navigating = await open_tab(manager, instance, site.url("/ws-page"))
    closing = await open_tab(manager, instance, site.url("/ws-page"))
    for tab in (navigating, closing):
        await tab.page.get_by_role("listitem").filter(has_text="hello").wait_for()
    await navigate(navigating, "goto", site.url("/page/a"))
    await manager.close_tab(closing.id)

    await wait_until(
        lambda: all(_ws(telemetry, tab_id=tab.id)[-1].event == "close" for tab in (navigating, closing))
    )
    for tab, why in (
        (navigating, "the page navigated away while the connection was open"),
        (closing, "the tab closed while the connection was open"),
    ):
        events = _ws(telemetry, tab_id=tab.id)
        assert [e.event for e in events] == ["open", "sent", "received", "close"], tab.id
        assert events[-1].error == why


async def test_a_websocket_is_a_row_of_its_tabs_waterfall_with_status_101_next_to_its_frames(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    other = await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/ws-page"), background=True)
    await tab.page.get_by_role("listitem").filter(has_text="hello").wait_for()
    await wait_until(lambda: len(_rows(telemetry, tab_id=tab.id)) == 2)

    page, socket = _rows(telemetry, tab_id=tab.id)
    assert (page.url, page.resource_type, page.status) == (site.url("/ws-page"), "document", 200)
    assert (socket.method, socket.url, socket.resource_type) == ("GET", site.ws_url("/ws"), "websocket")
    assert (socket.status, socket.status_text, socket.failure) == (101, "Switching Protocols", None)
    assert socket.tab_id == tab.id and socket.started >= page.started and socket.duration_ms >= 0
    assert [e.event for e in _ws(telemetry, tab_id=tab.id)][:2] == ["open", "sent"]
    assert [e.url for e in _rows(telemetry, tab_id=other.id)] == [site.url("/page/a")]
    assert telemetry.query(
        Query("network_waterfall", tab_id=tab.id, status_min=101, status_max=101)
    ).entries == (socket,)


async def test_a_refused_websocket_handshake_is_a_failed_row_with_the_servers_status(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    # Nothing serves /no-socket (the site answers a WebSocket there with 403), nothing listens on `closed`.
    closed = f"ws://127.0.0.1:{free_port()}/"
    tab = await open_tab(manager, instance, site.url("/page/a"))
    await tab.page.evaluate(
        "urls => urls.forEach(url => new WebSocket(url))", [site.ws_url("/no-socket"), closed]
    )
    # The row is done when the handshake fails; the socket's error and close events come after it.
    await wait_until(
        lambda: (
            len(_rows(telemetry, tab_id=tab.id)) == 3
            and len([e for e in _ws(telemetry, tab_id=tab.id) if e.url == closed]) >= 3
        )
    )

    rows = {row.url: row for row in _rows(telemetry, tab_id=tab.id)}
    forbidden, refused = rows[site.ws_url("/no-socket")], rows[closed]
    assert (forbidden.resource_type, forbidden.status) == ("websocket", 403)
    assert "Unexpected response code: 403" in (forbidden.failure or "")
    assert (refused.resource_type, refused.status) == ("websocket", None)
    assert "ERR_CONNECTION_REFUSED" in (refused.failure or "")
    assert [e.event for e in _ws(telemetry, tab_id=tab.id) if e.url == closed] == ["open", "error", "close"]


async def test_a_websocket_handshake_under_way_is_a_pending_request_of_its_tab(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    answer = threading.Event()

    async def slow_socket(websocket: WebSocket) -> None:
        await asyncio.to_thread(answer.wait, 10)
        await websocket.accept()
        await websocket.close()

    site.set_route("/slow-socket", slow_socket, websocket=True)
    tab = await open_tab(manager, instance, site.url("/page/a"))
    try:
        await tab.page.evaluate("url => { window.socket = new WebSocket(url); }", site.ws_url("/slow-socket"))

        def pending() -> list[str]:
            return [p.url for p in telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending]

        await wait_until(lambda: pending() == [site.ws_url("/slow-socket")])
        assert [row.url for row in _rows(telemetry, tab_id=tab.id)] == [site.url("/page/a")]
    finally:
        answer.set()
    await wait_until(lambda: len(_rows(telemetry, tab_id=tab.id)) == 2)
    assert _rows(telemetry, tab_id=tab.id)[1].status == 101
    assert pending() == []


def _rows(telemetry: Telemetry, **query: Any) -> list[NetworkEntry]:
    entries = telemetry.query(Query("network_waterfall", **query)).entries
    return [e for e in entries if isinstance(e, NetworkEntry)]


def _ws(telemetry: Telemetry, **query: Any) -> list[WebSocketEntry]:
    return [
        e
        for e in telemetry.query(Query("websocket_events", **query)).entries
        if isinstance(e, WebSocketEntry)
    ]


async def test_entries_of_a_closed_tab_remain_queryable(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    doomed = await open_tab(manager, instance, site.url("/console?msg=last+words&throw=boom"))
    await wait_until(lambda: telemetry.query(Query("errors", tab_id=doomed.id)).entries)
    await wait_until(lambda: telemetry.query(Query("network_waterfall", tab_id=doomed.id)).entries)
    await manager.close_tab(doomed.id)

    assert texts(telemetry, tab_id=doomed.id) == ["last words"]
    (error,) = telemetry.query(Query("errors", tab_id=doomed.id)).entries
    assert isinstance(error, ErrorEntry)
    assert (error.tab_id, error.source, error.message) == (doomed.id, "exception", "boom")
    assert "console" in error.stack  # the stack names the page that threw
    assert telemetry.query(Query("network_waterfall", tab_id=doomed.id)).returned_entries == 1


async def test_a_cursor_returns_only_entries_recorded_after_it(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    tab = await open_tab(manager, instance, site.url("/console?msg=before"))
    await wait_until(lambda: texts(telemetry))
    cursor = telemetry.query(Query("logs", tab_id=tab.id)).next_cursor
    assert telemetry.query(Query("logs", tab_id=tab.id, since=cursor)).entries == ()

    await tab.page.evaluate("for (let i = 1; i <= 5; i++) console.log('after ' + i)")
    await wait_until(lambda: len(texts(telemetry)) == 6)
    first = telemetry.query(Query("logs", tab_id=tab.id, since=cursor, limit=3))
    assert texts(telemetry, tab_id=tab.id, since=cursor, limit=3) == ["after 1", "after 2", "after 3"]
    assert first.has_more
    rest = telemetry.query(Query("logs", tab_id=tab.id, since=first.next_cursor, limit=3))
    assert [e.to_dict()["text"] for e in rest.entries] == ["after 4", "after 5"]
    assert not rest.has_more
    assert telemetry.query(Query("logs", since=rest.next_cursor)).entries == ()


async def test_a_full_buffer_drops_the_oldest_entries_and_counts_them(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record(max_entries=5, max_body_bytes=5000)
    tab = await open_tab(
        manager,
        instance,
        site.url("/fetch?path=/api/text?n=1500&path=/api/text?n=1501&path=/api/text?n=1502"),
    )
    await tab.page.get_by_text("Done").wait_for()
    await tab.page.evaluate("for (let i = 1; i <= 12; i++) console.log('line ' + i)")
    await wait_until(lambda: "line 12" in texts(telemetry))
    await wait_until(
        lambda: (
            telemetry.query(Query("network_bodies")).returned_entries + telemetry.dropped("network_bodies")
            == 4
        )
    )

    logs = telemetry.query(Query("logs", tab_id=tab.id))
    # 3 "fetched" lines and 12 numbered lines went in; the ring keeps 5.
    assert texts(telemetry, tab_id=tab.id) == [f"line {i}" for i in range(8, 13)]
    assert (logs.total_entries_all_tabs, logs.returned_entries, logs.dropped) == (5, 5, 10)
    assert telemetry.dropped("logs") == 10

    # Four bodies of ~1.5 KB and more (page and three texts) do not fit in 5000 bytes with headers.
    bodies = telemetry.query(Query("network_bodies", tab_id=tab.id))
    assert bodies.dropped >= 1
    assert bodies.returned_entries + bodies.dropped == 4
    assert bodies.entries[-1].to_dict()["url"].endswith("/api/text?n=1502")


@pytest.mark.parametrize("redact", [True, False], ids=["redacted", "kept with redact=False"])
async def test_authorization_cookie_and_set_cookie_values_are_redacted_by_default(
    manager: TabManager, record: Recorder, site: LocalSite, redact: bool
) -> None:
    telemetry, instance = await record(redact=redact)
    tab = await open_tab(manager, instance, site.url("/page/a"))
    await tab.page.evaluate(
        """async () => {
            await fetch('/api/set-cookie?name=session&value=cookie-secret');
            await fetch('/api/echo', {headers: {Authorization: 'Bearer token-secret'}});
        }"""
    )
    await wait_until(lambda: telemetry.query(Query("network_bodies", tab_id=tab.id)).returned_entries == 3)
    entries = [
        e for e in telemetry.query(Query("network_bodies", tab_id=tab.id)).entries if isinstance(e, BodyEntry)
    ]
    set_cookie = next(e for e in entries if "/api/set-cookie" in e.url).to_dict()
    echo = next(e for e in entries if "/api/echo" in e.url).to_dict()
    if redact:
        assert set_cookie["responseHeaders"]["set-cookie"] == "[redacted]"
        assert echo["requestHeaders"]["authorization"] == "[redacted]"
        assert echo["requestHeaders"]["cookie"] == "[redacted]"
        assert "secret" not in json.dumps([set_cookie["responseHeaders"], echo["requestHeaders"]])
    else:
        assert "session=cookie-secret" in set_cookie["responseHeaders"]["set-cookie"]
        assert echo["requestHeaders"]["authorization"] == "Bearer token-secret"
        assert echo["requestHeaders"]["cookie"] == "session=cookie-secret"


async def test_a_filter_that_matches_nothing_returns_an_empty_list_with_the_metadata(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    tab = await open_tab(manager, instance, site.url("/console?msg=hello"))
    await wait_until(lambda: texts(telemetry))
    result = telemetry.query(Query("logs", tab_id=tab.id, url="no-such-url"), active_tab_id=tab.id).to_dict()
    assert result == {
        "what": "logs",
        "entries": [],
        "currently_tracked_tab": tab.id,
        "filtered_by_tab": tab.id,
        "total_entries_all_tabs": 1,
        "returned_entries": 0,
        "dropped": 0,
        "next_cursor": telemetry.last_seq,
        "has_more": False,
        "older": False,
        "missed": False,
    }
    assert telemetry.query(Query("logs", tab_id=tab.id + 1000)).returned_entries == 0
    assert telemetry.query(Query("network_waterfall", status_min=500)).returned_entries == 0


async def test_network_filters_select_by_method_status_and_url_and_failures_are_recorded(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    tab = await open_tab(manager, instance, site.url("/page/a"))
    await tab.page.evaluate(
        """async () => {
            await fetch('/api/echo', {method: 'POST', body: 'payload'});
            await fetch('/api/status/404');
            await fetch('/api/status/503');
            try { await fetch('http://127.0.0.1:1/refused'); } catch (e) {}
        }"""
    )
    # The page and four fetches; a body is read in a round trip after its waterfall entry.
    await wait_until(lambda: telemetry.query(Query("network_waterfall", tab_id=tab.id)).returned_entries == 5)
    await wait_until(lambda: telemetry.query(Query("network_bodies", tab_id=tab.id)).returned_entries == 4)

    def urls(**query: Any) -> list[str]:
        entries = telemetry.query(Query("network_waterfall", tab_id=tab.id, **query)).entries
        # Rows are recorded as requests end, which need not be the order the page made them in.
        return sorted(e.to_dict()["url"].removeprefix(site.origin) for e in entries)

    assert urls(method="post") == ["/api/echo"]
    assert urls(status_min=400) == ["/api/status/404", "/api/status/503"]
    assert urls(status_min=500, status_max=599) == ["/api/status/503"]
    assert urls(url="status") == ["/api/status/404", "/api/status/503"]
    failed = telemetry.query(Query("network_waterfall", tab_id=tab.id, url="refused")).entries[0].to_dict()
    assert failed["status"] is None
    assert failed["failure"].startswith("net::ERR_")
    # An answered request has its phases, in ms from its start, as a plain mapping in to_dict().
    answered = telemetry.query(Query("network_waterfall", tab_id=tab.id, status_min=404, status_max=404))
    timing = answered.entries[0].to_dict()["timing"]
    assert type(timing) is dict and "requestTime" not in timing
    assert 0 <= timing["sendStart"] <= timing["receiveHeadersEnd"]
    assert json.loads(json.dumps(timing)) == timing
    post = next(
        e for e in telemetry.query(Query("network_bodies", method="POST")).entries if isinstance(e, BodyEntry)
    )
    assert post.request_body == "payload"
    assert json.loads(post.response_body or "")["body"] == "payload"


async def test_a_204_whose_body_the_page_never_reads_is_a_204_not_a_failure(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    """Chromium cancels the body of such an answer (net::ERR_ABORTED after the response); it has
    none, so the request finished."""
    telemetry, instance = await record()
    tab = await open_tab(manager, instance, site.url("/page/a"))
    assert await tab.page.evaluate("async () => (await fetch('/api/status/204')).status") == 204
    await wait_until(lambda: telemetry.query(Query("network_bodies", tab_id=tab.id)).returned_entries == 2)

    (row,) = telemetry.query(
        Query("network_waterfall", tab_id=tab.id, status_min=204, status_max=204)
    ).entries
    assert isinstance(row, NetworkEntry)
    assert (row.url, row.status, row.failure) == (site.url("/api/status/204"), 204, None)
    body = telemetry.query(Query("network_bodies", tab_id=tab.id, url="204")).entries[0]
    assert isinstance(body, BodyEntry) and (body.status, body.omitted) == (204, "no body")


async def test_text_bodies_are_cut_at_the_cap_and_binary_bodies_are_flagged_not_stored(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record(body_cap=1000)
    tab = await open_tab(manager, instance, site.url("/fetch?path=/api/text?n=5000&path=/api/binary?n=5000"))
    await tab.page.get_by_text("Done").wait_for()
    await wait_until(lambda: telemetry.query(Query("network_bodies", tab_id=tab.id)).returned_entries == 3)
    text = telemetry.query(Query("network_bodies", url=site.url("/api/text"))).entries[0].to_dict()
    assert (len(text["responseBody"]), text["truncated"], text["bodySize"]) == (1000, True, 5000)
    binary = telemetry.query(Query("network_bodies", url=site.url("/api/binary"))).entries[0].to_dict()
    assert (binary["responseBody"], binary["binary"], binary["omitted"]) == (None, True, "binary")


async def test_console_errors_and_uncaught_errors_count_as_new_errors_of_their_tab(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    quiet = await open_tab(manager, instance, site.url("/console?msg=fine"))
    await wait_until(lambda: texts(telemetry))
    cursor = telemetry.last_seq
    noisy = await open_tab(manager, instance, site.url("/console?error=bad&throw=worse"), background=True)
    await wait_until(lambda: telemetry.error_counts_since(cursor).get(noisy.id) == 2)
    assert telemetry.error_counts_since(cursor) == {noisy.id: 2}
    assert quiet.id not in telemetry.error_counts_since(0)
    assert telemetry.error_counts_since(telemetry.last_seq) == {}
    errors = telemetry.query(Query("errors", tab_id=noisy.id)).entries
    assert [(e.to_dict()["source"], e.to_dict()["message"]) for e in errors] == [
        ("console", "bad"),
        ("exception", "worse"),
    ]
    warnings_up = texts(telemetry, tab_id=noisy.id, level="warning")
    assert warnings_up == ["bad"]


async def test_the_browsers_own_console_lines_are_logs_of_their_tab_and_its_errors_count(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    # What the browser itself logs for a page (a resource that failed to load, a refused
    # window.close()) is in DevTools' console, and in Playwright's and Puppeteer's console events:
    # it used to be missing here. The icon the browser asks for by itself is a line, not an error.
    site.set_content(
        "/browser-lines",
        "<!doctype html><title>Lines</title><img src='/no-such-image.png'>"
        "<script>fetch('/no-such-api').catch(() => {}); console.log('page line')</script>"
        "<button onclick='window.close()'>Close</button>",
    )
    telemetry, instance = await record()
    cursor = telemetry.last_seq
    tab = await open_tab(manager, instance, site.url("/browser-lines"), background=True)
    await tab.page.get_by_role("button", name="Close").click()
    refused = "Scripts may close only the windows that were opened by them."
    await wait_until(lambda: refused in texts(telemetry, tab_id=tab.id))
    await wait_until(lambda: len(texts(telemetry, tab_id=tab.id)) == 5)

    logs = [e for e in telemetry.query(Query("logs", tab_id=tab.id)).entries if isinstance(e, ConsoleEntry)]
    failed = "Failed to load resource: the server responded with a status of 404 (Not Found)"
    assert sorted((e.source, e.level, e.text, e.url.removeprefix(site.origin)) for e in logs) == [
        ("console", "log", "page line", "/browser-lines"),
        ("javascript", "warning", refused, "/browser-lines"),
        ("network", "error", failed, "/favicon.ico"),
        ("network", "error", failed, "/no-such-api"),
        ("network", "error", failed, "/no-such-image.png"),
    ]
    assert {e.to_dict()["source"] for e in logs if e.text == "page line"} == {"console"}
    errors = [e for e in telemetry.query(Query("errors", tab_id=tab.id)).entries if isinstance(e, ErrorEntry)]
    assert sorted((e.source, e.message, e.url.removeprefix(site.origin)) for e in errors) == [
        ("browser", failed, "/no-such-api"),
        ("browser", failed, "/no-such-image.png"),
    ]
    assert telemetry.error_counts_since(cursor) == {tab.id: 2}
    assert sorted(texts(telemetry, tab_id=tab.id, level="warning")) == sorted(
        [refused, failed, failed, failed]
    )
    assert telemetry.listener_errors == 0


async def test_actions_are_recorded_with_their_tab_or_none(record: Recorder) -> None:
    telemetry, _instance = await record()
    telemetry.record_action(3, "browser_click", {"ref": "3e5", "button": None}, "Clicked 3e5", ok=True)
    telemetry.record_action(None, "browser_instance", {"action": "launch"}, "boom", ok=False)
    assert [e.to_dict() for e in telemetry.query(Query("actions", tab_id=3)).entries] == [
        {
            "seq": 1,
            "timestamp": telemetry.query(Query("actions")).entries[0].timestamp,
            "tabId": 3,
            "tool": "browser_click",
            "arguments": {"ref": "3e5"},
            "outcome": "Clicked 3e5",
            "ok": True,
        }
    ]
    assert [e.tab_id for e in telemetry.query(Query("actions")).entries] == [3, None]


async def test_a_filter_for_another_kind_and_a_bad_limit_are_refused(record: Recorder) -> None:
    telemetry, _instance = await record()
    with pytest.raises(ValueError, match="direction filter applies to websocket_events"):
        telemetry.query(Query("logs", direction="sent"))
    with pytest.raises(ValueError, match="limit must be between 1 and 1000"):
        telemetry.query(Query("logs", limit=1001))
    with pytest.raises(ValueError, match="what must be one of"):
        telemetry.query(Query("console"))  # type: ignore[arg-type]


async def test_closing_a_tab_while_its_bodies_are_read_never_breaks_the_recorder(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    paths = "&".join(f"path=/api/text?n={1000 + i}" for i in range(20))
    tab = await open_tab(manager, instance, site.url(f"/fetch?{paths}"), background=True)
    async with tab.page.expect_event("requestfinished", predicate=lambda r: "/api/text" in r.url):
        pass
    await manager.close_tab(tab.id)
    await telemetry.settle()
    assert telemetry.listener_errors == 0
    finished = [
        e for e in telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/text")).entries
    ]
    bodies = telemetry.query(Query("network_bodies", tab_id=tab.id, url="/api/text")).entries
    # Every finished request got its body entry: with the body, or marked unavailable.
    assert len(bodies) == len([e for e in finished if e.to_dict()["status"] == 200])
    for body in bodies:
        data = body.to_dict()
        assert data["responseBody"] is not None or data["omitted"] == "unavailable"
    assert telemetry.body_failures == sum(1 for b in bodies if b.to_dict()["omitted"] == "unavailable")


async def test_a_request_still_in_flight_is_listed_as_pending_until_it_finishes(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    tab = await open_tab(manager, instance, site.url("/page/a"))
    await tab.page.evaluate("window.slow = fetch('/api/slow?ms=1000')")
    await wait_until(
        lambda: telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/slow")).pending
    )
    waiting = telemetry.query(Query("network_waterfall", tab_id=tab.id)).to_dict()
    assert [(p["tabId"], p["method"], p["url"]) for p in waiting["pending_requests"]] == [
        (tab.id, "GET", site.url("/api/slow?ms=1000"))
    ]
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id, url="other")).pending == ()
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id + 1000)).pending == ()

    await tab.page.evaluate("window.slow")
    await wait_until(lambda: not telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending)
    finished = telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/slow")).entries
    assert [e.to_dict()["status"] for e in finished] == [200]


async def test_a_request_cut_short_by_its_tab_closing_is_recorded_with_why(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/page/b"))
    await tab.page.evaluate("() => { fetch('/api/slow?ms=3000'); }")  # not awaiting the response
    await wait_until(
        lambda: telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/slow")).pending
    )
    await manager.close_tab(tab.id)

    await wait_until(
        lambda: telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/slow")).entries
    )
    result = telemetry.query(Query("network_waterfall", tab_id=tab.id, url="/api/slow"))
    (cut,) = result.entries
    assert isinstance(cut, NetworkEntry)
    assert cut.status is None and cut.failure == "the tab closed before the request finished"
    assert result.pending == ()


async def test_cross_site_iframes_console_errors_and_requests_are_their_tabs(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    # localhost and 127.0.0.1 are different sites: each iframe of the other site runs in a target
    # (process) of its own.
    other = f"http://localhost:{site.port}"
    site.set_content(
        "/mid",
        "<script>console.error('mid on ' + location.host); setTimeout(() => { throw new Error('mid broke') });"
        "fetch('/api/echo?from=mid').then((r) => console.log('mid fetched ' + r.status))</script>",
    )
    site.set_content("/slow-frame", "<script>fetch('/api/slow?ms=5000')</script>")
    site.set_content(  # the empty icon: no /favicon.ico 404 line in the tab's console
        "/host",
        f'<link rel="icon" href="data:,"><iframe src="{other}/mid"></iframe>'
        f'<iframe id="slow" src="{other}/slow-frame"></iframe>',
    )
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/host"), background=True)

    def requests() -> dict[str, NetworkEntry]:
        return rows_by_url(telemetry, tab.id)

    await wait_until(lambda: len(texts(telemetry, tab_id=tab.id)) == 2)
    await wait_until(lambda: len(telemetry.query(Query("errors", tab_id=tab.id)).entries) == 2)
    assert sorted(texts(telemetry, tab_id=tab.id)) == [
        "mid fetched 200",
        f"mid on localhost:{site.port}",
    ]
    errors = telemetry.query(Query("errors", tab_id=tab.id)).entries
    assert sorted(e.message for e in errors if isinstance(e, ErrorEntry)) == [
        "mid broke",
        f"mid on localhost:{site.port}",
    ]
    # Each iframe's document starts in the target that holds the iframe and ends in its own: it is
    # one finished row, not a request pending for ever.
    for url in (f"{other}/mid", f"{other}/api/echo?from=mid", f"{other}/slow-frame"):
        await wait_until(lambda url=url: url in requests())  # type: ignore[misc]
        assert requests()[url].status == 200
    pending = telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending
    assert [p.url for p in pending if p.url.startswith(other)] == [f"{other}/api/slow?ms=5000"]

    # An iframe that goes takes its requests with it: recorded as cut short, and why.
    await tab.page.evaluate("document.getElementById('slow').remove()")
    await wait_until(lambda: f"{other}/api/slow?ms=5000" in requests())
    cut = requests()[f"{other}/api/slow?ms=5000"]
    assert cut.status is None and cut.failure == "its iframe went away before the request finished"
    pending = telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending
    assert [p.url for p in pending if p.url.startswith(other)] == []
    assert telemetry.listener_errors == 0


async def test_an_iframe_inside_a_cross_site_iframe_is_its_tabs_too(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    # 127.0.0.1 holds a localhost iframe that holds a 127.0.0.1 iframe: each of the three runs in a
    # target of its own. The inner one's document starts in the middle one's target and ends in its
    # own, which was not attached: its row stayed pending for ever, and its console went unheard.
    other = f"http://localhost:{site.port}"
    site.set_content(
        "/inner",
        "<script>console.log('inner on ' + location.host);"
        "fetch('/api/echo?from=inner').then((r) => console.log('inner fetched ' + r.status))</script>",
    )
    site.set_content(
        "/mid", f"<script>console.log('mid')</script><iframe src=\"{site.url('/inner')}\"></iframe>"
    )
    site.set_content("/host", f'<link rel="icon" href="data:,"><iframe src="{other}/mid"></iframe>')
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/host"), background=True)

    await wait_until(lambda: len(texts(telemetry, tab_id=tab.id)) == 3)
    assert sorted(texts(telemetry, tab_id=tab.id)) == [
        "inner fetched 200",
        f"inner on 127.0.0.1:{site.port}",
        "mid",
    ]
    for url in (f"{other}/mid", site.url("/inner"), site.url("/api/echo?from=inner")):
        await wait_until(lambda url=url: url in rows_by_url(telemetry, tab.id))  # type: ignore[misc]
        assert rows_by_url(telemetry, tab.id)[url].status == 200
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending == ()
    assert telemetry.listener_errors == 0


async def test_a_web_workers_console_errors_and_requests_are_its_tabs(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    # The worker acts on messages: Playwright's driver lets a new worker run before tabpilot's
    # session to it has Network on (its first requests would be missed; the feed counts them as
    # dropped), and once its first line is in, Network is (it was enabled before Runtime).
    site.set_content(
        "/worker.js",
        "console.log('worker up'); onmessage = (e) => {"
        " if (e.data === 'fetch') fetch('/api/echo?from=worker').then((r) => console.log('worker fetched ' + r.status));"
        " else if (e.data === 'throw') setTimeout(() => { throw new Error('worker broke') }, 0);"
        " else fetch('/api/slow?ms=5000'); };",
        content_type="text/javascript",
    )
    # The empty icon keeps Chromium from asking for /favicon.ico (a 404 line in the tab's console).
    site.set_content(
        "/with-worker",
        '<link rel="icon" href="data:,"><h1>Worker</h1><script>window.w = new Worker("/worker.js")</script>',
    )
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/with-worker"), background=True)

    def requests() -> dict[str, NetworkEntry]:
        return rows_by_url(telemetry, tab.id)

    await wait_until(lambda: texts(telemetry, tab_id=tab.id) == ["worker up"])
    await tab.page.evaluate("w.postMessage('fetch'); w.postMessage('throw')")
    await wait_until(lambda: len(texts(telemetry, tab_id=tab.id)) == 2)
    assert texts(telemetry, tab_id=tab.id) == ["worker up", "worker fetched 200"]
    await wait_until(lambda: telemetry.query(Query("errors", tab_id=tab.id)).entries)
    (error,) = telemetry.query(Query("errors", tab_id=tab.id)).entries
    assert isinstance(error, ErrorEntry) and error.message == "worker broke"
    await wait_until(lambda: site.url("/api/echo?from=worker") in requests())
    assert requests()[site.url("/api/echo?from=worker")].status == 200
    # The worker's script is one finished row, not a request pending for ever (whether its end
    # came before tabpilot's session to the worker had Network on or after).
    await wait_until(lambda: site.url("/worker.js") in requests())
    assert requests()[site.url("/worker.js")].failure is None
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending == ()
    assert telemetry.dropped("network_waterfall") == 0

    # A worker that stops takes its requests with it: recorded as cut short, and why.
    await tab.page.evaluate("w.postMessage('slow')")
    slow = site.url("/api/slow?ms=5000")
    await wait_until(
        lambda: slow in [p.url for p in telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending]
    )
    await tab.page.evaluate("w.terminate()")
    await wait_until(lambda: slow in requests())
    cut = requests()[slow]
    assert cut.status is None and cut.failure == "its worker stopped before the request finished"
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending == ()
    assert telemetry.listener_errors == 0


async def test_a_shared_workers_console_and_requests_are_the_tabs_that_started_it(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    # A shared worker is no child of the page: its script's request started in the page's target
    # and ended in the worker's, which was not attached, so the row stayed pending for ever and the
    # worker's console went unheard. As a dedicated worker, it acts on messages (its very first
    # requests can go before tabpilot's session to it has Network on: counted as dropped).
    site.set_content(
        "/shared.js",
        "console.log('shared up'); onconnect = (e) => { const port = e.ports[0];"
        " port.onmessage = (m) => m.data === 'slow' ? fetch('/api/slow?ms=5000') : fetch('/api/echo?from=shared')"
        ".then((r) => console.log('shared fetched ' + r.status)); };",
        content_type="text/javascript",
    )
    site.set_content(
        "/with-shared",
        '<link rel="icon" href="data:,"><script>window.w = new SharedWorker("/shared.js")</script>',
    )
    telemetry, instance = await record()
    await open_tab(manager, instance, site.url("/page/a"))
    tab = await open_tab(manager, instance, site.url("/with-shared"), background=True)

    await wait_until(lambda: texts(telemetry, tab_id=tab.id) == ["shared up"])
    await tab.page.evaluate("w.port.postMessage('fetch')")
    await wait_until(lambda: texts(telemetry, tab_id=tab.id) == ["shared up", "shared fetched 200"])
    await wait_until(lambda: site.url("/api/echo?from=shared") in rows_by_url(telemetry, tab.id))
    assert rows_by_url(telemetry, tab.id)[site.url("/api/echo?from=shared")].status == 200
    await wait_until(lambda: site.url("/shared.js") in rows_by_url(telemetry, tab.id))
    assert rows_by_url(telemetry, tab.id)[site.url("/shared.js")].failure is None
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending == ()

    # The worker is recorded while its tab is open (it may serve other tabs on): a request it has
    # under way as the tab closes is cut short, and why.
    await tab.page.evaluate("w.port.postMessage('slow')")
    slow = site.url("/api/slow?ms=5000")
    await wait_until(
        lambda: slow in [p.url for p in telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending]
    )
    await manager.close_tab(tab.id)
    await wait_until(lambda: slow in rows_by_url(telemetry, tab.id))
    cut = rows_by_url(telemetry, tab.id)[slow]
    assert (
        cut.status is None
        and cut.failure == "its worker stopped or its tab closed before the request finished"
    )
    assert telemetry.query(Query("network_waterfall", tab_id=tab.id)).pending == ()
    assert telemetry.listener_errors == 0


async def test_the_last_request_of_a_popup_that_closes_itself_is_recorded(
    manager: TabManager, record: Recorder, site: LocalSite
) -> None:
    telemetry, instance = await record()
    app = await open_tab(manager, instance, site.url("/oauth/start"))
    await app.page.get_by_role("button", name="Sign in").click()
    await wait_until(lambda: len(instance.tabs) == 2)
    popup = next(t for t in instance.tabs if t is not app)
    await popup.ready()  # listed from the moment its target exists; its page comes a moment later
    await popup.page.get_by_label("Username").fill("ada")
    # the page closes itself: the press may end with "target closed"
    with contextlib.suppress(PlaywrightError):
        await popup.page.get_by_label("Username").press("Enter")
    await wait_until(lambda: popup.closed)

    await wait_until(
        lambda: telemetry.query(Query("network_waterfall", tab_id=popup.id, url="/oauth/callback")).entries
    )
    urls = [
        e.url
        for e in telemetry.query(Query("network_waterfall", tab_id=popup.id)).entries
        if isinstance(e, NetworkEntry)
    ]
    (callback,) = telemetry.query(Query("network_waterfall", tab_id=popup.id, url="/oauth/callback")).entries
    assert isinstance(callback, NetworkEntry)
    assert (callback.status, callback.failure) == (200, None)  # it loaded, then its script closed it
    assert site.url("/oauth/authorize") in urls
