"""Page actions on one tab: click, type, keys, select, hover, fill a form, drag, upload, wait,
screenshot, evaluate, resize.

Every action takes the `Tab` it works on and works the same whether that tab is active or not:
nothing here activates a tab (except `click(..., follow_new_tab=True)`, which activates the tab
the click opened). Elements are named by refs from the tab's latest snapshot (`3e5`); a ref that
is stale or belongs to another tab fails at once (`Tab.element`), never after a timeout.

    result = await click(tab, "3e5")
    result.opened_tab_ids    # tabs the click opened, registered and announced (some may have closed again)

Actions that use the page's input (click, type, keys, select, hover, fill a form, drag, upload)
run one at a time per tab, in the order they were called (`Tab.input_turn`): the tab has one
pointer, keyboard and focus. Their timeouts start with their turn.

While it runs, an action watches for a dialog on its tab and for the tabs it opens
(`tabpilot._watch`). `dialogs="accept"` accepts dialogs instead of stopping at the first one.
Timeouts default to the tab's manager's action timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal, get_args

from ._errors import (
    ActionError,
    PathNotAllowedError,
    RefError,
    TabpilotError,
    check_count,
    check_switch,
    quoted,
    text_given,
)
from ._fields import check_field, field_state, field_uses, toggle_text
from ._options import call_timeout
from ._pw import UNDEFINED, Doing, ElementHandle, MouseButton, PageHandle, map_playwright_errors
from ._refs import parse_ref
from ._tab import Tab
from ._types import DialogInfo, dialog_noun
from ._watch import DialogPolicy

KeyModifier = Literal["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]
ImageType = Literal["png", "jpeg"]
FieldValue = str | bool | Sequence[str]

MODIFIERS: tuple[str, ...] = get_args(KeyModifier)
_KEY_NAMES = (
    *MODIFIERS,
    "AltGraph", "ArrowDown", "ArrowLeft", "ArrowRight", "ArrowUp", "Backspace", "CapsLock",
    "ContextMenu", "Delete", "End", "Enter", "Escape", "Home", "Insert", "NumLock", "PageDown",
    "PageUp", "Pause", "PrintScreen", "ScrollLock", "Space", "Tab",
    *(f"F{n}" for n in range(1, 25)),
)  # fmt: skip
_KEY_ALIASES = {
    **{name.lower(): name for name in _KEY_NAMES},
    "ctrl": "Control", "cmd": "Meta", "command": "Meta", "win": "Meta", "super": "Meta",
    "option": "Alt", "opt": "Alt", "esc": "Escape", "del": "Delete", "ins": "Insert",
    "return": "Enter", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft",
    "right": "ArrowRight", "pgup": "PageUp", "pgdn": "PageDown", "spacebar": "Space",
}  # fmt: skip
"""Key names as people and models write them (any case, `Ctrl`, `Cmd`, `Esc`), to Playwright's."""
WAIT_FOR_TIMEOUT = 10.0
"""Seconds `wait_for` waits for text to appear or go."""
MAX_WAIT_TIME = 30.0
"""Upper bound of `wait_for(time=...)`, in seconds."""
MAX_TYPED = 20_000
"""Characters `type_text` accepts at once."""
MAX_TYPED_SLOWLY = 2_000
"""Characters `type_text(slowly=True)` accepts at once: key by key costs time per character."""


@dataclass(frozen=True, slots=True)
class ActionResult:
    """What an action did, beyond its effect on the page."""

    tab_id: int
    opened_tab_ids: tuple[int, ...] = ()
    """Tabs the action opened (registered and announced), also those already closed again: a popup
    that closed itself, or one the tab cap closed at once (its `tab_closed` event says which)."""
    opened_shared: tuple[int, ...] = ()
    """Of `opened_tab_ids`, those that opened while another action (another call's) was at work
    on the same tab: either may have opened them (each is given them)."""
    dialog: DialogInfo | None = None
    """A dialog the action opened: the page waits until it is handled."""
    dialog_tab_id: int | None = None
    """The tab that shows `dialog`: the action's own, or the opener or popup of the same site whose
    dialog holds the action's tab up too (`Tab.blocked_by`)."""
    dialog_shared: bool = False
    """Another action (another call's) was at work on the tab when `dialog` opened: either may
    have opened it (a page does not say which script did)."""
    value: Any = None
    """`evaluate`: the script's result. `select_option`: the values now selected. `press_key`: the
    key as pressed (its name as Playwright knows it). `fill_form`: each field's value as it was
    set, in order (True/False for a checkbox or radio button given 'true' or 'false')."""
    followed_tab_id: int | None = None
    """The opened tab that is now the active one: `click(follow_new_tab=True)` activated it, or the
    manager follows the tabs pages open (`follow_new_tabs`)."""
    accepted_dialogs: tuple[DialogInfo, ...] = ()
    """With `dialogs="accept"`: the dialogs the action raised and accepted."""
    closed_itself: bool = False
    """The tab's page closed it during the action or as it ended (a sign-in popup's submit that
    ends in window.close(), a "Close" button): the action is done all the same."""
    file_picker: bool = False
    """A click opened a file picker; tabpilot held it back (`upload_files` on the same ref
    clicks again and gives the picker its files)."""
    other_tabs_loading: tuple[tuple[int, str], ...] = ()
    """Other tabs that started loading a new page while the action ran, (tab id, URL asked for):
    the page sent them there (a link whose target names a tab already open, a popup's script that
    sets its opener's location). The refs of their earlier snapshots are gone."""
    returned: bool = True
    """`evaluate`: False when the tab closed itself before the script returned (no `value`)."""
    undefined: bool = False
    """`evaluate`: the script's result was `undefined` (it returned nothing; `value` is None, which
    a `null` result gives too)."""
    stopped: bool = False
    """A dialog the action opened stopped it before it was done (an input of several steps: keys
    typed one by one, a form's fields): the steps after the one that opened the dialog were not
    given, and will not be once it is handled (`fill_form`: `value` holds the fields set, up to
    the one that opened it)."""
    loading: str | None = None
    """The action started loading a page into its tab (a link, a form it submitted) whose server
    had not sent it when the action's time ran out: its URL ('' if the browser did not say). The
    action is done; the tab shows the page when it comes (`Tab.document_due` until then)."""


async def _bring_to_front(tab: Tab) -> None:
    """Let a headless background tab render before an action that waits for animation frames.

    Chromium paints only the front tab of a window; a tab behind it gets an animation frame
    about every 500 ms, and click and hover wait for two frames of a stable element, costing
    ~2 s per action. Where nobody sees it, bringing the tab to front changes nothing, and the
    manager's active tab is its own record, untouched.
    """
    if tab.host.renders_in_background:
        try:  # only an optimisation: never fail for it
            await asyncio.wait_for(tab.handle.bring_to_front(), 2)
        except Exception:
            pass


async def _element_in_front(tab: Tab, ref: str) -> ElementHandle:
    """`tab.element(ref)` and `_bring_to_front(tab)` at once, for actions that wait for frames.
    The dialog and ref checks run first, so a bad ref fails as fast as `tab.element` alone."""
    tab.ensure_no_dialog()
    tab.resolve_ref(ref)
    await tab.ready()
    element, _ = await asyncio.gather(tab.element(ref), _bring_to_front(tab))
    return element


