"""`browser_observe`: per-tab telemetry (SPEC 3), every entry with its tabId, any tab, open or closed.

Structured `result` is the library's `ObserveResult.to_dict()`:
    {what, entries: [{seq, timestamp, tabId, ...}], currently_tracked_tab, filtered_by_tab,
     total_entries_all_tabs, returned_entries, dropped, next_cursor, has_more, older}
and, for network_waterfall, `pending_requests` (requests still in flight, each with its tabId).
The text shows the same metadata on one line, then one line per entry, each starting `[tab N]`.
An answer stops at ANSWER_CHARS (at a whole entry), and says where to read on.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import BeforeValidator, Field

from tabpilot import Query, TabNotFoundError, query_tab_events

from ..advice import LINE_CHARS, PREVIEW_CHARS, cut_in_list, entry_line
from .base import Call, TabIdValue, ToolSpec

ObserveWhat = Literal[
    "errors", "logs", "network_waterfall", "network_bodies", "websocket_events", "actions", "tab_events"
]

_ARGUMENT_OF = {"status_min": "statusMin", "status_max": "statusMax"}
"""This tool's argument for each `Query` field it names otherwise."""
_QUERY_FIELD = re.compile(rf"\b({'|'.join(_ARGUMENT_OF)})\b")

ANSWER_CHARS = 40_000
"""The most characters of entries one answer shows (about 10,000 tokens, as a snapshot's default
cut): a page can log lines of 8 KB, and a thousand of them were megabytes, more than a host takes
from a tool. The answer stops at the last whole entry within it and says where to read on; one
entry is shown whatever its size (a body asked for whole)."""


def _lower(value: object) -> object:
    """A word of a fixed set in any case ("ERROR", "Logs"): the library takes levels in any case,
    and the schema's enum stays the short lower-case one."""
    return value.strip().lower() if isinstance(value, str) else value


SETTLE_SECONDS = 1.0
"""How long to wait for entries still being completed (sizes, headers, bodies need a round trip)."""


async def browser_observe(
    call: Call,
    what: Annotated[
        ObserveWhat,
        BeforeValidator(_lower),
        Field(description="logs: console; network_bodies: headers, bodies; actions: this server's calls."),
    ],
    tabId: Annotated[
        TabIdValue | None,
        Field(description="Only this tab (closed too). Default: all."),
    ] = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="Most entries.")] = 100,
    since: Annotated[
        int | None,
        Field(
            ge=0,
            description="A next_cursor: only later entries.",
        ),
    ] = None,
    level: Annotated[
        Literal["debug", "info", "log", "warning", "warn", "error"] | None,
        BeforeValidator(_lower),
        Field(description="logs: level and above."),
    ] = None,
    url: Annotated[str | None, Field(description="URL contains.")] = None,
    method: Annotated[str | None, Field(description="HTTP method.")] = None,
    statusMin: Annotated[int | None, Field(ge=100, le=599, description="At least.")] = None,
    statusMax: Annotated[int | None, Field(ge=100, le=599, description="At most.")] = None,
    direction: Annotated[
        Literal["sent", "received"] | None,
        BeforeValidator(_lower),
        Field(description="websocket_events: sent or received."),
    ] = None,
    text: Annotated[str | None, Field(description="Contains, any case.")] = None,
) -> None:
    tab_id = _tab_filter(call, tabId)
    active = _active_tab_id(call)
    try:
        query = Query(
            what,
            tab_id=tab_id,
            limit=limit,
            since=since,
            level=level,
            url=url,
            method=method,
            status_min=statusMin,
            status_max=statusMax,
            direction=direction,
            text=text,
        )
    except ValueError as exc:  # said with the library's names of the filters, not this tool's
        raise ValueError(_QUERY_FIELD.sub(lambda m: _ARGUMENT_OF[m[0]], str(exc))) from exc
    if what == "tab_events":
        result = query_tab_events(call.manager.events, query, active_tab_id=active)
    else:
        telemetry = call.session.telemetry
        await telemetry.settle(SETTLE_SECONDS)
        result = telemetry.query(query, active_tab_id=active)
    # One entry asked for (since=its seq - 1, limit=1; or a filter that matches one): a body entry
    # with its headers and whole bodies, a console line's or error's whole text; several: each
    # cut short, and the head says how to see one.
    whole = len(result.entries) == 1
    lines = [entry_line(e, whole=whole) for e in result.entries]
    matched = len(lines)
    # Each entry's JSON form is made once, for clients that get it: measured here, sent as it is.
    forms = [e.to_dict() for e in result.entries] if call.session.config.structured_content else None
    costs = (
        [max(len(line), len(json.dumps(d, default=str))) for line, d in zip(lines, forms, strict=True)]
        if forms is not None
        else [len(line) for line in lines]
    )
    fit = _fitting(costs if since is not None else costs[::-1], ANSWER_CHARS)
    if fit < matched:
        # Cut at a whole entry: from a cursor the oldest ones (the next call goes on from the last
        # shown), else the newest (older ones are read from since=0).
        kept = slice(None, fit) if since is not None else slice(-fit, None)
        entries, lines = result.entries[kept], lines[kept]
        forms = forms[kept] if forms is not None else None
        if since is not None:
            result = replace(result, entries=entries, has_more=True, next_cursor=entries[-1].seq)
        else:
            result = replace(result, entries=entries, older=True)
        result = replace(result, returned_entries=fit)

    scope = f"tab {tab_id}" if tab_id is not None else "all tabs"
    head = (
        f"{what}: {result.returned_entries} entr{'y' if result.returned_entries == 1 else 'ies'} of {scope} "
        f"(currently_tracked_tab: {_or_none(result.currently_tracked_tab)}, total_entries_all_tabs: "
        f"{result.total_entries_all_tabs}, dropped: {result.dropped}, next_cursor: {result.next_cursor})."
    )
    if tab_id is not None and not _is_open(call, tab_id):
        head += f" Tab {tab_id} is closed; these are its recorded entries."
    if result.missed:
        head += (
            f" Entries newer than since={since} were dropped before this read (the buffer keeps the newest "
            "only): what is shown does not follow on from your cursor."
        )
    if len(lines) < matched:
        head += (
            f" Only {len(lines)} of the {matched} entries found fit in one answer (at most "
            f"{ANSWER_CHARS:,} characters); a filter or tabId reads fewer."
        )
    if since is not None and since > result.next_cursor:
        # Cursors only grow: a larger one than the newest entry's came from another run of the
        # server (numbering starts again at a restart) or was made up. Nothing after it exists yet.
        head += (
            f" since={since} is ahead of the newest entry ({result.next_cursor}): it is not a cursor of this "
            f"server's run (numbering starts again when the server restarts). Call again with "
            f"since={result.next_cursor} for new entries only, or without since for the newest."
        )
    elif result.has_more:
        head += f" More entries match: call again with since={result.next_cursor}."
    elif result.older:
        head += " These are the newest; older entries match too: read them from since=0."
    elif not lines:
        head += " Nothing matched" + (" these filters." if query.filtered else ".")
    if what == "network_bodies" and not whole and result.entries:
        first = result.entries[0].seq
        head += (
            f" Bodies are cut at {PREVIEW_CHARS} characters here: one entry comes with its headers and "
            f"whole bodies (entry #{first}: since={first - 1}, limit=1)."
        )
    long = next((e for e in result.entries if cut_in_list(e)), None) if not whole else None
    if long is not None:
        head += (
            f" Texts over {LINE_CHARS:,} characters are cut here: one entry comes whole (entry "
            f"#{long.seq}: since={long.seq - 1}, limit=1)."
        )
    if result.pending:
        in_flight = [entry_line(p) for p in result.pending]
        shown = _fitting([len(line) for line in in_flight], max(ANSWER_CHARS - sum(map(len, lines)), 0))
        lines.append(f"Still in flight ({len(result.pending)}):")
        lines.extend(in_flight[:shown])
        if shown < len(in_flight):
            lines.append(f"... and {len(in_flight) - shown} more (a url filter or tabId narrows them).")
            result = replace(result, pending=result.pending[:shown])
    data = replace(result, entries=()).to_dict()
    data["entries"] = forms or []  # (without structured content nobody reads them)
    # One result line each: the head alone is what the actions log keeps as this call's outcome.
    call.response.result(head, data)
    for line in lines:
        call.response.result(line)


