"""`--tools pilo`: the tab tools Pilo's proposal asks for (seed 004_64a0cfc0c5cb6d95), on tabpilot.

Pilo's agent works on one "current" tab and reads a snapshot every step; the proposal adds
`switch_tab`, `close_tab`, `list_tabs` and an "Available tabs:" header on that snapshot. Here:

- `get_snapshot()` is that per-step snapshot. Pilo pushes it into the prompt; over MCP the agent
  asks for it, so it is a tool. Its text starts with the header, in the seed's format::

      Available tabs:
      Tab 3 (current): example.com - "Home"
      Tab 4: support.example.com - "Help Center"

  Hosts, not full URLs, as the seed shows (it keeps the prompt short; a URL without a host, such
  as about:blank, is shown whole). `list_tabs()` gives the full URLs. Then come the tab events
  since the previous snapshot (`BROWSER_TAB_OPENED: Tab 4 (opened by Tab 3): <url>`), the page's
  URL and title, and the aria snapshot with refs, cut at the server's `--max-snapshot-chars` as
  `browser_snapshot` is (a page's tree alone can be over what hosts take from a tool); the
  optional `full=true`, beyond the seed, shows all of it.
- New tabs are never switched to (the seed's decision): the click that opened one names it in its
  own response (`BROWSER_TAB_OPENED: ...`), and the next snapshot lists it and reports the event.
- `click(ref)`, `fill(ref, value)` and `goto(url)` act on the current tab, so a Pilo agent can do
  a whole task with this set alone. As the seed says, refs are scoped to the current tab: a ref of
  another tab is refused (tabpilot refs carry their tab, `3e5`, so this is checked, never guessed).
- Tab ids are tabpilot's stable ids as strings ("3"): short, as the seed wants, and the same
  numbers every other tool set uses. Integers are accepted too.
- JavaScript dialogs are accepted and named in the response (`Accepted a confirm dialog: 'sure?'`):
  this set has no dialog tool, and a dialog left open would block the current tab. One that holds
  `goto` up (a page that asks before it is left, an alert as the next page loads) is accepted
  there, and the answer is where the tab is then (`_common.navigate_accepting`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.types import ToolAnnotations
from pydantic import Field, StrictStr

from tabpilot import (
    Tab,
    TabEvent,
    TabInfo,
    TabManager,
    TabNotFoundError,
    TabpilotError,
    id_shown,
    parse_ref,
    type_text,
)
from tabpilot import click as click_ref

from ..advice import ToolCalls, short, tab_limit_closed
from ..response import cut_note, cut_snapshot
from ..tools.base import Call, ToolSpec, WholeInt, activate_tab
from ._common import (
    NOTHING_DONE,
    accept_dialog,
    capped,
    closed_untold,
    current_tab_left,
    dialog_note,
    host_of,
    left_during,
    left_words,
    loading_note,
    navigate_current,
    note_lines,
    nothing_done_on,
    opened_untold,
    page_title,
    shown_url,
    title_pending,
    way_back_told,
    why_gone,
)


@dataclass(slots=True)
class PiloState:
    """Per MCP session: the event sequence number the last snapshot reported up to (None: no snapshot yet)."""

    snapshot_cursor: int | None = None


TabIdParam = Annotated[StrictStr | WholeInt, Field(description="The tab ID from the available tabs list")]


def _page_words(info: TabInfo) -> str:
    """`example.com - "Home"`: a tab's page as this set names it (a page on its way by the host it
    loads). A page that has no title yet because it is still on its way is said to be loading: the
    browser's stand-in (about:blank, the URL) is no title of the page's (`page_title`)."""
    host = host_of(shown_url(info))
    if title_pending(info):
        return f"{host} - (loading, no title yet)"
    words = f'{host} - "{short(page_title(info), 200)}"'
    if _leaving_for(info):  # the page it shows is the one it leaves
        words += f" (loading {short(info.loading_url)})"
    return words


def _leaving_for(info: TabInfo) -> bool:
    """Whether a tab shows a page of its own while it loads another, whose server has not sent it."""
    return bool(info.loading_url) and info.loading_url != shown_url(info)


def available_tabs_text(tabs: Sequence[TabInfo], current_id: int | None) -> str:
    """The snapshot header: `Available tabs:` and `Tab 3 (current): example.com - "Home"` lines."""
    lines = ["Available tabs:"]
    lines += [f"Tab {i.id}{' (current)' if i.id == current_id else ''}: {_page_words(i)}" for i in tabs]
    return "\n".join(lines)


def event_lines(events: Sequence[TabEvent], tabs: Sequence[TabInfo]) -> list[str]:
    """One line per tab opened or closed, in Pilo's event names; urls as the tabs show them now."""
    urls = {t.id: t.url for t in tabs}
    lines: list[str] = []
    for event in events:
        if event.type == "tab_opened":
            opener = event.data.get("openerId")
            by = f" (opened by Tab {opener})" if opener is not None else ""
            url = urls.get(event.tab_id or -1) or event.data.get("url") or "about:blank"
            lines.append(f"BROWSER_TAB_OPENED: Tab {event.tab_id}{by}: {short(url)}")
        elif event.type == "tab_closed":
            lines.append(f"BROWSER_TAB_CLOSED: Tab {event.tab_id}")
    return lines


