"""`BrowserOptions` refuses a value of another type where it is made, saying what the option takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tabpilot import BrowserOptions


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
