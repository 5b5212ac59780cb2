"""Input tools: click, type, press a key, select, hover and wait, on any tab (active or not).

Each names its element by a tab-scoped ref (`3e5`), which already says which tab to act on; the
response says which tabs the action opened (### Events, ### Tabs), which other tabs its page sent
to a new page (### Result: their refs are gone) and what changed on the page.
"""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import BeforeValidator, Field

from tabpilot import (
    ActionResult,
    KeyModifier,
    MouseButton,
    Tab,
    TabpilotError,
    click,
    describe_wait,
    dialog_noun,
    hover,
    key_name,
    press_key,
    quoted,
    select_option,
    tabs_said,
    type_text,
    wait_for,
)

from ..advice import dialog_said, sentences, short, tab_limit_closed
from .base import Call, RefArg, TabIdArg, ToolSpec

OptionalRefArg = Annotated[
    str | None,
    Field(description="Element ref, e.g. '3e5'."),
]


def _modifier_names(value: object) -> object:
    """Modifier keys as models write them (`ctrl`, `Cmd`), read as `key_name` reads keys."""
    if isinstance(value, list):
        return [key_name(item) if isinstance(item, str) else item for item in value]
    return value


def report(
    call: Call,
    tab: Tab,
    done: str,
    result: ActionResult,
    *,
    follow: bool | None = None,
    waited: bool = False,
    **facts: object,
) -> None:
    """Fill the response of a page action: what it did, tabs it opened, a dialog it raised.
    `follow`: the call asked to make a tab it opens the active one (True), or to keep it in the
    background (False); None: as the server's --follow-new-tabs says. `waited`: it only waited
    (a dialog then came from the page, not from it)."""
    opened = list(result.opened_tab_ids)
    followed = result.followed_tab_id
    notes: list[str] = []
    if follow and not opened:  # asked for, and nothing to follow: said, not dropped
        notes.append("It opened no new tab, so followNewTab made none active.")
    follow = call.session.config.follow_new_tabs if follow is None else follow
    if result.dialog is not None:
        shown = result.dialog_tab_id or tab.id
        held = "" if shown == tab.id else f", which tab {tab.id} waits for too"
        how = (
            # Another call's action ran on the tab too (its script, its click): either may be why.
            f"While it {'waited' if waited else 'ran'}, {dialog_noun(result.dialog.type)} opened on tab {shown}"
            if result.dialog_shared or waited
            else f"It opened {dialog_noun(result.dialog.type)} on tab {shown}"
        )
        shared = " (another call was at work on the tab too: either may have opened it)"
        notes.append(
            f"{how}{dialog_said(result.dialog.type, result.dialog.message)}{held}"
            f"{shared if result.dialog_shared else ''}. The page waits until you handle it with "
            f"browser_handle_dialog(tabId={shown}, accept=true|false)."
        )
        call.response.told("dialog_opened", shown)
    if result.file_picker:
        notes.append(
            "It opened a file picker, which tabpilot held back: choose files with "
            f'browser_file_upload(ref="{facts.get("ref")}", paths=[...]).'
            if call.response.calls.forms
            else "It opened a file picker, which tabpilot held back (no tool here uploads files)."
        )
    if result.loading is not None:
        page = result.loading or "a new page"
        notes.append(
            f"It made tab {tab.id} load {page}, whose server has not sent it yet: the browser keeps "
            f"waiting for it. Take a snapshot of tab {tab.id} in a while."
        )
    # (A script its tab's close cut short says so itself.)
    closed = f"Tab {tab.id} closed itself afterwards." if result.closed_itself and result.returned else ""
    if closed and not _made_another_active(call, tab):
        call.response.told("tab_closed", tab.id)  # ### Events would say it again

    def text() -> str:
        # Written when the response is built: a tab the action opened may have closed itself by
        # then, as ### Events in the same response says.
        sent = _sent_text(call, result.other_tabs_loading)
        shared = set(result.opened_shared)
        opened_text = _opened_text(call, opened, followed, follow, shared=shared, on=tab.id)
        return sentences([done, closed, opened_text, sent, *notes])

    data: dict[str, object] = {"tabId": tab.id, **facts, "openedTabIds": opened}
    if result.opened_shared:
        data["openedShared"] = list(result.opened_shared)
    if result.file_picker:
        data["filePicker"] = True
    if result.loading is not None:
        data["loading"] = result.loading
    if result.stopped:
        data["stopped"] = True
    if result.other_tabs_loading:
        data["otherTabsLoading"] = [{"tabId": t, "url": url} for t, url in result.other_tabs_loading]
    if followed is not None:
        data["activeTabId"] = followed
    if result.dialog is not None:
        data["dialog"] = {**result.dialog.to_dict(), "tabId": result.dialog_tab_id or tab.id}
    call.response.result(text, data)
    moved_to = _open_tab(call, followed)
    if moved_to is not None:
        # The agent goes on in the tab it followed: its page, whole (it has no refs there yet),
        # rather than what changed on the tab it leaves.
        call.response.set_page(moved_to, changes=True)
        call.response.told("tab_activated", moved_to.id)  # the result says it is the active tab
    elif not tab.is_gone:
        # A page the action made the tab load that had not come in the action's time: a snapshot
        # would wait for it as long again; the result says to look in a while.
        call.response.set_page(tab, changes=result.loading is None)


