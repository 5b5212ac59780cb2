"""Playwright's errors as tabpilot says them (`tabpilot._pw.map_playwright_errors`)."""

from __future__ import annotations

import pytest
from playwright.async_api import Error as PlaywrightError

from tabpilot import ActionError
from tabpilot._pw import Doing, launch_error, map_playwright_errors


def test_an_error_tabpilot_has_no_words_for_is_passed_on_as_one_sentence() -> None:
    with (
        pytest.raises(ActionError) as raised,
        map_playwright_errors(Doing("Clicking 1e2 on tab 1", tab_id=1)),
    ):
        raise PlaywrightError("Protocol error (Foo.bar): Foo.bar is not available.\nCall log:\n  - waiting")
    assert (
        str(raised.value.fact)
        == "Clicking 1e2 on tab 1 failed: Protocol error (Foo.bar): Foo.bar is not available."
    )


def test_a_browser_that_closes_while_it_starts_is_said_to_have_ended() -> None:
    """Playwright's words when a browser is killed a moment into its launch (seen with a real one)."""
    said = (
        "BrowserType.launch_persistent_context: Target page, context or browser has been closed\n"
        "Browser logs:\n\n<launching> /usr/lib/chromium/chromium --headless"
    )
    error = launch_error(PlaywrightError(said), "/usr/lib/chromium/chromium", None)
    assert str(error.fact) == (
        "Chromium (/usr/lib/chromium/chromium) failed to start: it ended while it was starting "
        "(it was killed, crashed or quit)."
    )


def test_a_dialog_gone_before_its_answer_is_said_so_not_as_a_protocol_error() -> None:
    """Chromium's words when the dialog closed between tabpilot seeing it and answering it (seen
    once under load: its page went on, or another call answered it first)."""
    with (
        pytest.raises(ActionError) as raised,
        map_playwright_errors(Doing("Handling the dialog of tab 2", tab_id=2)),
    ):
        raise PlaywrightError("Protocol error (Page.handleJavaScriptDialog): No dialog is showing")
    assert raised.value.fact == (
        "Handling the dialog of tab 2 failed: the dialog had closed already (its page went on without "
        "it, or another call answered it)."
    )
    assert raised.value.advice == "Take a new snapshot of tab 2 to see the page as it is now."


def test_a_page_that_crashed_before_its_crash_event_is_said_to_have_crashed() -> None:
    """Playwright's words for work on a page whose renderer died, before its `crash` event came
    (seen with a real one): the tab turns it into the crash error (`Tab.raise_what_the_page_says`)."""
    with (
        pytest.raises(ActionError) as raised,
        map_playwright_errors(Doing("Taking a snapshot of tab 1", tab_id=1)),
    ):
        raise PlaywrightError("Locator.aria_snapshot: Target crashed")
    assert raised.value.reason == "crashed"
    assert raised.value.fact == "Taking a snapshot of tab 1 failed: the page crashed."


def test_a_command_that_reaches_a_tab_between_two_pages_says_so_not_as_a_protocol_error() -> None:
    """Chromium's words when a tab is swapping to the process of its next page (going back right
    after the user navigated their own tab, seen through the extension)."""
    with (
        pytest.raises(ActionError) as raised,
        map_playwright_errors(Doing("Going back on tab 4", tab_id=4)),
    ):
        raise PlaywrightError("Protocol error (Page.getNavigationHistory): Not attached to an active page")
    assert (
        raised.value.fact
        == "Going back on tab 4 failed: the tab was between two pages (a navigation under way)."
    )
    assert raised.value.advice == "Retry in a moment."