def _check_dialogs(dialogs: str) -> None:
    if dialogs not in get_args(DialogPolicy):  # another word was taken as "report"
        raise ValueError(f"dialogs must be 'report' or 'accept', not {dialogs!r}")


async def _act(
    tab: Tab,
    what: str,
    job: Awaitable[Any],
    *,
    ref: str | None,
    timeout: float,
    watch_tabs: bool = True,
    dialogs: DialogPolicy = "report",
    pickers: bool = False,
    follow: bool | None = None,
    gives_input: bool = True,
    stop: asyncio.Event | None = None,
) -> tuple[Any, ActionResult]:
    """Run an action's `job` under a watch; `pickers`: report a file picker it opened (a click;
    an upload answers the picker its own click opens). `follow`: False keeps the tabs it opens in
    the background even where the manager follows new tabs (`ActionWatch.follow`). `gives_input`: the job is input (a click,
    keys), done once given even when Playwright then waits for the document it made the tab load:
    if that document is slow, the result says so (`ActionResult.loading`) instead of failing.
    `stop`: set when a dialog the job opens stops the action (`ActionResult.stopped`): a job of
    several steps gives none after the one under way (not cancelled: a key it pressed would be
    left held down)."""
    closed_itself = False
    loading: str | None = None
    finished = True
    due_before = tab.document_due
    if gives_input:  # it acts now (in its input turn), its checks passed
        tab.turns_taken += 1
    with tab.host.watch(tab) as watch:
        watch.follow = follow
        watch.gives_input = gives_input
        try:
            with map_playwright_errors(Doing(what, tab_id=tab.id, ref=ref, timeout=timeout)):
                value, finished = await watch.run(job, dialogs=dialogs, stop=stop)
        except ActionError as exc:
            if gives_input and exc.reason in ("timeout", "busy") and tab.document_due and not due_before:
                # The action started a navigation (Playwright waits for its document, up to the
                # timeout) whose server is slow: the input was given, and the page is on its way.
                value, loading = None, tab.due_url
            else:
                # The action made its own tab close (a sign-in popup's submit loads a page that
                # calls window.close()): it did its job, though Playwright fails the step still in
                # flight. Closed by another call (a tool), or with its browser, it failed.
                try:
                    await tab.raise_what_the_page_says(exc, what)
                except ActionError as said:
                    if said.reason != "tab_closed" or not _closed_by_page(tab):
                        left = await tab.why_gone(said, what)
                        if left is said:
                            raise
                        raise left from said
                else:
                    if not _closed_by_page(tab):
                        left = await tab.why_gone(exc, what)
                        if left is exc:
                            raise
                        raise left from exc
                value, closed_itself = None, True
        opened = await watch.opened_tabs() if watch_tabs else ()
    # Done, and its page closed the tab right after (a "Close" button's window.close()).
    closed_itself = closed_itself or _closed_by_page(tab)
    active = tab.host.active_tab
    return value, ActionResult(
        tab.id,
        opened,
        dialog=watch.dialog,
        opened_shared=tuple(t for t in opened if t in watch.opened_shared),
        dialog_tab_id=watch.dialog_tab_id,
        dialog_shared=watch.dialog_shared,
        followed_tab_id=active.id if active is not None and active.id in opened else None,
        accepted_dialogs=tuple(watch.accepted),
        closed_itself=closed_itself,
        file_picker=pickers and watch.file_pickers > 0,
        other_tabs_loading=tuple(watch.loaded.items()),
        stopped=stop is not None and not finished,
        loading=loading,
    )


def _closed_by_page(tab: Tab) -> bool:
    """Whether the tab closed, its page's doing: nothing of tabpilot's closed it (a call, the tab
    cap, its browser going), and it is a tab its page may close (else someone outside did)."""
    return (
        tab.handle.is_closed()
        and tab.closing_cause is None
        and tab.may_close_itself
        and tab.host.check_alive()
    )


def _with(result: ActionResult, **changes: Any) -> ActionResult:
    return ActionResult(
        **{name: changes.get(name, getattr(result, name)) for name in ActionResult.__dataclass_fields__}
    )


# -- element actions ---------------------------------------------------------------------------


async def click(
    tab: Tab,
    ref: str,
    *,
    button: MouseButton = "left",
    modifiers: Sequence[KeyModifier | str] | str = (),
    double_click: bool = False,
    follow_new_tab: bool | None = None,
    timeout: float | None = None,
    dialogs: DialogPolicy = "report",
) -> ActionResult:
    """Click an element. Tabs the click opens are in `opened_tab_ids`; with `follow_new_tab`
    the (last) one becomes the active tab; with False they stay in the background even where the
    manager follows new tabs (`follow_new_tabs`); None: as the manager's rule says. `modifiers`
    are read as `key_name` reads keys (`ctrl`, `cmd`)."""
    if button not in get_args(MouseButton):
        raise ValueError(f"button must be 'left', 'middle' or 'right', not {button!r}.")
    check_switch(double_click, "double_click")
    check_switch(follow_new_tab, "follow_new_tab", none=True)  # "no" followed the new tab
    # `ctrl` is Control; one key given as text is that key, not its letters.
    held = [key_name(modifiers)] if isinstance(modifiers, str) else [key_name(m) for m in modifiers]
    bad = [m for m in held if m not in MODIFIERS]
    if bad:
        raise ValueError(f"modifiers: unknown {', '.join(map(repr, bad))}; use {', '.join(MODIFIERS)}.")
    _check_dialogs(dialogs)
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    async with tab.input_turn():
        element = await _element_in_front(tab, ref)
        what = f"{'Double-clicking' if double_click else 'Clicking'} {ref} on tab {tab.id}"
        job = _click_unless_blocked(
            tab,
            element,
            ref,
            what,
            element.click(button=button, modifiers=held, double=double_click, timeout=timeout),
        )
        _, result = await _act(
            tab, what, job, ref=ref, timeout=timeout, dialogs=dialogs, pickers=True, follow=follow_new_tab
        )
    if follow_new_tab:
        for tab_id in reversed(result.opened_tab_ids):
            if tab.host.activate_tab(tab_id):  # not if it closed at once (tab cap, closed itself)
                return _with(result, followed_tab_id=tab_id)
    return result


CLICK_GRACE = 1.5
"""Seconds a click waits for its element to become clickable before it asks why it is not: one
that is disabled, or covered by another element, then fails at once, saying so, instead of after
the whole action timeout. (A page that enables the button or takes its spinner away within this
time, or within the `CLICKABLE_CHECK` after it, gets the click.)"""
CLICKABLE_CHECK = 0.5
"""Seconds the look at why an element is not clickable takes at most."""


