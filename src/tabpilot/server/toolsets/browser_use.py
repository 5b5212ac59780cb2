"""`--tools browser-use`: browser-use's MCP tools (seed 000_aeec8e9206fa5d64), without its tab bug.

Tools and texts follow browser-use's MCP server: `browser_navigate(url, new_tab)` ("Navigated to:
{url}", "Opened new tab with URL: {url}"), `browser_click(index, new_tab)` ("Clicked element
{index}"), `browser_type(index, text)` ("Typed '{text}' into element {index}"),
`browser_get_state(include_screenshot)` (JSON: url, title, tabs, interactive_elements; the
screenshot as image content), `browser_list_tabs` (JSON list of {tab_id, url, title}),
`browser_switch_tab(tab_id)` ("Switched to tab {tab_id}: {url}"; "Tab {tab_id} was the active tab
already: {url}" when it was), `browser_close_tab(tab_id)`
("Closed tab # {tab_id}, now on {url}"), `browser_go_back` ("Navigated back") and
`browser_scroll(direction)` ("Scrolled {direction}"). Errors start with "Error: " as there, and
come back with `isError: true`.

The seed's bug cannot happen: `browser_get_state` lists every tab WITH `tab_id` and
`parent_tab_id`, the same ids `browser_list_tabs` gives and `browser_switch_tab` and
`browser_close_tab` take.

Tab ids: browser-use shows the last 4 characters of the CDP target id. Here `tab_id` is tabpilot's
stable integer id as a string ("3"). Agents copy `tab_id` from one response into the next call and
never parse it, so any short string works for them; a string keeps the type they were written
for, while the number stays short, never collides (4-character suffixes can), never changes, and
is the same id every other tool set uses. Both "3" and 3 are accepted, and so is the full CDP
target id.

Interactive elements are numbered by `index` (1, 2, ...) in page order, as browser-use does, and
come from the accessibility snapshot (links, buttons, fields, and other elements the page makes
clickable). Indexes belong to the latest `browser_get_state`: they act on that state's tab only
while it is the active tab; after a switch, a navigation or a page change the agent is told to
get the state again, instead of clicking whatever now has that number. A state whose JSON is over
the server's `--max-snapshot-chars` lists the elements that fit (`interactive_elements_cut` says
how many went; their indexes work); the optional `full=true`, beyond browser-use, lists them all.

Beyond browser-use, an action that opens a tab says so on a line of its own
(`New tab: tab_id "5" (parent_tab_id "3") ...`): the first line keeps browser-use's text. A tab a
page opens after the answer (on a timer) is named so by the next action's answer. What the set adds
to browser-use's texts names a tab by its tab_id, as there (`_tab_named`), tabpilot's notes and
errors too (`There is no page to go back to in the history of tab_id "5"`, `Clicking element 3 on
tab_id "5" failed: ...`): the tabs an error is about are known from its structured fields, and what
it quotes of a page (a dialog's message, an element's HTML) stays as the page said it
(`advice.tabs_renamed`).
JavaScript dialogs are accepted, as browser-use's own watchdog does (this set has no dialog tool),
and each is named on a line of its own (`Accepted a confirm dialog: 'sure?'`; in
`browser_get_state`'s JSON, under `accepted_dialogs`), also one that holds
`browser_navigate` or `browser_go_back` up (a page that asks before it is left).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal
from urllib.parse import urljoin

from mcp.types import ToolAnnotations
from pydantic import Field, StrictStr

from tabpilot import (
    ActionError,
    Snapshot,
    StaleRefError,
    Tab,
    TabInfo,
    TabManager,
    TabNotFoundError,
    TabpilotError,
    click,
    evaluate,
    normalize_url,
    screenshot,
    type_text,
)

from ..advice import ToolCalls, error_text, short, tab_limit_closed, tabs_renamed
from ..tools.base import Call, ToolSpec, WholeInt, activate_tab, open_tab
from ..tools.screenshot import MAX_SIDE
from ._common import (
    NOTHING_DONE,
    SnapshotElement,
    accept_dialog,
    capped,
    closes_to_tell,
    current_tab_left,
    describe_elements,
    dialog_note,
    interactive_elements,
    left_during,
    loading_note,
    navigate_current,
    note_lines,
    nothing_done_on,
    opened_untold,
    shown_title,
    shown_url,
    way_back_told,
    why_gone,
)


def _tab_named(tab_id: int | str) -> str:
    """A tab in this set's own words: by the tab_id its calls take and its state and lists give
    (`tab_id "5"`). browser-use's own texts keep theirs ("Switched to tab 5", "Closed tab # 5")."""
    return f'tab_id "{tab_id}"'


