"""Server state: one `ServerState` for the process, one `SessionState` per MCP client session.

`ServerState` is what the server's lifespan yields (`ctx.request_context.lifespan_context`). It
owns the Playwright driver, the tab id space shared by every session (`TabIds`, so a tab id is
unique server-wide), and over HTTP the one browser whose isolated contexts the sessions get.

`SessionState` is one client's view: its own `TabManager` (so its tabs are invisible to other
sessions), its telemetry, the cursors that make every response report "what happened since this
client's previous response", and the state of the compatible tool sets (`state_for`).

Which session a request belongs to:
- stdio (and in-memory test clients): one client per server, so one session, key "local". Its
  browser starts with the state (`warm_up`; `tabpilot serve` starts it while the SDK is still
  being imported) in the background, so `tools/list` never waits for Chromium and the first
  tool call finds it running or on its way.
- streamable HTTP: the `Mcp-Session-Id` of the request. Each session gets a fresh browser
  context of the shared browser, released when the client ends the session (the HTTP layer sees
  its DELETE and calls `release`) or once it has been idle for `session_idle_timeout`: no request
  of it in progress (a long call and an open GET stream for server notifications both count), for
  that long since the last one ended. That is the rule the SDK ends the MCP session by, and it has
  ended it by then, so the id answers 404 and never gets a fresh context; a client that vanished
  is caught this way (its GET stream ends with its connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import signal
import sys
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from tabpilot import (
    BrowserClaims,
    Driver,
    EventNumbers,
    ExtensionBridge,
    Instance,
    Snapshot,
    TabBudget,
    TabEvent,
    TabIds,
    TabLimitError,
    TabManager,
    TabpilotError,
    Telemetry,
    UrlPolicy,
    quoted,
)

from .config import ServerConfig

if TYPE_CHECKING:  # the SDK is imported by the server, not by its state (see runner.serve_stdio)
    from mcp.server.context import ServerRequestContext

    # The request context of a tool call, as the SDK hands it to the server (one definition).
    RequestContext = ServerRequestContext["ServerState", Any]

logger = logging.getLogger("tabpilot.server")

LOCAL_SESSION = "local"
MAX_PART_READS = 64
"""Reads of a page or a part of it (a subtree, a depth) a session remembers, to say one is unchanged."""
EXTENSION_FIRST_WAIT = 20.0
"""Seconds a session's first call waits for the browser extension to connect (it may be on its way)."""
_SESSION_HEADER = "mcp-session-id"
T = TypeVar("T")


class ServerStopping(RuntimeError):
    """A call came as the server stops: no browser session is started for it any more."""


NOT_RUN = "The server is stopping: this call was not run. Start the server again to go on."
"""The answer to a call the server stops before running it."""


def _seen(url: str, text: str) -> tuple[str, bytes]:
    """What a session remembers of a read: its URL and a digest of its text."""
    return url, hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


