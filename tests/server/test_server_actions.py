"""Page-action tools through a real MCP client (in memory) on a real Chromium: click, type,
press_key, select_option, hover, wait_for, handle_dialog, screenshot and evaluate, on the active
tab and on tabs behind it, with the new tabs, dialogs and page changes they cause."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.types import CallToolResult, ImageContent

from support import data, error, ok, png_size, poll, ref_of, result_of, section, tab_line, text, wait_until
from tabpilot import BrowserOptions, quoted
from tabpilot.demo.site import LocalSite


async def active_tab(mcp: Client) -> int:
    listed = data(ok(await mcp.call_tool("browser_tabs", {"action": "list"})))
    tab_id: int = listed["result"]["activeTabId"]
    return tab_id


async def open_tab(mcp: Client, url: str, *, background: bool = True) -> int:
    opened = ok(await mcp.call_tool("browser_tabs", {"action": "new", "url": url, "background": background}))
    tab_id: int = data(opened)["result"]["tabId"]
    return tab_id


async def start_on(mcp: Client, url: str) -> int:
    """Navigate the starting (active) tab to `url`; its id."""
    tab_id = await active_tab(mcp)
    ok(await mcp.call_tool("browser_navigate", {"url": url, "tabId": tab_id}))
    return tab_id


async def snapshot(mcp: Client, tab_id: int) -> str:
    snap: str = data(ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab_id})))["snapshot"]
    return snap


def opened_events(result: CallToolResult) -> list[dict[str, Any]]:
    return [e for e in data(result)["events"] if e["type"] == "tab_opened"]


def changes(result: CallToolResult) -> list[str]:
    lines: list[str] = data(result)["snapshotChanges"]["lines"]
    return lines


# -- tabs a click opens ------------------------------------------------------------------------------


async def test_a_target_blank_click_names_the_new_tab_and_its_opener_in_its_own_response(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/"))
        link = ref_of(await snapshot(mcp, home), "Open A in new tab")

        result = ok(await mcp.call_tool("browser_click", {"ref": link}))

        (event,) = opened_events(result)
        new = event["tabId"]
        assert event["openerId"] == home and event["cause"] == "link"
        assert event["url"] == site.url("/page/a")
        assert f"tab {new} opened (link) by tab {home}: {site.url('/page/a')}" in section(result, "Events")
        line = tab_line(result, new)
        assert f"opened by tab {home}" in line and "active" not in line.split("[")[1]
        assert "active" in tab_line(result, home)
        assert f"It opened tab {new}, which did not become the active tab" in section(result, "Result")
        assert data(result)["result"]["openedTabIds"] == [new]
        assert data(result)["activeTabId"] == home
        assert await active_tab(mcp) == home


async def test_a_dialog_a_new_tab_opens_as_it_loads_waits_for_the_agent(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Playwright answers a dialog nobody listens for: one a popup opened before it was bound to its
    # tab was dismissed by no one, the page going on as if the user said no.
    site.set_content(
        "/ask", "<title>Ask</title><script>document.title = 'answered ' + confirm('Allow access?')</script>"
    )
    site.set_content(
        "/asker",
        """<title>Asker</title><button onclick="window.open('/ask')">Popup</button>
        <a href="/ask" target="_blank">Link</a>""",
    )
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/asker"))
        snap = await snapshot(mcp, home)
        for label, accept in (("Popup", True), ("Link", False), ("Popup", False), ("Link", True)):
            clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, label)}))
            (new,) = data(clicked)["result"]["openedTabIds"]
            # The dialog comes when the new page's script runs: in the click's answer, or a moment later.
            listed = await poll(
                lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
                lambda r: "confirm dialog open" in tab_line(r, new),  # noqa: B023
            )
            assert "confirm dialog open: 'Allow access?'" in tab_line(listed, new)
            ok(await mcp.call_tool("browser_handle_dialog", {"accept": accept, "tabId": new}))
            answered = await poll(lambda: snapshot_text(mcp, new), lambda t: "answered" in t)  # noqa: B023
            assert f"answered {str(accept).lower()}" in answered
            ok(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": new}))


async def test_a_window_open_popup_is_reported_and_follow_new_tab_activates_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/"))
        button = ref_of(await snapshot(mcp, home), "Open popup")

        popup = ok(await mcp.call_tool("browser_click", {"ref": button}))
        (event,) = opened_events(popup)
        first = event["tabId"]
        assert event["openerId"] == home and event["cause"] == "popup"
        assert f"tab {first} opened (popup) by tab {home}" in section(popup, "Events")
        assert f"opened by tab {home}" in tab_line(popup, first)
        assert data(popup)["activeTabId"] == home

        # The popup is named: a second click would reuse it. A sign-in popup opens a fresh one.
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/oauth/start"), "tabId": home}))
        sign_in = ref_of(await snapshot(mcp, home), 'button "Sign in"')
        followed = ok(await mcp.call_tool("browser_click", {"ref": sign_in, "followNewTab": True}))

        (event,) = opened_events(followed)
        second = event["tabId"]
        assert event["openerId"] == home
        assert data(followed)["result"]["activeTabId"] == second
        assert data(followed)["activeTabId"] == second
        assert f"It opened tab {second}, which is now the active tab." in section(followed, "Result")
        # Said once; and the answer shows the page of the tab the agent goes on in (it answered
        # with the changes on the tab it left, and the agent had to ask for the new tab's refs).
        assert f"tab {second} is now active" not in section(followed, "Events")
        assert "active" in tab_line(followed, second)
        assert await active_tab(mcp) == second
        assert data(followed)["page"]["tabId"] == second
        assert "Changes since" not in section(followed, "Snapshot")
        authorize = ref_of(section(followed, "Snapshot"), 'button "Authorize"')
        assert authorize.startswith(f"{second}e")

        # A click that opens no tab: followNewTab was dropped without a word.
        ok(await mcp.call_tool("browser_tabs", {"action": "activate", "tabId": home}))
        plain = ref_of(await snapshot(mcp, home), 'button "Sign in"')
        stayed = ok(await mcp.call_tool("browser_click", {"ref": plain, "tabId": home, "followNewTab": True}))
        assert "It opened no new tab, so followNewTab made none active." in section(stayed, "Result")


async def test_with_follow_new_tabs_a_click_that_opens_two_tabs_names_the_one_now_active(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/pair",
        "<title>Pair</title><button onclick=\"window.open('/page/a'); window.open('/page/b')\">Two</button>",
    )
    async with connect(follow_new_tabs=True) as mcp:
        home = await start_on(mcp, site.url("/pair"))
        clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(await snapshot(mcp, home), "Two")}))

        first, second = sorted(e["tabId"] for e in opened_events(clicked))
        active = data(clicked)["result"]["activeTabId"]
        assert active in (first, second) and active == await active_tab(mcp)
        assert section(clicked, "Result").endswith(
            f"It opened tabs {first}, {second}; tab {active} is now the active tab."
        )
        assert "did not become the active tab" not in section(clicked, "Result")

        # followNewTab=false keeps what this click opens from becoming the active tab: it was ignored.
        closed = ok(await mcp.call_tool("browser_tabs", {"action": "close_others", "tabId": home}))
        assert data(closed)["result"]["activeTabId"] == home, text(closed)
        kept = ok(
            await mcp.call_tool(
                "browser_click", {"ref": ref_of(await snapshot(mcp, home), "Two"), "followNewTab": False}
            )
        )
        first, second = sorted(e["tabId"] for e in opened_events(kept))
        assert section(kept, "Result").endswith(
            f"It opened tabs {first}, {second}, none of which became the active tab (use tabId={first})."
        ), section(kept, "Result")
        assert await active_tab(mcp) == home


async def test_a_popup_that_opens_another_reports_both_in_the_clicks_answer(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The click answered "It opened tab 2" and told the popup's own popup, tab 3, as a tab that
    # "started loading during this action: refs from its earlier snapshots are gone" (it had none).
    # (The popup opens the other at once, in the click, so that both come while the click is watched.)
    site.set_content(
        "/chain-start",
        "<title>Start</title><button onclick=\"window.open('/page/child').open('/page/grandchild')\">Go</button>",
    )
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/chain-start"))
        clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(await snapshot(mcp, home), "Go")}))

        events = sorted(opened_events(clicked), key=lambda e: int(e["tabId"]))
        assert [e["openerId"] for e in events] == [home, events[0]["tabId"]], events
        child, grandchild = (e["tabId"] for e in events)
        assert data(clicked)["result"]["openedTabIds"] == [child, grandchild]
        assert section(clicked, "Result") == (
            f"Clicked {data(clicked)['result']['ref']} on tab {home}. It opened tabs {child}, {grandchild}, "
            f"none of which became the active tab (use tabId={child})."
        )
        assert "otherTabsLoading" not in data(clicked)["result"]
        assert f"tab {grandchild} opened (popup) by tab {child}" in section(clicked, "Events")
        assert f"opened by tab {child}" in tab_line(clicked, grandchild)


def closed_by_page(answer: CallToolResult, tab: int) -> bool:
    """Whether an answer says tab `tab` closed itself: its result (the action's own tab), else
    ### Events (said once)."""
    in_result = f"Tab {tab} closed itself afterwards." in section(answer, "Result")
    in_events = f"tab {tab} closed (by page)" in section(answer, "Events")
    assert not (in_result and in_events), text(answer)
    return in_result or in_events


async def test_the_active_tab_a_page_closes_is_told_once_with_the_tab_active_now(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # ### Events said "tab 2 closed (by page); active tab is now 1" and, on the next line, "tab 1 is
    # now active" again.
    site.set_content(
        "/closer",
        "<title>Closer</title><button onclick=\"w = window.open('/page/x')\">Open</button>"
        '<button onclick="w.close()">Shut</button>',
    )
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/closer"))
        snap = await snapshot(mcp, home)
        (popup,) = result_of(ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "Open")})))[
            "openedTabIds"
        ]
        ok(await mcp.call_tool("browser_tabs", {"action": "activate", "tabId": popup}))

        shut = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "Shut"), "tabId": home}))
        assert section(shut, "Events").splitlines() == [
            f"- tab {popup} closed (by page); active tab is now {home}"
        ]
        assert await active_tab(mcp) == home
        # The structured events keep each.
        assert [e["type"] for e in data(shut)["events"]] == ["tab_closed", "tab_activated"]