def _fitting(costs: list[int], budget: int) -> int:
    """How many of the first `costs` fit in `budget` (at least one, if there is one)."""
    total = 0
    for count, cost in enumerate(costs):
        total += cost + 1  # its line's end
        if total > budget and count:
            return count
    return len(costs)


def _tab_filter(call: Call, tab_id: int | str | None) -> int | None:
    """The tab id to filter on. Closed tabs are allowed (their entries outlive them), so a number
    is taken as it is; a CDP target id must name an open tab."""
    if tab_id is None:
        return None
    if isinstance(tab_id, bool):
        raise ValueError("tabId must be a tab id (an integer), not a boolean.")
    if isinstance(tab_id, str):
        text = tab_id.strip()
        if not (text.isascii() and text.isdigit()) or len(text) > 18:  # no tab id is that long
            return call.manager.tab(text).id
        tab_id = int(text)
    if tab_id < 1:
        raise ValueError(f"tabId must be a positive integer, got {tab_id}.")
    if not call.manager.ever_opened(tab_id):
        # No tab ever had it: a mistake, not a closed tab whose entries are kept.
        raise TabNotFoundError(tab_id, call.manager.tabs())
    return tab_id


def _is_open(call: Call, tab_id: int) -> bool:
    return any(info.id == tab_id for info in call.manager.tabs())


def _active_tab_id(call: Call) -> int | None:
    default = call.manager.default_instance
    active = default.active_tab if default is not None else None
    return active.id if active is not None else None


TOOLS = [
    ToolSpec(
        "browser_observe",
        browser_observe,
        "What tabs did: console, errors, network, WebSocket, actions, tab events. Pass next_cursor "
        "as since for new entries only.",
        ToolAnnotations(title="Observe tab telemetry", read_only_hint=True, open_world_hint=False),
        recorded=False,
    )
]


def _or_none(tab_id: int | None) -> str:
    """A tab id in the text, or "none" (no tab is active: the default instance was closed)."""
    return "none" if tab_id is None else str(tab_id)
