"""tabpilot over streamable HTTP: isolated sessions, DNS-rebinding checks, the bearer token."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support import data, error, ok, ref_of, result_of, section, text, wait_until
from tabpilot import BrowserOptions, Instance, TabManager, cli
from tabpilot.server import ServerConfig, create_server
from tabpilot.server.http import check_bind, http_app


def contexts(shared: Instance) -> int:
    """Browser contexts of the shared browser (one per HTTP session, plus its own)."""
    assert shared.browser is not None
    return len(shared.browser.contexts)


@asynccontextmanager
async def serve(shared_browser: Instance, **options: Any) -> AsyncIterator[str]:
    """Serve a tabpilot server over HTTP on a free loopback port; yields the /mcp URL."""
    config = ServerConfig(http_host="127.0.0.1", http_port=0, structured_content=True, **options)
    server = create_server(config, shared=shared_browser)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(http_app(server, config), log_level="warning", lifespan="on"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        uv.should_exit = True
        await task
        sock.close()


async def test_two_sessions_see_only_their_own_tabs(shared_browser: Instance, site: Any) -> None:
    contexts_before = contexts(shared_browser)
    async with serve(shared_browser) as url:
        async with Client(url) as a, Client(url) as b:
            opened = await a.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
            assert not opened.is_error, text(opened)
            assert opened.structured_content is not None
            a_tab = opened.structured_content["result"]["tabId"]

            b_list = await b.call_tool("browser_tabs", {"action": "list"})
            assert b_list.structured_content is not None
            b_ids = [t["id"] for t in b_list.structured_content["result"]["tabs"]]
            assert a_tab not in b_ids
            assert site.url("/page/a") not in text(b_list)

            touched = await b.call_tool("browser_snapshot", {"full": True, "tabId": a_tab})
            assert touched.is_error
            assert f"Tab {a_tab} not found" in section(touched, "Error")
            assert contexts(shared_browser) == contexts_before + 2
        # Each client ended its session (DELETE): its browser context is gone.
        for _ in range(100):
            if contexts(shared_browser) == contexts_before:
                break
            await asyncio.sleep(0.05)
        assert contexts(shared_browser) == contexts_before


async def test_requests_with_a_foreign_host_or_origin_are_rejected(
    shared_browser: Instance,
) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25"}
    async with serve(shared_browser) as url:
        async with httpx2.AsyncClient() as http:
            host = await http.post(url, json=body, headers={**headers, "host": "evil.example:80"})
            assert host.status_code == 421
            origin = await http.post(url, json=body, headers={**headers, "origin": "http://evil.example"})
            assert origin.status_code == 403


async def test_a_bearer_token_is_required_when_configured(shared_browser: Instance) -> None:
    async with serve(shared_browser, auth_token="s3cret") as url:
        async with httpx2.AsyncClient() as http:
            refused = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
            assert refused.status_code == 401
        authed = httpx2.AsyncClient(headers={"authorization": "Bearer s3cret"})
        async with authed, Client(streamable_http_client(url, http_client=authed)) as client:
            tools = await client.list_tools()
            assert "browser_tabs" in {t.name for t in tools.tools}


def test_a_non_loopback_bind_is_refused_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(ValueError, match="--auth-token"):
        check_bind(ServerConfig(http_host="0.0.0.0"))
    check_bind(ServerConfig(http_host="0.0.0.0", auth_token="t"))  # allowed with a token
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--http", "0.0.0.0:8931"])
    assert exited.value.code == 2
    assert "--auth-token" in capsys.readouterr().err


async def test_an_idle_session_releases_its_browser_context(shared_browser: Instance) -> None:
    contexts_before = contexts(shared_browser)
    async with serve(shared_browser, session_idle_timeout=0.5) as url:
        # A client that goes away without ending its session (no DELETE).
        async with Client(streamable_http_client(url, terminate_on_close=False)) as client:
            await client.call_tool("browser_tabs", {"action": "list"})
            assert contexts(shared_browser) == contexts_before + 1
        for _ in range(100):
            if contexts(shared_browser) == contexts_before:
                break
            await asyncio.sleep(0.05)
        assert contexts(shared_browser) == contexts_before


async def test_a_session_cannot_reach_other_browsers(shared_browser: Instance, site: Any) -> None:
    """Over HTTP, a client may not read a DevTools endpoint (it lists every tab of a browser and
    how to drive it) nor launch or connect browsers unless the operator allows it."""
    site.set_content("/json/list", '[{"id": "SECRET-TARGET"}]', content_type="application/json")
    site.set_content("/lure", '<a href="/json/list">targets</a>')
    async with serve(shared_browser) as url:
        async with Client(url) as client:
            typed = await client.call_tool("browser_navigate", {"url": site.url("/json/list")})
            assert "DevTools endpoint" in error(typed)

            ok(await client.call_tool("browser_navigate", {"url": site.url("/lure")}))
            shot = ok(await client.call_tool("browser_snapshot", {"full": True}))
            await client.call_tool("browser_click", {"ref": ref_of(text(shot), "targets")})
            after = ok(await client.call_tool("browser_snapshot", {"full": True}))
            assert "SECRET-TARGET" not in text(after)

            connect = await client.call_tool(
                "browser_instance", {"action": "connect", "cdpEndpoint": "http://127.0.0.1:9222"}
            )
            assert "--allow-instances" in error(connect)
            launch = await client.call_tool("browser_instance", {"action": "launch"})
            assert "--allow-instances" in error(launch)
            listed = ok(await client.call_tool("browser_instance", {"action": "list"}))
            assert result_of(listed)["count"] == 1  # the session's own browser context, nothing more


async def test_clients_beyond_max_sessions_are_refused(shared_browser: Instance) -> None:
    async with serve(shared_browser, max_sessions=1) as url:
        async with Client(url) as first:
            ok(await first.call_tool("browser_tabs", {"action": "list"}))
            with pytest.raises(Exception) as refused:
                async with Client(url) as second:
                    await second.call_tool("browser_tabs", {"action": "list"})
            assert "Too many open sessions" in repr(refused.value)
            ok(await first.call_tool("browser_tabs", {"action": "list"}))  # the first one is unharmed
        async with Client(url) as later:  # its session ended: room for another
            ok(await later.call_tool("browser_tabs", {"action": "list"}))


async def test_the_total_tab_cap_holds_across_sessions(shared_browser: Instance, site: Any) -> None:
    async with serve(shared_browser, max_total_tabs=3) as url:
        async with Client(url) as a, Client(url) as b:
            ok(await a.call_tool("browser_tabs", {"action": "list"}))  # a's first tab
            ok(await a.call_tool("browser_tabs", {"action": "new"}))
            ok(await b.call_tool("browser_tabs", {"action": "list"}))  # b's first tab: 3 in all
            refused = await b.call_tool("browser_tabs", {"action": "new"})
            assert "--max-total-tabs 3" in error(refused)
            # A page in b opening a popup: closed at once, a's tabs untouched.
            ok(await b.call_tool("browser_navigate", {"url": site.url("/")}))
            shot = ok(await b.call_tool("browser_snapshot", {"full": True}))
            clicked = ok(await b.call_tool("browser_click", {"ref": ref_of(text(shot), "Open popup")}))
            popup = next(t for t in data(clicked)["events"] if t["type"] == "tab_opened")["tabId"]
            assert f"tab {popup} closed (over the tab limit)" in section(clicked, "Events")
            a_tabs = result_of(ok(await a.call_tool("browser_tabs", {"action": "list"})))["tabs"]
            b_tabs = result_of(ok(await b.call_tool("browser_tabs", {"action": "list"})))["tabs"]
            assert (len(a_tabs), len(b_tabs)) == (2, 1)


async def test_sessions_get_a_new_browser_after_the_shared_one_died(browser_path: str, site: Any) -> None:
    async with TabManager(browser_path=browser_path) as host:
        doomed = await host.launch()
        assert doomed.pid is not None
        async with serve(doomed, browser=BrowserOptions(browser_path=browser_path)) as url:
            async with Client(url) as client:
                ok(await client.call_tool("browser_navigate", {"url": site.url("/page/a")}))
                os.kill(doomed.pid, signal.SIGKILL)
                await wait_until(lambda: doomed.state == "lost")
                again = ok(await client.call_tool("browser_navigate", {"url": site.url("/page/b")}))
                assert "was launched in place of lost instance" in section(again, "Events")
                assert "Page b" in text(again)
                listed = result_of(ok(await client.call_tool("browser_tabs", {"action": "list"})))
                assert [t["url"] for t in listed["tabs"]] == [site.url("/page/b")]


def test_the_auth_token_is_checked_and_can_come_from_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refused(*argv: str) -> str:
        with pytest.raises(SystemExit) as exited:
            cli.main(["serve", *argv])
        assert exited.value.code == 2
        return capsys.readouterr().err

    assert "empty or starts or ends with spaces" in refused("--http", "8931", "--auth-token", " ")
    assert "shorter than 8 characters" in refused("--http", "8931", "--auth-token", "abc")
    assert "only applies to an HTTP server" in refused("--auth-token", "a-long-secret")
    monkeypatch.setenv("TABPILOT_AUTH_TOKEN", "from-the-environment")
    parser = cli.build_parser()
    config = cli.config_from_args(parser.parse_args(["serve", "--http", "0.0.0.0:8931"]))
    assert config.auth_token == "from-the-environment"  # and so a non-loopback bind is allowed
    stdio = cli.config_from_args(parser.parse_args(["serve"]))
    assert stdio.auth_token is None
