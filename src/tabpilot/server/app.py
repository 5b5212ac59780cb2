"""`create_server(config)`: the MCP server object, for stdio, HTTP and in-memory clients.

The lifespan yields the `ServerState` (one per process); tools reach it through the SDK's
Context. `TabpilotServer` only improves the SDK's error text for bad arguments, so the model
reads which argument to fix.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import ValidationError

import tabpilot

from .config import ServerConfig
from .response import Response
from .state import ServerState
from .tools import mcp_function, select_tools

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

INSTRUCTIONS = """\
tabpilot drives a real Chromium with many tabs. The tab rules:
- Every tab has a stable integer id that is never reused. Use ids, never list positions.
- Tabs a page opens (target=_blank links, window.open, OAuth popups) are reported in the
  ### Events section of the response to the action that opened them, with their opener,
  and are NOT switched to. You decide: pass tabId to work on one, or activate it.
- Every page tool takes an optional tabId and works on that tab WITHOUT activating it
  (snapshot, click or type on a background tab). Without tabId it uses the active tab.
- Element refs belong to one tab: '3e5' is element e5 of tab 3. A ref acts on its own tab,
  so you need no tabId with it. After navigation, take a new snapshot: old refs are stale.
- Every response carries ### Events (everything since your previous call) and ### Tabs when
  the tab set changed. An open dialog blocks only its tab: handle it with browser_handle_dialog.
- Close tabs you no longer need (browser_tabs action=close or close_others).
"""


class TabpilotServer(MCPServer[ServerState]):
    """MCPServer whose argument errors name the argument and the fix, in our response format."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[ServerState, Any] | None = None
    ) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = set(tool.parameters.get("properties", {}))
            extra = sorted(set(arguments) - known)
            if extra:
                return await self._argument_error(
                    name,
                    context,
                    f"Unknown argument{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} for {name}. "
                    f"Its arguments are: {', '.join(sorted(known)) or '(none)'}.",
                )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if not isinstance(exc.__cause__, ValidationError):
                raise
            problems = []
            for err in exc.__cause__.errors():
                arg = ".".join(str(p) for p in err["loc"]) or "(arguments)"
                given = f" (got {err['input']!r})" if err["type"] != "missing" else ""
                problems.append(f"- argument {arg!r}: {err['msg']}{given}")
            return await self._argument_error(
                name, context, f"Invalid arguments for {name}:\n" + "\n".join(problems) + "\nFix them and call again."
            )

    async def _argument_error(
        self, name: str, context: Context[ServerState, Any] | None, text: str
    ) -> CallToolResult:
        response = Response(name)
        response.error(text)
        session = None
        if context is not None:
            try:
                session = context.request_context.lifespan_context.peek_session(context)
            except ValueError:  # no request (a direct call_tool): nothing to report
                session = None
        return await response.build(session)


def create_server(
    config: ServerConfig | None = None,
    *,
    playwright: Playwright | None = None,
    browser: Browser | None = None,
) -> TabpilotServer:
    """The tabpilot MCP server.

    `playwright` and `browser` let a caller (tests) share one driver and one browser: each session
    then gets its own context of `browser`, as over HTTP.
    """
    config = config or ServerConfig()
    tools = select_tools(config.tools)

    @asynccontextmanager
    async def lifespan(_server: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        state = ServerState(config, playwright=playwright, browser=browser)
        try:
            yield state
        finally:
            await state.close()

    server = TabpilotServer(
        "tabpilot",
        title="tabpilot",
        instructions=INSTRUCTIONS,
        version=tabpilot.__version__,
        lifespan=lifespan,
        # The SDK logs every request at INFO on stderr; an MCP host shows stderr to the user.
        log_level="WARNING",
    )
    for spec in tools:
        server.add_tool(
            mcp_function(spec),
            name=spec.name,
            title=spec.title or spec.annotations.title,
            description=spec.description,
            annotations=spec.annotations,
            structured_output=False,
        )
    return server
