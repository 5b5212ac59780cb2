"""Per-tab telemetry: console, page errors, network, bodies, WebSocket frames and actions.

Every entry is tagged with the id of its tab (None for entries that belong to no tab) and a
sequence number from one counter shared by all kinds. Entries live in bounded rings, one per
kind, and outlive their tab. `_entries` holds the records, `_feed` reads one tab's CDP events
(`_sockets` its WebSocket connections), `_recorder` keeps the rings, `_query` says what to read.
"""

from ._entries import (
    REDACTED,
    TELEMETRY_KINDS,
    ActionEntry,
    BodyEntry,
    ConsoleEntry,
    Direction,
    ErrorEntry,
    NetworkEntry,
    ObservedEntry,
    ObserveResult,
    PendingRequest,
    TelemetryKind,
    WebSocketEntry,
)
from ._query import LEVELS_ACCEPTED, MAX_LIMIT, Query, QueryKind, query_tab_events
from ._recorder import Telemetry

__all__ = [
    "LEVELS_ACCEPTED",
    "MAX_LIMIT",
    "REDACTED",
    "TELEMETRY_KINDS",
    "ActionEntry",
    "BodyEntry",
    "ConsoleEntry",
    "Direction",
    "ErrorEntry",
    "NetworkEntry",
    "ObserveResult",
    "ObservedEntry",
    "PendingRequest",
    "Query",
    "QueryKind",
    "Telemetry",
    "TelemetryKind",
    "WebSocketEntry",
    "query_tab_events",
]
