"""browser_snapshot and browser_navigate through a real MCP client, on background tabs too."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from mcp import Client
from mcp.types import CallToolResult
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse
from starlette.types import Receive, Scope, Send

from support import data, error, free_port, ok, poll, ref_of, result_of, section, tab_line, text
from tabpilot import BrowserOptions
from tabpilot.demo.site import LocalSite
from tabpilot.server.config import DEFAULT_MAX_SNAPSHOT_CHARS


async def _open(mcp: Client, url: str, *, background: bool = True) -> int:
    opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": url, "background": background})
    assert not opened.is_error, text(opened)
    tab_id: int = data(opened)["result"]["tabId"]
    return tab_id


async def test_a_background_tab_can_be_snapshotted_without_activating_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        first = data(await mcp.call_tool("browser_tabs", {"action": "list"}))["result"]["activeTabId"]
        background = await _open(mcp, site.url("/page/a"))

        result = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": background})

        assert not result.is_error, text(result)
        assert section(result, "Page") == f"tab {background}: Page a ({site.url('/page/a')})"
        snapshot = section(result, "Snapshot")
        assert 'heading "Page a"' in snapshot
        assert f"[ref={background}e" in snapshot
        # The tab list did not change since the new tab's response: its ids only, the active one marked.
        assert section(result, "Tabs") == f"2 open, as last listed: {first} (active), {background}"
        assert data(result)["activeTabId"] == first


async def test_a_snapshot_can_be_limited_to_a_subtree_or_a_depth(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        tab = await _open(mcp, site.url("/form"))
        whole = data(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab}))["snapshot"]
        combo_line = next(line for line in whole.splitlines() if "combobox" in line)
        combo_ref = combo_line.split("[ref=")[1].split("]")[0]

        subtree = await mcp.call_tool("browser_snapshot", {"full": True, "ref": combo_ref})
        assert not subtree.is_error, text(subtree)
        assert "combobox" in data(subtree)["snapshot"]
        assert "Subscribe" not in data(subtree)["snapshot"]
        # The refs the whole snapshot gave outside the subtree still work.
        subscribe = next(line for line in whole.splitlines() if 'checkbox "Subscribe"' in line)
        checked = await mcp.call_tool("browser_click", {"ref": subscribe.split("[ref=")[1].split("]")[0]})
        assert not checked.is_error, text(checked)
        assert 'checkbox "Subscribe" [checked]' in section(checked, "Snapshot")

        shallow = data(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab, "depth": 1}))[
            "snapshot"
        ]
        assert len(shallow.splitlines()) < len(whole.splitlines())
        assert "Subscribe" not in shallow
        # Below the depth, the refs given before still work.
        unchecked = await mcp.call_tool("browser_click", {"ref": subscribe.split("[ref=")[1].split("]")[0]})
        assert not unchecked.is_error, text(unchecked)
        assert 'checkbox "Subscribe" [checked]' not in section(unchecked, "Snapshot")
        # Its changes are counted from the whole tree the client has, not from the cut one: the
        # answer listed every line below the depth as new.
        changed = section(unchecked, "Snapshot")
        assert changed.startswith(f"Changes since the previous snapshot of tab {tab}:"), changed
        assert len(changed.splitlines()) < 8 and "combobox" not in changed, changed


async def test_a_ref_no_snapshot_gave_is_refused_by_the_name_it_was_sent_under(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # "e2" (another server's style; after the tab's first page its refs are 1f1e2, ...) was
    # refused as "Ref 1e2", a ref the agent never sent.
    async with connect() as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")}))
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/b")}))
        for sent, why in (
            ("e2", "was of an earlier page of tab 1"),
            ("1e99", "is not in the latest snapshot"),
        ):
            refused = await mcp.call_tool("browser_click", {"ref": sent})
            assert refused.is_error and f"Ref {sent} {why}" in text(refused), text(refused)


async def test_a_ref_of_a_page_that_moved_on_by_itself_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The page loads another by itself after its snapshot (here when another tab says so, as a
    # timer or a message would): its refs were said to be "not in the latest snapshot (the page
    # changed, or the ref was never issued)", as if the agent erred.
    site.set_content(
        "/moves",
        "<button>Stay</button><script>new BroadcastChannel('go').onmessage = () => "
        "location.assign('/page/b');</script>",
    )
    async with connect() as mcp:
        shown = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/moves")}))
        ref = ref_of(section(shown, "Snapshot"), 'button "Stay"')
        other = result_of(
            ok(await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")}))
        )
        go = "() => new BroadcastChannel('go').postMessage(1)"
        ok(await mcp.call_tool("browser_evaluate", {"function": go, "tabId": other["tabId"]}))

        def loaded(listed: CallToolResult) -> bool:  # not only on its way: its URL shows then
            tab = next(t for t in result_of(listed)["tabs"] if t["id"] == 1)
            return bool(tab["url"] == site.url("/page/b") and tab["status"] == "complete")

        await poll(lambda: mcp.call_tool("browser_tabs", {"action": "list"}), loaded)
        refused = await mcp.call_tool("browser_click", {"ref": ref})
        said = section(refused, "Error")
        assert refused.is_error and said.startswith(
            f"Ref {ref} was of an earlier page of tab 1: the tab has loaded another page since "
            f"({site.url('/page/b')} now)"
        ), said


async def test_a_snapshot_at_a_depth_cuts_its_iframes_there_too(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Playwright cuts the page's own tree at the depth and gives each iframe whole: depth=2 of a
    # page with an iframe had all of the iframe's tree.
    site.set_content("/inner", "<main><ul><li><button>Deep</button></li></ul></main>")
    site.set_content("/outer", f"<main><p>Top</p><iframe src='{site.url('/inner')}'></iframe></main>")
    async with connect() as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/outer")}))
        shallow = await poll(
            lambda: mcp.call_tool("browser_snapshot", {"full": True, "depth": 1}),
            lambda r: "iframe" in data(r)["snapshot"],
        )
        lines = data(shallow)["snapshot"].splitlines()
        assert [line.split(" [ref=")[0] for line in lines] == ["- main", "  - paragraph", "  - iframe"], lines
        whole = data(ok(await mcp.call_tool("browser_snapshot", {"full": True})))["snapshot"]
        assert 'button "Deep"' in whole


async def test_a_ref_of_another_tab_or_a_stale_ref_fails_at_once_saying_what_to_do(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        a = await _open(mcp, site.url("/page/a"))
        b = await _open(mcp, site.url("/page/b"))
        await mcp.call_tool("browser_snapshot", {"full": True, "tabId": a})

        foreign = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": b, "ref": f"{a}e1"})
        assert foreign.is_error
        assert f"belongs to tab {a}" in section(foreign, "Error")

        stale = await mcp.call_tool("browser_snapshot", {"full": True, "ref": f"{a}e999"})
        assert stale.is_error
        assert f"browser_snapshot(tabId={a})" in section(stale, "Error")


async def test_navigating_a_background_tab_shows_its_page_and_keeps_the_active_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        first = data(await mcp.call_tool("browser_tabs", {"action": "list"}))["result"]["activeTabId"]
        tab = await _open(mcp, site.url("/page/a"))

        result = await mcp.call_tool("browser_navigate", {"url": site.url("/page/b"), "tabId": tab})

        assert not result.is_error, text(result)
        assert section(result, "Result") == f"Navigated tab {tab}."
        assert section(result, "Page") == f"tab {tab}: Page b ({site.url('/page/b')})"
        assert 'heading "Page b"' in section(result, "Snapshot")
        assert data(result)["page"]["tabId"] == tab
        listed = data(await mcp.call_tool("browser_tabs", {"action": "list"}))["result"]
        assert listed["activeTabId"] == first

        back = await mcp.call_tool("browser_navigate", {"action": "back", "tabId": tab})
        assert site.url("/page/a") in section(back, "Page")

        reloaded = await mcp.call_tool("browser_navigate", {"action": "reload", "tabId": tab})
        assert 'heading "Page a"' in section(reloaded, "Snapshot")
        assert data(reloaded)["snapshot"]


async def test_going_back_without_history_says_so(connect: Callable[..., Client], site: LocalSite) -> None:
    async with connect() as mcp:
        result = await mcp.call_tool("browser_navigate", {"action": "back"})
        assert not result.is_error, text(result)
        # It says what happened, and does not claim it went back.
        assert section(result, "Result") == (
            "There is no page to go back to in tab 1's history; it stays on about:blank."
        ), section(result, "Result")
        # A tab opened on a URL, or a blank tab's first page, has no page before it: back went to
        # the blank page a new tab starts on, said as "Navigated back".
        opened = data(await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")}))
        tab = opened["result"]["tabId"]
        for which in (tab, 1):
            if which == 1:
                ok(await mcp.call_tool("browser_navigate", {"tabId": 1, "url": site.url("/page/b")}))
            back = ok(await mcp.call_tool("browser_navigate", {"tabId": which, "action": "back"}))
            page = "a" if which == tab else "b"
            assert section(back, "Result") == (
                f"There is no page to go back to in tab {which}'s history; it stays on {site.url(f'/page/{page}')}."
            ), section(back, "Result")


async def test_a_page_whose_image_never_comes_answers_usable_not_as_a_failed_load(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The document is there and usable; an image (a tracker, an ad) hangs, so the load event does
    # not come: the navigation waited the whole navigation timeout for it and failed, no snapshot.
    site.set_content(
        "/hanging-image",
        f"<title>Hanging image</title><h1>Ready to use</h1><img alt='' src='{site.url('/api/slow?ms=20000')}'>",
    )
    still = (
        "The page is shown before it finished loading: the browser is still loading something it asked "
        "for (an image, a script, a frame). It can be used now; what is still to come may change it."
    )
    async with connect(browser=BrowserOptions(timeout_navigation=3)) as mcp:
        tab = await _open(mcp, site.url("/page/a"))
        for action, said in (("goto", "Navigated"), ("reload", "Reloaded")):
            args = {"tabId": tab, "action": action} | (
                {"url": site.url("/hanging-image")} if action == "goto" else {}
            )
            loaded = ok(await mcp.call_tool("browser_navigate", args))
            assert section(loaded, "Result") == f"{said} tab {tab}. {still}", text(loaded)
            assert 'heading "Ready to use"' in section(loaded, "Snapshot")
            assert data(loaded)["result"]["url"] == site.url("/hanging-image")
        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/page/b")}))
        back = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "back"}))
        assert section(back, "Result") == f"Went back on tab {tab}. {still}", text(back)
        # A new tab on it too: opened, with its page, not "loading failed".
        opened = ok(await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/hanging-image")}))
        assert still in section(opened, "Result") and 'heading "Ready to use"' in section(opened, "Snapshot")
        # A page that loads whole says nothing of it.
        plain = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/page/c")}))
        assert section(plain, "Result") == f"Navigated tab {tab}."


def _order_route(site: LocalSite, *, no_store: bool = False) -> list[str]:
    """Serve /order, a form's target, for every method: each request is recorded as its method and
    body ("POST item=tea"), and answered "Order N placed" (`no_store`: kept by no cache). The list
    of requests, filled as they come."""
    orders: list[str] = []

    class Order:  # an ASGI app, not a function: Starlette routes every method to it
        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            request = Request(scope, receive)
            orders.append(f"{request.method} {(await request.body()).decode()}".strip())
            page = HTMLResponse(f"<title>Ordered</title><p>Order {len(orders)} placed</p>")
            if no_store:
                page.headers["Cache-Control"] = "no-store"
            await page(scope, receive, send)

    site.set_route("/order", Order())
    return orders


async def test_a_reload_of_a_page_a_form_posted_to_says_it_sent_the_form_again(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A browser asks its user before it sends a form again ("Confirm Form Resubmission"); the
    # reload an agent asks for sent it again unasked, and said only "Reloaded": an order twice.
    orders = _order_route(site)
    site.set_content(
        "/shop",
        "<title>Shop</title><form method=post action='/order'><input name=item value=tea><button>Buy</button></form>",
    )
    async with connect() as mcp:
        tab = await _open(mcp, site.url("/shop"))
        page = data(ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})))["snapshot"]
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(page, "Buy")}))
        assert orders == ["POST item=tea"]
        reloaded = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "reload"}))
        assert orders == ["POST item=tea", "POST item=tea"]
        assert section(reloaded, "Result") == (
            f"Reloaded tab {tab}. The reload sent the request that made this page again (POST "
            f"{site.url('/order')}), with the data of the form that was submitted: the server got it a second "
            "time, as if the form were submitted again."
        ), text(reloaded)
        assert "Order 2 placed" in section(reloaded, "Snapshot")
        # Back and forward show it from the browser's cache: nothing sent, nothing said.
        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/page/a")}))
        back = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "back"}))
        assert section(back, "Result") == f"Went back on tab {tab}." and len(orders) == 2
        # A page that a GET answered reloads as before.
        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/page/a")}))
        plain = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "reload"}))
        assert section(plain, "Result") == f"Reloaded tab {tab}."


async def test_going_back_to_a_form_answer_the_browser_kept_no_copy_of_says_why_not_to_check_the_url(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The browser does not send a form again to go back to its answer (Cache-Control: no-store):
    # it shows "Confirm Form Resubmission". The answer said "Check the URL", of a URL never given.
    orders = _order_route(site, no_store=True)
    site.set_content(
        "/shop", "<title>Shop</title><form method=post action='/order'><button>Buy</button></form>"
    )
    async with connect() as mcp:
        tab = await _open(mcp, site.url("/shop"))
        page = data(ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})))["snapshot"]
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(page, "Buy")}))
        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/page/a")}))
        back = error(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "back"}))
        assert back == (
            f"Going back on tab {tab} failed: net::ERR_CACHE_MISS: the page there is the answer to a form that "
            "was submitted (a POST), and the browser kept no copy of it; it does not send the form again unasked. "
            f"The tab shows the browser's error page for {site.url('/order')}. Reload it to send the form again "
            "(the server gets it a second time), or load another page."
        )
        assert orders == ["POST"]
        # Reloaded, it is sent again, and the answer says so.
        reloaded = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "reload"}))
        assert orders == ["POST", "POST"] and "The reload sent the request" in section(reloaded, "Result")
        assert "Order 2 placed" in section(reloaded, "Snapshot")


async def test_a_url_of_this_machine_without_its_scheme_loads_over_http_however_it_is_spelt(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # `Localhost:PORT` or `127.1:PORT` (a development server's address) got https:// and failed
    # on the TLS handshake; `//host/path` (as pages write links) was refused as naming no host.
    async with connect() as mcp:
        for typed, page in (
            (f"Localhost:{site.port}/page/a", "a"),
            (f"127.1:{site.port}/page/b", "b"),
            (f"//127.0.0.1:{site.port}/page/c", "c"),
        ):
            loaded = ok(await mcp.call_tool("browser_navigate", {"url": typed}))
            assert f'heading "Page {page}"' in section(loaded, "Snapshot"), text(loaded)
            assert data(loaded)["result"]["url"].startswith("http://"), text(loaded)


async def test_a_ref_of_an_iframes_earlier_page_never_names_an_element_of_its_next_page(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Playwright names an iframe's elements f1e1, f1e2... on each of its pages: once any response
    # had read the iframe's next page, the ref given for "Delete" clicked "Confirm purchase".
    # Same-origin and cross-origin (localhost is another origin than 127.0.0.1).
    log = "parent.postMessage(this.textContent, '*')"
    site.set_content("/fa", f'<button onclick="{log}">Keep</button><button onclick="{log}">Delete</button>')
    site.set_content(
        "/fb", f'<button onclick="{log}">Buy</button><button onclick="{log}">Confirm purchase</button>'
    )
    for origin in ("127.0.0.1", "localhost"):
        frame = site.url("/fa").replace("127.0.0.1", origin)
        site.set_content(
            "/top",
            f"""<iframe src="{frame}"></iframe><p id="log" role="status">nothing</p>
            <button onclick="document.querySelector('iframe').src = '{frame.replace("/fa", "/fb")}'">Next</button>
            <button onclick="document.body.append(document.createElement('iframe'))">Add</button>
            <script>addEventListener('message', (e) => {{ log.textContent = e.data + ' pressed'; }});</script>""",
        )
        async with connect() as mcp:
            went = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/top")}))
            snap = section(went, "Snapshot")
            delete = ref_of(snap, '"Delete"')
            # An iframe the page adds (an ad, a widget) leaves the refs of the others as they were.
            added = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, '"Add"')}))
            assert "Changes since" in section(added, "Snapshot")
            assert delete in section(ok(await mcp.call_tool("browser_snapshot", {"full": True})), "Snapshot")
            # The iframe moves on; the click's answer reads the page, its new buttons with it.
            moved = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, '"Next"')}))
            after = section(moved, "Snapshot")
            for _ in range(40):
                if "Confirm purchase" in after:
                    break
                await asyncio.sleep(0.05)
                after = section(ok(await mcp.call_tool("browser_snapshot", {"full": True})), "Snapshot")
            assert "Confirm purchase" in after, after
            # The new page's buttons are not named as the old page's were (the old one is told as
            # removed, under its ref).
            assert delete not in after.split("Removed:")[0]
            refused = await mcp.call_tool("browser_click", {"ref": delete})
            assert refused.is_error and (
                f"Ref {delete} is from before an iframe of tab 1 loaded another page" in text(refused)
            ), text(refused)
            ok(await mcp.call_tool("browser_click", {"ref": ref_of(after, '"Confirm purchase"')}))
            shown = await poll(
                lambda: mcp.call_tool("browser_snapshot", {"full": True}),
                lambda r: "Confirm purchase pressed" in section(r, "Snapshot"),
            )
            assert "- status [ref=1e3]: Confirm purchase pressed" in section(shown, "Snapshot"), text(shown)


async def test_a_ref_of_an_iframe_that_stayed_is_not_said_to_be_of_a_page_its_iframe_left(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # When one iframe of a page loads another page, the refs of all its iframes are given anew (which
    # one moved, Playwright does not say): a ref of an iframe that stayed was refused saying "the
    # iframe has loaded another page since", of an iframe still on its page.
    site.set_content("/stay", "<input aria-label='Stays'>")
    site.set_content("/go", "<a href='/page/z'>Go on</a>")
    site.set_content("/two", "<iframe src='/stay'></iframe><iframe src='/go'></iframe>")
    async with connect() as mcp:
        snap = section(ok(await mcp.call_tool("browser_navigate", {"url": site.url("/two")})), "Snapshot")
        stays, go_on = ref_of(snap, '"Stays"'), ref_of(snap, '"Go on"')
        ok(await mcp.call_tool("browser_click", {"ref": go_on}))
        await poll(
            lambda: mcp.call_tool("browser_snapshot", {"full": True}),
            lambda r: "Page z" in section(r, "Snapshot"),
        )
        refused = error(await mcp.call_tool("browser_type", {"ref": stays, "text": "x"}))
        assert refused.startswith(
            f"Ref {stays} is from before an iframe of tab 1 loaded another page (its own iframe or another: which "
            "one, the browser does not say), when the refs of all the tab's iframes were given anew."
        ), refused
        assert "Call browser_snapshot(tabId=1) and use a ref from it." in refused, refused


async def test_a_step_back_or_forward_of_an_iframe_goes_at_once_and_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Only the iframe had moved: it went back at once, but the call waited for the page until the
    # navigation timeout (30 s), then said its server had not sent it. Same-origin and cross-origin
    # (localhost is another origin than 127.0.0.1).
    site.set_content("/f1", "<title>F1</title><h2>Frame page one</h2><a href='/f2'>Next in frame</a>")
    site.set_content("/f2", "<title>F2</title><h2>Frame page two</h2>")

    async def shows(mcp: Client, tab: int, words: str) -> None:
        await poll(
            lambda: mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}),
            lambda snap: words in text(snap),
        )

    for origin in (site.url("/"), site.url("/").replace("127.0.0.1", "localhost")):
        site.set_content("/top", f"<title>Top</title><h1>Top</h1><iframe src='{origin}f1'></iframe>")
        async with connect(browser=BrowserOptions(timeout_navigation=5)) as mcp:
            tab = await _open(mcp, site.url("/top"), background=False)
            full = data(ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})))
            ok(
                await mcp.call_tool(
                    "browser_click", {"ref": ref_of(full["snapshot"], 'link "Next in frame"')}
                )
            )
            await shows(mcp, tab, "Frame page two")
            for action, at, words in (("back", "f1", "Frame page one"), ("forward", "f2", "Frame page two")):
                stepped = ok(await mcp.call_tool("browser_navigate", {"action": action, "tabId": tab}))
                assert section(stepped, "Result") == (
                    f"Went {action} on tab {tab}. The step {action} in tab {tab}'s history was an iframe's: "
                    f"it shows {origin}{at} now."
                ), text(stepped)
                await shows(mcp, tab, words)
            listed = data(ok(await mcp.call_tool("browser_tabs", {"action": "list"})))["result"]
            assert [t["url"] for t in listed["tabs"] if t["id"] == tab] == [site.url("/top")]


async def test_going_back_over_entries_without_a_response_is_not_called_a_missing_history(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # A single-page app's history entries (pushState) and #hash entries load no document: going
    # back to them has no HTTP response, yet it goes back.
    site.set_content("/spa", "<title>App</title><script>history.pushState({}, '', '/spa/one')</script>")
    async with connect() as mcp:
        await mcp.call_tool("browser_navigate", {"url": site.url("/spa")})
        await mcp.call_tool("browser_evaluate", {"function": "() => { location.hash = 'two' }"})

        back = await mcp.call_tool("browser_navigate", {"action": "back"})
        assert not back.is_error, text(back)
        assert "no page to go back" not in section(back, "Result")
        assert f"({site.url('/spa/one')})" in section(back, "Page")
        again = await mcp.call_tool("browser_navigate", {"action": "back"})
        assert "no page to go back" not in section(again, "Result")
        assert f"({site.url('/spa')})" in section(again, "Page")
        forward = await mcp.call_tool("browser_navigate", {"action": "forward"})
        assert "no page to go forward" not in section(forward, "Result")
        assert f"({site.url('/spa/one')})" in section(forward, "Page")


async def test_a_tab_navigates_again_after_a_failed_navigation_and_a_download_is_no_failure(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    async with connect(browser=BrowserOptions(downloads_dir=str(tmp_path))) as mcp:
        # Twice: the second failure starts on the error page of the first.
        for _ in range(2):
            failed = await mcp.call_tool("browser_navigate", {"url": "http://127.0.0.1:1/"})
            assert failed.is_error and "net::ERR_UNSAFE_PORT" in text(failed), text(failed)
            assert "the tab shows the browser's error page" in text(failed)
        # Each navigation after it loads its own page (Playwright called each one interrupted
        # by the one before, starting with the late error page).
        for name in ("a", "b"):
            went = await mcp.call_tool("browser_navigate", {"url": site.url(f"/page/{name}")})
            assert not went.is_error, text(went)
            assert f'heading "Page {name}"' in section(went, "Snapshot")

        binary = site.url("/api/binary")
        fetched = await mcp.call_tool("browser_navigate", {"url": binary})
        assert not fetched.is_error, text(fetched)
        said = section(fetched, "Result")
        assert said.startswith(f"{binary} is a file, not a page: the browser downloads it, and tab ")
        assert said.endswith(f"stays on {site.url('/page/b')}.") and "Navigated" not in said
        # Said as started, not as done: a download the server cuts off read the same.
        assert f"started downloading 'binary' from {binary}" in section(fetched, "Events"), text(fetched)
        after = await mcp.call_tool("browser_navigate", {"url": site.url("/page/c")})
        assert 'heading "Page c"' in section(after, "Snapshot"), text(after)
        # When the file is whole, a response says where it is (this one or one soon after).
        saved = f"- tab 1 finished downloading 'binary': saved as {tmp_path / 'binary'} (1,024 bytes)"
        told = section(fetched, "Events") + "\n" + section(after, "Events")
        for _ in range(100):  # 5 s at most
            if saved in told:
                break
            await asyncio.sleep(0.05)
            told += "\n" + section(await mcp.call_tool("browser_tabs", {"action": "list"}), "Events")
        assert saved in told.splitlines(), told
        assert (tmp_path / "binary").read_bytes() == bytes(range(256)) * 4


async def test_a_url_the_browser_hands_to_another_program_is_refused_and_the_tab_still_takes_clicks(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Sent to ftp:// or an app's scheme by a navigation, Chromium's tab stopped taking input:
    every later click reported success and did nothing, on that page and the next of its site."""
    site.set_content(
        "/wipe",
        "<title>Wipe</title><button onclick=\"document.body.innerHTML = '<p>wiped</p>'\">Wipe</button>",
    )
    async with connect() as mcp:
        page = await mcp.call_tool("browser_navigate", {"url": site.url("/wipe")})
        for url in ("ftp://127.0.0.1/file", "tabpilot-test:open"):
            refused = await mcp.call_tool("browser_navigate", {"url": url})
            assert refused.is_error
            assert section(refused, "Error").startswith(f"{url!r} does not open in a tab"), text(refused)
        listed = data(await mcp.call_tool("browser_tabs", {"action": "list"}))["result"]
        opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": "ftp://127.0.0.1/file"})
        assert opened.is_error and "does not open in a tab" in section(opened, "Error")
        after = data(await mcp.call_tool("browser_tabs", {"action": "list"}))["result"]
        assert after["count"] == listed["count"]  # no tab was opened for it

        clicked = await mcp.call_tool("browser_click", {"ref": ref_of(section(page, "Snapshot"), "Wipe")})
        assert not clicked.is_error, text(clicked)
        assert "wiped" in section(clicked, "Snapshot"), text(clicked)


