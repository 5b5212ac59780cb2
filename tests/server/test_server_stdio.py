"""`tabpilot serve` over stdio, as an MCP client that launches servers runs it."""

from __future__ import annotations

import sys

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
        assert opened.structured_content is not None
        tab_id = opened.structured_content["result"]["tabId"]
        assert f"tab {tab_id} opened (tool)" in section(opened, "Events")

        snapshot = await client.call_tool("browser_snapshot", {"full": True, "tabId": tab_id})
        assert 'heading "Page a"' in section(snapshot, "Snapshot")
