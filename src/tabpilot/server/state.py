"""Server state: one `ServerState` for the process, one `SessionState` per MCP client session.

`ServerState` is what the server's lifespan yields (`ctx.request_context.lifespan_context`). It owns
the Playwright driver, the tab id space shared by every session (`TabIds`, so a tab id is unique
server-wide), and over HTTP the one launched browser whose contexts the sessions get.

`SessionState` is one client's view: its own `TabManager` (so its tabs are invisible to other
sessions), its telemetry, and the cursors that make every response report "what happened since
this client's previous response" (`last_event_seq`, `last_error_seq`, `shown_tabs`).

Which session a request belongs to:
- stdio (and in-memory test clients): one client per server, so one session, key "local". Its
  browser is launched (or connected, `--cdp-endpoint`) on first use, so `tools/list` never waits
  for Chromium.
- streamable HTTP: the `Mcp-Session-Id` of the initialize handshake. Each session gets a fresh
  BrowserContext of the shared browser, released when the MCP session ends (DELETE, idle timeout,
  crash: the SDK unwinds the connection's exit stack). The 2026-07-28 protocol is stateless (no
  session id), so `app.py` steers HTTP clients to the handshake protocol.

Tool code gets its session with `await state.session(ctx)`; the tool wrapper does that already.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import Context
from playwright.async_api import Playwright, async_playwright

from tabpilot import ConnectError, Instance, TabIds, TabManager, Telemetry, UrlPolicy, policy_route_hook

from .config import ServerConfig

if TYPE_CHECKING:
    from playwright.async_api import Browser

logger = logging.getLogger("tabpilot.server")

LOCAL_SESSION = "local"
_SESSION_HEADER = "mcp-session-id"


class SessionState:
    """One MCP client's browser, telemetry and response cursors."""

    def __init__(self, key: str, manager: TabManager, telemetry: Telemetry, policy: UrlPolicy) -> None:
        self.key = key
        self.manager = manager
        self.telemetry = telemetry
        self.policy = policy
        self.last_event_seq = 0
        """Events up to this sequence number were reported to this client (0: none yet)."""
        self.last_error_seq = 0
        """Telemetry entries up to this sequence number were counted in a `### Tabs` section."""
        self.shown_tabs: tuple[tuple[int, bool, bool], ...] | None = None
        """The tab set and active tabs as of the last `### Tabs` section, to tell when it changed."""

    async def close(self) -> None:
        await self.manager.close()


def _make_telemetry(config: ServerConfig, manager: TabManager) -> Telemetry:
    """Per-tab telemetry for one session, hooked in before its browser opens a tab."""
    if config.buffer_size is not None:
        telemetry = Telemetry(max_entries=config.buffer_size, redact=config.redact)
    else:
        telemetry = Telemetry(redact=config.redact)
    manager.add_hooks(context=telemetry.attach_context, page=telemetry.attach_page)
    return telemetry


