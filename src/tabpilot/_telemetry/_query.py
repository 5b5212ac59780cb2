"""Asking telemetry: a `Query` (what, of which tab, since which cursor, with which filters) and
the matching it implies. A filter that does not apply to the kind asked for is an error, so a
typo never silently matches everything.

    telemetry.query(Query("logs", tab_id=3, level="warning"))
    telemetry.query(Query("network_waterfall", status_min=400, since=cursor))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, Literal, Protocol

from .._errors import check_tab_id
from .._ring import ALL_TABS, AllTabs
from ._entries import TELEMETRY_KINDS, Direction, ObserveResult

QueryKind = Literal[
    "errors", "logs", "network_waterfall", "network_bodies", "websocket_events", "actions", "tab_events"
]
MAX_LIMIT = 1000

# Severity for the `level` filter: a level selects itself and everything more severe, like
# DevTools' levels. Console types not listed count as "info".
LEVEL_RANK = {"debug": 0, "verbose": 0, "log": 1, "info": 1, "warning": 2, "warn": 2, "error": 3, "assert": 3}
LEVELS_ACCEPTED = ("debug", "info", "log", "warning", "warn", "error")
_NETWORK = ("network_waterfall", "network_bodies")
_TEXT_OF = {
    "logs": ("text",),
    "errors": ("message", "stack"),
    "websocket_events": ("preview", "error"),
    "network_bodies": ("request_body", "response_body"),
}
"""The fields of each kind's entries that the `text` filter searches."""


@dataclass(frozen=True, slots=True)
class Query:
    """What to read. `tab_id` None: every tab. Without `since`: the newest `limit` matches; with it,
    the oldest `limit` matches after that cursor (page forward with `next_cursor`)."""

    what: QueryKind
    _: KW_ONLY
    tab_id: int | None = None
    limit: int = 100
    since: int | None = None
    level: str | None = None
    """logs: this level and more severe ones."""
    url: str | None = None
    """Substring of the entry's URL (logs: of their source location)."""
    method: str | None = None
    status_min: int | None = None
    status_max: int | None = None
    """network kinds; a request that failed before its response has no status and matches no
    status filter (one that failed after it, its body cut short, has its status)."""
    direction: Direction | None = None
    """websocket_events: frames sent or received."""
    text: str | None = None
    """Substring, in any case, of a console line's text, an error's message or stack, a WebSocket
    frame's preview or error, or a request's or response's body."""

    def __post_init__(self) -> None:
        if self.what not in (*TELEMETRY_KINDS, "tab_events"):
            raise ValueError(
                f"what must be one of {', '.join((*TELEMETRY_KINDS, 'tab_events'))}; got {self.what!r}"
            )
        if self.tab_id is not None:
            check_tab_id(self.tab_id)  # a tab id as text ('2') matched no entry: entries carry ints
        numbers = (
            ("since", self.since),
            ("status_min", self.status_min),
            ("status_max", self.status_max),
        )
        for name, number in numbers:
            if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
                raise TypeError(f"{name} must be an int or None, not {number!r}")
        if self.since is not None and self.since < 0:
            raise ValueError(f"since must be 0 or more (0, or a next_cursor); got {self.since}")
        if isinstance(self.limit, bool) or not isinstance(self.limit, int):
            raise TypeError(f"limit must be an int, not {self.limit!r}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, got {self.limit}")
        what = self.what
        for name, value, applies, kinds in (
            ("level", self.level, what == "logs", "logs"),
            ("url", self.url, what not in ("actions", "tab_events"), "every kind but actions and tab_events"),
            ("method", self.method, what in _NETWORK, "network_waterfall and network_bodies"),
            ("status_min", self.status_min, what in _NETWORK, "network_waterfall and network_bodies"),
            ("status_max", self.status_max, what in _NETWORK, "network_waterfall and network_bodies"),
            ("direction", self.direction, what == "websocket_events", "websocket_events"),
            ("text", self.text, what in _TEXT_OF, "logs, errors, websocket_events and network_bodies"),
        ):
            if value is not None and not applies:
                raise ValueError(f"The {name} filter applies to {kinds}, not to {what}.")
        low, high = self.status_min, self.status_max
        if low is not None and high is not None and low > high:
            raise ValueError(
                f"status_min {low} is above status_max {high}: no status is both. Pass the lower bound as "
                "status_min, or only one of them."
            )
        for name, text in (
            ("level", self.level),
            ("url", self.url),
            ("method", self.method),
            ("text", self.text),
        ):
            if text is not None and not isinstance(text, str):
                raise TypeError(f"{name} must be text or None, not {text!r}")
        if self.level is not None and self.level.lower() not in LEVEL_RANK:
            raise ValueError(f"level must be one of {', '.join(LEVELS_ACCEPTED)}; got {self.level!r}")
        if self.direction is not None and self.direction not in ("sent", "received"):
            raise ValueError(f"direction must be 'sent' or 'received'; got {self.direction!r}")

    @property
    def tab(self) -> int | AllTabs:
        return ALL_TABS if self.tab_id is None else self.tab_id

    @property
    def filtered(self) -> bool:
        """Whether any filter beyond tab, cursor and limit is set."""
        return any(
            v is not None
            for v in (
                self.level,
                self.url,
                self.method,
                self.status_min,
                self.status_max,
                self.direction,
                self.text,
            )
        )

    def matcher(self) -> Callable[[Any], bool] | None:
        """A test an entry must pass (None: every entry matches)."""
        tests: list[Callable[[Any], bool]] = []
        if self.level is not None:
            rank = LEVEL_RANK[self.level.lower()]
            tests.append(lambda e: LEVEL_RANK.get(e.level, 1) >= rank)
        if self.url:
            needle = self.url
            tests.append(lambda e: needle in e.url)
        if self.method:
            wanted = self.method.upper()
            tests.append(lambda e: e.method == wanted)
        if self.status_min is not None or self.status_max is not None:
            low = self.status_min if self.status_min is not None else 0
            high = self.status_max if self.status_max is not None else 999
            tests.append(lambda e: e.status is not None and low <= e.status <= high)
        if self.direction is not None:
            direction = self.direction
            tests.append(lambda e: e.event == direction)
        if self.text:
            text, fields = self.text.casefold(), _TEXT_OF[self.what]
            tests.append(lambda e: any(text in (getattr(e, f) or "").casefold() for f in fields))
        if not tests:
            return None
        if len(tests) == 1:
            return tests[0]
        return lambda e: all(test(e) for test in tests)


