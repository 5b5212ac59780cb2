"""Playwright's errors as tabpilot says them (`tabpilot._pw.map_playwright_errors`)."""

from __future__ import annotations

import pytest
from playwright.async_api import Error as PlaywrightError

from tabpilot import ActionError
from tabpilot._pw import Doing, map_playwright_errors


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