async def _click_unless_blocked(
    tab: Tab, element: ElementHandle, ref: str, what: str, click: Awaitable[None]
) -> None:
    """Await `click` (with the action's timeout). If it has not happened within CLICK_GRACE seconds
    and its element is disabled or covered, the click is aborted (Playwright then never gives it)
    and that is said. An element that is not clickable for another reason (hidden, moving) is
    waited for as long as the click's timeout lets it."""
    clicking = asyncio.ensure_future(click)
    try:
        await asyncio.wait({clicking}, timeout=CLICK_GRACE)
        if clicking.done():
            return clicking.result()
        try:
            with map_playwright_errors(
                Doing(what, tab_id=tab.id, ref=ref, timeout=CLICK_GRACE + CLICKABLE_CHECK)
            ):
                await element.check_clickable(timeout=CLICKABLE_CHECK)
        except ActionError as blocked:
            if blocked.reason in ("disabled", "covered") and not clicking.done():
                clicking.cancel()  # Playwright aborts it: the click will not come later
                await asyncio.wait({clicking})
                if clicking.cancelled():
                    raise blocked from None
        except TabpilotError:  # a stale ref, the tab gone: the click itself says so
            pass
        return await clicking
    finally:
        clicking.cancel()  # this call was cancelled (or the click is done: then a no-op)


async def type_text(
    tab: Tab,
    ref: str,
    text: str,
    *,
    submit: bool = False,
    slowly: bool = False,
    timeout: float | None = None,
    dialogs: DialogPolicy = "report",
) -> ActionResult:
    """Replace the text of an editable element (`slowly`: key by key, firing key handlers);
    `submit` presses Enter afterwards."""
    check_switch(submit, "submit")  # submit="no" submitted
    check_switch(slowly, "slowly")
    cap = MAX_TYPED_SLOWLY if slowly else MAX_TYPED
    if len(text_given(text, "text", "'hello'")) > cap:
        how = "key by key (slowly)" if slowly else "in one call"
        raise ValueError(
            f"text is {len(text)} characters; at most {cap} can be typed {how}. Split it over several calls"
            + (", or type it without slowly (it sets the value at once)" if slowly else "")
            + "."
        )
    _check_dialogs(dialogs)
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    what = f"Typing into {ref} on tab {tab.id}"
    # Typing key by key takes time in proportion to the text; the timeout covers each key too.
    limit = timeout + (0.05 * len(text) if slowly else 0)
    async with tab.input_turn():
        element = await tab.element(ref)
        # Keys typed one by one go through the field's own editor (a date field's segments take
        # '11242026'): only a value set at once must be in the field's format.
        await check_field(tab, element, what, ref, uses=("text",), text=None if slowly else text, room=text)

        entering = False
        stop = asyncio.Event()

        async def job() -> None:
            nonlocal entering
            if slowly:
                await element.fill("", timeout=timeout)  # replaces the text, like fill
                if not stop.is_set():
                    await element.type_keys(text, timeout=limit, stop=stop.is_set)
            else:
                await element.fill(text, timeout=limit)
            if submit and not stop.is_set():
                entering = True
                await element.press("Enter", timeout=timeout)

        _, result = await _act(tab, what, job(), ref=ref, timeout=limit, dialogs=dialogs, stop=stop)
    # Enter opened it: nothing was left to do.
    return _with(result, stopped=False) if entering else result


MAX_KEY_CHARS = 100
"""Longer than any key name or combination (`Control+Shift+Alt+Meta+AudioVolumeDown` is 38)."""


def key_name(key: str) -> str:
    """Playwright's name of a key or combination: `ctrl+A` is `Control+A`, `cmd+shift+p`
    `Meta+Shift+p`, `esc` `Escape`. Names of more than one character are read in any case
    (`enter`, `PAGEDOWN`); a single character is the character (`A` is not `a`); `+` splits keys
    as Playwright splits them (`Control++` is Control and the plus key)."""
    keys, building = [], ""
    for char in key:
        if char == "+" and building:
            keys.append(building)
            building = ""
        else:
            building += char
    keys.append(building)
    named = []
    for part in keys:
        part = part.strip() or part  # a lone space is the space key
        named.append(_KEY_ALIASES.get(part.lower(), part) if len(part) > 1 else part)
    return "+".join(named)


async def press_key(
    tab: Tab, key: str, *, ref: str | None = None, timeout: float | None = None
) -> ActionResult:
    """Press a key (`Enter`, `ArrowDown`, `Control+a`; `key_name` reads `ctrl+a`, `Esc` and the
    like) in the tab, on element `ref` if given, otherwise wherever the tab's focus is.
    `result.value` is the key as pressed."""
    if not text_given(key, "key", "'Enter'"):
        raise ValueError("key must name a key, e.g. Enter, Tab, ArrowDown or Control+a.")
    if len(key) > MAX_KEY_CHARS:  # no key's name is that long; it was echoed whole, twice
        raise ValueError(
            f"key {quoted(key, 60)} is not a key name: name one key or combination, e.g. Enter or "
            "Control+a (text is typed, not pressed)."
        )
    written = key.strip()
    if len(written) > 1 and written.endswith("+") and not written.endswith("++"):
        # Playwright read the part after the last + as a key named "" ('Unknown key: ""').
        raise ValueError(
            f"key {quoted(key)} names no key after its last +: add the key (Control+a), or press the plus "
            "key as Control++."
        )
    key = key_name(key)
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    async with tab.input_turn():
        if ref is not None:
            element = await tab.element(ref)
            what = f"Pressing {key} on {ref} on tab {tab.id}"
            job: Awaitable[None] = _press_on(tab, element, ref, key, what, timeout)
        else:
            job = asyncio.wait_for((await tab.usable()).press_key(key), timeout)
            what = f"Pressing {key} on tab {tab.id}"
        _, result = await _act(tab, what, job, ref=ref, timeout=timeout)
    return replace(result, value=key)


async def _press_on(tab: Tab, element: ElementHandle, ref: str, key: str, what: str, timeout: float) -> None:
    """Press `key` on the element once it has the focus. Playwright presses a key "on" an element
    by focusing it first, and one that takes no focus (hidden, disabled, a plain text block) leaves
    it where it was: the key went to that other element (the Enter of a field typed into before)
    and the answer said it was pressed on this one."""
    taken = await element.take_focus(timeout=timeout)
    if taken == "disabled":
        raise ActionError.disabled(what, tab_id=tab.id, ref=ref)
    if taken != "focused":
        why = (
            "is not visible (hidden, collapsed or zero-sized)"
            if taken == "hidden"
            else "takes no keyboard focus"
        )
        raise ActionError(
            f"{what} failed: element {ref} {why}, so the key would go to another element (the one that "
            "has the focus); nothing was pressed.",
            f"Press the key without ref to send it to the focused element (a snapshot of tab {tab.id} marks "
            "it [active]), or use the ref of a field, button or link.",
            tab_id=tab.id,
            ref=ref,
            reason="no_focus",
        )
    await element.press(key, timeout=timeout)


