"""Page actions on one tab: click, type, keys, select, hover, wait, screenshot, evaluate.

Every action takes the `Tab` it works on and works the same whether that tab is active or not:
nothing here activates a tab (except `click(..., follow_new_tab=True)`, which activates the tab
the click opened). Elements are named by refs from the tab's latest snapshot (`3e5`); a ref that
is stale or belongs to another tab fails at once (`Tab.locator`), never after a timeout.

    result = await click(tab, "3e5")
    result.opened_tab_ids    # tabs the click opened, already registered with the manager

Two things an action watches for while it runs:
- a dialog on its tab (alert, confirm, prompt): the page is blocked until it is handled, so the
  action returns at once and says so (`result.dialog`) instead of hanging until its timeout;
- tabs it opens (target=_blank, window.open, middle or modifier click): Chromium announces a new
  target before the click returns, Playwright announces the page a few ms to ~200 ms later. The
  action waits for exactly the pages whose targets it saw created (bounded), so the caller's
  `manager.settle()` then reports them; an action that opens nothing waits only `NEW_TAB_GRACE`.

Playwright's errors are translated in one place, `map_playwright_errors`, into `ActionError`s
(or `StaleRefError`) whose messages say what to do next.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import Locator, Page
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ._errors import ActionError, StaleRefError, TabNotFoundError
from ._tab import Tab
from ._types import DialogInfo, TabEvent

try:  # not re-exported by playwright.async_api
    from playwright._impl._errors import TargetClosedError
except ImportError:  # pragma: no cover - an older Playwright: fall back to the message check below
    TargetClosedError = PlaywrightError  # type: ignore[assignment,misc]

T = TypeVar("T")

MouseButton = Literal["left", "middle", "right"]
KeyModifier = Literal["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]

DEFAULT_TIMEOUT = 5.0
"""Seconds an element action may take (actionability checks included). Short on purpose: an agent
learns more from a fast error that says why than from a long wait."""
WAIT_FOR_TIMEOUT = 10.0
"""Seconds `wait_for` waits for text to appear or go."""
EVALUATE_TIMEOUT = 30.0
"""Seconds a script may run in `evaluate`."""
MAX_WAIT_TIME = 30.0
"""Upper bound of `wait_for(time=...)`, in seconds."""
NEW_TAB_GRACE = 0.03
"""Seconds an action that saw no new target waits for one before returning. Chromium creates the
target of a tab a click opens before the click returns, so this only covers reordering."""
NEW_TAB_TIMEOUT = 3.0
"""Seconds an action waits for Playwright to announce a page whose target it saw created."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What an action did, beyond its effect on the page."""

    tab_id: int
    opened_tab_ids: tuple[int, ...] = ()
    """Tabs the action opened (registered with the manager; `settle()` announces them)."""
    dialog: DialogInfo | None = None
    """A dialog the action opened on its tab: the page waits until it is handled."""
    value: Any = None
    """`evaluate`: the script's result. `select_option`: the values now selected."""
    followed_tab_id: int | None = None
    """`click(follow_new_tab=True)`: the opened tab that was activated."""


# -- errors --------------------------------------------------------------------------------------


_INTERCEPTOR = re.compile(r"- (.+?) intercepts pointer events")
_PREFIX = re.compile(r"^[A-Z][A-Za-z]*\.[a-z_A-Z]+: ")


def _first_line(exc: BaseException) -> str:
    line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return _PREFIX.sub("", line)


def _element(ref: str | None) -> str:
    return f"element {ref}" if ref else "the element"


