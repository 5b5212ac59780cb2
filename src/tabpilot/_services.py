"""What an instance gets from its manager: the tab rules and services, injected, never reached for."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ._cdp import TargetSession
from ._downloads import Downloads
from ._errors import TabLike
from ._policy import UrlPolicy
from ._pw import Disposer
from ._tab import Tab, Timeouts
from ._types import TabLimitPolicy

TargetHook = Callable[[TargetSession, Tab], Disposer]
"""Called with the session of each new tab's target (and of each cross-site iframe in it) and the
tab; returns its disposer."""


class TabBudget:
    """A cap on the open tabs of several managers together (the sessions of one server sharing a
    browser): a tab a page opens beyond it is closed at once, a tab asked for is refused. Never
    closes another manager's tab to make room."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("the total tab limit must be at least 1")
        self.limit = limit
        self._counters: list[Callable[[], int]] = []
        self.opening = asyncio.Lock()
        """Held by a tool opening a tab under this budget, from the check to the tab counted."""
        self.reserved = 0
        """Places held for tabs a tool is opening (room made, not counted yet): a tab a page
        opens meanwhile cannot take them."""

    def join(self, count: Callable[[], int]) -> Callable[[], None]:
        """Count a manager's open tabs (`count()`) against the budget; returns the leave."""
        self._counters.append(count)

        def leave() -> None:
            if count in self._counters:
                self._counters.remove(count)

        return leave

    @property
    def used(self) -> int:
        return sum(count() for count in self._counters)

    @property
    def full(self) -> bool:
        return self.used >= self.limit

    @property
    def over(self) -> bool:
        """More tabs than the limit, counting the places held for tabs being opened."""
        return self.used + self.reserved > self.limit


class BrowserClaims:
    """The browsers instances are connected to over CDP, known by the id in their DevTools URL, for
    every manager that shares it (the sessions of one server): one browser is driven by one open
    instance, whatever URL reached it and whichever client asked, else each of its pages would
    have two tab ids and two clients would act on the same tabs unknowingly."""

    def __init__(self) -> None:
        self._holders: dict[str, tuple[object, str, Callable[[], bool]]] = {}
        self._connecting: set[str] = set()

    def holder(self, browser_id: str) -> tuple[object, str] | None:
        """The owner (a manager) and instance id of the open instance connected to `browser_id`."""
        held = self._holders.get(browser_id)
        if held is None or not held[2]():  # a lost or closed instance does not count
            return None
        return held[0], held[1]

    def is_connecting(self, browser_id: str) -> bool:
        return browser_id in self._connecting

    @contextmanager
    def connecting(self, browser_id: str) -> Iterator[None]:
        """While `browser_id` is being connected: a second connect meanwhile is told so."""
        self._connecting.add(browser_id)
        try:
            yield
        finally:
            self._connecting.discard(browser_id)

    def hold(self, browser_id: str, owner: object, instance_id: str, is_open: Callable[[], bool]) -> None:
        self._holders[browser_id] = (owner, instance_id, is_open)

    def release(self, owner: object, instance_id: str) -> None:
        for browser_id, (held_by, held_id, _) in list(self._holders.items()):
            if held_by is owner and held_id == instance_id:
                del self._holders[browser_id]


@dataclass(slots=True)
class TabRules:
    """The manager's tab rules, shared by reference with its instances (a change applies at once)."""

    max_tabs: int = 20
    tab_limit_policy: TabLimitPolicy = "reject"
    follow_new_tabs: bool = False
    budget: TabBudget | None = None
    """A cap shared with other managers, if any."""


@dataclass(frozen=True, slots=True)
class InstanceServices:
    """What an instance needs of its manager."""

    next_tab_id: Callable[[str | None], tuple[int, bool | None]]
    """The id of a new tab, given its target id: the id the same page had in a lost instance of the
    same browser (connected again, automatically or by hand), else a new one; and, for an id given
    back (the tab is back, not new), whether its tab was the user's own (None: a new id)."""
    emit: Callable[..., object]
    """`emit(type, tab_id, instance_id, **data)`: the manager's event bus."""
    activated: Callable[[str], None]
    """A tab of this instance (id given) was activated: it becomes the default instance."""
    is_default: Callable[[str], bool]
    successor: Callable[[str], str | None]
    """The open instance in the place of a lost one (id given): the one that replaced it, or that
    replaced its replacement in turn; None when none of them is open any more."""
    all_open_tabs: Callable[[], Sequence[TabLike]]
    rules: TabRules
    timeouts: Timeouts
    policy: UrlPolicy
    target_hooks: Sequence[TargetHook]
    downloads: Downloads
    stopping: Callable[[], bool] = lambda: False
    """Whether the manager's owner is about to close it (`TabManager.stopping`)."""
    oldest_tab: Callable[[Tab | None], Tab | None] = lambda exclude: None
    """The tab a total cap (`TabRules.budget`) closes first under close-oldest, of all the manager's
    open instances: the least recently used one each instance's cap may close (`exclude`: the new
    tab, whose opener is spared too). Never another manager's."""
    close_for_room: Callable[[Tab], Awaitable[None]] = lambda tab: asyncio.sleep(0)
    """Close `oldest_tab`'s tab, of another instance, for a tab a tool opens under the total cap."""
    drop_for_room: Callable[[Tab], None] = lambda tab: None
    """Close `oldest_tab`'s tab, of another instance, at once for a tab a page opened over the total
    cap (it leaves the list now; its target closes in the background)."""
