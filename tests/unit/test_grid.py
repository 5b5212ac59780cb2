"""The WebDriver side of a grid instance that needs no grid: the session request and the grid URL."""

from __future__ import annotations

import base64

import pytest

from tabpilot import ConnectError
from tabpilot._grid import session_request, split_grid_url


def test_a_session_request_asks_for_headless_chrome_with_the_callers_capabilities_on_top() -> None:
    plain = session_request(None, headless=True, browser_args=())
    assert plain == {
        "capabilities": {
            "alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {"args": ["--headless=new"]}}
        }
    }
    headed = session_request(None, headless=False, browser_args=())["capabilities"]["alwaysMatch"]
    assert headed == {"browserName": "chrome"}

    merged = session_request(
        {
            "platformName": "linux",
            "goog:chromeOptions": {
                "args": ["--lang=de", "--headless=new"],
                "prefs": {"intl.accept_languages": "de"},
            },
        },
        headless=True,
        browser_args=("--mute-audio",),
    )["capabilities"]["alwaysMatch"]
    assert merged == {
        "browserName": "chrome",
        "platformName": "linux",
        "goog:chromeOptions": {
            "args": ["--headless=new", "--mute-audio", "--lang=de"],
            "prefs": {"intl.accept_languages": "de"},
        },
    }


def test_a_grid_url_loses_its_trailing_slash_and_its_user_info_becomes_basic_auth() -> None:
    assert split_grid_url("http://127.0.0.1:4444/") == ("http://127.0.0.1:4444", ())
    assert split_grid_url(" https://grid.example/wd/hub ") == ("https://grid.example/wd/hub", ())
    url, headers = split_grid_url("https://me:s%40cret@grid.example:443/wd/hub")
    assert url == "https://grid.example:443/wd/hub"
    ((name, value),) = headers
    assert name == "Authorization" and base64.b64decode(value.removeprefix("Basic ")) == b"me:s@cret"
    for bad in ("ws://127.0.0.1:4444", "127.0.0.1:4444", "http://"):
        with pytest.raises(ConnectError, match="is not a Selenium Grid URL") as error:
            split_grid_url(bad)
        assert error.value.reason == "bad_url"
