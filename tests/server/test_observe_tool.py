"""browser_observe through a real MCP client (in memory) on a real Chromium and the local site."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult

from support import ok, poll, result_of, section, tab_line, text
from tabpilot.demo.site import LocalSite
from tabpilot.server import TabpilotServer


async def new_tab(mcp: Client, url: str, *, background: bool = False) -> int:
    opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": url, "background": background})
    tab_id: int = result_of(opened)["tabId"]
    return tab_id


def new_errors(result: CallToolResult, tab_id: int) -> int:
    """The new-error count a response's tab list gives `tab_id` (0 if the list is not shown)."""
    data = result.structured_content or {}
    # browser_tabs list gives the counts in its result's tab list instead of a second list.
    tabs = data.get("tabs") or (data.get("result") or {}).get("tabs") or []
    return sum(entry["newErrors"] for entry in tabs if entry["id"] == tab_id)


async def observe_until(
    mcp: Client, arguments: dict[str, Any], done: Callable[[dict[str, Any]], bool], timeout: float = 5.0
) -> CallToolResult:
    """Call browser_observe until its result satisfies `done` (console lines arrive after load)."""
    return await poll(
        lambda: mcp.call_tool("browser_observe", arguments), lambda r: done(result_of(r)), timeout
    )


async def test_observing_a_background_tab_returns_only_its_entries_tagged_in_text_and_structure(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        quiet = await new_tab(mcp, site.url("/fetch?path=/api/text?n=5"), background=True)
        active = await new_tab(mcp, site.url("/fetch?path=/api/echo"))

        logs = await observe_until(
            mcp, {"what": "logs", "tabId": quiet}, lambda r: r["returned_entries"] == 1
        )
        data = result_of(logs)
        assert [(e["tabId"], e["text"]) for e in data["entries"]] == [(quiet, "fetched /api/text?n=5 200")]
        assert data["filtered_by_tab"] == quiet
        assert data["currently_tracked_tab"] == active
        lines = section(logs, "Result").splitlines()
        assert lines[1].startswith(f"[tab {quiet}] ")
        assert "fetched /api/text?n=5 200" in lines[1]
        assert lines[0].startswith(f"logs: 1 entry of tab {quiet} (currently_tracked_tab: {active}, ")

        both = await observe_until(mcp, {"what": "logs"}, lambda r: r["returned_entries"] == 2)
        assert sorted((e["tabId"], e["text"]) for e in result_of(both)["entries"]) == sorted(
            [(quiet, "fetched /api/text?n=5 200"), (active, "fetched /api/echo 200")]
        )
        assert result_of(both)["filtered_by_tab"] is None

        network = await observe_until(
            mcp,
            {"what": "network_waterfall", "tabId": str(quiet), "url": site.url("/api/")},
            lambda r: r["returned_entries"] == 1,
        )
        (request,) = result_of(network)["entries"]
        assert (request["tabId"], request["status"], request["url"]) == (
            quiet,
            200,
            site.url("/api/text?n=5"),
        )
        assert f"[tab {quiet}]" in section(network, "Result")


async def test_errors_of_a_background_tab_are_counted_in_the_tabs_section_and_observable(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        first = result_of(await mcp.call_tool("browser_tabs", {"action": "list"}))["activeTabId"]
        opened = await mcp.call_tool(
            "browser_tabs",
            {"action": "new", "url": site.url("/console?error=bad&throw=boom"), "background": True},
        )
        failing = result_of(opened)["tabId"]
        # The errors arrive while the page loads: each is counted once, in the first response after it.
        reported = new_errors(opened, failing)
        for _ in range(40):
            if reported == 2:
                break
            await asyncio.sleep(0.05)
            listed = await mcp.call_tool("browser_tabs", {"action": "list"})
            if new_errors(listed, failing):
                assert "new error" in tab_line(listed, failing)
            reported += new_errors(listed, failing)
        assert reported == 2
        observed = await mcp.call_tool("browser_observe", {"what": "errors", "tabId": failing})
        errors = result_of(observed)["entries"]
        assert [(e["tabId"], e["source"], e["message"]) for e in errors] == [
            (failing, "console", "bad"),
            (failing, "exception", "boom"),
        ]
        again = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert "new error" not in tab_line(again, failing)  # already reported
        assert tab_line(again, first)


async def test_new_errors_the_buffer_dropped_are_told_as_more_than_it_holds(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # 300 errors with room for 100: the tab line said "100 new errors".
    site.set_content(
        "/errs",
        "<title>E</title><script>setTimeout(() => { for (let i = 0; i < 300; i++) console.error('e' + i) }, 300)"
        "</script>",
    )
    async with connect(buffer_size=100) as mcp:
        tab = await new_tab(mcp, site.url("/errs"), background=True)
        # A list may come mid-flood: the response after the buffer dropped some says so.
        listed = await poll(
            lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
            lambda r: "dropped" in tab_line(r, tab),
        )
        told = tab_line(listed, tab)
        assert re.search(r"\[more than \d+ new errors \(some dropped\)\]$", told), told
        (entry,) = [t for t in result_of(listed)["tabs"] if t["id"] == tab]
        assert entry["newErrorsDropped"] is True and 0 < entry["newErrors"] <= 100, entry
        again = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert "new error" not in tab_line(again, tab)  # told once
        errors = await observe_until(
            mcp, {"what": "errors", "tabId": tab}, lambda r: r["entries"][-1]["message"] == "e299"
        )
        assert (result_of(errors)["returned_entries"], result_of(errors)["dropped"]) == (100, 200)


async def test_a_resource_that_failed_to_load_is_a_browser_line_and_error_of_its_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/broken-image",
        "<!doctype html><title>Broken</title><link rel='icon' href='data:,'><img src='/no-such.png'>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/broken-image"), background=True)
        logs = await observe_until(
            mcp, {"what": "logs", "tabId": tab, "level": "error"}, lambda r: r["returned_entries"] == 1
        )
        failed = "Failed to load resource: the server responded with a status of 404 (Not Found)"
        (entry,) = result_of(logs)["entries"]
        assert (entry["source"], entry["level"], entry["text"]) == ("network", "error", failed)
        assert section(logs, "Result").splitlines()[1] == (
            f"[tab {tab}] #{entry['seq']} error (network): {failed} ({site.url('/no-such.png')})"
        )
        errors = await mcp.call_tool("browser_observe", {"what": "errors", "tabId": tab})
        (error,) = result_of(errors)["entries"]
        assert (error["source"], error["message"], error["url"]) == (
            "browser",
            failed,
            site.url("/no-such.png"),
        )
        assert section(errors, "Result").splitlines()[1] == (
            f"[tab {tab}] #{error['seq']} browser: {failed} ({site.url('/no-such.png')})"
        )


async def test_a_console_line_names_its_line_and_column_as_the_error_stack_does(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Console lines counted from 0 (CDP's numbers), the error stacks of the same page from 1: the
    # agent who opened the source at a console line's number landed a line too early.
    site.set_content(  # the empty icon: no /favicon.ico 404 line beside the page's own
        "/lines",
        '<title>L</title><link rel="icon" href="data:,">\n<h1>lines</h1>\n<script>\n  console.log(\'on 4\');\nnull.x;\n</script>',
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/lines"))
        logs = await observe_until(mcp, {"what": "logs", "tabId": tab}, lambda r: r["returned_entries"] == 1)
        (entry,) = result_of(logs)["entries"]
        assert entry["location"] == {"url": site.url("/lines"), "line": 4, "column": 11}
        assert section(logs, "Result").splitlines()[1].endswith(f"log: on 4 ({site.url('/lines')}:4)")
        errors = await observe_until(
            mcp, {"what": "errors", "tabId": tab}, lambda r: r["returned_entries"] == 1
        )
        assert f"at {site.url('/lines')}:5:6" in section(errors, "Result")


async def test_a_console_lines_format_string_is_filled_in_as_devtools_shows_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The format string and its arguments were shown side by side ("%s is %d years Bob 42"), and
    # a styled line (the `debug` package's, React's banner) with its CSS ("%cstyled color: red").
    site.set_content(
        "/format",
        '<link rel="icon" href="data:,"><script>'
        "console.log('%s is %d years', 'Bob', 42.9, 'and more');"
        "console.log('%cstyled%c plain', 'color: red', '');"
        "console.error('%i%% of %o, %f', 7.8, 3, 2.5);"
        "console.log('%s left', 'one', '%s');"
        "console.log('%d, %s unfilled');"
        "console.log(5, '%s', 'kept');"
        "console.log('%s:', 'ok', true, false);"
        "</script>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/format"))
        logs = await observe_until(mcp, {"what": "logs", "tabId": tab}, lambda r: r["returned_entries"] == 7)
        assert [e["text"] for e in result_of(logs)["entries"]] == [
            "Bob is 42 years and more",
            "styled plain",
            "7% of 3, 2.5",
            "one left %s",
            "%d, %s unfilled",
            "5 %s kept",
            "ok: true false",  # as JavaScript writes them, not Python's True and False
        ]
        assert "log: Bob is 42 years and more (" in section(logs, "Result")
        errors = await observe_until(
            mcp, {"what": "errors", "tabId": tab}, lambda r: r["returned_entries"] == 1
        )
        assert [e["message"] for e in result_of(errors)["entries"]] == ["7% of 3, 2.5"]


async def test_a_request_the_cors_policy_refused_says_so_in_its_row(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The row read "FAILED net::ERR_FAILED", as for any failure: why was only in a console line.
    other = f"http://localhost:{site.port}"  # another origin than the page's 127.0.0.1
    site.set_content(
        "/cors",
        f"<link rel='icon' href='data:,'><script>fetch('{other}/api/echo?simple').catch(() => {{}});"
        f"fetch('{other}/api/echo?put', {{method: 'PUT'}}).catch(() => {{}})</script>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/cors"))
        # The PUT's preflight (OPTIONS) may be a row of its own, answered 405 by the local site.
        rows = await observe_until(
            mcp,
            {"what": "network_waterfall", "tabId": tab, "url": other},
            lambda r: len([e for e in r["entries"] if e["method"] != "OPTIONS"]) == 2,
        )
        failures = {e["url"]: e["failure"] for e in result_of(rows)["entries"] if e["method"] != "OPTIONS"}
        assert failures == {
            f"{other}/api/echo?simple": "net::ERR_FAILED (CORS: MissingAllowOriginHeader)",
            f"{other}/api/echo?put": "net::ERR_FAILED (CORS: PreflightMissingAllowOriginHeader)",
        }
        assert "FAILED net::ERR_FAILED (CORS: MissingAllowOriginHeader)" in section(rows, "Result")


async def test_a_download_is_a_downloaded_row_of_the_waterfall_not_a_failure(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Chromium reports the request a download takes over as aborted: the row said FAILED
    # net::ERR_ABORTED for a file saved well.
    site.set_content("/bytes", b"\x00\x01", content_type="application/octet-stream")
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/download"))
        for path in ("/api/file", "/bytes"):
            ok(await mcp.call_tool("browser_navigate", {"url": site.url(path), "tabId": tab}))
            rows = await observe_until(
                mcp,
                {"what": "network_waterfall", "tabId": tab, "url": path},
                lambda r: r["returned_entries"] == 1,
            )
            (row,) = result_of(rows)["entries"]
            assert (row["status"], row["failure"], row["download"]) == (200, None, True), row
            assert f"GET {site.url(path)} → 200, downloaded (document, " in section(rows, "Result")


async def test_a_filter_that_matches_nothing_returns_no_entries_with_the_metadata(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/console?msg=hello"))
        await observe_until(mcp, {"what": "logs"}, lambda r: r["returned_entries"] == 1)
        result = await mcp.call_tool(
            "browser_observe", {"what": "logs", "tabId": tab, "url": "no-such-thing"}
        )
        data = result_of(result)
        assert data["entries"] == []
        assert data["returned_entries"] == 0
        assert data["total_entries_all_tabs"] == 1
        assert (data["filtered_by_tab"], data["currently_tracked_tab"], data["dropped"]) == (tab, tab, 0)
        assert isinstance(data["next_cursor"], int)
        assert "Nothing matched these filters" in section(result, "Result")


async def test_a_cursor_returns_only_new_entries_and_a_closed_tab_stays_observable(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        await new_tab(mcp, site.url("/page/a"))
        tab = await new_tab(mcp, site.url("/console?msg=one"))
        first = result_of(
            await observe_until(mcp, {"what": "logs", "tabId": tab}, lambda r: r["returned_entries"] == 1)
        )
        cursor = first["next_cursor"]
        await mcp.call_tool(
            "browser_navigate", {"action": "goto", "url": site.url("/console?msg=two"), "tabId": tab}
        )
        newer = await observe_until(
            mcp, {"what": "logs", "tabId": tab, "since": cursor}, lambda r: r["returned_entries"] == 1
        )
        assert [e["text"] for e in result_of(newer)["entries"]] == ["two"]

        closed = await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab})
        assert not closed.is_error, text(closed)
        after = await mcp.call_tool("browser_observe", {"what": "logs", "tabId": tab})
        assert [e["text"] for e in result_of(after)["entries"]] == ["one", "two"]
        assert f"Tab {tab} is closed; these are its recorded entries." in section(after, "Result")
        # An id no tab ever had is a mistake, not a closed tab with no entries.
        never = await mcp.call_tool("browser_observe", {"what": "logs", "tabId": tab + 50})
        assert never.is_error, text(never)
        assert f"Tab {tab + 50} not found" in text(never) and "Open tabs:" in text(never)

        events_result = await mcp.call_tool("browser_observe", {"what": "tab_events", "tabId": tab})
        events = result_of(events_result)
        assert events["entries"][0]["type"] == "tab_opened"
        # The tool opened it blank, then loaded the URL: the line does not pass the blank off as
        # the tab's page.
        assert f"tab {tab} opened (tool)\n" in text(events_result), text(events_result)
        assert events["entries"][-1]["type"] == "tab_closed"
        assert {e["tabId"] for e in events["entries"]} == {tab}


async def test_a_cursor_from_one_kind_serves_every_other_and_tab_events_too(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Twenty lines: the logs' cursor is well past the few tab events numbered so far.
    site.set_content("/twenty", "<script>for (let i = 0; i < 20; i++) console.log(i)</script>")
    async with connect() as mcp:
        await new_tab(mcp, site.url("/twenty"))
        logs = await observe_until(mcp, {"what": "logs"}, lambda r: r["returned_entries"] == 20)
        cursor = result_of(logs)["next_cursor"]
        tab = await new_tab(mcp, site.url("/console?msg=two"))
        await observe_until(mcp, {"what": "logs", "since": cursor}, lambda r: r["returned_entries"] == 1)
        await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab})

        # The tab events after the logs' cursor: all of them, none from before it.
        events = result_of(await mcp.call_tool("browser_observe", {"what": "tab_events", "since": cursor}))
        assert [(e["type"], e["tabId"]) for e in events["entries"]][:1] == [("tab_opened", tab)]
        assert ("tab_closed", tab) in [(e["type"], e["tabId"]) for e in events["entries"]]
        assert all(e["seq"] > cursor for e in events["entries"])
        # And the logs after the tab events' cursor: none repeated.
        later = await mcp.call_tool("browser_observe", {"what": "logs", "since": events["next_cursor"]})
        assert result_of(later)["entries"] == [], text(later)


async def test_a_cursor_whose_next_entries_were_dropped_is_told_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """An agent that polls with a cursor while a page logs more than the buffer keeps got the
    survivors as if they followed on from its cursor (only a global `dropped` count moved)."""
    site.set_content("/twenty", "<script>for (let i = 0; i < 20; i++) console.log('line ' + i)</script>")
    async with connect(buffer_size=5) as mcp:
        tab = await new_tab(mcp, site.url("/console?msg=first"))
        first = await observe_until(mcp, {"what": "logs", "tabId": tab}, lambda r: r["returned_entries"] == 1)
        cursor = result_of(first)["next_cursor"]
        assert result_of(first)["missed"] is False
        await mcp.call_tool("browser_navigate", {"url": site.url("/twenty"), "tabId": tab})
        later = await observe_until(
            mcp,
            {"what": "logs", "tabId": tab, "since": cursor},
            lambda r: [e["text"] for e in r["entries"]][-1:] == ["line 19"],
        )
        assert [e["text"] for e in result_of(later)["entries"]] == [f"line {i}" for i in range(15, 20)]
        assert result_of(later)["missed"] is True
        assert (
            f"Entries newer than since={cursor} were dropped before this read (the buffer keeps the newest "
            "only): what is shown does not follow on from your cursor."
        ) in section(later, "Result")
        caught_up = await mcp.call_tool(
            "browser_observe", {"what": "logs", "tabId": tab, "since": result_of(later)["next_cursor"]}
        )
        assert result_of(caught_up)["missed"] is False, text(caught_up)


async def test_a_cursor_ahead_of_every_entry_says_so_and_where_to_read_from(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # An agent's cursor from before the server restarted is ahead of this run's numbering.
    async with connect() as mcp:
        await new_tab(mcp, site.url("/console?msg=hello"))
        newest = result_of(await observe_until(mcp, {"what": "logs"}, lambda r: r["returned_entries"] == 1))
        ahead = newest["next_cursor"] + 1000
        result = await mcp.call_tool("browser_observe", {"what": "logs", "since": ahead})
        data = result_of(result)
        assert (data["entries"], data["next_cursor"]) == ([], newest["next_cursor"])
        head = section(result, "Result")
        assert f"since={ahead} is ahead of the newest entry ({newest['next_cursor']})" in head, head
        assert f"Call again with since={newest['next_cursor']} for new entries only" in head
        assert "Nothing matched" not in head
        # A cursor of this run still reads as before.
        same = await mcp.call_tool("browser_observe", {"what": "logs", "since": newest["next_cursor"]})
        assert "ahead of the newest" not in section(same, "Result")
        assert "Nothing matched." in section(same, "Result")


async def test_the_newest_entries_say_when_older_ones_match_too(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/five", "<script>for (let i = 0; i < 5; i++) console.log('line ' + i)</script>")
    async with connect() as mcp:
        await new_tab(mcp, site.url("/five"))
        await observe_until(mcp, {"what": "logs"}, lambda r: r["returned_entries"] == 5)
        newest = await mcp.call_tool("browser_observe", {"what": "logs", "limit": 2})
        data = result_of(newest)
        assert [e["text"] for e in data["entries"]] == ["line 3", "line 4"]
        assert (data["has_more"], data["older"]) == (False, True)
        assert "older entries match too: read them from since=0." in section(newest, "Result")
        every = result_of(await mcp.call_tool("browser_observe", {"what": "logs", "limit": 5}))
        assert every["older"] is False


async def test_an_answer_of_long_entries_stops_at_its_size_and_says_where_to_read_on(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """A page that logged 150 lines of 9,000 characters made `what=logs` answer 800 KB of text
    (limit=1000: 1.2 MB), far over what a host takes from a tool, with no word of how to read less.
    An answer now stops at 40,000 characters (a whole entry; one entry is shown whatever its size)."""
    site.set_content(  # the empty icon: no /favicon.ico 404 line in the tab's console
        "/long",
        '<link rel="icon" href="data:,">'
        "<script>for (let i = 0; i < 150; i++) console.log(i + ' ' + 'x'.repeat(9000))</script>",
    )
    async with connect() as mcp:
        await new_tab(mcp, site.url("/long"))
        await observe_until(mcp, {"what": "logs", "limit": 1}, lambda r: r["total_entries_all_tabs"] == 150)

        newest = await mcp.call_tool("browser_observe", {"what": "logs", "limit": 1000})
        data = result_of(newest)
        assert len(text(newest)) < 50_000
        numbers = [int(e["text"].split()[0]) for e in data["entries"]]
        assert 0 < len(numbers) < 150 and numbers == list(range(150 - len(numbers), 150))  # the newest
        assert (data["returned_entries"], data["older"]) == (len(numbers), True)
        assert f"{len(numbers)} of the 150 entries found fit" in section(newest, "Result")
        assert "read them from since=0" in section(newest, "Result")

        # Paged from the start, every entry comes once, in order, each answer within the size.
        seen: list[int] = []
        cursor = 0
        for _ in range(150):
            page = await mcp.call_tool("browser_observe", {"what": "logs", "since": cursor, "limit": 1000})
            assert len(text(page)) < 50_000
            data = result_of(page)
            seen += [int(e["text"].split()[0]) for e in data["entries"]]
            cursor = data["next_cursor"]
            if not data["has_more"]:
                break
            assert f"More entries match: call again with since={cursor}." in section(page, "Result")
        assert seen == list(range(150))


async def test_long_console_texts_are_cut_in_a_list_and_one_entry_comes_whole(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Lines of 5,000 characters: eight to an answer, an agent scanning a tab's console for its
    # errors paged through 5,000 characters of each. A list shows each text's first 1,000 (as it
    # shows a body's first 256), and one entry asked for by its number comes whole.
    site.set_content(
        "/long",
        '<link rel="icon" href="data:,">'
        "<script>for (let i = 0; i < 20; i++) console.log(i + ' ' + 'x'.repeat(5000));"
        "console.error('bad ' + 'y'.repeat(5000))</script>",
    )
    async with connect(structured_content=False) as mcp:  # the text: what a default client reads
        ok(await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/long")}))
        listed = await poll(
            lambda: mcp.call_tool("browser_observe", {"what": "logs"}),
            lambda r: text(r).count("\n[tab ") == 21,
        )
        lines = section(listed, "Result").splitlines()
        assert len(lines) == 22, lines[0]  # the head, twenty-one lines
        assert all(len(line) < 1_200 and "… [" in line for line in lines[1:]), lines[1][:200]
        first = int(lines[1].split("#")[1].split()[0])
        assert (
            f"Texts over 1,000 characters are cut here: one entry comes whole (entry #{first}: " in lines[0]
        )
        whole = await mcp.call_tool("browser_observe", {"what": "logs", "since": first - 1, "limit": 1})
        assert f"log: 0 {'x' * 5000} (" in text(whole)
        error = await mcp.call_tool("browser_observe", {"what": "errors"})
        assert f"console: bad {'y' * 5000}" in text(error)  # one entry: whole


async def test_network_bodies_show_both_sides_and_one_entry_whole_with_its_headers(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The text (all a default client reads) gave the response's first 256 characters only: no
    # request body, no headers, no way to read more.
    site.set_content(
        "/posts",
        "<title>Posts</title><script>for (const n of [1, 2]) fetch('/api/echo?n=' + n, {method: 'POST', "
        "headers: {'Content-Type': 'application/json', 'X-Custom': 'abc'}, "
        "body: JSON.stringify({hello: 'world', pad: 'p'.repeat(300)})})</script>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/posts"))
        both = await observe_until(
            mcp, {"what": "network_bodies", "method": "POST"}, lambda r: r["returned_entries"] == 2
        )
        (first, one_url), (second, _) = ((e["seq"], e["url"]) for e in result_of(both)["entries"])
        head, *lines = section(both, "Result").splitlines()
        assert head.endswith(
            f"Bodies are cut at 256 characters here: one entry comes with its headers and whole bodies "
            f"(entry #{first}: since={first - 1}, limit=1)."
        ), head
        assert lines[0] == f"[tab {tab}] #{first} POST {one_url} → 200 application/json"
        assert lines[1].startswith('    request body: \'{"hello":"world","pad":"ppp')
        assert lines[1].endswith("… [70 more characters]'"), lines[1]
        assert lines[2].startswith('    response body: \'{"method":"POST"')
        assert "request headers:" not in section(both, "Result")

        one = ok(
            await mcp.call_tool(
                "browser_observe", {"what": "network_bodies", "since": second - 1, "limit": 1}
            )
        )
        result = section(one, "Result")
        assert "Bodies are cut" not in result
        (entry,) = result_of(one)["entries"]
        assert "      x-custom: abc" in result.splitlines()
        assert "      content-type: application/json" in result.splitlines()
        assert f"    request body: {entry['requestBody']!r}" in result.splitlines()
        assert f"    response body: {entry['responseBody']!r}" in result.splitlines()
        assert "p" * 300 in entry["responseBody"]  # the echo, whole


async def test_the_browsers_own_pdf_viewer_is_not_in_the_pages_waterfall(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Chromium's PDF viewer, in a frame of the page, loads some two hundred chrome:// resources:
    # each was a row of the tab's waterfall, pushing the page's own out of the buffer.
    site.set_content("/doc.pdf", b"%PDF-1.4 nothing", content_type="application/pdf")
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/doc.pdf"))
        await observe_until(
            mcp,
            {"what": "network_waterfall", "tabId": tab, "limit": 1000},
            lambda r: any(e["url"] == site.url("/doc.pdf") for e in r["entries"]),
        )
        await asyncio.sleep(1)  # the viewer loads after the document
        rows = await mcp.call_tool(
            "browser_observe", {"what": "network_waterfall", "tabId": tab, "limit": 1000}
        )
        urls = [e["url"] for e in result_of(rows)["entries"]]
        # Nor is the viewer's own request for the PDF, which ends where tabpilot does not follow:
        # it was a request in flight for ever (and the tab's close then called it failed).
        assert (result_of(rows)["pending_requests"], result_of(rows)["dropped"]) == ([], 0)
        # Chromium 156's viewer loads its own from its built-in extension (chrome-extension://):
        # some 120 rows, and as many body entries, after the page's document.
        assert site.url("/doc.pdf") in urls and not [u for u in urls if not u.startswith(site.origin)], urls
        bodies = await mcp.call_tool(
            "browser_observe", {"what": "network_bodies", "tabId": tab, "limit": 1000}
        )
        assert [e["url"] for e in result_of(bodies)["entries"] if not e["url"].startswith(site.origin)] == []


async def test_a_binary_request_body_is_said_as_binary_not_kept_as_text(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Its bytes were kept as text ("\u0000\u0001...") with binary false.
    site.set_content(
        "/bytes-post",
        "<title>B</title><script>fetch('/api/echo', {method: 'POST', body: new Uint8Array([0, 1, 2, 255])})"
        "</script>",
    )
    async with connect() as mcp:
        await new_tab(mcp, site.url("/bytes-post"))
        bodies = await observe_until(
            mcp, {"what": "network_bodies", "method": "POST"}, lambda r: r["returned_entries"] == 1
        )
        (entry,) = result_of(bodies)["entries"]
        assert (entry["requestBody"], entry["requestBinary"]) == (None, True), entry
        assert "    request body: binary (not kept)" in section(bodies, "Result").splitlines()


async def test_websocket_frames_can_be_filtered_by_direction(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/ws-page"))
        received = await observe_until(
            mcp,
            {"what": "websocket_events", "tabId": tab, "direction": "received"},
            lambda r: r["returned_entries"] == 1,
        )
        (frame,) = result_of(received)["entries"]
        assert (frame["tabId"], frame["event"], frame["preview"]) == (tab, "received", "hello")


async def test_a_kind_level_or_direction_is_taken_in_any_case(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The library takes a level in any case; the tool's enums (kept short for the tool list) did
    # not, and refused "ERROR".
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/console?msg=fine&error=broke"), background=True)
        errors = await observe_until(
            mcp, {"what": "Logs", "tabId": tab, "level": "ERROR"}, lambda r: r["returned_entries"] == 1
        )
        (entry,) = result_of(errors)["entries"]
        assert (entry["level"], entry["text"]) == ("error", "broke")
        sockets = await new_tab(mcp, site.url("/ws-page"), background=True)
        received = await observe_until(
            mcp,
            {"what": "websocket_events", "tabId": sockets, "direction": "Received"},
            lambda r: r["returned_entries"] == 1,
        )
        assert [e["event"] for e in result_of(received)["entries"]] == ["received"]
        wrong = await mcp.call_tool("browser_observe", {"what": "logs", "level": "fatal"})
        assert wrong.is_error
        assert "'debug', 'info', 'log', 'warning', 'warn' or 'error'" in section(wrong, "Error")


async def test_a_tabs_network_waterfall_shows_its_websockets_as_devtools_does(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/two-sockets",
        "<script>const ws = new WebSocket('ws://' + location.host + '/ws');"
        "ws.onmessage = () => console.log('echoed'); ws.onopen = () => ws.send('hi');"
        "new WebSocket('ws://' + location.host + '/no-socket');</script>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/two-sockets"))
        quiet = await new_tab(mcp, site.url("/page/a"), background=True)
        waterfall = await observe_until(
            mcp, {"what": "network_waterfall", "tabId": tab}, lambda r: r["returned_entries"] == 3
        )
        rows = {e["url"]: e for e in result_of(waterfall)["entries"]}
        echo, refused = rows[site.ws_url("/ws")], rows[site.ws_url("/no-socket")]
        assert (echo["tabId"], echo["resourceType"], echo["status"]) == (tab, "websocket", 101)
        assert echo["failure"] is None and echo["statusText"] == "Switching Protocols"
        assert (refused["resourceType"], refused["status"]) == ("websocket", 403)
        assert "Unexpected response code: 403" in refused["failure"]
        lines = section(waterfall, "Result").splitlines()
        assert any(f"GET {site.ws_url('/ws')} → 101 (websocket" in line for line in lines)
        assert any(f"GET {site.ws_url('/no-socket')} → FAILED " in line for line in lines)

        # The frames are where they were; the other tab's waterfall has no socket.
        frames = await observe_until(
            mcp,
            {"what": "websocket_events", "tabId": tab, "direction": "received"},
            lambda r: r["returned_entries"],
        )
        assert [(e["url"], e["preview"]) for e in result_of(frames)["entries"]] == [
            (site.ws_url("/ws"), "hi")
        ]
        other = await observe_until(
            mcp, {"what": "network_waterfall", "tabId": quiet}, lambda r: r["returned_entries"] == 1
        )
        assert [e["resourceType"] for e in result_of(other)["entries"]] == ["document"]


async def test_text_finds_the_console_lines_errors_frames_and_bodies_that_contain_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # An agent looking for the line about its checkout read every line of every tab: the filters
    # were level, url, method, status and direction, none on what a line says.
    site.set_content(
        "/text",
        '<link rel="icon" href="data:,"><script>'
        "console.log('cart ready'); console.warn('Checkout slow'); console.log('done');"
        "setTimeout(() => { throw new Error('checkout broke') });"
        "fetch('/api/echo?item=checkout-42').then((r) => r.text());"
        "const ws = new WebSocket('ws://' + location.host + '/ws');"
        "ws.onopen = () => { ws.send('CHECKOUT now'); ws.send('other') };</script>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/text"))
        query = {"tabId": tab, "text": "checkout"}
        logs = await observe_until(mcp, {"what": "logs", **query}, lambda r: r["returned_entries"] == 1)
        assert [e["text"] for e in result_of(logs)["entries"]] == ["Checkout slow"]  # in any case
        errors = await observe_until(mcp, {"what": "errors", **query}, lambda r: r["returned_entries"] == 1)
        assert [e["message"] for e in result_of(errors)["entries"]] == ["checkout broke"]
        frames = await observe_until(
            mcp, {"what": "websocket_events", **query}, lambda r: r["returned_entries"] == 2
        )
        assert [(e["event"], e["preview"]) for e in result_of(frames)["entries"]] == [
            ("sent", "CHECKOUT now"),
            ("received", "CHECKOUT now"),
        ]
        bodies = await observe_until(
            mcp, {"what": "network_bodies", **query}, lambda r: r["returned_entries"] == 2
        )
        # The echo's body names it, and the page's own source does too.
        assert {e["url"] for e in result_of(bodies)["entries"]} == {
            site.url("/api/echo?item=checkout-42"),
            site.url("/text"),
        }
        nothing = await mcp.call_tool("browser_observe", {"what": "logs", "tabId": tab, "text": "refund"})
        assert "Nothing matched these filters." in section(nothing, "Result")
        other = await mcp.call_tool("browser_observe", {"what": "network_waterfall", "text": "checkout"})
        assert other.is_error
        assert (
            "The text filter applies to logs, errors, websocket_events and network_bodies, not to "
            "network_waterfall." in section(other, "Error")
        )


async def test_a_filter_for_another_kind_is_an_error_that_says_where_it_applies(
    connect: Callable[..., Client],
) -> None:
    async with connect() as mcp:
        result = await mcp.call_tool("browser_observe", {"what": "logs", "direction": "sent"})
        assert result.is_error
        assert "direction filter applies to websocket_events" in section(result, "Error")
        too_many = await mcp.call_tool("browser_observe", {"what": "logs", "limit": 5000})
        assert too_many.is_error
        crossed = {"what": "network_waterfall", "statusMin": 500, "statusMax": 200}
        upside_down = await mcp.call_tool("browser_observe", crossed)
        assert upside_down.is_error
        assert "statusMin 500 is above statusMax 200" in section(upside_down, "Error")
        # The library names its Query's fields (status_min); the tool names its own arguments.
        logs = await mcp.call_tool("browser_observe", {"what": "logs", "statusMin": 400})
        assert logs.is_error
        assert "The statusMin filter applies to network_waterfall and network_bodies, not to logs." in (
            section(logs, "Error")
        )


async def test_a_slow_request_of_a_background_tab_shows_as_still_in_flight(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/fetch?path=/api/slow?ms=1500"), background=True)
        result = await observe_until(
            mcp, {"what": "network_waterfall", "tabId": tab}, lambda r: bool(r["pending_requests"])
        )
        (pending,) = result_of(result)["pending_requests"]
        assert (pending["tabId"], pending["url"]) == (tab, site.url("/api/slow?ms=1500"))
        assert f"[tab {tab}] pending GET {site.url('/api/slow?ms=1500')}" in section(result, "Result")


async def test_a_request_cut_short_by_its_popup_closing_is_never_out_of_the_log(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # After the popup closed, its request was neither in flight nor failed for a while (until the
    # popup's session closed): a look then found no trace of it.
    slow = site.url("/api/slow?ms=6000")
    async with connect() as mcp:
        opener = await new_tab(mcp, site.url("/page/a"))
        opened = result_of(
            await mcp.call_tool(
                "browser_evaluate", {"function": "() => { window.open('/page/b'); }", "tabId": opener}
            )
        )
        (popup,) = opened["openedTabIds"]
        # The popup asks once it is known (a request its page sends as it opens may start before
        # the tab's feed can hear it, on a busy machine: then only its answer is seen).
        asked = {"function": f"() => {{ fetch({slow!r}); }}", "tabId": popup}
        assert not (await mcp.call_tool("browser_evaluate", asked)).is_error
        in_flight = await observe_until(
            mcp,
            {"what": "network_waterfall", "tabId": popup},
            lambda r: slow in [p["url"] for p in r["pending_requests"]],
        )
        assert slow in [p["url"] for p in result_of(in_flight)["pending_requests"]]
        await mcp.call_tool("browser_tabs", {"action": "close", "tabId": popup})
        seen = result_of(
            await mcp.call_tool("browser_observe", {"what": "network_waterfall", "tabId": popup})
        )
        rows = [e["url"] for e in seen["entries"] if e.get("failure")] + [
            p["url"] for p in seen["pending_requests"]
        ]
        assert slow in rows, seen


async def logs_accounted_for(
    mcp: Client, tab: int, total: int, what: str = "logs"
) -> tuple[list[dict[str, Any]], int]:
    """Every log entry (or entry of `what`) of `tab`, read page by page, and its dropped count,
    once the two add up to `total` or 30 s have passed. A read during which something was dropped
    is read again: an entry read on the first page and pushed out of the buffer before the last
    would be counted as kept and as dropped."""
    deadline = asyncio.get_running_loop().time() + 30
    while True:
        entries: list[dict[str, Any]] = []
        cursor, dropped_first = 0, None
        while True:
            arguments = {"what": what, "tabId": tab, "limit": 1000, "since": cursor}
            seen = result_of(await mcp.call_tool("browser_observe", arguments))
            entries += seen["entries"]
            cursor = seen["next_cursor"]
            dropped_first = seen["dropped"] if dropped_first is None else dropped_first
            if not seen["has_more"]:
                break
        dropped = int(seen["dropped"])
        steady = dropped == dropped_first
        if (steady and len(entries) + dropped >= total) or asyncio.get_running_loop().time() > deadline:
            return entries, dropped
        await asyncio.sleep(0.2)


async def test_a_console_flood_is_shed_and_every_line_is_kept_or_counted(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    lines = 30_000
    site.set_content(
        "/flood",
        # The empty icon: no /favicon.ico 404 line in the tab's console, only the page's lines.
        '<link rel="icon" href="data:,"><h1>Flood</h1>'
        f"<script>for (let i = 0; i < {lines}; i++) console.log('line ' + i);"
        "console.log('flood over');</script>",
    )
    async with connect() as mcp:
        quiet = await new_tab(mcp, site.url("/page/a"))
        flood = await new_tab(mcp, site.url("/flood"), background=True)
        # Lines beyond the per-tab rate are dropped before they are parsed, and counted (the last
        # line too may be dropped): nothing is lost uncounted, every line is kept or counted.
        kept, dropped = await logs_accounted_for(mcp, flood, lines + 1)
        assert dropped > 0 and len(kept) + dropped == lines + 1, (len(kept), dropped)
        assert all(e["location"]["url"] == site.url("/flood") for e in kept[-10:])
        # The other tab never noticed.
        shot = await mcp.call_tool("browser_snapshot", {"tabId": quiet, "full": True})
        assert 'heading "Page a"' in section(shot, "Snapshot")


async def test_a_page_that_keeps_logging_is_limited_at_the_source_and_every_line_is_kept_or_counted(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """A page that logs past the rate between its tasks gets the page-side limiter: its lines
    past the rate never leave the page, the page counts them, and they are counted as dropped
    (a passing console.assert, which logs nothing, is no line)."""
    chunks, per_chunk = 40, 2000
    total = chunks * per_chunk + 1
    site.set_content(
        "/steady-flood",
        '<link rel="icon" href="data:,"><h1>Flood</h1><script>(async () => {'
        f"for (let c = 0; c < {chunks}; c++) {{"
        f"  for (let i = 0; i < {per_chunk}; i++) {{"
        f"    console.log('line ' + (c * {per_chunk} + i));"
        "    console.assert(true, 'passes: no line');"
        "  }"
        "  await new Promise(r => setTimeout(r, 0));"
        "}"
        "console.log('flood over');"
        "document.querySelector('h1').textContent = 'Done';"
        "})();</script>",
    )
    async with connect() as mcp:
        flood = await new_tab(mcp, site.url("/steady-flood"), background=True)
        kept, dropped = await logs_accounted_for(mcp, flood, total)
        assert len(kept) + dropped == total, (len(kept), dropped)
        assert dropped > total // 2, "the lines past the rate were dropped"
        # Kept lines keep the page's own location (not the limiter's) and their order.
        assert all(e["location"]["url"] == site.url("/steady-flood") for e in kept), kept[-1]
        numbers = [int(e["text"].split()[1]) for e in kept if e["text"].startswith("line ")]
        assert numbers == sorted(numbers)
        # The limiter is in the flooding page only: a quiet tab's console is the browser's own.
        quiet = await new_tab(mcp, site.url("/page/a"), background=True)
        native = "() => String(console.log).includes('[native code]')"
        for tab, expected in ((flood, False), (quiet, True)):
            answer = await mcp.call_tool("browser_evaluate", {"tabId": tab, "function": native})
            assert result_of(answer)["value"] is expected, tab


async def test_a_flood_of_logs_never_cuts_an_error_and_errors_cut_are_counted_as_dropped_errors(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Errors have a rate of their own, in the page's limiter and in tabpilot: a flood of other
    lines leaves an error after it alone; errors past their own rate are counted in `errors`."""
    chunks, per_chunk = 10, 2000
    flood = (
        f"for (let c = 0; c < {chunks}; c++) {{"
        f"  for (let i = 0; i < {per_chunk}; i++) console.KIND('KIND ' + (c * {per_chunk} + i));"
        "  await new Promise(r => setTimeout(r, 0));"
        "}"
    )
    site.set_content(
        "/error-after-flood",
        '<link rel="icon" href="data:,"><h1>Flood</h1><script>(async () => {'
        + flood.replace("KIND", "log")
        + "console.error('FINAL ERROR');"
        + flood.replace("KIND", "error")
        + "})();</script>",
    )
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/error-after-flood"), background=True)
        errors, dropped = await logs_accounted_for(mcp, tab, chunks * per_chunk + 1, "errors")
        assert len(errors) + dropped == chunks * per_chunk + 1, (len(errors), dropped)
        assert errors[0]["message"] == "FINAL ERROR"
        assert dropped > 0, "errors past their own rate were dropped, and counted"
        logs, dropped_logs = await logs_accounted_for(mcp, tab, 2 * chunks * per_chunk + 1)
        assert len(logs) + dropped_logs == 2 * chunks * per_chunk + 1


async def test_a_server_without_observe_counts_errors_and_records_no_network(
    make_server: Callable[..., TabpilotServer], site: LocalSite
) -> None:
    server = make_server(caps=("forms",))
    async with Client(server) as mcp:
        tab = await new_tab(mcp, site.url("/fetch?path=/api/text?n=5"), background=True)
        # The page logs its line once the fetch is done: wait for it before navigating away.
        await poll(
            lambda: mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}),
            lambda r: "Done" in text(r),
        )
        # The error is counted once, by the first response after it: the navigation's or a later list.
        navigated = await mcp.call_tool(
            "browser_navigate", {"url": site.url("/console?throw=boom"), "tabId": tab}
        )
        counted = navigated
        if not new_errors(navigated, tab):
            counted = await poll(
                lambda: mcp.call_tool("browser_tabs", {"action": "list"}), lambda r: new_errors(r, tab) > 0
            )
        assert new_errors(counted, tab) == 1, text(counted)
        assert "1 new error" in tab_line(counted, tab)
        assert "browser_observe" not in text(counted)  # not offered: not advised

        assert server.state is not None
        (session,) = server.state.sessions.values()
        await session.telemetry.settle()
        assert session.telemetry.held("logs") == 1  # the fetch page's line: recorded as ever
        assert session.telemetry.held("network_waterfall") == 0


async def test_the_actions_log_names_the_tab_of_each_call_and_marks_calls_on_no_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/page/a"))
        await mcp.call_tool("browser_snapshot", {"tabId": tab})
        await mcp.call_tool("browser_instance", {"action": "list"})  # a call on no tab
        await mcp.call_tool("browser_observe", {"what": "logs"})  # reading telemetry: not an action

        actions = await mcp.call_tool("browser_observe", {"what": "actions"})
        entries = result_of(actions)["entries"]
        assert [(e["tool"], e["tabId"]) for e in entries][-2:] == [
            ("browser_snapshot", tab),
            ("browser_instance", None),
        ]
        assert "browser_observe" not in [e["tool"] for e in entries]
        lines = [line for line in section(actions, "Result").splitlines() if line.startswith("[")]
        assert lines[-2].startswith(f"[tab {tab}] #") and "browser_snapshot(" in lines[-2], lines
        # The arguments the client gave, not every default as if it had (background=False, ...).
        assert lines[-2].split(" ", 3)[3].startswith(f"browser_snapshot(tabId={tab}) ok: "), lines[-2]
        assert lines[-1].startswith("[no tab] #") and "browser_instance(action='list') ok: " in lines[-1]
        assert entries[-1]["arguments"] == {"action": "list"}


async def test_a_call_its_client_cancels_is_in_the_actions_log_as_cancelled(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # It was left out (the log is of every tool call but browser_observe's): the navigation it
    # started was in the network log, the call that started it nowhere.
    async with connect() as mcp:
        tab = await new_tab(mcp, site.url("/page/a"))
        slow = site.url("/api/slow?ms=5000")
        with pytest.raises(MCPError, match=r"(?i)timed out"):
            await mcp.call_tool("browser_navigate", {"url": slow, "tabId": tab}, read_timeout_seconds=0.5)

        async def cancelled() -> dict[str, Any] | None:
            entries = result_of(await mcp.call_tool("browser_observe", {"what": "actions"}))["entries"]
            return next((e for e in entries if e["tool"] == "browser_navigate"), None)

        entry = await poll(cancelled, lambda found: found is not None)
        assert entry is not None
        assert (entry["tabId"], entry["arguments"]["url"], entry["ok"]) == (tab, slow, False), entry
        assert entry["outcome"].startswith("cancelled by its client before it finished"), entry