async def select_option(
    tab: Tab, ref: str, values: Sequence[str], *, timeout: float | None = None
) -> ActionResult:
    """Select options of a <select> by value or label; `result.value` lists the values now selected
    (the values asked for, if the selection started loading a page that had not come in time)."""
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, Sequence) or not all(isinstance(v, str) for v in values):
        given = repr(values) if len(repr(values)) <= 60 else repr(values)[:60] + "…"
        raise TypeError(
            f"values takes an option's value or label, or a list of them, such as ['red']; it was given {given}."
        )
    if not values:  # it cleared the choice, as fill_form refuses to
        raise ValueError("values must name at least one option (by value or label).")
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    what = f"Selecting {list(values)} in {ref} on tab {tab.id}"
    async with tab.input_turn():
        element = await tab.element(ref)
        await check_field(tab, element, what, ref, uses=("options",), values=values)
        selected, result = await _act(
            tab, what, element.select(values, timeout=timeout), ref=ref, timeout=timeout
        )
    # A selection that made the page load a slow page: Playwright did not get to say what it
    # selected before the time ran out, so the values asked for stand for them.
    return _with(result, value=list(values) if result.loading is not None else selected)


async def hover(tab: Tab, ref: str, *, timeout: float | None = None) -> ActionResult:
    """Move the mouse over an element (menus and tooltips that open on hover)."""
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    async with tab.input_turn():
        element = await _element_in_front(tab, ref)
        _, result = await _act(
            tab, f"Hovering {ref} on tab {tab.id}", element.hover(timeout=timeout), ref=ref, timeout=timeout
        )
    return result


async def fill_form(
    tab: Tab,
    fields: Sequence[tuple[str, FieldValue]] | Mapping[str, FieldValue],
    *,
    timeout: float | None = None,
) -> ActionResult:
    """Fill several fields in one call, `[(ref, value), ...]` or `{ref: value}`: text for text
    fields, True/False (or the text 'true' or 'false') for checkboxes and radio buttons, a value
    (or values) for selects. Every ref is checked before anything is filled."""
    if isinstance(fields, Mapping):
        fields = list(fields.items())
    if not fields:
        raise ValueError("fields must name at least one field: [(ref, value), ...].")
    if isinstance(fields, str) or not all(isinstance(f, list | tuple) and len(f) == 2 for f in fields):
        raise TypeError("fields takes (ref, value) pairs, [('3e5', 'Ada'), ...], or a dict {'3e5': 'Ada'}.")
    for ref, value in fields:
        if not isinstance(value, str | bool) and not (
            isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
        ):  # a number failed as "'int' object is not iterable"
            given = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
            raise TypeError(
                f"The value for {ref} takes text, True or False, or a list of options; it was given {given} "
                f"({type(value).__name__})."
            )
        if isinstance(value, list | tuple) and not value:  # it cleared the choice, saying "= ."
            raise ValueError(f"The value for {ref} is an empty list: give the option (or options) to select.")
        if isinstance(value, str) and len(value) > MAX_TYPED:  # as much as type_text takes at once
            raise ValueError(
                f"The value for {ref} is {len(value)} characters; at most {MAX_TYPED} can be filled in one "
                "call. Split it over several calls."
            )
    async with tab.input_turn():
        return await _fill_form(tab, fields, call_timeout(timeout, tab.host.timeouts.action))


def _refs_of_one_tab(tab: Tab, refs: Sequence[str]) -> None:
    """One call acts on one tab: refs of several tabs in it are refused, saying so (each ref
    alone would be refused for not being the tab's, whose advice is for one ref)."""
    tabs = sorted({ref_tab for ref_tab, _ in map(parse_ref, refs) if ref_tab is not None})
    if len(tabs) > 1:  # refs of one other tab: each ref's own check says whose it is
        raise RefError(
            f"Refs {', '.join(refs)} are on {len(tabs)} tabs ({', '.join(map(str, tabs))}): one call acts "
            "on one tab.",
            "Use refs from one tab's snapshot; act on the other tab in a call of its own.",
            ref=next(ref for ref in refs if parse_ref(ref)[0] not in (None, tab.id)),
            tab_id=tab.id,
        )


async def _fill_form(tab: Tab, fields: Sequence[tuple[str, FieldValue]], timeout: float) -> ActionResult:
    _refs_of_one_tab(tab, [ref for ref, _ in fields])
    elements: list[tuple[str, ElementHandle, FieldValue]] = []
    selects: dict[str, bool] = {}
    for ref, value in fields:  # every field, before anything is filled
        element = await tab.element(ref)
        text = value if isinstance(value, str) else None
        values = None if isinstance(value, bool) else [value] if isinstance(value, str) else list(value)
        state = await check_field(
            tab,
            element,
            f"Filling {ref} on tab {tab.id}",
            ref,
            uses=field_uses(value),
            values=values,
            text=text,
            room=text,
        )
        checked = toggle_text(text, state) if text is not None else None
        elements.append((ref, element, value if checked is None else checked))
        selects[ref] = state is not None and state["options"] is not None

    done = 0  # fields filled so far
    stop = asyncio.Event()

    async def job() -> None:
        nonlocal done
        for ref, element, value in elements:
            if stop.is_set():
                return
            with map_playwright_errors(
                Doing(f"Filling {ref} on tab {tab.id}", tab_id=tab.id, ref=ref, timeout=timeout)
            ):
                if isinstance(value, bool):
                    await element.check(value, timeout=timeout)
                elif not isinstance(value, str):
                    await element.select(list(value), timeout=timeout)
                elif selects[ref]:
                    await element.select([value], timeout=timeout)
                else:
                    await element.fill(value, timeout=timeout)
            done += 1

    refs = ", ".join(ref for ref, _ in fields)
    _, result = await _act(
        tab, f"Filling {refs} on tab {tab.id}", job(), ref=None, timeout=timeout, stop=stop
    )
    # Stopped: the field being filled opened the dialog, and was set.
    reached = elements[: done + 1] if result.stopped else elements
    return _with(result, value=[value for _, _, value in reached], stopped=len(reached) < len(elements))


async def drag(tab: Tab, source_ref: str, target_ref: str, *, timeout: float | None = None) -> ActionResult:
    """Drag one element onto another (both refs of this tab)."""
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    what = f"Dragging {source_ref} to {target_ref} on tab {tab.id}"
    _refs_of_one_tab(tab, [source_ref, target_ref])
    async with tab.input_turn():
        source = await _element_in_front(tab, source_ref)
        target = await tab.element(target_ref)
        await _same_origin_frames(tab, what, (source_ref, source), (target_ref, target))
        _, result = await _act(
            tab, what, source.drag_to(target, timeout=timeout), ref=source_ref, timeout=timeout
        )
    return result


async def _same_origin_frames(
    tab: Tab, what: str, source: tuple[str, ElementHandle], target: tuple[str, ElementHandle]
) -> None:
    """Refuse a drag from a frame into one of another origin: the browser runs such frames apart,
    and Playwright's drag ends in the first without a drop in the second (it said 'Dragged' all the
    same). Frames of one origin, and a drag within one frame, are fine."""
    # A page ref is `e5`, or `f2e5` in a frame: the part before the `e` names the frame.
    frames = [tab.resolve_ref(ref).partition("e")[0] for ref, _ in (source, target)]
    if frames[0] == frames[1]:
        return
    try:
        origins = await asyncio.gather(
            *(element.frame_origin(timeout=FRAME_CHECK_TIMEOUT) for _, element in (source, target))
        )
    except Exception:  # gone meanwhile, or the page is busy: the drag itself says so
        return
    if origins[0] != origins[1] or origins[0] == "null":
        raise ActionError(
            f"{what} failed: {source[0]} and {target[0]} are in frames of different origins ({origins[0]} and "
            f"{origins[1]}), and a drag from one such frame into the other is not supported (the drop "
            "would not happen). Nothing was dragged.",
            "Drag within one frame, or do what the drop does in another way the page offers (a button, a "
            "menu, a file input).",
            tab_id=tab.id,
            ref=source[0],
        )


