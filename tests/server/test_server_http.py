"""tabpilot over streamable HTTP: isolated sessions, DNS-rebinding checks, the bearer token."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client
from mcp.types import LoggingMessageNotificationParams

from support import RemoteChromium, data, error, ok, poll, ref_of, result_of, section, text, wait_until
from tabpilot import BrowserOptions, Instance, TabManager, cli
from tabpilot.server import ServerConfig, create_server
from tabpilot.server.http import check_bind, http_app, url_host


def contexts(shared: Instance) -> int:
    """Browser contexts of the shared browser (one per HTTP session, plus its own)."""
    assert shared.browser is not None
    return len(shared.browser.contexts)


@asynccontextmanager
async def serve(
    shared_browser: Instance | None, *, host: str = "127.0.0.1", **options: Any
) -> AsyncIterator[str]:
    """Serve a tabpilot server over HTTP on a free loopback port; yields the /mcp URL. Without a
    shared browser the server launches its own, as `tabpilot serve --http` does."""
    config = ServerConfig(http_host=host, http_port=0, structured_content=True, **options)
    server = create_server(config, shared=shared_browser)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    uv = uvicorn.Server(uvicorn.Config(http_app(server, config), log_level="warning", lifespan="on"))
    task = asyncio.create_task(uv.serve(sockets=[sock]))
    while not uv.started:
        await asyncio.sleep(0.01)
    try:
        yield f"http://{url_host(host)}:{port}/mcp"
    finally:
        uv.should_exit = True
        await task
        sock.close()


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def raw_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """Open an MCP session by hand, without the notification stream (GET) the SDK's client keeps
    open; returns the headers its requests carry."""
    opened = await http.post(
        url,
        headers=HEADERS,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
    )
    assert opened.status_code == 200, opened.text
    headers = {
        **HEADERS,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": "2025-11-25",
    }
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


async def raw_call(
    http: httpx2.AsyncClient, url: str, headers: dict[str, str], tool: str, arguments: dict[str, Any]
) -> httpx2.Response:
    return await http.post(
        url,
        headers=headers,
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
    )


def answer(response: httpx2.Response) -> str:
    """The text of a tool call's result, from its SSE response."""
    assert response.status_code == 200, response.text
    messages = [json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")]
    return str(messages[-1]["result"]["content"][0]["text"])


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
            # A ref of A's tab, used on B's own tab: A's tab is not found here either, and nothing
            # tells B to act on it by leaving tabId out.
            a_ref = ref_of(text(opened), "heading")
            b_tab = b_ids[0]
            for arguments in ({"ref": a_ref, "tabId": b_tab}, {"ref": a_ref}):
                foreign = await b.call_tool("browser_click", arguments)
                said = section(foreign, "Error")
                assert said.startswith(f"Tab {a_tab} not found. Ref {a_ref} came from it"), said
                assert "Leave tabId out" not in said and f"tab {b_tab}:" in said
            assert contexts(shared_browser) == contexts_before + 2
        # Each client ended its session (DELETE): its browser context is gone.
        for _ in range(100):
            if contexts(shared_browser) == contexts_before:
                break
            await asyncio.sleep(0.05)
        assert contexts(shared_browser) == contexts_before


async def test_a_sessions_saved_cookies_are_its_own(
    shared_browser: Instance, site: Any, tmp_path: Path
) -> None:
    # Sessions share the file roots: B uploaded the file A saved its cookies to into a page of its
    # own and read A's login with a script, and B's save without a path overwrote A's file.
    async with serve(shared_browser, allowed_file_roots=(str(tmp_path),)) as url:
        async with Client(url) as a, Client(url) as b:
            for client, name in ((a, "alice"), (b, "bob")):
                opened = ok(
                    await client.call_tool(
                        "browser_tabs",
                        {"action": "new", "url": site.url(f"/api/set-cookie?name=login&value={name}")},
                    )
                )
                assert result_of(opened)["tabId"]
            saved = {
                name: result_of(ok(await client.call_tool("browser_storage_state", {})))["path"]
                for client, name in ((a, "alice"), (b, "bob"))
            }
            assert saved["alice"] != saved["bob"], "each session's default file is its own"
            for name, path in saved.items():
                assert [c["value"] for c in json.loads(Path(path).read_text())["cookies"]] == [name]
                assert Path(path).parent == tmp_path

            site.set_content("/upload", "<title>Upload</title><input type=file aria-label=Pick>")
            page = ok(await b.call_tool("browser_tabs", {"action": "new", "url": site.url("/upload")}))
            pick = ref_of(text(page), "Pick")
            stolen = error(await b.call_tool("browser_file_upload", {"ref": pick, "paths": [saved["alice"]]}))
            assert stolen == (
                f"{saved['alice']!r} holds another session's cookies (it saved them there): it cannot be uploaded "
                "by this session. Give another path."
            )
            overwrite = error(await b.call_tool("browser_storage_state", {"path": saved["alice"]}))
            assert "holds another session's cookies" in overwrite and "cannot be written" in overwrite
            assert [c["value"] for c in json.loads(Path(saved["alice"]).read_text())["cookies"]] == ["alice"]
            # Nor in a folder, through a link to it (a folder input sends every file in the folder).
            (tmp_path / "folder").mkdir()
            (tmp_path / "folder" / "cookies.json").symlink_to(saved["alice"])
            site.set_content(
                "/folder", "<title>Folder</title><input type=file webkitdirectory aria-label=Dir>"
            )
            folder_page = ok(await b.call_tool("browser_tabs", {"action": "new", "url": site.url("/folder")}))
            folder = {"ref": ref_of(text(folder_page), "Dir"), "paths": [str(tmp_path / "folder")]}
            assert error(await b.call_tool("browser_file_upload", folder)) == stolen
            # Its own file, a session may use.
            ok(await b.call_tool("browser_file_upload", {"ref": pick, "paths": [saved["bob"]]}))
            again = ok(await b.call_tool("browser_storage_state", {"path": saved["bob"]}))
            # No browser an agent starts over HTTP (launch is off): the operator's option is named as theirs.
            assert section(again, "Result").endswith(
                f"The server's operator can start a browser with it: --storage-state {saved['bob']}."
            )


async def test_a_sessions_default_storage_file_never_overwrites_one_an_earlier_run_saved(
    shared_browser: Instance, site: Any, tmp_path: Path
) -> None:
    # Session numbers start again at 1 with each run of the server: the first session of the next
    # run, often another agent, wrote its cookies over the file the first one of this run saved.
    async def save(name: str) -> list[str]:
        async with serve(shared_browser, allowed_file_roots=(str(tmp_path),)) as url, Client(url) as client:
            login = {"action": "new", "url": site.url(f"/api/set-cookie?name=login&value={name}")}
            ok(await client.call_tool("browser_tabs", login))
            return [result_of(ok(await client.call_tool("browser_storage_state", {})))["path"] for _ in "12"]

    first = await save("alice")
    assert first == [str(tmp_path / "storage-state-1.json")] * 2  # a session's own file, saved again
    second = await save("bob")
    assert second == [str(tmp_path / "storage-state-1-2.json")] * 2
    for path, name in ((first[0], "alice"), (second[0], "bob")):
        assert [c["value"] for c in json.loads(Path(path).read_text())["cookies"]] == [name]


async def test_a_cursor_kept_from_an_ended_session_reads_the_next_sessions_entries_from_there(
    shared_browser: Instance, site: Any
) -> None:
    # An agent whose session ended (idle, a restart of its client) goes on with its last cursor:
    # every session's numbering started at 1, and the cursor passed over the new session's first
    # entries, saying nothing matched.
    async def logged(client: Client, message: str) -> list[dict[str, Any]]:
        url = site.url(f"/console?msg={message}")
        ok(await client.call_tool("browser_navigate", {"url": url}))
        read = await poll(
            lambda: client.call_tool("browser_observe", {"what": "logs"}),
            lambda r: message in text(r),
        )
        return list(result_of(read)["entries"])

    async with serve(shared_browser) as url:
        async with Client(url) as first:
            for n in range(5):  # numbers the next session's first entries would have had
                await logged(first, f"first-{n}")
            cursor = result_of(ok(await first.call_tool("browser_observe", {"what": "logs"})))["next_cursor"]
        async with Client(url) as second:
            await logged(second, "second-session")
            since = result_of(
                ok(await second.call_tool("browser_observe", {"what": "logs", "since": cursor}))
            )
            assert [e["text"] for e in since["entries"]] == ["second-session"], since
            assert all(e["seq"] > cursor for e in since["entries"])


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
            # A loopback name without a port is this machine's (a server on port 80, a local proxy).
            bare = await http.post(
                url, json=body, headers={**headers, "host": "localhost", "origin": "http://127.0.0.1"}
            )
            assert bare.status_code not in (403, 421), bare.text  # past the check (then: no session)


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


async def test_an_idle_session_releases_its_browser_context(
    shared_browser: Instance, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="tabpilot.server")
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
        # One that ends its session; the log tells the sessions apart by their numbers, never
        # by their ids (which would let a reader of the log act as the session).
        async with Client(url) as client:
            await client.call_tool("browser_tabs", {"action": "list"})
        await wait_until(lambda: "HTTP session 2 ended" in caplog.text)
    said = [r.getMessage() for r in caplog.records if "HTTP session" in r.getMessage()]
    assert said[0] == "HTTP session 1 opened (1 open): instance inst_1"
    assert said[1].startswith("HTTP session 1 ended (idle for ") and said[1].endswith(" s)")
    assert said[2:] == [
        "HTTP session 2 opened (1 open): instance inst_1",
        "HTTP session 2 ended (its client ended it)",
    ]


async def test_a_session_is_not_idle_while_a_call_of_it_runs(shared_browser: Instance, site: Any) -> None:
    contexts_before = contexts(shared_browser)
    async with serve(shared_browser, session_idle_timeout=0.5) as url, httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url)
        answer(
            await raw_call(http, url, headers, "browser_tabs", {"action": "new", "url": site.url("/page/a")})
        )
        # Three idle timeouts long, and no other request meanwhile: the session is busy, not idle.
        waited = answer(await raw_call(http, url, headers, "browser_wait_for", {"time": 1.5}))
        assert "Waited for 1.5 s" in waited and "closed" not in waited, waited
        listed = answer(await raw_call(http, url, headers, "browser_tabs", {"action": "list"}))
        assert site.url("/page/a") in listed, listed
        assert contexts(shared_browser) == contexts_before + 1
        # Idle from the end of that call on: the SDK ends the MCP session and its context goes.
        await wait_until(lambda: contexts(shared_browser) == contexts_before)
        expired = await raw_call(http, url, headers, "browser_tabs", {"action": "list"})
        assert expired.status_code == 404  # as the MCP spec says; never a fresh context under that id
        assert contexts(shared_browser) == contexts_before


