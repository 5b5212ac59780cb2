"""Windows pages asked for and the tabs they became: what settling waits for (a fake clock)."""

from __future__ import annotations

from tabpilot._watch import BLOCKABLE_WAIT, NEW_TAB_TIMEOUT, WindowAsks


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_window_asked_for_is_on_its_way_until_its_tab_arrives() -> None:
    clock = Clock()
    asks = WindowAsks(clock)
    assert asks.due() is None
    asks.asked("opener")
    assert asks.due() == 100.0 + NEW_TAB_TIMEOUT
    assert asks.count("opener") == 1
    asks.arrived("opener")
    assert asks.due() is None
    assert asks.count("opener") == 1  # the count stays: actions compare it before and after


def test_a_tab_that_arrives_before_its_ask_is_heard_nets_it_out() -> None:
    asks = WindowAsks(Clock())
    asks.arrived("opener")
    assert asks.due() is None
    asks.asked("opener")
    assert asks.due() is None


def test_a_window_that_never_comes_is_given_up_on_and_does_not_hold_up_the_next() -> None:
    clock = Clock()
    asks = WindowAsks(clock)
    asks.asked("blocked")
    clock.now += NEW_TAB_TIMEOUT
    assert asks.due() is None
    asks.asked("blocked")  # the next window: it alone is waited for
    asks.arrived("blocked")
    assert asks.due() is None


def test_each_opener_counts_apart_and_a_closed_opener_still_has_its_window_waited_for() -> None:
    clock = Clock()
    asks = WindowAsks(clock)
    asks.asked("a")
    clock.now += 1
    asks.asked("b")
    asks.arrived("a")
    assert asks.due() == 101.0 + NEW_TAB_TIMEOUT
    asks.forget("b")  # b closed right after asking: its popup still comes
    assert asks.count("b") == 0
    assert asks.due() == 101.0 + NEW_TAB_TIMEOUT
    asks.arrived("b")
    assert asks.due() is None


def test_a_window_a_popup_blocker_likely_stopped_is_waited_for_briefly_unless_another_is_on_its_way() -> None:
    clock = Clock()
    asks = WindowAsks(clock)
    asks.asked("opener", wait=BLOCKABLE_WAIT)
    assert asks.left("opener") == BLOCKABLE_WAIT
    assert asks.due() == 100.0 + BLOCKABLE_WAIT
    asks.asked("opener")  # one a click asked for: waited for the whole time
    assert asks.left("opener") == NEW_TAB_TIMEOUT
    asks.arrived("opener")
    asks.asked("opener", wait=BLOCKABLE_WAIT)  # a later short wait does not cut the longer one
    assert asks.due() == 100.0 + NEW_TAB_TIMEOUT
    assert asks.left("other") == 0.0
    clock.now += NEW_TAB_TIMEOUT
    assert asks.left("opener") == 0.0


def test_a_tab_takes_the_url_its_window_was_asked_for_in_order_and_never_a_given_up_one() -> None:
    clock = Clock()
    asks = WindowAsks(clock)
    asks.asked("opener", url="http://127.0.0.1:8000/a")
    asks.asked("opener", url="http://127.0.0.1:8000/b")
    assert asks.arrived("opener") == "http://127.0.0.1:8000/a"
    assert asks.arrived("opener") == "http://127.0.0.1:8000/b"
    assert asks.arrived("other") == ""  # a tab whose ask is not heard yet names nothing...
    asks.asked("other", url="http://127.0.0.1:8000/late")  # ...and its late ask names no later tab
    asks.asked("other", url="http://127.0.0.1:8000/next")
    assert asks.arrived("other") == "http://127.0.0.1:8000/next"
    asks.asked("opener", url="http://127.0.0.1:8000/blocked", wait=BLOCKABLE_WAIT)
    clock.now += BLOCKABLE_WAIT  # the popup blocker stopped it: no tab came
    asks.asked("opener", url="http://127.0.0.1:8000/c")
    assert asks.arrived("opener") == "http://127.0.0.1:8000/c"
