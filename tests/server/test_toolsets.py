"""The compatible tool sets (SPEC 4) through a real MCP client, on a real Chromium and the local site.

Each seed's documented shapes and texts are compared exactly, ids are checked to agree across tool
sets of one server, and the failure each seed describes is shown not to happen here.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import os
import re
import signal
import threading
from collections.abc import Callable
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult, ImageContent, TextContent
from starlette.requests import Request
from starlette.responses import Response

from support import (
    free_port,
    png_size,
    poll,
    ref_of,
    remote_chromium,
    result_of,
    served,
    text,
    wait_until,
)
from tabpilot import BrowserOptions, TabInfo, TabManager
from tabpilot.demo.site import LocalSite
from tabpilot.server import ServerConfig, create_server
from tabpilot.server.advice import tabs_renamed
from tabpilot.server.app import PEER_TOOLS
from tabpilot.server.toolsets import browser_use, foxmcp, pilo
from tabpilot.server.toolsets._common import interactive_elements, shown_title


def tab_info(tab_id: int, url: str, title: str, *, active: bool = False, pinned: bool = False) -> TabInfo:
    return TabInfo(
        id=tab_id,
        instance_id="inst_1",
        url=url,
        title=title,
        active=active,
        index=tab_id - 1,
        window_id=1,
        pinned=pinned,
        opener_id=None,
        status="complete",
        dialog=None,
        target_id=None,
    )


async def call(mcp: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    """Call a tool that must succeed; return the set's own answer (its first text block: a note
    beside it, of a tab that closed by itself meanwhile, is read with `blocks`)."""
    result = await mcp.call_tool(tool, arguments or {})
    assert not result.is_error, text(result)
    return blocks(result)[0]


async def fail(mcp: Client, tool: str, arguments: dict[str, Any]) -> str:
    """Call a tool that must fail; return the set's own error (as `call` returns its answer)."""
    result = await mcp.call_tool(tool, arguments)
    assert result.is_error, text(result)
    return blocks(result)[0]


def blocks(result: CallToolResult) -> list[str]:
    """The text blocks of an answer, one by one."""
    return [c.text for c in result.content if isinstance(c, TextContent)]


async def until_title(mcp: Client, tab_id: int, title: str) -> None:
    """Wait until Pilo's list_tabs shows `title` for a tab (a tab opened by a page loads by itself)."""
    for _ in range(100):
        tabs = json.loads(await call(mcp, "list_tabs"))["tabs"]
        if any(t["id"] == str(tab_id) and t["title"] == title for t in tabs):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"tab {tab_id} never got the title {title!r}")


# -- formats, without a browser -------------------------------------------------------------------


def test_foxmcp_tabs_list_reproduces_the_seed_example_with_foxmcps_own_marker_spacing() -> None:
    tabs = [
        tab_info(1, "chrome://browser/content/blanktab.html", "New Tab"),
        tab_info(2, "https://example.com/", "Example Domain", active=True),
        tab_info(3, "https://github.com/", "GitHub", pinned=True),
        tab_info(4, "https://google.com", "Google", active=True, pinned=True),
    ]
    assert foxmcp.tabs_list_text(tabs) == (
        "Open tabs (4 found):\n"
        "- ID 1: New Tab - chrome://browser/content/blanktab.html\n"
        "- ID 2: Example Domain - https://example.com/ (active)\n"
        "- ID 3: GitHub - https://github.com/ (pinned)\n"
        # FoxMCP's code appends " (active)" then " (pinned)"; the seed's hand-written line shows "(active)(pinned)".
        "- ID 4: Google - https://google.com (active) (pinned)\n"
    )


def test_foxmcp_falls_back_to_no_title_and_no_url_and_reports_no_tabs_as_the_seed_does() -> None:
    assert foxmcp.tab_line(tab_info(7, "", "")) == "- ID 7: No title - No URL"
    assert foxmcp.tabs_list_text([]) == (
        'No tabs found. Extension response: {"tabs": [], "debug": {"totalFound": 0, "tabUrls": []}}'
    )


def test_pilo_available_tabs_header_matches_the_seed() -> None:
    tabs = [
        tab_info(3, "https://example.com/", "Home"),
        tab_info(4, "https://support.example.com/help", "Help Center"),
        tab_info(5, "about:blank", ""),
    ]
    assert pilo.available_tabs_text(tabs, current_id=3) == (
        "Available tabs:\n"
        'Tab 3 (current): example.com - "Home"\n'
        'Tab 4: support.example.com - "Help Center"\n'
        'Tab 5: about:blank - ""'
    )


@pytest.mark.parametrize(
    ("url", "title"),
    [
        ("http://127.0.0.1:9/x", "127.0.0.1"),
        ("https://localhost:8443/", "localhost"),
        ("http://[::1]:8000/y", "[::1]"),
        ("http://xn--bcher-kva.invalid/", "bücher.invalid"),
        ("file:///nonexistent/a%20b.html", "file:///nonexistent/a%20b.html"),
    ],
)
def test_a_tab_on_the_error_page_is_titled_as_chromium_titles_that_page(url: str, title: str) -> None:
    """What Chromium's error page says in its <title> (and the browser's record of the tab) for
    each URL, as read on Chromium 156: the host of an http(s) URL, in Unicode; any other URL whole."""
    assert shown_title(dataclasses.replace(tab_info(2, url, ""), error_page=True)) == title
    assert shown_title(tab_info(2, url, "")) == ""  # a page that gives itself no title


def test_browser_use_tabs_carry_tab_id_and_parent_tab_id_as_the_seeds_fix_proposes() -> None:
    info = tab_info(4, "https://google.com", "Google")
    child = TabInfo(**{**{f: getattr(info, f) for f in info.__slots__}, "id": 5, "opener_id": 4})
    assert browser_use.tab_entry(info) == {
        "url": "https://google.com",
        "title": "Google",
        "tab_id": "4",
        "parent_tab_id": None,
    }
    assert browser_use.tab_entry(child)["parent_tab_id"] == "4"


def test_a_sets_name_of_a_tab_replaces_tabpilots_only_for_the_errors_tabs_and_never_in_page_text() -> None:
    def named(tab_id: int) -> str:
        return f'tab_id "{tab_id}"'

    said = (
        "Accepted an alert dialog: 'from tab 2' on tab 2. Tab 2 waits; tab 3 is another; "
        "tab 2's history. Open tabs:\n  - tab 2: My tab 2 (http://x/tab 2)"
    )
    assert tabs_renamed(said, {2}, named) == (
        'Accepted an alert dialog: \'from tab 2\' on tab_id "2". Tab with tab_id "2" waits; tab 3 is '
        'another; the history of tab_id "2". Open tabs:\n  - tab_id "2": My tab 2 (http://x/tab 2)'
    )


def test_browser_use_does_not_echo_likely_secrets_it_types() -> None:
    assert browser_use.typed_text(2, "hello") == "Typed 'hello' into element 2"
    assert browser_use.typed_text(2, "me@example.com") == "Typed <email> into element 2"
    assert browser_use.typed_text(2, "sk-live_1234567890abcdef") == "Typed <credential> into element 2"


def test_interactive_elements_are_the_snapshots_controls_and_clickable_nodes_not_their_insides() -> None:
    snapshot = """- generic [active] [ref=3e1]:
  - heading "Home" [level=1] [ref=3e2]
  - textbox "Your name" [ref=3e3]
  - link "Open A" [ref=3e4] [cursor=pointer]:
    - /url: /page/a
    - img [ref=3e5] [cursor=pointer]
  - generic [ref=3e6] [cursor=pointer]: Clicky div
  - button "Say \\"hi\\"" [ref=3e7]"""
    found = [(e.ref, e.role, e.name, e.href) for e in interactive_elements(snapshot)]
    assert found == [
        ("3e3", "textbox", "Your name", None),
        ("3e4", "link", "Open A", "/page/a"),
        ("3e6", "generic", "Clicky div", None),
        ("3e7", "button", 'Say "hi"', None),
    ]


# -- the clash ------------------------------------------------------------------------------------


def test_a_combination_whose_tool_names_clash_is_refused_at_start_naming_the_clash() -> None:
    with pytest.raises(ValueError, match=r"'default' and 'browser-use' both define 'browser_navigate'"):
        create_server(ServerConfig(tools=("default", "browser-use")))


# -- browser-use ----------------------------------------------------------------------------------


def state_of(result: str) -> dict[str, Any]:
    state: dict[str, Any] = json.loads(result)
    return state


async def test_browser_use_get_state_gives_the_tab_ids_that_switch_and_close_take(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use",)) as mcp:
        assert await call(mcp, "browser_navigate", {"url": site.url("/")}) == f"Navigated to: {site.url('/')}"
        state = state_of(await call(mcp, "browser_get_state"))
        assert list(state) == ["url", "title", "tabs", "interactive_elements"]
        assert (state["url"], state["title"]) == (site.url("/"), "Home")
        home_id = state["tabs"][0]["tab_id"]
        assert state["tabs"] == [
            {"url": site.url("/"), "title": "Home", "tab_id": home_id, "parent_tab_id": None}
        ]
        assert state["interactive_elements"][0] == {
            "index": 1,
            "tag": "a",
            "text": "Open A in new tab",
            "href": "/page/a",
        }
        assert state["interactive_elements"][1] == {"index": 2, "tag": "button", "text": "Open popup"}

        clicked = await call(mcp, "browser_click", {"index": 1})
        state = state_of(await call(mcp, "browser_get_state"))
        child = next(t for t in state["tabs"] if t["parent_tab_id"] == home_id)
        assert clicked.splitlines() == [
            "Clicked element 1",
            f'New tab: tab_id "{child["tab_id"]}" (parent_tab_id "{home_id}") {site.url("/page/a")}, not active: '
            f'call browser_switch_tab with tab_id "{child["tab_id"]}" to use it.',
        ]
        listed = json.loads(await call(mcp, "browser_list_tabs"))
        assert [t["tab_id"] for t in listed] == [t["tab_id"] for t in state["tabs"]]
        assert list(listed[0]) == ["tab_id", "url", "title"]

        # The seed's failure: get_state -> switch_tab with the id get_state gave.
        switched = await call(mcp, "browser_switch_tab", {"tab_id": child["tab_id"]})
        assert switched == f"Switched to tab {child['tab_id']}: {site.url('/page/a')}"
        state = state_of(await call(mcp, "browser_get_state"))
        assert state["url"] == site.url("/page/a")

        closed = await call(mcp, "browser_close_tab", {"tab_id": int(child["tab_id"])})
        assert closed == f"Closed tab # {child['tab_id']}, now on {site.url('/')}"


async def test_pilo_and_browser_use_cut_a_large_page_at_the_servers_limit_and_read_all_of_it_with_full(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # 150 buttons and 150 links: about 7,000 characters of tree, 20,000 of browser-use's state JSON.
    limit = 4_000
    async with connect(tools=("browser-use", "pilo"), max_snapshot_chars=limit) as mcp:
        await call(mcp, "goto", {"url": site.url("/many?n=150")})
        snap = await call(mcp, "get_snapshot")
        cut = re.search(r"\(Cut at 4,000 characters, the server's limit: (\d+) more lines .*\)$", snap)
        assert cut is not None, snap[-400:]
        assert snap.endswith("To read on: get_snapshot(full=true) shows all of it.)")
        tree = snap.split("\nCurrent page (Tab ", 1)[1].split("\n", 1)[1].rsplit("\n(Cut at", 1)[0]
        assert len(tree) <= limit and 'button "Button 1"' in tree and 'link "Link 150"' not in tree
        whole = await call(mcp, "get_snapshot", {"full": True})
        assert "Cut at" not in whole
        lines = whole.split("\nCurrent page (Tab ", 1)[1].splitlines()[1:]
        assert lines[: len(tree.splitlines())] == tree.splitlines()  # whole lines, the first ones
        assert len(lines) - len(tree.splitlines()) == int(cut.group(1))
        # A ref of the part left out works: the whole page was read.
        await call(mcp, "click", {"ref": ref_of(whole, 'link "Link 150"')})

        state = await call(mcp, "browser_get_state")
        assert len(state) <= limit
        cut_state = state_of(state)
        listed = cut_state["interactive_elements"]
        assert listed[0] == {"index": 1, "tag": "button", "text": "Button 1"}
        left = 300 - len(listed)
        assert cut_state[browser_use.CUT_KEY].startswith(
            f"Cut at 4,000 characters, the server's limit: {left} more elements are left out, of 300 in all"
        )
        assert cut_state[browser_use.CUT_KEY].endswith("browser_get_state(full=true) lists them all.")
        everything = state_of(await call(mcp, "browser_get_state", {"full": True}))
        assert browser_use.CUT_KEY not in everything
        assert everything["interactive_elements"][: len(listed)] == listed
        assert everything["interactive_elements"][-1] == {
            "index": 300,
            "tag": "a",
            "text": "Link 150",
            "href": "#150",
        }
        # An index the cut state left out works too (it was read with the page).
        await call(mcp, "browser_click", {"index": 299})
        assert state_of(await call(mcp, "browser_get_state", {"full": True}))["url"] == site.url(
            "/many?n=150#149"
        )


async def test_a_tab_on_the_error_page_has_the_title_its_page_shows_in_every_set(
    connect: Callable[..., Client],
) -> None:
    # Pilo's snapshot header listed it as `127.0.0.1:PORT - ""` above `Current page (Tab 1): ... -
    # "127.0.0.1"` (the page's own title), and browser-use's state gave it "" in `tabs` beside
    # "127.0.0.1" as the page's title: the systems of the seeds read the title the browser has.
    failed = f"http://127.0.0.1:{free_port()}/x"  # nothing listens: the connection is refused
    host = failed.split("/")[2]
    async with connect(tools=("pilo", "browser-use", "foxmcp", "browser-tab")) as mcp:
        assert (await fail(mcp, "goto", {"url": failed})).startswith(
            f"Error: Loading {failed} on tab 1 failed"
        )
        snapshot = await call(mcp, "get_snapshot")
        assert snapshot.startswith(
            f'Available tabs:\nTab 1 (current): {host} - "127.0.0.1"\n\n'
            f'Current page (Tab 1): {failed} - "127.0.0.1"\n'
        ), snapshot
        assert json.loads(await call(mcp, "list_tabs"))["tabs"][0]["title"] == "127.0.0.1"
        state = state_of(await call(mcp, "browser_get_state"))
        assert state["title"] == state["tabs"][0]["title"] == "127.0.0.1"
        assert json.loads(await call(mcp, "browser_list_tabs"))[0]["title"] == "127.0.0.1"
        assert (
            await call(mcp, "tabs_list") == f"Open tabs (1 found):\n- ID 1: 127.0.0.1 - {failed} (active)\n"
        )
        listed = json.loads(await call(mcp, "browser_tab", {"action": "list"}))
        assert listed["tabs"][0]["title"] == "127.0.0.1"


async def test_browser_use_says_a_new_tab_is_active_when_the_server_follows_new_tabs(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use",), follow_new_tabs=True) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/")})
        home_id = state_of(await call(mcp, "browser_get_state"))["tabs"][0]["tab_id"]
        clicked = await call(mcp, "browser_click", {"index": 1})
        state = state_of(await call(mcp, "browser_get_state"))
        child = next(t for t in state["tabs"] if t["parent_tab_id"] == home_id)
        assert clicked.splitlines() == [
            "Clicked element 1",
            f'New tab: tab_id "{child["tab_id"]}" (parent_tab_id "{home_id}") {site.url("/page/a")}, now active.',
        ]
        assert state["url"] == site.url("/page/a")


