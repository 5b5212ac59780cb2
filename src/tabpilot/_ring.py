"""Bounded ring buffers of recorded entries: sequence numbers, a per-tab index, drop counts.

Every telemetry kind (console, errors, network, bodies, WebSocket, actions) lives in one `Ring`.
Entries arrive in increasing sequence order, so each ring is a deque of entries, and the
per-tab index is one deque per tab holding the same entries in the same order. Evicting the
oldest entry of the ring therefore evicts the oldest entry of its tab: both are O(1), and a
tab-filtered query walks only that tab's entries, newest first, never the whole buffer.
"""

from __future__ import annotations

import enum
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Final, Generic, Protocol, TypeVar


class Stamped(Protocol):
    """What a ring needs of an entry: its sequence number and its tab."""

    @property
    def seq(self) -> int: ...

    @property
    def tab_id(self) -> int | None: ...


E = TypeVar("E", bound=Stamped)


class AllTabs(enum.Enum):
    ALL = "all"


ALL_TABS: Final = AllTabs.ALL
"""Selects the entries of every tab, and those without a tab (`tab_id=None` selects only those)."""

TabKey = int | None


class Ring(Generic[E]):
    """Keeps the newest `max_entries` entries (and, with `max_bytes`, at most that many bytes).

    `append` must be called in increasing `seq` order. What is evicted is counted in `dropped`
    (and per tab in `dropped_for`). A tab's count outlives its entries, for the `max_entries` tabs
    that last lost their last entry: a server that opens and closes tabs for weeks would
    otherwise keep one count per tab it ever had (`dropped` counts them all).
    """

    __slots__ = (
        "_by_tab",
        "_dropped_by_tab",
        "_emptied",
        "_entries",
        "_evicted_by_tab",
        "_max_bytes",
        "_max_entries",
        "_size_of",
        "bytes",
        "dropped",
        "evicted_seq",
    )

    def __init__(
        self,
        max_entries: int,
        *,
        max_bytes: int | None = None,
        size_of: Callable[[E], int] | None = None,
    ) -> None:
        if max_entries < 1:
            raise ValueError("max_entries must be at least 1")
        if max_bytes is not None and (max_bytes < 1 or size_of is None):
            raise ValueError("max_bytes must be positive and needs size_of")
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._size_of = size_of
        self._entries: deque[E] = deque()
        self._by_tab: dict[TabKey, deque[E]] = {}
        self._dropped_by_tab: dict[TabKey, int] = {}
        self._emptied: OrderedDict[TabKey, None] = OrderedDict()
        """Tabs with a dropped count and no entry left, the one that lost its last entry last at the end."""
        self.bytes = 0
        """Bytes held, as `size_of` counts them (0 for a ring without a byte bound)."""
        self.dropped = 0
        """Entries evicted so far, by count or by bytes."""
        self.evicted_seq = 0
        """The `seq` of the newest entry evicted (0: none yet); per tab in `_evicted_by_tab`."""
        self._evicted_by_tab: dict[TabKey, int] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def max_entries(self) -> int:
        return self._max_entries

    def append(self, entry: E) -> None:
        self._entries.append(entry)
        tab_entries = self._by_tab.get(entry.tab_id)
        if tab_entries is None:
            tab_entries = self._by_tab[entry.tab_id] = deque()
            self._emptied.pop(entry.tab_id, None)
        tab_entries.append(entry)
        if self._size_of is not None:
            self.bytes += self._size_of(entry)
            if self._max_bytes is not None:
                # Keep the newest entry even if it alone is over the bound: callers cap entry sizes.
                while self.bytes > self._max_bytes and len(self._entries) > 1:
                    self._evict_oldest()
        if len(self._entries) > self._max_entries:
            self._evict_oldest()

    def _evict_oldest(self) -> None:
        entry = self._entries.popleft()
        key = entry.tab_id
        tab_entries = self._by_tab[key]
        tab_entries.popleft()  # the oldest of the ring is the oldest of its tab
        if self._size_of is not None:
            self.bytes -= self._size_of(entry)
        self.dropped += 1
        self._dropped_by_tab[key] = self._dropped_by_tab.get(key, 0) + 1
        self.evicted_seq = self._evicted_by_tab[key] = entry.seq
        if not tab_entries:
            del self._by_tab[key]
            self._emptied_now(key)

    def count_dropped(self, tab: TabKey, count: int = 1, *, seq: int = 0) -> None:
        """Count entries of `tab` that were dropped before they reached the ring; `seq`, a sequence
        number taken for the drop, tells readers whose cursor is older that they missed them."""
        self.dropped += count
        self._dropped_by_tab[tab] = self._dropped_by_tab.get(tab, 0) + count
        if seq:
            self.evicted_seq = max(self.evicted_seq, seq)
            self._evicted_by_tab[tab] = max(self._evicted_by_tab.get(tab, 0), seq)
        if tab not in self._by_tab:
            self._emptied_now(tab)

    def _emptied_now(self, tab: TabKey) -> None:
        """`tab` has a dropped count and no entry: keep the counts of the newest such tabs only."""
        self._emptied[tab] = None
        self._emptied.move_to_end(tab)
        while len(self._emptied) > self._max_entries:
            forgotten, _ = self._emptied.popitem(last=False)
            del self._dropped_by_tab[forgotten]
            self._evicted_by_tab.pop(forgotten, None)

    def count_for(self, tab: TabKey | AllTabs) -> int:
        if tab is ALL_TABS:
            return len(self._entries)
        entries = self._by_tab.get(tab)
        return len(entries) if entries is not None else 0

    def dropped_for(self, tab: TabKey | AllTabs) -> int:
        if tab is ALL_TABS:
            return self.dropped
        return self._dropped_by_tab.get(tab, 0)

    def missed_after(self, tab: TabKey | AllTabs, since: int) -> bool:
        """Whether entries (of `tab`) newer than `since` were evicted: a reader that kept that
        cursor did not see them."""
        newest = self.evicted_seq if tab is ALL_TABS else self._evicted_by_tab.get(tab, 0)
        return newest > since

    def tab_ids(self) -> list[TabKey]:
        """Tabs that have entries in the ring."""
        return list(self._by_tab)

    def select(
        self,
        *,
        tab: TabKey | AllTabs = ALL_TABS,
        since: int | None = None,
        limit: int = 100,
        match: Callable[[E], bool] | None = None,
    ) -> tuple[list[E], bool]:
        """Matching entries, oldest first, and whether more matched than `limit` allowed.

        Without `since`: the newest `limit` matches (the tail). With `since`: the oldest `limit`
        matches with a sequence number above it, so a caller pages forward with the last one's
        `seq` and misses nothing. Cost: the entries of the tab walked newest first, until `limit`
        matches (tail) or the cursor (since) is reached.
        """
        if limit < 1:
            raise ValueError("limit must be at least 1")
        source = self._entries if tab is ALL_TABS else self._by_tab.get(tab)
        if not source:
            return [], False
        picked: list[E] = []
        if since is None:
            more = False
            for entry in reversed(source):
                if match is None or match(entry):
                    if len(picked) == limit:
                        more = True
                        break
                    picked.append(entry)
            picked.reverse()
            return picked, more
        for entry in reversed(source):
            if entry.seq <= since:
                break
            if match is None or match(entry):
                picked.append(entry)
        picked.reverse()
        more = len(picked) > limit
        del picked[limit:]
        return picked, more

    def counts_since(self, seq: int) -> dict[TabKey, int]:
        """How many entries each tab got after sequence number `seq` (those still held)."""
        counts: dict[TabKey, int] = {}
        for entry in reversed(self._entries):
            if entry.seq <= seq:
                break
            counts[entry.tab_id] = counts.get(entry.tab_id, 0) + 1
        return counts
