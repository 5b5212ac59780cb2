"""What every tool is made of: `ToolSpec`, the `Call` a tool function gets, and the wrapper.

A tool is a plain async function whose first parameter is a `Call` and whose other parameters
are its MCP arguments (typed, with `Annotated[..., Field(description=...)]`; the SDK builds the
input schema from them). It fills `call.response` and returns nothing::

    async def browser_tabs(call: Call, action: Annotated[Literal["list", "new"], Field(...)]) -> None:
        call.response.result("...", {...})

    TOOLS = [ToolSpec("browser_tabs", browser_tabs, "Manage tabs ...", ToolAnnotations(...))]

The wrapper (`mcp_function`) turns it into the function the SDK registers. Per call it:
1. gets the client's `SessionState` (starting its browser on first use),
2. runs the tool; a `TabpilotError` (or ValueError) becomes an `### Error` with its message,
   which already says what to do next; anything else becomes an error that says so,
3. records the action in the session's telemetry,
4. builds the response: `settle()`s the browser so tabs the action opened are in THIS response,
   then adds events, tabs, page and snapshot sections (`server/response.py`).

Tool functions stay thin: resolve the tab (`call.target`), call the library, fill the response.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from tabpilot import Tab, TabManager, TabNotFoundError, TabpilotError, parse_ref

from ..response import Response
from ..state import ServerState, SessionState

logger = logging.getLogger("tabpilot.server")

TabIdArg = Annotated[
    int | str | None,
    Field(
        description="Tab id (from ### Tabs or browser_tabs list; its decimal string or CDP target id also "
        "work). Omit to use the active tab. The tab is NOT activated."
    ),
]
RefArg = Annotated[
    str,
    Field(description="Element ref from the latest browser_snapshot of its tab, e.g. '3e5' (tab 3, element e5)."),
]

ToolFunction = Callable[..., Awaitable[None]]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool: its name, its function (first parameter a `Call`), description, hints."""

    name: str
    fn: ToolFunction
    description: str
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    title: str | None = None


@dataclass(slots=True)
class Call:
    """What a tool function works with: the client's session and the response being built."""

    tool: str
    session: SessionState
    response: Response
    acted_tab: Tab | None = None
    """The tab the call worked on (for telemetry); `target()` sets it."""
    start_seq: int = 0
    """The manager's last event sequence number when the call began."""

    @property
    def manager(self) -> TabManager:
        return self.session.manager

    async def opened_tabs(self) -> list[int]:
        """Ids of the tabs opened since the call began and still open (settles first), e.g. to
        follow the tab a click opened (`followNewTab`)."""
        await self.manager.settle()
        opened = [e.tab_id for e in self.manager.events.history(since=self.start_seq) if e.type == "tab_opened"]
        open_ids = {info.id for info in self.manager.tabs()}
        return [tab_id for tab_id in opened if tab_id is not None and tab_id in open_ids]

    def tab(self, tab_id: int | str | None) -> Tab:
        """The tab with this id, or the active tab; never another one (unknown ids list open tabs)."""
        tab = self.manager.resolve(tab_id)
        self.acted_tab = tab
        return tab

    def target(self, *, tab_id: int | str | None = None, ref: str | None = None, allow_dialog: bool = False) -> Tab:
        """The tab a page tool acts on.

        A tab-scoped ref (`3e5`) names its own tab, so `tabId` may be left out; a `tabId` that
        disagrees with the ref's tab is an error (ForeignRefError). A tab with an open dialog is
        refused (DialogOpenError: handle it first) unless `allow_dialog`.
        """
        if ref is not None:
            ref_tab, _ = parse_ref(ref)
            if ref_tab is not None:
                try:
                    tab = self.manager.tab(ref_tab) if tab_id is None else self.manager.resolve(tab_id)
                except TabNotFoundError as exc:
                    if tab_id is not None:
                        raise
                    open_tabs = [t for instance in self.manager.instances for t in instance.tabs]
                    closed = any(e.type == "tab_closed" for e in self.manager.events.history(tab_id=ref_tab))
                    gone = "It was closed. " if closed else ""
                    raise TabNotFoundError(
                        ref_tab, open_tabs, reason=f"{gone}Ref {ref} came from it; take a snapshot of an open tab."
                    ) from exc
                if tab.id != ref_tab:
                    tab.resolve_ref(ref)  # raises ForeignRefError naming the ref's tab
            else:
                tab = self.manager.resolve(tab_id)
        else:
            tab = self.manager.resolve(tab_id)
        self.acted_tab = tab
        if allow_dialog:
            tab.ensure_open()
        else:
            tab.ensure_no_dialog()
        return tab


def mcp_function(spec: ToolSpec) -> Callable[..., Awaitable[CallToolResult]]:
    """The function registered with the SDK for `spec`: the tool's own arguments plus the SDK's Context."""
    signature = inspect.signature(spec.fn, eval_str=True)
    arguments = list(signature.parameters.values())[1:]  # drop `call`

    async def run(ctx: Context[ServerState, Any], **kwargs: Any) -> CallToolResult:
        state: ServerState = ctx.request_context.lifespan_context
        response = Response(spec.name)
        try:
            session = await state.session(ctx)
        except TabpilotError as exc:
            response.error(f"{exc}")
            return await response.build(None)
        except Exception as exc:
            logger.exception("could not start the browser session")
            response.error(f"Could not start the browser: {exc}. Check --browser-path or the endpoint option.")
            return await response.build(None)
        call = Call(spec.name, session, response, start_seq=session.manager.events.last_seq)
        try:
            if _needs_default_instance(spec, kwargs):
                # A lost local default browser is relaunched by the next call that needs it; its
                # instance_relaunched event tells the model in ### Events.
                await session.manager.ensure_default()
            await spec.fn(call, **kwargs)
        except TabpilotError as exc:
            response.error(str(exc))
        except ValueError as exc:  # bad argument values the library rejects (e.g. a malformed ref)
            response.error(str(exc))
        except Exception as exc:
            logger.exception("tool %s failed", spec.name)
            response.error(
                f"{spec.name} failed: {type(exc).__name__}: {exc}. Check the arguments; if the page changed, "
                "take a new browser_snapshot and retry."
            )
        _record_action(call, kwargs)
        return await response.build(session)

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Context)
    run.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[ctx_param, *arguments], return_annotation=CallToolResult
    )
    run.__annotations__ = {
        "ctx": Context,
        **{p.name: p.annotation for p in arguments},
        "return": CallToolResult,
    }
    run.__name__ = spec.name
    run.__doc__ = spec.description
    return run


def _needs_default_instance(spec: ToolSpec, arguments: dict[str, Any]) -> bool:
    """Whether a call works on the default instance: it names no tab, ref or instance."""
    if spec.name == "browser_instance":  # listing or closing must show a lost instance as it is
        return False
    return all(arguments.get(name) is None for name in ("tabId", "ref", "keepTabId", "instanceId"))


def _record_action(call: Call, arguments: dict[str, Any]) -> None:
    response = call.response
    tab_id = call.acted_tab.id if call.acted_tab is not None else None
    try:
        call.session.telemetry.record_action(tab_id, call.tool, arguments, response.summary, ok=not response.is_error)
    except Exception:  # telemetry must never break a tool
        logger.exception("recording action %s failed", call.tool)