class SessionState:
    """One MCP client's browser, telemetry, response cursors and tool-set state."""

    def __init__(
        self,
        key: str,
        manager: TabManager,
        telemetry: Telemetry,
        config: ServerConfig,
        *,
        isolate_in: Callable[[], Awaitable[Instance]] | None = None,
        server: ServerState | None = None,
        number: int = 1,
    ) -> None:
        self.key = key
        self.number = number
        """The session's number in the server's run (1, 2, ...): its name in the logs and files."""
        self.manager = manager
        self.telemetry = telemetry
        self.config = config
        self.isolate_in = isolate_in
        """Over HTTP, the shared browser (started again if it died) the session's context lives in."""
        self.server = server
        """The server's state (the extension's bridge lives there)."""
        self.last_event_seq = 0
        """Events up to this sequence number were reported to this client (0: none yet)."""
        self.last_error_seq = 0
        """Telemetry entries up to this sequence number were counted in a `### Tabs` section."""
        self.shown_tabs: tuple[tuple[int, bool, bool], ...] | None = None
        """The tab set and active tabs as of the last `### Tabs` section, to tell when it changed."""
        self.seen_pages: dict[int, tuple[str, str]] = {}
        """Each tab's URL and title as this client last saw them (a `### Page` line, a tab list),
        to leave out a `### Page` that would say the same again."""
        self._part_reads: OrderedDict[tuple[int, int | None, str | None], tuple[str, bytes]] = OrderedDict()
        """This client's latest read of each part of a page it read (tab, depth, ref; the whole tree
        with depth and ref None, brought up to date by the changes it was told): its URL and a
        digest of its text (`read_again`, `tree_changed`)."""
        self.start_error: Exception | None = None
        """Why the browser the options name could not be had at the last try (None: it was, or
        the agent launched or connected one since): calls that need it try again
        (`ensure_started`); browser_instance works meanwhile."""
        self._starting: asyncio.Task[None] | None = None
        self._extras: dict[type[Any], Any] = {}

    @property
    def policy(self) -> UrlPolicy:
        return self.manager.policy

    def saved_state(self, path: str) -> None:
        """This session saved its cookies and localStorage to `path` (absolute)."""
        self.check_not_others(path, "written")
        if self.server is not None:
            self.server.saved_states[path] = self.key

    def check_not_others(self, path: str, doing: str) -> None:
        """Refuse a file (absolute path) that another session of this server saved its cookies to:
        over HTTP every session has the same file roots, and a session's cookies are its own."""
        owner = self.server.saved_states.get(path) if self.server is not None else None
        if owner is not None and owner != self.key:
            raise ValueError(
                f"{quoted(path)} holds another session's cookies (it saved them there): it cannot be "
                f"{doing} by this session. Give another path."
            )

    def state_for(self, kind: type[T]) -> T:
        """This session's instance of `kind` (made on first use): state a tool set keeps per client."""
        found = self._extras.get(kind)
        if found is None:
            found = self._extras[kind] = kind()
        return found

    def read_again(self, tab_id: int, depth: int | None, ref: str | None, url: str, text: str) -> bool:
        """Whether this client's previous read of the same part of tab `tab_id` (`depth`, `ref`;
        both None: the whole tree) gave this URL and text; from now on this one is its previous read."""
        key = (tab_id, depth, ref)
        seen = _seen(url, text)
        same = self._part_reads.get(key) == seen
        self._remember(key, seen)
        return same

    def tree_changed(self, tab_id: int, before: Snapshot, after: Snapshot, *, all_told: bool) -> None:
        """An answer told this client the changes of tab `tab_id`'s tree from `before` to `after`
        (`all_told`: every changed line and every removed one). It has `after` whole only if it had
        `before` and was told them all; else its next read of the whole tree is shown to it, not
        said to be unchanged (an answer that cut its changes says to take a snapshot for them)."""
        key = (tab_id, None, None)
        if all_told and self._part_reads.get(key) == _seen(before.url, before.text):
            self._remember(key, _seen(after.url, after.text))
        else:
            self._part_reads.pop(key, None)

    def _remember(self, key: tuple[int, int | None, str | None], seen: tuple[str, bytes]) -> None:
        self._part_reads[key] = seen
        self._part_reads.move_to_end(key)
        while len(self._part_reads) > MAX_PART_READS:
            self._part_reads.popitem(last=False)

    def take_events(self) -> list[TabEvent]:
        """The events this client has not been told of yet; from now on it has."""
        events = self.manager.events.history(since=self.last_event_seq)
        self.last_event_seq = self.manager.events.last_seq
        return events

    async def ensure_started(self) -> None:
        """Have the browser the options name, when its start failed before: try it again (calls at
        the same time share one try), and raise why it still cannot be had."""
        if self.start_error is None:
            return
        if self.manager.instances:  # the agent launched or connected one meanwhile
            self.start_error = None
            return
        if self._starting is None:
            self._starting = asyncio.get_running_loop().create_task(self._start_again())
        starting = self._starting
        try:
            await asyncio.shield(starting)
        finally:
            if starting.done() and self._starting is starting:
                self._starting = None

    async def _start_again(self) -> None:
        try:
            await open_browser(self.manager, self.config)
        except Exception as exc:
            self.start_error = exc
            raise
        self.start_error = None

    async def close(self) -> None:
        if self._starting is not None:
            self._starting.cancel()
        await self.manager.close()


