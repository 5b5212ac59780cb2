"""Reading MCP tool results in tests: one section of the text at a time."""

from __future__ import annotations

from mcp.types import CallToolResult, TextContent


def text(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


def section(result: CallToolResult, name: str) -> str:
    """The body of `### name` in a tool result ('' if the section is absent)."""
    body: list[str] = []
    inside = False
    for line in text(result).splitlines():
        if line.startswith("### "):
            inside = line[4:].strip() == name
            continue
        if inside:
            body.append(line)
    return "\n".join(body).strip()


def tab_line(result: CallToolResult, tab_id: int) -> str:
    """The line of `### Tabs` about one tab ('' if it is not listed)."""
    prefix = f"- tab {tab_id}:"
    return next((line for line in section(result, "Tabs").splitlines() if line.startswith(prefix)), "")