async def test_a_load_the_browser_stops_says_why_and_one_cut_short_by_the_tabs_close_says_so(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Before, both said only "net::ERR_ABORTED" and told the agent to check a URL that was fine.
    async with connect() as mcp:
        await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")})
        empty = await mcp.call_tool("browser_navigate", {"url": site.url("/api/status/204")})
        assert empty.is_error, text(empty)
        assert "net::ERR_ABORTED" in text(empty) and "HTTP 204 No Content" in text(empty), text(empty)
        assert f"stays on {site.url('/page/a')}" in text(empty)

        opened = await mcp.call_tool("browser_tabs", {"action": "new", "background": True})
        tab = data(opened)["result"]["tabId"]

        async def close_soon() -> CallToolResult:
            await asyncio.sleep(0.5)
            return await mcp.call_tool("browser_tabs", {"action": "close", "tabId": tab})

        loading, closed = await asyncio.gather(
            mcp.call_tool("browser_navigate", {"url": site.url("/api/slow?ms=5000"), "tabId": tab}),
            close_soon(),
        )
        assert not closed.is_error, text(closed)
        assert loading.is_error and f"tab {tab} closed during the action" in text(loading), text(loading)
        assert "ERR_ABORTED" not in text(loading) and "Check the URL" not in text(loading)


async def test_a_tab_on_the_error_page_is_listed_by_the_url_that_failed_to_load(
    connect: Callable[..., Client], site: LocalSite, tmp_path: Path
) -> None:
    down = f"http://127.0.0.1:{free_port()}/app"  # a local server that is not running
    site.set_content(
        "/down-link",
        f'<title>Links</title><a href="{down}/popup" target="_blank">Open app</a> <a href="{down}/gone">Go to app</a>',
    )
    async with connect(browser=BrowserOptions(downloads_dir=str(tmp_path))) as mcp:
        failed = await mcp.call_tool("browser_navigate", {"url": down})
        assert failed.is_error and "net::ERR_CONNECTION_REFUSED" in text(failed), text(failed)
        tab = data(failed)["activeTabId"]
        # Not chrome-error://chromewebdata/, not the title of the page before, not still loading.
        assert tab_line(failed, tab) == f"- tab {tab}: {down} [active, failed to load (error page)]"
        listed = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert tab_line(listed, tab) == f"- tab {tab}: {down} [active, failed to load (error page)]"
        (info,) = data(listed)["result"]["tabs"]
        assert (info["url"], info["title"], info["status"], info["errorPage"]) == (down, "", "complete", True)
        # A download from there names the tab's place as the list does.
        fetched = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/api/file")}))
        assert section(fetched, "Result").endswith(f"tab {tab} shows the browser's error page for {down}.")
        assert "chrome-error" not in text(fetched) and data(fetched)["result"]["url"] == down

        # A tab a page opens on a URL that fails is listed the same way.
        went = await mcp.call_tool("browser_navigate", {"url": site.url("/down-link")})
        assert section(went, "Page") == f"tab {tab}: Links ({site.url('/down-link')})"
        clicked = await mcp.call_tool("browser_click", {"ref": ref_of(section(went, "Snapshot"), "Open app")})
        (popup,) = data(clicked)["result"]["openedTabIds"]
        shown = await poll(
            lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
            lambda listed: (
                "(error page)]" in tab_line(listed, popup) and "loading" not in tab_line(listed, popup)
            ),
        )
        assert (
            tab_line(shown, popup)
            == f"- tab {popup}: {down}/popup [opened by tab {tab}, failed to load (error page)]"
        )
        # Loading a page that works ends it.
        fixed = await mcp.call_tool("browser_navigate", {"url": site.url("/page/a"), "tabId": popup})
        assert section(fixed, "Page") == f"tab {popup}: Page a ({site.url('/page/a')})"
        listed = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert [t["errorPage"] for t in data(listed)["result"]["tabs"]] == [False, False]
        # A click that lands its own tab on the error page says so where it names the page.
        gone = await mcp.call_tool("browser_click", {"ref": ref_of(section(went, "Snapshot"), "Go to app")})
        if "error page" not in section(gone, "Page"):  # answered before the error page came (a busy machine)
            gone = await poll(
                lambda: mcp.call_tool("browser_snapshot", {"tabId": tab}),
                lambda shot: "error page" in section(shot, "Page"),
            )
        assert section(gone, "Page") == f"tab {tab}: {down}/gone [failed to load (error page)]", text(gone)
        assert data(gone)["page"] == {"tabId": tab, "url": f"{down}/gone", "title": "", "errorPage": True}


async def test_a_tab_opened_by_a_page_is_reported_in_the_response_that_caused_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content("/opens", "<title>Opener</title><script>window.open('/page/b')</script>")
    async with connect() as mcp:
        tab = await _open(mcp, "about:blank")
        result = await mcp.call_tool("browser_navigate", {"url": site.url("/opens"), "tabId": tab})
        events = section(result, "Events")
        assert f"by tab {tab}" in events, text(result)
        new_tab = next(
            e for e in data(result)["events"] if e["type"] == "tab_opened" and e["openerId"] == tab
        )
        assert f"opened by tab {tab}" in tab_line(result, new_tab["tabId"])


async def test_file_urls_and_origins_outside_the_policy_are_refused(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        result = await mcp.call_tool("browser_navigate", {"url": "file:///etc/passwd"})
        assert result.is_error
        assert "file: URLs are refused" in section(result, "Error")
        broken = await mcp.call_tool("browser_navigate", {"url": "http://[::1"})
        assert broken.is_error
        assert section(broken, "Error").startswith("'http://[::1' is not a valid URL (Invalid IPv6 URL).")
        # A page with nothing to read says so, in place of an empty tree.
        blank = await mcp.call_tool("browser_navigate", {"url": "about:blank"})
        assert section(blank, "Snapshot") == "(the page is empty: nothing in its accessibility tree)"

    other = f"http://localhost:{site.port}"
    site.set_content("/jump", f"<title>Jump</title><script>location.href = '{other}/page/c'</script>")
    async with connect(allowed_origins=(site.origin,)) as mcp:
        refused = await mcp.call_tool("browser_tabs", {"action": "new", "url": f"{other}/page/b"})
        assert refused.is_error
        assert "not in --allowed-origins" in section(refused, "Error")

        tab = await _open(mcp, site.url("/jump"))
        await asyncio.sleep(0.3)
        snapshot = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab})
        assert "Page c" not in section(snapshot, "Snapshot"), text(snapshot)
        # The tab lists the address it was refused, as the browser's error page.
        listed = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert (
            tab_line(listed, tab) == f"- tab {tab}: {other}/page/c [blocked by the URL policy (error page)]"
        )


