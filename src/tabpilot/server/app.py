"""`create_server(config)`: the MCP server object, for stdio, HTTP and in-memory clients.

tabpilot serves on the SDK's low-level `Server`: the tools are `ToolSpec`s (`tools/base.py`),
their argument models and input schemas come from their signatures through the SDK's
`func_metadata`, built the first time a tool is called or listed, not at start-up. The lifespan
yields the `ServerState` (one per process). What this layer adds to the SDK: argument errors that
name the argument and the fix, in our response format; an unknown tool named by the likeliest
meant; lean input schemas.
"""

from __future__ import annotations

import difflib
import inspect
import json
import logging
import re
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata, func_metadata
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CallToolRequestParams,
    CallToolResult,
    EmptyResult,
    ListToolsResult,
    PaginatedRequestParams,
    SetLevelRequestParams,
    TextContent,
)
from mcp.types import Tool as MCPTool
from pydantic import ValidationError

import tabpilot
from tabpilot import Instance

from .about import NAME, TITLE, instructions
from .advice import DEFAULT_CALLS, ToolCalls
from .config import SHUTDOWN_TIMEOUT, ServerConfig
from .registry import select_tools
from .response import Response
from .schema import lean_schema
from .state import ServerState
from .stdio import INVALID_ARGUMENTS
from .tools.base import ToolRunner, ToolSpec, tool_runner

if TYPE_CHECKING:
    from .state import RequestContext

__all__ = ["TabpilotServer", "create_server"]

logger = logging.getLogger("tabpilot.server")

# The same call in each tool set that has one: the default set, browser-tab, browser-use, foxmcp, pilo.
_TAB_LIST = (
    "browser_tabs(action='list')",
    "browser_tab(action='list')",
    "browser_list_tabs",
    "tabs_list",
    "list_tabs",
)
_TAB_NEW = (
    "browser_tabs(action='new', url=...)",
    "browser_tab(action='new', url=...)",
    "browser_navigate(url=..., new_tab=true)",
    "tabs_create(url=...)",
)
_TAB_SELECT = (
    "browser_tabs(action='activate', tabId=...)",
    "browser_tab(action='activate', tabId=...)",
    "browser_switch_tab(tab_id=...)",
    "tabs_switch(tab_id=...)",
    "switch_tab(tabId=...)",
)
_TAB_CLOSE = (
    "browser_tabs(action='close', tabId=...)",
    "browser_tab(action='close', tabId=...)",
    "browser_close_tab(tab_id=...)",
    "tabs_close(tab_id=...)",
    "close_tab(tabId=...)",
)
PEER_TOOLS: dict[str, tuple[str, ...]] = {
    # Playwright MCP
    "browser_navigate_back": ("browser_navigate(action='back')", "browser_go_back"),
    "browser_navigate_forward": ("browser_navigate(action='forward')",),
    "browser_take_screenshot": ("browser_screenshot", "browser_get_state(include_screenshot=true)"),
    "browser_console_messages": ("browser_observe(what='logs')",),
    "browser_network_requests": ("browser_observe(what='network_waterfall')",),
    "browser_tab_list": _TAB_LIST,
    "browser_tab_new": _TAB_NEW,
    "browser_tab_select": _TAB_SELECT,
    "browser_tab_close": _TAB_CLOSE,
    "browser_close": ("browser_tabs(action='close')",),
    # Chrome DevTools MCP
    "list_pages": _TAB_LIST,
    "new_page": _TAB_NEW,
    "select_page": _TAB_SELECT,
    "close_page": _TAB_CLOSE,
    "navigate_page": ("browser_navigate(url=...)", "goto(url=...)"),
    "take_snapshot": ("browser_snapshot", "browser_get_state", "get_snapshot"),
    "take_screenshot": ("browser_screenshot", "browser_get_state(include_screenshot=true)"),
    "list_console_messages": ("browser_observe(what='logs')",),
    "get_console_message": ("browser_observe(what='logs')",),
    "list_network_requests": ("browser_observe(what='network_waterfall')",),
    "get_network_request": ("browser_observe(what='network_waterfall')",),
    "evaluate_script": ("browser_evaluate(function=...)",),
    "fill": ("browser_type(ref=..., text=...)",),
    "upload_file": ("browser_file_upload",),
    "resize_page": ("browser_resize",),
}
"""Tools of other browser servers that models know by name: the calls that do the same in this
server's tool sets (`name(args)`), the first one this server has (that tool, taking those
arguments) told when a model calls one."""


