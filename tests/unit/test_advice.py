"""How a tab's page is written in ### Tabs and ### Page, a telemetry row in browser_observe, an
event in ### Events, and the tab limits' errors."""

from __future__ import annotations

from tabpilot import InstanceLostError, InstanceUnreachableError, NetworkEntry, TabEvent, TabLimitError
from tabpilot.server.advice import entry_line, error_text, event_line, page_line
from tabpilot.server.toolsets import foxmcp


def test_a_title_is_written_with_its_url_and_a_title_that_only_repeats_the_url_is_not() -> None:
    assert page_line("Page a", "http://127.0.0.1:8000/page/a") == "Page a (http://127.0.0.1:8000/page/a)"
    # A title that is only a word of the URL is still the page's title.
    assert page_line("page", "http://127.0.0.1:8000/page/a") == "page (http://127.0.0.1:8000/page/a)"
    # Loading: Chromium shows the URL without its scheme as the title.
    assert (
        page_line("127.0.0.1:8000/page/a", "http://127.0.0.1:8000/page/a") == "http://127.0.0.1:8000/page/a"
    )
    assert page_line("about:blank", "about:blank") == "about:blank"
    # A popup its opener has not given a URL yet: no empty parentheses.
    assert page_line("about:blank", "") == "about:blank"
    assert page_line("", "") == "about:blank"
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
    # Failed after its response (its body cut short): the status a status filter matches shows.
    assert "→ FAILED net::ERR_ABORTED after status 200 (script" in entry_line(_row(200, "net::ERR_ABORTED"))
    # A request seen finishing without its response (a worker's script loaded before the session).
    assert "→ status not seen (script, 12 ms, 248 B)" in entry_line(_row(None, None))


def test_a_tab_closed_as_its_session_ended_says_so_instead_of_naming_a_tool() -> None:
    closed = TabEvent(5, 0.0, "tab_closed", 3, "inst_1", {"by": "shutdown", "activeTabId": None})
    assert event_line(closed) == "tab 3 closed (its session ended)"


def test_a_download_of_a_data_url_or_a_long_name_is_told_in_a_line_not_a_page() -> None:
    # A data: URL's file came whole into the line (3,000 characters of base64 and more), and a
    # 250-character name twice (started, then saved).
    url = "data:text/csv;base64," + "QUJD" * 1000
    name = "report-" + "x" * 250 + ".csv"
    began = TabEvent(1, 0.0, "download", 2, "inst_1", {"url": url, "suggestedFilename": name})
    line = event_line(began)
    assert line.startswith("tab 2 started downloading 'report-xxx") and len(line) < 250, line
    assert line.endswith("from a data: URL (text/csv, 4,021 characters)")
    done = {"url": url, "suggestedFilename": "r.csv", "path": "/tmp/d/r.csv", "bytes": 1}
    assert event_line(TabEvent(2, 0.0, "download_finished", 2, "inst_1", done)) == (
        "tab 2 finished downloading 'r.csv': saved as /tmp/d/r.csv (1 byte)"
    )


def test_the_total_tab_limit_says_whose_tabs_are_open_and_what_the_caller_can_do() -> None:
    def refused(count: int, own: int) -> str:
        return error_text(TabLimitError("inst_1", count, 3, "reject", total=True, own=own))

    assert refused(3, 3) == (
        "Cannot open a new tab: 3 tabs are open in all sessions and instances together, the limit "
        "(--max-total-tabs 3). Close tabs you no longer need (browser_tabs(action='close') or browser_tabs(action='close_others')), "
        "then retry."
    )
    assert "; 2 of them are this session's. Close tabs you no longer need" in refused(3, 2)
    assert "; 1 of them is this session's. Load the page in the tab you have instead" in refused(3, 1)
    assert "; this session has none of them. The other sessions hold them all" in refused(3, 0)
    one = error_text(TabLimitError("inst_1", 1, 1, "reject"))
    assert one.startswith("Cannot open a new tab: instance inst_1 has 1 tab, the limit (--max-tabs 1")
    assert one.endswith("Load the page in the tab you have instead.")


def test_a_link_that_drops_while_a_tab_opens_says_the_tab_may_be_there_before_the_retry() -> None:
    reason = "the tabpilot extension disconnected 0.0 s ago"
    opening = error_text(InstanceUnreachableError("inst_1", reason, opening=True))
    assert opening.startswith(f"Instance inst_1 cannot reach its browser now: {reason}.")
    assert "may have opened all the same" in opening
    assert "retry in a few seconds with browser_tabs(action='list') first" in opening
    assert opening.endswith("Tabs of other instances keep working.")
    # Other calls say only when to retry; a set with no instances says nothing of them.
    other = error_text(InstanceUnreachableError("inst_1", reason), foxmcp.CALLS)
    assert "may have opened" not in other
    assert other.endswith("Retry in a few seconds: tabs_list shows whether its tabs are back.")


def test_a_lost_default_is_said_in_each_sets_words_never_in_the_librarys() -> None:
    # A set without browser_instance was given the library's advice as is: with the library's
    # TabManager.ensure_default() now, that would name a Python call to an MCP client.
    lost = InstanceLostError(
        "Instance inst_1 was lost (killed). Its tabs are gone.",
        "TabManager.ensure_default() launches a new default browser in its place, with a blank tab.",
        instance_id="inst_1",
        replacement="launch",
    )
    said = error_text(lost, foxmcp.CALLS)
    assert said.endswith("The next call launches a new browser in its place, with a blank tab."), said
    assert "TabManager" not in said
    default = error_text(lost)
    assert default.endswith(
        "A call without tabId and instanceId launches a new default browser in its place, with a blank tab."
    ), default
