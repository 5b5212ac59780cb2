"""`browser_tabs`: list, open, close, activate and pin tabs (SPEC 2, the tab contract of SPEC 1).

Result shapes (structured `result`):
- list:          {tabs, activeTabId, count}
- new:           {tabId, url, title}
- close:         {success, closedTabId, activeTabId}
- close_others:  {success, closedCount, remainingTabIds, activeTabId}
- activate:      {success, activeTabId}
- pin / unpin:   {success, tabId, pinned}
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import ExtensionNotConnectedError, InstanceNotFoundError, TabManager

from ..advice import error_text, tab_line
from .base import Call, OptionalInstanceId, TabIdArg, TabIdValue, ToolSpec, activate_tab, open_tab

TabsAction = Literal["list", "new", "close", "close_others", "activate", "pin", "unpin"]


async def browser_tabs(
    call: Call,
    action: Annotated[TabsAction, Field()],
    tabId: TabIdArg = None,
    keepTabId: Annotated[
        TabIdValue | None, Field(description="close_others: the tab to keep. Default: active.")
    ] = None,
    url: Annotated[str | None, Field(description="new: URL to open.")] = None,
    background: Annotated[bool, Field(description="new: do not activate it.")] = False,
    instanceId: Annotated[OptionalInstanceId, Field(description="list/new: the browser instance.")] = None,
) -> None:
    manager = call.manager
    response = call.response
    if action == "list":
        await manager.refresh()  # titles and URLs scripts changed: one round trip per instance
        if instanceId is not None:
            manager.instance(instanceId)  # an unknown instance fails the call here
        # Written when the response is built, as its ### Events and ### Tabs are: a tab that leaves
        # meanwhile (the user closes it) is told gone there and is not listed here.
        # Read once, when the text asks (the facts are asked right before it, at the same moment).
        listing = functools.cache(lambda: _tab_list(manager, instanceId))
        response.result(lambda: listing()[0], lambda: listing()[1])
        if instanceId is None:  # one instance's tabs are listed in the result itself
            response.show_tabs()
    elif action == "new":
        made = await open_tab(call, url, background=background, instance_id=instanceId)
        tab, note, target = made.tab, made.note, bool(url)
        how = "in the background" if background else "and activated it"
        if made.failed is not None:
            # The tab exists; the agent needs its id as much as the reason.
            response.error(f"Opened tab {tab.id} {how}, but loading failed: {made.failed}")
        # A page still on its way: a snapshot (or its title) would wait for it as long again, and
        # the answer would come seconds later with nothing to show; the note says to look later.
        loaded = target and not made.loading
        with_snapshot = loaded and call.session.config.navigate_returns == "snapshot"
        if loaded and not with_snapshot and not tab.is_gone and tab.dialog is None:
            await tab.refresh_title()  # the result promises the loaded page's title
        if made.loading:
            note += f" Take a snapshot of tab {tab.id} in a while."

        def opened() -> str:
            # Written when the response is built: another call may have activated a tab since.
            active = None if background or tab.is_gone else manager.instance_of(tab).active_tab
            since = ""
            if not background and not tab.is_gone and active is not tab:
                since = f"; since then, {f'tab {active.id} became' if active else 'no tab is'} the active tab"
            gone = made.closed_since()
            if gone is not None and made.failed is None:
                return f"Opened tab {tab.id} {how}, but {gone}."
            return f"Opened tab {tab.id} {how}{since}." + (f" {note}" if note else "")

        response.result(opened, {"tabId": tab.id, "url": tab.url, "title": tab.title})
        response.told("tab_opened", tab.id)
        if not background:
            response.told("tab_activated", tab.id)
        # The snapshot reads the title beside the tree: the result's url and title come from it.
        response.set_page(tab, changes=with_snapshot, into_result=True)
    elif action == "close":
        tab = call.tab(tabId)
        closed = await manager.close_tab(tab.id)
        default = manager.default_instance
        if closed.active_tab_id is not None and default is not None and default.id != tab.instance_id:
            # Another instance's: calls without tabId go on in the default instance's active tab.
            front = default.active_tab if default.state == "open" else None
            use = (
                f"; calls without tabId use tab {front.id}, of the default instance {default.id}"
                if front
                else ""
            )
            active = f"Instance {tab.instance_id}'s active tab: {closed.active_tab_id}{use}."
        elif closed.active_tab_id is not None:
            active = f"Active tab: {closed.active_tab_id}."
        elif closed.instance_gone:
            active = f"Its instance {tab.instance_id} went away meanwhile, with its other tabs: list the tabs to see what is open."
        else:  # the agent's last tab in the user's browser, which goes on
            active = (
                f"Instance {tab.instance_id} has no tab open now (its browser stays open): "
                "open one with browser_tabs(action='new', url=...) to go on there."
            )
        response.result(
            f"Closed tab {closed.closed_tab_id}. {active}",
            {"success": True, "closedTabId": closed.closed_tab_id, "activeTabId": closed.active_tab_id},
        )
        response.told("tab_closed", closed.closed_tab_id)
        if closed.active_tab_id is not None:
            response.told("tab_activated", closed.active_tab_id)
    elif action == "close_others":
        keep = call.tab(keepTabId if keepTabId is not None else tabId)
        if keepTabId is not None and tabId is not None and manager.tab(tabId) is not keep:
            raise ValueError(
                f"close_others keeps one tab, but keepTabId={keepTabId!r} and tabId={tabId!r} name different tabs. "
                "Call again with keepTabId only."
            )
        closed_ids = await manager.close_others(keep.id)
        infos = manager.tabs(keep.instance_id)
        remaining = [i.id for i in infos]
        users = [i.id for i in infos if i.users_own and i.id != keep.id]
        left = (
            f" Left the user's own tab{'s' if len(users) != 1 else ''} {', '.join(map(str, users))} open: "
            "close_others never closes those (close one by its id if you must)."
            if users
            else ""
        )
        # Per instance: with several, the answer says whose tabs these were and that the others stay.
        others = [i for i in manager.instances if i.id != keep.instance_id and i.tabs]
        where = f" of instance {keep.instance_id}" if others else ""
        stay = (
            f" The tabs of other instances ({', '.join(i.id for i in others)}) stay open: close_others closes "
            "the tabs of the kept tab's instance."
            if others
            else ""
        )
        response.result(
            f"Closed {len(closed_ids)} tab{'s' if len(closed_ids) != 1 else ''}{where}"
            f"{' (' + ', '.join(map(str, closed_ids)) + ')' if closed_ids else ''}; kept {remaining}. "
            f"Active tab: {keep.id}.{left}{stay}",
            {
                "success": True,
                "closedCount": len(closed_ids),
                "remainingTabIds": remaining,
                "activeTabId": keep.id,
            },
        )
        response.told("tab_closed", *closed_ids)
        response.told("tab_activated", keep.id)
    elif action == "activate":
        if tabId is None:
            raise ValueError("activate needs tabId: the tab to make active.")
        tab = call.tab(tabId)
        already = activate_tab(manager, tab)
        done = f"Tab {tab.id} was the active tab already." if already else f"Tab {tab.id} is now active."
        response.result(done, {"success": True, "activeTabId": tab.id})
        response.told("tab_activated", tab.id)
        response.set_page(tab)
    else:  # pin / unpin
        if tabId is None:
            raise ValueError(f"{action} needs tabId: the tab to {action}.")
        tab = call.tab(tabId)
        pinned = action == "pin"
        manager.pin(tab.id, pinned)
        response.result(
            f"Tab {tab.id} is {'pinned (kept by close_others and the tab cap)' if pinned else 'unpinned'}.",
            {"success": True, "tabId": tab.id, "pinned": pinned},
        )
        response.show_tabs()


def _tab_list(manager: TabManager, instance_id: str | int | None) -> tuple[str, dict[str, Any]]:
    """The open tabs (of one instance, if given) as the list's result line and facts."""
    infos = manager.tabs(instance_id)
    # A lost default instance has no active tab, yet the tabs of the others are listed.
    listed = manager.instance(instance_id) if infos else None
    active_tab = listed.active_tab if listed is not None and listed.state == "open" else None
    active = active_tab.id if active_tab else None
    where = f" in instance {listed.id if listed else instance_id}" if instance_id is not None else ""
    whose = "its active tab" if instance_id is not None else "active tab"
    waiting = ""
    if not infos and instance_id is None:
        try:
            manager.instance()
        except InstanceNotFoundError as exc:
            # The user's browser is not there yet, or no longer connected: say how. No instance
            # at all otherwise: the list says so.
            if isinstance(exc, ExtensionNotConnectedError) or exc.extension is not None:
                waiting = " " + error_text(exc)
    # The user's browser whose extension dropped a moment ago: its tabs are listed as they were,
    # and calls on them fail until it is back (or it counts as lost).
    shown = manager.instances if instance_id is None else [listed] if listed is not None else []
    waiting += "".join(
        f" Instance {info.id} cannot be reached now: {info.unreachable}. Calls on its tabs fail until it is back."
        for info in (i.info() for i in shown)
        if info.unreachable
    )
    text = (
        f"{len(infos)} open tab{'s' if len(infos) != 1 else ''}{where}; "
        + (f"{whose}: {active}." if active is not None else "no tab is active.")
        + waiting
    )
    if instance_id is not None:
        default = manager.default_instance
        front = default.active_tab if default is not None and default.state == "open" else None
        active_id = front.id if front is not None else None
        text += "".join(f"\n{tab_line(info, active_id=active_id)}" for info in infos)
    return text, {"tabs": [i.to_dict() for i in infos], "activeTabId": active, "count": len(infos)}


TOOLS = [
    ToolSpec(
        "browser_tabs",
        browser_tabs,
        "List, open, close, activate or pin tabs.",
        ToolAnnotations(title="Manage tabs", destructive_hint=True, open_world_hint=True),
        action_args={
            "tabId": ("close", "close_others", "activate", "pin", "unpin"),
            "keepTabId": ("close_others",),
            "url": ("new",),
            "background": ("new",),
            "instanceId": ("list", "new"),
        },
    )
]