async def test_signing_in_through_a_background_popup_reports_it_closing_itself(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        app = await start_on(mcp, site.url("/oauth/start"))
        sign_in = ref_of(await snapshot(mcp, app), 'button "Sign in"')
        (event,) = opened_events(ok(await mcp.call_tool("browser_click", {"ref": sign_in})))
        popup = event["tabId"]
        user = ref_of(await snapshot(mcp, popup), 'textbox "Username"')

        typed = ok(await mcp.call_tool("browser_type", {"ref": user, "text": "ada", "submit": True}))

        # The popup closes itself after the submit; the response that first sees it says so (the
        # typing's own result, or ### Events of a later answer).
        closed = typed
        for _ in range(50):
            if closed_by_page(closed, popup):
                break
            closed = ok(await mcp.call_tool("browser_wait_for", {"time": 0.1, "tabId": app}))
        assert closed_by_page(closed, popup), text(closed)
        assert not tab_line(closed, popup) and "active" in tab_line(closed, app)
        assert "Signed in as ada" in await snapshot(mcp, app)


async def test_a_submit_that_makes_its_popup_close_itself_is_not_an_error(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/opener", """<title>Opener</title><button onclick="window.open('/ask')">Ask</button>""")
    site.set_content(
        "/ask",
        '<title>Ask</title><form action="/done"><input name="code" aria-label="Code"><button>Go</button></form>',
    )
    site.set_content("/done", "<!doctype html><script>window.close()</script>")
    async with connect() as mcp:
        opener = await start_on(mcp, site.url("/opener"))
        ask = ref_of(await snapshot(mcp, opener), 'button "Ask"')
        # The new page may close while Playwright still waits for the navigation the step started:
        # each round is one chance for that race, by Enter and by a click.
        for round in range(4):
            (event,) = opened_events(ok(await mcp.call_tool("browser_click", {"ref": ask})))
            popup = event["tabId"]
            form = await snapshot(mcp, popup)
            if round % 2:
                result = await mcp.call_tool("browser_click", {"ref": ref_of(form, 'button "Go"')})
            else:
                result = await mcp.call_tool(
                    "browser_type", {"ref": ref_of(form, 'textbox "Code"'), "text": "42", "submit": True}
                )
            ok(result)
            if not closed_by_page(result, popup):
                result = ok(await mcp.call_tool("browser_wait_for", {"time": 0.5, "tabId": opener}))
            assert closed_by_page(result, popup), text(result)
            assert "no snapshot" not in text(result)


async def test_a_popup_that_closes_itself_meanwhile_is_never_offered_as_a_tab_to_use(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Each popup closes itself a little later than the one before: one of them closes while the
    # response of the click that opened it is being built.
    delays = (0, 30, 60, 90, 120, 150)
    site.set_content(
        "/closers",
        "<title>Closers</title>"
        + "".join(
            f"<button onclick=\"var w = window.open('/page/q'); setTimeout(() => w.close(), {ms})\">"
            f"after {ms}</button>"
            for ms in delays
        ),
    )
    async with connect() as mcp:
        opener = await start_on(mcp, site.url("/closers"))
        page = await snapshot(mcp, opener)
        for ms in delays:
            clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(page, f'button "after {ms}"')}))
            said = section(clicked, "Result")
            closed = [e["tabId"] for e in data(clicked)["events"] if e["type"] == "tab_closed"]
            for popup in data(clicked)["result"]["openedTabIds"]:
                if popup in closed:
                    assert f"tabId={popup}" not in said, text(clicked)
                    assert f"It opened tab {popup}, which closed again." in said, text(clicked)
                else:
                    assert (
                        f"It opened tab {popup}, which did not become the active tab (use tabId={popup})."
                        in said
                    )


async def test_a_popup_gone_before_the_click_returns_is_counted_as_opened_and_closed_again(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/gone",
        "<title>Gone</title>"
        "<button onclick=\"window.open('/page/q').close()\">Opener closes it</button>"
        "<button onclick=\"window.open('/closes-itself')\">It closes itself</button>",
    )
    site.set_content("/closes-itself", "<title>Bye</title><script>window.close()</script>")
    for follow in (False, True):
        async with connect(follow_new_tabs=follow) as mcp:
            opener = await start_on(mcp, site.url("/gone"))
            page = await snapshot(mcp, opener)
            for label in ("Opener closes it", "It closes itself"):
                clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(page, label)}))
                closed = [e for e in data(clicked)["events"] if e["type"] == "tab_closed"]
                if label == "It closes itself" and not closed:
                    continue  # it loaded and closed only after the answer: the case of the test above
                (event,) = opened_events(clicked)
                popup = event["tabId"]
                assert data(clicked)["result"]["openedTabIds"] == [popup], text(clicked)
                said = section(clicked, "Result")
                # Under --follow-new-tabs it may close before it could be followed (the answer says
                # why nothing was) or right after: either way it is told closed, and not active.
                gone = " before it could become the active tab" if follow else ""
                told = [f"It opened tab {popup}, which closed again{gone}."]
                if follow and data(clicked)["result"].get("activeTabId") == popup:
                    told = [f"It opened tab {popup}, which closed again."]
                assert any(t in said for t in told), text(clicked)
                assert await active_tab(mcp) == opener


async def test_a_popup_the_tab_limit_closes_at_once_is_told_with_the_way_out(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(max_tabs=1) as mcp:
        home = await start_on(mcp, site.url("/"))
        clicked = ok(
            await mcp.call_tool("browser_click", {"ref": ref_of(await snapshot(mcp, home), "Open popup")})
        )
        (event,) = opened_events(clicked)
        popup = event["tabId"]
        assert data(clicked)["result"]["openedTabIds"] == [popup]
        assert f"tab {popup} closed (over the tab limit)" in section(clicked, "Events")
        assert (
            f"It opened tab {popup}, but the tab limit (--max-tabs 1) closed it at once: each instance has "
            "only the one tab. To let a page open tabs, ask whoever runs the server to raise the limit."
        ) in section(clicked, "Result")

        site.set_content(
            "/two-popups",
            "<button onclick=\"window.open('/page/a'); window.open('/page/b')\">Open two</button>",
        )
        await mcp.call_tool("browser_navigate", {"tabId": home, "url": site.url("/two-popups")})
        clicked = ok(
            await mcp.call_tool("browser_click", {"ref": ref_of(await snapshot(mcp, home), "Open two")})
        )
        popups = [e["tabId"] for e in opened_events(clicked)]
        assert len(popups) == 2
        assert (
            f"It opened tabs {popups[0]}, {popups[1]}, but the tab limit (--max-tabs 1) closed them at once:"
            in (section(clicked, "Result"))
        )


async def test_a_click_that_sends_another_open_tab_to_a_new_page_says_so_in_its_answer(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/family",
        "<title>Family</title><a href='/page/a' target='side'>A in side</a>"
        "<a href='/page/b' target='side'>B in side</a>",
    )
    site.set_content(
        "/sign-in",
        "<title>Sign in</title>"
        "<button onclick=\"window.opener.location = '/page/c'; window.close()\">Approve</button>",
    )
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/family"))
        page = await snapshot(mcp, home)
        (side,) = data(ok(await mcp.call_tool("browser_click", {"ref": ref_of(page, "A in side")})))[
            "result"
        ]["openedTabIds"]
        await snapshot(mcp, side)

        # A link whose target names the tab already open loads its page there: no new tab.
        clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(page, "B in side")}))
        assert data(clicked)["result"]["openedTabIds"] == []
        assert data(clicked)["result"]["otherTabsLoading"] == [{"tabId": side, "url": site.url("/page/b")}]
        assert (
            f"Tab {side} started loading {site.url('/page/b')} during this action: refs from its earlier "
            f"snapshots are gone; take a new snapshot of tab {side} before acting on it."
        ) in section(clicked, "Result")

        # A popup's script that sends its opener elsewhere (and closes itself, as sign-in popups do).
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/sign-in"), "tabId": side}))
        approve = ref_of(await snapshot(mcp, side), "Approve")
        approved = ok(await mcp.call_tool("browser_click", {"ref": approve}))
        assert data(approved)["result"]["otherTabsLoading"] == [{"tabId": home, "url": site.url("/page/c")}]
        assert f"Tab {home} started loading {site.url('/page/c')} during this action" in section(
            approved, "Result"
        )
        # Said once: the result says the popup closed itself, ### Events does not say it again.
        assert f"Tab {side} closed itself afterwards." in section(approved, "Result")
        assert f"tab {side} closed" not in text(approved), text(approved)


async def test_a_middle_click_and_a_modifier_click_report_the_tab_they_open(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/"))
        link = ref_of(await snapshot(mcp, home), "Go to C")

        middle = ok(await mcp.call_tool("browser_click", {"ref": link, "button": "middle"}))
        control = ok(await mcp.call_tool("browser_click", {"ref": link, "modifiers": ["ControlOrMeta"]}))
        # Modifiers as models write them, read as browser_press_key reads keys.
        ctrl = ok(await mcp.call_tool("browser_click", {"ref": link, "modifiers": ["ctrl"]}))

        for result in (middle, control, ctrl):
            (event,) = opened_events(result)
            assert event["openerId"] == home and event["url"] == site.url("/page/c")
            assert f"tab {event['tabId']} opened (link) by tab {home}" in section(result, "Events")
            assert f"opened by tab {home}" in tab_line(result, event["tabId"])
        assert "Middle-clicked" in section(middle, "Result")
        assert "with ControlOrMeta" in section(control, "Result")
        assert "with Control." in section(ctrl, "Result")
        refused = await mcp.call_tool("browser_click", {"ref": link, "modifiers": ["Hyper"]})
        assert refused.is_error and "argument 'modifiers.0': Input should be 'Alt', 'Control', " in text(
            refused
        )
        assert data(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": home}))["page"][
            "url"
        ] == site.url("/")
        assert await active_tab(mcp) == home


async def test_a_double_click_reaches_the_pages_dblclick_handler(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/dbl",
        """<!doctype html><title>Double</title>
<button ondblclick="document.getElementById('out').textContent = 'Double-clicked'">Twice</button>
<p id="out" role="status"></p>""",
    )
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/dbl"))
        button = ref_of(await snapshot(mcp, tab), 'button "Twice"')

        result = ok(await mcp.call_tool("browser_click", {"ref": button, "doubleClick": True}))

        assert f"Double-clicked {button} on tab {tab}." in section(result, "Result")
        assert any("Double-clicked" in line for line in changes(result)), text(result)


# -- background tabs -----------------------------------------------------------------------------------


async def test_snapshot_click_type_and_screenshot_on_a_background_tab_leave_the_active_tab_active(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        front = await start_on(mcp, site.url("/page/a"))
        form = await open_tab(mcp, site.url("/form"))
        snap = await snapshot(mcp, form)

        typed = ok(
            await mcp.call_tool("browser_type", {"ref": ref_of(snap, 'textbox "Name"'), "text": "Ada"})
        )
        assert f"Typed 'Ada' into {ref_of(snap, 'textbox')} on tab {form}." in section(typed, "Result")
        assert data(typed)["page"]["tabId"] == form

        clicked = ok(
            await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Submit"'), "tabId": form})
        )
        assert any("Name=Ada" in line for line in changes(clicked)), text(clicked)

        shot = ok(await mcp.call_tool("browser_screenshot", {"tabId": form}))
        assert data(shot)["result"]["tabId"] == form

        for result in (typed, clicked, shot):
            assert not section(result, "Tabs") or "active" in tab_line(result, front)
        listed = ok(await mcp.call_tool("browser_tabs", {"action": "list"}))
        assert data(listed)["result"]["activeTabId"] == front
        assert "active" in tab_line(listed, front) and "active" not in tab_line(listed, form)


# -- refs ----------------------------------------------------------------------------------------------


async def test_a_ref_used_with_the_tab_id_of_another_tab_fails_naming_the_refs_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        a = await open_tab(mcp, site.url("/page/a"))
        b = await open_tab(mcp, site.url("/page/b"))
        button = ref_of(await snapshot(mcp, a), "Say hi")
        await snapshot(mcp, b)

        result = await mcp.call_tool("browser_click", {"ref": button, "tabId": b})

        message = error(result)
        assert f"Ref {button} belongs to tab {a}, not tab {b}" in message
        page_b = await snapshot(mcp, b)
        assert "Hi from page" not in page_b


async def test_a_ref_without_its_tab_is_refused_while_several_tabs_are_open(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """`e5` says no tab: with several open it acted on the active tab, whose e5 may be another
    element than the one the model read in another tab's snapshot (SPEC: a ref never hits an
    element of another tab). With tabId, or with one tab open, it is that tab's."""
    async with connect() as mcp:
        a = await start_on(mcp, site.url("/page/a"))
        (only,) = result_of(await mcp.call_tool("browser_tabs", {"action": "list"}))["tabs"]
        assert only["id"] == a
        bare = ref_of(await snapshot(mcp, a), "Say hi").removeprefix(str(a))
        one = ok(await mcp.call_tool("browser_hover", {"ref": bare}))
        assert f"on tab {a}" in section(one, "Result")

        b = await open_tab(mcp, site.url("/page/b"))
        await snapshot(mcp, b)
        refused = error(await mcp.call_tool("browser_click", {"ref": bare}))
        assert refused == (
            f"Ref {bare} does not say which tab it is of, and 2 tabs are open ({a}, {b}). Use the ref as the "
            f"snapshot gave it ('{a}{bare}' is {bare} of tab {a}, the active tab), or pass tabId."
        ), refused
        given = ok(await mcp.call_tool("browser_click", {"ref": bare, "tabId": a}))
        assert f"Clicked {bare} on tab {a}" in section(given, "Result"), section(given, "Result")


async def test_a_stale_ref_fails_at_once_saying_to_take_a_snapshot(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/form"))
        submit = ref_of(await snapshot(mcp, tab), 'button "Submit"')
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a"), "tabId": tab}))

        result = await mcp.call_tool("browser_click", {"ref": submit})

        message = error(result)
        assert f"Ref {submit}" in message and f"browser_snapshot(tabId={tab})" in message

        never = error(await mcp.call_tool("browser_type", {"ref": f"{tab}e999", "text": "x"}))
        assert f"browser_snapshot(tabId={tab})" in never


async def test_a_ref_of_a_closed_tab_says_the_tab_is_gone(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/page/a"))
        button = ref_of(await snapshot(mcp, tab), "Say hi")
        ok(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab}))

        message = error(await mcp.call_tool("browser_click", {"ref": button}))

        assert f"Tab {tab}" in message and "closed" in message
        assert f"Ref {button} came from it" in message
        assert "Open tabs" in message


# -- what changed --------------------------------------------------------------------------------------


async def test_an_action_response_shows_the_lines_that_changed_not_the_whole_snapshot(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        button = ref_of(await snapshot(mcp, tab), "Say hi")

        result = ok(await mcp.call_tool("browser_click", {"ref": button}))

        shown = section(result, "Snapshot")
        assert f"Changes since the previous snapshot of tab {tab}:" in shown
        assert "Hi from page a" in shown
        assert 'heading "Page a"' not in shown and "This is page a" not in shown
        assert "snapshot" not in data(result)
        assert data(result)["snapshotChanges"]["tabId"] == tab
        assert any("Hi from page a" in line for line in changes(result))
        # The client saw this tab's URL and title with its snapshot: ### Page is not sent again.
        assert "### Page" not in text(result) and data(result)["page"]["tabId"] == tab
        moved = {"function": "() => history.pushState({}, '', '?step=2')", "tabId": tab}
        routed = ok(await mcp.call_tool("browser_evaluate", moved))
        assert section(routed, "Page") == f"tab {tab}: Page a ({site.url('/page/a?step=2')})"
        # The same document under another URL (an app's route) keeps its refs: its changes only
        # (the whole tree was sent again).
        assert section(routed, "Snapshot").startswith(f"Changes since the previous snapshot of tab {tab}:")

        again = ok(await mcp.call_tool("browser_click", {"ref": button}))
        assert "(no changes)" in section(again, "Snapshot")

        removal = {"function": "() => document.querySelector('p').remove()", "tabId": tab}
        removed = ok(await mcp.call_tool("browser_evaluate", removal))
        # Which line went is named (it said "(1 line removed)": which row of a list?).
        assert section(removed, "Snapshot") == (
            f"Changes since the previous snapshot of tab {tab}:\nRemoved:\n- paragraph [ref={tab}e3]: This is page a."
        ), section(removed, "Snapshot")
        # A reload shows the new document's whole tree: ### Page is its heading, URL unchanged or not.
        reloaded = ok(await mcp.call_tool("browser_navigate", {"action": "reload", "tabId": tab}))
        assert section(reloaded, "Page") == f"tab {tab}: Page a ({site.url('/page/a?step=2')})"
        assert 'heading "Page a"' in section(reloaded, "Snapshot")


# -- dialogs -------------------------------------------------------------------------------------------


async def test_a_confirm_on_a_background_tab_blocks_only_that_tab_until_handled(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        front = await start_on(mcp, site.url("/page/a"))
        say_hi = ref_of(await snapshot(mcp, front), "Say hi")
        tab = await open_tab(mcp, site.url("/dialog"))
        snap = await snapshot(mcp, tab)

        raised = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Confirm"')}))

        assert f"It opened a confirm dialog on tab {tab}: 'sure?'" in section(raised, "Result")
        assert data(raised)["result"]["dialog"]["type"] == "confirm"
        assert "dialog" not in section(raised, "Events"), "the result states it; Events does not repeat it"
        assert "confirm dialog open: 'sure?'" in tab_line(raised, tab)
        assert "active" in tab_line(raised, front)

        blocked = error(await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Alert"')}))
        assert f"Tab {tab} has an open confirm dialog" in blocked
        assert f"browser_handle_dialog(tabId={tab}" in blocked
        assert f"browser_handle_dialog(tabId={tab}" in error(
            await mcp.call_tool("browser_evaluate", {"function": "() => 1", "tabId": tab})
        )

        elsewhere = ok(await mcp.call_tool("browser_click", {"ref": say_hi}))
        assert any("Hi from page a" in line for line in changes(elsewhere))

        wrong_tab = error(await mcp.call_tool("browser_handle_dialog", {"accept": True}))
        assert f"Tab {front} has no open dialog" in wrong_tab
        assert f"tab {tab} (confirm)" in wrong_tab and f"pass tabId={tab}" in wrong_tab

        handled = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert f"Accepted the confirm dialog 'sure?' on tab {tab}." in section(handled, "Result")
        assert data(handled)["result"]["accepted"] is True
        assert "confirm: true" in section(handled, "Snapshot")
        assert "dialog open" not in tab_line(handled, tab)

        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Confirm"')}))
        dismissed = ok(await mcp.call_tool("browser_handle_dialog", {"accept": False, "tabId": tab}))
        assert f"Dismissed the confirm dialog 'sure?' on tab {tab}." in section(dismissed, "Result")
        assert "confirm: false" in section(dismissed, "Snapshot")

        # Text for a dialog that takes none is not dropped silently.
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Confirm"')}))
        confirmed = ok(
            await mcp.call_tool("browser_handle_dialog", {"accept": True, "promptText": "yes", "tabId": tab})
        )
        assert section(confirmed, "Result") == (
            f"Accepted the confirm dialog 'sure?' on tab {tab}. promptText was not used: a confirm dialog "
            "takes no text."
        )

        # In words (it read "a alert dialog").
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, 'button "Alert"')}))
        alerted = ok(
            await mcp.call_tool("browser_handle_dialog", {"accept": True, "promptText": "yes", "tabId": tab})
        )
        assert "promptText was not used: an alert dialog takes no text." in section(alerted, "Result")

        none_left = error(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert f"Tab {tab} has no open dialog" in none_left and "No tab has an open dialog" in none_left


async def test_a_prompt_is_answered_with_the_prompt_text(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/dialog"))
        prompt = ref_of(await snapshot(mcp, tab), 'button "Prompt"')
        raised = ok(await mcp.call_tool("browser_click", {"ref": prompt}))
        assert "prompt dialog" in section(raised, "Result")

        answered = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "promptText": "Ada"}))

        assert f"Accepted the prompt dialog 'name?' on tab {tab} answering 'Ada'." in section(
            answered, "Result"
        )
        assert "prompt: Ada" in section(answered, "Snapshot")
        # Without promptText: the default value, as OK would answer (Chromium's own answer was '').
        ok(await mcp.call_tool("browser_click", {"ref": prompt}))
        answered = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))
        assert f"on tab {tab} answering 'x' (its default value)." in section(answered, "Result")
        assert "prompt: x" in section(answered, "Snapshot")


