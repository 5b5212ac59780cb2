"""A feed on scripted sessions: a worker's requests that went before its feed had Network on (its
script is settled as loaded, the rest counted as dropped), bodies past the read queue, and console
lines past the rate, each counted as dropped once."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from support import RecordingSink
from tabpilot import BodyEntry, Query, Telemetry
from tabpilot._telemetry import _feed
from tabpilot._telemetry._feed import TabFeed

WORKER = "0A1B2C3D4E5F60718293A4B5C6D7E8F9"
"""The worker's target id: its script's request id in the page's target."""


class Session:
    """A target session whose commands are answered at once and whose events the test sends
    (`emit`)."""

    def __init__(self, kind: str, target_id: str, parent: Session | None = None) -> None:
        self.kind, self.target_id, self.parent = kind, target_id, parent
        self.sent: list[str] = []
        self.timing: dict[str, Any] | None = None
        """What the page's navigation timing reads (`Runtime.evaluate`'s answer)."""
        self._handlers: list[tuple[tuple[str, ...], Callable[[str, str], None]]] = []
        self._closing: list[Callable[[], None]] = []

    def send(self, method: str, params: dict[str, Any] | None = None) -> asyncio.Future[dict[str, Any]]:
        self.sent.append(method)
        answer: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        answer.set_result({"result": {"value": self.timing if method == "Runtime.evaluate" else None}})
        return answer

    def enable(self, domain: str) -> asyncio.Future[dict[str, Any]]:
        return self.send(f"{domain}.enable")

    def on_events(self, methods: Iterable[str], handler: Callable[[str, str], None]) -> Callable[[], None]:
        entry = (tuple(methods), handler)
        self._handlers.append(entry)
        return lambda: self._handlers.remove(entry)

    def on_close(self, handler: Callable[[], None]) -> None:
        self._closing.append(handler)

    def close(self) -> None:
        for handler in self._closing:
            handler()

    def emit(self, method: str, params: dict[str, Any]) -> None:
        raw = json.dumps({"method": method, "params": params})
        for methods, handler in list(self._handlers):
            if method in methods:
                handler(method, raw)


class Sink(RecordingSink):
    """The recording sink with the tab's feeds, which hand requests over to one another."""

    def __init__(self) -> None:
        super().__init__()
        self.feeds: list[TabFeed] = []

    def read_body(self, read: Any) -> bool:
        read().close()
        return True

    def hand_over(self, tab_id: int, request_id: str, to: TabFeed, *, take: bool = True) -> Any:
        for feed in self.feeds:
            if feed is not to:
                request = feed.give_up(request_id) if take else feed.holds(request_id)
                if request is not None:
                    return request
        return None


def request(request_id: str, url: str, kind: str) -> dict[str, Any]:
    return {
        "requestId": request_id,
        "type": kind,
        "timestamp": 10.0,
        "wallTime": 1000.0,
        "request": {"url": url, "method": "GET", "headers": {}},
    }


@pytest.fixture
def feeds(monkeypatch: pytest.MonkeyPatch) -> tuple[Sink, Session, TabFeed, Session, TabFeed]:
    """A page's feed and its worker's; the page has started the worker's script request."""
    monkeypatch.setattr(_feed, "SCRIPT_GRACE", 0.05)
    sink = Sink()
    page = Session("page", "PAGE")
    worker = Session("worker", WORKER, parent=page)
    page_feed, worker_feed = TabFeed(sink, page, 3), TabFeed(sink, worker, 3)  # type: ignore[arg-type]
    sink.feeds += [page_feed, worker_feed]
    page.emit("Network.requestWillBeSent", request(WORKER, "http://127.0.0.1:1/worker.js", "Script"))
    return sink, page, page_feed, worker, worker_feed


