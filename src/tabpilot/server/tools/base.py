"""What every tool is made of: `ToolSpec`, the `Call` a tool function gets, and the wrapper.

A tool is a plain async function whose first parameter is a `Call` and whose other parameters
are its MCP arguments (typed, with `Annotated[..., Field(description=...)]`; the SDK builds the
input schema from them). It fills `call.response` and returns nothing::

    async def browser_frobnicate(call: Call, tab: Tab, ref: RefArg, tabId: TabIdArg = None) -> None:
        result = await tabpilot.frobnicate(tab, ref)            # call the library
        call.response.result(f"Frobnicated {ref} on tab {tab.id}.", {"tabId": tab.id})
        call.response.set_page(tab, changes=True)                # ### Page + the lines that changed

    TOOLS = [ToolSpec("browser_frobnicate", browser_frobnicate, "...", tab=True)]

The wrapper (`tool_runner`) turns it into what the server calls with the request's context and
the validated arguments. Per call it:
0. refuses an argument the chosen action does not use (`ToolSpec.action_args`),
1. gets the client's `SessionState` (starting its browser on first use),
2. for a page tool (`tab=True`), resolves the tab once from `tabId` and the ref argument and
   enforces the dialog rule (a tab with an open dialog is refused unless `allows_dialog`); the
   handler gets it as `tab`,
3. runs the tool; a library error (or ValueError) becomes an `### Error` in words that name the
   next call (`advice.error_text`); anything else becomes an error that says so,
4. records the action in the session's telemetry,
5. builds the response: settles the browser so tabs the action opened are in THIS response,
   then adds events, tabs, page and snapshot sections (`server/response.py`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import time
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import anyio
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import LOG_LEVEL_META_KEY, CallToolResult, ToolAnnotations
from pydantic import BaseModel, BeforeValidator, Field, Strict, StrictStr

from tabpilot import (
    ActionError,
    BrowserNotFoundError,
    ConnectError,
    RefError,
    Secrets,
    Tab,
    TabManager,
    TabNotFoundError,
    TabpilotError,
    navigate,
    normalize_url,
    parse_ref,
)

from .. import logs
from ..advice import DEFAULT_CALLS, ToolCalls, closed_as, error_text, loading_said
from ..config import ServerConfig
from ..response import Response
from ..state import NOT_RUN, ServerState, ServerStopping, SessionState

if TYPE_CHECKING:
    from ..state import RequestContext

logger = logging.getLogger("tabpilot.server")


def _whole(value: object) -> object:
    """A number with no fraction as an int: JSON Schema counts `2.0` as an integer, and some
    clients send every number that way."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


WholeInt = Annotated[int, Strict(), BeforeValidator(_whole)]
"""An id number: `2` or `2.0`; strict otherwise, so `true` is refused instead of becoming 1, and
`2.5` is no id."""
TabIdValue = WholeInt | StrictStr
"""A tab id argument: its number (`WholeInt`), or the number as a string."""
InstanceIdValue = WholeInt | StrictStr
"""An instance id argument: `"inst_2"`, or its number alone (`2` or `"2"`)."""


def _empty_as_none(value: object) -> object:
    return None if isinstance(value, str) and not value.strip() else value


OptionalInstanceId = Annotated[InstanceIdValue | None, BeforeValidator(_empty_as_none)]
"""An optional instance id: `""` counts as not given (some clients send every optional string)."""
TabIdArg = Annotated[
    TabIdValue | None,
    Field(description="Default: the active tab."),
]
RefArg = Annotated[str, Field(description="Element ref, e.g. '3e5'.")]

