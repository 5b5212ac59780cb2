"""The URL policy for every document a page loads, a server's redirects included.

Playwright's routes (`ContextHandle.route_navigations`, which the instance sets up for the policy)
see the first request of a redirect chain only: a URL the policy allows that redirects to an origin
it refuses would load. A page target's own session (`TargetSession`) therefore intercepts the
page's document requests at the request stage (`Fetch.enable`), where each hop of a redirect chain
comes again, and fails those the policy refuses as the browser fails a request it blocks itself
(BlockedByClient: the browser's error page); the others go on unchanged. Set up only while the
policy restricts anything: every document request then waits for one round trip here.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from ._cdp import TargetSession

PATTERNS = [{"urlPattern": "*", "resourceType": "Document", "requestStage": "Request"}]


def guard_documents(session: TargetSession, refuses: Callable[[str, bool], bool]) -> Callable[[], None]:
    """Hold the document requests of `session`'s target to `refuses(url, in_frame)` (`in_frame`:
    a frame inside the page, not the page itself); returns the disposer."""

    def paused(_method: str, raw: str) -> None:
        params = json.loads(raw).get("params") or {}
        request_id = params.get("requestId")
        if not request_id:
            return
        in_frame = params.get("frameId") != session.target_id
        url = str((params.get("request") or {}).get("url", ""))
        if refuses(url, in_frame):
            answer = session.send(
                "Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"}
            )
        else:
            answer = session.send("Fetch.continueRequest", {"requestId": request_id})
        asyncio.ensure_future(answer).add_done_callback(_consume)  # gone meanwhile: nothing to answer

    dispose = session.on_events(("Fetch.requestPaused",), paused)
    asyncio.ensure_future(session.send("Fetch.enable", {"patterns": PATTERNS})).add_done_callback(_consume)
    return dispose


def _consume(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()
