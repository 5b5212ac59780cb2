"""The document a tab's feed came too late for, from the page's own navigation timing (see
`TabFeed._recover_navigation`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ._entries import NetworkEntry

RECOVER_WITHIN = 10.0
"""Seconds: a document loaded this recently, before the feed saw it, is recovered from timing."""
NAVIGATION_TIMING = """(() => {
  const n = performance.getEntriesByType("navigation")[0];
  return n && {url: n.name, status: n.responseStatus, start: performance.timeOrigin + n.startTime,
               duration: n.duration, size: n.encodedBodySize, redirects: n.redirectCount,
               end: n.responseEnd && performance.timeOrigin + n.responseEnd};
})()"""


def document_entry(value: Any, next_seq: Callable[[], int], tab_id: int) -> NetworkEntry | None:
    """The waterfall row of what `NAVIGATION_TIMING` read, or None: nothing was read, the page is
    blank, or its document loaded more than `RECOVER_WITHIN` seconds ago. (`redirects`: how many
    redirects led to the document, 0 when one crossed origins; `end`: when its answer had all come
    in, 0 while it is still coming.)"""
    if not isinstance(value, dict):
        return None
    url, started = str(value.get("url") or ""), float(value.get("start") or 0) / 1000
    if not url or url.startswith("about:") or time.time() - started > RECOVER_WITHIN:
        return None
    size = value.get("size")
    return NetworkEntry(
        next_seq(),
        time.time(),
        tab_id,
        "GET",
        url,
        "document",
        int(value.get("status") or 0) or None,
        "",
        None,
        "",
        started,
        float(value.get("duration") or 0),
        {},
        None,
        int(size) if isinstance(size, int | float) and size > 0 else None,
        True,
        None,
    )