FRAME_CHECK_TIMEOUT = 2.0
"""Seconds the look at which frames a drag's two elements are in takes at most."""


def path_in_roots(path: str, roots: Sequence[str], *, base: str | None = None, doing: str) -> Path:
    """`path` made absolute (relative to `base`, else the working directory); refused
    (PathNotAllowedError naming the roots and what files there are for, `doing`) unless it lies
    inside one of `roots`."""
    if not path.strip():
        raise ValueError("An empty path names no file: give the file's path.")
    try:
        resolved = (Path(base).expanduser() / path if base else Path(path)).expanduser().resolve()
    except (OSError, RuntimeError) as exc:  # a name too long, a loop of links
        raise ValueError(
            f"{quoted(path)} is no usable path: {getattr(exc, 'strerror', None) or exc}."
        ) from None
    allowed = [Path(r).expanduser().resolve() for r in roots]
    if resolved in allowed:
        raise ValueError(
            f"{quoted(path)} is the folder files may be {doing}, not a file in it: give a file's path."
        )
    if not any(root in resolved.parents for root in allowed):
        raise PathNotAllowedError(path, [str(r) for r in allowed], doing)  # which cuts a long path
    return resolved


def folder_files(folder: str, roots: Sequence[str], *, doing: str = "uploaded from") -> list[str]:
    """Every file a folder upload sends: the files under `folder` at any depth, links followed
    (once each: a loop of links ends), each as its real path. With `roots`, a link that leads
    outside every root is refused as a path given there would be: the folder is no way around them."""
    found: list[str] = []
    seen: set[Path] = set()
    waiting = [Path(folder)]
    while waiting:
        here = waiting.pop()
        real = _link_in_roots(here, roots, doing) if roots and here.is_symlink() else here.resolve()
        if real in seen:
            continue
        seen.add(real)
        try:
            entries = sorted(real.iterdir())
        except OSError:  # not readable: the browser sends what it can read
            continue
        for entry in entries:
            target = _link_in_roots(entry, roots, doing) if roots and entry.is_symlink() else entry
            if target.is_dir():
                waiting.append(entry)
            elif target.is_file():
                found.append(str(target.resolve()))
    return found


def _link_in_roots(link: Path, roots: Sequence[str], doing: str) -> Path:
    """Where a link in a folder leads, refused outside every root (naming the link and its target)."""
    try:
        return path_in_roots(str(link), roots, doing=doing)
    except PathNotAllowedError:
        raise PathNotAllowedError(f"{link} (a link to {link.resolve()})", roots, doing) from None


def check_file_paths(
    paths: Sequence[str], roots: Sequence[str], *, doing: str = "uploaded from", folders: bool = False
) -> list[str]:
    """The absolute form of each path; refuses a path that is no readable file (with `folders`, a
    readable folder passes too, with the links in it checked by `folder_files`), or (with `roots`)
    outside every root."""
    if not paths:  # an upload of none emptied the file input
        raise ValueError("paths must name at least one file.")
    checked: list[str] = []
    for path in paths:
        resolved = path_in_roots(path, roots, doing=doing) if roots else Path(path).expanduser().resolve()
        try:
            folder = folders and resolved.is_dir() and os.access(resolved, os.R_OK | os.X_OK)
        except OSError:  # a name too long for the file system: said below
            folder = False
        if folder:
            folder_files(str(resolved), roots, doing=doing)
            checked.append(str(resolved))
            continue
        try:
            problem = (
                "it is a folder"
                if resolved.is_dir()
                else "nothing is there"
                if not resolved.is_file()
                else "this process may not read it"
                if not os.access(resolved, os.R_OK)
                else None
            )
        except OSError:  # a name too long for the file system
            problem = "the file system takes no such name"
        if problem is not None:
            # Which of the three, and where it was looked for: the answer said "no such file, a
            # folder, or not readable" of 'files/a.txt', not where relative paths start.
            where = f" ({quoted(str(resolved))})" if str(resolved) != path else ""
            start = (
                "" if Path(path).expanduser().is_absolute() else f"; a relative path starts at {os.getcwd()}"
            )
            inside = f" inside {', '.join(roots)}" if roots else ""
            raise ValueError(
                f"{quoted(path)} is not a readable file{where}: {problem}. Give the path of a file{inside}"
                f"{start}."
            )
        checked.append(str(resolved))
    return checked


async def upload_files(
    tab: Tab, ref: str, paths: Sequence[str], *, roots: Sequence[str] = (), timeout: float | None = None
) -> ActionResult:
    """Put files into a file input (by ref), or into the file picker an element opens when clicked
    (a button or drop zone in front of a hidden input). With `roots`, every path must lie inside
    one of them."""
    if isinstance(paths, str):  # one path, as select_option takes one value (not its characters)
        paths = [paths]
    # A folder is for a folder input (`webkitdirectory`: the page gets every file in it), which
    # takes nothing else; which kind of input it is shows only once it is found.
    files = check_file_paths(paths, roots, folders=True)
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    sent = (
        f"the folder {quoted(paths[0])}"
        if len(files) == 1 and os.path.isdir(files[0])
        else f"{len(files)} paths"
        if any(os.path.isdir(file) for file in files)
        else f"{len(files)} file{'s' if len(files) != 1 else ''}"
    )
    what = f"Uploading {sent} to {ref} on tab {tab.id}"
    async with tab.input_turn():
        element = await tab.element(ref)
        state = await field_state(tab, element, what, ref)
        if state is not None and state["kind"] == "file" and state["disabled"]:
            # Playwright sets a disabled input's files, which the user could not choose and its
            # form does not send: the upload said it was done, and nothing went.
            raise ActionError.disabled(what, tab_id=tab.id, ref=ref)
        if state is None or state["kind"] == "file":  # gone meanwhile: set_files says so
            _fits(tab, ref, paths, files, roots, what, folder_input=bool(state and state["folder"]))
            job: Awaitable[None] = element.set_files(files, timeout=timeout)
        else:
            await _bring_to_front(tab)  # the click waits for animation frames
            job = _upload_through_picker(tab, element, ref, paths, files, roots, what, timeout)
        _, result = await _act(tab, what, job, ref=ref, timeout=timeout)
    return result


def _fits(
    tab: Tab,
    ref: str,
    paths: Sequence[str],
    files: Sequence[str],
    roots: Sequence[str],
    what: str,
    *,
    folder_input: bool,
) -> None:
    """Refuse what the input does not take: a folder input takes one folder, any other files only."""
    if not folder_input:
        check_file_paths(paths, roots)  # a folder among them: said as before ("it is a folder")
    elif len(files) != 1 or not os.path.isdir(files[0]):
        raise ActionError(
            f"{what} failed: {ref} takes a folder (a folder input: the page gets every file in it), not files.",
            "Pass the path of one folder.",
            tab_id=tab.id,
            ref=ref,
            reason="one_file",
        )


