from __future__ import annotations

import asyncio
import contextlib
import json
import urllib.error
import urllib.request
from typing import Any

import websockets
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import async_playwright, expect
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from tabpilot.demo.site import LocalSite


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_the_home_page_links_to_a_new_tab_a_popup_and_the_sign_in_demo(site: LocalSite) -> None:
    status, headers, body = fetch(site.url("/"))
    page = body.decode()
    assert status == 200
    assert headers["content-type"].startswith("text/html")
    assert "<title>Home</title>" in page
    assert '<a href="/page/a" target="_blank">Open A in new tab</a>' in page
    assert "window.open('/page/b', 'popup_b'" in page
    assert "Sign-in demo" in page


def test_named_pages_carry_their_name_in_title_and_heading(site: LocalSite) -> None:
    _, _, body = fetch(site.url("/page/zebra"))
    assert "<title>Page zebra</title>" in body.decode()
    assert "<h1>Page zebra</h1>" in body.decode()


def test_every_built_in_page_has_a_title(site: LocalSite) -> None:
    pages = [
        "/oauth/start",
        "/oauth/authorize",
        "/oauth/callback?user=ada",
        "/console?msg=hi",
        "/fetch",
        "/ws-page",
        "/dialog",
        "/beforeunload",
        "/many?n=3",
        "/form",
        "/close-self",
        "/download",
    ]
    for path in pages:
        status, _, body = fetch(site.url(path))
        assert status == 200, path
        assert "<title>" in body.decode(), path


def test_console_page_embeds_its_messages_safely(site: LocalSite) -> None:
    _, _, body = fetch(site.url("/console?msg=</script><b>x&error=bad&throw=boom"))
    page = body.decode()
    assert 'console.log("<\\/script><b>x");' in page
    assert 'console.error("bad");' in page
    assert 'throw new Error("boom");' in page


def test_the_http_api_echoes_sets_status_and_sizes_bodies(site: LocalSite) -> None:
    _, _, echo = fetch(site.url("/api/echo?q=1"))
    assert json.loads(echo)["query"] == {"q": "1"}
    assert fetch(site.url("/api/status/404"))[0] == 404
    assert len(fetch(site.url("/api/text?n=1000"))[2]) == 1000
    status, headers, binary = fetch(site.url("/api/binary?n=300"))
    assert (status, headers["content-type"], len(binary)) == (200, "application/octet-stream", 300)
    assert "session=" in fetch(site.url("/api/set-cookie"))[1]["set-cookie"]
    assert "attachment" in fetch(site.url("/api/file"))[1]["content-disposition"]


def test_many_renders_n_buttons_and_n_links(site: LocalSite) -> None:
    page = fetch(site.url("/many?n=300"))[2].decode()
    assert page.count("<button") == 300
    assert ">Button 300</button>" in page
    assert '<a href="#300">Link 300</a>' in page


async def test_the_websocket_endpoint_echoes_text_and_answers_ping_with_pong(site: LocalSite) -> None:
    async with websockets.connect(site.ws_url("/ws")) as ws:
        await ws.send("hello")
        assert await asyncio.wait_for(ws.recv(), 5) == "hello"
        await ws.send("ping")
        assert await asyncio.wait_for(ws.recv(), 5) == "pong"


def test_set_content_serves_new_pages_and_replaces_built_in_ones(site: LocalSite) -> None:
    site.set_content("/custom", "<title>Custom</title><p>hi</p>")
    site.set_content("/", "<title>Replaced</title>")
    site.set_content("/data.json", '{"a": 1}', content_type="application/json")
    assert fetch(site.url("/custom"))[2] == b"<title>Custom</title><p>hi</p>"
    assert fetch(site.url("/"))[2] == b"<title>Replaced</title>"
    status, headers, body = fetch(site.url("/data.json"))
    assert (status, headers["content-type"], body) == (200, "application/json", b'{"a": 1}')


def test_routes_added_by_a_test_are_gone_in_the_next_test(site: LocalSite) -> None:
    assert fetch(site.url("/custom"))[0] == 404
    assert "<title>Home</title>" in fetch(site.url("/"))[2].decode()


def test_set_route_serves_a_starlette_endpoint_with_path_parameters(site: LocalSite) -> None:
    async def endpoint(request: Request) -> Response:
        return PlainTextResponse(f"item {request.path_params['item']}", status_code=201)

    site.set_route("/items/{item}", endpoint)
    assert fetch(site.url("/items/7"))[:3:2] == (201, b"item 7")


def test_a_site_stops_and_frees_its_port() -> None:
    with LocalSite() as own:
        url = own.url("/page/x")
        assert fetch(url)[0] == 200
    try:
        urllib.request.urlopen(url, timeout=2)
    except OSError:
        pass
    else:
        raise AssertionError("the site still answered after stop()")


async def test_in_chromium_the_oauth_popup_signs_the_app_in_and_closes_itself(
    site: LocalSite, browser_path: str
) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=browser_path)
        try:
            context = await browser.new_context()
            app = await context.new_page()
            await app.goto(site.url("/oauth/start"))
            async with context.expect_page() as popup_info:
                await app.get_by_role("button", name="Sign in").click()
            popup = await popup_info.value
            await popup.get_by_label("Username").fill("ada")
            closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

            def on_close(_page: Any) -> None:
                if not closed.done():
                    closed.set_result(None)

            popup.once("close", on_close)  # before it can close
            with contextlib.suppress(PlaywrightError):  # the click may end with "target closed"
                await popup.get_by_role("button", name="Authorize").click()
            await asyncio.wait_for(closed, 10)
            await expect(app).to_have_title("App - signed in")
            await expect(app.get_by_role("status")).to_have_text("Signed in as ada")
        finally:
            await browser.close()


async def test_in_chromium_the_websocket_and_fetch_pages_log_what_they_received(
    site: LocalSite, browser_path: str
) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(executable_path=browser_path)
        try:
            page = await browser.new_page()
            logs: list[str] = []
            page.on("console", lambda message: logs.append(message.text))
            await page.goto(site.url("/ws-page"))
            await expect(page.get_by_role("listitem")).to_have_text(["hello"])
            await page.get_by_role("button", name="Send ping").click()
            await expect(page.get_by_role("listitem")).to_have_text(["hello", "pong"])
            await page.goto(site.url("/fetch?path=/api/status/404&path=/api/text?n=10"))
            await expect(page.get_by_role("status")).to_have_text("Done")
            assert logs[:2] == ["ws received: hello", "ws received: pong"]
            assert "fetched /api/status/404 404" in logs
            assert "fetched /api/text?n=10 200" in logs
        finally:
            await browser.close()