CALLS = ToolCalls(
    read=lambda tab: "browser_get_state",
    list_tabs="browser_list_tabs",
    close_tab=lambda tab: f'browser_close_tab(tab_id="{tab}")',
    close_tabs="browser_close_tab",
    open_tab="browser_navigate(url=..., new_tab=true)",
    handle_dialog=None,  # dialogs are accepted by themselves
    forms=False,
    select=False,
    element="an index",
    activate=lambda tab: f'browser_switch_tab(tab_id="{tab}")',
    plain_error=lambda tool, text: f"Error: {text}",
    tab_named=_tab_named,
)
"""This set's calls, as an error's advice names them."""


@dataclass(slots=True)
class BrowserUseState:
    """Per MCP session: the tab of the latest browser_get_state and its indexes."""

    tab_id: int | None = None
    elements: dict[int, SnapshotElement] = field(default_factory=dict)
    parents: dict[int, int] = field(default_factory=dict)
    """The tab each tab `browser_click(new_tab=true)` opened was clicked in: the server opens the
    link's URL in a tab of its own, which the browser gives no opener."""


TabIdParam = Annotated[
    StrictStr | WholeInt,
    Field(description="Tab ID (tab_id from browser_get_state or browser_list_tabs) of the tab"),
]


def _id_given(tab_id: object, cap: int = 40) -> str:
    """A tab_id a caller gave, as `_tab_named` names tabs, cut if long (a huge id is not echoed)."""
    given = str(tab_id)
    return _tab_named(given) if len(given) <= cap else f"{_tab_named(given[:cap])}… ({len(given)} characters)"


def _in_own_words(note: str, tab_id: int) -> str:
    """A note of tabpilot's about tab `tab_id` (where a navigation left it, the page it is
    loading) with the tab named as this set names tabs (`_tab_named`), not `tab 5`, as its errors
    name theirs (`CALLS.tab_named`)."""
    return tabs_renamed(note, {tab_id}, _tab_named)


class _UnknownIndex(TabpilotError):
    pass


def tab_entry(info: TabInfo, parents: Mapping[int, int] | None = None) -> dict[str, Any]:
    """A tab as browser_get_state lists it (TabInfo serialised by alias, as the seed's fix does);
    `parents`: the tab each tab opened by a click with new_tab=true was clicked in."""
    parent = info.opener_id if info.opener_id is not None else (parents or {}).get(info.id)
    return {
        "url": short(shown_url(info)),  # a 100k URL was in every state and list, whole, twice (as its title)
        "title": short(shown_title(info), 200),
        "tab_id": str(info.id),
        "parent_tab_id": str(parent) if parent is not None else None,
    }


def list_tabs_json(tabs: Sequence[TabInfo]) -> str:
    return json.dumps(
        [
            {"tab_id": str(t.id), "url": short(shown_url(t)), "title": short(shown_title(t), 200)}
            for t in tabs
        ],
        indent=2,
    )


def typed_text(index: int, text: str) -> str:
    """browser-use's answer to typing: likely e-mails and tokens are not echoed back."""
    sensitive = len(text) >= 6 and (
        ("@" in text and "." in text.split("@")[-1])
        or (
            len(text) >= 16
            and any(c.isdigit() for c in text)
            and any(c.isalpha() for c in text)
            and any(c in ".-_" for c in text)
        )
    )
    if sensitive:
        kind = "email" if "@" in text and "." in text.split("@")[-1] else "credential"
        return f"Typed <{kind}> into element {index}"
    return f"Typed '{text}' into element {index}"