async def test_a_script_that_raises_an_alert_says_the_result_comes_after_the_dialog(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/page/a"))

        # A title set just before: the page, held by its dialog, cannot report it (it listed the old one).
        alerts = "() => { document.title = 'Saved (1)'; alert('hey'); }"
        result = ok(await mcp.call_tool("browser_evaluate", {"function": alerts, "tabId": tab}))
        assert tab_line(result, tab).startswith(f"- tab {tab}: Saved (1) ("), tab_line(result, tab)

        assert "its result comes after the dialog" in section(result, "Result")
        assert f"It opened an alert dialog on tab {tab}: 'hey'" in section(result, "Result")
        assert "dialog" not in section(result, "Events"), "the result states it; Events does not repeat it"
        assert "alert dialog open: 'hey'" in tab_line(result, tab)
        handled = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert section(handled, "Result") == (
            f"Accepted the alert dialog 'hey' on tab {tab}.\n"
            f"The script {alerts!r} it held up on tab {tab} returned undefined (no value)."  # it read null
        )
        assert data(handled)["result"]["scriptResults"] == [{"tabId": tab, "value": None, "undefined": True}]
        assert "### Events" not in text(handled)
        # structured: kept
        assert [e["type"] for e in data(handled)["events"]] == ["dialog_closed", "script_result"]
        after = ok(await mcp.call_tool("browser_evaluate", {"function": "() => 2 + 2", "tabId": tab}))
        assert data(after)["result"]["value"] == 4


async def test_a_dialog_that_opens_while_two_scripts_run_is_claimed_by_neither(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Each call whose script was at work said "It opened an alert dialog": a page does not say
    # which script opened it, so both answers say it opened while they ran.
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/page/a"))
        alerting = "() => new Promise(done => setTimeout(() => { alert('late'); done(1) }, 300))"
        waiting = "() => new Promise(done => setTimeout(() => done(2), 1500))"
        answers = await asyncio.gather(
            mcp.call_tool("browser_evaluate", {"function": alerting, "tabId": tab}),
            mcp.call_tool("browser_evaluate", {"function": waiting, "tabId": tab}),
        )
        for answer in answers:
            said = section(ok(answer), "Result")
            assert (
                f"While it ran, an alert dialog opened on tab {tab}: 'late' (another call was at work on "
                "the tab too: either may have opened it)."
            ) in said, said
            assert "It opened" not in said
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))


async def test_a_script_held_up_by_a_dialog_answers_with_the_call_that_handles_it(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    async with Client(make_server(browser=BrowserOptions(timeout_action=1))) as mcp:
        tab = await open_tab(mcp, site.url("/page/a"))
        asks = "() => confirm('proceed?') ? 'YES-RESULT' : 'NO-RESULT'"
        started = ok(await mcp.call_tool("browser_evaluate", {"function": asks, "tabId": tab}))
        assert "its result comes after the dialog" in section(started, "Result")

        handled = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert section(handled, "Result") == (
            f"Accepted the confirm dialog 'proceed?' on tab {tab}.\n"
            f'The script {asks!r} it held up on tab {tab} returned:\n```json\n"YES-RESULT"\n```'
        )
        assert data(handled)["result"]["scriptResults"] == [{"tabId": tab, "value": "YES-RESULT"}]
        assert "script" not in section(handled, "Events"), "the result says it"

        # A script that asks twice: the first answer says it goes on; the second brings its result.
        twice = "() => [confirm('one'), confirm('two')]"
        ok(await mcp.call_tool("browser_evaluate", {"function": twice, "tabId": tab}))
        first = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert "A script it held up is still running" in section(first, "Result")
        assert f"tab {tab} shows a confirm dialog: 'two'" in section(first, "Events")
        second = ok(await mcp.call_tool("browser_handle_dialog", {"accept": False, "tabId": tab}))
        assert "returned:\n```json\n[true, false]\n```" in section(second, "Result")

        # Its error is told the same way.
        throws = "() => { if (confirm('fail?')) throw new Error('kaboom') }"
        ok(await mcp.call_tool("browser_evaluate", {"function": throws, "tabId": tab}))
        failed = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert f"The script {throws!r} it held up on tab {tab} ended with an error: " in section(
            failed, "Result"
        )
        assert "kaboom" in section(failed, "Result")

        # One that goes on longer than the answer waits for (the action timeout) comes in ### Events.
        slow = "async () => { confirm('wait?'); await new Promise(r => setTimeout(r, 1500)); return 'late' }"
        ok(await mcp.call_tool("browser_evaluate", {"function": slow, "tabId": tab}))
        answered = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        told = f'tab {tab}: the script ({quoted(slow, 80)}) that waited for its dialog returned "late"'
        if "still running" in section(answered, "Result"):
            answered = await poll(
                lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
                lambda listed: told in section(listed, "Events"),
            )
        assert told in section(answered, "Events") or '"late"' in section(answered, "Result"), text(answered)
        logged = ok(await mcp.call_tool("browser_observe", {"what": "tab_events", "tabId": tab}))
        assert told in section(logged, "Result")


async def test_a_note_after_an_evaluate_result_starts_below_its_code_block(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        opens = "() => { window.open('/page/b'); return 'ok' }"
        result = ok(await mcp.call_tool("browser_evaluate", {"function": opens, "tabId": tab}))
        (popup,) = data(result)["result"]["openedTabIds"]
        assert section(result, "Result") == (
            f'Ran the script on tab {tab}. Result:\n```json\n"ok"\n```\n'
            f"It opened tab {popup}, which did not become the active tab (use tabId={popup})."
        )


POKE = """<!doctype html><title>Popup</title>
<button onclick="opener.alert('from the popup')">Poke opener</button>"""


async def test_a_dialog_on_an_opener_holds_up_its_same_site_popup_and_says_which_tab_to_handle(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Chromium runs a page and the popups it opened on the same site on one thread, which a dialog
    # stops: work on the popup would hang until the action timeout, and "close the tab" is no cure.
    site.set_content("/poke", POKE)
    async with connect() as mcp:
        opener = await start_on(mcp, site.url("/page/a"))
        opening = (
            "() => { window.open('/poke'); window.open(location.href.replace('127.0.0.1', 'localhost')); }"
        )
        popup, other_site = data(
            ok(await mcp.call_tool("browser_evaluate", {"function": opening, "tabId": opener}))
        )["result"]["openedTabIds"]
        independent = await open_tab(mcp, site.url("/page/b"))  # same site, opened by the tool
        poke = ref_of(await snapshot(mcp, popup), 'button "Poke opener"')

        started = asyncio.get_running_loop().time()
        clicked = ok(await mcp.call_tool("browser_click", {"ref": poke}))
        assert asyncio.get_running_loop().time() - started < 3  # not the 5 s action timeout
        assert (
            f"It opened an alert dialog on tab {opener}: 'from the popup', which tab {popup} waits for too. "
            f"The page waits until you handle it with browser_handle_dialog(tabId={opener}"
        ) in section(clicked, "Result")
        assert data(clicked)["result"]["dialog"]["tabId"] == opener
        assert f"tab {popup} waits for the dialog on tab {opener}" in section(clicked, "Snapshot")
        # The tab list marks the held popup, and only it.
        assert tab_line(clicked, popup).endswith(
            f"[opened by tab {opener}, waits for the dialog on tab {opener}]"
        )
        for free in (independent, other_site):
            assert "waits for" not in tab_line(clicked, free), tab_line(clicked, free)
        assert {t["id"]: t["heldBy"] for t in data(clicked)["tabs"]} == {
            opener: None,
            popup: opener,
            other_site: None,
            independent: None,
        }

        held = error(await mcp.call_tool("browser_snapshot", {"tabId": popup}))
        assert held.startswith(
            f"Tab {popup} waits for the alert dialog open on tab {opener} ('from the popup')"
        )
        assert f"browser_handle_dialog(tabId={opener}, accept=true|false), then retry on tab {popup}." in held
        for free in (independent, other_site):  # a tab of its own, a popup of another site: not held
            ok(await mcp.call_tool("browser_snapshot", {"tabId": free}))

        handled = ok(await mcp.call_tool("browser_handle_dialog", {"tabId": opener, "accept": True}))
        assert tab_line(handled, popup).endswith(f"[opened by tab {opener}]"), text(handled)
        assert 'button "Poke opener"' in await snapshot(mcp, popup)


async def test_a_dialog_in_an_iframe_of_another_site_holds_up_the_popup_that_iframe_opened(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The iframe (localhost) and the popup it opened (localhost) run on one thread: the iframe's
    # alert, told as the page's, stopped the popup too, but the tab list showed it free and work on
    # it waited the action timeout before it said so.
    inner = site.url("/inner").replace("127.0.0.1", "localhost")
    site.set_content(
        "/inner",
        "<button onclick=\"window.open('/page/framepop')\">frame pop</button>"
        "<button onclick=\"alert('from frame')\">frame alert</button>",
    )
    site.set_content("/outer", f'<iframe src="{inner}"></iframe>')
    async with connect(browser=BrowserOptions(timeout_action=3)) as mcp:
        tab = await start_on(mcp, site.url("/outer"))
        snap = await snapshot(mcp, tab)
        popup = data(ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "frame pop")})))["result"][
            "openedTabIds"
        ][0]
        alerted = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "frame alert")}))
        assert tab_line(alerted, popup).endswith(f"waits for the dialog on tab {tab}]"), text(alerted)
        held = error(await mcp.call_tool("browser_snapshot", {"tabId": popup}))
        assert held.startswith(f"Tab {popup} waits for the alert dialog open on tab {tab} ('from frame')"), (
            held
        )
        ok(await mcp.call_tool("browser_handle_dialog", {"tabId": tab, "accept": True}))
        assert "Page framepop" in await snapshot(mcp, popup)