def _open_tab(call: Call, tab_id: int | None) -> Tab | None:
    """Tab `tab_id` if it is open (a tab an action opened may have closed again)."""
    if tab_id is None:
        return None
    try:
        found = call.manager.tab(tab_id)
    except TabpilotError:
        return None
    return None if found.leaving else found


def _made_another_active(call: Call, tab: Tab) -> bool:
    """Whether the close of `tab` made (or, not told yet, will make) another tab active: its
    `tab_closed` event says which."""
    closes = [e for e in call.manager.events.history(tab_id=tab.id) if e.type == "tab_closed"]
    if closes:
        return bool(closes[-1].data.get("activeChanged"))
    return tab.host.active_tab is tab


def _opened_text(
    call: Call, opened: list[int], followed: int | None, follow: bool, *, shared: set[int], on: int
) -> str:
    """What a response says of the tabs an action opened: which to use, and which closed again
    (by themselves or the tab limit: a popup gone before the action returned counts as much).
    `shared`: those that opened while another call was at work on tab `on` too."""
    if not opened:
        return ""
    manager = call.manager
    open_now = {info.id for info in manager.tabs()}
    maybe = [tab_id for tab_id in opened if tab_id in open_now and tab_id in shared and tab_id != followed]
    opened = [tab_id for tab_id in opened if tab_id not in maybe]
    here = [tab_id for tab_id in opened if tab_id in open_now]
    capped = [tab_id for tab_id in opened if tab_id not in here and _closed_by(call, tab_id) == "cap"]
    gone = [tab_id for tab_id in opened if tab_id not in here and tab_id not in capped]
    said = []
    if followed in here and here == [followed]:
        said.append(f"It opened tab {followed}, which is now the active tab.")
    elif followed in here:
        said.append(f"It opened {tabs_said(here)}; tab {followed} is now the active tab.")
    elif here:
        # Not "in the background": the user's Chrome (a headed one too) shows a tab a link opens
        # in front; tabpilot's active tab, what calls without tabId use, stays as it was.
        which = "which did not become" if len(here) == 1 else "none of which became"
        said.append(f"It opened {tabs_said(here)}, {which} the active tab (use tabId={here[0]}).")
    unfollowed = ""
    if follow and followed is None:
        unfollowed = f" before {'it' if len(gone) == 1 else 'one'} could become the active tab"
    if gone:
        also = " also" if here else ""
        which = "which closed again" if len(gone) == 1 else "which all closed again"
        said.append(f"It{also} opened {tabs_said(gone)}, {which}{unfollowed}.")
    if capped:
        also = " also" if here or gone else ""
        limit = tab_limit_closed(manager, call.response.calls, tabs=len(capped))
        said.append(f"It{also} opened {tabs_said(capped)}, but {limit}.")
    if maybe:
        # A page does not say which of the calls at work on it opened a tab: both are told.
        said.append(
            f"{tabs_said(maybe).capitalize()} opened while it ran, not as the active tab (use tabId={maybe[0]}); another "
            f"call was at work on tab {on} too, and either may have opened {'it' if len(maybe) == 1 else 'them'}."
        )
    return " ".join(said)


def _sent_text(call: Call, loading: tuple[tuple[int, str], ...]) -> str:
    """What a response says of other tabs the action's page sent to a new page (a link to a named
    tab, a popup setting its opener's location): the agent's refs there are gone. Tabs that closed
    since are left out (### Events says they closed)."""
    open_now = {info.id for info in call.manager.tabs()}
    return " ".join(
        f"Tab {tab_id} started loading {short(url or 'a new page')} during this action: refs from its earlier "
        f"snapshots are gone; take a new snapshot of tab {tab_id} before acting on it."
        for tab_id, url in loading
        if tab_id in open_now
    )


def _closed_by(call: Call, tab_id: int) -> str | None:
    """Who closed a tab that is gone (its `tab_closed` event's cause), if that is known yet."""
    closed = [e for e in call.manager.events.history(tab_id=tab_id) if e.type == "tab_closed"]
    return str(closed[-1].data.get("by")) if closed else None


async def browser_click(
    call: Call,
    tab: Tab,
    ref: RefArg,
    tabId: TabIdArg = None,
    button: Annotated[MouseButton, Field()] = "left",
    modifiers: Annotated[
        list[KeyModifier] | None,
        BeforeValidator(_modifier_names),
        Field(description="Keys held."),
    ] = None,
    doubleClick: Annotated[bool, Field()] = False,
    followNewTab: Annotated[
        bool | None,
        Field(description="Activate a tab the click opens (default: --follow-new-tabs)."),
    ] = None,
) -> None:
    result = await click(
        tab,
        ref,
        button=button,
        modifiers=modifiers or [],
        double_click=doubleClick,
        follow_new_tab=followNewTab,
    )
    how = (
        "Double-clicked"
        if doubleClick
        else "Clicked"
        if button == "left"
        else f"{button.capitalize()}-clicked"
    )
    held = f" with {'+'.join(modifiers)}" if modifiers else ""
    report(call, tab, f"{how} {ref} on tab {tab.id}{held}.", result, follow=followNewTab, ref=ref)