ToolFunction = Callable[..., Awaitable[None]]
ToolRunner = Callable[["RequestContext", dict[str, Any]], Awaitable[CallToolResult]]
"""Runs a tool for one request, with its validated arguments."""
Progress = Callable[[float, "float | None", str], Awaitable[None]]
PROGRESS_INTERVAL = 1.0
"""Seconds between progress notifications of a long wait."""
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One MCP tool: its name, its function (first parameter a `Call`), description, hints.

    `tab`: a page tool; the wrapper passes the resolved tab as the `tab` parameter, from the
    `tabId` argument and the ref argument named `ref_arg` (a ref names its tab).
    `allows_dialog`: the tool works on a tab whose dialog is open (it handles dialogs).
    """

    name: str
    fn: ToolFunction
    description: str
    annotations: ToolAnnotations = field(default_factory=ToolAnnotations)
    title: str | None = None
    tab: bool = False
    ref_arg: str = "ref"
    allows_dialog: bool = False
    secret_args: tuple[str, ...] = ()
    """Arguments whose `{{NAME}}` placeholders are replaced by secrets (`--secrets`) before the
    tool runs; the response, telemetry and log show the placeholders."""
    calls: ToolCalls = DEFAULT_CALLS
    """The tool set's own calls, as an error's advice names them."""
    action_args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """For a tool with an `action` argument: the arguments only some actions use, each with those
    actions. Another action given one of them is refused, never run as if it were not there."""
    recorded: bool = True
    """Its calls go into the `actions` telemetry. Not the reading of telemetry itself: an agent
    polling it would push its real actions out of the buffer."""

    def arguments(self) -> tuple[inspect.Parameter, ...]:
        """The MCP arguments: the function's parameters but `call` and `tab`."""
        return _arguments(self.fn)

    def given(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The arguments set to other than their defaults: what the client asked for (the SDK hands
        the tool every argument, defaults filled in)."""
        defaults = {p.name: p.default for p in self.arguments()}
        return {k: v for k, v in arguments.items() if k not in defaults or v != defaults[k]}

    def misplaced(self, arguments: dict[str, Any]) -> str | None:
        """Why `arguments` do not fit their action (an argument another action uses), or None."""
        if not self.action_args:
            return None
        defaults = {p.name: p.default for p in self.arguments()}
        action = arguments.get("action")
        unused = [
            name
            for name, actions in self.action_args.items()
            if action not in actions and not _left_out(arguments.get(name), defaults.get(name))
        ]
        if not unused:
            return None
        uses = "; ".join(f"{name} is for {_actions(self.action_args[name])}" for name in unused)
        which = " or ".join(unused)
        return f"{self.name}(action={action!r}) does not use {which} ({uses}). Call again without {which}."


async def with_progress(
    work: Awaitable[T], progress: Progress | None, *, total: float | None, message: str
) -> T:
    """Await `work`, reporting the seconds spent (of `total`) every PROGRESS_INTERVAL s."""
    task = asyncio.ensure_future(work)
    started = time.monotonic()
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=PROGRESS_INTERVAL)
            if done:
                return task.result()
            if progress is not None:
                await progress(round(time.monotonic() - started, 1), total, message)
    finally:
        task.cancel()
        # Left behind (the call was cancelled: its session ended), its outcome is nobody's:
        # read, so that an error it ends with is not logged as never retrieved.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())


@dataclass(slots=True)
class Call:
    """What a tool function works with: the client's session and the response being built."""

    tool: str
    session: SessionState
    response: Response
    acted_tab: Tab | None = None
    """The tab the call worked on (for telemetry); `tab()` and `target()` set it."""
    progress: Progress | None = None
    """`await progress(done, total, message)`: a progress notification, if the client asked for them."""

    async def with_progress(self, work: Awaitable[T], *, total: float | None, message: str) -> T:
        """Await `work`, reporting the seconds spent (of `total`) every PROGRESS_INTERVAL s."""
        return await with_progress(work, self.progress, total=total, message=message)

    @property
    def manager(self) -> TabManager:
        return self.session.manager

    def tab(self, tab_id: int | str | None) -> Tab:
        """The tab with this id, or the active tab; never another one (unknown ids list open tabs)."""
        tab = self.manager.resolve(tab_id)
        self.acted_tab = tab
        return tab

    def target(
        self, *, tab_id: int | str | None = None, ref: str | None = None, allow_dialog: bool = False
    ) -> Tab:
        """The tab a page tool acts on.

        A tab-scoped ref (`3e5`) names its own tab, so `tabId` may be left out; a `tabId` that
        disagrees with the ref's tab is an error (ForeignRefError). A bare ref (`e5`) without
        `tabId` is taken as the active tab's only while one tab is open: with more, it could be
        any of theirs (RefError). A tab with an open dialog is refused (DialogOpenError: handle
        it first) unless `allow_dialog`.
        """
        ref_tab = parse_ref(ref)[0] if ref is not None else None
        if ref is not None and ref_tab is None and tab_id is None:
            open_ids = [info.id for info in self.manager.tabs()]
            if len(open_ids) > 1:
                active = self.manager.resolve(None)
                raise RefError(
                    f"Ref {ref.strip()} does not say which tab it is of, and {len(open_ids)} tabs are open "
                    f"({', '.join(map(str, open_ids))}).",
                    f"Use the ref as the snapshot gave it ('{active.id}{ref.strip()}' is {ref.strip()} of "
                    f"tab {active.id}, the active tab), or pass tabId.",
                    ref=ref,
                )
        if ref is not None and ref_tab is not None and tab_id is None:
            tab = self._tab_of_ref(ref_tab, ref)
        else:
            tab = self.manager.resolve(tab_id)
            if ref is not None and ref_tab is not None and tab.id != ref_tab:
                # A ref of a tab that is not open here (closed, or another session's) is not one
                # to act on by leaving tabId out: said as that tab not found.
                self._tab_of_ref(ref_tab, ref)
                tab.resolve_ref(ref)  # raises ForeignRefError naming the ref's tab
        self.acted_tab = tab
        if allow_dialog:
            tab.ensure_open()
        else:
            tab.ensure_no_dialog()
        return tab

    def _tab_of_ref(self, ref_tab: int, ref: str) -> Tab:
        """The open tab a ref came from; TabNotFoundError (saying where the ref came from) if none."""
        try:
            return self.manager.tab(ref_tab)
        except TabNotFoundError as exc:
            raise TabNotFoundError(
                ref_tab,
                exc.open_tabs,
                reason=f"{exc.reason} Ref {ref} came from it; take a snapshot of an open tab.".strip(),
                kept_by=exc.kept_by,
            ) from exc


def _check_start_options(config: ServerConfig, *, logged: bool = False) -> str:
    """Where to look when the browser does not start: the options it starts with, as they were
    given (`logged`: the log has more than the error says)."""
    options = config.browser_start_options()
    check = f"Check {', '.join(options)}" if options else "Check that Chromium is installed"
    return f"{check}; the server's log has the details." if logged else f"{check}."


@functools.cache
def _arguments(fn: ToolFunction) -> tuple[inspect.Parameter, ...]:
    """A tool function's parameters but `call` and `tab`, read once, at the first need (not at
    start-up: `eval_str` evaluates every annotation)."""
    parameters = list(inspect.signature(fn, eval_str=True).parameters.values())[1:]
    return tuple(p for p in parameters if p.name != "tab")


def tool_runner(spec: ToolSpec) -> ToolRunner:
    """What the server runs for a call of `spec`, with the request's context and its arguments."""

    async def run(ctx: RequestContext, kwargs: dict[str, Any]) -> CallToolResult:
        with logs.during_call() as records:
            started = time.monotonic()
            result = await handle(ctx, kwargs)
            given = {k: v for k, v in kwargs.items() if v is not None}
            logger.debug(
                "%s(%s): %s in %.0f ms",
                spec.name,
                ", ".join(f"{k}={v!r:.80}" for k, v in given.items()),
                "error" if result.is_error else "ok",
                (time.monotonic() - started) * 1000,
            )
        await _send_logs(ctx, records)
        return result

    async def handle(ctx: RequestContext, kwargs: dict[str, Any]) -> CallToolResult:
        state: ServerState = ctx.lifespan_context
        response = Response(
            spec.name, secrets=state.secrets, structured=state.config.structured_content, calls=spec.calls
        )
        misplaced = spec.misplaced(kwargs)
        if misplaced is not None:  # refused before any browser work, as the SDK refuses a bad type
            response.error(misplaced)
            return await response.build(None)
        # A call waiting for its browser session (a launch, a CDP endpoint, a grid slot, the
        # extension) is cut short by a stop as a call that runs is.
        call: Call | None = None
        with anyio.CancelScope() as stop, state.running_call(stop.cancel):
            session = await _session(state, ctx, response, spec.name)
            if session is not None:
                call = Call(spec.name, session, response, progress=_progress_reporter(ctx))
                try:
                    await _run(spec, state, call, kwargs)
                except anyio.get_cancelled_exc_class():
                    if spec.recorded and not stop.cancel_called:  # its client cancelled it
                        _record_action(call, spec.given(kwargs), CANCELLED)
                    raise
        if stop.cancel_called:  # the server stops (`ServerState.stop_calls`): whatever the call got to
            logger.info("%s was cut short: the server is stopping", spec.name)
            stopped = Response(
                spec.name, secrets=state.secrets, structured=state.config.structured_content, calls=spec.calls
            )
            stopped.error(
                "The server is stopping: this call was cut short, and may have been done in part. "
                "Start the server again to go on."
                if call is not None
                else "The server is stopping: this call was not run (its browser was still being started "
                "or connected). Start the server again to go on."
            )
            return await stopped.build(None)
        if call is None:  # no session: the response says why
            return await response.build(None)
        result = await response.build(call.session)
        if spec.recorded:  # after the build: its summary is the result line of the moment it tells
            _record_action(call, spec.given(kwargs))
        return result

    return run


async def _session(
    state: ServerState, ctx: RequestContext, response: Response, name: str
) -> SessionState | None:
    """The call's browser session, started on the first call; None when it could not be had, the
    response then saying why."""
    # browser_instance works when the browser the options name cannot be had: the agent can
    # launch or connect another one (every call failed with the start's error).
    browser = name != "browser_instance"
    started = state.started_session(ctx, browser=browser)
    if started is not None:  # every call but the first: nothing to wait for, no progress task
        return started
    try:
        # The first call waits while the browser starts (a grid session may wait for a free slot
        # for a minute): progress keeps a client that asked for it from giving up meanwhile.
        return await with_progress(
            state.session(ctx, browser=browser),
            _progress_reporter(ctx),
            total=None,
            message="starting or connecting the browser",
        )
    except TabpilotError as exc:
        response.fail(exc)
        from_options = isinstance(exc, BrowserNotFoundError) or (
            isinstance(exc, ConnectError) and exc.reason != "driver"
        )
        if from_options and state.config.browser_start_options():
            response.error(_check_start_options(state.config))
    except ServerStopping:  # a stop signal came first: an answer, no traceback
        logger.info("%s came as the server stops: not run", name)
        response.error(NOT_RUN)
    except Exception as exc:
        logger.exception("could not start the browser session")  # the whole story goes to the log
        said = str(exc).strip().splitlines()
        response.error(
            f"Could not start the browser: {said[0].rstrip('.') if said else type(exc).__name__}. "
            + _check_start_options(state.config, logged=True)
        )
    return None


async def _run(spec: ToolSpec, state: ServerState, call: Call, kwargs: dict[str, Any]) -> None:
    """Do one call of `spec`: what it did, or why it failed, goes into its response."""
    session, response = call.session, call.response
    try:
        await session.manager.losses_judged()  # an error about a lost browser gives the reason found
        if _needs_default_instance(spec, kwargs):
            # A lost default browser (or an HTTP session's context of the shared one) is
            # started again by the next call that needs it; its instance_relaunched event tells
            # the model in ### Events. A grid session in its place may wait for a free slot for
            # a minute, as the first one did: progress keeps the client waiting.
            await call.with_progress(
                session.manager.ensure_default(isolate_in=session.isolate_in),
                total=None,
                message="starting or connecting the browser",
            )
        given = dict(kwargs)
        for name in spec.secret_args:
            if given.get(name) is not None:
                given[name] = _expand(state.secrets, given[name])
        if spec.tab:
            target = call.target(
                tab_id=kwargs.get("tabId"), ref=kwargs.get(spec.ref_arg), allow_dialog=spec.allows_dialog
            )
            await spec.fn(call, target, **given)
        else:
            await spec.fn(call, **given)
    except (TabpilotError, ValueError) as exc:  # ValueError: argument values the library rejects
        response.fail(exc)
    except Exception as exc:
        logger.exception("tool %s failed", spec.name)
        read = f"call {spec.calls.read(None)} again and " if spec.calls.read is not None else ""
        response.error(
            f"{spec.name} failed unexpectedly: {type(exc).__name__}: {exc}. If the page changed, {read}retry; "
            "if it happens again, it is a bug in tabpilot."
        )


async def _send_logs(ctx: RequestContext, records: list[logging.LogRecord]) -> None:
    """The call's log records to its client (`notifications/message`), only when it asked for
    them: the request's `_meta` names a log level (the 2026 protocol; the SDK keeps the levels
    below it back), or the client of the handshake era set one with `logging/setLevel`."""
    if not records:
        return
    state = ctx.lifespan_context
    meta = ctx.meta
    least = None if meta and LOG_LEVEL_META_KEY in meta else state.log_levels.get(state.session_key(ctx))
    if least is None and not (meta and LOG_LEVEL_META_KEY in meta):
        return
    secrets = state.secrets
    for record in records:
        level, data, name = logs.mcp_message(record)
        if least is not None and not logs.at_least(level, least):
            continue
        data = secrets.mask_all(data)
        with contextlib.suppress(Exception), warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)  # SEP-2577: still what clients read
            await ctx.session.send_log_message(
                level=level, data=data, logger=name, related_request_id=ctx.request_id
            )