class EventHistory(Protocol):
    """The tab core's event bus, as a `tab_events` query reads it."""

    @property
    def last_seq(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    def dropped_for(self, tab_id: int | None) -> int: ...

    def missed_after(self, since: int, *, tab_id: int | None = None) -> bool: ...

    def history(self, *, since: int | None = None, tab_id: int | None = None) -> list[Any]: ...


def query_tab_events(
    events: EventHistory, query: Query, *, active_tab_id: int | None = None
) -> ObserveResult:
    """`tab_events`: the tab core's event history, paged like the telemetry kinds. Its sequence
    numbers (and so its cursors) are the event bus's, which a recorder made with
    `numbering=events` shares: then one cursor serves every kind."""
    matched = events.history(since=query.since, tab_id=query.tab_id)
    older = False
    if query.since is None:
        page, more, older = matched[-query.limit :], False, len(matched) > query.limit
    else:
        page, more = matched[: query.limit], len(matched) > query.limit
    return ObserveResult(
        what="tab_events",
        entries=tuple(page),
        currently_tracked_tab=active_tab_id,
        filtered_by_tab=query.tab_id,
        total_entries_all_tabs=len(events.history()),
        returned_entries=len(page),
        dropped=events.dropped if query.tab_id is None else events.dropped_for(query.tab_id),
        next_cursor=page[-1].seq if more else events.last_seq,
        has_more=more,
        older=older,
        # Events (of the tab) after the cursor the history no longer holds (it keeps the last ones only).
        missed=query.since is not None and events.missed_after(query.since, tab_id=query.tab_id),
    )
