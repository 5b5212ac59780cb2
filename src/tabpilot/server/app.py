"""`create_server(config)`: the MCP server object, for stdio, HTTP and in-memory clients.

The lifespan yields the `ServerState` (one per process); tools reach it through the SDK's
Context. `TabpilotServer` only improves the SDK's error text for bad arguments, so the model
reads which argument to fix.
"""

from __future__ import annotations

import difflib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

import tabpilot
from tabpilot import Instance

from .config import SHUTDOWN_TIMEOUT, ServerConfig
from .registry import select_tools
from .response import Response
from .schema import lean_schema
from .state import ServerState
from .stdin_guard import INVALID_ARGUMENTS
from .tools.base import mcp_function

INSTRUCTIONS = """\
tabpilot drives a real Chromium with many tabs. The rules, said once for every tool:
- Every tab has a stable integer id, never reused. Use ids, never list positions. A tabId
  argument also takes the id's decimal string or the tab's CDP target id.
- Tabs a page opens (target=_blank links, window.open, OAuth popups) are reported in the
  ### Events section of the response to the action that opened them, with their opener,
  and are NOT switched to. You decide: pass tabId to work on one, or activate it.
- Every page tool takes an optional tabId and works on that tab WITHOUT activating it
  (snapshot, click or type on a background tab). Without tabId it uses the active tab.
  Activate a tab only to make it the default; closing the active tab activates the previous one.
- Element refs belong to one tab: '3e5' is element e5 of tab 3. A ref acts on its own tab,
  so you need no tabId with it. After navigation, take a new snapshot: old refs are stale.
- Actions answer with what changed on the page; a snapshot of an unchanged page says so in one
  line (full=true shows it all again).
- Every response carries ### Events (what happened since your previous call, beyond what its
  result says) and ### Tabs when the tab set changed, with new error counts per tab
  (browser_observe what='errors' shows them). An open dialog blocks only its tab: handle it with
  browser_handle_dialog.
- Text like {{NAME}} in typed text is a secret the server fills in; responses show the name only.
- Close tabs you no longer need (browser_tabs action=close or close_others).
"""


PEER_TOOLS: dict[str, tuple[str, str]] = {
    # Playwright MCP
    "browser_navigate_back": ("browser_navigate", "action='back'"),
    "browser_navigate_forward": ("browser_navigate", "action='forward'"),
    "browser_take_screenshot": ("browser_screenshot", ""),
    "browser_console_messages": ("browser_observe", "what='logs'"),
    "browser_network_requests": ("browser_observe", "what='network_waterfall'"),
    "browser_tab_list": ("browser_tabs", "action='list'"),
    "browser_tab_new": ("browser_tabs", "action='new'"),
    "browser_tab_select": ("browser_tabs", "action='activate', tabId=..."),
    "browser_tab_close": ("browser_tabs", "action='close', tabId=..."),
    "browser_close": ("browser_tabs", "action='close'"),
    # Chrome DevTools MCP
    "list_pages": ("browser_tabs", "action='list'"),
    "new_page": ("browser_tabs", "action='new', url=..."),
    "select_page": ("browser_tabs", "action='activate', tabId=..."),
    "close_page": ("browser_tabs", "action='close', tabId=..."),
    "navigate_page": ("browser_navigate", "url=..."),
    "take_snapshot": ("browser_snapshot", ""),
    "take_screenshot": ("browser_screenshot", ""),
    "list_console_messages": ("browser_observe", "what='logs'"),
    "get_console_message": ("browser_observe", "what='logs'"),
    "list_network_requests": ("browser_observe", "what='network_waterfall'"),
    "get_network_request": ("browser_observe", "what='network_waterfall'"),
    "evaluate_script": ("browser_evaluate", "function=..."),
    "fill": ("browser_type", "ref=..., text=..."),
    "upload_file": ("browser_file_upload", ""),
    "resize_page": ("browser_resize", ""),
}
"""Tools of other browser servers that models know by name: the call of this server's that does
the same (`name(args)`), told when a model calls one (if this server has that tool)."""


