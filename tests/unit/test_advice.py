"""How a tab's page is written in ### Tabs and ### Page, and a telemetry row in browser_observe."""

from __future__ import annotations

from tabpilot import NetworkEntry
from tabpilot.server.advice import entry_line, page_line


def test_a_title_is_written_with_its_url_and_a_title_that_only_repeats_the_url_is_not() -> None:
    assert page_line("Page a", "http://127.0.0.1:8000/page/a") == "Page a (http://127.0.0.1:8000/page/a)"
    # A title that is only a word of the URL is still the page's title.
    assert page_line("page", "http://127.0.0.1:8000/page/a") == "page (http://127.0.0.1:8000/page/a)"
    # Loading: Chromium shows the URL without its scheme as the title.
    assert (
        page_line("127.0.0.1:8000/page/a", "http://127.0.0.1:8000/page/a") == "http://127.0.0.1:8000/page/a"
    )
    assert page_line("about:blank", "about:blank") == "about:blank"
    assert page_line("", "http://127.0.0.1:8000/") == "http://127.0.0.1:8000/"


def _row(status: int | None, failure: str | None) -> NetworkEntry:
    url = "http://127.0.0.1:8000/worker.js"
    return NetworkEntry(
        7, 0.0, 3, "GET", url, "script", status, "", failure, "", 0.0, 12.0, {}, None, 248, False, None
    )


def test_a_request_row_says_its_status_its_failure_or_that_no_status_was_seen() -> None:
    assert entry_line(_row(200, None)).startswith(
        "[tab 3] #7 GET http://127.0.0.1:8000/worker.js → 200 (script, 12 ms"
    )
    assert "→ FAILED net::ERR_ABORTED (script" in entry_line(_row(None, "net::ERR_ABORTED"))
    # A request seen finishing without its response (a worker's script loaded before the session).
    assert "→ status not seen (script, 12 ms, 248 B)" in entry_line(_row(None, None))
