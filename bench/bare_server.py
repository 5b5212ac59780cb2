"""The smallest MCP server over stdio: the baseline for the server's own overhead per call.

`noop` takes an argument and returns text, like `browser_tabs list` with one tab, so the
difference between the two round trips is tabpilot's own work, not the SDK's. `replay` answers
with a response stored by `store` (one of tabpilot's own, byte for byte): what moving a
response that large costs by itself (encoding, the pipe, the client's validation).
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent

app = MCPServer("bare")
_stored = CallToolResult(content=[TextContent(type="text", text="")])


@app.tool()
def noop(action: str = "list") -> str:
    """Return at once."""
    return f"ok {action}"


@app.tool()
def store(text: str, structured: dict[str, Any]) -> str:
    """Keep a response for `replay`."""
    global _stored
    _stored = CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)
    return "stored"


@app.tool()
def replay(action: str = "list") -> CallToolResult:
    """Return the stored response."""
    return _stored


if __name__ == "__main__":
    app.run()
