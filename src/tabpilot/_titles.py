"""Live titles: each tab's page tells its title when it changes, so listing tabs asks no browser.

Chromium reports a target's URL changes (`Target.targetInfoChanged`) but not its title's: a page
that sets `document.title`, or a new document whose <title> is parsed after the navigation
committed, leaves the target's title stale. Without help, a listing must ask the browser for
every title (`Target.getTargets`: a round trip through Playwright's driver on every call).

`watch_titles` puts a small observer into each document of a tab's top frame, in an isolated
world of its own (the page sees neither its binding nor its objects), added for every new
document (`Page.addScriptToEvaluateOnNewDocument`; `runImmediately` for the current one). It
reports `[title, href]` through a binding (`Runtime.bindingCalled`) at the document's start and
whenever either changes: the <head> changing (a new <title>, its text), the document element
being replaced, a same-document navigation; and once the document is parsed and once it is
loaded (for a <title> the parser put in the body).

A report counts only for the URL it names: `Tab.title_live` holds while the tab's URL is the
one its page last reported with its title. Reports need Runtime enabled on the session, which
the watcher does (without telemetry, which enables it too, titles had stayed as the page first
had them). A page that cannot report (scripts do not run in it, such as a browser-internal page)
is not live, and a listing asks the browser then, as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ._cdp import TargetSession

WORLD = "tabpilot-titles"
"""The isolated world the observer runs in."""
BINDING = "__tabpilotTitle"
"""The binding it reports through (exists in WORLD only)."""

SOURCE = (
    """(() => {
  if (window !== window.top) return;
  const send = globalThis.BINDING;
  if (typeof send !== "function") return;
  let last = "";
  const report = () => {
    const now = JSON.stringify([document.title, location.href]);
    if (now !== last) { last = now; send(now); }
  };
  let head = null;
  const heads = new MutationObserver(report);
  const watch = () => {
    if (document.head !== head) {
      head = document.head;
      heads.disconnect();
      if (head) heads.observe(head, { subtree: true, childList: true, characterData: true });
    }
    if (document.documentElement) root.observe(document.documentElement, { childList: true });
    report();
  };
  const root = new MutationObserver(watch);
  root.observe(document, { childList: true });
  if (globalThis.navigation) navigation.addEventListener("currententrychange", report);
  addEventListener("popstate", report);
  addEventListener("hashchange", report);
  // A <title> the parser puts in the body (after body content) changes no head: the document
  // being parsed, and loaded, is when it has arrived.
  document.addEventListener("DOMContentLoaded", report);
  addEventListener("load", report);
  watch();
})();
//# sourceURL=tabpilot://titles.js"""
).replace("BINDING", BINDING)


def watch_titles(session: TargetSession, report: Callable[[str, str], None]) -> Callable[[], None]:
    """Start the observer on a tab's session; `report(title, href)` for each report. Returns the
    disposer of the listener (the observer goes with the session)."""
    session.send("Runtime.addBinding", {"name": BINDING, "executionContextName": WORLD})
    session.enable("Runtime")  # reports come only with Runtime enabled (telemetry needs it too)
    session.send(
        "Page.addScriptToEvaluateOnNewDocument",
        {"source": SOURCE, "worldName": WORLD, "runImmediately": True},
    )

    def on_binding(_method: str, raw: str) -> None:
        if BINDING not in raw:
            return
        params: dict[str, Any] = json.loads(raw).get("params") or {}
        if params.get("name") != BINDING:
            return
        try:
            title, href = json.loads(params.get("payload", ""))
        except (ValueError, TypeError):
            return  # not ours to read: a page cannot call the binding, but stay safe
        if isinstance(title, str) and isinstance(href, str):
            report(title, href)

    return session.on_events(("Runtime.bindingCalled",), on_binding)
