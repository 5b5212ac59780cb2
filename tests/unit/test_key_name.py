"""Key names as people and models write them, read as Playwright's (`key_name`)."""

from __future__ import annotations

import pytest

from tabpilot import key_name


@pytest.mark.parametrize(
    ("written", "pressed"),
    [
        ("Enter", "Enter"),
        ("enter", "Enter"),
        ("ctrl+a", "Control+a"),
        ("Ctrl+Shift+T", "Control+Shift+T"),
        ("cmd+shift+p", "Meta+Shift+p"),
        ("CONTROLORMETA+c", "ControlOrMeta+c"),
        ("Esc", "Escape"),
        ("option+ArrowLeft", "Alt+ArrowLeft"),
        ("pgdn", "PageDown"),
        ("f5", "F5"),
        ("Ctrl + A", "Control+A"),  # a single character keeps its case
        ("Control++", "Control++"),  # the plus key
        ("+", "+"),
        ("Shift+ ", "Shift+ "),  # the space key
        ("Explode", "Explode"),  # unknown: Playwright names it in its error
    ],
)
def test_key_names_are_read_as_playwright_names_them(written: str, pressed: str) -> None:
    assert key_name(written) == pressed