def _actions(names: tuple[str, ...]) -> str:
    quoted = [repr(n) for n in names]
    return f"action {quoted[0]}" if len(quoted) == 1 else f"actions {', '.join(quoted)}"


def _left_out(value: Any, default: Any) -> bool:
    """An argument a client sent as good as empty (some fill every field): it asks for nothing."""
    return (
        value is None
        or value is False
        or value == default
        or (isinstance(value, str | dict | list) and not value)
    )


def _expand(secrets: Secrets, value: Any) -> Any:
    """`value` (validated arguments: strings, lists, models) with its placeholders expanded."""
    if isinstance(value, BaseModel):
        return value.model_copy(update={k: _expand(secrets, v) for k, v in value})
    if isinstance(value, list):
        return [_expand(secrets, v) for v in value]
    return secrets.expand_all(value)


def _progress_reporter(ctx: RequestContext) -> Progress:
    async def report(progress: float, total: float | None, message: str) -> None:
        with contextlib.suppress(Exception):  # no progress token: nothing is sent
            await ctx.session.report_progress(progress, total, message)

    return report


def _needs_default_instance(spec: ToolSpec, arguments: dict[str, Any]) -> bool:
    """Whether a call works on the default instance: it names no tab, ref or instance."""
    if spec.name == "browser_instance":  # listing or closing must show a lost instance as it is
        return False
    return all(arguments.get(name) is None for name in ("tabId", spec.ref_arg, "keepTabId", "instanceId"))


