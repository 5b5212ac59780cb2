"""The one module that knows Playwright: thin handles over its public API, and its errors translated.

Everything else in tabpilot works with these handles (`Driver`, `BrowserHandle`,
`ContextHandle`, `PageHandle`, `ElementHandle`, `DialogHandle`, `CdpSession`) and never imports
Playwright. Only public Playwright names are used; where Playwright has no API for something,
the route is a CDP session (`CdpSession`). Playwright's errors become tabpilot's at one
boundary, `map_playwright_errors`, most specific first.

`PageHandle.page` is the Playwright `Page` itself, for library users who need what tabpilot does
not wrap (`tab.page`).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import shutil
import tempfile
import weakref
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from playwright.async_api import (
    Browser,
    BrowserContext,
    CDPSession,
    Dialog,
    Download,
    Frame,
    Locator,
    Playwright,
    async_playwright,
)
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Page as Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ._browser_path import find_browser
from ._errors import ActionError, ConnectError, StaleRefError, TabpilotError
from ._options import BrowserOptions

Disposer = Callable[[], None]
MouseButton = Literal["left", "middle", "right"]


def _listen(emitter: Any, event: str, handler: Callable[..., Any]) -> Disposer:
    emitter.on(event, handler)

    def dispose() -> None:
        with contextlib.suppress(Exception):
            emitter.remove_listener(event, handler)

    return dispose


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _quiet(task: asyncio.Future[Any]) -> None:
    """Nobody awaits `task`: retrieve its outcome so asyncio does not log it."""
    task.add_done_callback(lambda t: t.cancelled() or t.exception())


# -- CDP -----------------------------------------------------------------------------------------


class CdpSession:
    """A Chrome DevTools Protocol session (browser-level or one page's)."""

    __slots__ = ("_session",)

    def __init__(self, session: CDPSession) -> None:
        self._session = session

    async def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._session.send(method, params)
        return result

    def on(self, event: str, handler: Callable[[dict[str, Any]], None]) -> Disposer:
        return _listen(self._session, event, handler)

    async def detach(self) -> None:
        with contextlib.suppress(PlaywrightError):
            await self._session.detach()


# -- dialogs, elements, pages ----------------------------------------------------------------------


class DialogHandle:
    __slots__ = ("_dialog",)

    def __init__(self, dialog: Dialog) -> None:
        self._dialog = dialog

    @property
    def type(self) -> str:
        return self._dialog.type

    @property
    def message(self) -> str:
        return self._dialog.message

    @property
    def default_value(self) -> str:
        return self._dialog.default_value

    async def accept(self, prompt_text: str | None = None) -> None:
        await (self._dialog.accept(prompt_text) if prompt_text is not None else self._dialog.accept())

    async def dismiss(self) -> None:
        await self._dialog.dismiss()


class ElementHandle:
    """An element of a page (a Playwright locator); every call takes its own timeout in seconds."""

    __slots__ = ("_locator",)

    def __init__(self, locator: Locator) -> None:
        self._locator = locator

    async def count(self) -> int:
        return await self._locator.count()

    async def click(
        self, *, button: MouseButton, modifiers: Sequence[str], double: bool, timeout: float
    ) -> None:
        mods: Any = list(modifiers)
        if double:
            await self._locator.dblclick(button=button, modifiers=mods, timeout=_ms(timeout))
        else:
            await self._locator.click(button=button, modifiers=mods, timeout=_ms(timeout))

    async def fill(self, text: str, *, timeout: float) -> None:
        await self._locator.fill(text, timeout=_ms(timeout))

    async def type_keys(self, text: str, *, timeout: float) -> None:
        await self._locator.press_sequentially(text, timeout=_ms(timeout))

    async def press(self, key: str, *, timeout: float) -> None:
        await self._locator.press(key, timeout=_ms(timeout))

    async def select(self, values: Sequence[str], *, timeout: float) -> list[str]:
        return await self._locator.select_option(list(values), timeout=_ms(timeout))

    async def hover(self, *, timeout: float) -> None:
        await self._locator.hover(timeout=_ms(timeout))

    async def check(self, checked: bool, *, timeout: float) -> None:
        await self._locator.set_checked(checked, timeout=_ms(timeout))

    async def set_files(self, paths: Sequence[str], *, timeout: float) -> None:
        await self._locator.set_input_files(list(paths), timeout=_ms(timeout))

    async def drag_to(self, target: ElementHandle, *, timeout: float) -> None:
        await self._locator.drag_to(target._locator, timeout=_ms(timeout))

    async def screenshot(self, *, image_type: Literal["png", "jpeg"], quality: int | None, timeout: float) -> bytes:
        return await self._locator.screenshot(type=image_type, quality=quality, timeout=_ms(timeout))

    async def evaluate(self, function: str, *, timeout: float) -> Any:
        return await self._locator.evaluate(function, timeout=_ms(timeout))

    async def aria_snapshot(self, *, depth: int | None) -> str:
        return await self._locator.aria_snapshot(mode="ai", depth=depth)

    async def wait_for(self, state: Literal["visible", "hidden"], *, timeout: float) -> None:
        await self._locator.wait_for(state=state, timeout=_ms(timeout))


_handles: weakref.WeakKeyDictionary[Page, PageHandle] = weakref.WeakKeyDictionary()


def page_handle(page: Page) -> PageHandle:
    """The one handle of a Playwright page (the same object every time)."""
    handle = _handles.get(page)
    if handle is None:
        handle = _handles[page] = PageHandle(page)
    return handle


class PageHandle:
    """One page (tab) of a browser context."""

    __slots__ = ("__weakref__", "page")

    def __init__(self, page: Page) -> None:
        self.page = page

    @property
    def url(self) -> str:
        return self.page.url

    def is_closed(self) -> bool:
        return self.page.is_closed()

    @property
    def viewport(self) -> tuple[int, int] | None:
        size = self.page.viewport_size
        return (size["width"], size["height"]) if size else None

    # events (each returns its disposer)
    def on_close(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "close", lambda _page: handler())

    def on_crash(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "crash", lambda _page: handler())

    def on_dialog(self, handler: Callable[[DialogHandle], None]) -> Disposer:
        # While a listener is registered, Playwright leaves the dialog open for us to handle.
        return _listen(self.page, "dialog", lambda dialog: handler(DialogHandle(dialog)))

    def on_download(self, handler: Callable[[str, str], None]) -> Disposer:
        return _listen(self.page, "download", lambda d: handler(d.url, d.suggested_filename) if isinstance(d, Download) else None)

    def on_load(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "load", lambda _page: handler())

    def on_new_document(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self.page, "domcontentloaded", lambda _page: handler())

    def on_navigated(self, handler: Callable[[], None]) -> Disposer:
        """The main frame navigated (a new document is on its way)."""

        def navigated(frame: Frame) -> None:
            if frame == self.page.main_frame:
                handler()

        return _listen(self.page, "framenavigated", navigated)

    # reading
    async def opener(self) -> PageHandle | None:
        opener = await self.page.opener()
        return page_handle(opener) if opener is not None else None

    async def title(self) -> str:
        return await self.page.title()

    async def aria_snapshot(self, *, depth: int | None) -> str:
        return await self.page.aria_snapshot(mode="ai", depth=depth)

    def element(self, page_ref: str) -> ElementHandle:
        return ElementHandle(self.page.locator(f"aria-ref={page_ref}"))

    def text(self, text: str) -> ElementHandle:
        return ElementHandle(self.page.get_by_text(text).first)

    # acting
    async def press_key(self, key: str) -> None:
        await self.page.keyboard.press(key)

    async def screenshot(
        self, *, full_page: bool, image_type: Literal["png", "jpeg"], quality: int | None, timeout: float
    ) -> bytes:
        return await self.page.screenshot(full_page=full_page, type=image_type, quality=quality, timeout=_ms(timeout))

    async def evaluate(self, function: str, arg: Any = None) -> Any:
        return await self.page.evaluate(function, arg)

    async def navigate(self, action: Literal["goto", "back", "forward", "reload"], url: str, *, timeout: float) -> int | None:
        """Navigate and wait for the load; the HTTP status of the document (None: no response)."""
        ms = _ms(timeout)
        if action == "goto":
            response = await self.page.goto(url, timeout=ms)
        elif action == "back":
            response = await self.page.go_back(timeout=ms)
        elif action == "forward":
            response = await self.page.go_forward(timeout=ms)
        else:
            response = await self.page.reload(timeout=ms)
        return response.status if response is not None else None

    async def set_viewport(self, width: int, height: int) -> None:
        await self.page.set_viewport_size({"width": width, "height": height})

    async def bring_to_front(self) -> None:
        await self.page.bring_to_front()

    async def close(self) -> None:
        await self.page.close()


# -- contexts and browsers -------------------------------------------------------------------------


class ContextHandle:
    """A browser context: the pages that share cookies and storage."""

    __slots__ = ("_browser", "_context")

    def __init__(self, context: BrowserContext, browser: BrowserHandle | None) -> None:
        self._context = context
        self._browser = browser

    @property
    def browser(self) -> BrowserHandle | None:
        return self._browser

    @property
    def pages(self) -> list[PageHandle]:
        return [page_handle(p) for p in self._context.pages]

    def on_page(self, handler: Callable[[PageHandle], None]) -> Disposer:
        return _listen(self._context, "page", lambda page: handler(page_handle(page)))

    def on_close(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self._context, "close", lambda _context: handler())

    async def new_page(self) -> PageHandle:
        return page_handle(await self._context.new_page())

    async def new_cdp_session(self, page: PageHandle) -> CdpSession:
        return CdpSession(await self._context.new_cdp_session(page.page))

    async def route_navigations(self, allows: Callable[[str], bool]) -> Callable[[], Awaitable[None]]:
        """Abort top-level and frame navigations to URLs `allows` refuses; returns the undo."""

        async def handle(route: Any) -> None:
            request = route.request
            if request.is_navigation_request() and not allows(request.url):
                await route.abort("blockedbyclient")
            else:
                await route.fallback()

        await self._context.route("**/*", handle)

        async def undo() -> None:
            with contextlib.suppress(PlaywrightError):
                await self._context.unroute("**/*", handle)

        return undo

    async def save_storage_state(self, path: str) -> dict[str, Any]:
        state: dict[str, Any] = dict(await self._context.storage_state(path=path))
        return state

    async def close(self) -> None:
        await self._context.close()


class BrowserHandle:
    """A browser tabpilot launched or connected to."""

    __slots__ = ("_browser",)

    def __init__(self, browser: Browser) -> None:
        self._browser = browser

    @property
    def contexts(self) -> list[ContextHandle]:
        return [ContextHandle(c, self) for c in self._browser.contexts]

    @property
    def version(self) -> str:
        return self._browser.version

    def is_connected(self) -> bool:
        return self._browser.is_connected()

    def on_disconnected(self, handler: Callable[[], None]) -> Disposer:
        return _listen(self._browser, "disconnected", lambda _browser: handler())

    async def new_context(self, options: BrowserOptions) -> ContextHandle:
        context = await self._browser.new_context(
            **_context_options(options), storage_state=options.storage_state or None
        )
        await _prepare_context(context, options, storage=False)
        return ContextHandle(context, self)

    async def new_cdp_session(self) -> CdpSession:
        return CdpSession(await self._browser.new_browser_cdp_session())

    async def close(self) -> None:
        await self._browser.close()


def _context_options(options: BrowserOptions) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if options.viewport is not None:
        found["viewport"] = {"width": options.viewport[0], "height": options.viewport[1]}
    if options.user_agent:
        found["user_agent"] = options.user_agent
    if options.ignore_https_errors:
        found["ignore_https_errors"] = True
    return found


def _proxy(options: BrowserOptions) -> Any:
    if not options.proxy_server:
        return None
    proxy: dict[str, str] = {"server": options.proxy_server}
    if options.proxy_bypass:
        proxy["bypass"] = options.proxy_bypass
    return proxy


async def _prepare_context(context: BrowserContext, options: BrowserOptions, *, storage: bool) -> None:
    for source in options.init_script_sources():
        await context.add_init_script(script=source)
    if storage and options.storage_state:
        await context.set_storage_state(options.storage_state)


@dataclass(frozen=True, slots=True)
class Launched:
    """A local browser: its default context, and the temporary profile to delete after it (if any)."""

    browser: BrowserHandle
    context: ContextHandle
    temp_profile: str | None
    user_data_dir: str | None


class Driver:
    """Playwright's driver process, shared by every browser tabpilot launches or connects to."""

    def __init__(self) -> None:
        self._playwright: Playwright | None = None
        self._starting: asyncio.Lock | None = None

    async def __aenter__(self) -> Driver:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def start(self) -> None:
        if self._starting is None:
            self._starting = asyncio.Lock()
        async with self._starting:
            if self._playwright is None:
                self._playwright = await async_playwright().start()

    async def stop(self) -> None:
        playwright, self._playwright = self._playwright, None
        if playwright is not None:
            with contextlib.suppress(Exception):
                await playwright.stop()

    async def _chromium(self) -> Any:
        await self.start()
        assert self._playwright is not None
        return self._playwright.chromium

    async def launch(self, options: BrowserOptions, *, timeout: float = 30.0) -> Launched:
        """Start a local Chromium over a pipe (no TCP port) with a persistent profile: `user_data_dir`,
        or a fresh temporary one that the caller deletes after the browser is closed."""
        executable = find_browser(options.browser_path)
        temp = None
        if options.user_data_dir is None:
            temp = profile = tempfile.mkdtemp(prefix="tabpilot-profile-")
        else:
            profile = options.user_data_dir
        chromium = await self._chromium()
        try:
            context: BrowserContext = await chromium.launch_persistent_context(
                profile,
                executable_path=executable,
                headless=options.headless,
                args=list(options.browser_args),
                proxy=_proxy(options),
                timeout=_ms(timeout),
                **_context_options(options),
            )
        except BaseException as exc:
            if temp is not None:
                shutil.rmtree(temp, ignore_errors=True)
            if isinstance(exc, PlaywrightError):
                raise launch_error(exc, executable, profile if temp is None else None) from exc
            raise
        await _prepare_context(context, options, storage=True)
        assert context.browser is not None
        browser = BrowserHandle(context.browser)
        return Launched(browser, ContextHandle(context, browser), temp, None if temp else profile)

    async def launch_shared(self, options: BrowserOptions, *, timeout: float = 30.0) -> BrowserHandle:
        """Start a local Chromium whose isolated contexts several sessions use (`new_context`)."""
        executable = find_browser(options.browser_path)
        chromium = await self._chromium()
        try:
            browser: Browser = await chromium.launch(
                executable_path=executable,
                headless=options.headless,
                args=list(options.browser_args),
                proxy=_proxy(options),
                timeout=_ms(timeout),
            )
        except PlaywrightError as exc:
            raise launch_error(exc, executable, None) from exc
        return BrowserHandle(browser)

    async def connect_cdp(self, endpoint: str, options: BrowserOptions, *, timeout: float) -> tuple[BrowserHandle, ContextHandle]:
        chromium = await self._chromium()
        with map_playwright_errors(Doing.connecting(endpoint, "cdp", timeout)):
            browser: Browser = await asyncio.wait_for(
                chromium.connect_over_cdp(endpoint, timeout=_ms(timeout), headers=dict(options.cdp_headers) or None),
                timeout + 5,
            )
        handle = BrowserHandle(browser)
        if browser.contexts:
            return handle, ContextHandle(browser.contexts[0], handle)
        return handle, await handle.new_context(options)

    async def connect_server(self, endpoint: str, options: BrowserOptions, *, timeout: float) -> tuple[BrowserHandle, ContextHandle]:
        chromium = await self._chromium()
        with map_playwright_errors(Doing.connecting(endpoint, "playwright", timeout)):
            browser: Browser = await asyncio.wait_for(
                chromium.connect(endpoint, timeout=_ms(timeout), headers=dict(options.cdp_headers) or None),
                timeout + 5,
            )
        handle = BrowserHandle(browser)
        try:
            with map_playwright_errors(Doing.connecting(endpoint, "context", timeout)):
                context = await asyncio.wait_for(handle.new_context(options), timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(browser.close(), 5)
            raise
        return handle, context


# -- errors --------------------------------------------------------------------------------------

_PREFIX = re.compile(r"^[A-Z][A-Za-z]*\.[a-z_A-Z]+: ")
_INTERCEPTOR = re.compile(r"- (.+?) intercepts pointer events")
_UNREACHABLE = ("ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ECONNRESET")
_SYMPTOMS = (
    ("element is not visible", "not_visible", "is not visible (hidden, collapsed or zero-sized)"),
    ("element is not enabled", "disabled", "is disabled"),
    ("element is not editable", "not_editable", "is read-only (not editable)"),
    ("element is not stable", "unstable", "keeps moving (animating)"),
    ("element is detached", "detached", "was removed from the page"),
    ("element is not attached", "detached", "was removed from the page"),
)


def first_line(exc: BaseException) -> str:
    """What happened, without Playwright's call log and method prefix."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return _PREFIX.sub("", line)


def is_closed_error(exc: BaseException) -> bool:
    return isinstance(exc, PlaywrightError) and (
        exc.name == "TargetClosedError" or "has been closed" in str(exc) or "Target closed" in str(exc)
    )


@dataclass(frozen=True, slots=True)
class Doing:
    """What was under way when Playwright failed, for the translated error's message."""

    what: str
    """e.g. 'Clicking 3e5 on tab 3'"""
    tab_id: int | None = None
    ref: str | None = None
    timeout: float | None = None
    endpoint: str = ""
    protocol: Literal["", "cdp", "playwright", "context"] = ""

    @classmethod
    def connecting(cls, endpoint: str, protocol: Literal["cdp", "playwright", "context"], timeout: float) -> Doing:
        return cls(f"Connecting to {endpoint}", timeout=timeout, endpoint=endpoint, protocol=protocol)


@contextlib.contextmanager
def map_playwright_errors(doing: Doing) -> Iterator[None]:
    """Turn Playwright's errors (and timeouts of calls without their own) into tabpilot's."""
    try:
        yield
    except TabpilotError:
        raise
    except (PlaywrightError, TimeoutError) as exc:
        raise (_connect_error(exc, doing) if doing.protocol else _action_error(exc, doing)) from exc


def _action_error(exc: BaseException, doing: Doing) -> TabpilotError:
    what, tab, ref = doing.what, doing.tab_id, doing.ref
    element = f"element {ref}" if ref else "the element"
    waited = f" (waited {doing.timeout:g} s)" if doing.timeout is not None else ""
    snap = f"Take a new snapshot of tab {tab}"
    if is_closed_error(exc):
        return ActionError(
            f"{what} failed: tab {tab} closed (or its browser went away) during the action.",
            "List the tabs to see what is open.",
            tab_id=tab,
            ref=ref,
            reason="tab_closed",
        )
    if isinstance(exc, PlaywrightTimeoutError):
        log = str(exc)
        if "intercepts pointer events" in log:
            found = _INTERCEPTOR.findall(log)
            cover = f" ({found[-1]})" if found else ""
            return ActionError(
                f"{what} failed: {element} is covered by another element{cover}.",
                f"Close or dismiss what covers it (a dialog, banner or menu; {snap.lower()} to find it), then retry.",
                tab_id=tab,
                ref=ref,
                reason="covered",
            )
        if "did not find some options" in log:
            return ActionError(
                f"{what} failed: no option of {element} matches.",
                "Options match by value or label; a snapshot of the element shows them.",
                tab_id=tab,
                ref=ref,
                reason="no_option",
            )
        for symptom, reason, says in _SYMPTOMS:
            if symptom in log:
                return ActionError(
                    f"{what} failed: {element} {says}{waited}.",
                    f"{snap} and use a ref of an element you can act on (open the menu or section that holds it first).",
                    tab_id=tab,
                    ref=ref,
                    reason=reason,  # type: ignore[arg-type]
                )
        if ref is not None and "resolved to" not in log and "waiting for locator" in log:
            return StaleRefError(
                f"{what} failed: {element} is no longer on tab {tab} (the page changed).",
                f"{snap} and use a ref from it.",
                ref=ref,
                tab_id=tab,
            )
        return ActionError(
            f"{what} did not finish{waited}.",
            f"The page may be busy or still loading: {snap.lower()} and retry.",
            tab_id=tab,
            ref=ref,
            reason="timeout",
        )
    if isinstance(exc, TimeoutError):  # an asyncio timeout around a call that has none of its own
        within = f" within {doing.timeout:g} s" if doing.timeout is not None else ""
        return ActionError(
            f"{what} did not finish{within}.",
            f"The page may be busy: {snap.lower()} and retry.",
            tab_id=tab,
            ref=ref,
            reason="busy",
        )
    message = first_line(exc)
    if "Execution context was destroyed" in message or "Frame was detached" in message:
        return ActionError(
            f"{what} was interrupted: tab {tab} navigated to another page meanwhile.",
            f"{snap} and retry.",
            tab_id=tab,
            ref=ref,
            reason="navigated",
        )
    if "not attached to the DOM" in message or "not connected" in message:
        return StaleRefError(
            f"{what} failed: {element} was removed from the page.", f"{snap} and use a ref from it.", ref=ref or "", tab_id=tab
        )
    if message.startswith("Unknown key"):
        return ActionError(
            f"{what} failed: {message}.",
            "Use key names like Enter, Tab, Escape, ArrowDown, PageDown, a, or combinations like Control+a, Shift+Tab.",
            tab_id=tab,
            reason="unknown_key",
        )
    return ActionError(f"{what} failed: {message}.", tab_id=tab, ref=ref)


def _connect_error(exc: BaseException, doing: Doing) -> ConnectError:
    endpoint, timeout = doing.endpoint, doing.timeout or 0
    if isinstance(exc, TimeoutError | PlaywrightTimeoutError):
        return ConnectError(
            f"Could not connect to {endpoint}: no answer within {timeout:g} s.",
            "Check that the host and port are right and reachable from this machine, and that the browser "
            "(server) runs there.",
            reason="timeout",
        )
    detail = first_line(exc)
    if any(k in detail for k in _UNREACHABLE):
        return ConnectError(
            f"Could not connect to {endpoint}: it is unreachable ({detail}).",
            "Check the host and port, and that the browser (server) runs there.",
            reason="unreachable",
        )
    if doing.protocol == "context":
        return ConnectError(f"Connected to {endpoint}, but it could not open a browser context: {detail}")
    if doing.protocol == "cdp":
        return ConnectError(
            f"Could not connect over CDP to {endpoint}: it answered, but not as a Chrome DevTools endpoint ({detail}).",
            "Give the http://host:port of a Chromium started with --remote-debugging-port, or its "
            "ws://.../devtools/browser/<id> URL; a Playwright browser server is connected as one instead.",
            reason="use_server",
        )
    if "Executable doesn't exist" in detail or "Failed to launch" in detail or "browserType.launch" in detail:
        return ConnectError(
            f"The Playwright browser server at {endpoint} could not launch its browser: {detail}",
            "Install a browser where the server runs, or start it with an executablePath that exists there.",
        )
    return ConnectError(
        f"Could not connect to {endpoint} as a Playwright browser server: it answered, but not in "
        f"Playwright's protocol ({detail}).",
        "Give the ws:// URL that `playwright launch-server` or `run-server` prints (it ends in its secret "
        "path); a Chrome with a debugging port is connected over CDP instead.",
        reason="use_cdp",
    )


def launch_error(exc: PlaywrightError, executable: str, user_data_dir: str | None) -> ConnectError:
    """A browser that failed to start: its own words (Playwright's log carries its stderr)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = [line for line in lines[1:] if not line.startswith(("Call log", "- <launching>", "- <launched>"))]
    detail = "\n".join(said[-12:]) or first_line(exc)
    hint = "Check that the browser runs on this machine."
    if user_data_dir is not None and ("ProcessSingleton" in detail or "profile" in detail.lower()):
        hint = f"The profile {user_data_dir} may be in use by another Chromium; a profile serves one browser at a time."
    elif "Missing X server" in detail or "$DISPLAY" in detail:
        hint = "A headed browser needs a display: run headless, or set DISPLAY (e.g. under Xvfb)."
    return ConnectError(f"Chromium ({executable}) failed to start: {first_line(exc)}\n{detail}", hint)


__all__ = [
    "BrowserHandle",
    "CdpSession",
    "ContextHandle",
    "DialogHandle",
    "Disposer",
    "Doing",
    "Driver",
    "ElementHandle",
    "Launched",
    "Page",
    "PageHandle",
    "first_line",
    "is_closed_error",
    "launch_error",
    "map_playwright_errors",
    "page_handle",
]