@contextlib.contextmanager
def map_playwright_errors(
    tab: Tab, what: str, *, ref: str | None = None, timeout: float | None = None
) -> Iterator[None]:
    """Turn Playwright errors raised inside into tabpilot errors that say what to do next.

    `what` names the action for the message ("Clicking 3e5"); `ref` and `timeout` add detail.
    """
    snap = f"browser_snapshot(tabId={tab.id})"
    try:
        yield
    except TargetClosedError as exc:
        raise ActionError(
            f"{what} failed: tab {tab.id} closed (or its browser went away) during the action. "
            "List tabs with browser_tabs(action='list') to see what is open."
        ) from exc
    except PlaywrightTimeoutError as exc:
        log = str(exc)
        waited = f" (waited {timeout:g} s)" if timeout is not None else ""
        element = _element(ref)
        if "intercepts pointer events" in log:
            found = _INTERCEPTOR.findall(log)
            cover = f" ({found[-1]})" if found else ""
            raise ActionError(
                f"{what} failed: {element} is covered by another element{cover}. Close or dismiss what "
                f"covers it (a dialog, banner or menu; take a new {snap} to find it), then retry."
            ) from exc
        if "did not find some options" in log:
            raise ActionError(
                f"{what} failed: no option of {element} matches. Options match by value or label; see them "
                f"with browser_snapshot(ref={ref!r})."
            ) from exc
        for symptom, reason in (
            ("element is not visible", "is not visible (hidden, collapsed or zero-sized)"),
            ("element is not enabled", "is disabled"),
            ("element is not editable", "is read-only (not editable)"),
            ("element is not stable", "keeps moving (animating)"),
            ("element is detached", "was removed from the page"),
            ("element is not attached", "was removed from the page"),
        ):
            if symptom in log:
                raise ActionError(
                    f"{what} failed: {element} {reason}{waited}. Take a new {snap} and use a ref of an "
                    "element you can act on (open the menu or section that holds it first)."
                ) from exc
        if ref is not None and "resolved to" not in log and "waiting for locator" in log:
            raise StaleRefError(
                f"{what} failed: {element} is no longer on tab {tab.id} (the page changed). "
                f"Call {snap} and use a ref from it.",
                ref=ref,
                tab_id=tab.id,
            ) from exc
        raise ActionError(
            f"{what} did not finish{waited}. The page may be busy or still loading: take a new {snap} and retry."
        ) from exc
    except TimeoutError as exc:  # an asyncio.wait_for around a call that has no timeout of its own
        waited = f" within {timeout:g} s" if timeout is not None else ""
        raise ActionError(
            f"{what} did not finish{waited}. The page may be busy: take a new {snap} and retry."
        ) from exc
    except PlaywrightError as exc:
        message = _first_line(exc)
        if "Target page, context or browser has been closed" in message or "Target closed" in message:
            raise ActionError(
                f"{what} failed: tab {tab.id} closed during the action. List tabs with browser_tabs(action='list')."
            ) from exc
        if "Execution context was destroyed" in message or "Frame was detached" in message:
            raise ActionError(
                f"{what} was interrupted: tab {tab.id} navigated to another page meanwhile. Take a new "
                f"{snap} and retry."
            ) from exc
        if "not attached to the DOM" in message or "not connected" in message:
            raise StaleRefError(
                f"{what} failed: {_element(ref)} was removed from the page. Call {snap} and use a ref from it.",
                ref=ref or "",
                tab_id=tab.id,
            ) from exc
        if message.startswith("Unknown key"):
            raise ActionError(
                f"{what} failed: {message}. Use key names like Enter, Tab, Escape, ArrowDown, PageDown, a, "
                "or combinations like Control+a, Shift+Tab."
            ) from exc
        raise ActionError(f"{what} failed: {message}.") from exc


# -- watching an action --------------------------------------------------------------------------