async def test_a_workers_script_whose_end_went_unheard_is_recorded_as_loaded_once_the_worker_runs(
    feeds: tuple[Sink, Session, TabFeed, Session, TabFeed],
) -> None:
    sink, _page, page_feed, worker, worker_feed = feeds
    assert [p.url for p in page_feed.pending()] == ["http://127.0.0.1:1/worker.js"]

    worker_feed.start()  # its script's end went to the worker's target before Network was on
    assert worker.sent[:3] == ["Network.enable", "Runtime.enable", "Log.enable"]
    await asyncio.sleep(0.02)
    assert "Runtime.evaluate" in worker.sent, "the feed asks the worker to run code"
    assert sink.rows() == [], "the script's own end may still come within the grace"
    await asyncio.sleep(0.1)

    (row,) = sink.rows()
    assert (row.url, row.tab_id, row.failure, row.duration_ms) == (
        "http://127.0.0.1:1/worker.js",
        3,
        None,
        -1.0,
    )
    assert page_feed.pending() == [] and worker_feed.pending() == []

    # A worker's request whose start the feed never saw is counted as dropped when it ends.
    worker.emit("Network.loadingFinished", {"requestId": "77.3", "timestamp": 11.0})
    worker.emit("Network.loadingFailed", {"requestId": "77.4", "timestamp": 11.0, "errorText": "x"})
    assert sink.dropped == {"network_waterfall": 2}
    assert len(sink.rows()) == 1


async def test_a_workers_script_whose_end_is_heard_is_recorded_once_with_its_duration(
    feeds: tuple[Sink, Session, TabFeed, Session, TabFeed],
) -> None:
    sink, page, page_feed, worker, worker_feed = feeds
    worker_feed.start()
    worker.emit("Network.loadingFinished", {"requestId": WORKER, "timestamp": 10.25})
    await asyncio.sleep(0.15)

    (row,) = sink.rows()
    assert (row.url, row.failure, row.duration_ms) == ("http://127.0.0.1:1/worker.js", None, 250.0)
    assert sink.dropped == {} and page_feed.pending() == []

    # A page's feed hears the end of requests from before it (its document's): never counted.
    page.emit("Network.loadingFinished", {"requestId": "5.1", "timestamp": 11.0})
    assert sink.dropped == {}


async def test_a_workers_script_is_settled_even_when_the_worker_stops_within_the_grace(
    feeds: tuple[Sink, Session, TabFeed, Session, TabFeed],
) -> None:
    sink, _page, page_feed, worker, worker_feed = feeds
    worker_feed.start()
    await asyncio.sleep(0.02)  # the worker ran code
    worker_feed.stop()
    worker.close()
    await asyncio.sleep(0.1)

    (row,) = sink.rows()
    assert (row.url, row.failure, row.duration_ms) == ("http://127.0.0.1:1/worker.js", None, -1.0)
    assert page_feed.pending() == []


async def test_a_body_past_the_read_queue_is_recorded_as_not_read_never_lost() -> None:
    telemetry = Telemetry(max_body_reads=2)
    page = Session("page", "PAGE")
    TabFeed(telemetry, page, 3)  # type: ignore[arg-type]
    # Four fetches end before any read could start (the loop has not run): two reads wait.
    for n in range(4):
        page.emit("Network.requestWillBeSent", request(f"9.{n}", f"http://127.0.0.1:1/api/{n}", "Fetch"))
        page.emit(
            "Network.responseReceived",
            {"requestId": f"9.{n}", "response": {"status": 200, "mimeType": "text/plain", "headers": {}}},
        )
        page.emit("Network.loadingFinished", {"requestId": f"9.{n}", "timestamp": 11.0})
    await telemetry.settle()

    bodies = telemetry.query(Query("network_bodies"))
    assert [(e.url[-5:], e.omitted) for e in bodies.entries if isinstance(e, BodyEntry)] == [
        ("api/2", "busy"),
        ("api/3", "busy"),
        ("api/0", None),
        ("api/1", None),
    ]
    assert bodies.dropped == 0


async def test_every_console_line_past_the_rate_is_counted_as_dropped_once() -> None:
    """A worker's line reaches the page's target too (as Chromium's own `Log.entryAdded`), and
    the worker's feed counts it; a missing icon's 404 is at error level but no error."""
    sink = Sink()
    sink.max_event_rate = 0.001  # no line is ever within the rate
    page = Session("page", "PAGE")
    worker = Session("worker", WORKER, parent=page)
    sink.feeds += [TabFeed(sink, page, 3), TabFeed(sink, worker, 3)]  # type: ignore[arg-type]
    for call, level in (("log", "info"), ("error", "error")):
        text = f"worker {call}"
        worker.emit("Runtime.consoleAPICalled", {"type": call, "args": [{"type": "string", "value": text}]})
        page.emit("Log.entryAdded", {"entry": {"source": "worker", "level": level, "text": text}})
    icon = "http://127.0.0.1:1/favicon.ico"
    page.emit(
        "Log.entryAdded", {"entry": {"source": "network", "level": "error", "text": "404", "url": icon}}
    )

    assert sink.entries == []
    assert sink.dropped == {"logs": 3, "errors": 1}