class ServerState:
    """The root of the server's state: see the module docstring."""

    def __init__(self, config: ServerConfig, *, shared: Instance | None = None) -> None:
        self.config = config
        self.policy = UrlPolicy(
            config.allowed_origins,
            config.blocked_origins,
            guard_pages=config.http_host is not None,  # clients share this machine's loopback
        )
        self.tab_ids = TabIds()
        self.event_numbers = EventNumbers()
        """One numbering of events and telemetry entries for every session: a cursor an agent kept
        from a session that ended reads its next session's entries from there (each session's
        numbering started at 1, and such a cursor passed over the new session's first entries)."""
        self.budget = TabBudget(config.max_total_tabs)
        self.browser_claims = BrowserClaims()
        self.secrets = config.secrets
        self.driver = Driver()
        self._shared = shared
        """The browser whose contexts sessions get: injected (tests), or launched for HTTP."""
        self._host: TabManager | None = None
        self._sessions: dict[str, SessionState] = {}
        self._opened = 0
        """Sessions opened so far (their numbers)."""
        self.saved_states: dict[str, str] = {}
        """The files sessions saved their cookies to, and whose they are (`SessionState.saved_state`)."""
        self.log_levels: dict[str, str] = {}
        """The least level of log records each session's client asked for with `logging/setLevel`
        (the handshake era; a 2026 client asks per request), by session key."""
        self._starting: dict[str, asyncio.Task[SessionState]] = {}
        self._in_flight: dict[str, int] = {}
        """Requests of each HTTP session being served now (sessions with none are left out)."""
        self._last_ended: dict[str, float] = {}
        """When the last request of each HTTP session ended (monotonic clock)."""
        self._reaper: asyncio.Task[None] | None = None
        self._warming: asyncio.Task[Any] | None = None
        """The shared browser's start at launch (over HTTP), which a stop must wait for."""
        self._lock = asyncio.Lock()
        self._bridge: ExtensionBridge | None = None
        self._closed = False
        self._stopping = False
        self._calls: set[Callable[[], None]] = set()
        """How to cut short each tool call under way (`stop_calls`)."""
        if hasattr(signal, "SIGUSR1"):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, dump_tasks)

    async def start(self) -> None:
        """Work that must not wait for the first tool call: the extension's bridge listens at once,
        so the extension can connect before the client asks for anything."""
        if self.config.extension:
            # A bridge that cannot listen is told once, by the session's start (`warm_up`, in the
            # log); the first tool call tries again, and says why it failed.
            with contextlib.suppress(TabpilotError):
                await self.extension_bridge()

    async def extension_bridge(self) -> ExtensionBridge:
        """The bridge the tabpilot extension connects to, listening from the first call on."""
        async with self._lock:
            if self._bridge is None:
                config = self.config
                bridge = ExtensionBridge(
                    port=config.extension_port,
                    token=config.extension_token,
                    scope=config.extension_scope,
                    extension_ids=config.extension_ids,
                    files=self.policy.allows("file:///"),
                )
                try:
                    await bridge.start()
                except OSError as exc:
                    # Most often another server (a tabpilot still stopping, or one more) has the port.
                    raise TabpilotError(
                        f"The server {exc.strerror}.",
                        "Another program, perhaps another tabpilot server, uses that port: stop it and "
                        "call again, or start this server with another --extension-port and pair the "
                        "extension with that port.",
                    ) from exc
                self._bridge = bridge
                announce_bridge(bridge)
            return self._bridge

    @property
    def sessions(self) -> dict[str, SessionState]:
        return dict(self._sessions)

    # -- sessions ----------------------------------------------------------------------------

    @staticmethod
    def session_key(ctx: RequestContext) -> str:
        headers = getattr(ctx.request, "headers", None)  # an HTTP request's; none over stdio
        key = headers.get(_SESSION_HEADER) if headers is not None else None
        return str(key) if key else LOCAL_SESSION

    def peek_session(self, ctx: RequestContext) -> SessionState | None:
        """The request's session if it exists, without starting a browser."""
        return self._sessions.get(self.session_key(ctx))

    def started_session(self, ctx: RequestContext, *, browser: bool = True) -> SessionState | None:
        """The request's session when `session` would give it at once (it exists, and its browser
        was had or is not needed), else None: `session` then starts it, tries its browser again,
        or says the server is stopping."""
        found = self._sessions.get(self.session_key(ctx))
        if self._stopping or found is None or (browser and found.start_error is not None):
            return None
        return found

    async def session(self, ctx: RequestContext, *, browser: bool = True) -> SessionState:
        """The request's session, created (browser and all) on its first tool call. Raises
        ServerStopping once `stop_calls` was called. A browser the options name that cannot be had
        raises why, unless not `browser` (a call that launches or connects another one)."""
        if self._stopping:
            raise ServerStopping("the server is stopping")
        started = self.started_session(ctx, browser=browser)
        if started is not None:
            return started
        key = self.session_key(ctx)
        found = self._sessions.get(key)
        if found is None:
            found = await asyncio.shield(self._start_session(key))
            if browser and found.start_error is not None:  # this call waited for that try: no other
                raise found.start_error
        elif browser:
            await found.ensure_started()
        return found

    def _start_session(self, key: str) -> asyncio.Task[SessionState]:
        task = self._starting.get(key)
        if task is None:
            # Concurrent first calls of one session share one start.
            task = asyncio.get_running_loop().create_task(self._open_session(key))
            self._starting[key] = task
            task.add_done_callback(lambda _t: self._starting.pop(key, None))
        return task

    def warm_up(self) -> None:
        """Start the browser now, in the background, while the client initializes: the first call
        finds it running, and a browser that cannot start is reported in the log at once (the
        first call then tries again and reports it too). `tools/list` never waits for it."""
        if self._shared is not None:
            return  # given by the embedding code (tests): nothing to start
        if self.config.shares_browser:
            task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(self._shared_instance())
            self._warming = task
        else:
            task = self._start_session(LOCAL_SESSION)
        task.add_done_callback(_report_start)

    @contextlib.contextmanager
    def running_call(self, cut_short: Callable[[], None]) -> Iterator[None]:
        """A tool call runs; `cut_short` stops it if the server stops meanwhile (`stop_calls`)."""
        self._calls.add(cut_short)
        try:
            yield
        finally:
            self._calls.discard(cut_short)

    def stop_calls(self) -> None:
        """The server is about to stop: the tool calls under way are cut short (each is answered
        that the server stops), and later calls are not run. Over HTTP the answers go out before
        the server closes its connections; the browsers close after that (`close`)."""
        self._stopping = True
        # The signal may have reached the browsers and the driver too (a terminal's, a supervisor's
        # stop of the whole group): a browser that goes now goes with the stop, not lost.
        for manager in [*(s.manager for s in self._sessions.values()), *([self._host] if self._host else [])]:
            manager.stopping()
        for cut_short in list(self._calls):
            cut_short()

    @contextlib.contextmanager
    def serving(self, key: str) -> Iterator[None]:
        """A request of HTTP session `key` is being served: the session is not idle until it has
        ended (and `session_idle_timeout` has passed since)."""
        self._in_flight[key] = self._in_flight.get(key, 0) + 1
        if self._reaper is None and not self._closed:
            self._reaper = asyncio.get_running_loop().create_task(self._reap_idle())
        try:
            yield
        finally:
            left = self._in_flight.pop(key) - 1
            if left:
                self._in_flight[key] = left
            self._last_ended[key] = time.monotonic()

    async def _reap_idle(self) -> None:
        timeout = self.config.session_idle_timeout
        while not self._closed:
            await asyncio.sleep(min(max(timeout / 4, 0.05), 30))
            now = time.monotonic()
            for key, ended in list(self._last_ended.items()):
                if key in self._in_flight or now - ended <= timeout:
                    continue
                await self.release(key, f"idle for {now - ended:.0f} s")

    def new_manager(self, *, counted: bool = True) -> TabManager:
        """A manager with the server's options; `counted`: its tabs count against --max-total-tabs."""
        config = self.config
        return TabManager(
            options=config.browser,
            max_tabs=config.max_tabs,
            tab_limit_policy=config.tab_limit_policy,
            follow_new_tabs=config.follow_new_tabs,
            policy=self.policy,
            tab_ids=self.tab_ids,
            driver=self.driver,
            budget=self.budget if counted else None,
            browser_claims=self.browser_claims,
            event_numbers=self.event_numbers,
        )

    async def _open_session(self, key: str) -> SessionState:
        if self._closed:
            raise ServerStopping("the server is shutting down")
        self._opened += 1
        number = self._opened
        config = self.config
        manager = self.new_manager()
        sizes = {} if config.buffer_size is None else {"max_entries": config.buffer_size}
        telemetry = Telemetry(
            **sizes, redact=config.redact, network=config.shows_network, numbering=manager.events
        )
        manager.add_target_hook(telemetry.attach_target)
        isolated = self._shared is not None or config.shares_browser
        start_error: Exception | None = None
        try:
            if isolated:
                await manager.attach_isolated(await self._shared_instance())
                # A fresh context has no page; give the session a tab to start from, if the total
                # allows one (other sessions hold them all: it starts empty, and opening a tab says why).
                with contextlib.suppress(TabLimitError):
                    await manager.new_tab()
            elif config.extension:
                bridge = await self.extension_bridge()
                manager.watch_extension(bridge)
                await bridge.wait_connected(EXTENSION_FIRST_WAIT)
                await manager.extension_connected(EXTENSION_FIRST_WAIT)
            else:
                try:
                    await open_browser(manager, config)
                except Exception as exc:
                    # The session is there all the same: browser_instance can launch or connect
                    # another browser; the other calls try this one again.
                    start_error = exc
        except BaseException:
            await manager.close()
            raise
        session = SessionState(
            key,
            manager,
            telemetry,
            config,
            isolate_in=self._shared_instance if isolated else None,
            server=self,
            number=number,
        )
        session.start_error = start_error
        self._sessions[key] = session
        if config.http_host is not None:
            # Its number names it in the log (its id would let a reader of the log act as it).
            instances = ", ".join(i.id for i in manager.instances) or "none yet"
            logger.info(
                "HTTP session %d opened (%d open): instance %s", number, len(self._sessions), instances
            )
        return session

    async def release(self, key: str, why: str) -> None:
        """Close a session's browser context (or browser) and forget it; one still being opened is
        waited for, then closed (a call cut short by the session's end may have started it). `why`
        it ends, for the log."""
        self._last_ended.pop(key, None)
        self.log_levels.pop(key, None)
        starting = self._starting.get(key)
        if starting is not None:
            await asyncio.gather(starting, return_exceptions=True)
        session = self._sessions.pop(key, None)
        if session is not None:
            if self.config.http_host is not None:
                logger.info("HTTP session %d ended (%s)", session.number, why)
            with contextlib.suppress(Exception):
                await session.close()

    # -- the shared browser ------------------------------------------------------------------

    async def _shared_instance(self) -> Instance:
        async with self._lock:
            shared = self._shared
            if shared is not None and shared.check_alive():
                return shared
            if self._host is not None:
                await self._host.close()
            # Launched like any session's browser; sessions use isolated contexts of it. Its own
            # tab is no session's (none sees or uses it): it does not count against the total.
            host = self._host = self.new_manager(counted=False)
            self._shared = await open_browser(host, self.config)
            return self._shared

    async def close(self) -> None:
        self._closed = True
        if self._reaper is not None:
            self._reaper.cancel()
        starting: list[asyncio.Task[Any]] = [*self._starting.values()]
        if self._warming is not None:
            starting.append(self._warming)
        for task in starting:
            task.cancel()
        # Their clean-up (a browser cut short in its launch is closed before its profile is
        # removed) needs the driver: it ends first.
        await asyncio.gather(*starting, return_exceptions=True)
        for key in list(self._sessions):
            await self.release(key, "the server stops")
        if self._host is not None:
            await self._host.close()
            self._host = None
        if self._bridge is not None:
            await self._bridge.close()
        await self.driver.stop()