async def test_pilo_says_a_new_tab_is_current_when_the_server_follows_new_tabs(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("pilo",), follow_new_tabs=True) as mcp:
        await call(mcp, "goto", {"url": site.url("/")})
        snap = await call(mcp, "get_snapshot")
        home = int(snap.splitlines()[1].split()[1])
        clicked = await call(mcp, "click", {"ref": ref_of(snap, "Open A in new tab")})
        new = json.loads(await call(mcp, "list_tabs"))["activeTabId"]
        assert new != str(home)
        assert clicked.splitlines()[1] == (
            f"BROWSER_TAB_OPENED: Tab {new} (opened by Tab {home}): {site.url('/page/a')}. It is now the current tab."
        )


async def test_pilo_says_a_tab_the_tab_limit_closed_at_once_was_opened_and_how_to_make_room(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("pilo",), max_tabs=1) as mcp:
        await call(mcp, "goto", {"url": site.url("/")})
        snap = await call(mcp, "get_snapshot")
        home = int(snap.splitlines()[1].split()[1])
        clicked = await call(mcp, "click", {"ref": ref_of(snap, "Open popup")})
        # One line: opened, and closed by the limit (not a separate "closed by cap" line).
        (line,) = clicked.splitlines()[1:]
        assert line.startswith(f"BROWSER_TAB_OPENED: Tab {line.split()[2]} (opened by Tab {home}): ")
        assert line.endswith(
            ". But the tab limit (--max-tabs 1) closed it at once: each instance has only the one tab. To "
            "let a page open tabs, ask whoever runs the server to raise the limit."
        ), clicked