async def test_an_open_notification_stream_keeps_its_session(shared_browser: Instance, site: Any) -> None:
    """The SDK's client keeps a GET stream open while it is connected: it is not idle, whatever the
    time between its calls."""
    async with serve(shared_browser, session_idle_timeout=0.3) as url, Client(url) as client:
        opened = ok(await client.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")}))
        await asyncio.sleep(1.2)
        listed = ok(await client.call_tool("browser_tabs", {"action": "list"}))
        assert [t["id"] for t in result_of(listed)["tabs"]][-1] == result_of(opened)["tabId"]
        assert "### Events" not in text(listed)  # nothing closed, nothing reopened


async def test_a_session_the_client_ended_answers_404(shared_browser: Instance) -> None:
    contexts_before = contexts(shared_browser)
    async with serve(shared_browser) as url, httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url)
        answer(await raw_call(http, url, headers, "browser_tabs", {"action": "list"}))
        assert contexts(shared_browser) == contexts_before + 1
        assert (await http.delete(url, headers=headers)).status_code == 200
        await wait_until(lambda: contexts(shared_browser) == contexts_before)
        ended = await raw_call(http, url, headers, "browser_tabs", {"action": "list"})
        assert ended.status_code == 404
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
            for host in ("localhost.", "0x7f000001", "[::ffff:127.0.0.1]"):  # this machine, spelt otherwise
                spelt = site.url("/json/list").replace("127.0.0.1", host)
                assert "DevTools endpoint" in error(
                    await client.call_tool("browser_navigate", {"url": spelt})
                )

            ok(await client.call_tool("browser_navigate", {"url": site.url("/lure")}))
            shot = ok(await client.call_tool("browser_snapshot", {"full": True}))
            await client.call_tool("browser_click", {"ref": ref_of(text(shot), "targets")})
            after = ok(await client.call_tool("browser_snapshot", {"full": True}))
            assert "SECRET-TARGET" not in text(after)
            # Nor may a page's own script read it (or close a tab through /json/close).
            ok(await client.call_tool("browser_navigate", {"url": site.url("/page/a")}))
            fetched = ok(
                await client.call_tool(
                    "browser_evaluate",
                    {
                        "function": "() => fetch('/json/list').then(r => r.text(), e => 'refused: ' + e.message)"
                    },
                )
            )
            assert "refused: Failed to fetch" in text(fetched) and "SECRET-TARGET" not in text(fetched)

            connect = await client.call_tool(
                "browser_instance", {"action": "connect", "cdpEndpoint": "http://127.0.0.1:9222"}
            )
            assert "--allow-instances" in error(connect)
            launch = await client.call_tool("browser_instance", {"action": "launch"})
            assert "--allow-instances" in error(launch)
            listed = ok(await client.call_tool("browser_instance", {"action": "list"}))
            assert result_of(listed)["count"] == 1  # the session's own browser context, nothing more
            # Nor close that one: nothing could replace it, and the session would have no tab again.
            own = result_of(listed)["instances"][0]["id"]
            close = error(await client.call_tool("browser_instance", {"action": "close", "instanceId": own}))
            assert close.startswith("browser_instance close is off on this HTTP server"), close
            ok(await client.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")}))


async def test_two_clients_cannot_drive_one_browser_at_once(
    shared_browser: Instance, remote: RemoteChromium
) -> None:
    """Each HTTP session has its own manager: a browser one session connected is refused to the
    next under any of its URLs, else its pages would have two ids and two clients acting on them."""
    async with serve(shared_browser, allow_instances=True) as url:
        async with Client(url) as first, Client(url) as second:
            connect = {"action": "connect", "cdpEndpoint": remote.http}
            iid = result_of(ok(await first.call_tool("browser_instance", connect)))["instanceId"]
            for alias in (remote.http, remote.ws):
                refused = error(await second.call_tool("browser_instance", {**connect, "cdpEndpoint": alias}))
                assert refused.startswith(
                    f"The browser at {alias} is driven by another client of this server already"
                ), refused
            listed = result_of(ok(await second.call_tool("browser_instance", {"action": "list"})))
            assert listed["count"] == 1  # its own browser context only

            ok(await first.call_tool("browser_instance", {"action": "close", "instanceId": iid}))
            again = result_of(ok(await second.call_tool("browser_instance", connect)))
            ok(
                await second.call_tool(
                    "browser_instance", {"action": "close", "instanceId": again["instanceId"]}
                )
            )


async def test_clients_beyond_max_sessions_are_refused(shared_browser: Instance) -> None:
    async with serve(shared_browser, max_sessions=1) as url:
        async with Client(url) as first:
            ok(await first.call_tool("browser_tabs", {"action": "list"}))
            with pytest.raises(Exception) as refused:
                async with Client(url) as second:
                    await second.call_tool("browser_tabs", {"action": "list"})
            said = repr(refused.value)
            assert "Too many open sessions: this server serves at most 1 at once (--max-sessions 1)" in said
            assert "--session-idle-timeout" in said
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
            # Which limit: b's own (--max-tabs) leaves room, all sessions' together does not.
            assert (
                f"tab {popup} closed (over the tab limit of all sessions and instances together, --max-total-tabs)"
                in section(clicked, "Events")
            )
            # b's one tab cannot be closed: the way out is the other sessions' tabs, or a higher cap.
            said = section(clicked, "Result")
            assert (
                "(--max-total-tabs 3, for all sessions together) closed it at once: the other sessions hold"
                in said
            )
            assert "close tabs you no longer need" not in said
            a_tabs = result_of(ok(await a.call_tool("browser_tabs", {"action": "list"})))["tabs"]
            b_tabs = result_of(ok(await b.call_tool("browser_tabs", {"action": "list"})))["tabs"]
            assert (len(a_tabs), len(b_tabs)) == (2, 1)


async def test_the_total_tab_cap_counts_the_tabs_sessions_use_not_the_shared_browsers_own(
    browser_path: str,
) -> None:
    """Served as `tabpilot serve --http` does: the server launches the shared browser, whose own
    tab no session sees; the cap is the sessions' tabs."""
    options = BrowserOptions(browser_path=browser_path)
    async with serve(None, browser=options, max_total_tabs=2) as url, Client(url) as a, Client(url) as b:
        ok(await a.call_tool("browser_tabs", {"action": "list"}))  # a's first tab
        ok(await a.call_tool("browser_tabs", {"action": "new"}))  # and its second: 2 in all
        refused = error(await a.call_tool("browser_tabs", {"action": "new"}))
        assert (
            "2 tabs are open in all sessions and instances together, the limit (--max-total-tabs 2)."
            in refused
        )
        assert "Close tabs you no longer need" in refused
        # b finds no room for a first tab: it starts without one, and opening one says why.
        listed = ok(await b.call_tool("browser_tabs", {"action": "list"}))
        assert result_of(listed)["tabs"] == []
        refused = error(await b.call_tool("browser_tabs", {"action": "new"}))
        assert "this session has none of them. The other sessions hold them all" in refused
        assert "Close tabs" not in refused
        tabs = result_of(ok(await a.call_tool("browser_tabs", {"action": "list"})))["tabs"]
        ok(await a.call_tool("browser_tabs", {"action": "close", "tabId": tabs[0]["id"]}))
        ok(await b.call_tool("browser_tabs", {"action": "new"}))  # the room a made


async def test_a_session_left_without_a_tab_by_the_total_cap_is_told_why_before_it_tries_to_open_one(
    shared_browser: Instance, site: Any
) -> None:
    # b's first page call was told to open a tab, which the total refused: a second call to learn
    # that the other sessions hold every tab there may be.
    async with serve(shared_browser, max_total_tabs=2) as url, Client(url) as a, Client(url) as b:
        ok(await a.call_tool("browser_tabs", {"action": "list"}))
        ok(await a.call_tool("browser_tabs", {"action": "new"}))
        said = error(await b.call_tool("browser_navigate", {"url": site.url("/page/b")}))
        assert said.startswith("Instance inst_1 has no open tab to work on."), said
        assert said.endswith(
            "None can be opened either: 2 tabs are open in all sessions and instances together, the "
            "limit (--max-total-tabs 2), and the other sessions hold them all. Open one with "
            "browser_tabs(action='new', url=...) once they have closed tabs or ended, or ask whoever "
            "runs the server to raise --max-total-tabs."
        ), said
        # Once there is room, the error says to open one, and that works.
        tabs = result_of(ok(await a.call_tool("browser_tabs", {"action": "list"})))["tabs"]
        ok(await a.call_tool("browser_tabs", {"action": "close", "tabId": tabs[0]["id"]}))
        said = error(await b.call_tool("browser_snapshot", {}))
        assert said.endswith("No tab is open: open one with browser_tabs(action='new', url=...)."), said
        ok(await b.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/b")}))


async def test_a_session_with_its_one_tab_at_the_total_cap_is_told_to_use_that_tab(
    shared_browser: Instance,
) -> None:
    async with serve(shared_browser, max_total_tabs=1) as url, Client(url) as client:
        ok(await client.call_tool("browser_tabs", {"action": "list"}))
        refused = error(await client.call_tool("browser_tabs", {"action": "new"}))
        assert "1 tab is open in all sessions and instances together" in refused
        # A browser keeps its last tab: closing it is no way out.
        assert "Load the page in the tab you have instead, or ask whoever runs the server to raise" in refused


async def test_ipv6_loopback_is_served_with_its_host_checked(shared_browser: Instance) -> None:
    try:
        socket.socket(socket.AF_INET6).close()
    except OSError:
        pytest.skip("this machine has no IPv6")
    async with serve(shared_browser, host="::1") as url:
        assert url.startswith("http://[::1]:")
        async with Client(url) as client:  # its Host header is [::1]:PORT
            ok(await client.call_tool("browser_tabs", {"action": "list"}))
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        headers = {**HEADERS, "mcp-protocol-version": "2025-11-25"}
        async with httpx2.AsyncClient() as http:
            host = await http.post(url, json=body, headers={**headers, "host": "evil.example:80"})
            assert host.status_code == 421
            origin = await http.post(url, json=body, headers={**headers, "origin": "http://evil.example"})
            assert origin.status_code == 403
            own = await http.post(url, json=body, headers={**headers, "origin": url.removesuffix("/mcp")})
            assert own.status_code not in (403, 421)


def test_an_ipv6_address_is_given_in_brackets(capsys: pytest.CaptureFixture[str]) -> None:
    parser = cli.build_parser()
    config = cli.config_from_args(parser.parse_args(["serve", "--http", "[::1]:8931"]))
    assert (config.http_host, config.http_port) == ("::1", 8931)
    check_bind(config)  # loopback: no token needed
    for bare in ("::1", "::1:8931"):
        with pytest.raises(SystemExit) as exited:
            cli.main(["serve", "--http", bare])
        assert exited.value.code == 2
        assert (
            "write an IPv6 address in brackets, with the port after them: [::1]:8931"
            in capsys.readouterr().err
        )
    with pytest.raises(SystemExit):
        cli.main(["serve", "--http", "[::1]"])
    assert "'[::1]' has no port: write [::1]:PORT" in capsys.readouterr().err
    with pytest.raises(ValueError, match=r"Refusing to serve HTTP on \[::\]"):
        check_bind(ServerConfig(http_host="::"))


@pytest.mark.filterwarnings("ignore:The logging capability is deprecated")  # the client's set_logging_level
async def test_a_client_of_the_handshake_era_gets_its_logs_after_logging_set_level(
    shared_browser: Instance, site: Any
) -> None:
    """Over HTTP the protocol is the handshake era's, whose clients ask for log records with
    logging/setLevel: it was "Method not found" and no record ever came (SPEC §5)."""
    got: dict[str, list[LoggingMessageNotificationParams]] = {"a": [], "b": []}

    def collect(into: list[LoggingMessageNotificationParams]) -> Any:
        async def on_log(params: LoggingMessageNotificationParams) -> None:
            into.append(params)

        return on_log

    tabpilot_logger = logging.getLogger("tabpilot")
    level = tabpilot_logger.level
    tabpilot_logger.setLevel(logging.DEBUG)  # what --log-level does; records are made
    try:
        async with serve(shared_browser) as url:
            async with (
                Client(url, logging_callback=collect(got["a"])) as a,
                Client(url, logging_callback=collect(got["b"])) as b,
            ):
                assert a.server_capabilities is not None and a.server_capabilities.logging is not None
                await a.set_logging_level("debug")
                ok(await a.call_tool("browser_navigate", {"url": site.url("/page/a")}))
                ok(await b.call_tool("browser_navigate", {"url": site.url("/page/a")}))  # asked for none
                await a.set_logging_level("warning")
                ok(await a.call_tool("browser_tabs", {"action": "list"}))
    finally:
        tabpilot_logger.setLevel(level)
    said = [str(p.data) for p in got["a"]]
    assert sum(s.startswith("browser_navigate(") and ": ok in" in s for s in said) == 1, said
    assert not any(s.startswith("browser_tabs(") for s in said), said  # debug, under "warning"
    assert got["b"] == []


async def test_sessions_get_a_new_browser_after_the_shared_one_died(browser_path: str, site: Any) -> None:
    async with TabManager(browser_path=browser_path) as host:
        doomed = await host.launch()
        assert doomed.pid is not None
        async with serve(doomed, browser=BrowserOptions(browser_path=browser_path)) as url:
            async with Client(url) as client:
                ok(await client.call_tool("browser_navigate", {"url": site.url("/page/a")}))
                # A call under way as it dies is told what works here: browser_instance launch is
                # off over HTTP (it was the advice), a call without tabId opens a new browser.
                slow = client.call_tool("browser_navigate", {"url": site.url("/api/slow?ms=5000")})
                async with anyio.create_task_group() as group:

                    async def kill_soon(pid: int = doomed.pid) -> None:
                        await anyio.sleep(0.5)
                        os.kill(pid, signal.SIGKILL)

                    group.start_soon(kill_soon)
                    cut = error(await slow)
                assert "browser_instance" not in cut, cut
                assert cut.endswith(
                    "A call without tabId and instanceId opens your session a new browser in its place, with a "
                    "blank tab."
                ), cut
                await wait_until(lambda: doomed.state == "lost")
                again = ok(await client.call_tool("browser_navigate", {"url": site.url("/page/b")}))
                events = section(again, "Events")
                assert "was launched in place of lost instance" in events
                # The session's context closed first, but it is the browser that went.
                assert f"the browser process (pid {doomed.pid}) ended: it was killed or crashed" in events
                assert "context was closed" not in events
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


async def test_a_call_whose_client_went_away_is_cancelled_and_frees_its_tab(
    shared_browser: Instance, site: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that drops its connection while its call runs gets no answer: the call is cancelled
    (as `notifications/cancelled` would), the next call on the tab does not wait for it, and the
    log says why."""
    # Each key takes the page 30 ms: typing 2000 keys holds the tab's input for over a minute.
    site.set_content(
        "/box", '<input aria-label="Box" onkeydown="const t = Date.now(); while (Date.now() - t < 30) {}">'
    )
    caplog.set_level(logging.INFO, logger="tabpilot")
    async with serve(shared_browser) as url, httpx2.AsyncClient(timeout=60) as http:
        headers = await raw_session(http, url)
        box = ref_of(
            answer(await raw_call(http, url, headers, "browser_navigate", {"url": site.url("/box")})), "Box"
        )
        length = {"function": "() => document.querySelector('input').value.length"}

        async def typed() -> int:
            said = answer(await raw_call(http, url, headers, "browser_evaluate", length))
            return int(said.split("```")[1].strip().split()[-1]) if "```" in said else int(said.split()[-1])

        slow = {"ref": box, "text": "y" * 2000, "slowly": True}
        request = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "browser_type", "arguments": slow},
        }
        async with http.stream("POST", url, headers=headers, json=request) as typing:
            assert typing.status_code == 200
            await poll(typed, lambda n: n > 0, timeout=20)
        # The connection is gone: the next action on the tab gets its turn at once, not after the
        # 2000 keys.
        with anyio.fail_after(30):
            clicked = answer(await raw_call(http, url, headers, "browser_click", {"ref": box}))
        assert "Clicked" in clicked, clicked
        first = await typed()
        await asyncio.sleep(0.5)
        assert await typed() == first  # the typing stopped
    said = [r.getMessage() for r in caplog.records if r.name.startswith("tabpilot")]
    assert any("browser_type" in s and "disconnected" in s for s in said), said


async def test_a_page_still_loading_after_its_navigation_was_cancelled_is_said_to_be_loading(
    shared_browser: Instance, site: Any
) -> None:
    """A client that gives up on a navigation to a server that does not answer (the SDK sends
    `notifications/cancelled`): the browser keeps waiting for the page, and the tab's next read
    says so, not that a script keeps the page busy."""
    async with serve(shared_browser) as url, Client(url) as client:
        tab = result_of(ok(await client.call_tool("browser_tabs", {"action": "new", "url": site.url("/")})))
        tab_id = tab["tabId"]
        slow = site.url("/api/slow?ms=60000")
        with anyio.move_on_after(1.5):
            await client.call_tool("browser_navigate", {"url": slow, "tabId": tab_id})
        said = error(await client.call_tool("browser_snapshot", {"tabId": tab_id}))
        assert "whose server has not sent it yet" in said and "/api/slow" in said, said
        assert "not responding" not in said, said
        # Another page loads at once: the tab is not taken for one stuck in a script.
        went = text(
            ok(await client.call_tool("browser_navigate", {"url": site.url("/page/a"), "tabId": tab_id}))
        )
        assert "Page a" in went, went


async def test_a_call_too_large_for_http_is_told_the_limit_and_the_session_goes_on(
    shared_browser: Instance, site: Any
) -> None:
    """A request body over the SDK's limit (4 MB): the client was told only "Server returned an
    error response" (the SDK's refusal is plain text); it reads the limit and what to do."""
    site.set_content("/box", '<textarea aria-label="Box"></textarea>')
    async with serve(shared_browser) as url, Client(url) as client:
        box = ref_of(text(ok(await client.call_tool("browser_navigate", {"url": site.url("/box")}))), "Box")
        with pytest.raises(MCPError) as refused:
            await client.call_tool("browser_type", {"ref": box, "text": "x" * 5_000_000})
        said = str(refused.value)
        assert "at most 4 MB per request" in said and "several calls" in said, said
        typed = ok(await client.call_tool("browser_type", {"ref": box, "text": "x" * 20_000}))
        assert "### Error" not in text(typed)


async def test_an_ended_session_and_a_batch_are_refused_saying_what_to_do(shared_browser: Instance) -> None:
    """The SDK's refusals said only "Session not found" (no why, no way on) and, for a JSON-RPC
    batch, a list of pydantic validation errors."""
    async with serve(shared_browser, session_idle_timeout=60) as url, httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        batch = await http.post(url, headers=headers, json=[ping, {**ping, "id": 2}])
        assert batch.status_code == 400
        said = batch.json()["error"]["message"]
        assert said.startswith("JSON-RPC batches are not taken") and "a POST of its own" in said, said
        assert (await http.post(url, headers=headers, json=ping)).status_code == 200  # the session goes on
        assert (await http.delete(url, headers=headers)).status_code == 200
        ended = await http.post(url, headers=headers, json=ping)
        assert ended.status_code == 404
        said = ended.json()["error"]["message"]
        assert said.startswith("Session not found: this session ended"), said
        assert "no request for 60 s" in said and "Start a new session (initialize" in said, said


async def test_a_client_refused_for_its_token_host_or_origin_is_told_why(shared_browser: Instance) -> None:
    """The refusals were plain text, which the SDK's client shows only as "Server returned an
    error response": an MCP client now reads why, and what to do."""
    async with serve(shared_browser, auth_token="s3cret") as url:
        with pytest.raises(Exception) as refused:
            async with Client(url) as client:
                await client.list_tools()
        said = repr(refused.value)
        assert "Missing or wrong bearer token: send the token" in said and "Bearer TOKEN" in said, said
    for header, why in (("host", "Invalid Host header: "), ("origin", "Invalid Origin header: ")):
        foreign = "evil.example:80" if header == "host" else "http://evil.example"
        own = httpx2.AsyncClient(headers={header: foreign})
        async with serve(shared_browser) as url, own:
            with pytest.raises(Exception) as refused:
                async with Client(streamable_http_client(url, http_client=own)) as client:
                    await client.list_tools()
            said = repr(refused.value)
            assert why in said and "DNS rebinding" in said, said


async def test_an_unknown_protocol_version_is_refused_as_unknown_not_as_sessionless(
    shared_browser: Instance,
) -> None:
    """A version the server does not know was refused as one "with no sessions", like 2026-07-28's."""
    async with serve(shared_browser) as url, httpx2.AsyncClient(timeout=30) as http:
        headers = await raw_session(http, url)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        said = {}
        for version in ("1999-01-01", "2026-07-28"):
            refused = await http.post(url, headers={**headers, "mcp-protocol-version": version}, json=ping)
            assert refused.status_code == 400, refused.text
            said[version] = refused.json()["error"]["message"]
        assert said["1999-01-01"].startswith("Unsupported protocol version 1999-01-01"), said
        assert "2025-11-25" in said["1999-01-01"] and "no sessions" not in said["1999-01-01"], said
        assert "protocol 2026-07-28 has no sessions" in said["2026-07-28"], said