class _ActionWatch:
    """During one action on `tab`: the pages it opens and a dialog it raises on `tab`."""

    def __init__(self, tab: Tab) -> None:
        self.tab = tab
        self.dialog: DialogInfo | None = None
        self._dialog_opened = asyncio.Event()
        self._pages: list[Page] = []
        self._children: set[str] = set()
        """Targets created with this tab as opener (target=_blank, window.open)."""
        self._orphans: set[str] = set()
        """Targets created without an opener: what a middle or modifier click opens, or another client."""
        self._changed = asyncio.Event()
        self._disposers: list[Callable[[], Any]] = []

    def __enter__(self) -> _ActionWatch:
        instance = self.tab.instance
        context = instance.context
        context.on("page", self._on_page)
        self._disposers.append(lambda: context.remove_listener("page", self._on_page))
        # The instance's browser-level CDP session sees a target the moment Chromium creates it,
        # long before Playwright has attached to it and fires "page".
        cdp = getattr(instance, "_cdp", None)
        if cdp is not None:
            cdp.on("Target.targetCreated", self._on_target)
            self._disposers.append(lambda: cdp.remove_listener("Target.targetCreated", self._on_target))
        self._disposers.append(instance.manager.events.subscribe(self._on_event))
        return self

    def __exit__(self, *exc: object) -> None:
        for dispose in self._disposers:
            with contextlib.suppress(Exception):
                dispose()
        self._disposers = []

    def _on_page(self, page: Page) -> None:
        self._pages.append(page)
        opened = self.tab.instance.tab_for_page(page)
        if (
            opened is not None
            and self._orphans
            and not self._children
            and opened.opener_id is None
            and not getattr(opened, "_cause_known", True)
        ):
            # A middle or modifier click opens its tab with no opener (noopener), so the registry
            # would call it "external". It appeared during this action, in this context: it is ours.
            # The instance announces the tab after enriching it, so this lands in tab_opened.
            opened.opener_id = self.tab.id
            opened.cause = "link"
            opened._cause_known = True  # type: ignore[attr-defined]
        self._changed.set()

    def _on_target(self, event: dict[str, Any]) -> None:
        info = event.get("targetInfo") or {}
        if info.get("type") != "page":
            return
        opener = info.get("openerId")
        target = info.get("targetId", "")
        if opener is None:
            self._orphans.add(target)
        elif opener == self.tab.target_id or self.tab.target_id is None:
            self._children.add(target)
        self._changed.set()

    def _on_event(self, event: TabEvent) -> None:
        if event.type == "dialog_opened" and event.tab_id == self.tab.id:
            self.dialog = self.tab.dialog
            self._dialog_opened.set()

    async def run(self, job: Awaitable[T]) -> T | None:
        """Await `job`, or stop waiting when a dialog opens on the tab (then None)."""
        task = asyncio.ensure_future(job)
        dialog = asyncio.ensure_future(self._dialog_opened.wait())
        try:
            await asyncio.wait({task, dialog}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            dialog.cancel()
        if task.done():
            return task.result()
        # The dialog blocks the page; the job ends when the agent handles it. Nobody awaits it
        # any more, so swallow its outcome instead of logging "exception never retrieved".
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return None

    async def _wait_for_pages(self, count: int, timeout: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(self._pages) < count and loop.time() < deadline:
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), deadline - loop.time())

    async def opened_tabs(self) -> tuple[int, ...]:
        """Wait until the pages of the targets the action created are registered; return their ids."""
        if not (self._children or self._orphans or self._pages):
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), NEW_TAB_GRACE)
        await self._wait_for_pages(len(self._children), NEW_TAB_TIMEOUT)
        if self._orphans:
            # An opener-less target may belong to another client or context: wait less for it.
            await self._wait_for_pages(len(self._children) + len(self._orphans), NEW_TAB_TIMEOUT / 3)
        ids: list[int] = []
        for page in self._pages:
            # The instance registers a page synchronously in its own (earlier) "page" listener.
            opened = self.tab.instance.tab_for_page(page)
            if opened is not None and opened.id != self.tab.id:
                ids.append(opened.id)
        return tuple(ids)


async def _bring_to_front(tab: Tab) -> None:
    """Let a headless background tab render before an action that waits for animation frames.

    Chromium paints only the front tab of a window; a tab behind it gets an animation frame
    about every 500 ms, and Playwright's click and hover wait for two frames of a stable element,
    costing ~2 s per action. Headless, bringing the tab to front changes nothing anyone sees,
    and the tab manager's active tab is its own record, untouched. In a browser someone may be
    looking at (headed, or connected over CDP) the tab is left where it is.
    """
    instance = tab.instance
    if instance.headless and instance.kind != "cdp":
        with contextlib.suppress(PlaywrightError, TimeoutError):  # only an optimisation: never fail for it
            await asyncio.wait_for(tab.page.bring_to_front(), 2)


async def _locator_in_front(tab: Tab, ref: str) -> Locator:
    """`tab.locator(ref)` and `_bring_to_front(tab)` at once, for actions that wait for frames.

    The dialog and ref checks run first, before any round trip, so a bad ref or a blocked tab
    fails as fast as `tab.locator` alone would.
    """
    tab.ensure_no_dialog()
    tab.resolve_ref(ref)
    locator, _ = await asyncio.gather(tab.locator(ref), _bring_to_front(tab))
    return locator


async def _act(
    tab: Tab,
    what: str,
    job: Awaitable[Any],
    *,
    ref: str | None,
    timeout: float,
    watch_tabs: bool = True,
) -> tuple[Any, ActionResult]:
    with _ActionWatch(tab) as watch:
        try:
            with map_playwright_errors(tab, what, ref=ref, timeout=timeout):
                value = await watch.run(job)
        except ActionError:
            # The action made its own tab close (a sign-in popup's submit loads a page that calls
            # window.close()): it did its job, though Playwright fails the step still in flight.
            if not (tab.page.is_closed() and tab.instance.check_alive()):
                raise
            value = None
        opened = await watch.opened_tabs() if watch_tabs else ()
    return value, ActionResult(tab.id, opened, watch.dialog)


