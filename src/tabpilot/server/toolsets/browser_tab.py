"""`--tools browser-tab`: the `browser_tab` action tool of seed 001_75a07965934e1a0f, exact shapes.

One tool, `browser_tab(action, instanceId, tabId, keepTabId, url)`; its text content is the JSON of
the seed (two-space indented) and its structured content the same object:

    list          {"tabs": [{"id", "url", "title", "active", "index"}], "activeTabId", "count"}
    new           {"tabId", "url", "title"}, and beyond the seed "note" (its page still loading),
                  "openedTabs" [{"tabId", "openerTabId", "url"}] (tabs its page opened as it
                  loaded) and "closedTabs" [{"tabId", "how"}] (the tab limit closed to make room)
    close         {"success": true, "closedTabId"}
    close_others  {"success": true, "closedCount", "remainingTabId"}
    activate      {"success": true, "activeTabId"}

Tab ids are tabpilot's stable integer ids, so an id from `browser_tab` works in every other tool
set, and a tab id names its tab whatever instance holds it. Without `instanceId`, list and new use
the seed's "first connected instance": the earliest instance still open.
`close_others` keeps pinned tabs and the user's own shared tabs open as well (tabpilot's rule); `remainingTabId` names the kept tab.
Errors come back with `isError: true` and begin with the seed's texts, "Tab not found" and
"Cannot close last tab", followed by what to do next. An argument the action does not use (`tabId`
for new) is refused. A URL that is malformed or refused is refused before a tab opens; a tab whose
URL then fails to load stays open, and the error names it.
"""

from __future__ import annotations

import functools
import json
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import Instance, LastTabError, TabManager, TabNotFoundError, TabpilotError, id_shown

from ..advice import ToolCalls, short
from ..tools.base import Call, OptionalInstanceId, TabIdValue, ToolSpec, open_tab
from ._common import closes_to_tell, opened_untold, shown_title, shown_url, why_gone
from ._common import url_of as _url_of

Action = Literal["list", "new", "close", "close_others", "activate"]


def _call(action: str, **arguments: object) -> str:
    """A call of this set's one tool, spelt as every answer of the set spells it:
    `browser_tab(action='close', tabId=3)`; `...` stands for a value the agent picks."""
    given = "".join(
        f", {name}={'...' if value is ... else repr(value)}"
        for name, value in arguments.items()
        if value is not None
    )
    return f"browser_tab(action={action!r}{given})"


CALLS = ToolCalls(
    read=None,
    list_tabs=_call("list"),
    close_tab=lambda tab: _call("close", tabId=tab),
    close_tabs=f"{_call('close', tabId=...)} or {_call('close_others', keepTabId=...)}",
    open_tab=_call("new", url=...),
    handle_dialog=None,
    plain_error=lambda tool, text: text,  # the seed's errors are their text alone ("Tab not found: ...")
)
"""This set's calls, as an error's advice names them."""


def first_instance(manager: TabManager, instance_id: str | int | None) -> Instance:
    """The instance `instanceId` names; without one, as the seed says, the first connected instance
    (the earliest still open), not tabpilot's default, which moves to the instance of the tab last
    activated. With none open, the default: its error (or its relaunch) says what happened."""
    if instance_id is not None:
        return manager.instance(instance_id)
    return next((i for i in manager.instances if i.state == "open"), None) or manager.instance()


def list_result(manager: TabManager, instance_id: str | int | None) -> dict[str, Any]:
    instance = first_instance(manager, instance_id)
    infos = manager.tabs(instance.id)
    active = instance.active_tab
    return {
        "tabs": [
            {
                "id": i.id,
                "url": short(shown_url(i)),
                "title": short(shown_title(i), 200),
                "active": i.active,
                "index": i.index,
            }
            for i in infos
        ],
        "activeTabId": active.id if active else None,
        "count": len(infos),
    }


def _several(manager: TabManager) -> bool:
    return sum(i.state == "open" for i in manager.instances) > 1


def _tab_not_found(
    manager: TabManager, exc: TabNotFoundError, action: str, instance_id: str | int | None
) -> str:
    tab_id = exc.tab_id
    argument = "keepTabId" if action == "close_others" else "tabId"
    try:
        owner = manager.tab(tab_id) if tab_id is not None else None
    except (TabpilotError, ValueError):
        owner = None
    if owner is not None and instance_id is not None:  # open, but in another instance than the one named
        named = manager.instance(instance_id).id
        return (
            f"Tab not found: tab {owner.id} is not in instance {named}; it is in instance {owner.instance_id}. "
            f"Call {_call(action, **{argument: owner.id}, instanceId=owner.instance_id)}, or leave instanceId "
            "out (tab ids are unique across instances)."
        )
    infos = manager.tabs()
    several = _several(manager)
    ids = ", ".join(f"{i.id} (instance {i.instance_id})" if several else str(i.id) for i in infos) or "none"
    listing = (
        " or ".join(_call("list", instanceId=i.id) for i in manager.instances if i.state == "open")
        if several
        else _call("list")
    )
    return (
        f"Tab not found: no open tab has id {id_shown(tab_id)}.{why_gone(exc)} Open tab ids: {ids}. List tabs to get "
        f"valid IDs ({listing})."
    )


