"""`--tools foxmcp`: the tab tools of FoxMCP with its exact text formats (seed 003_1c421f5ac2ccda22).

Tools: `tabs_list`, `tabs_create(url, active, pinned)`, `tabs_close(tab_id)`,
`tabs_switch(tab_id)`, `windows_list(populate)`. Each answers with FoxMCP's text only, so an agent
or parser written for FoxMCP reads it unchanged::

    Open tabs (2 found):
    - ID 1: Home - http://127.0.0.1:8000/ (active)
    - ID 2: Page A - http://127.0.0.1:8000/page/a (pinned)

Decisions where the seed is loose:
- Markers follow FoxMCP's code (`" (active)" if active` + `" (pinned)" if pinned`), so a tab that
  is both ends in ` (active) (pinned)`; the seed's hand-written example shows `(active)(pinned)`,
  which FoxMCP itself never printed.
- "No title"/"No URL" stand in for an empty title or URL (a fresh tab has an empty title here,
  where Firefox would report "New Tab").
- `active` is per browser instance, as Firefox's is per window.
- Errors keep FoxMCP's leading words (`Error getting tabs: `, `Error closing tab: `, ...) and are
  followed by what to do next; they come back with `isError: true`.
- Ids are tabpilot's stable tab ids, the same numbers every other tool set uses.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field, StrictStr

from tabpilot import TabInfo, TabManager, TabNotFoundError, TabpilotError, id_shown

from ..advice import ToolCalls, error_text, short
from ..tools.base import Call, ToolSpec, WholeInt, activate_tab, open_tab
from ._common import closes_to_tell, opened_untold, shown_title, shown_url, url_of, why_gone

TabIdParam = Annotated[WholeInt | StrictStr, Field(description="ID of the tab (from tabs_list)")]


def tab_line(info: TabInfo) -> str:
    """`- ID {id}: {title} - {url}` with ` (active)` and ` (pinned)` markers."""
    active = " (active)" if info.active else ""
    pinned = " (pinned)" if info.pinned else ""
    return f"- ID {info.id}: {short(shown_title(info), 200) or 'No title'} - {short(shown_url(info)) or 'No URL'}{active}{pinned}"


def tabs_list_text(tabs: Sequence[TabInfo]) -> str:
    """The text of `tabs_list`: a header and one line per tab, each line ending in a newline."""
    if not tabs:
        empty = {"tabs": [], "debug": {"totalFound": 0, "tabUrls": []}}
        return f"No tabs found. Extension response: {json.dumps(empty)}"
    return f"Open tabs ({len(tabs)} found):\n" + "".join(tab_line(t) + "\n" for t in tabs)


def created_text(info: TabInfo) -> str:
    return f"Created tab: ID {info.id} - {short(shown_title(info), 200) or 'Loading...'} - {short(shown_url(info))}"


def windows_text(manager: TabManager, *, populate: bool) -> str:
    """`Browser windows (N found):` and one line per window (tabs grouped by instance and window)."""
    windows: dict[tuple[str, int | None], list[TabInfo]] = {}
    for info in manager.tabs():
        windows.setdefault((info.instance_id, info.window_id), []).append(info)
    if not windows:
        return "No windows found"
    focused_instance = manager.default_instance
    lines = [f"Browser windows ({len(windows)} found):\n"]
    for (instance_id, window_id), tabs in windows.items():
        size = "?x?"
        first = manager.tab(tabs[0].id)
        viewport = first.handle.viewport if first.is_ready else None
        if viewport:
            size = f"{viewport[0]}x{viewport[1]}"
        focused = (
            focused_instance is not None
            and focused_instance.id == instance_id
            and any(t.active for t in tabs)
        )
        count = str(len(tabs)) if populate else "?"
        wid = window_id if window_id is not None else instance_id
        lines.append(
            f"- ID {wid}: normal window, state: normal, {size}, {count} tabs{' (focused)' if focused else ''}\n"
        )
    return "".join(lines)


def _one_line(text: str) -> str:
    """`text` on one line, as FoxMCP's errors are: each line (less a list's dash) a sentence of its
    own (its lines run together, "Field required Fix them and call again")."""
    parts: list[str] = []
    for line in text.splitlines():
        line = " ".join(line.split()).removeprefix("- ")
        if not line:
            continue
        if parts and not parts[-1].endswith((".", ":", ";", "!", "?")):
            parts[-1] += "."
        parts.append(line)
    return " ".join(parts)


def _problem(manager: TabManager, exc: TabpilotError) -> str:
    # Library errors list the open tabs over several lines; FoxMCP's errors are one line.
    if isinstance(exc, TabNotFoundError):
        ids = ", ".join(str(i.id) for i in manager.tabs()) or "none"
        return f"No tab with ID {id_shown(exc.tab_id)}.{why_gone(exc)} Open tab IDs: {ids}. Call tabs_list to see them."
    return error_text(exc, CALLS)


_DOING = {
    "tabs_list": "getting tabs",
    "tabs_create": "creating tab",
    "tabs_close": "closing tab",
    "tabs_switch": "switching to tab",
    "windows_list": "getting windows",
}
"""FoxMCP's leading words of each tool's errors: `Error creating tab: ...`."""

CALLS = ToolCalls(
    read=None,
    list_tabs="tabs_list",
    close_tab=lambda tab: f"tabs_close(tab_id={tab})",
    close_tabs="tabs_close",
    open_tab="tabs_create(url=...)",
    handle_dialog=None,
    plain_error=lambda tool, text: f"Error {_DOING.get(tool, 'calling ' + tool)}: {_one_line(text)}",
)
"""This set's calls, as an error's advice names them."""


async def tabs_list(call: Call) -> None:
    manager = call.manager
    await manager.refresh()  # titles a page set since its load, as browser_tabs list reads them
    try:
        call.response.plain_later(lambda: (tabs_list_text(manager.tabs()), None))
    except TabpilotError as exc:
        call.response.error(_problem(manager, exc))


async def tabs_create(
    call: Call,
    url: Annotated[str, Field(description="URL to open in the new tab")],
    active: Annotated[bool, Field(description="Whether the tab should be active (default: True)")] = True,
    pinned: Annotated[bool, Field(description="Whether the tab should be pinned (default: False)")] = False,
) -> None:
    manager = call.manager
    opened = await open_tab(call, url, CALLS, background=not active)
    tab = opened.tab
    how = "active" if active else "in the background"
    gone = opened.closed_since()
    if gone is not None:  # an error: the agent reads the ID and would go on with a closed tab
        call.response.error(f"Created tab {tab.id} ({how}), but {gone}.")
        return
    if pinned:
        manager.pin(tab.id)
    if opened.failed is not None:
        call.response.error(f"Created tab {tab.id} ({how}), but loading failed: {opened.failed}")
        return
    await tab.refresh_title()
    # A tab the tab limit closed to make room (--tab-limit-policy close-oldest), or one that closed
    # by itself meanwhile: FoxMCP lists no events, and the next list would only leave it out.
    closed = "".join(f"\nTab {event.tab_id} {left}" for event, left in await closes_to_tell(call))
    # A tab the page opened as it loaded (its script's window.open): FoxMCP's list would only show it.
    closed = (
        "".join(
            f"\nTab {e.tab_id} opened by tab {e.data.get('openerId')}: {short(url_of(manager, e))}"
            for e in opened_untold(call)
        )
        + closed
    )
    said = f"\n{opened.note}" if opened.note else ""  # its page still loading, or an HTTP error status
    call.response.plain(created_text(manager.info(tab)) + said + closed)


async def tabs_close(call: Call, tab_id: TabIdParam) -> None:
    manager = call.manager
    try:
        tab = call.tab(tab_id)
        await manager.close_tab(tab.id)
    except TabpilotError as exc:
        call.response.error(_problem(manager, exc))
        return
    call.response.plain(f"Successfully closed tab {tab.id}")


async def tabs_switch(call: Call, tab_id: TabIdParam) -> None:
    manager = call.manager
    try:
        tab = call.tab(tab_id)
        already = activate_tab(manager, tab)
    except TabpilotError as exc:
        call.response.error(_problem(manager, exc))
        return
    call.response.plain(
        f"Tab {tab.id} was the active tab already" if already else f"Successfully switched to tab {tab.id}"
    )


async def windows_list(
    call: Call,
    populate: Annotated[bool, Field(description="Whether to include tab information for each window")] = True,
) -> None:
    manager = call.manager
    if populate:
        await manager.refresh()  # titles a page set since its load, as browser_tabs list reads them
    call.response.plain_later(lambda: (windows_text(manager, populate=populate), None))


_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)

TOOLS: list[ToolSpec] = [
    ToolSpec(
        "tabs_list",
        tabs_list,
        'List all open browser tabs.\n\nReturns:\n    "Open tabs ({count} found):\n'
        '    - ID {tab_id}: {title} - {url}{status_indicators}"\n\n'
        "Status indicators: (active) for the active tab, (pinned) for pinned tabs.",
        _READ,
        calls=CALLS,
    ),
    ToolSpec(
        "tabs_create",
        tabs_create,
        "Create a new browser tab.\n\nArgs:\n    url: URL to open in the new tab\n"
        "    active: Whether the tab should be active (default: True)\n"
        "    pinned: Whether the tab should be pinned (default: False)",
        ToolAnnotations(open_world_hint=True),
        calls=CALLS,
    ),
    ToolSpec(
        "tabs_close",
        tabs_close,
        "Close a browser tab.\n\nArgs:\n    tab_id: ID of the tab to close",
        ToolAnnotations(destructive_hint=True, open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "tabs_switch",
        tabs_switch,
        "Switch to a specific browser tab.\n\nArgs:\n    tab_id: ID of the tab to switch to",
        ToolAnnotations(open_world_hint=False),
        calls=CALLS,
    ),
    ToolSpec(
        "windows_list",
        windows_list,
        "List all browser windows with their tab counts.\n\nArgs:\n"
        "    populate: Whether to include tab information for each window",
        _READ,
        calls=CALLS,
    ),
]