async def test_a_navigation_to_a_blocked_url_that_a_page_or_a_redirect_starts_says_the_url_policy_blocked_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Chromium shows only its error page (ERR_BLOCKED_BY_CLIENT) for a navigation the URL policy
    aborts: a link in the tab, a step forward in its history to that page, a link to a new tab, a
    frame. The response says the policy blocked it and why; the tab's line says so while it shows
    that page."""
    other = f"http://localhost:{site.port}"
    target = f"{other}/page/c"
    site.set_content(
        "/links",
        f'<title>Links</title><a href="{target}">same tab</a><a href="{target}" target="_blank">new tab</a>',
    )
    site.set_content("/framed", f'<title>Framed</title><iframe src="{other}/page/a"></iframe>')
    why = f"Navigation to {target} is blocked: {other} is not in --allowed-origins. Choose a URL on an allowed origin."
    blocked_mark = "[blocked by the URL policy (error page)]"
    async with connect(allowed_origins=(site.origin,)) as mcp:
        tab = await _open(mcp, site.url("/links"), background=False)
        snapshot = section(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}), "Snapshot")

        clicked = ok(
            await mcp.call_tool("browser_click", {"tabId": tab, "ref": ref_of(snapshot, "same tab")})
        )
        assert section(clicked, "Events") == (
            f"- tab {tab} was kept from loading a URL the URL policy blocks (a link, a form, a script or a "
            f"server's redirect led it there) and shows the browser's error page. {why}"
        )
        assert section(clicked, "Page") == f"tab {tab}: {target} {blocked_mark}"

        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "back"}))
        forward = await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "forward"})
        assert forward.is_error
        assert section(forward, "Error") == why
        assert "URL policy" not in section(forward, "Events"), "the error said it"
        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "action": "back"}))
        snapshot = section(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}), "Snapshot")
        clicked = ok(await mcp.call_tool("browser_click", {"tabId": tab, "ref": ref_of(snapshot, "new tab")}))
        ((opened, url),) = [
            (e["tabId"], e["url"]) for e in data(clicked)["events"] if e["type"] == "tab_opened"
        ]
        assert url == target, "the URL it was kept from, not the error page's own"
        # Said of the new tab, after the news that it opened.
        events = section(clicked, "Events")
        assert f"- tab {opened} opened (link) by tab {tab}" in events and why in events, events
        assert f"- tab {opened} was kept from loading" in events, events
        listed = await poll(
            lambda: mcp.call_tool("browser_tabs", {"action": "list"}),
            lambda listed: tab_line(listed, opened).endswith(f"{blocked_mark}"),
        )
        assert (
            tab_line(listed, opened)
            == f"- tab {opened}: {target} [opened by tab {tab}, blocked by the URL policy (error page)]"
        )

        framed = ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/framed")}))
        assert section(framed, "Events") == (
            f"- tab {tab}: a frame in its page was kept from loading a URL the URL policy blocks. Navigation to "
            f"{other}/page/a is blocked: {other} is not in --allowed-origins. Choose a URL on an allowed origin."
        )
        assert section(framed, "Page") == f"tab {tab}: Framed ({site.url('/framed')})"


async def test_a_new_tabs_first_page_the_url_policy_refuses_is_told_of_that_tab(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """A new tab's first request can reach the policy before its page exists (whichever check sees
    it first): it was told of "a new tab", leaving the agent to guess which of its tabs that was."""
    target = f"http://localhost:{site.port}/page/c"
    site.set_content(
        "/opens",
        f'<title>Opens</title><a href="{target}" target="_blank">link</a>'
        f'<a href="{target}" target="_blank" rel="noopener">noopener link</a>'
        f"<button onclick=\"window.open('{target}')\">popup</button>",
    )
    for _ in range(4):  # which check sees it first varies, most of all in a fresh context
        async with connect(allowed_origins=(site.origin,)) as mcp:
            tab = await _open(mcp, site.url("/opens"), background=False)
            shown = await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True})
            for name in ("link", "noopener link", "popup"):
                ref = ref_of(section(shown, "Snapshot"), name)
                clicked = ok(await mcp.call_tool("browser_click", {"tabId": tab, "ref": ref}))
                events = data(clicked)["events"]
                (opened,) = [e["tabId"] for e in events if e["type"] == "tab_opened"]
                told = [e["tabId"] for e in events if e["type"] == "navigation_blocked"]
                assert told == [opened], (name, section(clicked, "Events"))
                assert f"- tab {opened} was kept from loading a URL the URL policy blocks" in section(
                    clicked, "Events"
                )


async def test_a_server_redirect_to_a_blocked_origin_is_blocked_too(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    """Playwright's routes see only the first request of a redirect chain: an allowed URL whose
    server redirects to a refused origin loaded it. Each step of the chain is held to the policy."""
    other = f"http://localhost:{site.port}"
    target = f"{other}/page/c"

    async def redirect(_request: object) -> RedirectResponse:
        return RedirectResponse(target, status_code=302)

    site.set_route("/away", redirect)
    site.set_content("/leaving", f'<title>Leaving</title><a href="{site.url("/away")}">away</a>')
    why = f"Navigation to {target} is blocked: {other} is not in --allowed-origins. Choose a URL on an allowed origin."
    async with connect(allowed_origins=(site.origin,)) as mcp:
        tab = await _open(mcp, site.url("/leaving"), background=False)
        navigated = await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/away")})
        assert navigated.is_error, text(navigated)
        assert section(navigated, "Error") == why
        listed = await mcp.call_tool("browser_tabs", {"action": "list"})
        assert "Page c" not in text(listed)

        ok(await mcp.call_tool("browser_navigate", {"tabId": tab, "url": site.url("/leaving")}))
        snapshot = section(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}), "Snapshot")
        clicked = ok(await mcp.call_tool("browser_click", {"tabId": tab, "ref": ref_of(snapshot, "away")}))
        assert why in section(clicked, "Events"), text(clicked)
        assert section(clicked, "Page") == f"tab {tab}: {target} [blocked by the URL policy (error page)]"


async def test_a_dialog_blocks_only_its_own_tab(connect: Callable[..., Client], site: LocalSite) -> None:
    site.set_content("/alerts", "<title>Alerts</title><script>alert('stop')</script>")
    async with connect() as mcp:
        other = await _open(mcp, site.url("/page/a"))
        tab = await _open(mcp, "about:blank")

        loading = await mcp.call_tool("browser_navigate", {"url": site.url("/alerts"), "tabId": tab})
        assert not loading.is_error, text(loading)
        assert "dialog" in section(loading, "Result")
        assert f"tab {tab} shows an alert dialog" in section(loading, "Events")
        assert "alert dialog open" in tab_line(loading, tab)

        blocked = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab})
        assert blocked.is_error
        assert "browser_handle_dialog" in section(blocked, "Error")

        fine = await mcp.call_tool("browser_snapshot", {"full": True, "tabId": other})
        assert not fine.is_error, text(fine)


async def test_a_snapshot_of_an_unchanged_page_says_so_in_one_line(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/counter",
        "<h1>Counter</h1><button onclick=\"document.querySelector('p').textContent = 'clicked'\">Press</button>"
        "<p>idle</p><button onclick=\"setTimeout(() => document.querySelector('p').textContent = 'later', 300)\">"
        "Later</button>",
    )
    async with connect() as mcp:
        went = await mcp.call_tool("browser_navigate", {"url": site.url("/counter")})
        whole = section(went, "Snapshot")
        assert 'heading "Counter"' in whole
        again = await mcp.call_tool("browser_snapshot", {})
        assert not again.is_error, text(again)
        assert "is unchanged since its previous snapshot; its refs still hold" in section(again, "Result")
        assert "### Snapshot" not in text(again) and data(again)["result"]["unchanged"] is True
        # The refs still work, and the action's response shows the change: the client has seen it.
        press = next(line for line in whole.splitlines() if 'button "Press"' in line).split("[ref=")[1][:-1]
        clicked = await mcp.call_tool("browser_click", {"ref": press})
        assert "clicked" in section(clicked, "Snapshot")
        assert "unchanged" in section(await mcp.call_tool("browser_snapshot", {}), "Result")
        # A change the client did not see (a timer) brings the whole tree; full=true always does.
        later = next(line for line in whole.splitlines() if 'button "Later"' in line).split("[ref=")[1][:-1]
        await mcp.call_tool("browser_click", {"ref": later})
        # Read until the timer has run (unchanged before it): then the whole tree comes.
        changed = await poll(
            lambda: mcp.call_tool("browser_snapshot", {}), lambda r: "unchanged" not in section(r, "Result")
        )
        assert "paragraph [ref=" in section(changed, "Snapshot") and "later" in section(changed, "Snapshot")
        forced = await mcp.call_tool("browser_snapshot", {"full": True})
        assert 'heading "Counter"' in section(forced, "Snapshot")


async def test_a_snapshot_after_an_answer_that_cut_its_changes_shows_the_tree_not_unchanged(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # An action's answer cut its changes ("take a snapshot to see them"), or only counted the lines
    # removed; the snapshot then said the tab was unchanged, and the agent never saw those lines.
    site.set_content(
        "/rows",
        "<ul>" + "".join(f"<li>row {i}</li>" for i in range(300)) + "</ul>"
        "<button onclick=\"document.querySelectorAll('li').forEach((li, i) => li.textContent = 'new ' + i)\">"
        "Renumber</button>"
        "<button onclick=\"[...document.querySelectorAll('li')].slice(0, 10).forEach(li => li.remove())\">"
        "Drop</button>",
    )
    async with connect() as mcp:
        went = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/rows")}))
        renumber, drop = (
            ref_of(section(went, "Snapshot"), 'button "Renumber"'),
            ref_of(section(went, "Snapshot"), 'button "Drop"'),
        )
        clicked = ok(await mcp.call_tool("browser_click", {"ref": renumber}))
        assert "more changed lines cut; take a snapshot to see them" in section(clicked, "Snapshot")
        assert "new 299" not in section(clicked, "Snapshot")
        told = ok(await mcp.call_tool("browser_snapshot", {}))
        assert "unchanged" not in section(told, "Result"), text(told)
        assert "listitem [ref=1e302]: new 299" in section(told, "Snapshot")
        # Now it has the tree: the same read again is one line.
        assert data(ok(await mcp.call_tool("browser_snapshot", {})))["result"]["unchanged"] is True

        dropped = ok(await mcp.call_tool("browser_click", {"ref": drop}))
        assert "(10 lines removed)" in section(dropped, "Snapshot")
        told = ok(await mcp.call_tool("browser_snapshot", {}))
        assert "unchanged" not in section(told, "Result"), text(told)
        assert "new 0" not in section(told, "Snapshot") and "new 10" in section(told, "Snapshot")


async def test_navigate_and_new_tab_answer_with_the_snapshot_or_only_the_page_as_configured(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
        assert 'heading "Page a"' in section(opened, "Snapshot")
        went = await mcp.call_tool("browser_navigate", {"url": site.url("/page/b")})
        assert 'heading "Page b"' in section(went, "Snapshot")
        blank = await mcp.call_tool("browser_tabs", {"action": "new"})
        assert "### Snapshot" not in text(blank)
    async with connect(navigate_returns="page") as mcp:
        opened = await mcp.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
        went = await mcp.call_tool("browser_navigate", {"url": site.url("/page/b")})
        for answer in (opened, went):
            assert "### Snapshot" not in text(answer)
        # A new tab changes the tab set: its line in ### Tabs names its page, so ### Page is left out.
        assert "Page a (" in section(opened, "Tabs") and "### Page" not in text(opened)
        # Without a snapshot to read it with, the title is asked for before the result is built.
        assert (
            opened.structured_content is not None and opened.structured_content["result"]["title"] == "Page a"
        )
        assert "Page b (" in section(went, "Page")
        # The tree was never shown: the next snapshot shows it whole.
        assert 'heading "Page b"' in section(await mcp.call_tool("browser_snapshot", {}), "Snapshot")


def _yaml_lines(snapshot_section: str) -> list[str]:
    """The tree's lines of a `### Snapshot` section (the lines inside its yaml block)."""
    return snapshot_section.split("```yaml\n", 1)[1].split("\n```", 1)[0].splitlines()