async def test_a_screenshot_cut_short_by_a_dialog_on_its_opener_names_the_tab_to_handle(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Before, it said to handle the dialog on the popup, which had none. A full-page screenshot
    # resizes the page as it starts; this popup then has its opener show an alert.
    site.set_content(
        "/grow",
        "<title>Grow</title><div style='height: 3000px'>tall</div><script>addEventListener('resize', () => "
        "{ if (window.armed) { window.armed = false; opener.alert('resized'); } })</script>",
    )
    async with connect() as mcp:
        opener = await start_on(mcp, site.url("/page/a"))
        (popup,) = data(
            ok(await mcp.call_tool("browser_evaluate", {"function": "() => { window.open('/grow'); }"}))
        )["result"]["openedTabIds"]
        ok(
            await mcp.call_tool(
                "browser_evaluate", {"function": "() => { window.armed = true; }", "tabId": popup}
            )
        )
        said = error(await mcp.call_tool("browser_screenshot", {"tabId": popup, "fullPage": True}))
        assert said.startswith(
            f"Screenshot of tab {popup} was interrupted: an alert dialog opened on tab {opener}, which tab "
            f"{popup} waits for too."
        ), said
        assert f"browser_handle_dialog(tabId={opener}, accept=true|false)" in said, said
        ok(await mcp.call_tool("browser_handle_dialog", {"tabId": opener, "accept": True}))
        ok(await mcp.call_tool("browser_screenshot", {"tabId": popup}))


async def test_a_screenshot_taken_while_another_call_loads_the_tab_shows_a_page_instead_of_timing_out(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    # Playwright's screenshot can wait out its whole timeout when the tab navigates under it: before,
    # most rounds of a screenshot, a load and a step back at once answered "did not finish within".
    async with Client(make_server(browser=BrowserOptions(timeout_action=2))) as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        for i in range(8):
            shot, loaded, back = await asyncio.gather(
                mcp.call_tool("browser_screenshot", {"tabId": tab}),
                mcp.call_tool("browser_navigate", {"url": site.url(f"/page/round-{i}"), "tabId": tab}),
                mcp.call_tool("browser_navigate", {"action": "back", "tabId": tab}),
            )
            assert not shot.is_error, f"round {i}: {text(shot)}"
            assert [c.type for c in shot.content if c.type == "image"] == ["image"]
            # The loads may each be cut short by the other; neither may hang.
            for load in (loaded, back):
                assert not load.is_error or "did not finish" not in text(load), text(load)


# -- each tool -----------------------------------------------------------------------------------------

SEARCH = """<!doctype html><title>Search</title>
<form onsubmit="event.preventDefault(); document.getElementById('out').textContent = 'Searched: ' + q.value">
<input id="q" aria-label="Query">
</form>
<p id="out" role="status"></p>
<p id="key" role="log"></p>
<script>
document.addEventListener('keydown', (e) => { document.getElementById('key').textContent = 'Key: ' + e.key; });
</script>"""


async def test_type_with_submit_presses_enter(connect: Callable[..., Client], site: LocalSite) -> None:
    site.set_content("/search", SEARCH)
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/search"))
        query = ref_of(await snapshot(mcp, tab), 'textbox "Query"')

        result = ok(await mcp.call_tool("browser_type", {"ref": query, "text": "tabs", "submit": True}))

        assert f"Typed 'tabs' into {query} on tab {tab} and pressed Enter." in section(result, "Result")
        assert any("Searched: tabs" in line for line in changes(result)), text(result)


async def test_press_key_on_an_element_and_where_the_focus_is(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/search", SEARCH)
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/search"))
        query = ref_of(await snapshot(mcp, tab), 'textbox "Query"')

        on_element = ok(await mcp.call_tool("browser_press_key", {"key": "ArrowDown", "ref": query}))
        assert f"Pressed ArrowDown on {query} on tab {tab}." in section(on_element, "Result")
        assert data(on_element)["result"]["key"] == "ArrowDown"
        assert any("Key: ArrowDown" in line for line in changes(on_element)), text(on_element)

        focused = ok(await mcp.call_tool("browser_press_key", {"key": "Escape", "tabId": tab}))
        assert f"Pressed Escape on tab {tab}." in section(focused, "Result")
        assert any("Key: Escape" in line for line in changes(focused)), text(focused)

        unknown = error(await mcp.call_tool("browser_press_key", {"key": "Explode", "tabId": tab}))
        assert "Explode" in unknown and "Enter" in unknown
        # Text given as a key: the way to type it, which the answer did not name.
        words = error(await mcp.call_tool("browser_press_key", {"key": "hello world", "tabId": tab}))
        assert "To type text, use browser_type(ref=..., text=...) on the field" in words, words
        # No key has a name that long: it was echoed whole (twice), and cut, the message lost its end.
        # A combination cut short: Playwright's 'Unknown key: ""' named no key.
        short = error(await mcp.call_tool("browser_press_key", {"key": "Control+", "tabId": tab}))
        assert short.startswith("key 'Control+' names no key after its last +: add the key (Control+a)"), (
            short
        )
        huge = error(await mcp.call_tool("browser_press_key", {"key": "x" * 100_000, "tabId": tab}))
        assert "is not a key name: name one key or combination, e.g. Enter or Control+a" in huge, huge
        assert len(huge) < 400, len(huge)

        # Key names as models write them: Ctrl, Esc, any case.
        ok(await mcp.call_tool("browser_type", {"ref": query, "text": "tabs"}))
        selected = ok(await mcp.call_tool("browser_press_key", {"key": "ctrl+a", "ref": query}))
        assert f"Pressed Control+a on {query} on tab {tab}." in section(selected, "Result")
        assert data(selected)["result"]["key"] == "Control+a"
        replaced = ok(await mcp.call_tool("browser_press_key", {"key": "x", "ref": query}))
        assert any(line.endswith(f"[ref={query}]: x") for line in changes(replaced)), text(replaced)
        escaped = ok(await mcp.call_tool("browser_press_key", {"key": "esc", "tabId": tab}))
        assert f"Pressed Escape on tab {tab}." in section(escaped, "Result")
        assert any("Key: Escape" in line for line in changes(escaped)), text(escaped)


async def test_a_key_pressed_on_an_element_that_takes_no_focus_is_not_sent_to_another(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/keys",
        "<title>Keys</title><input aria-label=Name onkeydown=\"document.title = 'Name got ' + event.key\">"
        "<p>Terms apply</p><button disabled>Send</button><div contenteditable aria-label=Notes><p>hello</p></div>",
    )
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/keys"))
        snap = await snapshot(mcp, tab)
        name, note, send, line = (
            ref_of(snap, needle) for needle in ('textbox "Name"', "Terms apply", 'button "Send"', ": hello")
        )
        ok(await mcp.call_tool("browser_type", {"ref": name, "text": "Ada"}))
        # Playwright focuses the element, which a paragraph does not take: the Enter went to the
        # field typed into before (a form of its own submitted), and the answer said "Pressed Enter
        # on" the paragraph.
        refused = error(await mcp.call_tool("browser_press_key", {"key": "Enter", "ref": note}))
        assert refused.startswith(
            f"Pressing Enter on {note} on tab {tab} failed: element {note} takes no keyboard focus, so the key "
            "would go to another element (the one that has the focus); nothing was pressed. Press the key "
            "without ref to send it to the focused element"
        ), refused
        disabled = error(await mcp.call_tool("browser_press_key", {"key": "Enter", "ref": send}))
        assert f"failed: element {send} is disabled." in disabled, disabled
        assert await page_title(mcp, tab) == "Keys"
        ok(await mcp.call_tool("browser_press_key", {"key": "Enter", "ref": name}))
        assert await page_title(mcp, tab) == "Name got Enter"
        # A paragraph of a rich-text editor takes no focus either, but a key pressed on it goes
        # there (the caret put in it, as typing does): it reached nothing.
        ok(await mcp.call_tool("browser_press_key", {"key": "End", "ref": line}))
        typed = ok(await mcp.call_tool("browser_press_key", {"key": "x", "tabId": tab}))
        assert any(f"[ref={line}]: hellox" in change for change in changes(typed)), text(typed)


async def page_title(mcp: Client, tab: int) -> str:
    title: str = result_of(
        ok(await mcp.call_tool("browser_evaluate", {"function": "() => document.title", "tabId": tab}))
    )["value"]
    return title


async def test_select_option_by_value_and_by_label(connect: Callable[..., Client], site: LocalSite) -> None:
    site.set_content(
        "/pick",
        """<!doctype html><title>Pick</title>
<label for="c">Color</label>
<select id="c" onchange="document.getElementById('out').textContent = 'Picked ' + this.value">
<option value="r">Red</option><option value="g">Green</option><option value="b">Blue</option>
</select>
<p id="out" role="status"></p>""",
    )
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/pick"))
        combo = ref_of(await snapshot(mcp, tab), 'combobox "Color"')

        by_value = ok(await mcp.call_tool("browser_select_option", {"ref": combo, "values": ["g"]}))
        assert data(by_value)["result"]["selected"] == ["g"]
        assert f"Selected ['g'] in {combo} on tab {tab}." in section(by_value, "Result")
        assert any("Picked g" in line for line in changes(by_value)), text(by_value)

        by_label = ok(await mcp.call_tool("browser_select_option", {"ref": combo, "values": ["Blue"]}))
        assert data(by_label)["result"]["selected"] == ["b"]
        assert any("Picked b" in line for line in changes(by_label)), text(by_label)

        missing = error(await mcp.call_tool("browser_select_option", {"ref": combo, "values": ["Purple"]}))
        assert "no option" in missing and combo in missing


async def test_hover_fires_the_pages_mouseover(connect: Callable[..., Client], site: LocalSite) -> None:
    async with connect() as mcp:
        front = await start_on(mcp, site.url("/page/a"))
        tab = await open_tab(mcp, site.url("/form"))
        target = ref_of(await snapshot(mcp, tab), "Hover me")

        result = ok(await mcp.call_tool("browser_hover", {"ref": target}))

        assert f"Hovered over {target} on tab {tab}." in section(result, "Result")
        assert any("Hovered" in line for line in changes(result)), text(result)
        hovered = ok(
            await mcp.call_tool("browser_evaluate", {"function": "(e) => e.matches(':hover')", "ref": target})
        )
        assert data(hovered)["result"]["value"] is True
        assert await active_tab(mcp) == front


async def test_wait_for_text_text_gone_and_time(connect: Callable[..., Client], site: LocalSite) -> None:
    site.set_content(
        "/loading",
        """<!doctype html><title>Loading</title><p id="spin">Loading data</p>
<script>setTimeout(() => document.getElementById('spin').remove(), 300)</script>""",
    )
    async with connect() as mcp:
        form = await open_tab(mcp, site.url("/form"))
        appeared = ok(await mcp.call_tool("browser_wait_for", {"text": "Ready", "tabId": form}))
        assert f"Waited for text 'Ready' to appear on tab {form}." in section(appeared, "Result")

        loading = await open_tab(mcp, site.url("/loading"))
        gone = ok(await mcp.call_tool("browser_wait_for", {"textGone": "Loading data", "tabId": loading}))
        assert f"Waited for text 'Loading data' to disappear on tab {loading}." in section(gone, "Result")
        assert "Loading data" not in await snapshot(mcp, loading)

        slept = ok(await mcp.call_tool("browser_wait_for", {"time": 0.1, "tabId": form}))
        assert f"Waited for 0.1 s on tab {form}." in section(slept, "Result")

        both = ok(await mcp.call_tool("browser_wait_for", {"time": 0.1, "text": "Ready", "tabId": form}))
        assert f"Waited for 0.1 s, then for text 'Ready' to appear on tab {form}." in section(both, "Result")

        nothing = error(await mcp.call_tool("browser_wait_for", {"tabId": form}))
        assert "'text', 'textGone' or 'time'" in nothing

        # A dialog the page opens on its timer stops the page and the wait: the answer said
        # "Waited for text 'Never here' to appear" (and "It opened" the dialog) after 0.3 s.
        site.set_content("/later", "<script>setTimeout(() => alert('mid-wait'), 300)</script>")
        for wait, until in (({"text": "Never here"}, "it came"), ({"time": 5}, "its time was up")):
            later = await open_tab(mcp, site.url("/later"))
            cut = ok(await mcp.call_tool("browser_wait_for", {**wait, "tabId": later}))
            what = "text 'Never here' to appear" if "text" in wait else "5 s"
            assert section(cut, "Result") == (
                f"The wait for {what} on tab {later} ended before {until}: a dialog stopped the page. While "
                f"it waited, an alert dialog opened on tab {later}: 'mid-wait'. The page waits until you "
                f"handle it with browser_handle_dialog(tabId={later}, accept=true|false)."
            ), section(cut, "Result")
            assert data(cut)["result"]["met"] is False
        for name, which in (("text", "appear"), ("textGone", "disappear")):
            empty = error(await mcp.call_tool("browser_wait_for", {name: " ", "tabId": form}))
            assert f"The text to wait for to {which} is empty: give its words" in empty, empty

        # A tab that closes during the wait fails it at once, a pause too (it answered "Waited
        # for 20 s" when the time was up, about a tab closed since).
        pauses: tuple[dict[str, Any], ...] = (
            {"time": 20},
            {"time": 20, "text": "Never here"},
            {"text": "Never here"},
        )
        for pause in pauses:
            closing = await open_tab(mcp, site.url("/page/a"))

            async def close_soon(tab: int = closing) -> None:
                await anyio.sleep(0.3)
                ok(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab}))

            with anyio.fail_after(10):
                async with anyio.create_task_group() as group:
                    group.start_soon(close_soon)
                    failed = error(await mcp.call_tool("browser_wait_for", {**pause, "tabId": closing}))
            assert (
                failed.startswith("Waiting for ")
                and f"on tab {closing} failed: tab {closing} closed" in failed
            ), (
                pause,
                failed,
            )
            # Why, when it is known: another call closed it (it said "or its browser went away").
            assert "during the action. It was closed by a call to tabpilot." in failed, (pause, failed)


async def test_wait_for_sees_text_inside_iframes_of_any_origin(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # It looked in the top page only: text in an iframe "never appeared" (10 s, then an error),
    # and text still in an iframe "disappeared" at once.
    site.set_content(
        "/pay",
        """<title>Pay</title><p id="state">Processing payment</p>
<script>setTimeout(() => { document.getElementById('state').textContent = 'Payment accepted' }, 400)</script>""",
    )
    for origin in (site.url("/"), site.url("/").replace("127.0.0.1", "localhost")):
        site.set_content(
            "/checkout", f"<title>Checkout</title><h1>Checkout</h1><iframe src='{origin}pay'></iframe>"
        )
        async with connect() as mcp:
            tab = await start_on(mcp, site.url("/checkout"))
            gone = ok(
                await mcp.call_tool("browser_wait_for", {"textGone": "Processing payment", "tabId": tab})
            )
            assert "Waited for text 'Processing payment' to disappear" in section(gone, "Result")
            shown = await snapshot(mcp, tab)
            assert "Processing payment" not in shown and "Payment accepted" in shown, shown
            came = ok(await mcp.call_tool("browser_wait_for", {"text": "Payment accepted", "tabId": tab}))
            assert f"Waited for text 'Payment accepted' to appear on tab {tab}." in section(came, "Result")


async def test_evaluate_returns_the_value_and_takes_a_ref(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        front = await start_on(mcp, site.url("/page/a"))
        tab = await open_tab(mcp, site.url("/page/b"))

        titled = ok(
            await mcp.call_tool("browser_evaluate", {"function": "() => document.title", "tabId": tab})
        )
        assert data(titled)["result"]["value"] == "Page b"
        assert '```json\n"Page b"\n```' in section(titled, "Result")
        # A script that returns nothing (a click, a missing property) said "null", as one returning
        # null does.
        for nothing in ("() => { document.title = 'Page b' }", "() => window.noSuchThing"):
            none = ok(await mcp.call_tool("browser_evaluate", {"function": nothing, "tabId": tab}))
            assert (
                section(none, "Result") == f"Ran the script on tab {tab}. It returned undefined (no value)."
            )
            assert data(none)["result"]["value"] is None and data(none)["result"]["undefined"] is True
        null = ok(await mcp.call_tool("browser_evaluate", {"function": "() => null", "tabId": tab}))
        assert "```json\nnull\n```" in section(null, "Result") and "undefined" not in data(null)["result"]

        valued = ok(
            await mcp.call_tool("browser_evaluate", {"function": "() => ({n: 1 + 1, list: [1, 'x']})"})
        )
        assert data(valued)["result"]["value"] == {"n": 2, "list": [1, "x"]}
        assert data(valued)["result"]["tabId"] == front

        heading = ref_of(await snapshot(mcp, tab), 'heading "Page b"')
        element = ok(
            await mcp.call_tool("browser_evaluate", {"function": "(e) => e.tagName", "ref": heading})
        )
        assert data(element)["result"]["value"] == "H1"
        assert data(element)["result"]["tabId"] == tab

        huge = ok(
            await mcp.call_tool("browser_evaluate", {"function": "() => 'x'.repeat(50000)", "tabId": tab})
        )
        result = data(huge)["result"]
        assert "value" not in result and result["truncated"] is True and result["valueChars"] == 50002
        assert len(result["valueJson"]) == 20_000 and "more characters cut" in section(huge, "Result")

        # What JSON has no words for comes back as JavaScript would print it, never as Python, and
        # an object that holds itself is answered (it was an internal server error).
        odd = ok(
            await mcp.call_tool(
                "browser_evaluate",
                {
                    "function": "() => { const o = {d: new Date(0), r: /a.b/i, n: NaN, z: -0, e: new Error('no')}; o.self = o; return [o, o.d] }"
                },
            )
        )
        expected = {
            "d": "1970-01-01T00:00:00.000Z",
            "r": "/a.b/i",
            "n": "NaN",
            "z": 0,
            "e": "Error: no",
            "self": "[Circular]",
        }
        assert data(odd)["result"]["value"] == [expected, "1970-01-01T00:00:00.000Z"]
        assert '"self": "[Circular]"' in section(odd, "Result") and "re.compile" not in section(odd, "Result")

        # What Playwright's serializer would lose without a word: a Map and a Set (as {}), a Symbol
        # (as null), an invalid Date (as the epoch) and a RegExp's g flag. Statements still work.
        lost = "var s = new Set(['a']); s.add(s); "
        lost += "() => ({m: new Map([['k', [1]]]), s, y: Symbol('y'), d: new Date('x'), r: /x/gy, n: 10n})"
        kept = ok(await mcp.call_tool("browser_evaluate", {"function": lost, "tabId": tab}))
        assert data(kept)["result"]["value"] == {
            "m": [["k", [1]]],
            "s": ["a", "[Circular]"],
            "y": "Symbol(y)",
            "d": "Invalid Date",
            "r": "/x/gy",
            "n": 10,
        }
        on_element = ok(
            await mcp.call_tool(
                "browser_evaluate", {"function": "(e) => new Set([e.tagName, 10n])", "ref": heading}
            )
        )
        assert data(on_element)["result"]["value"] == ["H1", 10]
        # A class instance is sent as its fields, and a Map or Set in it is not lost (it was {}).
        instance = "() => { class Cart { constructor() { this.items = new Map([['pen', 2]]); "
        instance += (
            "this.tags = new Set(['new']); this.me = this; } total() { return 2 } } return new Cart() }"
        )
        fields = ok(await mcp.call_tool("browser_evaluate", {"function": instance, "tabId": tab}))
        assert data(fields)["result"]["value"] == {"items": [["pen", 2]], "tags": ["new"], "me": "[Circular]"}
        # A result nested too deeply to send is an error that says so: from about 3000 levels it
        # had come back as null (Playwright's serializer ran out of stack without a word), and
        # at 200 levels CDP refused it ("object reference chain is too long").
        deep = (
            "() => { const top = {}; let o = top; for (let i = 0; i < LEVELS; i++) o = o.n = {}; return top }"
        )
        nested = ok(
            await mcp.call_tool("browser_evaluate", {"function": deep.replace("LEVELS", "199"), "tabId": tab})
        )
        assert json.dumps(data(nested)["result"]["value"]) == '{"n": ' * 199 + "{}" + "}" * 199
        refused = error(
            await mcp.call_tool(
                "browser_evaluate", {"function": deep.replace("LEVELS", "5000"), "tabId": tab}
            )
        )
        assert refused == (
            f"Evaluating on tab {tab} failed: its result is nested too deeply to send (nested over 200 "
            "levels). Return a part of it, nested less deeply."
        ), refused
        # Errors keep their kind; nodes, the window and wrapped primitives say what they are.
        kinds = "() => [new TypeError('bad'), document.body, window, new Number(2), document.querySelectorAll('h1'), "
        # An object that throws as it is read is said in its place; the rest of the result stays.
        kinds += "new Proxy({}, {ownKeys() { throw new Error('keys') }}), {get window() { throw 1 }, a: 1}, "
        # An iframe's values are told apart as the page's are (they were {}); toJSON is honoured
        # (a DOMRect was {}); a BigInt Python cannot read as a number comes as its digits.
        kinds += "(() => { const f = document.createElement('iframe'); document.body.append(f); "
        kinds += "const w = f.contentWindow; return [new w.Date(0), w.document.body] })(), "
        kinds += "new DOMRect(1, 2, 3, 4), String(7n ** 5000n).length, 7n ** 5000n, Object(1n)]"
        named = ok(await mcp.call_tool("browser_evaluate", {"function": kinds, "tabId": tab}))
        assert data(named)["result"]["value"] == [
            "TypeError: bad",
            "[object HTMLBodyElement]",
            "[object Window]",
            2,
            ["[object HTMLHeadingElement]"],
            "[unreadable: Error: keys]",
            {"a": 1},
            ["1970-01-01T00:00:00.000Z", "[object HTMLBodyElement]"],
            {"x": 1, "y": 2, "width": 3, "height": 4, "top": 2, "right": 4, "bottom": 6, "left": 1},
            4226,
            str(7**5000),
            1,
        ]
        # A page that replaced JSON.stringify (its own or a library's) still gets its results.
        replaced = r"""() => { JSON.stringify = () => 'hacked'; return ['x"y', '\n'] }"""
        kept_apart = ok(await mcp.call_tool("browser_evaluate", {"function": replaced, "tabId": tab}))
        assert data(kept_apart)["result"]["value"] == ['x"y', "\n"], text(kept_apart)


async def test_a_large_script_result_is_answered_and_a_too_large_one_refused(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """200,000 small objects (about 5 MB as JSON) came back as "tab 1 is not responding" after 14 s,
    the server's every other call held up meanwhile: Playwright's client checked the result item by
    item. Now the page writes it as JSON text; over 10,000,000 characters is refused, saying so."""
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/page/a"))
        rows = "() => Array.from({length: COUNT}, (_, i) => ({i, s: 'x' + i}))"
        large = ok(
            await mcp.call_tool(
                "browser_evaluate", {"function": rows.replace("COUNT", "200000"), "tabId": tab}
            )
        )
        result = data(large)["result"]
        assert result["truncated"] is True and result["valueChars"] > 5_000_000, result
        assert result["valueJson"].startswith('[{"i": 0, "s": "x0"}, {"i": 1, "s": "x1"}')
        refused = error(
            await mcp.call_tool(
                "browser_evaluate", {"function": rows.replace("COUNT", "600000"), "tabId": tab}
            )
        )
        assert refused == (
            f"Evaluating on tab {tab} failed: its result is too large to send (over 10,000,000 characters "
            "as JSON). Return a part of it (e.g. `.slice(0, 100)`) or a summary of it (e.g. its length)."
        ), refused
        after = ok(
            await mcp.call_tool("browser_evaluate", {"function": "() => document.title", "tabId": tab})
        )
        assert data(after)["result"]["value"] == "Page a"


async def test_a_javascript_error_in_evaluate_is_a_clear_error(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/page/a"))

        thrown = error(
            await mcp.call_tool(
                "browser_evaluate", {"function": "() => { throw new Error('kaboom') }", "tabId": tab}
            )
        )
        assert "kaboom" in thrown and f"tab {tab}" in thrown

        broken = error(await mcp.call_tool("browser_evaluate", {"function": "() => {", "tabId": tab}))
        assert f"tab {tab}" in broken

        # A value that is no Error (a rejected API call's object) is said as its JSON, as a result
        # is: the answer said "failed: Object.".
        for function, says in (
            ("() => { throw {status: 404, reason: 'gone'} }", 'threw: {"status":404,"reason":"gone"}'),
            ("() => Promise.reject('nope')", 'threw: "nope"'),
        ):
            thrown = error(await mcp.call_tool("browser_evaluate", {"function": function, "tabId": tab}))
            assert f"Evaluating on tab {tab} failed: the script {says}." in thrown, thrown


async def test_evaluate_on_an_element_whose_promise_never_settles_ends_at_the_timeout(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    """It waited for ever (Playwright's timeout is for finding the element only): the call hung."""
    async with Client(make_server(browser=BrowserOptions(timeout_action=1))) as mcp:
        tab = await open_tab(mcp, site.url("/form"))
        button = ref_of(await snapshot(mcp, tab), 'button "Submit"')
        with anyio.fail_after(10):
            pending = await mcp.call_tool(
                "browser_evaluate",
                {"function": "(element) => new Promise(() => {})", "ref": button, "tabId": tab},
            )
        assert error(pending).startswith(
            f"Evaluating on {button} on tab {tab} did not finish within 1 s: the page answers, but the "
            "script's promise had not settled."
        ), error(pending)
        # The tab goes on answering.
        done = await mcp.call_tool(
            "browser_evaluate", {"function": "(el) => el.tagName", "ref": button, "tabId": tab}
        )
        assert data(ok(done))["result"]["value"] == "BUTTON"


def image_of(result: CallToolResult) -> ImageContent:
    (image,) = [c for c in result.content if isinstance(c, ImageContent)]
    assert image.mime_type == "image/png"
    return image


async def color_at(mcp: Client, tab: int, image: ImageContent, x: int, y: int) -> list[int]:
    """The colour (r, g, b) of a PNG at (x, y), as the browser decodes it."""
    decode = (
        f"async () => {{ const img = new Image(); img.src = 'data:image/png;base64,{image.data}'; "
        "await img.decode(); const c = document.createElement('canvas'); c.width = img.width; "
        "c.height = img.height; const g = c.getContext('2d'); g.drawImage(img, 0, 0); "
        f"return Array.from(g.getImageData({x}, {y}, 1, 1).data).slice(0, 3) }}"
    )
    color: list[int] = data(ok(await mcp.call_tool("browser_evaluate", {"function": decode, "tabId": tab})))[
        "result"
    ]["value"]
    return color


async def test_a_screenshot_of_a_wide_element_in_an_iframe_shows_that_element(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Wider than a model takes (8000 px), it is scaled: it was measured in its iframe's document
    and captured in the page's, which gave the top of the page instead (yellow, not green)."""
    site.set_content(
        "/framed",
        "<title>Framed</title><style>body{margin:0}</style><div style='height:300px;background:yellow'>top</div>"
        "<iframe style='width:600px;height:400px;border:0' srcdoc=\"<body style=margin:0><div style='height:100px'>"
        "pad</div><div role=img aria-label=wide style='width:9000px;height:90px;background:rgb(0,128,0)'>"
        '</div></body>"></iframe>',
    )
    async with connect(structured_content=True) as mcp:
        tab = await start_on(mcp, site.url("/framed"))
        wide = await poll(
            lambda: mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}),
            lambda r: 'img "wide"' in text(r),
        )
        shot = ok(await mcp.call_tool("browser_screenshot", {"ref": ref_of(text(wide), 'img "wide"')}))
        assert png_size(image_of(shot)) == (8000, 80)
        # Said (it was not): its pixels are no longer the page's.
        assert "It is 8000 px wide, the most a model takes: a wider area is scaled down to fit." in section(
            shot, "Result"
        )
        # Its left part, inside the iframe's box (the page shows no more of it).
        assert await color_at(mcp, tab, image_of(shot), 100, 40) == [0, 128, 0]


async def test_screenshot_of_viewport_element_and_full_page(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/tall", '<!doctype html><title>Tall</title><h1>Tall</h1><div style="height: 3000px"></div>'
    )
    async with connect() as mcp:
        front = await start_on(mcp, site.url("/page/a"))
        tall = await open_tab(mcp, site.url("/tall"))

        viewport = ok(await mcp.call_tool("browser_screenshot", {"tabId": tall}))
        width, height = png_size(image_of(viewport))
        facts = data(viewport)["result"]
        assert (facts["width"], facts["height"]) == (width, height)
        assert facts["mimeType"] == "image/png" and facts["fullPage"] is False
        assert f"Screenshot of the viewport of tab {tall} ({width}x{height} px, PNG)" in section(
            viewport, "Result"
        )
        assert data(viewport)["page"]["tabId"] == tall

        whole = ok(await mcp.call_tool("browser_screenshot", {"tabId": tall, "fullPage": True}))
        assert png_size(image_of(whole))[1] > height
        assert "the full page" in section(whole, "Result") and "cut" not in section(whole, "Result")

        # A page taller than a model takes a picture (8000 px a side) is cut there, saying so: a
        # 30,000 px page came whole (models refuse it).
        await mcp.call_tool(
            "browser_evaluate",
            {"function": "() => { document.body.style.height = '30000px' }", "tabId": tall},
        )
        cut = ok(await mcp.call_tool("browser_screenshot", {"tabId": tall, "fullPage": True}))
        assert png_size(image_of(cut)) == (width, 8000)
        assert (data(cut)["result"]["width"], data(cut)["result"]["height"]) == (width, 8000)
        height_of = {"function": "() => document.documentElement.scrollHeight", "tabId": tall}
        page_height = result_of(ok(await mcp.call_tool("browser_evaluate", height_of)))["value"]
        assert (
            f"It shows the top 8,000 of the {page_height:,} CSS pixels of the full page (the page's own, which "
            "scrolling takes): the image stops at 8000 px, the most a model takes. To see further down, scroll "
            "(browser_evaluate with window.scrollTo(0, 8000)) and take the viewport"
        ) in section(cut, "Result")
        assert (data(cut)["result"]["shownCssHeight"], data(cut)["result"]["cssHeight"]) == (
            8000,
            page_height,
        )
        wide = ok(
            await mcp.call_tool(
                "browser_screenshot", {"tabId": tall, "fullPage": True, "maxWidth": width // 2}
            )
        )
        assert png_size(image_of(wide)) == (width // 2, 8000), "scaled to half, then cut"
        # Scaled to half, its 8000 px are 16,000 of the page's: it said "It stops at 8000 px", and
        # an agent that scrolled there skipped half of what it had not seen. (So on a screen of 2
        # device pixels per CSS pixel, the other way round.)
        assert f"It shows the top 16,000 of the {page_height:,} CSS pixels of the full page" in section(
            wide, "Result"
        )
        assert "window.scrollTo(0, 16000)" in section(wide, "Result")
        # So is a viewport browser_resize made taller than that (it came whole).
        ok(await mcp.call_tool("browser_resize", {"width": 1000, "height": 9000, "tabId": tall}))
        view = ok(await mcp.call_tool("browser_screenshot", {"tabId": tall}))
        assert png_size(image_of(view)) == (1000, 8000)
        assert "It shows the top 8,000 of the 9,000 CSS pixels of the viewport" in section(view, "Result")
        assert "window.scrollBy(0, 8000)) and take it again." in section(view, "Result")

        heading = ref_of(await snapshot(mcp, tall), 'heading "Tall"')
        element = ok(await mcp.call_tool("browser_screenshot", {"ref": heading}))
        element_size = png_size(image_of(element))
        assert element_size[0] < width and element_size[1] < height
        assert data(element)["result"]["ref"] == heading
        assert f"Screenshot of element {heading} of tab {tall}" in section(element, "Result")

        both = error(await mcp.call_tool("browser_screenshot", {"ref": heading, "fullPage": True}))
        assert both.startswith("fullPage and ref exclude each other"), both  # the tool's words
        assert await active_tab(mcp) == front


async def test_a_screenshot_of_an_element_the_page_hid_says_so_at_once(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/hiding", "<title>Hiding</title><h1>Menu</h1><button id=item>Item</button>")
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/hiding"))
        item = ref_of(await snapshot(mcp, tab), 'button "Item"')
        opens = {"function": "() => { window.open('/page/b'); }", "tabId": tab}
        (opened,) = opened_events(ok(await mcp.call_tool("browser_evaluate", opens)))
        # The page hides the element after the tab's latest snapshot (here its popup does it, as a
        # menu closes by itself), so the ref still holds.
        hides = "() => { opener.document.getElementById('item').style.display = 'none'; }"
        ok(await mcp.call_tool("browser_evaluate", {"function": hides, "tabId": opened["tabId"]}))
        # Playwright's screenshot waited its whole timeout (10 s) for the element to show, and the
        # answer then said the page might be busy.
        hidden = error(await mcp.call_tool("browser_screenshot", {"ref": item}))
        assert hidden.startswith(
            f"Screenshot of {item} on tab {tab} failed: element {item} is not visible (hidden, collapsed or "
            "zero-sized): nothing of it is drawn."
        ), hidden
        assert f"browser_snapshot(tabId={tab})" in hidden and "busy" not in hidden, hidden


async def test_a_screenshot_of_an_element_left_of_the_page_says_nothing_of_it_is_drawn(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Text for screen readers only, put where no scroll reaches: the capture showed whatever the
    # page has at its edge (a blue background), as if it were the link.
    site.set_content(
        "/skip",
        '<title>Skip</title><body style="background: blue"><a href="#main" '
        'style="position: absolute; left: -9999px">Skip to content</a><h1 id=main>Main</h1></body>',
    )
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/skip"))
        skip = ref_of(await snapshot(mcp, tab), 'link "Skip to content"')
        refused = error(await mcp.call_tool("browser_screenshot", {"ref": skip}))
        assert refused.startswith(
            f"Screenshot of {skip} on tab {tab} failed: element {skip} lies outside the page (its box is at x=-9999,"
        ), refused
        assert (
            f"Read its text in a snapshot of tab {tab}, or take the viewport or another element." in refused
        )
        ok(
            await mcp.call_tool(
                "browser_screenshot", {"ref": ref_of(await snapshot(mcp, tab), 'heading "Main"')}
            )
        )


# -- arguments ---------------------------------------------------------------------------------------


async def test_the_tools_take_the_arguments_of_the_spec(connect: Callable[..., Client]) -> None:
    expected = {
        "browser_click": {"ref", "tabId", "button", "modifiers", "doubleClick", "followNewTab"},
        "browser_type": {"ref", "tabId", "text", "submit"},
        "browser_press_key": {"ref", "tabId", "key"},
        "browser_select_option": {"ref", "tabId", "values"},
        "browser_hover": {"ref", "tabId"},
        "browser_wait_for": {"tabId", "text", "textGone", "time"},
        "browser_handle_dialog": {"tabId", "accept", "promptText"},
        "browser_screenshot": {"tabId", "fullPage", "ref"},
        "browser_evaluate": {"function", "tabId"},
    }
    async with connect() as mcp:
        tools = {tool.name: tool for tool in (await mcp.list_tools()).tools}
        for name, arguments in expected.items():
            assert arguments <= set(tools[name].input_schema["properties"]), name


async def test_invalid_arguments_name_the_argument(connect: Callable[..., Client], site: LocalSite) -> None:
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        button = ref_of(await snapshot(mcp, tab), "Say hi")

        bad_button = error(await mcp.call_tool("browser_click", {"ref": button, "button": "side"}))
        assert "'button'" in bad_button and "'side'" in bad_button

        no_values = error(await mcp.call_tool("browser_select_option", {"ref": button, "values": []}))
        assert "'values'" in no_values

        too_long = error(await mcp.call_tool("browser_wait_for", {"time": 999}))
        assert "'time'" in too_long

        missing = error(await mcp.call_tool("browser_type", {"ref": button}))
        assert "'text'" in missing

        unknown = error(await mcp.call_tool("browser_click", {"ref": button, "tab": tab}))
        assert "'tab'" in unknown and "tabId" in unknown

        malformed = error(await mcp.call_tool("browser_click", {"ref": "button-1"}))
        assert "button-1" in malformed

        # A value no branch of a form field's value takes is one line, named by its field, as a
        # tab id is (each branch had a line of its own: 'fields.0.value.str', '...bool', '...list[str]').
        number = error(
            await mcp.call_tool("browser_fill_form", {"fields": [{"ref": button, "value": 7}, {}]})
        )
        assert number.splitlines()[1:] == [
            "- argument 'fields.0.value': Input should be a valid string or a valid boolean or a valid list (got 7)",
            "- argument 'fields.1.ref': Field required",
            "- argument 'fields.1.value': Field required",
            "Fix them and call again.",
        ], number
        half = error(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": 2.5}))
        assert "- argument 'tabId': Input should be a valid integer or a valid string (got 2.5)" in half, half


async def test_an_unknown_tab_id_lists_the_open_tabs(connect: Callable[..., Client], site: LocalSite) -> None:
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        for tool, arguments in (
            ("browser_screenshot", {}),
            ("browser_wait_for", {"time": 0}),
            ("browser_press_key", {"key": "Enter"}),
            ("browser_evaluate", {"function": "() => 1"}),
            ("browser_handle_dialog", {"accept": True}),
        ):
            message = error(await mcp.call_tool(tool, {**arguments, "tabId": 9999}))
            assert "Tab 9999 not found" in message, tool
            assert "Open tabs" in message and f"{tab}" in message and site.url("/page/a") in message, tool

        unknown_ref_tab = error(await mcp.call_tool("browser_click", {"ref": "9999e1"}))
        assert "Tab 9999 not found" in unknown_ref_tab and "Open tabs" in unknown_ref_tab


# -- input that cannot work fails at once, with the reason -----------------------------------------


async def test_fields_that_cannot_take_input_fail_at_once_with_the_reason(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/fields",
        '<select aria-label="Fruit"><option value="a">Apple</option><option>Pear</option></select>'
        '<input disabled aria-label="Off" value="x"><input readonly aria-label="Fixed">'
        '<fieldset disabled><input aria-label="Inside"></fieldset><input aria-label="Free">',
    )
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/fields"))
        snap = await snapshot(mcp, tab)
        fruit, off, fixed, inside, free = (
            ref_of(snap, f'"{name}"') for name in ("Fruit", "Off", "Fixed", "Inside", "Free")
        )
        missing = error(await mcp.call_tool("browser_select_option", {"ref": fruit, "values": ["Plum"]}))
        assert f"element {fruit} has no option 'Plum' (its options: 'Apple', 'Pear')" in missing
        for ref, says in (
            (off, "is disabled."),
            (fixed, "is read-only (not editable)."),
            (inside, "is disabled."),
        ):
            failed = error(await mcp.call_tool("browser_type", {"ref": ref, "text": "hi"}))
            assert f"element {ref} {says}" in failed and "waited" not in failed, failed
        # A disabled element may be enabled by the page later: the advice says how to wait for it,
        # for a click (after a moment) as for typing.
        for tool, given in (("browser_type", {"text": "hi"}), ("browser_click", {})):
            failed = error(await mcp.call_tool(tool, {"ref": off, **given}))
            assert (
                "If the page enables it later (once a load ends, or other fields are filled in), wait for "
                f"that (browser_wait_for(tabId={tab}, text=...) for what the page shows then), then retry; "
                f"else call browser_snapshot(tabId={tab}) again"
            ) in failed, failed
        ok(await mcp.call_tool("browser_select_option", {"ref": fruit, "values": ["Apple"]}))
        ok(await mcp.call_tool("browser_type", {"ref": free, "text": "hi"}))


async def test_a_disabled_option_is_refused_at_once_naming_the_options_that_can_be_chosen(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Playwright waits its whole timeout for a disabled option to become enabled: the answer was
    # "did not finish (waited 5 s). The page may be busy or still loading".
    site.set_content(
        "/sizes",
        '<select aria-label="Size"><option value="s">Small</option><option value="l" disabled>Large</option>'
        '<optgroup label="Sold out" disabled><option value="xl">Huge</option></optgroup></select>'
        '<select multiple aria-label="Extras"><option>Bag</option><option disabled>Box</option></select>',
    )
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/sizes"))
        snap = await snapshot(mcp, tab)
        size, extras = ref_of(snap, 'combobox "Size"'), ref_of(snap, 'listbox "Extras"')
        for tool, arguments, option, enabled in (
            ("browser_select_option", {"ref": size, "values": ["Large"]}, "Large", "'Small'"),
            ("browser_select_option", {"ref": size, "values": ["xl"]}, "Huge", "'Small'"),
            ("browser_select_option", {"ref": extras, "values": ["Bag", "Box"]}, "Box", "'Bag'"),
            ("browser_fill_form", {"fields": [{"ref": size, "value": "l"}]}, "Large", "'Small'"),
        ):
            refused = error(await mcp.call_tool(tool, arguments))
            ref = arguments.get("ref", size)
            assert f"element {ref} cannot take option {option!r}: the option is disabled" in refused, refused
            assert f"Choose one of its enabled options ({enabled})" in refused, refused
            assert "waited" not in refused, refused
        value = "() => [...document.querySelectorAll('option')].filter(o => o.selected).map(o => o.value)"
        assert result_of(ok(await mcp.call_tool("browser_evaluate", {"function": value})))["value"] == ["s"]
        ok(await mcp.call_tool("browser_select_option", {"ref": extras, "values": ["Bag"]}))


async def test_tab_ids_are_plain_integers_and_long_urls_are_cut(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        refused = error(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": True}))
        assert "argument 'tabId': Input should be a valid integer or a valid string (got true)" in refused
        # A whole number sent as 2.0 is an integer to JSON Schema (and some clients send every
        # number so): it names the tab, in every set; 2.5 names none.
        assert f"Snapshot of tab {tab}." in section(
            ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": float(tab)})), "Result"
        )
        refused = error(await mcp.call_tool("browser_snapshot", {"tabId": tab + 0.5}))
        assert (
            f"argument 'tabId': Input should be a valid integer or a valid string (got {tab + 0.5})"
            in refused
        )
        for lookalike in ("١", "¹"):
            failed = error(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": lookalike}))
            assert "Tab ids are written with the digits 0-9" in failed and f"tab {tab}:" in failed
        # A huge number of digits: Python's "Exceeds the limit (4300 digits)", and the id echoed whole.
        for tool, args in (("browser_snapshot", {"full": True}), ("browser_observe", {"what": "logs"})):
            huge = error(await mcp.call_tool(tool, {**args, "tabId": "9" * 5000}))
            assert "not found. No tab has an id that large." in huge and f"tab {tab}:" in huge
            assert "(5000 characters)" in huge and len(huge) < 1_000, huge
        long_url = site.url("/page/a#") + "q" * 200_000
        went = ok(await mcp.call_tool("browser_navigate", {"url": long_url, "tabId": tab}))
        listed = ok(await mcp.call_tool("browser_tabs", {"action": "list"}))
        for result in (went, listed):
            assert len(text(result)) < 5_000 and "more]" in text(result)
            assert len(str(result.structured_content)) < 20_000


async def test_a_page_that_opens_dialogs_in_a_loop_gets_each_answered_and_the_next_reported(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/loop", "<button onclick=\"let n = 0; for (;;) alert('again ' + ++n)\">Go</button>")
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/loop"))
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(await snapshot(mcp, tab), "Go")}))
        for n in (1, 2, 3):
            answered = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True}))
            assert f"Accepted the alert dialog 'again {n}'" in section(answered, "Result")
            assert f"shows an alert dialog: 'again {n + 1}'" in section(answered, "Events")
            # The page section says why there is no snapshot; it did not wait for one.
            assert "shows a dialog" in section(answered, "Snapshot"), text(answered)
        # Other tabs work meanwhile.
        other = await open_tab(mcp, site.url("/page/a"))
        assert "Page a" in await snapshot(mcp, other)


async def test_concurrent_calls_each_report_only_their_own_effects(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        home = await start_on(mcp, site.url("/"))
        snap = await snapshot(mcp, home)
        say_hi_page = await open_tab(mcp, site.url("/page/b"))
        say_hi = ref_of(await snapshot(mcp, say_hi_page), "Say hi")
        popup_button = ref_of(snap, "Open popup")
        for _ in range(3):
            quiet, popup, new = await asyncio.gather(
                mcp.call_tool("browser_click", {"ref": say_hi}),
                mcp.call_tool("browser_click", {"ref": popup_button}),
                mcp.call_tool(
                    "browser_tabs", {"action": "new", "url": site.url("/page/a"), "background": True}
                ),
            )
            new_id = data(ok(new))["result"]["tabId"]
            popup_ids = data(ok(popup))["result"]["openedTabIds"]
            assert len(popup_ids) == 1 and new_id not in popup_ids, text(popup)
            assert f"It opened tab {popup_ids[0]}" in section(popup, "Result")
            assert data(ok(quiet))["result"]["openedTabIds"] == []
            assert "It opened" not in section(quiet, "Result")
            ok(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": popup_ids[0]}))


BUTTONS = "<title>Buttons</title><script>window.hits = []</script>" + "".join(
    f'<button onclick="hits.push({n})">B{n}</button>' for n in range(8)
)


async def hits(mcp: Client, tab: int) -> Any:
    return result_of(await mcp.call_tool("browser_evaluate", {"function": "() => hits", "tabId": tab}))[
        "value"
    ]


async def test_parallel_clicks_on_one_tab_each_reach_their_button_in_the_order_they_were_called(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # One pointer per page: clicks at once moved it under each other, and most landed elsewhere.
    site.set_content("/buttons", BUTTONS)
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/buttons"))
        other = await open_tab(mcp, site.url("/buttons"))
        mine, theirs = await snapshot(mcp, tab), await snapshot(mcp, other)
        clicked = await asyncio.gather(
            *(mcp.call_tool("browser_click", {"ref": ref_of(mine, f"B{n}")}) for n in range(8)),
            *(mcp.call_tool("browser_click", {"ref": ref_of(theirs, f"B{n}")}) for n in (5, 6)),
        )
        for result in clicked:
            ok(result)
        assert await hits(mcp, tab) == list(range(8))
        assert await hits(mcp, other) == [5, 6]


async def test_parallel_typing_into_two_fields_of_one_tab_puts_each_text_in_its_field(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    values = "() => [document.getElementById('name').value, document.getElementById('message').value]"
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/form"))
        for slowly in (False, True):
            snap = await snapshot(mcp, tab)
            name, message = ref_of(snap, 'textbox "Name"'), ref_of(snap, 'textbox "Message"')
            typed = await asyncio.gather(
                mcp.call_tool("browser_type", {"ref": name, "text": f"Ada {slowly}", "slowly": slowly}),
                mcp.call_tool("browser_type", {"ref": message, "text": f"Hi {slowly}", "slowly": slowly}),
                mcp.call_tool("browser_press_key", {"key": "End", "ref": name}),
            )
            for result in typed:
                ok(result)
            found = result_of(await mcp.call_tool("browser_evaluate", {"function": values}))["value"]
            assert found == [f"Ada {slowly}", f"Hi {slowly}"]


async def test_actions_waiting_behind_one_that_raised_a_dialog_are_refused_and_work_once_it_is_handled(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/alerting", BUTTONS + "<button onclick=\"alert('stop')\">Alert</button>")
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/alerting"))
        snap = await snapshot(mcp, tab)
        raised, *waiting = await asyncio.gather(
            mcp.call_tool("browser_click", {"ref": ref_of(snap, "Alert")}),
            mcp.call_tool("browser_click", {"ref": ref_of(snap, "B1")}),
            mcp.call_tool("browser_hover", {"ref": ref_of(snap, "B2")}),
        )
        assert f"It opened an alert dialog on tab {tab}: 'stop'" in section(ok(raised), "Result")
        for result in waiting:
            assert f"Tab {tab} has an open alert dialog" in error(result)
        ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "B1")}))
        assert await hits(mcp, tab) == [1]


async def test_a_click_whose_page_another_calls_script_stops_with_a_dialog_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A click checking its ref while another call's script opened an alert waited 5 s, then called
    # the tab "not responding" and advised closing it: a healthy tab, stopped by a dialog.
    site.set_content("/buttons", BUTTONS)
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/buttons"))
        for _round in range(4):
            snap = await snapshot(mcp, tab)
            raised, clicked = await asyncio.gather(
                mcp.call_tool(
                    "browser_evaluate", {"function": "() => { alert('E'); return 1; }", "tabId": tab}
                ),
                mcp.call_tool("browser_click", {"ref": ref_of(snap, "B1")}),
            )
            assert re.search(  # "While it ran, ..." when the click was at work on the tab too
                rf"(It opened an|While it ran, an) alert dialog (opened )?on tab {tab}: 'E'",
                section(ok(raised), "Result"),
            ), text(raised)
            if clicked.is_error:  # else it clicked before the alert: the two calls run at once
                said = error(clicked)
                assert said.startswith(f"Tab {tab} has an open alert dialog ('E'). Handle it first"), said
            ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))


async def test_actions_waiting_for_their_turn_on_a_tab_that_closes_fail_saying_it_closed(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    # The first click waits for a covered button (up to the action timeout); the others queue behind it.
    site.set_content(
        "/covered",
        BUTTONS + '<div style="position:fixed;inset:0;background:white">Cover</div>',
    )
    async with Client(make_server(browser=BrowserOptions(timeout_action=60))) as mcp:
        await start_on(mcp, site.url("/page/a"))
        tab = await open_tab(mcp, site.url("/covered"))
        snap = await snapshot(mcp, tab)

        async def close_soon() -> CallToolResult:
            await asyncio.sleep(0.5)
            return await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab})

        *clicks, closed = await asyncio.gather(
            *(mcp.call_tool("browser_click", {"ref": ref_of(snap, f"B{n}")}) for n in range(3)),
            close_soon(),
        )
        ok(closed)
        first, *waiting = (error(result) for result in clicks)
        assert f"Clicking {ref_of(snap, 'B0')} on tab {tab} failed: tab {tab} closed" in first
        for failed in waiting:
            assert f"Tab {tab} not found. It was closed by a call to tabpilot." in failed


async def test_a_call_whose_tab_another_call_closes_fails(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        await start_on(mcp, site.url("/page/a"))
        victim = await open_tab(mcp, site.url("/page/b"))
        slow = "() => new Promise(resolve => setTimeout(() => resolve(42), 1000))"
        evaluated, closed = await asyncio.gather(
            mcp.call_tool("browser_evaluate", {"function": slow, "tabId": victim}),
            mcp.call_tool("browser_tabs", {"action": "close", "tabId": victim}),
        )
        ok(closed)
        assert f"tab {victim} closed" in error(evaluated)
        assert "42" not in text(evaluated)


async def test_a_cancelled_slow_typing_stops_typing(connect: Callable[..., Client], site: LocalSite) -> None:
    site.set_content("/box", '<input aria-label="Box">')
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/box"))
        box = ref_of(await snapshot(mcp, tab), "Box")
        too_long = error(
            await mcp.call_tool("browser_type", {"ref": box, "text": "x" * 2001, "slowly": True})
        )
        assert "at most 2000 can be typed key by key" in too_long
        with anyio.move_on_after(0.5):  # the client gives up: the SDK sends notifications/cancelled
            await mcp.call_tool("browser_type", {"ref": box, "text": "y" * 2000, "slowly": True})
        value = "() => document.querySelector('input').value.length"
        typed = data(ok(await mcp.call_tool("browser_evaluate", {"function": value, "tabId": tab})))["result"]
        await asyncio.sleep(1)
        later = data(ok(await mcp.call_tool("browser_evaluate", {"function": value, "tabId": tab})))["result"]
        assert typed["value"] < 2000 and later["value"] == typed["value"], (typed, later)


async def test_a_stuck_tab_is_named_as_not_responding_and_other_tabs_keep_working(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    site.set_content(
        "/stuck",
        "<button onclick='setTimeout(() => { for (;;) {} }, 500)'>Hang</button><button>Other</button>",
    )
    async with Client(make_server(browser=BrowserOptions(timeout_action=1, timeout_navigation=3))) as mcp:
        tab = await start_on(mcp, site.url("/stuck"))
        snap = await snapshot(mcp, tab)
        # The loop starts after the click has been answered: the click itself is not held up.
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "Hang")}))
        await poll(
            lambda: mcp.call_tool("browser_evaluate", {"function": "() => 1", "tabId": tab}),
            lambda result: result.is_error,
            timeout=10,
        )
        for tool, args in (
            ("browser_snapshot", {}),
            ("browser_evaluate", {"function": "() => 1"}),
            # A ref whose check the page does not answer is not a ref whose element went away.
            ("browser_click", {"ref": ref_of(snap, "Other")}),
            # A load the page holds up: it said "the server has not sent the page yet".
            ("browser_navigate", {"url": site.url("/page/b")}),
        ):
            failed = error(await mcp.call_tool(tool, {**args, "tabId": tab}))
            assert f"tab {tab} is not responding" in failed, failed
            # A long task ends by itself: reading the tab again comes before closing it (and its page).
            assert (
                f"Read it again with browser_snapshot(tabId={tab}) in a while: a long task ends by itself. If it "
                f"still does not answer, close it with browser_tabs(action='close', tabId={tab})"
            ) in failed, failed
            assert "no longer matches" not in failed
        other = await open_tab(mcp, site.url("/page/a"))
        assert "Page a" in await snapshot(mcp, other)
        ok(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab}))


async def test_a_popup_stuck_in_a_script_is_named_when_its_opener_stops_answering_too(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    # A page and the popups of its site it opened share one thread: the popup's endless loop
    # stopped its opener too, and the opener's answer said "tab 1 is not responding (a script on
    # it ...). Close it", naming neither the popup nor that closing the opener would not help it.
    # Which of the two runs the loop nothing tells (both stop answering): both are named.
    site.set_content("/self-spinner", "<script>setTimeout(() => { for (;;) {} }, 300)</script>")
    site.set_content("/family", "<button onclick=\"window.open('/self-spinner')\">Open</button>")
    async with Client(make_server(browser=BrowserOptions(timeout_action=1))) as mcp:
        tab = await start_on(mcp, site.url("/family"))
        popup = data(
            ok(await mcp.call_tool("browser_click", {"ref": ref_of(await snapshot(mcp, tab), "Open")}))
        )["result"]["openedTabIds"][0]
        await poll(
            lambda: mcp.call_tool("browser_evaluate", {"function": "() => 1", "tabId": popup}),
            lambda result: result.is_error,
            timeout=10,
        )
        for held, mate in ((tab, popup), (popup, tab)):
            said = error(await mcp.call_tool("browser_snapshot", {"tabId": held}))
            assert (
                f"tab {held} is not responding: a script on it keeps it busy (a long task, perhaps one an action "
                f"started, or an endless loop). The script may be its own or one of tab {mate}: their pages run "
                "on the same thread" in said
            ), said
            assert (
                f"Close browser_tabs(action='close', tabId={mate}) first, then browser_tabs(action='close', "
                f"tabId={held}) if tab {held} still does not answer" in said
            ), said


async def test_a_download_the_page_being_left_starts_leaves_the_tab_loading_not_stuck(
    make_server: Callable[..., Any], site: LocalSite, tmp_path: Path
) -> None:
    # The page makes a file (a blob) while the next page is on its way: the download was taken
    # for that navigation's end, and the next call read "tab 1 is not responding (a script on it
    # keeps it busy, e.g. an endless loop). Close it", the wrong advice.
    slow = site.url("/api/slow?ms=8000")
    site.set_content(
        "/leaving",
        f"""<title>Leaving</title><button onclick="go()">Go</button><button>Other</button>
        <script>function go() {{
          location.href = {slow!r};
          setTimeout(() => {{
            const a = Object.assign(document.createElement('a'),
              {{download: 'made.txt', href: URL.createObjectURL(new Blob(['made']))}});
            document.body.append(a); a.click();
          }}, 300);
        }}</script>""",
    )
    options = BrowserOptions(timeout_action=1, downloads_dir=str(tmp_path))
    async with Client(make_server(browser=options)) as mcp:
        tab = await start_on(mcp, site.url("/leaving"))
        snap = data(ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})))["snapshot"]
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "Go")}))
        await wait_until(lambda: (tmp_path / "made.txt").exists())
        clicked = error(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "Other")}))
        assert f"Tab {tab} is loading {slow}, whose server has not sent it yet" in clicked, clicked
        assert "not responding" not in clicked