async def test_what_console_lines_past_the_rate_showed_is_released_in_the_page_as_for_kept_ones() -> None:
    """The page keeps the objects every console message showed for this session, dropped or not,
    until they are released: a flood past the rate must not keep them for good."""
    sink = Sink()
    sink.max_event_rate = 0.001  # no line is ever within the rate
    page = Session("page", "PAGE")
    TabFeed(sink, page, 3)  # type: ignore[arg-type]
    shown = {"type": "object", "objectId": "1.2.3", "description": "Object"}
    for _ in range(_feed.RELEASE_EVERY):
        page.emit("Runtime.consoleAPICalled", {"type": "log", "args": [shown]})

    assert sink.dropped == {"logs": _feed.RELEASE_EVERY}
    assert page.sent.count("Runtime.releaseObjectGroup") == 1


def test_a_query_refuses_a_tab_id_or_cursor_that_is_no_int() -> None:
    # Query(tab_id="2") matched no entry (entries carry ints) and said nothing was recorded.
    for tab_id in ("2", True, 2.0):
        with pytest.raises(TypeError, match="tab_id takes a tab id, an int such as 3; it was given"):
            Query("logs", tab_id=tab_id)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="since must be an int or None, not '5'"):
        Query("logs", since="5")  # type: ignore[arg-type]
    assert Query("logs", tab_id=2, since=5).tab_id == 2
    # Python's own errors said `'<=' not supported between 'int' and 'str'`, or matched nothing.
    for kind, wrong in (
        ("network_waterfall", {"status_min": "400"}),
        ("network_waterfall", {"status_max": 4.5}),
        ("network_waterfall", {"method": ["GET"]}),
        ("logs", {"level": 2}),
        ("logs", {"url": b"/api"}),
    ):
        with pytest.raises(TypeError, match=f"{next(iter(wrong))} must be"):
            Query(kind, **wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="limit must be an int, not '5'"):
        Query("logs", limit="5")  # type: ignore[arg-type]


def test_a_query_refuses_a_negative_cursor() -> None:
    # since=-1 read every entry, as since=0 does, and said `missed` whenever nothing had been
    # dropped yet either (no drop is newer than cursor 0, but "none" counted as newer than -1).
    with pytest.raises(ValueError, match="since must be 0 or more"):
        Query("logs", since=-1)
    telemetry = Telemetry()
    telemetry.record_action(None, "browser_tabs", {}, "done", ok=True)
    result = telemetry.query(Query("actions", since=0))
    assert (result.returned_entries, result.missed) == (1, False)


def test_a_query_names_its_filters_by_their_python_names() -> None:
    # It named status_min and status_max as the MCP tool spells its arguments (statusMin).
    with pytest.raises(
        ValueError, match="The status_min filter applies to network_waterfall and network_bodies"
    ):
        Query("logs", status_min=400)
    with pytest.raises(ValueError, match="status_min 500 is above status_max 200: no status is both"):
        Query("network_waterfall", status_min=500, status_max=200)


async def test_a_pages_request_that_started_unseen_is_recorded_from_its_answer_or_counted() -> None:
    # A popup's first fetch can go before its feed has Network on (a busy machine): its row was
    # missing, and nothing was counted as dropped.
    sink = Sink()
    page = Session("page", "PAGE")
    sink.feeds.append(TabFeed(sink, page, 3))  # type: ignore[arg-type]
    answer = {"url": "http://127.0.0.1:1/api", "status": 200, "mimeType": "text/plain", "headers": {}}
    page.emit(
        "Network.responseReceived",
        {"requestId": "9.1", "type": "Fetch", "timestamp": 11.0, "response": answer},
    )
    page.emit("Network.loadingFinished", {"requestId": "9.1", "timestamp": 11.5})
    (row,) = sink.rows()
    assert (row.method, row.url, row.status, row.resource_type) == (
        "",
        "http://127.0.0.1:1/api",
        200,
        "fetch",
    )
    # Its end alone, before the document is accounted for: it may be the document (recovered).
    page.emit("Network.loadingFinished", {"requestId": "9.2", "timestamp": 11.6})
    assert sink.dropped == {}
    page.emit("Network.requestWillBeSent", request("9.3", "http://127.0.0.1:1/next", "Document"))
    page.emit("Network.loadingFinished", {"requestId": "9.4", "timestamp": 12.0})
    assert sink.dropped == {"network_waterfall": 1}