class TabpilotServer(MCPServer[ServerState]):
    """MCPServer whose argument errors name the argument and the fix, in our response format."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.tool_arguments: dict[str, frozenset[str]] = {}
        """Each registered tool's argument names (to name an unknown one before validation)."""
        self.state: ServerState | None = None
        """The running server's state (set while its lifespan runs), for the HTTP layer."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[ServerState, Any] | None = None
    ) -> Any:
        unreadable = arguments.get(INVALID_ARGUMENTS)
        if isinstance(unreadable, str) and len(arguments) == 1:  # see stdin_guard
            return await self._argument_error(
                name,
                context,
                f"The arguments of this {name} call could not be read: {unreadable}. Nothing was done. "
                "Send them as valid JSON (UTF-8 text, nested at most a few dozen levels) and call again.",
            )
        known = self.tool_arguments.get(name)
        if known is None and self.tool_arguments:
            return await self._argument_error(name, context, self._unknown_tool(name))
        if known is not None:
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
            problems = _argument_problems(exc.__cause__)
            return await self._argument_error(
                name,
                context,
                f"Invalid arguments for {name}:\n" + "\n".join(problems) + "\nFix them and call again.",
            )

    def _unknown_tool(self, name: str) -> str:
        """A name this server has no tool for: the likeliest meant, and every name it has."""
        names = sorted(self.tool_arguments)
        ours, args = PEER_TOOLS.get(name, ("", ""))
        if ours in self.tool_arguments:
            guess = f" Its {ours}({args}) does that." if args else f" Its {ours} does that."
        else:
            # Compared without the `browser_` most names share, which would make any two alike
            # (browser_close is not browser_observe).
            bare = {n.removeprefix("browser_"): n for n in reversed(names)}
            near = difflib.get_close_matches(name.removeprefix("browser_"), bare, n=1, cutoff=0.6)
            guess = f" Did you mean {bare[near[0]]}?" if near else ""
        return f"This server has no tool {name!r}.{guess} Its tools: {', '.join(names)}."

    async def list_tools(self) -> list[MCPTool]:
        """The tools, with lean input schemas and the title said once (not again in annotations)."""
        tools = await super().list_tools()
        return [
            tool.model_copy(
                update={
                    "input_schema": lean_schema(tool.input_schema),
                    "annotations": tool.annotations.model_copy(update={"title": None})
                    if tool.annotations is not None
                    else None,
                }
            )
            for tool in tools
        ]

    async def _argument_error(
        self, name: str, context: Context[ServerState, Any] | None, text: str
    ) -> CallToolResult:
        state = self.state
        response = Response(name, structured=state is not None and state.config.structured_content)
        response.error(text)
        session = None
        if context is not None:
            try:
                session = context.request_context.lifespan_context.peek_session(context)
            except ValueError:  # no request (a direct call_tool): nothing to report
                session = None
        return await response.build(session)


def _shown(value: Any, cap: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= cap else text[:cap] + f"…[{len(text)} characters]"


def _argument_problems(error: ValidationError) -> list[str]:
    """One line per bad argument; the branches of a union (`int | str`) that all refused one value
    make one line ("a valid integer or a valid string")."""
    by_arg: dict[Any, list[Any]] = {}
    for err in error.errors():
        by_arg.setdefault(err["loc"][0] if err["loc"] else "(arguments)", []).append(err)
    lines = []
    for arg, errs in by_arg.items():
        branches = len(errs) > 1 and all(len(e["loc"]) == 2 and e["input"] is errs[0]["input"] for e in errs)
        if branches:
            msgs = [errs[0]["msg"], *(e["msg"].removeprefix("Input should be ") for e in errs[1:])]
            lines.append(f"- argument {str(arg)!r}: {' or '.join(msgs)} (got {_shown(errs[0]['input'])})")
            continue
        for err in errs:
            where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
            given = f" (got {_shown(err['input'])})" if err["type"] != "missing" else ""
            lines.append(f"- argument {where!r}: {err['msg']}{given}")
    return lines


def create_server(
    config: ServerConfig | None = None, *, shared: Instance | None = None, started: ServerState | None = None
) -> TabpilotServer:
    """The tabpilot MCP server. Raises ValueError for tool sets it cannot offer.

    `shared` lets a caller (tests) share one browser: each session then gets its own isolated
    context of it, as over HTTP. `started` is a state whose browser is already starting (`tabpilot
    serve` starts it while this module is imported): its config is the server's, and the server's
    one run (its lifespan) closes it.
    """
    config = started.config if started is not None else config or ServerConfig()
    tools = select_tools(config.tools, config.caps)

    @asynccontextmanager
    async def lifespan(_server: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        if started is not None:
            state = server.state = started
        else:
            state = server.state = ServerState(config, shared=shared)
            state.warm_up()
        try:
            await state.start()
            yield state
        finally:
            server.state = None
            # Also when the server is being cancelled (a stop signal): close the browsers anyway,
            # but never hang the stop on a browser that does not answer.
            with anyio.move_on_after(SHUTDOWN_TIMEOUT, shield=True):
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
        server.tool_arguments[spec.name] = frozenset(p.name for p in spec.arguments())
    return server