async def test_a_page_whose_server_has_not_answered_yet_is_loading_not_stuck(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    # Until a navigation's document arrives, the browser holds back every message to the page: a
    # check of whether a script blocks it would wait too. Only a page that arrived can be stuck.
    site.set_content("/spin", "<title>Spin</title><script>for (;;) {}</script>")
    options = BrowserOptions(timeout_navigation=1, timeout_action=1)
    async with Client(make_server(browser=options)) as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        snap = data(ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})))["snapshot"]
        button = ref_of(snap, "button")
        slow = site.url("/api/slow?ms=20000")
        # The navigation is done; the page is on its way (as after a click or a new tab).
        navigated = ok(await mcp.call_tool("browser_navigate", {"url": slow, "tabId": tab}))
        assert section(navigated, "Result") == (
            f"Tab {tab} is loading {slow}; its server has not sent it yet. Take a snapshot of tab {tab} in a while."
        )
        assert data(navigated)["result"] == {"tabId": tab, "url": slow, "status": None, "loading": slow}
        assert section(navigated, "Snapshot") == ""  # a snapshot would wait for the page as long again
        assert "not responding" not in text(navigated) and "script" not in text(navigated)
        snapped = error(await mcp.call_tool("browser_snapshot", {"tabId": tab}))
        assert f"Taking a snapshot of tab {tab} cannot begin yet: tab {tab} is loading {slow}" in snapped
        assert "not responding" not in snapped and "script" not in snapped
        # A ref of the page before cannot be checked either: said so at once, not called stale.
        clicked = error(await mcp.call_tool("browser_click", {"ref": button}))
        assert (
            f"Tab {tab} is loading {slow}, whose server has not sent it yet: ref {button} is on the page"
            in clicked
        )
        assert "no longer matches" not in clicked

        spinning = await open_tab(mcp, site.url("/page/b"))
        stuck = error(await mcp.call_tool("browser_navigate", {"url": site.url("/spin"), "tabId": spinning}))
        assert f"tab {spinning} is not responding: a script on it keeps it busy" in stuck
        ok(await mcp.call_tool("browser_tabs", {"action": "close", "tabId": spinning}))