async def test_a_large_page_is_cut_in_whole_lines_saying_how_much_went_and_how_to_read_on(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # 1,000 buttons and 1,000 links: about 100,000 characters of tree. A navigation answered with all
    # of it (a table of 3,000 rows: 716,746 characters), though the agent never asked for it.
    url = site.url("/many?n=1000")
    async with connect() as mcp:
        went = ok(await mcp.call_tool("browser_navigate", {"url": url}))
        shown = section(went, "Snapshot")
        assert len(text(went)) < DEFAULT_MAX_SNAPSHOT_CHARS + 1_000, len(text(went))
        cut = data(went)["snapshotCut"]
        assert cut["shownChars"] <= DEFAULT_MAX_SNAPSHOT_CHARS < cut["totalChars"]
        left = cut["totalLines"] - cut["shownLines"]
        assert (
            f"(Cut at {DEFAULT_MAX_SNAPSHOT_CHARS:,} characters, the server's limit: {left:,} more lines "
            f"({cut['totalChars'] - cut['shownChars']:,} characters) are left out"
        ) in shown
        # It says how to read the rest: the top levels whole (they fit), a part, or all of it.
        assert "browser_snapshot(tabId=1, depth=1) shows the tree to depth 1 whole" in shown
        assert "browser_snapshot(tabId=1, full=true) all of it" in shown

        everything = ok(await mcp.call_tool("browser_snapshot", {"full": True}))
        whole = _yaml_lines(section(everything, "Snapshot"))
        assert len(whole) == cut["totalLines"] and "### Snapshot" in text(everything)
        assert "Cut at" not in text(everything) and "snapshotCut" not in data(everything)
        # Whole lines, the first ones of the tree.
        assert _yaml_lines(shown) == whole[: cut["shownLines"]]
        # Refs work, of the part shown and of the part left out alike.
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(shown, 'button "Button 1"')}))
        assert 'link "Link 1000"' not in shown
        ok(await mcp.call_tool("browser_click", {"ref": ref_of("\n".join(whole), 'link "Link 1000"')}))

        opened = ok(await mcp.call_tool("browser_tabs", {"action": "new", "url": url}))
        assert len(text(opened)) < DEFAULT_MAX_SNAPSHOT_CHARS + 1_000, len(text(opened))
        assert "(Cut at 40,000 characters" in section(opened, "Snapshot")