def list_tabs_result(tabs: Sequence[TabInfo], current_id: int | None) -> dict[str, Any]:
    """The shape the seed gives the tab list: `{activeTabId, tabs: [{id, url, title, isActive}]}`."""
    return {
        "activeTabId": str(current_id) if current_id is not None else None,
        "tabs": [_listed(t, current_id) for t in tabs],
    }


def _listed(info: TabInfo, current_id: int | None) -> dict[str, Any]:
    """A tab in `list_tabs`: its page's title, '' where it has none (yet); beyond the seed's keys,
    `loading: true` for a tab whose page, and so its title, is still on its way (or that shows a
    page while another it loads is on its way)."""
    entry: dict[str, Any] = {
        "id": str(info.id),
        "url": shown_url(info),
        "title": page_title(info),
        "isActive": info.id == current_id,
    }
    if title_pending(info) or _leaving_for(info):
        entry["loading"] = True
    return entry


CALLS = ToolCalls(
    read=lambda tab: "get_snapshot",  # of the current tab, the only one this set acts on
    list_tabs="list_tabs",
    close_tab=lambda tab: f"close_tab(tabId={tab})",
    close_tabs="close_tab",
    open_tab=None,  # tabs are opened by pages only
    handle_dialog=None,  # dialogs are accepted by themselves
    forms=False,
    select=False,
    plain_error=lambda tool, text: f"Error: {text}",
)
"""This set's calls, as an error's advice names them."""


async def _current(call: Call, *, opening: bool = False, acting: str | None = None) -> tuple[Tab, str]:
    """The current tab, with a dialog that blocks it accepted (this set has no dialog tool). With
    no tab open (the user closed the last one in their browser), `opening` (goto) opens one: this
    set has no other way to. `acting`: for an action, refused once when the current tab left since
    the previous answer (`current_tab_left`), with this said of what was not done."""
    if acting is not None and await current_tab_left(call):
        raise ValueError(await _left_said(call, acting))
    instance = call.manager.default_instance
    if instance is not None and instance.state == "open" and not instance.tabs:
        if not opening:
            raise ValueError("No tab is open (its last one was closed): goto(url=...) opens one.")
        return await call.manager.new_tab(), ""
    tab = call.tab(None)
    return tab, await accept_dialog(tab)


def _own_ref(manager: TabManager, tab: Tab, ref: str) -> None:
    ref_tab, _ = parse_ref(ref)
    if ref_tab is not None and ref_tab != tab.id:
        is_open = any(info.id == ref_tab for info in manager.tabs())
        switch = f', or switch_tab("{ref_tab}") first' if is_open else f" (tab {ref_tab} is not open)"
        raise ValueError(
            f"Ref {ref} belongs to tab {ref_tab}, but the current tab is {tab.id}. Element refs are scoped "
            f"to the current tab: use a ref from get_snapshot(){switch}."
        )


