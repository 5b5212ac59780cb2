"""Navigating a tab: goto/back/forward/reload under a URL policy, with errors an agent can act on.

    result = await navigate(tab, "goto", "http://127.0.0.1:8000/", policy=UrlPolicy())

A dialog that opens while the page loads (an alert in onload) blocks the load event; waiting for
it would hang until the timeout, so navigation returns as soon as a dialog opens on the tab and
says so. `policy_route_hook(policy)` extends the policy to navigations pages start themselves
(links, scripts, popups): it routes a context's requests, so it is installed only when the policy
names origins (routing every request through the driver has a cost).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from playwright.async_api import BrowserContext, Page, Route
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ._errors import ActionError, NavigationBlockedError
from ._policy import UrlPolicy
from ._tab import Tab
from ._types import TabEvent

NavigateAction = Literal["goto", "back", "forward", "reload"]

_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HOST_PORT = re.compile(r"^[\w.-]+:\d+(?:[/?#]|$)")
_LOCAL_HOST = re.compile(r"^(?:localhost|127\.\d+\.\d+\.\d+|\[::1\])(?:[:/?#]|$)")


@dataclass(frozen=True, slots=True)
class NavigationResult:
    tab_id: int
    url: str
    status: int | None
    """The HTTP status of the main document (None: no network response, e.g. back to about:blank)."""
    note: str = ""
    """What the agent should know: no history to go back to, a dialog opened, an error status."""


def normalize_url(url: str) -> str:
    """Add the scheme a user would mean: `example.com` -> https://, `localhost:8000` -> http://."""
    text = url.strip()
    if _HAS_SCHEME.match(text) and not _HOST_PORT.match(text):
        return text
    return ("http://" if _LOCAL_HOST.match(text) else "https://") + text


async def navigate(
    tab: Tab,
    action: NavigateAction,
    url: str | None = None,
    *,
    policy: UrlPolicy | None = None,
    timeout: float = 30.0,
) -> NavigationResult:
    """Navigate `tab` and wait for the page to load (or for a dialog to block it)."""
    tab.ensure_no_dialog()
    page = tab.page
    target = ""
    if action == "goto":
        if not url:
            raise ValueError("goto needs url: the address to load.")
        target = normalize_url(url)
        (policy or UrlPolicy()).check(target)
    dialog_opened = asyncio.Event()

    def on_event(event: TabEvent) -> None:
        if event.type == "dialog_opened" and event.tab_id == tab.id:
            dialog_opened.set()

    dispose = tab.instance.manager.events.subscribe(on_event)
    wait_ms = timeout * 1000
    if action == "goto":
        job = page.goto(target, timeout=wait_ms)
    elif action == "back":
        job = page.go_back(timeout=wait_ms)
    elif action == "forward":
        job = page.go_forward(timeout=wait_ms)
    else:
        job = page.reload(timeout=wait_ms)
    task = asyncio.ensure_future(job)
    dialog_wait = asyncio.ensure_future(dialog_opened.wait())
    try:
        await asyncio.wait({task, dialog_wait}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        dispose()
        dialog_wait.cancel()
    if not task.done():
        # A dialog blocks the load; the navigation finishes once the agent handles it.
        task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)
        return NavigationResult(
            tab.id,
            page.url,
            None,
            f"A dialog opened on tab {tab.id} while the page loaded; handle it with "
            f"browser_handle_dialog(tabId={tab.id}) and the page will finish loading.",
        )
    try:
        response = task.result()
    except PlaywrightTimeoutError as exc:
        raise ActionError(
            f"{_what(action, target)} on tab {tab.id} did not finish loading within {timeout:.0f} s. The page may "
            f"still be usable: take a browser_snapshot(tabId={tab.id}), or reload."
        ) from exc
    except PlaywrightError as exc:
        message = str(exc).splitlines()[0].removeprefix("Page.goto: ")
        if "ERR_BLOCKED_BY_CLIENT" in message and policy is not None and not policy.allows(target or page.url):
            raise NavigationBlockedError(
                f"Navigation to {target} was blocked by the navigation policy. Choose another URL.", url=target
            ) from exc
        if "Target page, context or browser has been closed" in message or "Target closed" in message:
            raise ActionError(f"Tab {tab.id} closed during navigation. List tabs to see what is open.") from exc
        where = "shows the browser's error page" if page.url.startswith("chrome-error:") else f"stays on {page.url}"
        raise ActionError(
            f"{_what(action, target)} on tab {tab.id} failed: {message}. Check the URL; the tab {where}."
        ) from exc
    note = ""
    status = response.status if response is not None else None
    if response is None and action in ("back", "forward"):
        note = f"There is no page to go {action} to in tab {tab.id}'s history; it stays on {page.url}."
    elif status is not None and status >= 400:
        note = f"The server answered HTTP {status}."
    return NavigationResult(tab.id, page.url, status, note)


def _what(action: NavigateAction, target: str) -> str:
    return f"Loading {target}" if action == "goto" else f"Going {action}" if action != "reload" else "Reloading"


def policy_route_hook(policy: UrlPolicy) -> Callable[[BrowserContext, Callable[[Page], int | None]], Callable[[], None]]:
    """A `TabManager.add_hooks(context=...)` hook that aborts navigations the policy refuses."""

    async def handle(route: Route) -> None:
        request = route.request
        if request.is_navigation_request() and not policy.allows(request.url):
            await route.abort("blockedbyclient")
        else:
            await route.fallback()

    def hook(context: BrowserContext, _tab_id_for_page: Callable[[Page], int | None]) -> Callable[[], None]:
        installing = asyncio.get_running_loop().create_task(context.route("**/*", handle))
        installing.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

        def dispose() -> None:
            installing.cancel()
            with contextlib.suppress(Exception):
                task = asyncio.get_running_loop().create_task(context.unroute("**/*", handle))
                task.add_done_callback(lambda t: t.exception() if not t.cancelled() else None)

        return dispose

    return hook