async def browser_type(
    call: Call,
    tab: Tab,
    ref: RefArg,
    text: Annotated[str, Field(description="Replaces the field's text.")],
    tabId: TabIdArg = None,
    submit: Annotated[bool, Field(description="Press Enter after.")] = False,
    slowly: Annotated[
        bool,
        Field(description="Key by key (at most 2000 characters)."),
    ] = False,
) -> None:
    result = await type_text(tab, ref, text, submit=submit, slowly=slowly)
    if result.stopped and slowly:
        nor = ", nor Enter pressed" if submit else ""
        done = (
            f"Typing {quoted(text)} into {ref} on tab {tab.id} stopped at a dialog it opened: the keys after the "
            f"one that opened it were not typed{nor}."
        )
    elif result.stopped:
        done = f"Typed {quoted(text)} into {ref} on tab {tab.id}; a dialog it opened stopped it before Enter was pressed."
    else:
        done = f"Typed {quoted(text)} into {ref} on tab {tab.id}{' and pressed Enter' if submit else ''}."
    report(call, tab, done, result, ref=ref)


async def browser_press_key(
    call: Call,
    tab: Tab,
    key: Annotated[
        str,
        Field(description="e.g. Enter, ArrowDown, Control+a (Ctrl, Cmd, Esc work too)."),
    ],
    ref: OptionalRefArg = None,
    tabId: TabIdArg = None,
) -> None:
    result = await press_key(tab, key, ref=ref)
    where = f" on {ref}" if ref else ""
    report(call, tab, f"Pressed {result.value}{where} on tab {tab.id}.", result, key=result.value)


async def browser_select_option(
    call: Call,
    tab: Tab,
    ref: RefArg,
    values: Annotated[list[str], Field(min_length=1, description="Values or labels.")],
    tabId: TabIdArg = None,
) -> None:
    result = await select_option(tab, ref, values)
    selected = list(result.value or [])
    report(call, tab, f"Selected {selected} in {ref} on tab {tab.id}.", result, ref=ref, selected=selected)


async def browser_hover(call: Call, tab: Tab, ref: RefArg, tabId: TabIdArg = None) -> None:
    result = await hover(tab, ref)
    report(call, tab, f"Hovered over {ref} on tab {tab.id}.", result, ref=ref)


async def browser_wait_for(
    call: Call,
    tab: Tab,
    text: Annotated[str | None, Field(description="Until visible.")] = None,
    textGone: Annotated[str | None, Field(description="Until gone.")] = None,
    time: Annotated[float | None, Field(ge=0, le=30, description="Seconds.")] = None,
    tabId: TabIdArg = None,
) -> None:
    if text is None and textGone is None and time is None:
        raise ValueError("browser_wait_for needs 'text', 'textGone' or 'time': what to wait for.")
    waited = describe_wait(text=text, text_gone=textGone, time=time)
    result = await call.with_progress(
        wait_for(tab, text=text, text_gone=textGone, time=time),
        total=time if text is None and textGone is None else None,
        message=f"waiting for {waited} on tab {tab.id}",
    )
    if result.dialog is None:
        report(call, tab, f"Waited for {waited} on tab {tab.id}.", result, waited=True)
        return
    # The dialog stopped the page, and the wait with it: what it waited for has not come to pass.
    report(
        call,
        tab,
        f"The wait for {waited} on tab {tab.id} ended before {'its time was up' if text is None and textGone is None else 'it came'}: "
        "a dialog stopped the page.",
        result,
        waited=True,
        met=False,
    )


_ACTS = ToolAnnotations(destructive_hint=True, open_world_hint=True)

TOOLS = [
    ToolSpec(
        "browser_click",
        browser_click,
        "Click an element. Tabs it opens do not become active unless followNewTab.",
        _ACTS.model_copy(update={"title": "Click"}),
        tab=True,
    ),
    ToolSpec(
        "browser_type",
        browser_type,
        "Type text into an editable element.",
        _ACTS.model_copy(update={"title": "Type text"}),
        tab=True,
        secret_args=("text",),
    ),
    ToolSpec(
        "browser_press_key",
        browser_press_key,
        "Press a key or combination (on ref, else where the focus is).",
        _ACTS.model_copy(update={"title": "Press a key"}),
        tab=True,
    ),
    ToolSpec(
        "browser_select_option",
        browser_select_option,
        "Select options of a <select>.",
        _ACTS.model_copy(update={"title": "Select options"}),
        tab=True,
    ),
    ToolSpec(
        "browser_hover",
        browser_hover,
        "Hover over an element.",
        _ACTS.model_copy(update={"title": "Hover"}),
        tab=True,
    ),
    ToolSpec(
        "browser_wait_for",
        browser_wait_for,
        "Wait for text to appear or go, or some seconds.",
        ToolAnnotations(title="Wait", read_only_hint=True, open_world_hint=True),
        tab=True,
    ),
]