def _opened_text(manager: TabManager, events: Sequence[TabEvent], current: int | None) -> str:
    """The tabs a click opened; `current`: the one of them now current (the server follows new
    tabs, `--follow-new-tabs`), else each is not. One that closed again (by itself, or the tab
    limit at once) is told so, never offered to switch to."""
    tabs = manager.tabs()
    open_now = {t.id for t in tabs}
    closed_by_cap = capped(
        manager, (e.tab_id for e in events if e.tab_id is not None and e.tab_id not in open_now)
    )
    said = []
    for event in events:
        for line in event_lines([event], tabs):
            if event.tab_id in open_now:
                tail = (
                    "It is now the current tab."
                    if event.tab_id == current
                    else f'It is not the current tab: call switch_tab with tabId "{event.tab_id}" to use it.'
                )
            elif event.tab_id in closed_by_cap:
                tail = f"But {tab_limit_closed(manager, CALLS)}."
            else:
                tail = "It closed again."
            said.append(f"\n{line}. {tail}")
    return "".join(said)


async def _left_said(call: Call, done: str) -> str:
    """An action refused because the current tab left: the set's words of its leaving, then
    `done` (what was not done, and what to do instead)."""
    return f"{(await _closed_lines(call)).strip()}\n{done}"


async def _closed_lines(call: Call, *, told: Sequence[int] = ()) -> str:
    """A line per tab closed by no call since the previous answer (the current tab, closed by its
    page's window.close() after a click), and which tab is current now: the next calls act on it.
    `told`: tabs the answer already says closed again (a click's popups)."""
    manager = call.manager
    await manager.settle(grace=0)
    closed = closed_untold(call)
    if not closed:
        return ""  # the usual answer: no list of the tabs to build
    tabs = manager.tabs()
    lines = [
        f"{line} ({_how_left(e.data.get('by'))})."
        for e in closed
        if e.tab_id not in told
        for line in event_lines([e], tabs)
    ]
    instance = manager.default_instance
    current = instance.active_tab if instance is not None else None
    if current is not None and any(e.data.get("activeChanged") for e in closed):
        lines.append(f"Current tab: Tab {current.id}: {_page_words(manager.info(current))}.")
    return note_lines(*lines)


def _ref_done(ref: str) -> str:
    """What an action on `ref` refused for its tab's leaving says: the ref is that tab's."""
    return nothing_done_on(f"ref {ref}", "get_snapshot()", "refs")


_CLOSED_BY = {
    "cap": "the tab limit",
    "crash": "the loss of its browser",
    "user": "the user, in their browser",
}
"""A close cause in words where its name says little."""


def _how_left(cause: object) -> str:
    """How a tab left, by its close cause: closed by whom, or gone from the agent but still open."""
    return left_words(cause, f"closed by {_CLOSED_BY.get(str(cause), cause)}")


async def list_tabs(call: Call) -> None:
    manager = call.manager

    def listing() -> tuple[str, dict[str, Any]]:
        tabs = manager.tabs()  # none, once the user closed the last one: an empty list
        result = list_tabs_result(tabs, manager.active_tab().id if tabs else None)
        return json.dumps(result, indent=2), result

    call.response.plain_later(listing)


def _tab(call: Call, tab_id: int | str) -> Tab:
    """The tab `tab_id` names; an unknown id is refused listing the open tabs as Pilo's snapshot
    header does (`Tab 1: host - "title"`), with why the tab is gone when that is known."""
    try:
        return call.tab(tab_id)
    except TabNotFoundError as exc:
        if way_back_told(exc):
            raise  # no tab to list, or the way back is the library's to say
        current = call.manager.default_instance
        active = current.active_tab if current is not None and current.state == "open" else None
        tabs = available_tabs_text(call.manager.tabs(), active.id if active is not None else None)
        raise ValueError(
            f"Tab {id_shown(exc.tab_id if exc.tab_id is not None else tab_id)} not found.{why_gone(exc)}\n{tabs}\n"
            "Use one of these IDs (list_tabs() lists them too)."
        ) from None