async def test_a_click_that_loads_a_slow_page_is_done_and_says_the_page_is_on_its_way(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    # Playwright's click waits for the document a link asks for; a slow server ran the click out
    # of time, and the tab was then called stuck in a script. The click was given: say so.
    slow = site.url("/api/slow?ms=3000")
    site.set_content(
        "/links",
        f'<title>Links</title><a href="{slow}">slow page</a> <a href="/api/status/204">empty answer</a> '
        '<input aria-label="name">',
    )
    options = BrowserOptions(timeout_navigation=1, timeout_action=1)
    async with Client(make_server(browser=options)) as mcp:
        tab = await start_on(mcp, site.url("/links"))
        snap = await snapshot(mcp, tab)
        # A link answered with no document (HTTP 204) leaves the page as it was, and usable.
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "empty answer")}))
        typed = ok(await mcp.call_tool("browser_type", {"ref": ref_of(snap, "name"), "text": "still here"}))
        assert "loading" not in text(typed)
        listed = ok(await mcp.call_tool("browser_tabs", {"action": "list"}))
        assert "loading" not in tab_line(listed, tab)

        clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "slow page")}))
        said = section(clicked, "Result")
        assert f"Clicked {ref_of(snap, 'slow page')} on tab {tab}. It made tab {tab} load {slow}" in said
        assert "not responding" not in text(clicked) and "did not finish" not in text(clicked)
        assert data(clicked)["result"]["loading"] == slow
        assert section(clicked, "Snapshot") == ""  # a snapshot would wait for the page as long again
        listed = ok(await mcp.call_tool("browser_tabs", {"action": "list"}))
        assert "loading" in tab_line(listed, tab)  # as the browser's tab strip shows it
        # Meanwhile the page answers nothing: a ref of the page it leaves fails at once, saying why.
        stale = error(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "name")}))
        assert f"Tab {tab} is loading {slow}, whose server has not sent it yet" in stale
        assert "in a while" in stale and "retry" not in stale  # a snapshot now would wait for it too

        arrived = await poll(lambda: snapshot_text(mcp, tab), lambda snap: "slow 3000" in snap, timeout=10)
        assert "slow 3000" in arrived


