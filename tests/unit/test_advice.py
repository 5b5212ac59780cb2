"""How a tab's page is written in ### Tabs and ### Page."""

from __future__ import annotations

from tabpilot.server.advice import page_line


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