async def switch_tab(call: Call, tabId: TabIdParam) -> None:
    tab = _tab(call, tabId)
    done = (
        f"Tab {tab.id} was the current tab already"
        if activate_tab(call.manager, tab)
        else f"Switched to tab {tab.id}"
    )
    words = _page_words(call.manager.info(tab))
    call.response.plain(f"{done}: {words}. The next snapshot will show this tab.")


async def close_tab(call: Call, tabId: TabIdParam) -> None:
    manager = call.manager
    tab = _tab(call, tabId)
    if tab.status == "crashed" and not any(
        t.id != tab.id for t in manager.tabs(tab.instance_id) if not t.users_own
    ):
        # This set opens no tabs: a crashed last tab, kept as the browser's last, would stay a dead
        # end (nothing works on it but its close). A blank tab takes its place.
        await manager.new_tab(instance_id=tab.instance_id)
    closed = await manager.close_tab(tab.id)
    current = closed.active_tab_id
    if current is None:  # its browser went away meanwhile, or it was the last (the user's browser)
        after = (
            "Its browser went away meanwhile; call list_tabs."
            if closed.instance_gone
            else "No tab is open now: goto(url=...) opens one."
        )
        call.response.plain(f"Closed tab {closed.closed_tab_id}. {after}")
        return
    call.response.plain(f"Closed tab {closed.closed_tab_id}. Current tab: {current}.")


async def get_snapshot(
    call: Call,
    full: Annotated[
        bool, Field(description="All of the page, however long (cut at the server's limit otherwise)")
    ] = False,
) -> None:
    manager = call.manager
    tab, note = await _current(call)
    await manager.settle(grace=0)
    await manager.refresh()  # titles a script changed since load: Chromium sends no title events
    try:
        snap = await tab.snapshot()
    except TabpilotError:
        if not tab.is_gone:
            raise
        # Its page closed it while this call began (a popup's window.close() a moment after the
        # click that caused it): the current tab is another one now, and the snapshot is of that.
        await manager.settle(grace=0)
        tab, later = await _current(call)
        note = note or later
        snap = await tab.snapshot()
    tabs = manager.tabs()
    # The first snapshot reports no events: every tab there is already is in its list.
    state = call.session.state_for(PiloState)
    since = manager.events.last_seq if state.snapshot_cursor is None else state.snapshot_cursor
    state.snapshot_cursor = manager.events.last_seq
    parts = [available_tabs_text(tabs, tab.id)]
    events = event_lines(manager.events.history(since=since), tabs) + ([note] if note else [])
    if events:
        parts.append("Tab events since the last snapshot:\n" + "\n".join(events))
    facts: dict[str, Any] = {"tabId": tab.id, "url": snap.url, "title": snap.title}
    limit = call.session.config.max_snapshot_chars
    cut = None if full else cut_snapshot(snap.text, limit)
    tree = snap.text
    if cut is not None:  # a page whose tree alone is over what hosts take from a tool
        tree = f"{cut.text}\n{cut_note(cut, limit, ['get_snapshot(full=true) shows all of it'])}"
        facts["snapshotCut"] = cut.to_dict()
    parts.append(f'Current page (Tab {tab.id}): {short(snap.url)} - "{short(snap.title, 200)}"\n{tree}')
    call.response.plain("\n\n".join(parts), facts)