async def test_a_long_line_in_a_cut_tree_is_shortened_so_the_elements_after_it_are_shown(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # One paragraph of 60,000 characters took the limit whole: the tree stopped at `main`, and no
    # read but full=true (all 60,000) showed the form below it, or a ref to read it by.
    site.set_content(
        "/article",
        "<nav><a href='#top'>Home</a></nav><main><p>" + "word " * 12_000 + "</p>"
        "<form><input aria-label='Email'><button type='button' onclick=\"this.textContent = 'Sent'\">Send</button>"
        "</form></main>",
    )
    async with connect(max_snapshot_chars=3_000) as mcp:
        went = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/article")}))
        shown = section(went, "Snapshot")
        assert len(data(went)["snapshot"]) <= 3_000
        paragraph = next(line for line in shown.splitlines() if "paragraph" in line)
        assert paragraph.startswith("    - paragraph [ref=1e5]: word word") and paragraph.endswith(
            "… (59,651 more characters)"
        ), paragraph
        assert 'textbox "Email"' in shown
        assert (
            "(Cut at 3,000 characters, the server's limit: all 9 lines are shown, 1 of them shortened to 375 "
            "characters (…). To read on:"
        ) in shown
        assert data(went)["snapshotCut"]["shortenedLines"] == 1
        clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(shown, 'button "Send"')}))
        assert 'button "Sent"' in section(clicked, "Snapshot")
        # Whole with full=true.
        whole = data(ok(await mcp.call_tool("browser_snapshot", {"full": True})))["snapshot"]
        assert "word " * 11_999 + "word" in whole and "…" not in whole


