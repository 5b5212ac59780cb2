"""`tabpilot serve` over stdio, as an MCP client that launches servers runs it."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from typing import Any

from mcp import Client, StdioServerParameters

from support import section, text
from tabpilot.demo.site import LocalSite


async def test_serve_over_stdio_launches_a_browser_and_reports_new_tabs(
    browser_path: str, site: LocalSite
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tabpilot", "serve", "--browser-path", browser_path]
    )
    async with Client(params) as client:
        tools = {t.name for t in (await client.list_tools()).tools}
        assert {"browser_tabs", "browser_navigate", "browser_snapshot"} <= tools

        opened = await client.call_tool("browser_tabs", {"action": "new", "url": site.url("/page/a")})
        assert not opened.is_error, text(opened)
        # What the model reads: text only, with the id the next call needs.
        assert opened.structured_content is None
        match = re.fullmatch(r"Opened tab (\d+) and activated it\.", section(opened, "Result"))
        assert match, text(opened)
        tab_id = int(match.group(1))
        assert f"- tab {tab_id}: Page a ({site.url('/page/a')}) [active]" in section(opened, "Tabs")

        snapshot = await client.call_tool("browser_snapshot", {"full": True, "tabId": tab_id})
        assert 'heading "Page a"' in section(snapshot, "Snapshot")


def test_requests_the_sdk_cannot_read_still_get_an_error_reply(browser_path: str) -> None:
    """Nested too deeply or holding a lone surrogate: the SDK's stdio transport would drop these
    without a reply; the server answers each with an error and keeps serving."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    replies: queue.Queue[dict[str, Any]] = queue.Queue()

    def read() -> None:
        for line in server.stdout or ():
            replies.put(json.loads(line))

    threading.Thread(target=read, daemon=True).start()

    def ask(line: str) -> dict[str, Any]:
        assert server.stdin is not None
        server.stdin.write(line.encode() + b"\n")
        server.stdin.flush()
        return replies.get(timeout=30)

    try:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        assert (
            ask(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}))["id"] == 1
        )
        server.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        call = '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"browser_evaluate","arguments":%s}}'
        deep = ask(call % (2, '{"function":' + "[" * 300 + "]" * 300 + "}"))
        surrogate = ask(call % (3, '{"function":"() => \\"\\ud800\\""}'))
        for reply, expected_id, reason in ((deep, 2, "nested too deeply"), (surrogate, 3, "lone surrogate")):
            assert reply["id"] == expected_id and reply["result"]["isError"], reply
            said = reply["result"]["content"][0]["text"]
            assert "could not be read" in said and reason in said and "Nothing was done" in said, said
        listed = ask('{"jsonrpc":"2.0","id":4,"method":"tools/list"}')
        assert listed["id"] == 4 and listed["result"]["tools"]  # still serving
    finally:
        server.stdin.close()
        assert server.wait(timeout=10) == 0  # the end of stdin still stops it