async def click(
    call: Call, ref: Annotated[str, Field(description="The element ref from the snapshot, e.g. 3e5")]
) -> None:
    manager = call.manager
    tab, note = await _current(call, acting=_ref_done(ref))
    _own_ref(call.manager, tab, ref)
    since = manager.events.last_seq
    try:
        result = await click_ref(tab, ref, dialogs="accept")
    except TabpilotError:
        if await left_during(call, tab):
            raise ValueError(await _left_said(call, _ref_done(ref))) from None
        raise
    dialogs = [dialog_note(d) for d in result.accepted_dialogs]
    opened = [
        e
        for e in manager.events.history(since=since)
        if e.type == "tab_opened" and e.tab_id in result.opened_tab_ids
    ]
    # Settled first: a popup that closes itself as the click returns is told closed in its line.
    closed = await _closed_lines(call, told=result.opened_tab_ids)
    call.response.plain(
        f"Clicked {ref}.{_opened_text(manager, opened, result.followed_tab_id)}"
        + note_lines(note, *dialogs, loading_note(result))
        + closed
    )


async def fill(
    call: Call,
    ref: Annotated[str, Field(description="The element ref from the snapshot, e.g. 3e5")],
    value: Annotated[str, Field(description="The text to put in the field")],
) -> None:
    tab, note = await _current(call, acting=_ref_done(ref))
    _own_ref(call.manager, tab, ref)
    try:
        result = await type_text(tab, ref, value, dialogs="accept")
    except TabpilotError:
        if await left_during(call, tab):
            raise ValueError(await _left_said(call, _ref_done(ref))) from None
        raise
    call.response.plain(
        f"Filled {ref} with {value!r}." + note_lines(note, loading_note(result)) + await _closed_lines(call)
    )


async def goto(
    call: Call, url: Annotated[str, Field(description="The URL to open in the current tab")]
) -> None:
    if not url.strip():
        call.response.error("goto needs url: the address to load, e.g. https://example.com.")
        return
    tab, note = await _current(call, opening=True, acting=NOTHING_DONE)
    result, accepted = await navigate_current(call, tab, "goto", url, left_said=_left_said)
    tail = f" {result.note}" if result.note else ""
    await call.manager.settle(grace=0)  # a tab the page opened as it loaded: named, as a click's
    opened = _opened_text(call.manager, opened_untold(call), None)
    call.response.plain(
        f"Navigated tab {tab.id} to {short(result.url)}.{tail}{opened}"
        + note_lines(note, *accepted)
        + await _closed_lines(call)
    )


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "list_tabs",
        list_tabs,
        "List the open browser tabs: {activeTabId, tabs: [{id, url, title, isActive}]}. The same tabs head "
        "every snapshot (Available tabs).",
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "switch_tab",
        switch_tab,
        "Switch to a different open browser tab. The next snapshot will show the new tab. "
        "Use list_tabs() to see available tabs (or check the available_tabs section "
        "in your page snapshot).",
        ToolAnnotations(open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "close_tab",
        close_tab,
        "Close a browser tab. If closing the active tab, the previously-active tab becomes active.",
        ToolAnnotations(destructive_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "get_snapshot",
        get_snapshot,
        "The page snapshot of the current tab, headed by the Available tabs list (IDs, hosts, titles, "
        "current marker) and the tabs opened or closed since the previous snapshot. Element refs are "
        "scoped to the current tab. When you click a link that opens a new tab, the new tab appears "
        "here; use switch_tab() to go to it, and close tabs you no longer need with close_tab().",
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "click",
        click,
        "Click an element of the current tab by its ref from the latest snapshot. A click that opens a "
        "new tab names it (BROWSER_TAB_OPENED); the new tab is not switched to.",
        ToolAnnotations(open_world_hint=True),
        calls=CALLS,
    ),
    ToolSpec(
        "fill",
        fill,
        "Fill a text field of the current tab (by its ref from the latest snapshot) with a value.",
        ToolAnnotations(open_world_hint=True),
        secret_args=("value",),
        calls=CALLS,
    ),
    ToolSpec(
        "goto",
        goto,
        "Open a URL in the current tab.",
        ToolAnnotations(open_world_hint=True),
        calls=CALLS,
    ),
]