def new_tab_lines(manager: TabManager, tab_ids: Sequence[int], *, active_id: int | None) -> str:
    """A line per tab an action opened. One that closed again (by itself, or the tab limit at
    once) is told so, with the way to make room, never offered to switch to."""
    infos = {t.id: t for t in manager.tabs()}
    closed_by_cap = capped(manager, (t for t in tab_ids if t not in infos))
    lines = []
    for tab_id in tab_ids:
        info = infos.get(tab_id)
        if info is None:
            said = f"but {tab_limit_closed(manager, CALLS)}" if tab_id in closed_by_cap else "closed again"
            lines.append(f"\nNew tab: {_tab_named(tab_id)}, {said}.")
            continue
        parent = f' (parent_tab_id "{info.opener_id}")' if info.opener_id is not None else ""
        tail = (
            "now active."
            if info.id == active_id
            else f"not active: call browser_switch_tab with {_tab_named(info.id)} to use it."
        )
        lines.append(f"\nNew tab: {_tab_named(info.id)}{parent} {_url_shown(shown_url(info))}, {tail}")
    return "".join(lines)


def _opens_a_page(url: str) -> bool:
    """Whether a tab can load `url`: not a script (`javascript:`) nor what the browser hands to
    another program (`mailto:`)."""
    if url.lstrip().lower().startswith("javascript:"):
        return False
    try:
        normalize_url(url)
    except ValueError:
        return False
    return True


def _url_shown(url: str) -> str:
    """A tab's URL in an answer: cut if long; a tab whose first page has not come yet has none."""
    return short(url) if url else "(loading, no URL yet)"


async def _active(call: Call, *, acting: str | None = None) -> tuple[Tab, str]:
    """The active tab, with a dialog that blocks it accepted (browser-use accepts them by itself).
    `acting`: for an action, refused once when the active tab left since the previous answer
    (`current_tab_left`), with this said of what was not done."""
    if acting is not None and await current_tab_left(call):
        raise ValueError(await _left_said(call, acting))
    tab = call.tab(None)
    return tab, await accept_dialog(tab, _tab_named)


async def _left_said(call: Call, done: str) -> str:
    """An action refused because the current tab left: the set's words of its leaving, then
    `done` (what was not done, and what to do instead)."""
    return f"{(await _closed_lines(call)).strip()}\n{done}"


async def _closed_lines(call: Call, *, told: Sequence[int] = ()) -> str:
    """A line per tab a page opened since the previous answer that no answer named (a page's
    timer opened it after its click was answered), and per tab closed by no call since then (the
    action's own tab, closed by its page's window.close()), with the tab that is active now:
    later calls act on that one. `told`: tabs the answer already names (a click's popups)."""
    closed = await closes_to_tell(call, told=told)
    opened = [e.tab_id for e in opened_untold(call, told=told) if e.tab_id is not None]
    if not closed and not opened:
        return ""  # the usual answer: no list of the tabs to build
    active_id = None
    with contextlib.suppress(TabpilotError):  # no tab is active (the last one closed)
        active_id = call.manager.active_tab().id
    lines = new_tab_lines(call.manager, opened, active_id=active_id)
    if not closed:
        return lines
    urls = {t.id: t.url for t in call.manager.tabs()}
    closes = []
    for event, left in closed:
        line = f"Tab # {event.tab_id} {left}"
        now = event.data.get("activeTabId")
        if event.data.get("activeChanged") and now in urls:
            line += f", now on {_tab_named(now)}: {short(urls[now])}"
        closes.append(line)
    return lines + note_lines(*closes)


def _index_done(index: int) -> str:
    """What an action on element `index` refused for its tab's leaving says: the index is that tab's."""
    return nothing_done_on(f"element {index}", "browser_get_state", "indexes")