async def test_an_unchanged_large_page_says_how_large_it_is_whole(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect() as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/many?n=1000")}))
        again = ok(await mcp.call_tool("browser_snapshot", {}))
        total = len(data(ok(await mcp.call_tool("browser_snapshot", {"full": True})))["snapshot"])
        assert section(again, "Result") == (
            f"Tab 1 is unchanged since its previous snapshot; its refs still hold (full=true shows it: all "
            f"{total:,} characters)."
        )


async def test_a_snapshot_asked_for_is_cut_at_the_servers_limit_too_and_a_depth_or_a_ref_reads_on(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    async with connect(max_snapshot_chars=3_000) as mcp:
        tab = await _open(mcp, site.url("/many?n=100"))
        read = ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "full": True}))
        whole = data(read)["snapshot"]
        assert len(whole) > 3_000 and "Cut at" not in text(read)

        cut = ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "depth": 3}))
        shown = section(cut, "Snapshot")
        assert len(data(cut)["snapshot"]) <= 3_000
        assert "(Cut at 3,000 characters, the server's limit:" in shown
        assert f"browser_snapshot(tabId={tab}, depth=3, full=true) all of it" in shown
        # The depth it names fits whole, and shows the refs of the parts to read.
        assert f"browser_snapshot(tabId={tab}, depth=1) shows the tree to depth 1 whole" in shown
        outline = ok(await mcp.call_tool("browser_snapshot", {"tabId": tab, "depth": 1}))
        assert "Cut at" not in text(outline)
        nav = ref_of(section(outline, "Snapshot"), "navigation")
        part = ok(await mcp.call_tool("browser_snapshot", {"ref": nav}))
        assert "(Cut at 3,000 characters" in section(part, "Snapshot")
        # Its top level alone (100 links) is over the limit: no depth is named.
        assert "shows the tree to depth" not in section(part, "Snapshot")
        all_of_it = ok(await mcp.call_tool("browser_snapshot", {"ref": nav, "full": True}))
        assert 'link "Link 100"' in section(all_of_it, "Snapshot") and "Cut at" not in text(all_of_it)