async def _upload_through_picker(
    tab: Tab,
    element: ElementHandle,
    ref: str,
    paths: Sequence[str],
    files: Sequence[str],
    roots: Sequence[str],
    what: str,
    timeout: float,
) -> None:
    picker = await element.click_for_file_picker(timeout=timeout)
    if picker is None:
        raise ActionError(
            f"{what} failed: {ref} is not a file input, and clicking it opened no file picker.",
            f"Pass the ref of a file input (a snapshot shows it as a button named by its label) or of "
            f"the button that opens the file picker; take a new snapshot of tab {tab.id} to find it.",
            tab_id=tab.id,
            ref=ref,
            reason="no_file_input",
        )
    folder_input = await picker.folder()
    _fits(tab, ref, paths, files, roots, what, folder_input=folder_input)
    if len(files) > 1 and not picker.multiple:
        raise ActionError(
            f"{what} failed: the file picker {ref} opens takes one file.",
            "Pass one path.",
            tab_id=tab.id,
            ref=ref,
            reason="one_file",
        )
    await picker.set_files(files, timeout=timeout)


# -- page actions ------------------------------------------------------------------------------


async def wait_for(
    tab: Tab,
    *,
    text: str | None = None,
    text_gone: str | None = None,
    time: float | None = None,
    timeout: float = WAIT_FOR_TIMEOUT,
) -> ActionResult:
    """Wait `time` seconds (at most 30), then for `text_gone` to disappear and `text` to appear
    (each for up to `timeout` seconds)."""
    if text is None and text_gone is None and time is None:
        raise ValueError("wait_for needs text, text_gone or time: what to wait for.")
    if time is not None:
        if isinstance(time, bool) or not isinstance(time, int | float):  # True read as 1 s
            raise TypeError(f"time takes a number of seconds, such as 2; it was given {time!r}.")
        if not 0 <= time <= MAX_WAIT_TIME:  # NaN too: a sleep of NaN never ends
            raise ValueError(
                f"time must be 0 to {MAX_WAIT_TIME:g} seconds, not {time!r}: to wait longer for a page, "
                "wait for its text, with a timeout."
            )
    timeout = call_timeout(timeout, WAIT_FOR_TIMEOUT)
    for which, value in (("to appear", text), ("to disappear", text_gone)):
        if (
            value is not None
            and not text_given(value, "text" if which == "to appear" else "text_gone", "'Done'").strip()
        ):
            raise ValueError(
                f"The text to wait for {which} is empty: give its words, or wait a time in seconds instead."
            )
    handle = await tab.usable()
    gone = False  # text_gone has disappeared: the wait for `text` is the one that timed out
    met = False

    async def job() -> None:
        nonlocal gone, met
        if time is not None:
            # Over when the tab closes (or its browser goes): the text waits fail then by themselves.
            closed = asyncio.Event()
            dispose = handle.on_close(closed.set)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(closed.wait(), time)
            finally:
                dispose()
            if closed.is_set() or handle.is_closed():
                raise ActionError.tab_gone(
                    f"Waiting for {what} on tab {tab.id}",
                    f"tab {tab.id} closed (or its browser went away)",
                    tab_id=tab.id,
                    cause=tab.closing_cause,
                )
        if text_gone is not None:
            await handle.wait_for_text(text_gone, shown=False, timeout=timeout)
            gone = True
        if text is not None:
            await handle.wait_for_text(text, shown=True, timeout=timeout)
        met = True

    what = describe_wait(text=text, text_gone=text_gone, time=time)
    try:
        _, result = await _act(
            tab,
            f"Waiting for {what} on tab {tab.id}",
            job(),
            ref=None,
            timeout=timeout,
            watch_tabs=False,
            gives_input=False,
        )
    except ActionError as exc:
        if exc.reason == "timeout":
            pause = describe_wait(time=time) if time else ""
            if gone:  # say which one did not happen
                pause = ", then ".join(p for p in (pause, f"until text {quoted(text_gone)} was gone") if p)
            waited = f"{pause}, then {timeout:g} s" if pause else f"{timeout:g} s"
            failed = (
                describe_wait(text=text) if gone or text_gone is None else describe_wait(text_gone=text_gone)
            )
            later = (
                f" (the wait for text {quoted(text)} to appear comes after it)"
                if text is not None and text_gone is not None and not gone
                else ""
            )
            raise ActionError(
                f"Waited {waited} for {failed} on tab {tab.id}{later}; it did not happen.",
                f"Take a snapshot of tab {tab.id} to see the page as it is.",
                tab_id=tab.id,
                reason="not_happened",  # not the page that is slow: what was waited for did not come
            ) from exc.__cause__
        raise
    if result.closed_itself and not met:  # its page closed it: what was waited for did not come
        raise ActionError.tab_gone(
            f"Waiting for {what} on tab {tab.id}", f"tab {tab.id} closed itself", tab_id=tab.id
        )
    return result


def describe_wait(*, text: str | None = None, text_gone: str | None = None, time: float | None = None) -> str:
    """What `wait_for` waits for, in words: "2 s", "text 'Done' to appear", or "2 s, then for text
    'Done' to appear"."""
    pause = f"{min(time, MAX_WAIT_TIME):g} s" if time else ""  # a 0 s pause is not worth naming
    conditions = " and ".join(
        part
        for part in (
            f"text {quoted(text_gone)} to disappear" if text_gone is not None else "",
            f"text {quoted(text)} to appear" if text is not None else "",
        )
        if part
    )
    if pause and conditions:
        return f"{pause}, then for {conditions}"
    return pause or conditions or "0 s"


class Screenshot(bytes):
    """A screenshot's image (its PNG or JPEG bytes, usable wherever bytes are), and how much of
    the area asked for it shows, in the page's CSS pixels: `shown_height` of `area_height`, less
    when the image was cut at `max_height` (pixels of the image are not CSS pixels once the image
    is scaled down, or on a screen of 2 device pixels per CSS pixel). Both None where the area was
    not measured (neither `max_width` nor `max_height` given)."""

    shown_height: int | None
    area_height: int | None

    def __new__(
        cls, image: bytes, *, shown_height: int | None = None, area_height: int | None = None
    ) -> Screenshot:
        shot = super().__new__(cls, image)
        shot.shown_height, shot.area_height = shown_height, area_height
        return shot

    @property
    def cut(self) -> bool:
        """The image shows the top of the area only (`shown_height` of `area_height`)."""
        return (
            self.shown_height is not None
            and self.area_height is not None
            and self.shown_height < self.area_height
        )