def _element(call: Call, tab: Tab, index: int) -> SnapshotElement:
    state = call.session.state_for(BrowserUseState)
    state_tab, elements = state.tab_id, state.elements
    if state_tab is None:
        raise _UnknownIndex(
            f"Element with index {index} not found: no state yet. Call browser_get_state; indexes come "
            "from its interactive_elements."
        )
    if state_tab != tab.id:
        raise _UnknownIndex(
            f"Element with index {index} not found: indexes are from the state of {_tab_named(state_tab)}, "
            f"and the active tab is {_tab_named(tab.id)}. Call browser_get_state to get this tab's elements."
        )
    element = elements.get(index)
    if element is None:
        listed = f"has indexes 1 to {len(elements)}" if elements else "listed no interactive elements"
        raise _UnknownIndex(
            f"Element with index {index} not found: the latest browser_get_state {listed}. "
            "Call browser_get_state again if the page changed."
        )
    return element


def _stale(index: int) -> str:
    return (
        f"Element with index {index} is no longer on the page (it changed since browser_get_state). "
        "Call browser_get_state again and use an index from it."
    )


def _not_found(manager: TabManager, tab_id: object, exc: TabpilotError) -> str:
    """An id that names no open tab, with why its tab is gone when that is known, and the open tabs;
    in the library's words where they say how to go on and this set's would not (`way_back_told`),
    or where the error is another."""
    if not isinstance(exc, TabNotFoundError) or way_back_told(exc):
        return error_text(exc, CALLS)
    tabs = (
        "; ".join(
            f"{_tab_named(t.id)}: {short(shown_title(t), 200) or '(no title)'} ({short(t.url)})"
            for t in manager.tabs()
        )
        or "none"
    )
    return (
        f"No tab with {_id_given(tab_id)}.{why_gone(exc)} Open tabs: {tabs}. "
        "Use a tab_id from browser_list_tabs or browser_get_state."
    )


async def browser_get_state(
    call: Call,
    include_screenshot: Annotated[
        bool, Field(description="Whether to include a screenshot of the current page")
    ] = False,
    full: Annotated[
        bool, Field(description="List every element, however many (cut at the server's limit otherwise)")
    ] = False,
) -> None:
    manager = call.manager
    tab, snap, elements, details, accepted = await _read_state(call)
    await manager.refresh()  # the other tabs' titles, as browser_list_tabs gives them
    state = call.session.state_for(BrowserUseState)
    state.tab_id, state.elements = tab.id, dict(enumerate(elements, start=1))
    listed = []
    for index, found in enumerate(details, start=1):
        entry: dict[str, Any] = {"index": index, "tag": found["tag"], "text": found["text"]}
        if found.get("placeholder"):
            entry["placeholder"] = found["placeholder"]
        if found.get("href"):
            entry["href"] = found["href"]
        listed.append(entry)
    result = {
        "url": short(snap.url),
        "title": short(snap.title, 200),
        "tabs": [tab_entry(i, state.parents) for i in manager.tabs()],
        "interactive_elements": listed,
    }
    if accepted:  # beyond browser-use's keys: what the page asked, and was answered
        result["accepted_dialogs"] = accepted
    if not full:
        _cut_elements(result, call.session.config.max_snapshot_chars)
    if include_screenshot:
        # A viewport can be wider than a model takes a picture (--viewport-size up to 10000).
        call.response.add_image(await screenshot(tab, max_width=MAX_SIDE, max_height=MAX_SIDE))
    call.response.plain(json.dumps(result, indent=2), result)


CUT_KEY = "interactive_elements_cut"
"""Beyond browser-use's keys: what a state over the server's limit left out, and how to see it."""