async def test_a_snapshot_of_a_part_says_so_in_one_line_when_it_is_as_this_client_last_read_it(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # Repeating {"depth": 3} or {"ref": ...} on an unchanged page repeated the whole (sub)tree.
    site.set_content(
        "/parts",
        "<h1>Parts</h1><nav><a href='#a'>Alpha</a><a href='#b'>Beta</a></nav>"
        "<p>idle</p><button onclick=\"document.querySelector('p').textContent = 'pressed'\">Press</button>",
    )
    async with connect() as mcp:
        went = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/parts")}))
        nav = ref_of(section(went, "Snapshot"), "navigation")
        press = ref_of(section(went, "Snapshot"), 'button "Press"')
        for args, part in (({"depth": 1}, "depth 1"), ({"ref": nav}, f"subtree of {nav}")):
            first = ok(await mcp.call_tool("browser_snapshot", args))
            assert "### Snapshot" in text(first), text(first)
            again = ok(await mcp.call_tool("browser_snapshot", args))
            assert section(again, "Result") == (
                f"Tab 1 ({part}) is unchanged since its previous snapshot; its refs still hold (full=true shows it)."
            )
            assert "### Snapshot" not in text(again) and data(again)["result"]["unchanged"] is True
            forced = ok(await mcp.call_tool("browser_snapshot", {**args, "full": True}))
            assert section(forced, "Snapshot") == section(first, "Snapshot")
        # The same part sent another way (bare, with spaces) is the same read, named as given.
        same = ok(await mcp.call_tool("browser_snapshot", {"ref": f" {nav.removeprefix('1')} "}))
        assert section(same, "Result") == (
            f"Tab 1 (subtree of {nav}) is unchanged since its previous snapshot; its refs still hold (full=true "
            "shows it)."
        )
        # Another part, or the same part at another depth, is no read the client has.
        deeper = ok(await mcp.call_tool("browser_snapshot", {"ref": nav, "depth": 1}))
        assert "### Snapshot" in text(deeper)
        # The refs it holds still work; a read after the page changed shows it again.
        ok(await mcp.call_tool("browser_click", {"ref": ref_of(section(first, "Snapshot"), 'link "Alpha"')}))
        ok(await mcp.call_tool("browser_click", {"ref": press}))
        changed = ok(await mcp.call_tool("browser_snapshot", {"depth": 1}))
        assert "pressed" in section(changed, "Snapshot")


async def test_a_tree_too_large_to_read_in_time_says_so_and_to_read_a_part_not_that_the_page_is_stuck(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # The page goes on building the tree after the read is given up, so it did not answer the
    # check for a stuck script: "tab 1 is not responding (a script on it keeps it busy)", of a page
    # without a script; or "The page may be busy: call browser_snapshot again and retry".
    quick = BrowserOptions(timeout_action=0.05)  # far less than 2,000 elements take to read
    async with connect(browser=quick) as mcp:
        went = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/many?n=2000")}))
        for said in (section(went, "Snapshot"), error(await mcp.call_tool("browser_snapshot", {}))):
            assert (
                "though the page answers: its accessibility tree may be too large to read in that time"
                in said
            )
            assert "browser_snapshot(tabId=1, depth=3)" in said and "browser_snapshot(ref=...)" in said, said
            assert "not responding" not in said


async def test_a_password_fields_value_is_hidden_in_snapshots_and_in_an_actions_changes(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    site.set_content(
        "/login",
        "<title>Login</title><label>Name <input id=name></label><label>Password <input type=password></label>"
        f"<iframe src='http://localhost:{site.port}/inner'></iframe>",
    )
    # An iframe of another site (a process of its own): its password field is found too.
    site.set_content("/inner", "<label>PIN <input type=password></label>")
    async with connect() as mcp:
        tab = await _open(mcp, site.url("/login"))
        snap = data(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab}))["snapshot"]
        name, password, pin = (ref_of(snap, f'textbox "{label}"') for label in ("Name", "Password", "PIN"))

        typed = ok(await mcp.call_tool("browser_type", {"ref": password, "text": "hunter22 secret"}))
        ok(await mcp.call_tool("browser_type", {"ref": pin, "text": "4321"}))
        ok(await mcp.call_tool("browser_type", {"ref": name, "text": "Ada"}))
        read = ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab}))

        # The action's changes and a snapshot, in text and structured content. (The answer to the
        # call that typed it says what was typed, as the call itself did.)
        for result in (typed, read):
            shown = section(result, "Snapshot")
            assert "hunter22" not in shown and "4321" not in shown, shown
            assert "hunter22" not in str(data(result).get("snapshot")), data(result)
        assert "hunter22" not in text(read) and "hunter22" not in str(read.structured_content)
        changes = section(typed, "Snapshot")
        assert f'textbox "Password" [active] [ref={password}]: (password, 15 characters)' in changes, changes
        snap = data(read)["snapshot"]
        assert f'textbox "PIN" [ref={pin}]: (password, 4 characters)' in snap, snap
        assert f'textbox "Name" [active] [ref={name}]: Ada' in snap, snap
        # Its ref works as before: typed again, the field has the new text.
        ok(await mcp.call_tool("browser_type", {"ref": password, "text": "abc"}))
        snap = data(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": tab}))["snapshot"]
        assert f"[ref={password}]: (password, 3 characters)" in snap, snap