def _peer_tab_words(tool: _Tool, arguments: dict[str, Any]) -> str:
    """What a call written for another server's tab tool (Playwright MCP's browser_tabs: action
    'select', a tab named by its `index` in the list) is here: tabs are named by id."""
    tab_actions = tool.spec.action_args.get("tabId", ())
    if "activate" not in tab_actions:
        return ""
    words = ""
    if arguments.get("action") == "select":
        words += " action='activate' is what 'select' is elsewhere."
    if "index" in arguments:
        words += (
            " A tab is named by its id (tabId), which never changes, not by its place in the list: "
            f"{tool.spec.name}(action='list') gives the ids."
        )
    return words


def _callable(call: str, tools: dict[str, _Tool]) -> bool:
    """Whether `name(arg=..., ...)` is a call these tools take: the tool, and each argument named."""
    name, _, args = call.partition("(")
    tool = tools.get(name)
    return tool is not None and set(re.findall(r"(\w+)=", args)) <= tool.names


class _Tool:
    """One registered tool: its spec, its runner, and (built on first use) its argument model."""

    __slots__ = ("_metadata", "_names", "_schema", "run", "spec")

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec
        self.run: ToolRunner = tool_runner(spec)
        self._metadata: FuncMetadata | None = None
        self._names: frozenset[str] | None = None
        self._schema: dict[str, Any] | None = None

    @property
    def names(self) -> frozenset[str]:
        """The tool's argument names."""
        if self._names is None:
            self._names = frozenset(p.name for p in self.spec.arguments())
        return self._names

    @property
    def metadata(self) -> FuncMetadata:
        """The SDK's argument model of the tool's signature (validation, JSON pre-parsing, schema)."""
        if self._metadata is None:
            arguments = self.spec.arguments()

            def signature() -> None: ...

            signature.__signature__ = inspect.Signature(list(arguments))  # type: ignore[attr-defined]
            signature.__annotations__ = {p.name: p.annotation for p in arguments}
            signature.__name__ = self.spec.name
            self._metadata = func_metadata(signature, structured_output=False)
        return self._metadata

    @property
    def schema(self) -> dict[str, Any]:
        """The input schema of the argument model, as the SDK validates against it."""
        if self._schema is None:
            self._schema = self.metadata.arg_model.model_json_schema(by_alias=True)
        return self._schema

    def listed(self) -> MCPTool:
        """The tool as tools/list shows it: a lean input schema, the title said once."""
        spec = self.spec
        annotations = spec.annotations
        return MCPTool(
            name=spec.name,
            title=spec.title or annotations.title,
            description=spec.description,
            input_schema=lean_schema(self.schema),
            annotations=annotations.model_copy(update={"title": None}),
        )


