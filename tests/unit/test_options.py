"""`BrowserOptions` refuses a value of another type where it is made, saying what the option takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tabpilot import BrowserOptions, Secrets, TabManager
from tabpilot._grid import GridSession, split_grid_url


@pytest.mark.parametrize(
    ("given", "said"),
    [
        # Each was taken, and the launch failed "Check that the browser runs on this machine".
        ({"headless": "no"}, "headless takes True or False, not 'no'"),
        ({"ignore_https_errors": 1}, "ignore_https_errors takes True or False, not 1"),
        ({"user_agent": 5}, "user_agent takes text, not 5"),
        ({"user_data_dir": 7}, r"user_data_dir takes a path \(text or a Path\), not 7"),
        ({"browser_args": ("--mute-audio", 3)}, "browser_args takes a tuple of strings, and 3 is not one"),
        ({"cdp_headers": (("Authorization",),)}, r"cdp_headers takes \(name, value\) pairs of text"),
    ],
)
def test_a_value_of_another_type_is_refused_saying_what_the_option_takes(
    given: dict[str, Any], said: str
) -> None:
    with pytest.raises(TypeError, match=said):
        BrowserOptions(**given)


def test_paths_may_be_given_as_paths_and_lists_as_lists(tmp_path: Path) -> None:
    script = tmp_path / "init.js"
    script.write_text("window.x = 1")
    options = BrowserOptions(
        downloads_dir=tmp_path / "downloads",  # type: ignore[arg-type]
        init_scripts=[script],  # type: ignore[arg-type]
        browser_args=["--mute-audio"],  # type: ignore[arg-type]
    )
    assert options.downloads_dir == str(tmp_path / "downloads")
    assert options.init_scripts == (str(script),) and options.browser_args == ("--mute-audio",)
    assert options == BrowserOptions(
        downloads_dir=str(tmp_path / "downloads"), init_scripts=(str(script),), browser_args=("--mute-audio",)
    )


async def test_reprs_hide_credentials_and_say_what_a_debugger_needs() -> None:
    # BrowserOptions' repr showed cdp_headers whole (an Authorization token, a grid's Basic auth,
    # also inside a GridSession's repr), in logs and tracebacks; TabManager and Secrets showed
    # only their address.
    grid, auth = split_grid_url("http://user:grid-key-123@127.0.0.1:4444")
    options = BrowserOptions(cdp_headers=(("Authorization", "Bearer token-456"), *auth))
    session = GridSession(grid, "s1", "ws://127.0.0.1:4444/cdp", {}, options)
    for shown in (repr(options), repr(session)):
        assert "token-456" not in shown and auth[0][1] not in shown, shown
        assert "cdp_headers=(('Authorization', '<hidden>'), ('Authorization', '<hidden>'))" in shown
        assert "headless=True" in shown and "timeout_action=5.0" in shown
    assert options.cdp_headers[0] == ("Authorization", "Bearer token-456")  # kept, only not shown
    assert repr(Secrets({"PASSWORD": "hunter2-secret"})) == "<Secrets PASSWORD>"
    manager = TabManager(max_tabs=5)
    assert repr(manager) == "<TabManager no instance; max_tabs=5 reject>"
    await manager.close()
    assert repr(manager) == "<TabManager closed>"