class ServerState:
    """The root of the server's state: see the module docstring."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        playwright: Playwright | None = None,
        browser: Browser | None = None,
    ) -> None:
        self.config = config
        self.policy = UrlPolicy(config.allowed_origins, config.blocked_origins)
        self.tab_ids = TabIds()
        self._playwright = playwright
        self._owns_playwright = playwright is None
        self._browser = browser
        """The browser whose contexts sessions get: injected (tests), or launched for HTTP."""
        self._browser_manager: TabManager | None = None
        self._sessions: dict[str, SessionState] = {}
        self._starting: dict[str, asyncio.Task[SessionState]] = {}
        self._lock = asyncio.Lock()
        self._closed = False

    @property
    def sessions(self) -> dict[str, SessionState]:
        return dict(self._sessions)

    # -- sessions ----------------------------------------------------------------------------

    @staticmethod
    def session_key(ctx: Context[Any, Any]) -> str:
        headers = ctx.headers
        key = headers.get(_SESSION_HEADER) if headers is not None else None
        return key or LOCAL_SESSION

    def peek_session(self, ctx: Context[Any, Any]) -> SessionState | None:
        """The request's session if it exists, without starting a browser."""
        return self._sessions.get(self.session_key(ctx))

    async def session(self, ctx: Context[Any, Any]) -> SessionState:
        """The request's session, created (browser and all) on its first tool call."""
        key = self.session_key(ctx)
        found = self._sessions.get(key)
        if found is not None:
            return found
        task = self._starting.get(key)
        if task is None:
            # Concurrent first calls of one session share one start.
            task = asyncio.get_running_loop().create_task(self._open_session(key))
            self._starting[key] = task
            task.add_done_callback(lambda _t: self._starting.pop(key, None))
            if key != LOCAL_SESSION:
                self._release_when_connection_ends(ctx, key)
        return await asyncio.shield(task)

    def _release_when_connection_ends(self, ctx: Context[Any, Any], key: str) -> None:
        # The SDK unwinds a connection's exit stack however its session ends (DELETE, idle
        # timeout, crash). It is reachable only through the request's session object.
        connection = getattr(ctx.session, "_connection", None)
        exit_stack = getattr(connection, "exit_stack", None)
        if exit_stack is not None:
            exit_stack.push_async_callback(self.release, key)
        else:  # pragma: no cover - an SDK change; sessions then live until the server stops
            logger.warning("cannot watch the end of MCP session %s; it is released at shutdown", key)

    async def _open_session(self, key: str) -> SessionState:
        if self._closed:
            raise RuntimeError("the server is shutting down")
        config = self.config
        playwright = await self._driver()
        manager = TabManager(
            headless=config.headless,
            browser_path=config.browser_path,
            max_tabs=config.max_tabs,
            tab_limit_policy=config.tab_limit_policy,
            follow_new_tabs=config.follow_new_tabs,
            tab_ids=self.tab_ids,
            playwright=playwright,
        )
        telemetry = _make_telemetry(config, manager)
        if self.policy.restricts:
            # Pages start navigations too (links, scripts, popups): hold them to the same policy.
            manager.add_hooks(context=policy_route_hook(self.policy))
        try:
            if self._browser is not None or config.shares_browser:
                browser = await self._shared_browser()
                context = await browser.new_context()
                await manager.attach_context(context, owns_context=True)
                # A fresh context has no page; give the session a tab to start from.
                await manager.new_tab()
            else:
                await _open_browser(manager, config)
        except BaseException:
            await manager.close()
            raise
        session = SessionState(key, manager, telemetry, self.policy)
        self._sessions[key] = session
        return session

    async def release(self, key: str) -> None:
        """Close a session's browser context (or browser) and forget it."""
        session = self._sessions.pop(key, None)
        if session is not None:
            with contextlib.suppress(Exception):
                await session.close()

    # -- the shared browser ------------------------------------------------------------------

    async def _driver(self) -> Playwright:
        if self._playwright is None:
            self._playwright = await async_playwright().start()
        return self._playwright

    async def _shared_browser(self) -> Browser:
        async with self._lock:
            if self._browser is not None and self._browser.is_connected():
                return self._browser
            manager = TabManager(
                headless=self.config.headless,
                browser_path=self.config.browser_path,
                tab_ids=self.tab_ids,
                playwright=await self._driver(),
            )
            try:
                instance = await _open_browser(manager, self.config)
            except BaseException:
                await manager.close()
                raise
            if instance.browser is None:  # pragma: no cover - every kind but "context" has one
                raise ConnectError("the browser endpoint gave no browser object to create contexts on")
            if self._browser_manager is not None:
                await self._browser_manager.close()
            self._browser_manager = manager
            self._browser = instance.browser
            return instance.browser

    async def close(self) -> None:
        self._closed = True
        for task in list(self._starting.values()):
            task.cancel()
        for key in list(self._sessions):
            await self.release(key)
        if self._browser_manager is not None:
            await self._browser_manager.close()
            self._browser_manager = None
        if self._owns_playwright and self._playwright is not None:
            with contextlib.suppress(Exception):
                await self._playwright.stop()
            self._playwright = None


async def _open_browser(manager: TabManager, config: ServerConfig) -> Instance:
    """Connect to the configured endpoint, or launch a Chromium."""
    if config.cdp_endpoint:
        return await manager.connect_cdp(config.cdp_endpoint)
    if config.ws_endpoint:
        return await manager.connect_ws(config.ws_endpoint)
    return await manager.launch()