def _cut_elements(result: dict[str, Any], limit: int) -> None:
    """`result`'s interactive elements cut to those its JSON lists within `limit` characters,
    with `CUT_KEY` saying how many went: a page of a thousand links is over what hosts take from a
    tool. Every index still works (the whole page was read): the cut is only of what is listed."""
    listed: list[dict[str, Any]] = result["interactive_elements"]
    whole = len(json.dumps(result, indent=2))
    if whole <= limit:
        return

    def note(shown: int) -> str:
        return (
            f"Cut at {limit:,} characters, the server's limit: {len(listed) - shown:,} more elements are "
            f"left out, of {len(listed):,} in all ({whole:,} characters); their indexes work too. "
            "browser_get_state(full=true) lists them all."
        )

    shown = len(listed)
    size = whole + len(json.dumps(note(0))) + len(CUT_KEY) + 8  # the key's line
    while shown and size > limit:  # each element is its JSON indented by 4 more, and ",\n"
        entry = json.dumps(listed[shown - 1], indent=2)
        size -= len(entry) + 4 * (entry.count("\n") + 1) + 2
        shown -= 1
    result["interactive_elements"] = listed[:shown]
    result[CUT_KEY] = note(shown)


async def _read_state(
    call: Call,
) -> tuple[Tab, Snapshot, list[SnapshotElement], list[dict[str, Any]], list[str]]:
    """The active tab, its snapshot, its elements and the dialogs accepted to read it (a dialog
    blocked it). A tab that closes while it is read (the user closed it) is not described as if
    open: the tab active then is read instead, once."""
    accepted: list[str] = []
    for attempt in range(2):
        tab, note = await _active(call)
        accepted += [note] if note else []
        await call.manager.settle(grace=0)
        try:
            snap = await tab.snapshot()
            elements = interactive_elements(snap.text)
            details = await describe_elements(tab, elements)
        except TabpilotError:
            if attempt or not tab.is_gone:
                raise
            continue
        if not tab.is_gone:
            return tab, snap, elements, details, accepted
    raise ActionError.tab_gone(f"Reading the state of tab {tab.id}", f"tab {tab.id} closed", tab_id=tab.id)


async def browser_list_tabs(call: Call) -> None:
    manager = call.manager
    await manager.refresh()  # titles a page set since its load, as browser_tabs list reads them

    def listing() -> tuple[str, dict[str, Any]]:
        listed = list_tabs_json(manager.tabs())
        return listed, {"tabs": json.loads(listed)}

    call.response.plain_later(listing)


async def browser_switch_tab(call: Call, tab_id: TabIdParam) -> None:
    manager = call.manager
    try:
        tab = call.tab(tab_id)
        already = activate_tab(manager, tab)
    except TabpilotError as exc:
        call.response.error(_not_found(manager, tab_id, exc))
        return
    done = f"Tab {tab.id} was the active tab already" if already else f"Switched to tab {tab.id}"
    call.response.plain(f"{done}: {_url_shown(shown_url(manager.info(tab)))}")


async def browser_close_tab(call: Call, tab_id: TabIdParam) -> None:
    manager = call.manager
    try:
        tab = call.tab(tab_id)
    except TabpilotError as exc:
        call.response.error(_not_found(manager, tab_id, exc))
        return
    closed = await manager.close_tab(tab.id)
    if closed.active_tab_id is None:  # its browser went away, or it was the last in the user's browser
        after = (
            "its browser went away meanwhile"
            if closed.instance_gone
            else "no tab is open now: browser_navigate(url=..., new_tab=true) opens one"
        )
        call.response.plain(f"Closed tab # {closed.closed_tab_id}; {after}")
        return
    # The URL as the lists give it: a tab whose first page is still on its way has none of its own yet.
    now_on = _url_shown(shown_url(manager.info(manager.tab(closed.active_tab_id))))
    call.response.plain(f"Closed tab # {closed.closed_tab_id}, now on {now_on}")


