"""What the compatible tool sets share: reading interactive elements out of a snapshot, accepting
dialogs, URL shortening, and the tabs their pages closed.

Pure functions first (unit-tested without a browser), then the few helpers that touch a tab.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from tabpilot import (
    ActionResult,
    DialogInfo,
    NavigateAction,
    NavigationResult,
    Tab,
    TabEvent,
    TabInfo,
    TabManager,
    TabNotFoundError,
    TabpilotError,
    dialog_noun,
    navigate,
    normalize_url,
    parse_ref,
)

from ..advice import LEFT_OPEN, closed_as, dialog_said, loading_said, short
from ..tools.base import Call, loading_instead

INTERACTIVE_ROLES = frozenset(
    {
        "button",
        "checkbox",
        "combobox",
        "link",
        "listbox",
        "menuitem",
        "menuitemcheckbox",
        "menuitemradio",
        "option",
        "radio",
        "searchbox",
        "slider",
        "spinbutton",
        "switch",
        "tab",
        "textbox",
        "treeitem",
    }
)
"""Roles an agent acts on. Anything else counts only when the page marks it clickable
(`[cursor=pointer]`) and it is not inside an element already listed (a link's inner text)."""

# `- role "name" [attr] [ref=3e5] [cursor=pointer]: text`; the name may hold escaped quotes.
_NODE = re.compile(
    r'^(?P<role>[A-Za-z][\w-]*)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<attrs>(?: \[[^\]]*\])*)(?::(?P<rest>.*))?$'
)
_REF = re.compile(r"\[ref=([^\]]+)\]")


@dataclass(slots=True)
class SnapshotElement:
    """An element of an aria snapshot an agent can act on."""

    ref: str
    """Tab-scoped ref, e.g. `3e5`."""
    role: str
    name: str
    href: str | None = None


def _unquote_yaml_key(text: str) -> str:
    # Playwright quotes a whole node YAML-style when it holds characters YAML would misread.
    if len(text) >= 2 and text[0] == "'" and text.rstrip(":").endswith("'"):
        tail = ":" if text.endswith(":") else ""
        return text.rstrip(":")[1:-1].replace("''", "'") + tail
    return text


def interactive_elements(snapshot_text: str) -> list[SnapshotElement]:
    """The elements of a snapshot an agent can click or type into, in document order."""
    found: list[SnapshotElement] = []
    # (indent, element) of the interactive elements enclosing the current line.
    open_elements: list[tuple[int, SnapshotElement]] = []
    for line in snapshot_text.splitlines():
        stripped = line.lstrip()
        if not stripped.startswith("- "):
            continue
        indent = len(line) - len(stripped)
        while open_elements and open_elements[-1][0] >= indent:
            open_elements.pop()
        body = stripped[2:]
        if body.startswith("/url:"):
            if open_elements and open_elements[-1][0] == indent - 2 and open_elements[-1][1].href is None:
                open_elements[-1][1].href = body[len("/url:") :].strip().strip("\"'")
            continue
        match = _NODE.match(_unquote_yaml_key(body))
        if match is None:
            continue
        attrs = match.group("attrs") or ""
        ref = _REF.search(attrs)
        if ref is None:
            continue
        role = match.group("role")
        pointer = "[cursor=pointer]" in attrs
        if role in INTERACTIVE_ROLES or (pointer and not open_elements):
            name = (match.group("name") or "").replace('\\"', '"')
            if not name and match.group("rest"):
                name = match.group("rest").strip().strip('"')
            element = SnapshotElement(ref=ref.group(1), role=role, name=name)
            found.append(element)
            open_elements.append((indent, element))
    return found


def host_of(url: str) -> str:
    """`example.com` for `https://example.com/a`; URLs without a host (about:blank) stay whole,
    but cut as every answer cuts a long URL (a `data:` URL can be kilobytes)."""
    netloc = urlsplit(url).netloc
    return netloc or short(url)


_DESCRIBE_JS = """(el) => ({
  tag: el.tagName.toLowerCase(),
  text: (el.innerText || '').replace(/\\s+/g, ' ').trim().slice(0, 100),
  placeholder: el.getAttribute('placeholder'),
  href: el.getAttribute('href'),
})"""


async def describe_elements(tab: Tab, elements: list[SnapshotElement]) -> list[dict[str, Any]]:
    """Tag, text, placeholder and href of each element, read from the page in one concurrent batch.

    An element that vanished since the snapshot keeps what the snapshot said about it.
    """

    async def one(element: SnapshotElement) -> dict[str, Any]:
        _, page_ref = parse_ref(element.ref)
        try:
            found: dict[str, Any] = await tab.element_unchecked(page_ref).evaluate(_DESCRIBE_JS, timeout=2)
        except Exception:
            found = {"tag": element.role, "text": "", "placeholder": None, "href": element.href}
        if not found.get("text"):
            found["text"] = element.name[:100]
        return found

    return list(await asyncio.gather(*(one(e) for e in elements)))


async def accept_dialog(tab: Tab, named: Callable[[int], str] = lambda tab_id: f"tab {tab_id}") -> str:
    """Accept a dialog that blocks `tab`, as browser-use does; return a note for the response ('' if none),
    which names the tab that showed it, when another, as `named` does.

    The browser-use and Pilo sets have no dialog tool, so a dialog left open would block their tab
    (its own, or its opener's or popup's: `Tab.blocked_by`).
    """
    holder = tab.blocked_by()
    if holder is None:
        return ""
    note = dialog_note(await holder.handle_dialog(accept=True))
    return note if holder is tab else f"{note} on {named(holder.id)}"


MAX_ACCEPTED = 3
"""Dialogs one navigation of these sets accepts (a page that opens one after another would hold
the answer up for good)."""


async def navigate_accepting(
    tab: Tab,
    action: NavigateAction,
    url: str | None = None,
    *,
    named: Callable[[int], str] = lambda tab_id: f"tab {tab_id}",
) -> tuple[NavigationResult, list[str]]:
    """`navigate`, for the sets that accept dialogs by themselves (they have no dialog tool): a
    dialog that holds the navigation up (a beforeunload dialog asking to leave, an alert as the
    next page loads) is accepted, and the result is where the tab is then, with notes saying what
    was accepted instead of the advice to handle the dialog. A page only slow to come (its server
    has not sent it in time) is no failure, as in a tab these sets open: the result is of the page
    the tab is loading, its note says so (`loading_instead`). A dialog of another tab is named
    as `named` names it (`accept_dialog`)."""
    try:
        result = await navigate(tab, action, url)
    except TabpilotError as exc:
        target = tab.due_url or (normalize_url(url) if url else None)
        loading = loading_instead(exc, tab, target)
        if loading is None:
            raise
        return NavigationResult(tab.id, target or tab.url, None, loading), []
    notes: list[str] = []
    while result.dialog and len(notes) < MAX_ACCEPTED and tab.blocked_by() is not None:
        notes.append(await accept_dialog(tab, named))
        result = NavigationResult(tab.id, tab.url, result.status, dialog=tab.blocked_by() is not None)
    if result.dialog:
        still = f"Tab {tab.id} still shows a dialog; the next call accepts it."
        result = NavigationResult(tab.id, tab.url, result.status, still, dialog=True, stayed=True)
    return result, notes


def dialog_note(info: DialogInfo) -> str:
    return f"Accepted {dialog_noun(info.type)}{dialog_said(info.type, info.message)}"


def shown_url(info: TabInfo) -> str:
    """A tab's URL as these sets list it: for a tab whose first page is still on its way (a popup
    on about:blank, or with no URL yet), the URL it loads, as the default set shows it."""
    if info.loading_url and info.url in ("", "about:blank"):
        return info.loading_url
    return info.url


def shown_title(info: TabInfo) -> str:
    """A tab's title as these sets list it: its page's; for a tab on the browser's error page
    (tabpilot's own lists give that page no title, and mark it), the title the browser gives it,
    which the systems of the seeds read from the browser and the page itself says (a snapshot's
    title), so that a set's list agrees with the page it shows."""
    return error_page_title(info.url) if info.error_page else info.title


def page_title(info: TabInfo) -> str:
    """A tab's title as its page gave it (`shown_title`), or '' where the browser shows a stand-in
    for one: about:blank, or the URL (with or without its scheme) of a page that has none yet, as
    Chromium's tab strip titles a page on its way or one without a `<title>`. Playwright's
    `page.title()`, which Pilo reads, gives '' then."""
    title = shown_title(info)
    if info.error_page:
        return title
    urls = {u for url in (info.url, info.loading_url) if url for u in (url, url.split("://", 1)[-1])}
    return "" if title == "about:blank" or title in urls else title


def title_pending(info: TabInfo) -> bool:
    """Whether a tab has no title of its page's yet because that page is still on its way
    (`page_title` is '' and the tab is loading): its title is not the page's, but to come."""
    return info.status == "loading" and not page_title(info)


def error_page_title(url: str) -> str:
    """The title of Chromium's error page for `url` (components/error_page, `LocalizedError`):
    the host of an http(s) URL, in Unicode; the whole URL of any other."""
    parts = urlsplit(url)
    host = parts.hostname
    if parts.scheme not in ("http", "https") or not host:
        return url
    if ":" in host:  # an IPv6 address, bracketed as in the URL
        return f"[{host}]"
    try:
        return host.encode("ascii").decode("idna")
    except UnicodeError:  # not a name IDNA reads (an empty label): as the URL has it
        return host


def way_back_told(exc: TabNotFoundError) -> bool:
    """Whether the library's words for an unknown tab id say how to go on where a set's own words
    (the id refused, the open tabs listed) would not: no tab is open, the tab's browser still has it
    (lost with the driver), no instance is left, or the tab limit leaves no room for one."""
    return (
        not exc.open_tabs or exc.kept_by is not None or exc.no_instance is not None or exc.no_room is not None
    )


def why_gone(exc: TabpilotError) -> str:
    """Why the tab an unknown id names is gone, to follow the sentence that refuses the id (`. Its
    page closed it.`, with its leading space), when `exc` says (a tab that closed); else ''."""
    return f" {exc.reason}" if isinstance(exc, TabNotFoundError) and exc.reason else ""


def url_of(manager: TabManager, event: TabEvent) -> str:
    """The URL of the tab `event` is of, as these sets list it now (its event's, once it closed)."""
    for info in manager.tabs():
        if info.id == event.tab_id:
            return shown_url(info) or "about:blank"
    return str(event.data.get("url") or "about:blank")


def note_lines(*notes: str) -> str:
    """Notes as lines to append to an answer, each after a line break; empty ones left out."""
    return "".join(f"\n{note}" for note in notes if note)


def loading_note(result: ActionResult) -> str:
    """What the compatible sets say of an action that made its tab load a page whose server had not
    sent it in time ('' when it did not): the action is done; the page is on its way."""
    return "" if result.loading is None else loading_said(result.tab_id, result.loading)


def left_words(cause: object, closed: str) -> str:
    """How a tab that left is told: `closed` (the set's own words for a close by `cause`), or,
    for a tab that stays open where it is, that."""
    return LEFT_OPEN.get(str(cause), closed)


def capped(manager: TabManager, tab_ids: Iterable[int]) -> set[int]:
    """Of `tab_ids` (tabs an action opened that are gone again), those the tab limit closed at once;
    the others closed by themselves."""
    return {
        tab_id
        for tab_id in tab_ids
        for e in manager.events.history(tab_id=tab_id)
        if e.type == "tab_closed" and e.data.get("by") == "cap"
    }


def closed_untold(call: Call) -> list[TabEvent]:
    """Tabs closed since this client's previous answer, not by a tool (their page's window.close(),
    the user, a crash, the tab cap). The compatible sets show no `### Events`: the action that made
    its own tab close, or the next call after a close no call made, says so itself; an answer
    that did not (an error, a state or list call) carries a note of it (`Response.build`)."""
    closed = _closes_since(call)
    # The caller tells them (or has: a click's popups): the answer adds no note of its own.
    call.response.told("tab_closed", *(e.tab_id for e in closed if e.tab_id is not None))
    return closed


def opened_untold(call: Call, *, told: Iterable[int] = ()) -> list[TabEvent]:
    """Tabs a page opened since this client's previous answer (a page's script as it loaded, a
    timer after a click was answered) that no answer named; `told`: tabs the answer names itself
    (a click's popups). The caller names them (the sets' instructions promise that the action's
    answer does): they are taken as told. Settle first: a tab asked for is then announced."""
    said = set(told)
    opened = [
        e
        for e in call.manager.events.history(since=call.session.last_event_seq)
        if e.type == "tab_opened"
        and e.tab_id is not None
        and e.data.get("cause") != "tool"
        and not e.data.get("back")
        and e.tab_id not in said
    ]
    call.response.told("tab_opened", *(e.tab_id for e in opened if e.tab_id is not None))
    return opened


def _closes_since(call: Call) -> list[TabEvent]:
    """`closed_untold`'s events, read only: not taken as told."""
    events = call.manager.events.history(since=call.session.last_event_seq)
    return [e for e in events if e.type == "tab_closed" and e.data.get("by") != "tool"]


async def current_tab_left(call: Call) -> bool:
    """Whether the tab a set's actions work on (the default instance's active tab) closed or left
    the agent since this client's previous answer, by no call (a popup's window.close() on a timer,
    the user): an action without a tab of its own then does nothing and says so. It acted on the
    tab that became current instead, on element indexes or a URL meant for the other one."""
    await call.manager.settle(grace=0)
    default = call.manager.default_instance
    # Read only: an action that goes on tells the closes itself, or its error's note does.
    return default is not None and any(
        e.data.get("activeChanged") and e.instance_id == default.id for e in _closes_since(call)
    )


async def left_during(call: Call, tab: Tab) -> bool:
    """Whether an action on `tab` that failed did so because `tab`, the current tab, closed or
    left the agent as it began (its page's window.close() not yet reported when the call came):
    the set then refuses it as it refuses one that comes after the close (`current_tab_left`),
    in its own words, not with the library's error."""
    return tab.leaving and await current_tab_left(call)


async def navigate_current(
    call: Call,
    tab: Tab,
    action: NavigateAction,
    url: str | None = None,
    *,
    left_said: Callable[[Call, str], Awaitable[str]],
    named: Callable[[int], str] = lambda tab_id: f"tab {tab_id}",
) -> tuple[NavigationResult, list[str]]:
    """`navigate_accepting` on a set's current tab. When the tab closed or left the agent as the
    navigation began (a popup's window.close() on a timer, not yet reported when the call came:
    `left_during`), it is refused in the set's words (`left_said`), as one that comes after the
    close is (`current_tab_left`): nothing was done, and calling again loads the tab current now."""
    try:
        return await navigate_accepting(tab, action, url, named=named)
    except TabpilotError:
        if await left_during(call, tab):
            raise ValueError(await left_said(call, NOTHING_DONE)) from None
        raise


NOTHING_DONE = "Nothing was done: call again to act on it."
"""What an action refused for its current tab's leaving adds to the set's words of the leaving,
for an action that names nothing of the tab that left (a URL, a scroll): calling again works."""


def nothing_done_on(element: str, read: str, elements: str) -> str:
    """`NOTHING_DONE` for an action on an element (`element`: `ref 3e5`, `element 2`) read from the
    tab that left: calling again cannot work, the element being that tab's; `read` (the set's call
    that reads the current tab) gives the current tab's `elements` (`refs`, `indexes`)."""
    return f"Nothing was done: {element} is of the tab that left. Call {read} to get the current tab's {elements}."


async def closes_to_tell(call: Call, *, told: Iterable[int] = ()) -> list[tuple[TabEvent, str]]:
    """`closed_untold` once every close under way is reported, each with how its tab left in words
    (`closed (over the tab limit)`, or that it stays open where it is); `told`: tabs the answer
    already says closed (a click's popups)."""
    await call.manager.settle(grace=0)
    said = set(told)
    return [
        (e, left_words(e.data.get("by"), f"closed ({closed_as(e.data.get('by'), e.data.get('limit'))})"))
        for e in closed_untold(call)
        if e.tab_id not in said
    ]