CANCELLED = "cancelled by its client before it finished (it may have been done in part)"
"""The outcome of an action its client cancelled (`notifications/cancelled`)."""


def _record_action(call: Call, arguments: dict[str, Any], cancelled: str | None = None) -> None:
    """Note the call among the session's actions: its result line, or `cancelled`."""
    response = call.response
    tab_id = call.acted_tab.id if call.acted_tab is not None else None
    outcome, ok = (cancelled, False) if cancelled is not None else (response.summary, not response.is_error)
    try:
        call.session.telemetry.record_action(tab_id, call.tool, arguments, outcome, ok=ok)
    except Exception:  # telemetry must never break a tool
        logger.exception("recording action %s failed", call.tool)


@dataclass(frozen=True, slots=True)
class OpenedTab:
    tab: Tab
    note: str = ""
    """What the load said besides: an HTTP error status, or that the page is still on its way."""
    loading: bool = False
    """Its page is still on its way (the note says so): a snapshot would wait for it as long again."""
    failed: str | None = None
    """Why its URL did not load, in the set's words: the tab is open all the same (on about:blank,
    or an error page), and the answer must name it, as browser_tabs new does."""

    def closed_since(self) -> str | None:
        """None while the tab is open; else, as the end of a sentence, that it closed after it
        opened (another call, such as a close of all others, or its page closed it meanwhile; a
        close another call has begun counts: the load it cut short says the tab closed)."""
        tab = self.tab
        if not tab.leaving:
            return None
        cause = tab.closing_cause
        why = f" ({'by another call' if cause == 'tool' else closed_as(cause)})" if cause else ""
        return f"it has closed since{why}: open another if you still need one"