async def test_a_selection_that_loads_a_page_answers_with_that_page(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Playwright's select does not wait for the page it makes the tab load (300 ms): the answer does.
    site.set_content(
        "/chooser",
        """<title>Chooser</title><select aria-label="Go" onchange="location.href='/api/slow?ms='+this.value">
        <option>here</option><option value="300">there</option></select>""",
    )
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/chooser"))
        selected = ok(
            await mcp.call_tool(
                "browser_select_option", {"ref": ref_of(await snapshot(mcp, tab), "Go"), "values": ["300"]}
            )
        )
        assert "slow 300" in section(selected, "Snapshot"), text(selected)
        assert "loading" not in section(selected, "Result")


async def snapshot_text(mcp: Client, tab_id: int) -> str:
    result = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab_id})
    return text(result)


async def test_leaving_a_page_that_asks_first_waits_for_the_answer_and_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await open_tab(mcp, site.url("/beforeunload"))
        snap = data(ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})))["snapshot"]
        # Chromium asks only once the user did something on the page.
        ok(await mcp.call_tool("browser_type", {"ref": ref_of(snap, "textbox"), "text": "draft"}))

        held = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a"), "tabId": tab}))
        assert section(held, "Result") == (
            f"Tab {tab} has not left its page: the page asks first (a beforeunload dialog). Accept the dialog "
            "to go on to the new page, or dismiss it to stay."
        )
        # The browser started the navigation (the tab is loading) and holds it until the page's answer.
        assert tab_line(held, tab).endswith(
            "[loading, beforeunload dialog open (the page asks before it is left)]"
        )
        assert f"tab {tab} shows a beforeunload dialog (the page asks before it is left)" in section(
            held, "Events"
        )
        # Work the dialog holds up says so in the same words (it quoted the empty message: ('')).
        refused = await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})
        assert (f"Tab {tab} has an open beforeunload dialog (the page asks before it is left).") in section(
            refused, "Error"
        ), text(refused)

        stayed = ok(await mcp.call_tool("browser_handle_dialog", {"accept": False, "tabId": tab}))
        assert section(stayed, "Result") == (
            f"Dismissed the beforeunload dialog (the page asks before it is left) on tab {tab}."
        )
        assert site.url("/beforeunload") in tab_line(stayed, tab) or site.url("/beforeunload") in section(
            stayed, "Page"
        )
        listed = ok(await mcp.call_tool("browser_tabs", {"action": "list"}))
        assert "loading" not in tab_line(listed, tab)  # it stays, and the page answers again
        ok(await mcp.call_tool("browser_type", {"ref": ref_of(snap, "textbox"), "text": "more"}))

        # Accepting lets the page go: the answer comes once the next page (a slow one) has loaded.
        slow = site.url("/api/slow?ms=400")
        ok(await mcp.call_tool("browser_navigate", {"url": slow, "tabId": tab}))
        left = ok(await mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab}))
        assert slow in tab_line(left, tab) or slow in section(left, "Page"), text(left)
        assert "slow 400" in section(left, "Snapshot"), text(left)

        # The next page opens an alert as it loads, which holds its load up: the answer comes with
        # that dialog (it waited the whole navigation timeout, 30 s, for a load the alert held up).
        site.set_content("/alert-on-load", "<title>Alerts</title><script>alert('loaded?')</script>")
        back = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/beforeunload"), "tabId": tab}))
        ok(await mcp.call_tool("browser_type", {"ref": ref_of(text(back), "textbox"), "text": "again"}))
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/alert-on-load"), "tabId": tab}))
        accepting = mcp.call_tool("browser_handle_dialog", {"accept": True, "tabId": tab})
        alerted = ok(await asyncio.wait_for(accepting, 10))
        assert f"tab {tab} shows an alert dialog: 'loaded?'" in section(alerted, "Events"), text(alerted)