async def screenshot(
    tab: Tab,
    *,
    full_page: bool = False,
    ref: str | None = None,
    image_type: ImageType = "png",
    quality: int | None = None,
    max_width: int | None = None,
    max_height: int | None = None,
    timeout: float | None = None,
) -> Screenshot:
    """An image of the tab's viewport (`full_page`: the whole page; `ref`: one element), PNG or
    JPEG (`quality` 0-100, JPEG only), scaled down to `max_width` pixels if wider; an image that
    would be taller than `max_height` pixels shows the top of the area, that many pixels of it
    (a 30,000-pixel page is a picture models refuse), and says how much of it in CSS pixels
    (`Screenshot.shown_height`). Works on a background tab without activating it."""
    check_switch(full_page, "full_page")
    if full_page and ref is not None:
        raise ValueError(
            "full_page and ref exclude each other: a screenshot is of the page or of one element."
        )
    if image_type not in ("png", "jpeg"):  # Playwright's own words named webp, which this does not take
        raise ValueError(f"image_type takes 'png' or 'jpeg', not {image_type!r}.")
    if quality is not None:
        check_count(quality, "quality", "the JPEG quality from 0 to 100", minimum=0, unit="(JPEG, up to 100)")
    if quality is not None and (image_type != "jpeg" or not 0 <= quality <= 100):
        raise ValueError("quality applies to JPEG only, from 0 to 100.")
    for name, side in (("max_width", max_width), ("max_height", max_height)):
        if side is not None:
            check_count(side, name, "a number of pixels", minimum=16, unit="pixels")
    timeout = call_timeout(timeout, tab.host.timeouts.action * 2)
    page = await tab.usable()
    element = await tab.element(ref) if ref is not None else None
    what = f"Screenshot of {ref} on tab {tab.id}" if ref is not None else f"Screenshot of tab {tab.id}"

    async def shoot() -> Screenshot:
        if element is not None and not await element.visible():
            # Playwright's screenshot waits for it to show, the whole timeout, and that read as a
            # page too busy to answer.
            raise ActionError(
                f"{what} failed: element {ref} is not visible (hidden, collapsed or zero-sized): nothing of "
                "it is drawn.",
                f"Take a new snapshot of tab {tab.id} and use a ref of an element it shows (open the menu or "
                "section that holds it first), or take the viewport.",
                tab_id=tab.id,
                ref=ref,
                reason="not_visible",
            )
        if max_width is not None or max_height is not None:
            # The area in CSS pixels of the document, and the device pixels per CSS pixel: scaled
            # by the browser when wider than wanted, cut when taller.
            if element is not None:
                # In the top page's document: an iframe's element is measured in its own.
                box = await element.area(timeout=timeout)
                scroll = await page.evaluate(_SCROLL)
                clip = (box[0] + scroll[0], box[1] + scroll[1], box[2], box[3], scroll[2]) if box else None
            else:
                clip = await page.evaluate(_FULL_PAGE if full_page else _VIEWPORT)
            if clip is None:  # no box: Playwright's screenshot says why
                return Screenshot(await _plain_shot())
            x, y, width, height, ratio = (float(v) for v in clip)
            if element is not None and (x + width <= 0 or y + height <= 0):
                # Above or left of the page (`left: -9999px`, text for screen readers only), where
                # no scroll reaches: the capture showed whatever the page has at its edge instead.
                raise ActionError(
                    f"{what} failed: element {ref} lies outside the page (its box is at x={x:.0f}, y={y:.0f} "
                    f"of the document, {width:.0f}x{height:.0f} px), where nothing is drawn: a page puts text "
                    "for screen readers only there.",
                    f"Read its text in a snapshot of tab {tab.id}, or take the viewport or another element.",
                    tab_id=tab.id,
                    ref=ref,
                    reason="failed",  # not "not_visible": its advice, to open what holds it, would not help
                )
            whole = height
            pixels = width * ratio
            scale = max_width / pixels if max_width is not None and pixels > max_width else 1.0
            tall = max_height is not None and height * ratio * scale > max_height
            if (scale < 1 or tall) and width > 0 and height > 0:
                if tall and max_height is not None:
                    height = max_height / (ratio * scale)
                image = await page.capture(
                    (x, y, width, height), scale=scale, image_type=image_type, quality=quality
                )
                return Screenshot(image, shown_height=int(height), area_height=round(whole))
            return Screenshot(await _plain_shot(), shown_height=round(whole), area_height=round(whole))
        return Screenshot(await _plain_shot())

    async def _plain_shot() -> bytes:
        if element is not None:
            return await element.screenshot(image_type=image_type, quality=quality, timeout=timeout)
        return await page.screenshot(
            full_page=full_page, image_type=image_type, quality=quality, timeout=timeout
        )

    async def shoot_one_page() -> Screenshot:
        # Playwright's screenshot can wait out its whole timeout when the tab navigates under it
        # (another call's load, back or reload at that moment: 1 in 12 to 23 in 30 screenshots in
        # Playwright alone): one the tab navigated under is taken again, of the page it shows now.
        # Right after such a navigation (or one under way as the call came) Chromium may have no
        # picture of the new page yet ("Unable to capture screenshot"): that try is made again a
        # moment later, a few times.
        failures = 0
        navigated = tab.document_due or tab.status == "loading"
        while True:
            try:
                done, image = await tab.before_navigation(shoot())
            except Exception:
                failures += 1
                if not navigated or failures > _SHOTS_AFTER_NAVIGATION:
                    raise
                await asyncio.sleep(0.1)
                continue
            if done and image is not None:
                return image
            navigated = True

    async def shoot_unless_hidden() -> Screenshot:
        # A browser with a window (the user's own) draws no picture of a tab behind another, or
        # of a minimized window: the capture waits for one that never comes (a headless browser
        # draws every tab). A capture slower than usual asks whether the tab is hidden.
        shot = asyncio.ensure_future(shoot_one_page())
        try:
            with contextlib.suppress(TimeoutError):
                return await asyncio.wait_for(asyncio.shield(shot), min(HIDDEN_CHECK, timeout))
            if await _is_hidden(page):
                raise ActionError.hidden(what, tab_id=tab.id, ref=ref)
            return await shot
        finally:
            shot.cancel()

    data, result = await _act(
        tab,
        what,
        asyncio.wait_for(shoot_unless_hidden(), timeout),
        ref=ref,
        timeout=timeout,
        watch_tabs=False,
        gives_input=False,
    )
    if data is None and result.closed_itself:
        # A screenshot does not close its tab: it was closed meanwhile (by its user, through
        # the extension), before anything said by whom.
        raise ActionError.tab_gone(
            what, f"tab {tab.id} closed", tab_id=tab.id, ref=ref, cause=tab.closing_cause
        )
    if data is None:
        # The dialog may be on another tab: an opener and its same-site popups share one thread.
        shown = result.dialog_tab_id or tab.id
        kind = dialog_noun(result.dialog.type) if result.dialog else "a dialog"
        where = f" on tab {shown}, which tab {tab.id} waits for too" if shown != tab.id else ""
        raise ActionError(
            f"{what} was interrupted: {kind} opened{where}.",
            "Handle it, then retry.",
            tab_id=shown,
            reason="dialog",
        )
    image: Screenshot = data
    return image


HIDDEN_CHECK = 1.5
"""Seconds a screenshot waits before it asks whether its tab is hidden (a capture takes 0.1 s)."""


