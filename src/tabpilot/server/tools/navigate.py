"""`browser_navigate`: goto, back, forward or reload one tab (active or not), under the URL policy."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import NavigationBlockedError, Tab, TabpilotError, navigate

from ..advice import short
from .base import Call, TabIdArg, ToolSpec, loading_instead


async def browser_navigate(
    call: Call,
    tab: Tab,
    action: Annotated[
        Literal["goto", "back", "forward", "reload"],
        Field(description="Default goto."),
    ] = "goto",
    url: Annotated[
        str | None,
        Field(description="goto: the URL (no scheme: https://)."),
    ] = None,
    tabId: TabIdArg = None,
) -> None:
    going = f"loading {short(url or '', 100)}" if action == "goto" else action
    try:
        result = await call.with_progress(
            navigate(tab, action, url),
            total=tab.host.timeouts.navigation,
            message=f"{going} on tab {tab.id}",
        )
    except NavigationBlockedError:
        # Back, forward or a reload to a URL the policy refuses: the error says what the event would.
        call.response.told("navigation_blocked", tab.id)
        raise
    except TabpilotError as exc:
        loading = loading_instead(exc, tab, None)
        if loading is None:
            raise
        # A page only slow to come: the navigation is done, the browser keeps waiting for it, as
        # for a click or a new tab. A snapshot would wait for it as long again: none here.
        page = tab.due_url or None
        call.response.result(
            f"{loading} Take a snapshot of tab {tab.id} in a while.",
            {"tabId": tab.id, "url": page or tab.url, "status": None, "loading": page},
        )
        call.response.set_page(tab)
        return
    # The URL it ended on is in ### Page.
    done = {"goto": "Navigated", "back": "Went back on", "forward": "Went forward on", "reload": "Reloaded"}
    # A dialog holds the navigation up, or the URL was a download: the note says so.
    text = (
        result.note
        if result.stayed
        else f"{done[action]} tab {tab.id}." + (f" {result.note}" if result.note else "")
    )

    def said() -> str:
        # Another call's navigation or click on the tab after this one: the page shown below is
        # the tab as that left it, not the page this call loaded (result.url).
        if tab.turns_taken == result.turn:
            return text
        return (
            f"{text} Another call has acted on tab {tab.id} since (this one loaded "
            f"{short(result.url, 100)}): what follows is the tab as it is now."
        )

    call.response.result(said, {"tabId": tab.id, "url": result.url, "status": result.status})
    with_snapshot = call.session.config.navigate_returns == "snapshot"
    if not with_snapshot and not tab.is_gone and tab.dialog is None:
        await tab.refresh_title()  # the snapshot would have read it
    call.response.set_page(tab, changes=with_snapshot)


TOOLS = [
    ToolSpec(
        "browser_navigate",
        browser_navigate,
        "Load a URL in a tab, or go back, forward or reload.",
        ToolAnnotations(title="Navigate a tab", destructive_hint=False, open_world_hint=True),
        tab=True,
        action_args={"url": ("goto",)},
    )
]