async def test_a_navigation_whose_tab_another_call_moved_on_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Two calls on one tab at once: the first answered with the second one's page as its own.
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        slow = site.url("/api/slow?ms=500")
        first = asyncio.ensure_future(mcp.call_tool("browser_navigate", {"url": slow, "tabId": tab}))
        await asyncio.sleep(0.1)  # the first has the tab's turn
        second = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/b"), "tabId": tab}))
        moved = section(ok(await first), "Result")
        assert moved.startswith(
            f"Navigated tab {tab}. Another call has acted on tab {tab} since (this one "
        ), moved
        assert "/api/slow?ms=500): what follows is the tab as it is now." in moved
        assert section(second, "Result") == f"Navigated tab {tab}."
        # Alone, a navigation says nothing of the kind.
        alone = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a"), "tabId": tab}))
        assert section(alone, "Result") == f"Navigated tab {tab}."


async def test_a_call_refused_before_it_acted_is_not_said_to_have_acted_on_a_navigated_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A click queued behind a navigation, refused for its stale ref when its turn came, made the
    # navigation say "Another call has acted on tab 1 since": it had done nothing.
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/page/a"))
        button = ref_of(await snapshot(mcp, tab), "Say hi")
        slow = site.url("/api/slow?ms=500")
        going = asyncio.ensure_future(mcp.call_tool("browser_navigate", {"url": slow, "tabId": tab}))
        await asyncio.sleep(0.1)  # the navigation has the tab's turn
        stale = error(await mcp.call_tool("browser_click", {"ref": button}))
        assert f"Ref {button} was of an earlier page of tab {tab}" in stale, stale
        assert section(ok(await going), "Result") == f"Navigated tab {tab}."


async def test_a_tab_that_opens_while_two_calls_work_on_its_opener_is_told_as_either_ones(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A script and a click at work on one tab were each told "It opened tab N": the script had
    # opened nothing, and "use tabId=N" named the click's tab to it.
    site.set_content("/opens", "<title>A</title><button onclick=\"window.open('/page/b')\">open</button>")
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/opens"))
        button = ref_of(
            section(ok(await mcp.call_tool("browser_snapshot", {"full": True})), "Snapshot"), "open"
        )
        sleeping = {"function": "() => new Promise(r => setTimeout(() => r('slept'), 1500))", "tabId": tab}
        evaluated, clicked = await asyncio.gather(
            mcp.call_tool("browser_evaluate", sleeping),
            mcp.call_tool("browser_click", {"ref": button}),
        )
        (opened,) = data(ok(clicked))["result"]["openedTabIds"]
        for result in (evaluated, clicked):
            said = section(ok(result), "Result")
            assert f"It opened tab {opened}" not in said, said
            assert (
                f"Tab {opened} opened while it ran, not as the active tab (use tabId={opened}); another call was "
                f"at work on tab {tab} too, and either may have opened it."
            ) in said, said
            assert data(result)["result"]["openedShared"] == [opened]


async def test_a_middle_click_beside_a_read_on_another_tab_reports_its_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A tab opened with no opener (a middle or modifier click's) was credited only when the click
    # was the only call under way: beside a wait on another tab it was "opened (external)".
    site.set_content("/links", "<title>L</title><a href='/page/c'>plain link</a>")
    async with connect() as mcp:
        tab = await start_on(mcp, site.url("/links"))
        other = await open_tab(mcp, site.url("/page/a"))
        link = ref_of(
            section(ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab})), "Snapshot"),
            "plain link",
        )
        for how in ({"button": "middle"}, {"modifiers": ["Control"]}):

            async def click(how: dict[str, Any] = how) -> CallToolResult:
                await asyncio.sleep(0.3)
                return await mcp.call_tool("browser_click", {"ref": link, **how})

            _, clicked = await asyncio.gather(
                mcp.call_tool("browser_wait_for", {"time": 2, "tabId": other}), click()
            )
            (opened,) = data(ok(clicked))["result"]["openedTabIds"]
            assert f"It opened tab {opened}, which did not become the active tab" in section(
                clicked, "Result"
            )
            assert (
                f"- tab {opened} opened (link) by tab {tab}: {site.url('/page/c')}"
                in section(clicked, "Events").splitlines()
            )


async def test_a_script_whose_tab_closes_itself_before_it_returns_says_there_is_no_result(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # It answered "Result: null" as if the script had returned, and that the tab "closed itself
    # afterwards" (not an error: a sign-in popup's own script may end so, its job done).
    site.set_content("/opener", "<title>O</title><button onclick=\"window.open('/closes')\">pop</button>")
    site.set_content("/closes", "<title>P</title><script>setTimeout(() => window.close(), 1000)</script>")
    async with connect() as mcp:
        await start_on(mcp, site.url("/opener"))
        button = ref_of(
            section(ok(await mcp.call_tool("browser_snapshot", {"full": True})), "Snapshot"), "pop"
        )
        (popup,) = data(ok(await mcp.call_tool("browser_click", {"ref": button})))["result"]["openedTabIds"]
        waits = {"function": "() => new Promise(r => setTimeout(() => r(42), 3000))", "tabId": popup}
        said = ok(await mcp.call_tool("browser_evaluate", waits))
        assert section(said, "Result") == (
            f"The script ran on tab {popup}, which closed itself before the script returned: there is no result."
        ), section(said, "Result")
        assert data(said)["result"]["returned"] is False