def _report_start(task: asyncio.Task[Any]) -> None:
    if task.cancelled():
        return
    exc = task.exception()
    if exc is None and isinstance(task.result(), SessionState):
        exc = task.result().start_error
    if exc is not None:
        from .advice import in_flag_words  # only a browser that failed to start needs it

        logger.error("the browser could not start: %s", in_flag_words(exc))
    else:
        logger.info("the browser is up")


def dump_tasks() -> None:
    """`kill -USR1 <pid>`: write what every task of the server waits on to stderr (a hang's why)."""
    for task in asyncio.all_tasks():
        frames = [f"{f.f_code.co_filename}:{f.f_lineno} {f.f_code.co_name}" for f in task.get_stack(limit=12)]
        print(f"task {task.get_name()}:\n  " + "\n  ".join(frames), file=sys.stderr, flush=True)


def announce_bridge(bridge: ExtensionBridge) -> None:
    """Tell the user on stderr where the extension connects and how to pair it."""
    url = bridge.connect_url if bridge.token_generated else bridge.connect_url_with("<your token>")
    print(
        f"tabpilot: waiting for the tabpilot browser extension on {bridge.address} (scope: {bridge.scope}). "
        f"Pair it once by opening this page in the browser that has the extension:\n  {url}",
        file=sys.stderr,
        flush=True,
    )


async def open_browser(manager: TabManager, config: ServerConfig) -> Instance:
    """Connect to the configured endpoint or the user's running Chrome (or start a Selenium Grid
    session), or launch a Chromium."""
    if config.auto_connect:
        return await manager.auto_connect(user_data_dir=config.browser.user_data_dir)
    if config.cdp_endpoint:
        return await manager.connect_cdp(config.cdp_endpoint)
    if config.ws_endpoint:
        return await manager.connect_ws(config.ws_endpoint)
    if config.selenium_grid:
        return await manager.connect_grid(config.selenium_grid, capabilities=config.grid_capabilities)
    return await manager.launch()
