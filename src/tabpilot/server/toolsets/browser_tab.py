"""`--tools browser-tab`: the `browser_tab` action tool of seed 001_75a07965934e1a0f, exact shapes.

One tool, `browser_tab(action, instanceId, tabId, keepTabId, url)`; its text content is the JSON of
the seed (two-space indented) and its structured content the same object:

    list          {"tabs": [{"id", "url", "title", "active", "index"}], "activeTabId", "count"}
    new           {"tabId", "url", "title"}
    close         {"success": true, "closedTabId"}
    close_others  {"success": true, "closedCount", "remainingTabId"}
    activate      {"success": true, "activeTabId"}

Tab ids are tabpilot's stable integer ids, so an id from `browser_tab` works in every other tool
set. Without `instanceId` the default instance is used, as the seed's "first connected instance".
`close_others` keeps pinned tabs open as well (tabpilot's rule); `remainingTabId` names the kept tab.
Errors come back with `isError: true` and begin with the seed's texts, "Tab not found" and
"Cannot close last tab", followed by what to do next.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import LastTabError, TabManager, TabNotFoundError, TabpilotError

from ..advice import ToolCalls, error_text
from ..tools.base import Call, InstanceIdValue, TabIdValue, ToolSpec

Action = Literal["list", "new", "close", "close_others", "activate"]


CALLS = ToolCalls(
    read=None,
    list_tabs="browser_tab(action='list')",
    close_tab=lambda tab: f"browser_tab(action='close', tabId={tab})",
    close_tabs="browser_tab action=close or close_others",
    open_tab="browser_tab(action='new', url=...)",
    handle_dialog=None,
)
"""This set's calls, as an error's advice names them."""


def list_result(manager: TabManager, instance_id: str | int | None) -> dict[str, Any]:
    instance = manager.instance(instance_id)
    infos = manager.tabs(instance.id)
    active = instance.active_tab
    return {
        "tabs": [
            {"id": i.id, "url": i.url, "title": i.title, "active": i.active, "index": i.index} for i in infos
        ],
        "activeTabId": active.id if active else None,
        "count": len(infos),
    }


def _tab_not_found(manager: TabManager, tab_id: object) -> str:
    ids = ", ".join(str(i.id) for i in manager.tabs()) or "none"
    return (
        f"Tab not found: no open tab has id {tab_id}. Open tab ids: {ids}. "
        "List tabs to get valid IDs (browser_tab action=list)."
    )


def _last_tab(tab_id: object) -> str:
    return (
        f"Cannot close last tab: tab {tab_id} is the only open tab. Open a new tab first "
        "(browser_tab action=new), then close this one."
    )


async def browser_tab(
    call: Call,
    action: Annotated[Action, Field(description="One of: list, new, close, close_others, activate")],
    instanceId: Annotated[InstanceIdValue | None, Field(description="Target browser instance")] = None,
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
        call.response.plain(_tab_not_found(manager, exc.tab_id), error=True)
        return
    except LastTabError as exc:
        call.response.plain(_last_tab(exc.tab_id), error=True)
        return
    except (TabpilotError, ValueError) as exc:
        call.response.plain(error_text(exc, CALLS), error=True)
        return
    call.response.plain(json.dumps(result, indent=2), result)


async def _run(
    call: Call,
    action: Action,
    instance_id: str | int | None,
    tab_id: int | str | None,
    keep_tab_id: int | str | None,
    url: str | None,
) -> dict[str, Any]:
    manager = call.manager
    if action == "list":
        return list_result(manager, instance_id)
    if action == "new":
        tab = await manager.new_tab(url or None, instance_id=instance_id)
        call.acted_tab = tab
        await tab.refresh_title()
        return {"tabId": tab.id, "url": tab.url, "title": tab.title}
    if action == "close_others":
        if keep_tab_id is None:
            raise ValueError("keepTabId is required for action=close_others (the tab to keep open).")
        keep = manager.resolve(keep_tab_id, instance_id=instance_id)
        call.acted_tab = keep
        closed = await manager.close_others(keep.id)
        return {"success": True, "closedCount": len(closed), "remainingTabId": keep.id}
    if tab_id is None:
        raise ValueError(f"tabId is required for action={action}. List tabs to get valid IDs (action=list).")
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
    )
]