async def _is_hidden(page: PageHandle) -> bool:
    """Whether the page says it is hidden (its tab is behind another, or its window minimized)."""
    try:
        return bool(await asyncio.wait_for(page.evaluate("() => document.visibilityState === 'hidden'"), 2))
    except Exception:  # busy, or gone: the capture's own outcome says so
        return False


_SHOTS_AFTER_NAVIGATION = 5
"""Tries of a screenshot that failed after the tab navigated under an earlier try (0.1 s apart)."""
_VIEWPORT = "() => [scrollX, scrollY, innerWidth, innerHeight, devicePixelRatio]"
_FULL_PAGE = (
    "() => [0, 0, Math.max(document.documentElement.scrollWidth, innerWidth), "
    "Math.max(document.documentElement.scrollHeight, innerHeight), devicePixelRatio]"
)
_SCROLL = "() => [scrollX, scrollY, devicePixelRatio]"


async def evaluate(
    tab: Tab, function: str, *, ref: str | None = None, timeout: float | None = None
) -> ActionResult:
    """Run JavaScript in the tab: `() => document.title`, or with `ref` `(element) => element.value`.
    A promise is awaited, up to `timeout` (default: the action timeout).

    `result.value` is the script's result in JSON values only, written in the page as JavaScript
    would print it (a Date as its ISO string, a RegExp as `/x/gi`, NaN as "NaN", a self-reference as
    "[Circular]", a Map as its [key, value] entries, a Set as its values; `_pw.handles._AS_JSON`);
    a result over 10,000,000 characters as JSON is an error that says so. If the script
    opens a dialog, `result.dialog` says so and `value` is None: the script goes on once the
    dialog is handled (`Tab.handle_dialog` waits briefly for it), and its result (or error) comes
    as a `script_result` event of its tab, `heldBy` the tab that showed the dialog.
    """
    if not text_given(function, "function", "'() => document.title'").strip():
        raise ValueError("function must be JavaScript, e.g. '() => document.title'.")
    timeout = call_timeout(timeout, tab.host.timeouts.action)
    element = await tab.element(ref) if ref is not None else None
    if element is not None:
        # Playwright's timeout is for finding the element only: the script itself gets this call's.
        evaluation = asyncio.ensure_future(element.run_script(function, timeout=timeout))
        what = f"Evaluating on {ref} on tab {tab.id}"
    else:
        evaluation = asyncio.ensure_future((await tab.usable()).run_script(function))
        what = f"Evaluating on tab {tab.id}"
    job = asyncio.wait_for(asyncio.shield(evaluation), timeout)
    try:
        value, result = await _act(tab, what, job, ref=ref, timeout=timeout, gives_input=False)
    except ActionError as exc:
        evaluation.cancel()  # still running after a timeout: nobody waits for it any more
        if exc.reason in ("timeout", "busy") and not tab.closed and await _is_there(element):
            # The page answered after the timeout (`_act` asked it): not stuck, not loading; the
            # script's promise did not settle. Retrying the same script would wait the same way.
            raise ActionError(
                f"{what} did not finish within {timeout:g} s: the page answers, but the script's "
                "promise had not settled.",
                "Return without awaiting what may never come (or race it against a timer of your own), "
                "then retry.",
                tab_id=tab.id,
                ref=ref,
                reason="script_pending",
            ) from exc
        raise
    except BaseException:
        evaluation.cancel()  # still running after a timeout: nobody waits for it any more
        raise
    if result.closed_itself and not (
        evaluation.done() and not evaluation.cancelled() and evaluation.exception() is None
    ):
        # Its page closed the tab before the script returned (a sign-in popup's script may end
        # so, its job done): no value, and said so ("null" read as the script's result).
        return _with(result, value=None, returned=False)
    if result.dialog is not None:
        # A dialog holds the script up; once it is handled the script goes on, with no time limit
        # of this call's (the dialog may wait for a person): its result comes as an event.
        holder = next((t for t in tab.host.tabs if t.id == result.dialog_tab_id), tab)
        holder.hold(asyncio.ensure_future(_held_result(tab, evaluation, what, holder.id, function)))
        return result
    if value is UNDEFINED:
        return _with(result, value=None, undefined=True)
    return _with(result, value=value)


async def _is_there(element: ElementHandle | None) -> bool:
    """Whether the element a script ran on is on the page (None: the page itself): a script that
    did not finish on an element that is there is still running, not waiting for the element."""
    if element is None:
        return True
    try:
        return await asyncio.wait_for(element.count(), 1.0) > 0
    except Exception:  # the page does not answer, or the tab went: the first error stands
        return False


async def _held_result(
    tab: Tab, evaluation: asyncio.Future[Any], what: str, held_by: int, function: str
) -> None:
    """Emit the outcome of a script a dialog held up (`evaluate`) as a `script_result` event."""
    # Which script it was: with several held up by one dialog, each result says whose it is.
    script = function.strip()
    script = script if len(script) <= 200 else script[:200] + "…"
    try:
        with map_playwright_errors(Doing(what, tab_id=tab.id)):
            value = await evaluation
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a script's own error, the tab closed or navigated
        error = exc.fact if isinstance(exc, TabpilotError) else f"{what} failed: {exc}"
        tab.host.emit("script_result", tab.id, heldBy=held_by, error=error, function=script)
        return
    if value is UNDEFINED:
        tab.host.emit("script_result", tab.id, heldBy=held_by, value=None, undefined=True, function=script)
        return
    tab.host.emit("script_result", tab.id, heldBy=held_by, value=value, function=script)


async def resize(tab: Tab, width: int, height: int) -> tuple[int, int]:
    """Set the tab's viewport to `width` x `height` CSS pixels; returns the size the page now has."""
    check_count(width, "width", "a number of CSS pixels, 100 to 10000", minimum=0, unit="pixels")
    check_count(height, "height", "a number of CSS pixels, 100 to 10000", minimum=0, unit="pixels")
    if not (100 <= width <= 10000 and 100 <= height <= 10000):
        raise ValueError(f"viewport {width}x{height} is out of range: each side from 100 to 10000 pixels.")
    page = await tab.usable()
    what = f"Resizing tab {tab.id}"

    async def resized() -> Any:
        await page.set_viewport(width, height)
        return await page.evaluate("() => [window.innerWidth, window.innerHeight]")

    try:
        with map_playwright_errors(Doing(what, tab_id=tab.id, timeout=tab.host.timeouts.action)):
            # A dialog the page opens meanwhile stops it answering: said at once, not at the timeout.
            size = await tab.unless_dialog(asyncio.wait_for(resized(), tab.host.timeouts.action))
    except ActionError as exc:
        await tab.raise_what_the_page_says(exc, what)
        raise
    return int(size[0]), int(size[1])


__all__ = [
    "ActionResult",
    "FieldValue",
    "ImageType",
    "KeyModifier",
    "check_file_paths",
    "click",
    "describe_wait",
    "drag",
    "evaluate",
    "fill_form",
    "hover",
    "key_name",
    "path_in_roots",
    "press_key",
    "resize",
    "screenshot",
    "select_option",
    "type_text",
    "upload_files",
    "wait_for",
]
