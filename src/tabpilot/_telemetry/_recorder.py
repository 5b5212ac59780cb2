"""The recorder: bounded rings per kind, fed per tab, answering tab-filtered queries.

    telemetry = Telemetry()
    manager.add_target_hook(telemetry.attach_target)   # before the browser opens tabs
    ...
    result = telemetry.query(Query("logs", tab_id=3))
    result.to_dict()   # {"what": "logs", "entries": [{"seq": .., "tabId": 3, ..}], "dropped": 0, ..}

Memory is bounded by the settings whatever pages do: each ring keeps `max_entries` (bodies also
`max_body_bytes`), every entry's text is capped, requests in flight are capped per tab, body
reads are queued to a bound, and past `max_event_rate` events a second a tab's surplus is
dropped (and counted) before it is parsed. Nothing is taken from Playwright's own event objects,
so nothing of Playwright's is kept alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from .._cdp import TargetSession
from .._errors import check_count, check_tab_id
from .._options import check_seconds
from .._ring import ALL_TABS, AllTabs, Ring
from ._entries import (
    PREVIEW_CAP,
    TELEMETRY_KINDS,
    TEXT_CAP,
    ActionEntry,
    BodyEntry,
    ConsoleEntry,
    ErrorEntry,
    NetworkEntry,
    ObserveResult,
    PendingRequest,
    TelemetryKind,
    WebSocketEntry,
    cut,
)
from ._feed import TabFeed
from ._query import Query

if TYPE_CHECKING:
    from .._tab import Tab

MAX_BODY_READS = 256
"""Body reads waiting at once (by default); past it a body is recorded as not read ("busy")."""
_CONCURRENT_READS = 6


class Numbering(Protocol):
    """Sequence numbers shared with something else that numbers entries (the tab core's event
    bus), so that one cursor serves both."""

    @property
    def last_seq(self) -> int: ...

    def next_seq(self) -> int: ...


def _body_size(entry: BodyEntry) -> int:
    return entry.size


class Telemetry:
    """Records what every tab does, per kind, in bounded rings; answers tab-filtered queries.

    `max_entries` bounds each kind's ring; `max_body_bytes` bounds what the bodies ring holds;
    `body_cap` is the most kept of one text body (0: keep no bodies); `max_body_reads` is how many
    body reads may wait at once (a body past them is recorded as not read, "busy");
    `max_event_rate` is how many console messages, and how many requests, one tab may add a second
    (bursts of twice that).
    With `redact`, values of Authorization, Proxy-Authorization, Cookie and Set-Cookie headers
    are replaced by "[redacted]". With `network=False` only console messages and page errors are
    recorded: the tabs' Network domain stays off (no requests, bodies or WebSocket traffic reach
    tabpilot), for a front end that shows nothing of them. With `numbering` (the manager's
    `events`), entries are numbered in the tab events' sequence: one cursor then serves every kind
    and `tab_events` too; without it, the tab events count on their own.
    """

    def __init__(
        self,
        *,
        max_entries: int = 5000,
        max_body_bytes: int = 8 * 1024 * 1024,
        body_cap: int = 64 * 1024,
        redact: bool = True,
        max_event_rate: float = 1000.0,
        network: bool = True,
        max_body_reads: int = MAX_BODY_READS,
        numbering: Numbering | None = None,
    ) -> None:
        check_count(max_entries, "max_entries", "the most entries kept of each kind", minimum=1, unit="entry")
        check_count(max_body_bytes, "max_body_bytes", "the most bytes of bodies kept", minimum=1, unit="byte")
        check_count(body_cap, "body_cap", "the most bytes kept of one body", minimum=0, unit="bytes")
        check_count(max_body_reads, "max_body_reads", "the most bodies read at once", minimum=1, unit="read")
        if max_event_rate <= 0:
            raise ValueError("max_event_rate must be positive")
        self.max_entries = max_entries
        self.body_cap = body_cap
        self.redact = redact
        self.max_event_rate = max_event_rate
        self.network = network
        self.max_body_reads = max_body_reads
        self.fetch_limit = max(body_cap * 16, 1024 * 1024)
        """Bodies larger than this (by Content-Length) are not read at all."""
        self._numbering = numbering
        self._seq = 0
        """The last sequence number, when the recorder numbers its entries itself."""
        self._socket_ids = 0
        self._rings: dict[TelemetryKind, Ring[Any]] = {
            kind: Ring(max_entries) for kind in TELEMETRY_KINDS if kind != "network_bodies"
        }
        self._rings["network_bodies"] = Ring(max_entries, max_bytes=max_body_bytes, size_of=_body_size)
        self._feeds: dict[int, list[TabFeed]] = {}
        """Per tab: its page's feed and one per cross-site iframe in it."""
        self._tasks: set[asyncio.Task[None]] = set()
        self._reads: asyncio.Semaphore | None = None
        self.body_failures = 0
        """Bodies that could not be read (the page closed, the browser went away, too many at once)."""
        self.listener_errors = 0
        """Events that could not be recorded; a feed never raises into the browser connection."""

    # -- cursors -------------------------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The newest sequence number taken (0: none yet): an entry's of any kind, or with
        `numbering` a tab event's too."""
        return self._seq if self._numbering is None else self._numbering.last_seq

    def next_seq(self) -> int:
        if self._numbering is not None:
            return self._numbering.next_seq()
        self._seq += 1
        return self._seq

    def next_socket_id(self) -> int:
        self._socket_ids += 1
        return self._socket_ids

    def error_counts_since(self, seq: int) -> dict[int, int]:
        """New errors (page errors and console errors) per tab after cursor `seq`: those still held
        (`errors_dropped_since` says of which tabs more were dropped)."""
        return {tab: n for tab, n in self._rings["errors"].counts_since(seq).items() if tab is not None}

    def errors_dropped_since(self, seq: int, tabs: Iterable[int]) -> set[int]:
        """Which of `tabs` had errors newer than cursor `seq` dropped (the buffer's oldest, or a
        flood's surplus): their `error_counts_since` is a lower bound."""
        ring = self._rings["errors"]
        return {tab for tab in tabs if ring.missed_after(tab, seq)}

    def dropped(self, what: TelemetryKind) -> int:
        return self._ring(what).dropped

    def held(self, what: TelemetryKind) -> int:
        """Entries of a kind held now (all tabs)."""
        return len(self._ring(what))

    # -- feeding -------------------------------------------------------------------------------

    def attach_target(self, session: TargetSession, tab: Tab) -> Callable[[], None]:
        """Record one tab from its target session, or from a cross-site iframe's in it
        (`TabManager.add_target_hook(telemetry.attach_target)`). Returns the disposer, which
        records the unfinished requests of the tab (or iframe) as cut short."""
        feed = TabFeed(self, session, tab.id)
        self._feeds.setdefault(tab.id, []).append(feed)
        feed.start()

        def forget() -> None:
            feeds = self._feeds.get(tab.id, [])
            if feed in feeds:
                feeds.remove(feed)
                if not feeds:
                    del self._feeds[tab.id]

        def dispose() -> None:
            # Its requests under way stay listed as pending until they are recorded as cut short:
            # a look in between found them in neither place.
            feed.stop(then=forget)

        return dispose

    def browser_frame(self, tab_id: int, frame_id: str) -> bool:
        return any(frame_id in feed.browser_frames for feed in self._feeds.get(tab_id, ()))

    def hand_over(self, tab_id: int, request_id: str, to: TabFeed, *, take: bool = True) -> Any:
        for feed in self._feeds.get(tab_id, ()):
            if feed is not to:
                request = feed.give_up(request_id) if take else feed.holds(request_id)
                if request is not None:
                    return request
        return None

    def append(self, what: TelemetryKind, entry: Any) -> None:
        self._rings[what].append(entry)

    def shed(self, what: TelemetryKind, tab_id: int, count: int = 1) -> None:
        """Entries a tab produced too fast to keep: dropped before they were built, and counted."""
        self._rings[what].count_dropped(tab_id, count, seq=self.next_seq())

    def read_body(self, read: Callable[[], Awaitable[None]]) -> bool:
        """Run a body read with a few at a time. Past `max_body_reads` waiting it is not run, and
        False says so: the caller records the body as not read."""
        if len(self._tasks) >= self.max_body_reads:
            self.body_failures += 1
            return False
        if self._reads is None:
            self._reads = asyncio.Semaphore(_CONCURRENT_READS)
        reads = self._reads

        async def run() -> None:
            async with reads:
                try:
                    await read()
                except Exception:
                    self.listener_errors += 1

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def settle(self, timeout: float = 5.0) -> None:
        """Wait (up to `timeout` s) until entries that need a browser round trip are recorded."""
        check_seconds(timeout, "timeout")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while self._tasks:
                    await asyncio.wait(set(self._tasks))

    # -- actions -------------------------------------------------------------------------------

    def record_action(
        self, tab_id: int | None, tool: str, arguments: Mapping[str, object], outcome: str, *, ok: bool
    ) -> None:
        """Note an action a front end performed (long argument strings are cut)."""
        if tab_id is not None:
            check_tab_id(tab_id)  # a query of the tab would not find it
        args = {
            k: cut(v, PREVIEW_CAP) if isinstance(v, str) else v for k, v in arguments.items() if v is not None
        }
        self.append(
            "actions",
            ActionEntry(self.next_seq(), time.time(), tab_id, tool, args, cut(outcome, TEXT_CAP), ok),
        )

    # -- queries -------------------------------------------------------------------------------

    def _ring(self, what: str) -> Ring[Any]:
        ring = self._rings.get(what)  # type: ignore[call-overload]
        if ring is None and what == "tab_events":
            raise ValueError(
                "tab events are the manager's, not the recorder's: read them with "
                "query_tab_events(manager.events, query)"
            )
        if ring is None:
            raise ValueError(f"what must be one of {', '.join(TELEMETRY_KINDS)}; got {what!r}")
        return ring  # type: ignore[no-any-return]

    def query(self, query: Query, *, active_tab_id: int | None = None) -> ObserveResult:
        """Entries of one kind, of one tab or of all tabs, oldest first. `dropped` counts the
        entries of this kind dropped so far (of the tab, when the query names one)."""
        ring = self._ring(query.what)
        match = query.matcher()
        entries, matched_more = ring.select(tab=query.tab, since=query.since, limit=query.limit, match=match)
        more = matched_more and query.since is not None
        pending: tuple[PendingRequest, ...] = ()
        if query.what == "network_waterfall" and query.status_min is None and query.status_max is None:
            pending = self._pending(query.tab, match)
        return ObserveResult(
            what=query.what,
            entries=tuple(entries),
            currently_tracked_tab=active_tab_id,
            filtered_by_tab=query.tab_id,
            total_entries_all_tabs=len(ring),
            returned_entries=len(entries),
            dropped=ring.dropped_for(query.tab),
            next_cursor=entries[-1].seq if more else self.last_seq,
            has_more=more,
            older=matched_more and query.since is None,
            pending=pending,
            missed=query.since is not None and ring.missed_after(query.tab, query.since),
        )

    def _pending(self, tab: int | AllTabs, match: Callable[[Any], bool] | None) -> tuple[PendingRequest, ...]:
        feeds = (
            [f for fs in self._feeds.values() for f in fs] if tab is ALL_TABS else self._feeds.get(tab, [])
        )
        return tuple(p for feed in feeds for p in feed.pending() if match is None or match(p))


__all__ = [
    "ActionEntry",
    "BodyEntry",
    "ConsoleEntry",
    "ErrorEntry",
    "NetworkEntry",
    "Telemetry",
    "WebSocketEntry",
]