async def browser_navigate(
    call: Call,
    url: Annotated[str, Field(description="The URL to navigate to")],
    new_tab: Annotated[bool, Field(description="Whether to open in a new tab")] = False,
) -> None:
    if not url.strip():
        call.response.error("browser_navigate needs url: the address to load, e.g. https://example.com.")
        return
    if new_tab:
        opened = await open_tab(call, url, CALLS)
        gone = opened.closed_since()
        if gone is not None:  # an error: the agent reads tab_id and would go on with a closed tab
            call.response.error(f"Opened new tab {_tab_named(opened.tab.id)}, but {gone}.")
            return
        if opened.failed is not None:
            call.response.error(
                f"Opened new tab {_tab_named(opened.tab.id)} (now active), but loading failed: {opened.failed}"
            )
            return
        call.response.plain(
            f"Opened new tab with URL: {short(url.strip())}\nNew tab: {_tab_named(opened.tab.id)}, now active."
            # Its page still loading, or an HTTP error status.
            + note_lines(_in_own_words(opened.note, opened.tab.id))
            + await _closed_lines(call)  # a tab the tab limit closed to make room
        )
        return
    tab, note = await _active(call, acting=NOTHING_DONE)
    result, accepted = await navigate_current(call, tab, "goto", url, left_said=_left_said, named=_tab_named)
    call.response.plain(
        f"Navigated to: {short(url.strip())}"
        # What the browser-use text leaves out: a file downloaded instead, an HTTP error status.
        + note_lines(note, *accepted, _in_own_words(result.note, tab.id))
        + await _closed_lines(call)
    )


def _failed(exc: TabpilotError, index: int, element: SnapshotElement | None = None) -> str:
    """An error's text, the element named by its index (this set never shows the ref behind it)."""
    said = error_text(exc, CALLS)
    return (
        re.sub(rf"\b(?:element )?{re.escape(element.ref)}\b", f"element {index}", said) if element else said
    )


_RESOLVED_HREF = "(el) => typeof el.href === 'string' && el.href ? el.href : null"


async def _link_url(tab: Tab, element: SnapshotElement) -> str:
    """Where a link leads, as the browser resolves it: against its own document's URL and `<base>`
    (a link in a frame, a page with `<base href>`); the snapshot's `/url:` is the attribute as
    written. Checks that the link is still on the page (StaleRefError if not), as a click does."""
    link = await tab.element(element.ref)
    try:
        resolved = await link.evaluate(_RESOLVED_HREF, timeout=2)
    except Exception:  # gone meanwhile, or no answer: as the page's URL reads it
        resolved = None
    return resolved if isinstance(resolved, str) else urljoin(tab.url, element.href or "")


async def browser_click(
    call: Call,
    index: Annotated[int, Field(description="The index of the element to click (from browser_get_state)")],
    new_tab: Annotated[
        bool, Field(description="Whether to open any resulting navigation in a new tab")
    ] = False,
) -> None:
    manager = call.manager
    element: SnapshotElement | None = None
    try:
        tab, note = await _active(call, acting=_index_done(index))
        element = _element(call, tab, index)
        if new_tab and element.href:
            full_url = await _link_url(tab, element)
            if not _opens_a_page(full_url):  # javascript:, mailto: and the like: a click does what they do
                call.response.error(
                    f"Element {index} links to {short(full_url)}, which opens no page in a tab: click it "
                    "without new_tab."
                )
                return
            opened = await open_tab(call, full_url, CALLS)
            call.session.state_for(BrowserUseState).parents[opened.tab.id] = tab.id
            gone = opened.closed_since()
            if gone is not None:
                call.response.error(
                    f"Opened element {index} in new tab {_tab_named(opened.tab.id)}, but {gone}."
                )
                return
            if opened.failed is not None:
                call.response.error(
                    f"Opened element {index} in new tab {_tab_named(opened.tab.id)} (now active), but loading "
                    f"failed: {opened.failed}"
                )
                return
            call.response.plain(
                f"Clicked element {index} and opened in new tab {full_url[:20]}..."
                + note_lines(
                    # The URL in full (the line above cuts it at 20 characters, as browser-use does).
                    f'New tab: {_tab_named(opened.tab.id)} (parent_tab_id "{tab.id}") {short(full_url)}, now active.',
                    _in_own_words(opened.note, opened.tab.id),
                    note,
                )
                + await _closed_lines(call)
            )
            return
        result = await click(tab, element.ref, dialogs="accept")
    except StaleRefError:
        call.response.error(_stale(index))
        return
    except TabpilotError as exc:
        if await left_during(call, tab):
            call.response.error(await _left_said(call, _index_done(index)))
            return
        call.response.error(_failed(exc, index, element))
        return
    text = f"Clicked element {index}"
    if new_tab:
        text += " (new tab not supported for non-link elements)"
    dialogs = [dialog_note(d) for d in result.accepted_dialogs]
    call.response.plain(
        text
        + new_tab_lines(manager, result.opened_tab_ids, active_id=result.followed_tab_id)
        + note_lines(note, *dialogs, _in_own_words(loading_note(result), tab.id))
        + await _closed_lines(call, told=result.opened_tab_ids)
    )


