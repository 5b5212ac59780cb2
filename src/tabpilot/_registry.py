"""The tabs of one instance: lookup by id and by target, discovery order, and most-recently-used order.

Pure bookkeeping, no browser: the instance decides what happens, the registry remembers it.
The active tab is the most recently used one (headless Chromium has no focus to ask about).
"""

from __future__ import annotations

import itertools

from ._tab import Tab
from ._types import TabInfo

_CLOCK = itertools.count()
"""One clock for every registry: when tabs were last used compares across instances too (the
oldest tab of all a manager's instances, under a total cap)."""


class TabRegistry:
    def __init__(self, instance_id: str) -> None:
        self.instance_id = instance_id
        self._tabs: dict[int, Tab] = {}
        self._by_target: dict[str, Tab] = {}
        self._mru: list[int] = []
        """Tab ids in the order they were made active (a background tab first of all); the last
        one is the active tab, and closing it promotes the one before."""
        self._used: dict[int, int] = {}
        """When each tab was last used: opened or made active (a tick of `_CLOCK`)."""

    def __len__(self) -> int:
        return len(self._tabs)

    @property
    def tabs(self) -> list[Tab]:
        """Open tabs in discovery order."""
        return list(self._tabs.values())

    def staying(self) -> int:
        """How many tabs count against the cap (`Tab.counts_against_cap`)."""
        return sum(1 for tab in self._tabs.values() if tab.counts_against_cap)

    @property
    def active(self) -> Tab | None:
        return self._tabs[self._mru[-1]] if self._mru else None

    def get(self, tab_id: int) -> Tab | None:
        return self._tabs.get(tab_id)

    def by_target(self, target_id: str) -> Tab | None:
        return self._by_target.get(target_id) or self._by_target.get(target_id.upper())

    def add(self, tab: Tab) -> None:
        self._tabs[tab.id] = tab
        self._used[tab.id] = next(_CLOCK)
        if tab.target_id:
            self._by_target[tab.target_id] = tab

    def remove(self, tab: Tab) -> bool:
        """Forget `tab`; returns whether it was the active tab. The previously used tab becomes
        active; if no tab was ever used, the newest one."""
        if self._tabs.pop(tab.id, None) is None:
            return False
        self._used.pop(tab.id, None)
        if tab.target_id:
            self._by_target.pop(tab.target_id, None)
        was_active = bool(self._mru) and self._mru[-1] == tab.id
        if tab.id in self._mru:
            self._mru.remove(tab.id)
        if was_active and not self._mru and self._tabs:
            self._mru.append(next(reversed(self._tabs)))
        return was_active

    def touch(self, tab: Tab) -> int | None:
        """Make `tab` the active tab; returns the previously active tab's id."""
        previous = self._mru[-1] if self._mru else None
        if tab.id in self._mru:
            self._mru.remove(tab.id)
        self._mru.append(tab.id)
        self._used[tab.id] = next(_CLOCK)
        return previous

    def track_in_background(self, tab: Tab) -> None:
        """Known, not activated: least recently used of all."""
        if tab.id not in self._mru:
            self._mru.insert(0, tab.id)

    def ensure_active(self) -> None:
        """With tabs and none active (a fresh instance), the first tab is active."""
        if self._tabs and not self._mru:
            self._mru.append(next(iter(self._tabs)))

    def cap_victim(self, *, exclude: Tab | None) -> Tab | None:
        """The least recently used tab (opened or made active longest ago) that is neither pinned,
        nor active, nor the user's own, nor `exclude`, nor its opener (whose page just opened it: an
        action on it may be under way), nor closing already. A tab a page opened a moment ago is not
        the oldest one."""
        active = self._mru[-1] if self._mru else None
        opener = exclude.opener_id if exclude is not None else None
        for tab in sorted(self._tabs.values(), key=lambda t: self._used.get(t.id, -1)):
            kept = tab.pinned or tab.users_own or tab.id in (active, opener)
            if not (kept or tab is exclude or tab.closing_cause is not None):
                return tab
        return None

    def last_used(self, tab: Tab) -> int:
        """When `tab` was last used (opened or made active), on the clock all registries share."""
        return self._used.get(tab.id, -1)

    def infos(self) -> list[TabInfo]:
        """The tabs as a listing shows them: not one whose close is under way (a call's, the tab
        cap's), which calls already find gone."""
        active = self._mru[-1] if self._mru else None
        dialogs = self._any_dialog()
        return [
            self._info(tab, index, active, dialogs)
            for index, tab in enumerate(self._tabs.values())
            if tab.closing_cause is None
        ]

    def info(self, tab: Tab) -> TabInfo:
        active = self._mru[-1] if self._mru else None
        index = list(self._tabs).index(tab.id) if tab.id in self._tabs else -1
        return self._info(tab, index, active, self._any_dialog())

    def _any_dialog(self) -> bool:
        return any(tab.dialog is not None for tab in self._tabs.values())

    def _info(self, tab: Tab, index: int, active: int | None, dialogs: bool) -> TabInfo:
        holder = tab.blocked_by() if dialogs else None
        url, title, error_page = tab.location()
        return TabInfo(
            id=tab.id,
            instance_id=self.instance_id,
            url=url,
            title=title,
            active=tab.id == active,
            index=index,
            window_id=tab.window_id,
            pinned=tab.pinned,
            opener_id=tab.opener_id,
            status=tab.status,
            dialog=tab.dialog,
            target_id=tab.target_id,
            chrome_tab_id=tab.chrome_tab_id,
            held_by=holder.id if holder is not None and holder is not tab else None,
            error_page=error_page,
            blocked=error_page and tab.blocked,
            users_own=tab.users_own,
            loading_url=tab.due_url,
        )