class TabpilotServer(Server[ServerState]):
    """The SDK's low-level server with tabpilot's tools (see the module docstring)."""

    def __init__(self, tools: list[ToolSpec], lifespan: Any, *, instructions: str) -> None:
        with warnings.catch_warnings():
            # Deprecated by the 2026 protocol (a request asks for its records in `_meta`), but
            # the way clients of the handshake era ask for them, over HTTP too.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            super().__init__(
                NAME,
                title=TITLE,
                version=tabpilot.__version__,
                instructions=instructions,
                lifespan=lifespan,
                get_tool_input_schema=self._input_schema,
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_set_logging_level=self._set_logging_level,
            )
        self.tools = {spec.name: _Tool(spec) for spec in tools}
        self.middleware.append(_arguments_not_an_object)
        self._listed: list[MCPTool] | None = None
        self.state: ServerState | None = None
        """The running server's state (set while its lifespan runs), for the HTTP layer."""

    async def _list_tools(
        self, ctx: RequestContext, params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        if self._listed is None:
            self._listed = [tool.listed() for tool in self.tools.values()]
        return ListToolsResult(tools=self._listed)

    async def _set_logging_level(self, ctx: RequestContext, params: SetLevelRequestParams) -> EmptyResult:
        """A client of the handshake era asks for the log records of its calls from `level` up."""
        state = ctx.lifespan_context
        state.log_levels[state.session_key(ctx)] = params.level
        return EmptyResult()

    def _input_schema(self, name: str) -> dict[str, Any] | None:
        tool = self.tools.get(name)
        return None if tool is None else tool.schema

    async def _call_tool(self, ctx: RequestContext, params: CallToolRequestParams) -> CallToolResult:
        name, arguments = params.name, params.arguments or {}
        unreadable = arguments.get(INVALID_ARGUMENTS)
        if isinstance(unreadable, str) and len(arguments) == 1:  # see stdio.unreadable
            return await self._argument_error(
                name,
                ctx,
                f"The arguments of this {name} call could not be read: {unreadable}. Nothing was done. "
                "Send them as one JSON object of names and values (UTF-8 text, nested at most a few dozen "
                "levels) and call again.",
            )
        tool = self.tools.get(name)
        if tool is None:
            return await self._argument_error(name, ctx, self._unknown_tool(name))
        extra = sorted(set(arguments) - tool.names)
        peer = _peer_tab_words(tool, arguments)
        if extra:
            return await self._argument_error(
                name,
                ctx,
                f"Unknown argument{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))} for {name}. "
                f"Its arguments are: {', '.join(sorted(tool.names)) or '(none)'}.{peer}",
            )
        try:
            given = tool.metadata.validate_arguments(arguments)
            problems = _booleans_for_numbers(tool.schema, arguments) + _not_booleans(tool.schema, arguments)
        except ValidationError as exc:
            problems = _argument_problems(exc, arguments)
        if problems:
            return await self._argument_error(
                name,
                ctx,
                f"Invalid arguments for {name}:\n"
                + "\n".join(problems)
                + f"\nFix them and call again.{peer}",
            )
        try:
            return await tool.run(ctx, given)
        except Exception as exc:  # the runner answers every tool error; this is a bug of ours
            logger.exception("tool %s failed outside its handler", name)
            return CallToolResult(
                content=[TextContent(type="text", text=f"{name} failed: {exc}")], is_error=True
            )

    def _unknown_tool(self, name: str) -> str:
        """A name this server has no tool for: the likeliest meant, and every name it has."""
        names = sorted(self.tools)
        ours = self._peer_call(name)
        if ours is not None:
            guess = f" Its {ours} does that."
        else:
            # Compared without the `browser_` most names share, which would make any two alike
            # (browser_close is not browser_observe).
            bare = {n.removeprefix("browser_"): n for n in reversed(names)}
            near = difflib.get_close_matches(name.removeprefix("browser_"), bare, n=1, cutoff=0.6)
            guess = f" Did you mean {bare[near[0]]}?" if near else ""
        return f"This server has no tool {name!r}.{guess} Its tools: {', '.join(names)}."

    def _peer_call(self, name: str) -> str | None:
        """This server's call that does what another server's tool `name` does, if it has one."""
        return next((c for c in PEER_TOOLS.get(name, ()) if _callable(c, self.tools)), None)

    def _calls_for(self, name: str) -> ToolCalls:
        """The tool set whose words an argument error of `name` is in: the tool's own, else (a
        tool this server does not have) the set of the tool advised instead, else the first set."""
        tool = self.tools.get(name)
        if tool is None:
            ours = self._peer_call(name)
            tool = self.tools.get(ours.partition("(")[0]) if ours else next(iter(self.tools.values()), None)
        return tool.spec.calls if tool is not None else DEFAULT_CALLS

    async def _argument_error(self, name: str, ctx: RequestContext, text: str) -> CallToolResult:
        state = ctx.lifespan_context
        response = Response(name, structured=state.config.structured_content, calls=self._calls_for(name))
        response.error(text)
        return await response.build(state.peek_session(ctx))


_JSON_KINDS = {list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}


async def _arguments_not_an_object(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """A tools/call whose `arguments` is no object (`[]`, a string) is answered like arguments that
    could not be read, saying what they must be; the SDK would refuse it with a bare "Invalid
    request parameters" that names neither the arguments nor the fix."""
    params = ctx.params
    if ctx.method == "tools/call" and params is not None and isinstance(params.get("name"), str):
        given = params.get("arguments")
        if given is not None and not isinstance(given, dict):
            kind = _JSON_KINDS.get(type(given), "no object")
            why = {INVALID_ARGUMENTS: f'they are {kind}, not an object (e.g. {{"tabId": 3}})'}
            ctx = replace(ctx, params={**params, "arguments": why})
    return await call_next(ctx)


def _shown(value: Any, cap: int = 200) -> str:
    """A value given as an argument, as the client wrote it: JSON (null, true, {"id": 1}); a string
    in quotes as pydantic quotes the values it expects ('up')."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= cap else text[:cap] + f"…[{len(text)} characters]"


def _types_of(prop: dict[str, Any]) -> set[Any]:
    """The JSON types an argument's schema takes (its own, and its `anyOf` branches')."""
    return {branch.get("type") for branch in (prop, *prop.get("anyOf", ()))}


def _booleans_for_numbers(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """One line per true/false given for a number: pydantic takes `true` for 1 (an index, a depth,
    seconds), so `index=true` clicked element 1. Ids are refused by their strict types already."""
    lines = []
    properties = schema.get("properties", {})
    for name, value in arguments.items():
        if not isinstance(value, bool) or name not in properties:
            continue
        types = _types_of(properties[name])
        if "boolean" not in types and types & {"integer", "number"}:
            lines.append(f"- argument {name!r}: Input should be a number (got {_shown(value)})")
    return lines


def _not_booleans(schema: dict[str, Any], arguments: dict[str, Any]) -> list[str]:
    """One line per value given for a true/false argument that is neither: pydantic takes `1`,
    `"yes"` or `"on"` for true. The words `"true"` and `"false"` stay accepted (some clients
    quote every value)."""
    lines = []
    properties = schema.get("properties", {})
    for name, value in arguments.items():
        if value is None or isinstance(value, bool) or name not in properties:
            continue
        if _types_of(properties[name]) - {None, "null"} == {"boolean"} and not (
            isinstance(value, str) and value.strip().lower() in ("true", "false")
        ):
            lines.append(f"- argument {name!r}: Input should be true or false (got {_shown(value)})")
    return lines


def _argument_problems(error: ValidationError, arguments: dict[str, Any]) -> list[str]:
    """One line per bad argument; the branches of a union (`int | str`) that all refused one value
    make one line ("a valid integer or a valid string"), at any depth (a form field's value was
    three lines, each named by its branch: 'fields.0.value.str', 'fields.0.value.bool', ...)."""
    errs = error.errors()
    lines = []
    done: set[int] = set()
    for i, err in enumerate(errs):
        if i in done:
            continue
        place = err["loc"][:-1]
        # A union's branches each refuse the value found at `place` (their name ends their loc);
        # a model's fields refuse values inside the one found there.
        branches = [
            j
            for j in range(i, len(errs))
            if errs[j]["loc"][:-1] == place
            and place
            and errs[j]["type"] != "missing"  # its input is what lacks the field
            and _found(arguments, place) is errs[j]["input"]
        ]
        if len(branches) > 1:
            done.update(branches)
            msgs = [err["msg"], *(errs[j]["msg"].removeprefix("Input should be ") for j in branches[1:])]
            where = ".".join(str(p) for p in place)
            lines.append(f"- argument {where!r}: {' or '.join(msgs)} (got {_shown(err['input'])})")
            continue
        where = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        given = f" (got {_shown(err['input'])})" if err["type"] != "missing" else ""
        lines.append(f"- argument {where!r}: {err['msg']}{given}")
    return lines


def _found(arguments: Any, place: tuple[int | str, ...]) -> Any:
    """The value at `place` (a validation error's loc) in the arguments given, or a fresh object
    (which is no error's input) where there is none."""
    value = arguments
    for step in place:
        try:
            value = value[step]
        except (KeyError, IndexError, TypeError):
            return object()
    return value


def create_server(
    config: ServerConfig | None = None, *, shared: Instance | None = None, started: ServerState | None = None
) -> TabpilotServer:
    """The tabpilot MCP server.

    `shared` lets a caller (tests) share one browser: each session then gets its own isolated
    context of it, as over HTTP. `started` is a state whose browser is already starting (`tabpilot
    serve` starts it while this module is imported): its config is the server's, and the server's
    one run (its lifespan) closes it.
    """
    config = started.config if started is not None else config or ServerConfig()

    @asynccontextmanager
    async def lifespan(_server: Server[ServerState]) -> AsyncIterator[ServerState]:
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

    # The config has checked the tool sets: names that exist, sets that do not clash.
    server = TabpilotServer(
        select_tools(config.tools, config.caps),
        lifespan,
        instructions=instructions(config.tools, config.caps),
    )
    return server
