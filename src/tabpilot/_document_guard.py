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

import json
from collections.abc import Callable

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
        # Not waited for: a target gone meanwhile has nothing left to answer.
        if refuses(url, in_frame):
            session.send("Fetch.failRequest", {"requestId": request_id, "errorReason": "BlockedByClient"})
        else:
            session.send("Fetch.continueRequest", {"requestId": request_id})

    dispose = session.on_events(("Fetch.requestPaused",), paused)
    session.send("Fetch.enable", {"patterns": PATTERNS})
    return dispose