def _ms(seconds: float) -> float:
    return seconds * 1000


# -- actions -------------------------------------------------------------------------------------


async def click(
    tab: Tab,
    ref: str,
    *,
    button: MouseButton = "left",
    modifiers: Sequence[KeyModifier] = (),
    double_click: bool = False,
    follow_new_tab: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> ActionResult:
    """Click an element. Tabs the click opens are in `opened_tab_ids`; with `follow_new_tab`
    the (last) one becomes the active tab, otherwise they stay in the background."""
    if button not in ("left", "middle", "right"):
        raise ValueError(f"button must be 'left', 'middle' or 'right', not {button!r}.")
    bad = [m for m in modifiers if m not in ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")]
    if bad:
        raise ValueError(
            f"modifiers: unknown {', '.join(map(repr, bad))}; use Alt, Control, ControlOrMeta, Meta, Shift."
        )
    locator = await _locator_in_front(tab, ref)
    what = f"{'Double-clicking' if double_click else 'Clicking'} {ref} on tab {tab.id}"
    if double_click:
        job = locator.dblclick(button=button, modifiers=list(modifiers), timeout=_ms(timeout))
    else:
        job = locator.click(button=button, modifiers=list(modifiers), timeout=_ms(timeout))
    _, result = await _act(tab, what, job, ref=ref, timeout=timeout)
    if follow_new_tab and result.opened_tab_ids:
        manager = tab.instance.manager
        # Announce the new tab before activating it, so events read in the order they happened.
        await manager.settle()
        for tab_id in reversed(result.opened_tab_ids):
            try:
                followed = manager.activate(tab_id)
            except TabNotFoundError:  # closed at once (tab cap, or it closed itself)
                continue
            return ActionResult(tab.id, result.opened_tab_ids, result.dialog, followed_tab_id=followed.id)
    return result


async def type_text(
    tab: Tab,
    ref: str,
    text: str,
    *,
    submit: bool = False,
    slowly: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> ActionResult:
    """Replace the text of an editable element (`slowly`: key by key, firing key handlers);
    `submit` presses Enter afterwards."""
    locator = await tab.locator(ref)
    # Typing key by key takes time in proportion to the text; the timeout covers each key too.
    limit = timeout + (0.05 * len(text) if slowly else 0)

    async def job() -> None:
        if slowly:
            await locator.press_sequentially(text, timeout=_ms(limit))
        else:
            await locator.fill(text, timeout=_ms(limit))
        if submit:
            await locator.press("Enter", timeout=_ms(timeout))

    _, result = await _act(tab, f"Typing into {ref} on tab {tab.id}", job(), ref=ref, timeout=limit)
    return result


async def press_key(
    tab: Tab, key: str, *, ref: str | None = None, timeout: float = DEFAULT_TIMEOUT
) -> ActionResult:
    """Press a key (`Enter`, `ArrowDown`, `Control+a`) in the tab, on element `ref` if given,
    otherwise wherever the tab's focus is."""
    if not key.strip():
        raise ValueError("key must name a key, e.g. Enter, Tab, ArrowDown or Control+a.")
    if ref is not None:
        locator = await tab.locator(ref)
        job: Awaitable[None] = locator.press(key, timeout=_ms(timeout))
        what = f"Pressing {key} on {ref} on tab {tab.id}"
    else:
        tab.ensure_no_dialog()
        job = tab.page.keyboard.press(key)
        what = f"Pressing {key} on tab {tab.id}"
    _, result = await _act(tab, what, asyncio.wait_for(job, timeout), ref=ref, timeout=timeout)
    return result


async def select_option(
    tab: Tab, ref: str, values: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT
) -> ActionResult:
    """Select options of a <select> by value or label; `result.value` lists the values now selected."""
    if isinstance(values, str):
        values = [values]
    locator = await tab.locator(ref)
    job = locator.select_option(list(values), timeout=_ms(timeout))
    selected, result = await _act(
        tab, f"Selecting {list(values)} in {ref} on tab {tab.id}", job, ref=ref, timeout=timeout
    )
    return ActionResult(tab.id, result.opened_tab_ids, result.dialog, value=selected)


async def hover(tab: Tab, ref: str, *, timeout: float = DEFAULT_TIMEOUT) -> ActionResult:
    """Move the mouse over an element (menus and tooltips that open on hover)."""
    locator = await _locator_in_front(tab, ref)
    _, result = await _act(
        tab, f"Hovering {ref} on tab {tab.id}", locator.hover(timeout=_ms(timeout)), ref=ref, timeout=timeout
    )
    return result


async def wait_for(
    tab: Tab,
    *,
    text: str | None = None,
    text_gone: str | None = None,
    time: float | None = None,
    timeout: float = WAIT_FOR_TIMEOUT,
) -> ActionResult:
    """Wait for `text` to appear, `text_gone` to disappear, or `time` seconds (at most 30)."""
    if text is None and text_gone is None and time is None:
        raise ValueError("wait_for needs text, textGone or time: what to wait for.")
    if time is not None and time < 0:
        raise ValueError("time must be zero or more seconds.")
    tab.ensure_no_dialog()
    page = tab.page

    async def job() -> None:
        if time is not None:
            await asyncio.sleep(min(time, MAX_WAIT_TIME))
        if text_gone is not None:
            await page.get_by_text(text_gone).first.wait_for(state="hidden", timeout=_ms(timeout))
        if text is not None:
            await page.get_by_text(text).first.wait_for(state="visible", timeout=_ms(timeout))

    what = (
        " and ".join(
            part
            for part in (
                f"{min(time, MAX_WAIT_TIME):g} s" if time else "",  # a 0 s pause is not worth naming
                f"text {text_gone!r} to disappear" if text_gone is not None else "",
                f"text {text!r} to appear" if text is not None else "",
            )
            if part
        )
        or "0 s"
    )
    try:
        _, result = await _act(
            tab, f"Waiting for {what} on tab {tab.id}", job(), ref=None, timeout=timeout, watch_tabs=False
        )
    except ActionError as exc:
        if isinstance(exc.__cause__, PlaywrightTimeoutError):
            raise ActionError(
                f"Waited {timeout:g} s for {what} on tab {tab.id}; it did not happen. Take a "
                f"browser_snapshot(tabId={tab.id}) to see the page as it is."
            ) from exc.__cause__
        raise
    return result


async def screenshot(
    tab: Tab, *, full_page: bool = False, ref: str | None = None, timeout: float = DEFAULT_TIMEOUT * 2
) -> bytes:
    """A PNG of the tab's viewport (`full_page`: the whole page; `ref`: one element). Works on a
    background tab without activating it."""
    if full_page and ref is not None:
        raise ValueError(
            "fullPage and ref exclude each other: a screenshot is of the page or of one element."
        )
    if ref is not None:
        locator = await tab.locator(ref)
        job = locator.screenshot(timeout=_ms(timeout), type="png")
        what = f"Screenshot of {ref} on tab {tab.id}"
    else:
        tab.ensure_no_dialog()
        job = tab.page.screenshot(full_page=full_page, timeout=_ms(timeout), type="png")
        what = f"Screenshot of tab {tab.id}"
    data, result = await _act(tab, what, job, ref=ref, timeout=timeout, watch_tabs=False)
    if data is None:
        raise ActionError(
            f"{what} was interrupted: a {result.dialog.type if result.dialog else ''} dialog opened. Handle it "
            f"with browser_handle_dialog(tabId={tab.id}), then retry."
        )
    image: bytes = data
    return image


async def evaluate(
    tab: Tab, function: str, *, ref: str | None = None, timeout: float = EVALUATE_TIMEOUT
) -> ActionResult:
    """Run JavaScript in the tab: `() => document.title`, or with `ref` `(element) => element.value`.

    `result.value` is the script's JSON-like result. If the script opens a dialog, the result
    comes only once the dialog is handled: `result.dialog` says so and `value` is None.
    """
    if not function.strip():
        raise ValueError("function must be JavaScript, e.g. '() => document.title'.")
    if ref is not None:
        locator = await tab.locator(ref)
        job: Awaitable[Any] = locator.evaluate(function, timeout=_ms(timeout))
        what = f"Evaluating on {ref} on tab {tab.id}"
    else:
        tab.ensure_no_dialog()
        job = tab.page.evaluate(function)
        what = f"Evaluating on tab {tab.id}"
    value, result = await _act(tab, what, asyncio.wait_for(job, timeout), ref=ref, timeout=timeout)
    return ActionResult(tab.id, result.opened_tab_ids, result.dialog, value=value)


__all__ = [
    "ActionResult",
    "KeyModifier",
    "MouseButton",
    "click",
    "evaluate",
    "hover",
    "map_playwright_errors",
    "press_key",
    "screenshot",
    "select_option",
    "type_text",
    "wait_for",
]