def activate_tab(manager: TabManager, tab: Tab) -> bool:
    """Make `tab` the tab calls without a tab id act on; whether it was that tab already (the
    active tab of the default instance: another instance's active tab makes its instance the
    default)."""
    host = manager.instance_of(tab)
    already = manager.default_instance is host and host.active_tab is tab
    manager.activate(tab.id)
    return already


async def open_tab(
    call: Call,
    url: str | None,
    calls: ToolCalls = DEFAULT_CALLS,
    *,
    background: bool = False,
    instance_id: str | int | None = None,
) -> OpenedTab:
    """Open a tab and load `url` in it. A URL that is malformed or refused raises before any tab
    opens; a load that fails once the tab is open is told in `failed`."""
    target = normalize_url(url) if url else None
    if target:
        call.session.policy.check(target)
    tab = await call.manager.new_tab(None, background=background, instance_id=instance_id)
    call.acted_tab = tab
    if not target:
        return OpenedTab(tab)
    try:
        return OpenedTab(tab, (await navigate(tab, "goto", target)).note)
    except TabpilotError as exc:
        loading = loading_instead(exc, tab, target)
        if loading is not None:  # the tab is open, its page on its way
            return OpenedTab(tab, loading, loading=True)
        return OpenedTab(tab, failed=error_text(exc, calls))


def loading_instead(exc: TabpilotError, tab: Tab, page: str | None) -> str | None:
    """What a load into `tab` (of `page`, if known) that raised `exc` says instead of failing when
    its page is only slow to come (its server has not sent it in time): the tab is loading it, and
    the action is done (`loading_said`). None for every other error: a failure."""
    if isinstance(exc, ActionError) and exc.reason == "loading":
        return loading_said(tab.id, page or tab.due_url or None)
    return None
