"""Which page targets are an instance's tabs, and which target a Playwright page is.

A browser-level CDP session sees every target of the browser: those of other contexts (other
sessions' isolated contexts) too. `TargetScope` keeps the ones of one browser context: until the
instance knows its context's id (from its first page), page targets wait as pending; then those of
its context are adopted and the rest dropped. It also remembers targets that are gone, so a late
event never brings a closed tab back.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._pw import ContextHandle, PageHandle
from ._types import OpenCause

TargetInfo = dict[str, Any]
GONE_REMEMBERED = 1000


def is_tab_target(info: TargetInfo) -> bool:
    # Prerendered pages and other page-like targets carry a subtype; they are no tabs.
    return info.get("type") == "page" and not info.get("subtype")


def open_cause(info: TargetInfo, *, creating: bool) -> OpenCause:
    """Why a target exists: opened by a page with (popup) or without (link) a handle on its opener,
    by a tool of ours (`creating`: one is under way), or by someone else."""
    if info.get("openerId"):
        # window.open keeps a handle on its opener; target=_blank links are noopener by default.
        return "popup" if info.get("canAccessOpener") else "link"
    return "tool" if creating else "external"


class TargetScope:
    """The page targets of one browser context; see the module docstring."""

    def __init__(self) -> None:
        self.context_id: str | None = None
        self.foreign: frozenset[str] = frozenset()
        """Contexts other clients made in the browser (Target.createBrowserContext): never this
        one, though Playwright lists their pages with the browser's own context's."""
        self._pending: OrderedDict[str, TargetInfo] = OrderedDict()
        self._gone: OrderedDict[str, None] = OrderedDict()

    def created(self, info: TargetInfo) -> bool:
        """A target appeared: True if it is a tab of this context to register now."""
        target_id = info.get("targetId", "")
        if not is_tab_target(info):
            return False
        # Chromium never reuses a target id; the extension's relay announces a tab again when the
        # user shares it again (a new tab of the instance, as its earlier one was reported closed).
        self._gone.pop(target_id, None)
        if self.context_id is None:
            self._pending[target_id] = info
            return False
        return info.get("browserContextId") == self.context_id

    def changed(self, info: TargetInfo) -> None:
        target_id = info.get("targetId", "")
        if target_id in self._pending:
            self._pending[target_id] = info

    def learn(self, info: TargetInfo) -> list[TargetInfo]:
        """The context of a page of ours is known (from `info`): the pending targets it holds."""
        if self.context_id is not None or not info.get("browserContextId"):
            return []
        if info["browserContextId"] in self.foreign:
            return []
        self.context_id = info["browserContextId"]
        pending, self._pending = self._pending, OrderedDict()
        return [i for i in pending.values() if i.get("browserContextId") == self.context_id]

    def ours(self, info: TargetInfo) -> bool:
        return info.get("browserContextId") == self.context_id and info.get("targetId", "") not in self._gone

    def gone(self, target_id: str) -> None:
        self._pending.pop(target_id, None)
        self._gone[target_id] = None
        while len(self._gone) > GONE_REMEMBERED:
            self._gone.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Identified:
    """A Playwright page, named by its target."""

    info: TargetInfo
    window_id: int | None
    complete: bool
    """The page had loaded already (asked only of pages that were there before)."""


async def identify(
    context: ContextHandle, page: PageHandle, *, loaded: bool, spawn: Callable[..., object]
) -> Identified | None:
    """Ask a page's own CDP session which target it is (one round trip); None if it closed first.
    The session is detached in the background (`spawn`): nothing waits for that."""
    try:
        session = await context.new_cdp_session(page)
    except Exception:
        return None  # closed meanwhile; its target's destruction reports it
    try:
        asks: list[Any] = [session.send("Target.getTargetInfo"), session.send("Browser.getWindowForTarget")]
        if loaded:
            ready = {"expression": "document.readyState", "returnByValue": True}
            asks.append(asyncio.wait_for(session.send("Runtime.evaluate", ready), 1.0))
        target, window, *state = await asyncio.gather(*asks, return_exceptions=True)
    finally:
        spawn(session.detach(), settle=False)
    if isinstance(target, BaseException):
        return None
    window_id = None if isinstance(window, BaseException) else window.get("windowId")
    complete = (
        bool(state)
        and not isinstance(state[0], BaseException)
        and state[0]["result"].get("value") == "complete"
    )
    return Identified(target["targetInfo"], window_id, complete)