async def test_browser_use_indexes_of_another_tab_or_a_stale_state_are_refused(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/")})
        with_state = state_of(await call(mcp, "browser_get_state"))["tabs"][0]["tab_id"]
        opened = await call(mcp, "browser_navigate", {"url": site.url("/page/b"), "new_tab": True})
        assert opened.splitlines()[0] == f"Opened new tab with URL: {site.url('/page/b')}"

        other_tab = await fail(mcp, "browser_click", {"index": 1})
        assert other_tab.startswith("Error: Element with index 1 not found")
        assert f'state of tab_id "{with_state}"' in other_tab and "browser_get_state" in other_tab

        await call(mcp, "browser_switch_tab", {"tab_id": with_state})
        await call(mcp, "browser_navigate", {"url": site.url("/page/c")})
        stale = await fail(mcp, "browser_click", {"index": 1})
        assert stale.startswith("Error: Element with index 1 is no longer on the page")
        # Opened in a new tab, the link of a page left is refused too, not opened from its old href.
        stale_link = await fail(mcp, "browser_click", {"index": 1, "new_tab": True})
        assert stale_link.startswith("Error: Element with index 1 is no longer on the page"), stale_link

        unknown = await fail(mcp, "browser_switch_tab", {"tab_id": "zz9x"})
        assert unknown.startswith('Error: No tab with tab_id "zz9x".')


async def test_browser_use_opens_a_link_in_a_new_tab_where_a_click_on_it_leads(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """A relative href is resolved as the browser does, against the page's <base> (or a frame's
    own URL), not against the tab's URL."""
    site.set_content(
        "/based/page",
        "<title>Based</title><base href='/elsewhere/dir/'><a href='target' target='_blank'>Base link</a>",
    )
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/based/page")})
        clicked_in = state_of(await call(mcp, "browser_get_state"))["tabs"][0]["tab_id"]
        opened = await call(mcp, "browser_click", {"index": 1, "new_tab": True})
        tab_id = re.search(
            rf'New tab: tab_id "(\d+)" \(parent_tab_id "{clicked_in}"\) (\S+), now active', opened
        )
        assert tab_id is not None, opened
        assert tab_id.group(2) == site.url("/elsewhere/dir/target"), opened  # in full, unlike the line above
        listed = {t["tab_id"]: t["url"] for t in json.loads(await call(mcp, "browser_list_tabs"))}
        assert listed[tab_id.group(1)] == site.url("/elsewhere/dir/target")
        # Its parent is the tab clicked in (it was null: the server opens the URL in a tab of its own).
        tabs = state_of(await call(mcp, "browser_get_state"))["tabs"]
        assert [t["parent_tab_id"] for t in tabs if t["tab_id"] == tab_id.group(1)] == [clicked_in], tabs

        # A link to what opens no page (a script, a mail): said so, and nothing is opened.
        site.set_content("/script-link", "<title>S</title><a href='javascript:void(0)'>Run</a>")
        await call(mcp, "browser_navigate", {"url": site.url("/script-link")})
        await call(mcp, "browser_get_state")
        refused = await fail(mcp, "browser_click", {"index": 1, "new_tab": True})
        assert refused == (
            "Error: Element 1 links to javascript:void(0), which opens no page in a tab: click it without new_tab."
        )
        assert len(json.loads(await call(mcp, "browser_list_tabs"))) == len(listed)


async def test_pilo_and_browser_use_accept_a_dialog_that_holds_a_navigation_up(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Neither set has a dialog tool: a page that asks before it is left, or a next page that opens
    an alert as it loads, is accepted and said so, not answered with advice to handle it."""
    site.set_content("/alert-on-load", "<title>Alerts</title><script>alert('loaded?')</script>")
    asked = "Accepted a beforeunload dialog (the page asks before it is left)"
    async with connect(tools=("browser-use", "pilo")) as mcp:
        await call(mcp, "goto", {"url": site.url("/beforeunload")})
        snap = await call(mcp, "get_snapshot")
        await call(mcp, "fill", {"ref": ref_of(snap, "textbox"), "value": "draft"})
        left = await call(mcp, "goto", {"url": site.url("/page/next")})
        assert left.splitlines()[1:] == [asked], left
        assert f"to {site.url('/page/next')}." in left.splitlines()[0]
        alerted = await call(mcp, "goto", {"url": site.url("/alert-on-load")})
        assert alerted.splitlines()[1:] == ["Accepted an alert dialog: 'loaded?'"], alerted

        await call(mcp, "browser_navigate", {"url": site.url("/page/x")})
        await call(mcp, "browser_navigate", {"url": site.url("/beforeunload")})
        await call(mcp, "browser_get_state")
        await call(mcp, "browser_type", {"index": 1, "text": "draft"})
        back = await call(mcp, "browser_go_back")
        assert back.splitlines() == ["Navigated back", asked], back
        again = await call(mcp, "browser_navigate", {"url": site.url("/alert-on-load")})
        assert again.splitlines()[1:] == ["Accepted an alert dialog: 'loaded?'"], again


async def test_browser_use_names_the_tab_of_a_dialog_it_accepted_for_a_navigation_by_its_tab_id(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """A popup's next page opens an alert in its opener (one thread for both pages), which holds
    the popup's navigation up: the note of the accepted alert names the opener as the set's calls
    take it, tab_id "N"."""
    site.set_content(
        "/holder", "<title>Holder</title><button onclick=\"window.open('/page/b', 'pop')\">Open</button>"
    )
    site.set_content("/calls-opener", "<title>Calls</title><script>opener.alert('from the opener')</script>")
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/holder")})
        opener = state_of(await call(mcp, "browser_get_state"))["tabs"][0]["tab_id"]
        await call(mcp, "browser_click", {"index": 1})
        popup = next(
            t["tab_id"] for t in json.loads(await call(mcp, "browser_list_tabs")) if t["tab_id"] != opener
        )
        await call(mcp, "browser_switch_tab", {"tab_id": popup})
        navigated = await call(mcp, "browser_navigate", {"url": site.url("/calls-opener")})
        assert navigated.splitlines() == [
            f"Navigated to: {site.url('/calls-opener')}",
            f"Accepted an alert dialog: 'from the opener' on tab_id \"{opener}\"",
        ], navigated


async def test_browser_use_says_what_a_field_takes_with_its_own_tools(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Typing into what takes no text: the advice names indexes and browser_get_state, and no tool
    the set lacks (refs, snapshots, a form fill, selecting an option)."""
    site.set_content(
        "/fields",
        "<title>Fields</title><button>Go</button><select aria-label='Color'><option>red</option></select>"
        "<input type='checkbox' aria-label='Chk'><a href='/x'>Link</a>",
    )
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/fields")})
        await call(mcp, "browser_get_state")
        said = [await fail(mcp, "browser_type", {"index": i, "text": "hi"}) for i in (1, 2, 3, 4)]
        assert said[0].endswith(
            "element 1 is a button, not a text field. Click it, or use an index of the field you meant "
            "(call browser_get_state to find it)."
        ), said[0]
        assert said[1].endswith(
            "element 2 is a drop-down list, not a text field. It takes one of its options, which no tool "
            "here gives; leave it, or use a field that takes text."
        ), said[1]
        assert said[2].endswith("element 3 is a checkbox, not a text field. Click it to change it."), said[2]
        assert said[3].endswith(
            "Use an index of a textbox, searchbox or combobox (call browser_get_state to find it)."
        ), said[3]
        for text_ in said:
            assert not re.search(r"\bref\b|snapshot|form fill|Select one", text_), text_


async def test_browser_use_errors_of_the_library_name_tabs_by_tab_id_but_quote_the_page_as_it_is(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The set's own texts said `tab_id "1"`, the library's errors it passed on `tab 1`.
    site.set_content(
        "/covered",
        "<title>Covered</title><button>Under</button>"
        '<div style="position:fixed;inset:0;background:red">on tab 1</div>',
    )
    unsafe = "http://127.0.0.1:1/"  # a port the browser refuses to load
    async with connect(tools=("browser-use",)) as mcp:
        assert await fail(mcp, "browser_close_tab", {"tab_id": "1"}) == (
            'Error: Cannot close last tab: tab_id "1" is the only open tab. Open another tab first '
            "(browser_navigate(url=..., new_tab=true))."
        )
        await call(mcp, "browser_navigate", {"url": site.url("/covered")})
        await call(mcp, "browser_get_state")
        covered = await fail(mcp, "browser_click", {"index": 1})
        assert covered.startswith(
            'Error: Clicking element 1 on tab_id "1" failed: element 1 is covered by another element '
            "(<div>on tab 1</div>)."  # the page's words stay its own
        ), covered
        assert (await fail(mcp, "browser_navigate", {"url": unsafe})).startswith(
            f'Error: Loading {unsafe} on tab_id "1" failed: '
        )


async def test_sets_without_instances_refuse_a_tab_over_the_limit_without_naming_an_instance(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # They said 'instance inst_1 has 1 tab': a word, and an id, no call of these sets takes.
    limit = "the limit (--max-tabs 1, --tab-limit-policy reject). Load the page in the tab you have instead."
    async with connect(tools=("browser-use",), max_tabs=1) as mcp:
        said = await fail(mcp, "browser_navigate", {"url": site.url("/page/a"), "new_tab": True})
        assert said == f"Error: Cannot open a new tab: its browser has 1 tab, {limit}"
    async with connect(tools=("foxmcp",), max_tabs=1) as mcp:
        said = await fail(mcp, "tabs_create", {"url": site.url("/page/a")})
        assert said == f"Error creating tab: Cannot open a new tab: its browser has 1 tab, {limit}"


async def test_browser_use_says_a_tab_the_tab_limit_closed_at_once_was_opened_and_how_to_make_room(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use",), max_tabs=2) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/page/b"), "new_tab": True})  # at the cap
        await call(mcp, "browser_switch_tab", {"tab_id": "1"})
        await call(mcp, "browser_navigate", {"url": site.url("/")})
        elements = state_of(await call(mcp, "browser_get_state"))["interactive_elements"]
        index = next(e["index"] for e in elements if e["text"] == "Open popup")
        clicked = await call(mcp, "browser_click", {"index": index})
        lines = clicked.splitlines()
        assert lines[0] == f"Clicked element {index}"
        assert re.fullmatch(
            r'New tab: tab_id "\d+", but the tab limit \(--max-tabs 2\) closed it at once\. To let a page open '
            r"tabs, close tabs you no longer need \(browser_close_tab\), or ask whoever runs the server to "
            r"raise the limit\.",
            lines[1],
        ), clicked
        assert len(lines) == 2, clicked  # not told closed a second time


async def test_browser_use_types_scrolls_goes_back_and_sends_a_screenshot_as_an_image(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/oauth/authorize")})
        state = state_of(await call(mcp, "browser_get_state"))
        field = next(e for e in state["interactive_elements"] if e["tag"] == "input")
        typed = await call(mcp, "browser_type", {"index": field["index"], "text": "ada"})
        assert typed == f"Typed 'ada' into element {field['index']}"
        # Not a text field: said with the element's index (the ref behind it is never shown).
        button = next(e for e in state["interactive_elements"] if e["tag"] == "button")
        refused = await fail(mcp, "browser_type", {"index": button["index"], "text": "ada"})
        n = button["index"]
        # Said once: not "could not type into element 2: Typing into element 2 on tab 1 failed: ...".
        assert refused.startswith(f"Error: could not type into element {n}: element {n} is a button"), refused
        assert (
            f"element {n} is a button, not a text field." in refused and f"element element {n}" not in refused
        )
        assert not re.search(r"\b\d+e\d+\b", refused)
        # No such index: only that is said.
        missing = await fail(mcp, "browser_type", {"index": 999, "text": "ada"})
        assert missing.startswith("Error: Element with index 999 not found") and "text field" not in missing
        assert "has indexes 1 to " in missing
        assert await call(mcp, "browser_scroll", {"direction": "down"}) == "Scrolled down"
        await call(mcp, "browser_navigate", {"url": site.url("/page/a")})
        assert await call(mcp, "browser_go_back") == "Navigated back"
        # Nothing to go back to (a new tab's first page): said so, not "Navigated back",
        # naming the tab as this set does (it said "in tab 2's history").
        fresh = await call(mcp, "browser_navigate", {"url": site.url("/page/c"), "new_tab": True})
        fresh_id = re.search(r'tab_id "(\d+)"', fresh)
        assert fresh_id is not None
        await call(mcp, "browser_go_back")
        stayed = await call(mcp, "browser_go_back")
        assert stayed == (
            "Did not navigate back: There is no page to go back to in the history of "
            f'tab_id "{fresh_id.group(1)}"; it stays on {site.url("/page/c")}.'
        ), stayed
        await call(mcp, "browser_close_tab", {"tab_id": fresh_id.group(1)})  # back on the tab before
        await call(mcp, "browser_navigate", {"url": "about:blank"})
        assert state_of(await call(mcp, "browser_get_state"))["interactive_elements"] == []
        none = await fail(mcp, "browser_click", {"index": 1})
        assert "the latest browser_get_state listed no interactive elements" in none
        await call(mcp, "browser_go_back")

        result: CallToolResult = await mcp.call_tool("browser_get_state", {"include_screenshot": True})
        assert state_of(text(result))["url"] == site.url("/oauth/authorize")
        assert [c.mime_type for c in result.content if isinstance(c, ImageContent)] == ["image/png"]


async def test_browser_use_screenshot_of_a_viewport_wider_than_a_model_takes_is_scaled_down(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use",), browser=BrowserOptions(viewport=(9000, 300))) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/page/a")})
        result: CallToolResult = await mcp.call_tool("browser_get_state", {"include_screenshot": True})
        images = [c for c in result.content if isinstance(c, ImageContent)]
        assert [png_size(image) for image in images] == [(8000, 267)]


async def test_browser_use_navigate_says_a_file_was_downloaded_and_an_http_error_status(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # It said only "Navigated to: ..." (the tab stayed where it was; the 404 went unsaid), though
    # the same call with new_tab=true said the status.
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/page/a")})
        binary = site.url("/api/binary")
        fetched = await call(mcp, "browser_navigate", {"url": binary})
        first, said = fetched.split("\n", 1)
        assert first == f"Navigated to: {binary}"
        assert (
            said
            == f'{binary} is a file, not a page: the browser downloads it, and tab_id "1" stays on {site.url("/page/a")}.'
        ), said
        assert "###" not in said  # this set shows no sections
        assert state_of(await call(mcp, "browser_get_state"))["url"] == site.url("/page/a")
        missing = await call(mcp, "browser_navigate", {"url": site.url("/api/status/404")})
        assert missing.splitlines()[1:] == ["The server answered HTTP 404."], missing


async def test_a_slow_page_loaded_in_the_current_tab_is_no_failure_but_said_loading(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The same page in a new tab was a success saying the tab loads it; in the current tab, an
    # error (isError, "Error: ... did not finish loading"): an agent retried or gave up on it.
    slow = site.url("/api/slow?ms=2000")
    loading = f"Tab 1 is loading {slow}; its server has not sent it yet."
    async with connect(tools=("browser-use",), browser=BrowserOptions(timeout_navigation=1)) as mcp:
        said = await call(mcp, "browser_navigate", {"url": slow})
        assert (
            said
            == f'Navigated to: {slow}\nTab with tab_id "1" is loading {slow}; its server has not sent it yet.'
        )
    async with connect(tools=("pilo",), browser=BrowserOptions(timeout_navigation=1)) as mcp:
        assert await call(mcp, "goto", {"url": slow}) == f"Navigated tab 1 to {slow}. {loading}"


async def test_reading_a_page_still_on_its_way_says_so_at_once_in_each_sets_words(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # get_snapshot waited the action timeout (5 s), and when the page came meanwhile, blamed a
    # "too large" tree; browser_get_state waited as long and gave an empty element list.
    slow = site.url("/api/slow?ms=4000")
    for tools, load, read, tab in (
        ("pilo", "goto", "get_snapshot", "tab 1"),
        ("browser-use", "browser_navigate", "browser_get_state", 'tab_id "1"'),
    ):
        async with connect(tools=(tools,), browser=BrowserOptions(timeout_navigation=1)) as mcp:
            await call(mcp, load, {"url": slow})
            said = await fail(mcp, read, {})
            assert (
                said.startswith("Error: ") and f"{tab} is loading {slow}, whose server has not sent" in said
            )
            assert said.endswith(f"call {read} in a while, or load another page."), said
            assert "too large" not in said
            await poll(functools.partial(mcp.call_tool, read, {}), lambda r: not r.is_error, timeout=10)


async def test_a_tab_the_loaded_page_opens_is_named_by_the_answer_of_each_set(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # browser-use's browser_navigate named it; Pilo's goto, browser_tab new and tabs_create did not,
    # though every set's instructions say such a tab is named in the answer of the action.
    site.set_content("/onload", "<title>OL</title><script>window.open('/page/p')</script>")
    onload, popup = site.url("/onload"), site.url("/page/p")
    async with connect(tools=("pilo", "browser-tab", "foxmcp")) as mcp:
        went = await call(mcp, "goto", {"url": onload})
        assert went.splitlines() == [
            f"Navigated tab 1 to {onload}.",
            f"BROWSER_TAB_OPENED: Tab 2 (opened by Tab 1): {popup}. It is not the current tab: call switch_tab "
            'with tabId "2" to use it.',
        ], went
        made = json.loads(await call(mcp, "browser_tab", {"action": "new", "url": onload}))
        assert made["tabId"] == 3 and made["openedTabs"] == [{"tabId": 4, "openerTabId": 3, "url": popup}], (
            made
        )
        created = await call(mcp, "tabs_create", {"url": onload})
        assert created.splitlines()[1:] == [f"Tab 6 opened by tab 5: {popup}"], created
        assert (
            await call(mcp, "goto", {"url": site.url("/page/a")})
            == f"Navigated tab 5 to {site.url('/page/a')}."
        )


async def test_browser_use_names_a_tab_a_page_opened_after_its_click_was_answered(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A page's timer opened it after the click's answer: no later answer named it (the Pilo seed's
    # "silently does not notice"); only browser_list_tabs and browser_get_state showed it.
    site.set_content(
        "/late-popup",
        "<title>Late</title><button onclick=\"setTimeout(() => window.open('/page/b'), 700)\">Later</button>",
    )
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/late-popup")})
        state = state_of(await call(mcp, "browser_get_state"))
        start = state["tabs"][-1]["tab_id"]
        later = next(e["index"] for e in state["interactive_elements"] if e["text"] == "Later")
        assert await call(mcp, "browser_click", {"index": later}) == f"Clicked element {later}"

        # Each later action's answer would name it: the first after it opened does.
        scrolled = await poll(
            lambda: call(mcp, "browser_scroll", {"direction": "down"}), lambda said: "\n" in said
        )
        popup = json.loads(await call(mcp, "browser_list_tabs"))[-1]["tab_id"]
        assert scrolled.splitlines() == [
            "Scrolled down",
            f'New tab: tab_id "{popup}" (parent_tab_id "{start}") {site.url("/page/b")}, not active: call '
            f'browser_switch_tab with tab_id "{popup}" to use it.',
        ], scrolled
        assert await call(mcp, "browser_scroll", {"direction": "up"}) == "Scrolled up"  # named once


async def test_every_set_lists_a_tab_still_loading_its_first_page_by_the_url_it_loads(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # They listed it with no URL ("url": "", "about:blank - No URL", a Pilo line without a host),
    # while the default set said "loading <url>".
    slow = site.url("/api/slow?ms=8000")
    site.set_content(
        "/opener", f"<title>Opener</title><button onclick=\"window.open('{slow}')\">slow</button>"
    )
    async with connect(tools=("default", "browser-tab", "foxmcp", "pilo")) as mcp:
        start = await call(mcp, "browser_navigate", {"url": site.url("/opener")})
        clicked = await call(mcp, "browser_click", {"ref": ref_of(start, 'button "slow"')})
        popup = int(re.findall(r"- tab (\d+) opened \(popup\)", clicked)[0])
        listed = json.loads(await call(mcp, "browser_tab", {"action": "list"}))["tabs"]
        assert [t["url"] for t in listed if t["id"] == popup] == [slow], listed
        fox = [
            line for line in (await call(mcp, "tabs_list")).splitlines() if line.startswith(f"- ID {popup}: ")
        ]
        assert len(fox) == 1 and fox[0].endswith(f" - {slow}"), fox  # its title: '' or about:blank
        pilo = json.loads(await call(mcp, "list_tabs"))["tabs"]
        assert [t["url"] for t in pilo if t["id"] == str(popup)] == [slow], pilo
        assert f"Tab {popup}: 127.0.0.1:{site.port} - " in await call(mcp, "get_snapshot")
    site.set_content(
        "/opener-2", f"<title>Opener</title><button onclick=\"window.open('{slow}')\">slow</button>"
    )
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/opener-2")})
        state = state_of(await call(mcp, "browser_get_state"))
        index = next(e["index"] for e in state["interactive_elements"] if e["text"] == "slow")
        said = await call(mcp, "browser_click", {"index": index})
        assert f" {slow}, not active" in said, said
        assert [t["url"] for t in json.loads(await call(mcp, "browser_list_tabs"))][-1] == slow
        # Switching to it, or closing the tab before it, names it by that URL too, not by none.
        popup = json.loads(await call(mcp, "browser_list_tabs"))[-1]["tab_id"]
        assert await call(mcp, "browser_switch_tab", {"tab_id": popup}) == f"Switched to tab {popup}: {slow}"
        opener = json.loads(await call(mcp, "browser_list_tabs"))[0]["tab_id"]
        await call(mcp, "browser_switch_tab", {"tab_id": opener})
        assert (
            await call(mcp, "browser_close_tab", {"tab_id": opener})
            == f"Closed tab # {opener}, now on {slow}"
        )


async def test_pilo_says_a_tab_still_loading_has_no_title_yet_not_the_browsers_stand_in(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Pilo named a popup still loading its page "about:blank" (then its URL, as Chromium's tab strip
    # titles it) as if that were the page's title; Pilo's own page.title() gives '' then.
    slow = site.url("/api/slow?ms=8000")
    site.set_content(
        "/opener", f"<title>Opener</title><button onclick=\"window.open('{slow}')\">slow</button>"
    )
    host = f"127.0.0.1:{site.port}"
    async with connect(tools=("pilo",), browser=BrowserOptions(timeout_navigation=1)) as mcp:
        await call(mcp, "goto", {"url": site.url("/opener")})
        await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "slow"')})
        listed = json.loads(await call(mcp, "list_tabs"))["tabs"]
        assert listed[1] == {"id": "2", "url": slow, "title": "", "isActive": False, "loading": True}
        assert "loading" not in listed[0]
        snapshot = await call(mcp, "get_snapshot")  # it reads the browser's titles afresh
        assert f"Tab 2: {host} - (loading, no title yet)\n" in snapshot, snapshot
        switched = await call(mcp, "switch_tab", {"tabId": "2"})
        assert (
            switched
            == f"Switched to tab 2: {host} - (loading, no title yet). The next snapshot will show this tab."
        )
        await call(mcp, "switch_tab", {"tabId": "1"})
        await call(mcp, "goto", {"url": slow})  # the tab shows Opener until the page comes
        listed = json.loads(await call(mcp, "list_tabs"))["tabs"]
        assert listed[0] == {
            "id": "1",
            "url": site.url("/opener"),
            "title": "Opener",
            "isActive": True,
            "loading": True,
        }
        switched = await call(mcp, "switch_tab", {"tabId": "1"})
        assert switched == (
            f'Tab 1 was the current tab already: {host} - "Opener" (loading {slow}). The next snapshot will '
            "show this tab."
        )


async def test_dialogs_are_accepted_and_named_by_the_sets_without_a_dialog_tool(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-use", "pilo")) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/dialog")})
        state = state_of(await call(mcp, "browser_get_state"))
        confirm = next(e["index"] for e in state["interactive_elements"] if e["text"] == "Confirm")
        clicked = await call(mcp, "browser_click", {"index": confirm})
        assert clicked == f"Clicked element {confirm}\nAccepted a confirm dialog: 'sure?'"

        snapshot = await call(mcp, "get_snapshot")
        assert "confirm: true" in snapshot
        alert = await call(mcp, "click", {"ref": ref_of(snapshot, 'button "Alert"')})
        assert alert.endswith("\nAccepted an alert dialog: 'hello'")

    # A dialog that opens after an answer is accepted by the next call, and said there: also by
    # browser_get_state (it said nothing, and the page went on as if the user had agreed).
    site.set_content(
        "/later-confirm",
        "<title>Later</title><p id=s>kept</p><script>setTimeout(() => { if (confirm('Delete all?')) "
        "document.getElementById('s').textContent = 'DELETED' }, 300)</script>",
    )
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/later-confirm")})
        await asyncio.sleep(1.5)  # the dialog is open (after 0.3 s), the page waits
        state = state_of(await call(mcp, "browser_get_state"))
        assert state["accepted_dialogs"] == ["Accepted a confirm dialog: 'Delete all?'"], state
        assert "accepted_dialogs" not in state_of(await call(mcp, "browser_get_state"))


# -- browser_tab ----------------------------------------------------------------------------------


async def test_an_empty_instance_id_counts_as_not_given(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # It was refused ("Instance '' not found ... list the instances"), though the browser-tab set
    # has no tool that lists them: an agent that sends every optional string had every call refused.
    async with connect(tools=("browser-tab", "default")) as mcp:
        listed = json.loads(await call(mcp, "browser_tab", {"action": "list", "instanceId": ""}))
        assert listed["count"] == len(listed["tabs"]) >= 1
        made = json.loads(
            await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/a"), "instanceId": " "})
        )
        assert made["title"] == "Page a"
        tabs = await mcp.call_tool("browser_tabs", {"action": "list", "instanceId": ""})
        assert not tabs.is_error and f"tab {made['tabId']}: Page a" in text(tabs), text(tabs)


async def test_browser_tab_answers_with_the_seeds_exact_shapes(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("browser-tab",)) as mcp:
        first = json.loads(await call(mcp, "browser_tab", {"action": "list"}))
        assert list(first) == ["tabs", "activeTabId", "count"]
        start = first["activeTabId"]

        new = await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/a")})
        created = json.loads(new)
        assert created == {"tabId": created["tabId"], "url": site.url("/page/a"), "title": "Page a"}
        assert new == json.dumps(created, indent=2)

        listed = json.loads(await call(mcp, "browser_tab", {"action": "list"}))
        assert listed == {
            "tabs": [
                {
                    "id": start,
                    "url": "about:blank",
                    "title": listed["tabs"][0]["title"],
                    "active": False,
                    "index": 0,
                },
                {
                    "id": created["tabId"],
                    "url": site.url("/page/a"),
                    "title": "Page a",
                    "active": True,
                    "index": 1,
                },
            ],
            "activeTabId": created["tabId"],
            "count": 2,
        }
        # The instance may be named by its number, as a string or an integer, as by its id.
        for instance in ("inst_1", "1", 1):
            args = {"action": "activate", "tabId": start, "instanceId": instance}
            activated = json.loads(await call(mcp, "browser_tab", args))
            assert activated == {"success": True, "activeTabId": start}
        # An instance it does not have: the open ones are named (this set cannot list instances).
        unknown = await fail(mcp, "browser_tab", {"action": "list", "instanceId": "inst_9"})
        assert unknown == "Instance 'inst_9' not found. Open instances: inst_1 (context). Use one of these."
        closed = json.loads(await call(mcp, "browser_tab", {"action": "close", "tabId": created["tabId"]}))
        assert closed == {"success": True, "closedTabId": created["tabId"]}

        await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/b")})
        await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/c")})
        kept = json.loads(await call(mcp, "browser_tab", {"action": "close_others", "keepTabId": start}))
        assert kept == {"success": True, "closedCount": 2, "remainingTabId": start}

        not_found = await fail(mcp, "browser_tab", {"action": "close", "tabId": 9999})
        assert not_found.startswith("Tab not found")
        assert "browser_tab(action='list')" in not_found
        last = await fail(mcp, "browser_tab", {"action": "close", "tabId": start})
        assert last == (
            f"Cannot close last tab: tab {start} is the only open tab. Open a new tab first "
            "(browser_tab(action='new')), then close this one."
        )


@pytest.mark.parametrize(
    ("tools", "list_tabs", "close", "argument"),
    [
        ("foxmcp", "tabs_list", "tabs_close", "tab_id"),
        ("browser-use", "browser_list_tabs", "browser_close_tab", "tab_id"),
        ("pilo", "list_tabs", "close_tab", "tabId"),
    ],
)
async def test_a_tab_id_that_is_neither_a_number_nor_text_is_refused_not_read_as_tab_1(
    connect: Callable[..., Client], tools: str, list_tabs: str, close: str, argument: str
) -> None:
    # A lax type turned `true` into 1 and 1.5 into 1: the call closed a tab nobody named. (1.0
    # names tab 1: JSON Schema counts it as an integer, and some clients send every number so.)
    async with connect(tools=(tools, "browser-tab")) as mcp:
        await call(mcp, "browser_tab", {"action": "new"})  # two tabs: closing tab 1 would work
        listed = await call(mcp, list_tabs)
        for value in (True, 1.5):
            refused = await fail(mcp, close, {argument: value})
            assert f"argument '{argument}': Input should be a valid" in refused, refused
        assert await call(mcp, list_tabs) == listed  # both tabs are still there


async def test_foxmcp_and_pilo_refuse_closing_the_last_tab_without_naming_instances(
    connect: Callable[..., Client],
) -> None:
    """Neither set knows instances: the last tab is said to be the only open one."""
    async with connect(tools=("foxmcp", "pilo")) as mcp:
        only = json.loads(await call(mcp, "list_tabs"))["activeTabId"]
        fox = await fail(mcp, "tabs_close", {"tab_id": int(only)})
        assert fox == (
            f"Error closing tab: Cannot close last tab: tab {only} is the only open tab. Open "
            "another tab first (tabs_create(url=...))."
        ), fox
        pilo_said = await fail(mcp, "close_tab", {"tabId": only})
        assert f"tab {only} is the only open tab." in pilo_said and "instance" not in pilo_said
    # Beside the default set, which launches a second browser: its last tab is not the only open
    # one, and a tab tabs_create opens goes to the first browser (the advice went in a circle).
    async with connect(tools=("default", "foxmcp", "pilo")) as mcp:
        await call(mcp, "list_tabs")
        second = result_of(await mcp.call_tool("browser_instance", {"action": "launch"}))
        last = second["activeTabId"]
        fox = await fail(mcp, "tabs_close", {"tab_id": last})
        assert fox == (
            f"Error closing tab: Cannot close last tab: tab {last} is the only tab of its browser (the "
            "other open tabs are another browser's). Keep it open: a browser keeps its last tab. Load "
            "pages in it instead."
        ), fox
        assert "only tab of its browser" in await fail(mcp, "close_tab", {"tabId": last})


async def test_browser_tab_names_every_call_as_the_seed_calls_its_tool(
    connect: Callable[..., Client],
) -> None:
    # Its advice said `browser_tab(action='list')` in one error and `(action=list)` or
    # `browser_tab action=close or close_others` in others: one tool, called one way.
    said: list[str] = []
    async with connect(tools=("browser-tab",), max_tabs=2) as mcp:
        start = json.loads(await call(mcp, "browser_tab", {"action": "list"}))["activeTabId"]
        said.append(await fail(mcp, "browser_tab", {"action": "activate"}))
        assert said[-1] == (
            "tabId is required for browser_tab(action='activate'). List tabs to get valid IDs "
            "(browser_tab(action='list'))."
        )
        said.append(await fail(mcp, "browser_tab", {"action": "close"}))
        said.append(await fail(mcp, "browser_tab", {"action": "close_others"}))
        assert said[-1] == (
            "keepTabId is required for browser_tab(action='close_others'): the tab to keep open. List tabs "
            "to get valid IDs (browser_tab(action='list'))."
        )
        said.append(await fail(mcp, "browser_tab", {"action": "close", "tabId": 99}))
        said.append(await fail(mcp, "browser_tab", {"action": "new", "tabId": start}))
        assert said[-1].startswith("browser_tab(action='new') does not use tabId"), said[-1]
        said.append(await fail(mcp, "browser_tab", {"action": "close", "tabId": start}))
        await call(mcp, "browser_tab", {"action": "new"})
        said.append(await fail(mcp, "browser_tab", {"action": "new"}))  # over the limit of 2
        assert said[-1].endswith(
            "Close tabs you no longer need (browser_tab(action='close', tabId=...) or "
            "browser_tab(action='close_others', keepTabId=...)), then retry."
        ), said[-1]
    for text_ in said:
        assert re.findall(r"browser_tab\b(?!\(action=')|(?<!browser_tab\()action=", text_) == [], text_


async def test_browser_tab_at_a_tab_limit_of_one_does_not_advise_opening_a_tab(
    connect: Callable[..., Client],
) -> None:
    async with connect(tools=("browser-tab",), max_tabs=1) as mcp:
        (only,) = json.loads(await call(mcp, "browser_tab", {"action": "list"}))["tabs"]
        last = await fail(mcp, "browser_tab", {"action": "close", "tabId": only["id"]})
        assert last == (
            f"Cannot close last tab: tab {only['id']} is the only open tab, and the tab limit leaves no room "
            "to open another first. Keep it open."
        )
        refused = await fail(mcp, "browser_tab", {"action": "new"})
        assert "limit" in refused  # as said: no room for another


# -- FoxMCP ---------------------------------------------------------------------------------------


async def test_foxmcp_tools_answer_in_foxmcps_text_formats(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("foxmcp",)) as mcp:
        start = int((await call(mcp, "tabs_list")).splitlines()[1].split(":")[0].removeprefix("- ID "))
        created = await call(
            mcp, "tabs_create", {"url": site.url("/page/a"), "active": False, "pinned": True}
        )
        pinned = int(created.split(" - ")[0].removeprefix("Created tab: ID "))
        assert created == f"Created tab: ID {pinned} - Page a - {site.url('/page/a')}"

        assert await call(mcp, "tabs_list") == (
            "Open tabs (2 found):\n"
            f"- ID {start}: about:blank - about:blank (active)\n"
            f"- ID {pinned}: Page a - {site.url('/page/a')} (pinned)\n"
        )
        assert await call(mcp, "tabs_switch", {"tab_id": pinned}) == f"Successfully switched to tab {pinned}"
        assert (await call(mcp, "tabs_list")).endswith(
            f"- ID {pinned}: Page a - {site.url('/page/a')} (active) (pinned)\n"
        )

        windows = await call(mcp, "windows_list")
        assert windows.startswith("Browser windows (1 found):\n- ID ")
        assert windows.endswith(", 2 tabs (focused)\n")

        assert await call(mcp, "tabs_close", {"tab_id": str(start)}) == f"Successfully closed tab {start}"
        missing = await fail(mcp, "tabs_switch", {"tab_id": 9999})
        assert (
            missing
            == f"Error switching to tab: No tab with ID 9999. Open tab IDs: {pinned}. Call tabs_list to see them."
        )
        assert (await fail(mcp, "tabs_close", {"tab_id": 9999})).startswith(
            "Error closing tab: No tab with ID 9999."
        )
        # On one line, as FoxMCP's errors are, its lines still sentences ("Field required Fix them").
        assert await fail(mcp, "tabs_create", {}) == (
            "Error creating tab: Invalid arguments for tabs_create: argument 'url': Field required. "
            "Fix them and call again."
        )


# -- Pilo -----------------------------------------------------------------------------------------


async def test_compatible_sets_say_a_click_made_the_tab_load_a_slow_page(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Playwright's click waits for the document it makes the tab load: with a slow server the time
    # ran out and the click failed, though it was done. The sets' own answers say it is loading.
    slow = site.url("/api/slow?ms=4000")
    site.set_content(
        "/slow-links",
        f'<title>Slow links</title><a href="{slow}">slow page</a>',
    )
    options = BrowserOptions(timeout_navigation=1, timeout_action=1)
    async with connect(tools=("pilo",), browser=options) as mcp:
        await call(mcp, "goto", {"url": site.url("/slow-links")})
        snap = await call(mcp, "get_snapshot")
        tab = int(snap.splitlines()[1].split()[1])
        link = ref_of(snap, "slow page")
        clicked = await call(mcp, "click", {"ref": link})
        assert clicked == f"Clicked {link}.\nTab {tab} is loading {slow}; its server has not sent it yet."
    async with connect(tools=("browser-use",), browser=options) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/slow-links")})
        state = json.loads(await call(mcp, "browser_get_state"))
        link_index = next(e["index"] for e in state["interactive_elements"] if e["tag"] == "a")
        clicked = await call(mcp, "browser_click", {"index": link_index})
        assert re.fullmatch(
            rf'Clicked element {link_index}\nTab with tab_id "\d+" is loading {re.escape(slow)}; its server has '
            r"not sent it yet\.",
            clicked,
        )


async def test_pilo_sees_a_tab_a_click_opens_in_the_click_response_and_the_next_snapshot(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("pilo",)) as mcp:
        await call(mcp, "goto", {"url": site.url("/")})
        host = site.url("/").split("/")[2]
        first = await call(mcp, "get_snapshot")
        home = int(first.splitlines()[1].split()[1])
        assert first.startswith(f'Available tabs:\nTab {home} (current): {host} - "Home"\n\n')
        link = next(line for line in first.splitlines() if 'link "Open A in new tab"' in line)
        ref = link.split("[ref=")[1].split("]")[0]

        clicked = await call(mcp, "click", {"ref": ref})
        opened_line = clicked.splitlines()[1]
        new = int(opened_line.split()[2])
        assert clicked == (
            f"Clicked {ref}.\nBROWSER_TAB_OPENED: Tab {new} (opened by Tab {home}): {site.url('/page/a')}. "
            f'It is not the current tab: call switch_tab with tabId "{new}" to use it.'
        )

        await until_title(mcp, new, "Page a")  # the new tab loads on its own time
        after = await call(mcp, "get_snapshot")
        assert after.startswith(
            f'Available tabs:\nTab {home} (current): {host} - "Home"\nTab {new}: {host} - "Page a"\n\n'
            f"Tab events since the last snapshot:\nBROWSER_TAB_OPENED: Tab {new} (opened by Tab {home}): "
            f"{site.url('/page/a')}\n\n"
        )
        listed = json.loads(await call(mcp, "list_tabs"))
        assert listed == {
            "activeTabId": str(home),
            "tabs": [
                {"id": str(home), "url": site.url("/"), "title": "Home", "isActive": True},
                {"id": str(new), "url": site.url("/page/a"), "title": "Page a", "isActive": False},
            ],
        }

        await call(mcp, "switch_tab", {"tabId": str(new)})
        on_new = await call(mcp, "get_snapshot")
        assert f"Tab {new} (current)" in on_new and 'heading "Page a"' in on_new
        # Refs are scoped to the current tab: the home tab's ref is refused, not clicked on tab `new`.
        refused = await fail(mcp, "click", {"ref": ref})
        assert refused.startswith(f"Error: Ref {ref} belongs to tab {home}, but the current tab is {new}.")
        assert f'switch_tab("{home}") first' in refused

        new_snapshot_ref = ref_of(on_new, "Page a")
        closed = await call(mcp, "close_tab", {"tabId": str(new)})
        assert closed == f"Closed tab {new}. Current tab: {home}."
        assert f"Tab {home} (current)" in await call(mcp, "get_snapshot")
        # A ref of a tab that is gone names no switch that would fail.
        gone = await fail(mcp, "click", {"ref": new_snapshot_ref})
        assert f"(tab {new} is not open)" in gone and "switch_tab" not in gone, gone


async def test_pilo_completes_an_oauth_style_popup_flow_with_the_tab_tools(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("pilo",)) as mcp:
        await call(mcp, "goto", {"url": site.url("/oauth/start")})
        app_snapshot = await call(mcp, "get_snapshot")
        app = int(app_snapshot.splitlines()[1].split()[1])

        clicked = await call(mcp, "click", {"ref": ref_of(app_snapshot, 'button "Sign in"')})
        assert clicked.splitlines()[1].startswith("BROWSER_TAB_OPENED: Tab ")
        popup = int(clicked.splitlines()[1].split()[2])
        assert f"(opened by Tab {app})" in clicked

        await call(mcp, "switch_tab", {"tabId": str(popup)})
        await until_title(mcp, popup, "Authorize")
        form = await call(mcp, "get_snapshot")
        assert f"Tab {popup} (current)" in form
        await call(mcp, "fill", {"ref": ref_of(form, 'textbox "Username"'), "value": "ada"})
        await call(mcp, "click", {"ref": ref_of(form, 'button "Authorize"')})

        # The popup closes itself; the app tab is current again and signed in.
        for _ in range(100):
            if str(popup) not in [t["id"] for t in json.loads(await call(mcp, "list_tabs"))["tabs"]]:
                break
            await asyncio.sleep(0.05)
        done = await call(mcp, "get_snapshot")
        host = site.url("/").split("/")[2]
        assert done.startswith(f'Available tabs:\nTab {app} (current): {host} - "App')
        assert f"BROWSER_TAB_CLOSED: Tab {popup}" in done
        for _ in range(50):
            if "Signed in as ada" in done:
                break
            await asyncio.sleep(0.05)
            done = await call(mcp, "get_snapshot")
        assert "Signed in as ada" in done


async def test_browser_use_tells_a_popup_that_closed_itself_after_its_click_in_its_own_words(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The call right after Authorize (whose popup then closes itself) could hit the closing tab and
    # fail in the default set's words ("Checking ref element 1 on tab 3 failed: ... List tabs with
    # browser_list_tabs"). How far the close has got when that call comes varies: a few rounds.
    def index_of(state: str, needle: str) -> int:
        return int(next(e["index"] for e in state_of(state)["interactive_elements"] if needle in e["text"]))

    async with connect(tools=("browser-use",)) as mcp:
        for _ in range(4):
            await call(mcp, "browser_navigate", {"url": site.url("/oauth/start")})
            await call(
                mcp, "browser_click", {"index": index_of(await call(mcp, "browser_get_state"), "Sign in")}
            )
            popup = json.loads(await call(mcp, "browser_list_tabs"))[-1]["tab_id"]
            await call(mcp, "browser_switch_tab", {"tab_id": popup})
            form = await poll(lambda: call(mcp, "browser_get_state"), lambda s: "Authorize" in s, timeout=10)
            await call(mcp, "browser_type", {"index": index_of(form, ""), "text": "ada"})
            clicked = await mcp.call_tool("browser_click", {"index": index_of(form, "Authorize")})
            after = await mcp.call_tool("browser_click", {"index": 1})
            said = "\n".join(blocks(clicked) + blocks(after))
            assert not clicked.is_error, said
            assert "Checking ref" not in said and "during the action" not in said, said
            if after.is_error and blocks(after)[0].startswith("Error: Tab # "):
                assert blocks(after)[0].startswith(
                    f"Error: Tab # {popup} closed (by page), now on tab_id "
                ), said
                assert blocks(after)[0].endswith(
                    "Call browser_get_state to get the current tab's indexes."
                ), said


@pytest.mark.parametrize("follow", [False, True])
async def test_browser_use_click_and_next_state_agree_on_a_popup_that_closes_itself_at_once(
    connect: Callable[..., Client], site: LocalSite, follow: bool
) -> None:
    # A popup that closes itself within ~100 ms of opening races the click's answer and the state
    # after it. Whenever the close lands, neither call fails, and a tab the click names as open is
    # in the state's tabs or the state's note says it closed: no answer lists a gone tab as open.
    async with connect(tools=("browser-use",), follow_new_tabs=follow) as mcp:
        for delay in (0, 50, 100):
            site.set_content(f"/quick{delay}", f"<title>Q</title><script>setTimeout(close, {delay})</script>")
            site.set_content(
                f"/pops{delay}",
                f"<title>Pops</title><button onclick=\"open('/quick{delay}', '', 'width=200')\">Pop</button>",
            )
            # Followed, the previous popup may be the current tab, and close as it is loaded: the
            # set then says nothing was done and which tab is current (it said the library's
            # 'Loading ... failed: tab_id "3" closed during the action'); calling again loads that.
            loaded = await mcp.call_tool("browser_navigate", {"url": site.url(f"/pops{delay}")})
            if loaded.is_error:
                assert blocks(loaded)[0].startswith("Error: Tab # "), blocks(loaded)
                assert blocks(loaded)[0].endswith("\nNothing was done: call again to act on it."), blocks(
                    loaded
                )
                await call(mcp, "browser_navigate", {"url": site.url(f"/pops{delay}")})
            await call(mcp, "browser_get_state")
            clicked = await mcp.call_tool("browser_click", {"index": 1})
            state = await mcp.call_tool("browser_get_state", {})
            assert not clicked.is_error and not state.is_error, blocks(clicked) + blocks(state)
            listed = {t["tab_id"] for t in state_of(blocks(state)[0])["tabs"]}
            notes = "\n".join(blocks(state)[1:])
            for named in re.findall(
                r'New tab: tab_id "(\d+)"[^\n]*(?:now active|not active)', blocks(clicked)[0]
            ):
                assert named in listed or f'tab_id "{named}" closed' in notes, blocks(clicked) + blocks(state)


async def test_a_navigation_of_the_current_tab_that_closes_as_it_begins_is_refused_as_nothing_done(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The popup the agent works in closes itself (its page's script) just as a navigation of it
    # begins. browser_navigate and goto failed in the library's words ('Loading ... on tab 2
    # failed: tab 2 closed during the action'), where a click or a typing said that nothing was
    # done and which tab is current, as for a close before the call.
    release = threading.Event()

    async def later(_request: Request) -> Response:
        await asyncio.to_thread(release.wait, 10)
        return Response(b"")

    async def slow_after_release(_request: Request) -> Response:
        release.set()  # the popup's fetch answers: it closes itself while this page is on its way
        await asyncio.sleep(2)
        return Response(b"<title>Late</title>", media_type="text/html")

    site.set_route("/later", later)
    site.set_route("/late", slow_after_release)
    site.set_content("/closer", "<title>Gated</title><script>fetch('/later').then(() => close())</script>")
    site.set_content("/opener", OPENER)
    for tools, go in (("browser-use", "browser_navigate"), ("pilo", "goto")):
        release.clear()
        async with connect(tools=(tools,), follow_new_tabs=True) as mcp:
            await call(mcp, go, {"url": site.url("/opener")})
            if tools == "browser-use":
                await call(mcp, "browser_get_state")
                await call(mcp, "browser_click", {"index": 1})
            else:
                await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Open"')})
            said = await fail(mcp, go, {"url": site.url("/late")})
            assert said.startswith(
                "Error: Tab # 2 closed (by page)"
                if tools == "browser-use"
                else "Error: BROWSER_TAB_CLOSED: Tab 2"
            ), said
            assert said.endswith("\nNothing was done: call again to act on it."), said
            assert "during the action" not in said, said


async def test_pilo_closes_a_tab_that_is_not_current_and_stays_where_it_is(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("pilo", "browser-tab")) as mcp:
        start = json.loads(await call(mcp, "list_tabs"))["activeTabId"]
        other = json.loads(await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/b")}))[
            "tabId"
        ]
        await call(mcp, "switch_tab", {"tabId": start})
        assert (
            await call(mcp, "close_tab", {"tabId": str(other)})
            == f"Closed tab {other}. Current tab: {start}."
        )
        # The open tabs as Pilo's snapshot header lists them, not in tabpilot's own format.
        unknown = await fail(mcp, "switch_tab", {"tabId": str(other)})
        assert unknown.splitlines() == [
            f"Error: Tab {other} not found. It was closed by a call to tabpilot.",
            "Available tabs:",
            f'Tab {start} (current): about:blank - ""',  # no title of a page's: '' as page.title() gives
            "Use one of these IDs (list_tabs() lists them too).",
        ], unknown
        assert (await fail(mcp, "close_tab", {"tabId": 99})).splitlines()[:2] == [
            "Error: Tab 99 not found.",
            "Available tabs:",
        ]


async def test_pilo_tools_carry_the_descriptions_of_the_seed(connect: Callable[..., Client]) -> None:
    async with connect(tools=("pilo",)) as mcp:
        tools = {t.name: t for t in (await mcp.list_tools()).tools}
    assert tools["switch_tab"].description == (
        "Switch to a different open browser tab. The next snapshot will show the new tab. "
        "Use list_tabs() to see available tabs (or check the available_tabs section in your page snapshot)."
    )
    assert tools["close_tab"].description == (
        "Close a browser tab. If closing the active tab, the previously-active tab becomes active."
    )
    assert tools["switch_tab"].input_schema["required"] == ["tabId"]


# -- one tab model --------------------------------------------------------------------------------


async def test_ids_agree_across_every_tool_set_of_one_server(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("default", "browser-tab", "foxmcp", "pilo")) as mcp:
        created = json.loads(await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/a")}))
        tab_id = created["tabId"]

        assert f"- ID {tab_id}: Page a - {site.url('/page/a')} (active)" in await call(mcp, "tabs_list")
        pilo_tabs = json.loads(await call(mcp, "list_tabs"))
        assert pilo_tabs["activeTabId"] == str(tab_id)
        default = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert default.structured_content is not None
        assert default.structured_content["result"]["activeTabId"] == tab_id

        # Switch with one set, read with the others.
        other = next(int(t["id"]) for t in pilo_tabs["tabs"] if int(t["id"]) != tab_id)
        await call(mcp, "tabs_switch", {"tab_id": other})
        assert json.loads(await call(mcp, "browser_tab", {"action": "list"}))["activeTabId"] == other
        assert (await call(mcp, "get_snapshot")).splitlines()[1].startswith(f"Tab {other} (current)")
        await call(mcp, "close_tab", {"tabId": str(tab_id)})
        assert json.loads(await call(mcp, "browser_tab", {"action": "list"}))["count"] == 1


async def test_the_id_of_a_tab_that_closed_is_refused_saying_why_in_every_set(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Pilo said why ("Its page closed it."); the other sets only that no open tab had the id, and an
    # agent could take its ids for unstable (a popup that closed itself, another client's close).
    site.set_content("/opener", OPENER)
    site.set_content("/closer", CLOSER)
    async with connect(tools=("pilo", "browser-use", "foxmcp", "browser-tab")) as mcp:
        await call(mcp, "goto", {"url": site.url("/opener")})
        await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Open"')})
        await call(mcp, "switch_tab", {"tabId": "2"})
        await until_title(mcp, 2, "Closer")
        await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Done"')})
        opened = json.loads(await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/a")}))
        await call(mcp, "tabs_close", {"tab_id": opened["tabId"]})
        by_page, by_call = "Its page closed it.", "It was closed by a call to tabpilot."
        for tab, why in ((2, by_page), (opened["tabId"], by_call)):
            assert await fail(mcp, "browser_switch_tab", {"tab_id": str(tab)}) == (
                f'Error: No tab with tab_id "{tab}". {why} Open tabs: tab_id "1": Opener '
                f"({site.url('/opener')}). Use a tab_id from browser_list_tabs or browser_get_state."
            )
            assert await fail(mcp, "tabs_close", {"tab_id": tab}) == (
                f"Error closing tab: No tab with ID {tab}. {why} Open tab IDs: 1. Call tabs_list to see them."
            )
            assert await fail(mcp, "browser_tab", {"action": "activate", "tabId": tab}) == (
                f"Tab not found: no open tab has id {tab}. {why} Open tab ids: 1. List tabs to get valid IDs "
                "(browser_tab(action='list'))."
            )
            assert (await fail(mcp, "switch_tab", {"tabId": tab})).startswith(
                f"Error: Tab {tab} not found. {why}\n"
            )


async def test_each_sets_errors_name_its_own_tools_for_the_next_call(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    said: list[str] = []
    async with connect(tools=("browser-use",)) as mcp:
        said.append(await fail(mcp, "browser_close_tab", {"tab_id": 1}))
        assert said[-1].endswith("Open another tab first (browser_navigate(url=..., new_tab=true)).")
    async with connect(tools=("foxmcp",)) as mcp:
        said.append(await fail(mcp, "tabs_close", {"tab_id": 1}))
        assert said[-1].endswith("Open another tab first (tabs_create(url=...)).")
    async with connect(tools=("pilo",)) as mcp:  # only pages open tabs in this set
        said.append(await fail(mcp, "close_tab", {"tabId": "1"}))
        assert said[-1].endswith("Keep it open: a browser needs one tab.")
        await call(mcp, "goto", {"url": site.url("/page/a")})
        said.append(await fail(mcp, "click", {"ref": "1e99"}))
        assert said[-1].endswith("Call get_snapshot and use a ref from it.")
    default_tools = ("browser_tabs", "browser_snapshot", "browser_instance", "browser_handle_dialog")
    for text_ in said:
        assert not any(tool in text_ for tool in default_tools), text_
    async with connect() as mcp:  # the default set names its own
        last = await fail(mcp, "browser_tabs", {"action": "close", "tabId": 1})
        assert "Open another tab first (browser_tabs(action='new', url=...)), or close the instance." in last


async def test_a_tool_or_argument_the_set_does_not_have_is_refused_naming_what_it_has(
    connect: Callable[..., Client],
) -> None:
    async with connect(tools=("browser-use",)) as mcp:
        unknown = await fail(mcp, "navigate", {"url": "http://127.0.0.1:9/"})
        assert "This server has no tool 'navigate'. Did you mean browser_navigate?" in unknown
        assert "browser_get_state, browser_go_back" in unknown and "browser_tabs" not in unknown
        wrong = await fail(mcp, "browser_navigate", {"url": "http://127.0.0.1:9/", "tabId": 1})
        assert "Unknown argument 'tabId' for browser_navigate. Its arguments are: new_tab, url." in wrong
    async with connect() as mcp:
        nothing_near = await fail(mcp, "zzz", {})
        assert "This server has no tool 'zzz'. Its tools: browser_click, " in nothing_near
        # Another browser server's tool names the call of this one that does the same.
        back = await fail(mcp, "browser_navigate_back", {})
        assert (
            "This server has no tool 'browser_navigate_back'. Its browser_navigate(action='back') does that."
            in back
        )
        pages = await fail(mcp, "list_pages", {})
        assert "This server has no tool 'list_pages'. Its browser_tabs(action='list') does that." in pages
        close = await fail(mcp, "browser_close", {})
        assert "This server has no tool 'browser_close'. Its browser_tabs(action='close') does that." in close
        # A name is not taken for another because both start with browser_ ...
        code = await fail(mcp, "browser_run_code", {"code": "async (page) => 1"})
        assert code.startswith("### Error\nThis server has no tool 'browser_run_code'. Its tools: "), code
        # ... but a slip of the pen is still caught.
        typo = await fail(mcp, "browser_snapshoot", {})
        assert "This server has no tool 'browser_snapshoot'. Did you mean browser_snapshot?" in typo
    async with connect(tools=("browser-use",)) as mcp:  # only a call this set has is named, in its words
        back = await fail(mcp, "browser_navigate_back", {})
        assert back.startswith(
            "Error: This server has no tool 'browser_navigate_back'. Its browser_go_back does that. Its tools: "
        ), back
        shot = await fail(mcp, "take_screenshot", {})
        assert shot.startswith(
            "Error: This server has no tool 'take_screenshot'. Its browser_get_state(include_screenshot=true) "
            "does that."
        ), shot


@pytest.mark.parametrize(
    "tools",
    [("default",), ("browser-use",), ("browser-tab",), ("foxmcp",), ("pilo",), ("browser-tab", "pilo")],
)
async def test_every_call_an_unknown_tool_is_told_to_use_instead_is_one_the_server_takes(
    connect: Callable[..., Client], tools: tuple[str, ...]
) -> None:
    async with connect(tools=tools) as mcp:
        arguments = {t.name: set(t.input_schema["properties"]) for t in (await mcp.list_tools()).tools}
        for peer in PEER_TOOLS:
            said = await fail(mcp, peer, {})
            advised = re.search(r"Its (\w+)(?:\(([^)]*)\))? does that\.", said)
            if advised is None:
                continue
            tool, args = advised.group(1), advised.group(2) or ""
            assert tool in arguments, said
            assert set(re.findall(r"(\w+)=", args)) <= arguments[tool], said


async def test_a_new_tab_with_a_url_that_cannot_load_opens_nothing_or_names_the_tab_it_opened(
    connect: Callable[..., Client],
) -> None:
    async with connect(tools=("browser-tab", "foxmcp", "browser-use")) as mcp:
        before = await call(mcp, "tabs_list")
        assert before.endswith(" (active)\n") and before.startswith("Open tabs (1 found):")
        # A URL refused or malformed is refused before a tab opens: nothing new, the active tab stays.
        blocked = await fail(mcp, "tabs_create", {"url": "file:///etc/passwd"})
        assert blocked.startswith("Error creating tab: Navigation to file:///etc/passwd is blocked"), blocked
        malformed = await fail(mcp, "tabs_create", {"url": "not a url"})
        assert malformed.startswith("Error creating tab: 'not a url' is not a URL"), malformed
        assert (await fail(mcp, "browser_tab", {"action": "new", "url": "not a url"})).startswith(
            "'not a url' is not a URL"
        )
        assert (await fail(mcp, "browser_tab", {"action": "new", "url": "file:///etc/passwd"})).startswith(
            "Navigation to file:///etc/passwd is blocked"
        )
        assert (
            await fail(mcp, "browser_navigate", {"url": "file:///etc/passwd", "new_tab": True})
        ).startswith("Error: Navigation to file:///etc/passwd is blocked")
        assert await call(mcp, "tabs_list") == before
        # A URL that fails once its tab is open (a port the browser refuses): the tab stays, as
        # browser_tabs new keeps it, and the error names it and says it is the active tab now.
        unsafe = "http://127.0.0.1:9/"
        created = await fail(mcp, "tabs_create", {"url": unsafe})
        assert created.startswith(
            f"Error creating tab: Created tab 2 (active), but loading failed: Loading {unsafe}"
        )
        new = await fail(mcp, "browser_tab", {"action": "new", "url": unsafe})
        assert new.startswith(
            f"Opened tab 3 (now active in instance inst_1), but loading failed: Loading {unsafe}"
        )
        navigated = await fail(mcp, "browser_navigate", {"url": unsafe, "new_tab": True})
        assert navigated.startswith('Error: Opened new tab tab_id "4" (now active), but loading failed:'), (
            navigated
        )
        assert (await call(mcp, "tabs_list")).endswith(f"- ID 4: 127.0.0.1 - {unsafe} (active)\n")


async def test_a_new_tab_another_call_closes_as_it_loads_is_answered_as_closed_in_every_set(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The tab opens, another call closes it while its page loads: each set said loading failed
    # (and, had the close come a moment later, that it was the active tab now).
    slow = site.url("/api/slow?ms=3000")
    async with connect(tools=("browser-tab", "foxmcp", "browser-use")) as mcp:
        for tool, arguments, said in (
            ("tabs_create", {"url": slow}, "Error creating tab: Created tab {tab} (active), but"),
            ("browser_tab", {"action": "new", "url": slow}, "Opened tab {tab} in instance inst_1, but"),
            ("browser_navigate", {"url": slow, "new_tab": True}, 'Error: Opened new tab tab_id "{tab}", but'),
        ):
            listed = await call(mcp, "tabs_list")
            opening = asyncio.ensure_future(mcp.call_tool(tool, arguments))

            def more(now: str, was: str = listed) -> bool:
                return now.count("- ID") > was.count("- ID")

            grown = await poll(lambda: call(mcp, "tabs_list"), more)
            (tab,) = set(re.findall(r"- ID (\d+):", grown)) - set(re.findall(r"- ID (\d+):", listed))
            await call(mcp, "tabs_close", {"tab_id": int(tab)})
            answer = await opening
            assert answer.is_error and text(answer) == said.format(tab=tab) + (
                " it has closed since (by another call): open another if you still need one."
            ), text(answer)


async def test_a_new_tab_whose_page_is_slow_to_come_is_opened_not_failed_in_every_set(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The tab is open and its page on its way: each set answered an error, "loading failed", and
    # an agent that retried opened a second tab. (FoxMCP's advice also named a snapshot it lacks.)
    slow = site.url("/api/slow?ms=1500")
    loading = "Tab {tab} is loading " + slow + "; its server has not sent it yet."
    options = BrowserOptions(timeout_navigation=0.5)
    async with connect(tools=("default", "foxmcp", "browser-tab"), browser=options) as mcp:
        created = await call(mcp, "tabs_create", {"url": slow})
        assert created.splitlines()[1:] == [loading.format(tab=2)], created
        # Named by the URL it loads, as the lists name it (about:blank, as if a blank tab opened).
        assert created.splitlines()[0].endswith(f" - {slow}"), created
        opened = json.loads(await call(mcp, "browser_tab", {"action": "new", "url": slow}))
        assert opened["tabId"] == 3 and opened["note"] == loading.format(tab=3)
        assert opened["url"] == slow
        new = await mcp.call_tool("browser_tabs", {"action": "new", "url": slow})
        assert not new.is_error and f"Opened tab 4 and activated it. {loading.format(tab=4)}" in text(new)
    async with connect(tools=("browser-use",), browser=options) as mcp:
        navigated = await call(mcp, "browser_navigate", {"url": slow, "new_tab": True})
        assert navigated.splitlines()[1:] == [
            'New tab: tab_id "2", now active.',
            loading.replace("Tab {tab}", 'Tab with tab_id "2"'),
        ]
    async with connect(tools=("default", "pilo"), browser=options) as mcp:
        await call(mcp, "goto", {"url": site.url("/page/a")})
        await mcp.call_tool("browser_tabs", {"action": "new", "url": slow, "background": True})
        host = site.url("/").split("/")[2]
        switched = await call(mcp, "switch_tab", {"tabId": 2})
        assert switched.startswith(f"Switched to tab 2: {host} - "), switched  # was ": " and no host


async def test_a_tab_the_limit_closes_to_make_room_is_named_by_the_call_that_opened_one(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # With close-oldest, opening a tab closes the oldest one: no answer of these sets said so, and
    # browser-use's next calls did not either (the answer had used up the close).
    async with connect(
        tools=("browser-tab", "foxmcp", "browser-use"), max_tabs=2, tab_limit_policy="close-oldest"
    ) as mcp:
        created = await call(mcp, "tabs_create", {"url": site.url("/page/a")})
        assert created == f"Created tab: ID 2 - Page a - {site.url('/page/a')}"  # room for it
        created = await call(mcp, "tabs_create", {"url": site.url("/page/b")})
        assert (
            created
            == f"Created tab: ID 3 - Page b - {site.url('/page/b')}\nTab 1 closed (over the tab limit)"
        )
        opened = json.loads(await call(mcp, "browser_tab", {"action": "new", "url": site.url("/page/c")}))
        assert opened["tabId"] == 4
        assert opened["closedTabs"] == [{"tabId": 2, "how": "closed (over the tab limit)"}]
        navigated = await call(mcp, "browser_navigate", {"url": site.url("/page/a"), "new_tab": True})
        assert navigated.splitlines()[1:] == [
            'New tab: tab_id "5", now active.',
            "Tab # 3 closed (over the tab limit)",
        ]


async def test_browser_tab_with_two_instances_says_where_a_tab_is_and_advises_calls_that_work(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(tools=("default", "browser-tab")) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/page/a")})
        launched = await mcp.call_tool("browser_instance", {"action": "launch"})
        assert not launched.is_error
        # Tab 1 is open, in inst_1: named with inst_2 it is "not found" there, and the advice works.
        wrong = await fail(mcp, "browser_tab", {"action": "activate", "tabId": 1, "instanceId": "inst_2"})
        assert wrong == (
            "Tab not found: tab 1 is not in instance inst_2; it is in instance inst_1. Call "
            "browser_tab(action='activate', tabId=1, instanceId='inst_1'), or leave instanceId out (tab ids "
            "are unique across instances)."
        )
        activated = json.loads(
            await call(mcp, "browser_tab", {"action": "activate", "tabId": 1, "instanceId": "inst_1"})
        )
        assert activated == {"success": True, "activeTabId": 1}
        missing = await fail(mcp, "browser_tab", {"action": "close", "tabId": 99})
        assert missing == (
            "Tab not found: no open tab has id 99. Open tab ids: 1 (instance inst_1), 2 (instance inst_2). "
            "List tabs to get valid IDs (browser_tab(action='list', instanceId='inst_1') or "
            "browser_tab(action='list', instanceId='inst_2'))."
        )
        # Tab 2 is the last tab of inst_2, not the only open tab; the advised call opens one there.
        last = await fail(mcp, "browser_tab", {"action": "close", "tabId": 2})
        assert last == (
            "Cannot close last tab: tab 2 is the only tab of instance inst_2 (the other instances' tabs are "
            "their own). Open a new tab in it first (browser_tab(action='new', instanceId='inst_2')), then "
            "close this one."
        )
        opened = json.loads(await call(mcp, "browser_tab", {"action": "new", "instanceId": "inst_2"}))
        assert json.loads(await call(mcp, "browser_tab", {"action": "close", "tabId": 2})) == {
            "success": True,
            "closedTabId": 2,
        }
        # Without instanceId, list and new use the first connected instance, as the seed says, though
        # activating inst_2's tab made inst_2 tabpilot's default.
        await call(mcp, "browser_tab", {"action": "activate", "tabId": opened["tabId"]})
        listed = json.loads(await call(mcp, "browser_tab", {"action": "list"}))
        assert [t["id"] for t in listed["tabs"]] == [1]
        fresh = json.loads(await call(mcp, "browser_tab", {"action": "new"}))
        assert [t["id"] for t in json.loads(await call(mcp, "browser_tab", {"action": "list"}))["tabs"]] == [
            1,
            fresh["tabId"],
        ]
        # An argument the action does not use is refused, as browser_tabs refuses it, in this set's words.
        refused = await fail(mcp, "browser_tab", {"action": "new", "tabId": 1})
        assert refused == (
            "browser_tab(action='new') does not use tabId (tabId is for actions 'close', 'activate'). "
            "Call again without tabId."
        )
        await mcp.call_tool("browser_instance", {"action": "close", "instanceId": "inst_2"})


async def test_browser_use_and_pilo_errors_are_in_their_own_format_whoever_raises_them(
    connect: Callable[..., Client],
) -> None:
    async with connect(tools=("browser-use", "pilo")) as mcp:
        for tool, arguments in (("browser_navigate", {"url": "not a url"}), ("goto", {"url": "not a url"})):
            said = await fail(mcp, tool, arguments)
            assert said == (
                "Error: 'not a url' is not a URL: 'not a url' cannot be a host name. Pass a URL such as "
                "https://example.com/page."
            )
        # No URL: said with the set's own tool, not the library's words (its go back/forward/reload).
        empty: list[tuple[str, dict[str, Any]]] = [
            ("browser_navigate", {"url": "", "new_tab": True}),
            ("goto", {"url": " "}),
        ]
        for tool, given in empty:
            said = await fail(mcp, tool, given)
            assert said == f"Error: {tool} needs url: the address to load, e.g. https://example.com."
        scroll = await fail(mcp, "browser_scroll", {"direction": "left"})
        assert scroll == (
            "Error: Invalid arguments for browser_scroll:\n"
            "- argument 'direction': Input should be 'up' or 'down' (got 'left')\nFix them and call again."
        )
        extra = await fail(mcp, "switch_tab", {"tabId": "1", "tab_id": "1"})
        assert extra == "Error: Unknown argument 'tab_id' for switch_tab. Its arguments are: tabId."


CLOSER = '<title>Closer</title><button onclick="window.close()">Done</button>'
OPENER = "<title>Opener</title><button onclick=\"window.open('/closer', 'p', 'width=300,height=300')\">Open</button>"


async def test_a_click_that_makes_its_tab_close_says_so_and_names_the_current_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/opener", OPENER)
    site.set_content("/closer", CLOSER)
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/opener")})
        await call(mcp, "browser_get_state")
        assert 'New tab: tab_id "2"' in await call(mcp, "browser_click", {"index": 1})
        await call(mcp, "browser_switch_tab", {"tab_id": "2"})
        await call(mcp, "browser_get_state")
        done = await call(mcp, "browser_click", {"index": 1})
        assert (
            done == f'Clicked element 1\nTab # 2 closed (by page), now on tab_id "1": {site.url("/opener")}'
        )
    async with connect(tools=("pilo",)) as mcp:
        await call(mcp, "goto", {"url": site.url("/opener")})
        opened = await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Open"')})
        assert "BROWSER_TAB_OPENED: Tab 2" in opened
        await call(mcp, "switch_tab", {"tabId": "2"})
        await until_title(mcp, 2, "Closer")
        done = await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Done"')})
        host = site.url("/").split("/")[2]
        assert done == (
            f'Clicked 2e2.\nBROWSER_TAB_CLOSED: Tab 2 (closed by page).\nCurrent tab: Tab 1: {host} - "Opener".'
        )


@pytest.mark.parametrize("told_by", ["state", "error"])
async def test_a_tab_that_closed_by_itself_is_told_by_the_next_answer_a_state_or_an_error_too(
    connect: Callable[..., Client], site: LocalSite, told_by: str
) -> None:
    # The popup the agent switched to closes itself on a timer (a sign-in window). A state call or
    # an error answer took the close as told without saying it: the next action went to the tab
    # that became current (the opener, with the agent's typing), and no answer ever said why.
    site.set_content("/opener", OPENER)
    # It closes once the test lets it, after the switch: on a timer of its own it could close
    # before the switch on a busy machine, which then (rightly) failed.
    release = threading.Event()

    async def later(_request: Request) -> Response:
        await asyncio.to_thread(release.wait, 10)
        return Response(b"")

    site.set_route("/later", later)
    site.set_content(
        "/closer", "<title>Timed</title><script>fetch('/later').then(() => window.close())</script>"
    )
    note = 'Note: tab_id "2" closed (by page); active tab is now tab_id "1".'  # as browser-use names tabs
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": site.url("/opener")})
        await call(mcp, "browser_get_state")
        assert 'New tab: tab_id "2"' in await call(mcp, "browser_click", {"index": 1})
        await call(mcp, "browser_switch_tab", {"tab_id": "2"})
        release.set()
        # Until the first answer after the close: the state of the opener, or any error.
        if told_by == "state":
            answer = await poll(
                lambda: mcp.call_tool("browser_get_state", {}),
                lambda r: json.loads(blocks(r)[0])["url"] == site.url("/opener"),
            )
            assert json.loads(blocks(answer)[0])["url"] == site.url("/opener")
        else:
            answer = await poll(
                lambda: mcp.call_tool("browser_switch_tab", {"tab_id": "99"}), lambda r: note in text(r)
            )
            assert answer.is_error and blocks(answer)[0].startswith("Error: "), text(answer)
        # The set's own answer stays whole (JSON stays JSON); the note is a block of its own, once.
        assert blocks(answer)[1:] == [note]
        assert "closed" not in await call(mcp, "browser_scroll")


def closes_by_itself(site: LocalSite) -> threading.Event:
    """`/closer` closes itself 300 ms after it loads, and the event is set just before: a test can
    wait for the close with no call of its own under way (that call's answer would tell it)."""
    closing = threading.Event()

    async def bye(_request: Request) -> Response:
        closing.set()
        return Response(b"")

    site.set_route("/bye", bye)
    site.set_content(
        "/closer",
        "<title>Timed</title><script>setTimeout(() => { fetch('/bye').then(() => window.close()); }, 300)</script>",
    )
    return closing


async def popup_closed_by_itself(
    mcp: Client, site: LocalSite, closing: threading.Event, *, switch_to: bool
) -> None:
    """browser-use opens the opener's popup (tab 2), switches to it or not, and waits until the
    popup has closed by itself (`closes_by_itself`) and the close is reported."""
    await call(mcp, "browser_navigate", {"url": site.url("/opener")})
    await call(mcp, "browser_get_state")
    await call(mcp, "browser_click", {"index": 1})
    if switch_to:
        await call(mcp, "browser_switch_tab", {"tab_id": "2"})
    await asyncio.to_thread(closing.wait, 10)
    await asyncio.sleep(0.5)  # the close, reported: the next call settles what is under way


async def test_an_action_after_the_current_tab_closed_by_itself_does_nothing_once_and_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The popup the agent switched to closes itself on a timer; the agent's next action, meant for
    # it, went to the tab that became current (browser-use's indexes and Pilo's goto landed on the
    # opener, a form with the agent's typing on it), then said the popup had closed.
    site.set_content("/opener", OPENER)
    # It says when it closes (no call of the agent's may be under way then: its answer would tell it).
    closing = closes_by_itself(site)
    async with connect(tools=("browser-use",)) as mcp:
        await popup_closed_by_itself(mcp, site, closing, switch_to=True)
        refused = await mcp.call_tool("browser_scroll", {})
        assert blocks(refused) == [
            f'Error: Tab # 2 closed (by page), now on tab_id "1": {site.url("/opener")}\n'
            "Nothing was done: call again to act on it."
        ], blocks(refused)
        assert await call(mcp, "browser_scroll") == "Scrolled down"  # once: now it acts on tab 1
    # An action on an element of the popup cannot work called again (the element was the popup's):
    # it said "call again", and the next call failed as the index was of another tab's state.
    closing.clear()
    async with connect(tools=("browser-use",)) as mcp:
        await popup_closed_by_itself(mcp, site, closing, switch_to=True)
        refused = await mcp.call_tool("browser_click", {"index": 1})
        assert blocks(refused) == [
            f'Error: Tab # 2 closed (by page), now on tab_id "1": {site.url("/opener")}\n'
            "Nothing was done: element 1 is of the tab that left. Call browser_get_state to get the current "
            "tab's indexes."
        ], blocks(refused)
    # Pilo's actions would load the popup away from its timer: it closes once its field is filled.
    site.set_content(
        "/closer",
        "<title>Timed</title><input aria-label='Code' oninput=\"setTimeout(() => "
        "fetch('/bye').then(() => window.close()), 300)\">",
    )
    closing.clear()
    async with connect(tools=("pilo",)) as mcp:
        await call(mcp, "goto", {"url": site.url("/opener")})
        await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Open"')})
        await call(mcp, "switch_tab", {"tabId": "2"})
        await until_title(mcp, 2, "Timed")
        code = {"ref": ref_of(await call(mcp, "get_snapshot"), 'textbox "Code"'), "value": "1"}
        await call(mcp, "fill", code)
        await asyncio.to_thread(closing.wait, 10)
        await asyncio.sleep(0.5)
        refused = await mcp.call_tool("fill", code)
        said = blocks(refused)[0]
        assert said.startswith("Error: BROWSER_TAB_CLOSED: Tab 2 (closed by page).\nCurrent tab: Tab 1: "), (
            said
        )
        assert said.endswith(
            f"Nothing was done: ref {code['ref']} is of the tab that left. Call get_snapshot() to get the current "
            "tab's refs."
        ), said
        going = {"url": site.url("/page/b")}
        assert (await call(mcp, "goto", going)).startswith("Navigated tab 1 to")  # once


async def test_an_action_that_fails_after_another_tab_closed_by_itself_still_tells_the_close(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The check for the current tab's leaving took every close as told: an action that then failed
    # (an unknown index) said nothing of a popup that had closed in the background.
    site.set_content("/opener", OPENER)
    closing = closes_by_itself(site)
    async with connect(tools=("browser-use",)) as mcp:
        await popup_closed_by_itself(mcp, site, closing, switch_to=False)  # tab 1 stays current
        failed = await mcp.call_tool("browser_click", {"index": 99})
        assert failed.is_error and blocks(failed)[0].startswith("Error: Element with index 99"), blocks(
            failed
        )
        assert blocks(failed)[1:] == ['Note: tab_id "2" closed (by page).'], blocks(failed)


async def test_pilo_snapshot_of_a_current_tab_that_closes_as_it_is_read_is_of_the_tab_current_then(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The popup closes itself the moment its alert is accepted, and get_snapshot accepts it (this set
    # has no dialog tool): the tab current when the call began is gone before its snapshot is read.
    site.set_content("/opener", OPENER)
    site.set_content(
        "/closer",
        "<title>Closer</title><button onclick=\"setTimeout(() => { alert('bye'); window.close(); }, 200)\">"
        "Done</button>",
    )
    async with connect(tools=("default", "pilo")) as mcp:
        await call(mcp, "goto", {"url": site.url("/opener")})
        await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Open"')})
        await call(mcp, "switch_tab", {"tabId": "2"})
        await until_title(mcp, 2, "Closer")
        await call(mcp, "click", {"ref": ref_of(await call(mcp, "get_snapshot"), 'button "Done"')})
        for _ in range(100):  # until the alert is up
            if "alert dialog open" in await call(mcp, "browser_tabs", {"action": "list"}):
                break
            await asyncio.sleep(0.05)
        snapshot = await call(mcp, "get_snapshot")
        host = site.url("/").split("/")[2]
        assert snapshot.startswith(f'Available tabs:\nTab 1 (current): {host} - "Opener"\n\n'), snapshot
        assert "BROWSER_TAB_CLOSED: Tab 2" in snapshot
        assert "Accepted an alert dialog: 'bye'" in snapshot


async def test_a_compatible_set_says_once_that_the_browser_was_lost_and_launched_again(
    browser_path: str, site: LocalSite
) -> None:
    """These sets show no events: without a note, the tabs of a killed browser would vanish from
    their lists unexplained, and a new id appear."""
    async with TabManager(browser_path=browser_path) as host:
        doomed = await host.launch()
        assert doomed.pid is not None
        config = ServerConfig(tools=("foxmcp",), browser=BrowserOptions(browser_path=browser_path))
        async with Client(create_server(config, shared=doomed)) as mcp:
            await call(mcp, "tabs_create", {"url": site.url("/page/a")})
            os.kill(doomed.pid, signal.SIGKILL)
            await wait_until(lambda: doomed.state == "lost")
            listed = await mcp.call_tool("tabs_list", {})
            answer, *notes = [c.text for c in listed.content if isinstance(c, TextContent)]
            assert answer.startswith("Open tabs (1 found):"), answer  # the set's own answer, whole
            assert len(notes) == 1, notes
            assert f"the browser process (pid {doomed.pid}) ended: it was killed or crashed" in notes[0]
            # In the set's words (it has no instances), and with the tab that is active now: it said
            # "no tab is active" of the moment the old tabs closed, beside the new browser's tab.
            (new_tab,) = re.findall(r"ID (\d+):", answer)
            lines = notes[0].splitlines()
            assert lines[0].startswith("Note: the browser was lost: "), lines
            assert lines[-1] == (
                f"Note: a new browser was launched in its place: the old tabs are gone; active tab is now {new_tab}."
            ), lines
            assert "instance" not in notes[0] and "no tab is" not in notes[0], notes[0]
            again = await mcp.call_tool("tabs_list", {})
            assert len(again.content) == 1  # said once


async def test_pilo_gets_out_of_a_crashed_only_tab_the_way_its_error_says(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Pilo opens no tabs: closing its crashed only tab puts a blank one in its place (the browser
    keeps its last tab), else nothing would work again."""
    async with connect(tools=("pilo",), allowed_origins=("chrome:", site.url("/").rstrip("/"))) as mcp:
        await mcp.call_tool("goto", {"url": "chrome://crash"})
        for _ in range(50):
            failed = await mcp.call_tool("get_snapshot", {})
            if failed.is_error and "crashed" in text(failed):
                break
            await asyncio.sleep(0.1)
        crashed = json.loads(await call(mcp, "list_tabs"))["activeTabId"]
        assert text(failed) == (
            f"Error: Tab {crashed} crashed (the process that ran its page died); it cannot be used again. "
            f"Close it with close_tab(tabId={crashed}) (a blank tab takes its place if it is the last)."
        )
        closed = await call(mcp, "close_tab", {"tabId": crashed})
        blank = json.loads(await call(mcp, "list_tabs"))["activeTabId"]
        assert blank != crashed and closed == f"Closed tab {crashed}. Current tab: {blank}."
        assert "Page a" in await call(mcp, "goto", {"url": site.url("/page/a")}) + await call(
            mcp, "get_snapshot"
        )


def test_pilo_cuts_a_long_url_without_a_host_as_every_answer_does() -> None:
    """A `data:` URL (no host to show instead) and the title it gives its page can be kilobytes;
    every snapshot's header repeats them."""
    long = "data:text/html," + "x" * 6000
    header = pilo.available_tabs_text([tab_info(2, long, "T" * 6000)], 2)
    assert len(header) < 700 and header.count("…[") == 2, header


async def test_the_instructions_name_only_tools_the_server_offers(connect: Callable[..., Client]) -> None:
    """The default set's instructions name its tools and its `### Events`: a server of other sets
    only (or a default set without browser_observe) would send the agent to tools it lacks."""
    async with connect(tools=("browser-use",)) as mcp:
        said = mcp.instructions or ""
        assert "stable integer id" in said
        assert not re.search(r"browser_(handle_dialog|observe|tabs|snapshot)|### ", said), said
    async with connect(caps=("forms",)) as mcp:
        said = mcp.instructions or ""
        assert "browser_handle_dialog" in said and "browser_observe" not in said, said
    async with connect() as mcp:
        assert "browser_observe what='errors'" in (mcp.instructions or "")
        assert "switch_tab" not in (mcp.instructions or "")
    # Pilo's seed asks its system prompt to say that new tabs are not switched to and that refs
    # belong to the current tab; the snapshot and click descriptions alone said it.
    for sets in (("pilo",), ("default", "pilo")):
        async with connect(tools=sets) as mcp:
            said = mcp.instructions or ""
            assert "Element refs are scoped to the current tab. After switch_tab()" in " ".join(said.split())
            assert "it is NOT switched to. Use switch_tab()" in " ".join(said.split()), said


async def test_compatible_sets_cut_long_urls_and_ids_as_the_default_set_does(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A tab with a 100k URL made every browser-use list ~300k characters (the URL, and the URL
    # again as its title); a 100k tab id was echoed whole in the error of three sets.
    long_url = site.url("/page/a#") + "x" * 100_000
    huge_id = "9x" * 50_000
    async with connect(tools=("browser-use",)) as mcp:
        await call(mcp, "browser_navigate", {"url": long_url})
        for tool in ("browser_list_tabs", "browser_get_state"):
            listed = await call(mcp, tool, {})
            assert len(listed) < 5_000 and "more]" in listed, (tool, len(listed))
        refused = await fail(mcp, "browser_switch_tab", {"tab_id": huge_id})
        assert refused.startswith('Error: No tab with tab_id "9x9x') and len(refused) < 2_000
    async with connect(tools=("browser-tab",)) as mcp:
        await call(mcp, "browser_tab", {"action": "new", "url": long_url})
        listed = await call(mcp, "browser_tab", {"action": "list"})
        assert len(listed) < 5_000 and "more]" in listed, len(listed)
        refused = await fail(mcp, "browser_tab", {"action": "close", "tabId": huge_id})
        assert len(refused) < 2_000, len(refused)
        empty = await fail(mcp, "browser_tab", {"action": "close", "tabId": " "})
        assert "no open tab has id ' '." in empty, empty
    async with connect(tools=("foxmcp",)) as mcp:
        refused = await fail(mcp, "tabs_switch", {"tab_id": huge_id})
        assert "No tab with ID '9x9x" in refused and len(refused) < 2_000, len(refused)


async def test_true_or_false_is_refused_where_a_number_is_due(connect: Callable[..., Client]) -> None:
    # pydantic reads true as 1: browser-use clicked element 1, a snapshot read one level.
    for tools, tool, arguments, name in (
        ("browser-use", "browser_click", {"index": True}, "index"),
        ("default", "browser_snapshot", {"depth": True}, "depth"),
        ("default", "browser_wait_for", {"time": False}, "time"),
    ):
        async with connect(tools=(tools,)) as mcp:
            refused = await fail(mcp, tool, arguments)
            assert f"- argument {name!r}: Input should be a number (got " in refused, refused


async def test_only_true_or_false_is_taken_where_a_boolean_is_due(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # pydantic reads 1, "yes" and "on" as true: a new tab opened in the background for
    # background="yes", and 0 as false.
    async with connect() as mcp:
        for value in (1, 0, "yes", "on", "n"):
            refused = await fail(
                mcp, "browser_tabs", {"action": "new", "url": site.url("/page/a"), "background": value}
            )
            assert f"- argument 'background': Input should be true or false (got {value!r})" in refused, (
                value,
                refused,
            )
        opened = await mcp.call_tool(
            "browser_tabs", {"action": "new", "url": site.url("/page/a"), "background": "True"}
        )
        assert not opened.is_error and "Opened tab " in text(opened), text(opened)  # a quoted word is read
    async with connect(tools=("browser-use",)) as mcp:
        refused = await fail(mcp, "browser_navigate", {"url": site.url("/page/a"), "new_tab": 1})
        assert "Input should be true or false (got 1)" in refused, refused


async def test_a_tab_id_sent_as_a_whole_float_names_the_tab_in_every_compatible_set(
    connect: Callable[..., Client],
) -> None:
    # JSON Schema counts 1.0 as an integer, and some clients send every number so: each set
    # answered "Input should be a valid integer or a valid string (got 1.0)".
    async with connect(tools=("foxmcp", "browser-tab")) as mcp:
        assert await call(mcp, "tabs_switch", {"tab_id": 1.0}) == "Tab 1 was the active tab already"
        activated = json.loads(await call(mcp, "browser_tab", {"action": "activate", "tabId": 1.0}))
        assert activated == {"success": True, "activeTabId": 1}
    async with connect(tools=("browser-use",)) as mcp:
        assert (await call(mcp, "browser_switch_tab", {"tab_id": 1.0})).startswith("Tab 1 was the active tab")
    async with connect(tools=("pilo",)) as mcp:
        switched = await mcp.call_tool("switch_tab", {"tabId": 1.0})
        assert not switched.is_error, text(switched)
        refused = await mcp.call_tool("switch_tab", {"tabId": 1.5})
        assert refused.is_error and "(got 1.5)" in text(refused), text(refused)


async def test_sets_without_instances_say_that_a_closed_cdp_browser_needs_the_server_restarted(
    browser_path: str, site: LocalSite
) -> None:
    """Nothing connects a CDP browser that closed again: browser-use said to pick a tab_id from a list
    that had none, and both sets passed on the library's "launch or connect another instance",
    which they have no tool for."""
    told = "ask the user to restart the tabpilot server (with the browser it connects to running)."
    for tools, opening, switch, tab_key in (
        (
            "browser-use",
            ("browser_navigate", {"url": site.url("/page/a"), "new_tab": True}),
            "browser_switch_tab",
            "tab_id",
        ),
        ("pilo", ("goto", {"url": site.url("/page/a")}), "switch_tab", "tabId"),
    ):
        with remote_chromium(browser_path) as doomed:
            async with Client(served("--tools", tools, "--cdp-endpoint", doomed.http)) as mcp:
                await call(mcp, *opening)
                doomed.kill()
                await asyncio.sleep(0.5)
                said = blocks(await mcp.call_tool(switch, {tab_key: "1" if tools == "browser-use" else 1}))[0]
                assert "Use a tab_id from" not in said and said.endswith(told), said
                read = "browser_get_state" if tools == "browser-use" else "get_snapshot"
                said = blocks(await mcp.call_tool(read, {}))[0]
                assert said.startswith(
                    "Error: Instance inst_1 was lost (the browser disconnected)."
                ) and said.endswith(told), said


async def test_a_popup_that_opens_another_is_named_with_it_by_the_click_in_pilo_and_browser_use(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Pilo's click named the popup only ("BROWSER_TAB_OPENED: Tab 2"), not the popup's own popup:
    # the agent learnt of tab 3 from the next snapshot. (The popup opens the other at once, in the
    # click, so that both come while the click is watched.)
    site.set_content(
        "/chain-start",
        "<title>Start</title><button onclick=\"window.open('/page/child').open('/page/grandchild')\">Go</button>",
    )
    async with connect(tools=("pilo", "browser-use")) as mcp:
        await call(mcp, "goto", {"url": site.url("/chain-start")})
        snap = await call(mcp, "get_snapshot")
        home = int(snap.splitlines()[1].split()[1])
        clicked = await call(mcp, "click", {"ref": ref_of(snap, 'button "Go"')})
        child, grandchild = home + 1, home + 2
        assert clicked.splitlines()[1:] == [
            f"BROWSER_TAB_OPENED: Tab {child} (opened by Tab {home}): {site.url('/page/child')}. It is not the "
            f'current tab: call switch_tab with tabId "{child}" to use it.',
            f"BROWSER_TAB_OPENED: Tab {grandchild} (opened by Tab {child}): {site.url('/page/grandchild')}. It "
            f'is not the current tab: call switch_tab with tabId "{grandchild}" to use it.',
        ], clicked

        state = await call(mcp, "browser_get_state")
        index = next(e["index"] for e in state_of(state)["interactive_elements"] if e["text"] == "Go")
        used = await call(mcp, "browser_click", {"index": index})
        child, grandchild = grandchild + 1, grandchild + 2
        assert used.splitlines() == [
            f"Clicked element {index}",
            f'New tab: tab_id "{child}" (parent_tab_id "{home}") {site.url("/page/child")}, not active: call '
            f'browser_switch_tab with tab_id "{child}" to use it.',
            f'New tab: tab_id "{grandchild}" (parent_tab_id "{child}") {site.url("/page/grandchild")}, not active: '
            f'call browser_switch_tab with tab_id "{grandchild}" to use it.',
        ], used


async def test_switching_to_the_tab_that_is_active_already_says_so_in_each_sets_words(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Each said it "switched" to the tab it was on, a change that did not happen (the default set
    # says "was the active tab already").
    async with connect(tools=("browser-use", "pilo", "foxmcp")) as mcp:
        await call(mcp, "goto", {"url": site.url("/page/a")})
        tab = json.loads(await call(mcp, "list_tabs"))["activeTabId"]
        assert await call(mcp, "browser_switch_tab", {"tab_id": tab}) == (
            f"Tab {tab} was the active tab already: {site.url('/page/a')}"
        )
        assert await call(mcp, "switch_tab", {"tabId": tab}) == (
            f'Tab {tab} was the current tab already: {site.url("/page/a").split("/")[2]} - "Page a". The next '
            "snapshot will show this tab."
        )
        assert await call(mcp, "tabs_switch", {"tab_id": int(tab)}) == f"Tab {tab} was the active tab already"

        await call(mcp, "tabs_create", {"url": site.url("/page/b")})  # now the active tab
        assert await call(mcp, "tabs_switch", {"tab_id": int(tab)}) == f"Successfully switched to tab {tab}"
