"""The ring buffer behind every telemetry kind: bounds, per-tab index, cursors, drop counts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tabpilot._ring import ALL_TABS, Ring


@dataclass(frozen=True, slots=True)
class Item:
    seq: int
    tab_id: int | None
    size: int = 1


def fill(ring: Ring[Item], tabs: list[int | None], start: int = 1) -> list[Item]:
    items = [Item(start + i, tab) for i, tab in enumerate(tabs)]
    for item in items:
        ring.append(item)
    return items


def test_the_ring_keeps_the_newest_entries_and_counts_what_it_dropped() -> None:
    ring: Ring[Item] = Ring(3)
    fill(ring, [1, 2, 1, 2, 1])
    assert len(ring) == 3
    assert [e.seq for e in ring.select()[0]] == [3, 4, 5]
    assert ring.dropped == 2
    assert ring.dropped_for(1) == 1
    assert ring.dropped_for(2) == 1
    assert ring.dropped_for(ALL_TABS) == 2


def test_a_tab_query_returns_only_that_tabs_entries_even_after_evictions() -> None:
    ring: Ring[Item] = Ring(4)
    fill(ring, [1, 2, 1, 2, 1, 2])
    assert [e.seq for e in ring.select(tab=1)[0]] == [3, 5]
    assert [e.seq for e in ring.select(tab=2)[0]] == [4, 6]
    assert ring.count_for(1) == 2
    assert ring.count_for(3) == 0
    assert ring.select(tab=3) == ([], False)


def test_entries_without_a_tab_are_a_tab_of_their_own() -> None:
    ring: Ring[Item] = Ring(10)
    fill(ring, [None, 1, None])
    assert [e.seq for e in ring.select(tab=None)[0]] == [1, 3]
    assert [e.seq for e in ring.select()[0]] == [1, 2, 3]


def test_a_tab_whose_entries_were_all_evicted_leaves_the_index() -> None:
    ring: Ring[Item] = Ring(2)
    fill(ring, [1, 2, 2])
    assert ring.tab_ids() == [2]


def test_without_a_cursor_the_newest_matches_come_back_oldest_first() -> None:
    ring: Ring[Item] = Ring(100)
    fill(ring, [1] * 10)
    entries, more = ring.select(limit=3)
    assert [e.seq for e in entries] == [8, 9, 10]
    assert more
    entries, more = ring.select(limit=3, match=lambda e: e.seq % 2 == 0)
    assert [e.seq for e in entries] == [6, 8, 10]


def test_a_cursor_pages_forward_from_the_oldest_new_entry_without_gaps() -> None:
    ring: Ring[Item] = Ring(100)
    fill(ring, [1, 2] * 5)
    entries, more = ring.select(tab=1, since=2, limit=2)
    assert [e.seq for e in entries] == [3, 5]
    assert more
    entries, more = ring.select(tab=1, since=entries[-1].seq, limit=2)
    assert [e.seq for e in entries] == [7, 9]
    assert not more
    assert ring.select(tab=1, since=10) == ([], False)


def test_the_byte_bound_evicts_old_entries_and_counts_them() -> None:
    ring: Ring[Item] = Ring(100, max_bytes=10, size_of=lambda e: e.size)
    for seq in range(1, 5):
        ring.append(Item(seq, 1, size=4))
    assert [e.seq for e in ring.select()[0]] == [3, 4]
    assert ring.bytes == 8
    assert ring.dropped == 2


def test_one_entry_over_the_byte_bound_is_still_kept_alone() -> None:
    ring: Ring[Item] = Ring(100, max_bytes=10, size_of=lambda e: e.size)
    ring.append(Item(1, 1, size=4))
    ring.append(Item(2, 1, size=50))
    assert [e.seq for e in ring.select()[0]] == [2]


def test_counts_since_a_cursor_are_per_tab() -> None:
    ring: Ring[Item] = Ring(100)
    fill(ring, [1, 2, 1, None, 1])
    assert ring.counts_since(2) == {1: 2, None: 1}
    assert ring.counts_since(5) == {}


def test_bad_bounds_and_limits_are_refused() -> None:
    with pytest.raises(ValueError):
        Ring(0)
    with pytest.raises(ValueError):
        Ring(10, max_bytes=5)
    with pytest.raises(ValueError):
        Ring(10).select(limit=0)


def test_drop_counts_of_tabs_with_no_entry_left_are_kept_for_the_newest_ones_only() -> None:
    # One count per tab ever seen had been kept for good: about 100 bytes per closed tab and kind.
    ring: Ring[Item] = Ring(3)
    fill(ring, list(range(1, 101)))  # tabs 1-97 lost their only entry
    assert ring.dropped == 97 and ring.dropped_for(ALL_TABS) == 97
    assert [ring.dropped_for(tab) for tab in (94, 95, 96, 97)] == [0, 1, 1, 1]  # 94: forgotten
    assert ring.count_for(98) == 1 and ring.dropped_for(98) == 0
    ring.count_dropped(500, 2)  # dropped before they reached the ring: no entry either
    assert ring.dropped_for(500) == 2 and ring.dropped_for(95) == 0
    # A tab that gets an entry again is no longer among the emptied ones: its count stays.
    ring.append(Item(101, 96))
    fill(ring, [7, 8, 9], start=102)  # evicts 98-100 and 96's new entry
    assert ring.dropped_for(96) == 2 and ring.dropped == 103
    assert sum(ring.dropped_for(tab) > 0 for tab in range(1, 600)) == 3


def test_a_cursor_older_than_what_was_evicted_is_told_it_missed_entries_of_its_tab() -> None:
    """A reader polling with `since` learns that entries after its cursor were dropped before it
    read them (it got the survivors as if they followed on)."""
    ring: Ring[Item] = Ring(3)
    fill(ring, [1, 2, 1, 2, 2])  # evicts 1 (tab 1) and 2 (tab 2)
    assert ring.missed_after(ALL_TABS, 1) and not ring.missed_after(ALL_TABS, 2)
    assert not ring.missed_after(1, 1), "tab 1 lost only entry 1, which the cursor had read"
    assert ring.missed_after(1, 0)
    assert ring.missed_after(2, 1) and not ring.missed_after(2, 2)
    assert not ring.missed_after(3, 0), "a tab that lost nothing"