async def browser_type(
    call: Call,
    index: Annotated[int, Field(description="The index of the input element (from browser_get_state)")],
    text: Annotated[str, Field(description="The text to type")],
) -> None:
    tab, note = await _active(call, acting=_index_done(index))
    element = _element(call, tab, index)  # no such index: its own message says what to do
    try:
        result = await type_text(tab, element.ref, text, dialogs="accept")
    except StaleRefError:
        call.response.error(_stale(index))
        return
    except TabpilotError as exc:
        if await left_during(call, tab):
            call.response.error(await _left_said(call, _index_done(index)))
            return
        said = _failed(exc, index, element).removeprefix(
            f"Typing into element {index} on {_tab_named(tab.id)} failed: "
        )
        call.response.error(f"could not type into element {index}: {said}")
        return
    call.response.plain(
        typed_text(index, text)
        + note_lines(note, _in_own_words(loading_note(result), tab.id))
        + await _closed_lines(call)
    )


async def browser_go_back(call: Call) -> None:
    tab, note = await _active(call, acting=NOTHING_DONE)
    result, accepted = await navigate_current(call, tab, "back", left_said=_left_said, named=_tab_named)
    where = _in_own_words(result.note, tab.id)
    if result.stayed and not result.dialog:  # no page to go back to (or a download): it did not
        said = f"Did not navigate back: {where}"
    else:
        said = "Navigated back" + (f" ({where})" if where else "")
    call.response.plain(said + note_lines(note, *accepted) + await _closed_lines(call))


async def browser_scroll(
    call: Call,
    direction: Annotated[Literal["up", "down"], Field(description="Direction to scroll")] = "down",
) -> None:
    tab, note = await _active(call, acting=NOTHING_DONE)
    try:
        await evaluate(tab, f"() => window.scrollBy(0, {500 if direction == 'down' else -500})")
    except TabpilotError as exc:  # said as a scroll: this set has no script tool
        if await left_during(call, tab):
            call.response.error(await _left_said(call, NOTHING_DONE))
            return
        call.response.error(
            error_text(exc, CALLS).replace(
                f"Evaluating on {_tab_named(tab.id)}", f"Scrolling {_tab_named(tab.id)}"
            )
        )
        return
    call.response.plain(f"Scrolled {direction}" + note_lines(note) + await _closed_lines(call))


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "browser_navigate",
        browser_navigate,
        "Navigate to a URL in the browser",
        ToolAnnotations(open_world_hint=True),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_click",
        browser_click,
        "Click an element by index. Use index for elements from browser_get_state.",
        ToolAnnotations(open_world_hint=True),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_type",
        browser_type,
        "Type text into an input field",
        ToolAnnotations(open_world_hint=True),
        secret_args=("text",),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_get_state",
        browser_get_state,
        "Get the current state of the page including all interactive elements and all open tabs "
        "(each with its tab_id and parent_tab_id)",
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_scroll",
        browser_scroll,
        "Scroll the page",
        ToolAnnotations(open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_go_back",
        browser_go_back,
        "Go back to the previous page",
        ToolAnnotations(open_world_hint=True),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_list_tabs",
        browser_list_tabs,
        "List all open tabs",
        ToolAnnotations(read_only_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_switch_tab",
        browser_switch_tab,
        "Switch to a different tab",
        ToolAnnotations(open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "browser_close_tab",
        browser_close_tab,
        "Close a tab",
        ToolAnnotations(destructive_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
]
