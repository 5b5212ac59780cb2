"""Telemetry benchmark: how fast entries go into the rings, and how fast a tab-filtered query is.

    .venv/bin/python bench/telemetry_bench.py [--quick]

`run(quick)` is what `bench/run.py` calls. No browser: each tab's feed gets the raw CDP messages
a page's `console.log` produces (`Runtime.consoleAPICalled`, as Chromium writes it) from a
stand-in for its target session, so ingest is measured on the path real console events take
(skip-or-parse, entry, ring, eviction). Queries run over rings filled to 10k and 100k entries
spread over 10 tabs, and over one tab holding all of them (the worst case for a filter that
matches nothing).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

from tabpilot import Query, Telemetry
from tabpilot._cdp import event_method

TABS = 10


class _Session:
    """Stands in for a tab's target session: hands the feed the raw messages given to `deliver`."""

    def __init__(self) -> None:
        self.methods: frozenset[str] = frozenset()
        self.parent = None  # a page's own session, not a cross-site iframe's
        self.handler: Callable[[str, str], None] = lambda method, raw: None

    def deliver(self, raw: str) -> None:
        """What `TargetSession` does with a target's event: read its method, pass it on if asked for."""
        method = event_method(raw)
        if method in self.methods:
            self.handler(method, raw)

    def on_events(self, methods: Iterable[str], handler: Callable[[str, str], None]) -> Callable[[], None]:
        self.methods, self.handler = frozenset(methods), handler
        return lambda: None

    def on_close(self, handler: Callable[[], None]) -> None:
        pass

    def send(self, method: str, params: dict[str, Any] | None = None) -> Any:
        return None

    def enable(self, domain: str) -> Any:
        return None


class _Tab:
    def __init__(self, tab_id: int) -> None:
        self.id = tab_id


def _console(level: str, text: str) -> str:
    """A `Runtime.consoleAPICalled` message as Chromium sends it."""
    params = {
        "type": level,
        "args": [{"type": "string", "value": text}],
        "executionContextId": 1,
        "timestamp": 1.0,
        "stackTrace": {
            "callFrames": [{"url": "http://127.0.0.1:8000/app.js", "lineNumber": 12, "columnNumber": 3}]
        },
    }
    return json.dumps({"method": "Runtime.consoleAPICalled", "params": params}, separators=(",", ":"))


def _stats(samples: list[float], unit: str) -> dict[str, Any]:
    ordered = sorted(samples)
    p90 = ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]
    return {"median": statistics.median(samples), "p90": p90, "n": len(samples), "unit": unit}


def _fed(max_entries: int) -> tuple[Telemetry, list[Callable[[str], None]]]:
    """A Telemetry fed by TABS stand-in sessions; the rate bound is lifted so nothing is shed."""
    telemetry = Telemetry(max_entries=max_entries, max_event_rate=1e12)
    sessions = [_Session() for _ in range(TABS)]
    for index, session in enumerate(sessions):
        telemetry.attach_target(session, _Tab(index + 1))  # type: ignore[arg-type]
    return telemetry, [session.deliver for session in sessions]


def ingest(runs: int, count: int) -> dict[str, Any]:
    """Console entries per second through a tab's feed, in steady state (rings full, evicting)."""
    per_second: list[float] = []
    for _ in range(runs):
        telemetry, deliver = _fed(max_entries=10_000)
        messages = [_console("log", f"message {i}") for i in range(count)]
        start = time.perf_counter()
        for i, message in enumerate(messages):
            deliver[i % TABS](message)
        per_second.append(count / (time.perf_counter() - start))
        assert telemetry.listener_errors == 0
    actions: list[float] = []
    for _ in range(runs):
        telemetry = Telemetry(max_entries=10_000)
        arguments = {"ref": "3e5", "button": "left"}
        start = time.perf_counter()
        for i in range(count):
            telemetry.record_action(i % TABS + 1, "browser_click", arguments, "Clicked", ok=True)
        actions.append(count / (time.perf_counter() - start))
    return {
        "console_feed_entries_per_s": _stats(per_second, "entries/s"),
        "record_action_entries_per_s": _stats(actions, "entries/s"),
    }


def _time_query(telemetry: Telemetry, repeats: int, **query: Any) -> dict[str, Any]:
    samples: list[float] = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        telemetry.query(Query("logs", **query))
        samples.append((time.perf_counter_ns() - start) / 1e6)
    return _stats(samples, "ms")


def queries(size: int, repeats: int) -> dict[str, Any]:
    """Query times over a logs ring holding `size` entries."""
    telemetry, deliver = _fed(max_entries=size)
    for i in range(size):
        deliver[i % TABS](_console("log", f"message {i}"))
    assert len(telemetry.query(Query("logs", limit=1000)).entries) == 1000
    cursor = telemetry.last_seq - 100 * TABS  # the last 100 entries of each tab are "new"
    spread = {
        "tab_filtered_ms": _time_query(telemetry, repeats, tab_id=3),
        "tab_filtered_since_cursor_ms": _time_query(telemetry, repeats, tab_id=3, since=cursor),
        "tab_filtered_url_match_ms": _time_query(telemetry, repeats, tab_id=3, url="app.js"),
        "tab_filtered_no_match_ms": _time_query(telemetry, repeats, tab_id=3, url="no-such-url"),
        "all_tabs_ms": _time_query(telemetry, repeats),
    }
    # One tab holds the whole buffer: a filter that matches nothing walks every entry once.
    single, deliver = _fed(max_entries=size)
    for i in range(size):
        deliver[0](_console("log", f"message {i}"))
    spread["one_tab_full_buffer_no_match_ms"] = _time_query(
        single, max(5, repeats // 10), tab_id=1, url="none"
    )
    return spread


def run(quick: bool) -> dict[str, Any]:
    runs = 3 if quick else 7
    repeats = 50 if quick else 300
    return {
        "ingest": ingest(runs, 20_000 if quick else 100_000),
        "query_10k": queries(10_000, repeats),
        "query_100k": queries(100_000, repeats),
        "setup": {"tabs": TABS, "limit": 100, "kind": "logs"},
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None, allow_abbrev=False
    )
    parser.add_argument("--quick", action="store_true")
    print(json.dumps(run(parser.parse_args().quick), indent=2))