def _last_tab(manager: TabManager, exc: LastTabError) -> str:
    several = _several(manager)
    which = (
        f"the only tab of instance {exc.instance_id} (the other instances' tabs are their own)"
        if several
        else "the only open tab"
    )
    if not exc.room:  # a tab limit of one: no new tab could be opened first
        return (
            f"Cannot close last tab: tab {exc.tab_id} is {which}, and the tab limit leaves no room to "
            "open another first. Keep it open."
        )
    new_tab = _call("new", instanceId=exc.instance_id) if several else _call("new")
    return (
        f"Cannot close last tab: tab {exc.tab_id} is {which}. Open a new tab {'in it ' if several else ''}first "
        f"({new_tab}), then close this one."
    )


async def browser_tab(
    call: Call,
    action: Annotated[Action, Field(description="One of: list, new, close, close_others, activate")],
    instanceId: Annotated[OptionalInstanceId, Field(description="Target browser instance")] = None,
    tabId: Annotated[
        TabIdValue | None, Field(description="Tab ID to operate on (for close, activate)")
    ] = None,
    keepTabId: Annotated[
        TabIdValue | None, Field(description="Tab ID to keep open (for close_others)")
    ] = None,
    url: Annotated[str | None, Field(description="URL to open in new tab (for new)")] = None,
) -> None:
    manager = call.manager
    try:
        result = await _run(call, action, instanceId, tabId, keepTabId, url)
    except TabNotFoundError as exc:
        call.response.error(_tab_not_found(manager, exc, action, instanceId))
        return
    except LastTabError as exc:
        call.response.error(_last_tab(manager, exc))
        return
    if result is not None:
        call.response.plain(json.dumps(result, indent=2), result)


def _listing(manager: TabManager, instance_id: str | int | None) -> tuple[str, dict[str, Any]]:
    result = list_result(manager, instance_id)
    return json.dumps(result, indent=2), result


async def _run(
    call: Call,
    action: Action,
    instance_id: str | int | None,
    tab_id: int | str | None,
    keep_tab_id: int | str | None,
    url: str | None,
) -> dict[str, Any] | None:
    manager = call.manager
    if action == "list":
        await manager.refresh()  # titles a page set since its load, as browser_tabs list reads them
        call.response.plain_later(functools.partial(_listing, manager, instance_id))
        return None
    if action == "new":
        instance = first_instance(manager, instance_id)
        opened = await open_tab(call, url, CALLS, instance_id=instance.id)
        tab = opened.tab
        gone = opened.closed_since()
        if gone is not None:  # an error: the agent reads tabId and would go on with a closed tab
            call.response.error(f"Opened tab {tab.id} in instance {instance.id}, but {gone}.")
            return None
        if opened.failed is not None:
            call.response.error(
                f"Opened tab {tab.id} (now active in instance {instance.id}), but loading failed: {opened.failed}"
            )
            return None
        await tab.refresh_title()
        # A page still on its way: the URL it loads, as the list shows it (not about:blank).
        made: dict[str, Any] = {
            "tabId": tab.id,
            "url": short(shown_url(call.manager.info(tab))),
            "title": short(tab.title, 200),
        }
        if opened.note:  # its page still loading, or an HTTP error status
            made["note"] = opened.note
        # A tab the tab limit closed to make room (close-oldest), or one that closed by itself.
        left = [{"tabId": e.tab_id, "how": how} for e, how in await closes_to_tell(call)]
        # A tab the page opened as it loaded (its script's window.open): the agent would not know it.
        popups = [
            {"tabId": e.tab_id, "openerTabId": e.data.get("openerId"), "url": short(_url_of(manager, e))}
            for e in opened_untold(call)
        ]
        return made | ({"openedTabs": popups} if popups else {}) | ({"closedTabs": left} if left else {})
    if action == "close_others":
        if keep_tab_id is None:
            raise ValueError(
                f"keepTabId is required for {_call(action)}: the tab to keep open. List tabs to get valid IDs "
                f"({CALLS.list_tabs})."
            )
        keep = manager.resolve(keep_tab_id, instance_id=instance_id)
        call.acted_tab = keep
        closed = await manager.close_others(keep.id)
        return {"success": True, "closedCount": len(closed), "remainingTabId": keep.id}
    if tab_id is None:
        raise ValueError(
            f"tabId is required for {_call(action)}. List tabs to get valid IDs ({CALLS.list_tabs})."
        )
    tab = manager.resolve(tab_id, instance_id=instance_id)
    call.acted_tab = tab
    if action == "close":
        result = await manager.close_tab(tab.id)
        return {"success": True, "closedTabId": result.closed_tab_id}
    manager.activate(tab.id)
    return {"success": True, "activeTabId": tab.id}


TOOLS: list[ToolSpec] = [
    ToolSpec(
        "browser_tab",
        browser_tab,
        "Manage browser tabs. List tabs, create new tabs, close tabs, and switch between tabs.\n"
        "Tab IDs are integers, unique and stable until the tab is closed. New tabs are focused "
        "(made active). When you don't specify a tabId in other tools, the active tab is used.",
        ToolAnnotations(destructive_hint=True, open_world_hint=True),
        calls=CALLS,
        action_args={"tabId": ("close", "activate"), "keepTabId": ("close_others",), "url": ("new",)},
    )
]