POPUP = "http://127.0.0.1:1/final.html"


def popup_timing(*, redirects: int, answered: bool) -> dict[str, Any]:
    """The popup's navigation timing: its document loaded a moment ago, after `redirects` redirects."""
    now = time.time() * 1000
    return {
        "url": POPUP,
        "status": 200,
        "start": now - 500,
        "duration": 400,
        "size": 40,
        "redirects": redirects,
        "end": now - 200 if answered else 0,
    }


async def test_a_popups_document_whose_end_and_first_hop_went_before_network_was_on_is_settled() -> None:
    # A target=_blank popup's /r1 -> /r2 -> /final.html: the feed heard /final.html start (with
    # /r2's redirect answer) and its answer, both from the browser; the page loaded it before
    # its Network was on, so its end never came. The row stayed pending for ever, /r2 and /r1
    # were missing, and nothing was counted as dropped.
    sink = Sink()
    page = Session("page", "PAGE")
    feed = TabFeed(sink, page, 3)  # type: ignore[arg-type]
    sink.feeds.append(feed)
    hop = {"url": "http://127.0.0.1:1/r2", "status": 302, "headers": {}, "timing": {"requestTime": 9.5}}
    page.emit(
        "Network.requestWillBeSent",
        {**request("L1", POPUP, "Document"), "frameId": "PAGE", "loaderId": "L1", "redirectResponse": hop},
    )
    answer = {"url": POPUP, "status": 200, "mimeType": "text/html", "headers": {}}
    page.emit(
        "Network.responseReceived",
        {"requestId": "L1", "type": "Document", "frameId": "PAGE", "loaderId": "L1", "response": answer},
    )
    page.timing = popup_timing(redirects=2, answered=True)
    feed.start()
    await asyncio.sleep(0.02)

    r2, final = sink.rows()
    assert (r2.method, r2.url, r2.status, r2.navigation) == ("", "http://127.0.0.1:1/r2", 302, True)
    assert (final.method, final.url, final.status, final.redirected_from) == (
        "GET",
        POPUP,
        200,
        "http://127.0.0.1:1/r2",
    )
    assert final.duration_ms >= 0
    assert feed.pending() == []
    assert sink.dropped == {"network_waterfall": 1}, "/r1, of which the page tells only that it was"


async def test_a_popups_document_recovered_while_loading_has_its_hops_counted_and_its_end_no_loss() -> None:
    sink = Sink()
    page = Session("page", "PAGE")
    feed = TabFeed(sink, page, 3)  # type: ignore[arg-type]
    sink.feeds.append(feed)
    page.timing = popup_timing(redirects=2, answered=False)
    feed.start()
    await asyncio.sleep(0.02)

    (row,) = sink.rows()
    assert (row.url, row.status, row.navigation) == (POPUP, 200, True)
    assert sink.dropped == {"network_waterfall": 2}
    page.emit("Network.loadingFinished", {"requestId": "L1", "timestamp": 11.0})  # the document's own
    assert sink.dropped == {"network_waterfall": 2}
    page.emit("Network.loadingFinished", {"requestId": "9.1", "timestamp": 11.1})
    assert sink.dropped == {"network_waterfall": 3}


async def test_a_document_still_loading_when_network_came_on_is_left_to_its_own_end() -> None:
    sink = Sink()
    page = Session("page", "PAGE")
    feed = TabFeed(sink, page, 3)  # type: ignore[arg-type]
    sink.feeds.append(feed)
    page.emit("Network.requestWillBeSent", {**request("L1", POPUP, "Document"), "frameId": "PAGE"})
    page.timing = popup_timing(redirects=0, answered=False)
    feed.start()
    await asyncio.sleep(0.02)
    assert [p.url for p in feed.pending()] == [POPUP]

    page.emit("Network.loadingFinished", {"requestId": "L1", "timestamp": 10.25})
    (row,) = sink.rows()
    assert (row.url, row.duration_ms) == (POPUP, 250.0)
    assert sink.dropped == {}
