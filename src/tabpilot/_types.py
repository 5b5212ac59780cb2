"""Plain records the library hands out: tab and instance info, dialogs, events.

Their `to_dict()` uses camelCase keys, as every result a server returns does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TabStatus = Literal["loading", "complete", "crashed"]
OpenCause = Literal["tool", "link", "popup", "external"]
CloseCause = Literal[
    "tool",
    "page",
    "external",
    "crash",
    "cap",
    "shutdown",
    "unshared",
    "unreachable",
    "released",
    "privileged",
    "user",
]
CLOSED_BY: dict[str, str] = {
    "tool": "It was closed by a call to tabpilot.",
    "page": "Its page closed it.",
    "external": "It was closed outside tabpilot (by the user or another client).",
    "user": "The user closed it in their browser.",
    "crash": "Its browser was lost, and the tab with it.",
    "cap": "It was closed to keep the tab limit.",
    "shutdown": "It was closed as its manager shut down (a server does that when a client's session ends).",
    "unshared": "The user stopped sharing it with the agent; it stays open in their browser.",
    "unreachable": (
        "tabpilot lost its link to the user's browser (the tabpilot extension): the tab is out of "
        "reach, not closed by tabpilot."
    ),
    "released": "The agent let go of it as its instance was closed; it stays open in its browser.",
    "privileged": (
        "It went to a page the tabpilot extension may not reach (a chrome:// page, an extension's, or a "
        "local file the URL policy refuses); it stays open in the user's browser."
    ),
}
"""Why a tab is gone, by its close cause, in a sentence for an error."""


def closed_reason(cause: str | None) -> str:
    """Why a tab is gone, in a sentence for an error (`CLOSED_BY`; "It was closed." if unknown)."""
    return CLOSED_BY.get(cause or "", "It was closed.")


TabLimitPolicy = Literal["reject", "close-oldest"]
InstanceKind = Literal["launched", "cdp", "playwright-server", "context", "grid", "extension"]
InstanceState = Literal["open", "closing", "closed", "lost"]
EventType = Literal[
    "tab_opened",
    "tab_closed",
    "tab_activated",
    "tab_crashed",
    "dialog_opened",
    "dialog_closed",
    "download",
    "download_finished",
    "navigation_blocked",
    "script_result",
    "instance_lost",
    "instance_relaunched",
]


@dataclass(frozen=True, slots=True)
class DialogInfo:
    type: str
    message: str
    default_value: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message, "defaultValue": self.default_value}


def dialog_noun(dialog_type: str) -> str:
    """'an alert dialog', 'a confirm dialog': the type with its indefinite article."""
    return f"{'an' if dialog_type[:1] in 'aeiou' else 'a'} {dialog_type} dialog"


@dataclass(frozen=True, slots=True)
class TabInfo:
    """What is known about a tab, read from state kept current by browser events."""

    id: int
    instance_id: str
    url: str
    title: str
    active: bool
    index: int
    window_id: int | None
    pinned: bool
    opener_id: int | None
    status: TabStatus
    dialog: DialogInfo | None
    target_id: str | None
    chrome_tab_id: int | None = None
    """Chrome's own id of the tab (a tab of the user's browser, reached through the extension)."""
    held_by: int | None = None
    """The tab whose open dialog holds this one up (a popup relative of the same site, which shares
    its script thread): work on this tab is refused until that dialog is handled."""
    error_page: bool = False
    """The tab shows the browser's error page: `url` failed to load."""
    blocked: bool = False
    """That error page is the URL policy's doing: it refused `url`, where a page led the tab."""
    users_own: bool = False
    """A tab of the user's own browser that the agent shares (`Tab.users_own`): `close_others`
    and the tab cap leave it open."""
    loading_url: str = ""
    """The page the tab is loading whose server has not sent it yet, where the browser said which
    ('' when none): a popup still shows about:blank then."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "instanceId": self.instance_id,
            "url": self.url,
            "title": self.title,
            "active": self.active,
            "index": self.index,
            "windowId": self.window_id,
            "pinned": self.pinned,
            "openerId": self.opener_id,
            "status": self.status,
            "dialog": self.dialog.to_dict() if self.dialog else None,
            "targetId": self.target_id,
            "chromeTabId": self.chrome_tab_id,
            "heldBy": self.held_by,
            "errorPage": self.error_page,
            "blocked": self.blocked,
            "usersOwn": self.users_own,
            "loadingUrl": self.loading_url,
        }


@dataclass(frozen=True, slots=True)
class InstanceInfo:
    """What a listing shows about an instance."""

    id: str
    kind: InstanceKind
    endpoint: str | None
    state: InstanceState
    lost_reason: str | None
    default: bool
    tab_count: int
    active_tab_id: int | None
    headless: bool
    pid: int | None
    user_data_dir: str | None
    replaced_by: str | None
    unreachable: str | None = None
    """Why its browser cannot be reached right now, while it may still come back (the user's
    browser whose extension dropped: calls on its tabs fail meanwhile); None when it can."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "endpoint": self.endpoint,
            "health": self.state,
            "lostReason": self.lost_reason,
            "default": self.default,
            "tabCount": self.tab_count,
            "activeTabId": self.active_tab_id,
            "headless": self.headless,
            "pid": self.pid,
            "userDataDir": self.user_data_dir,
            "replacedBy": self.replaced_by,
            "unreachable": self.unreachable,
        }


@dataclass(frozen=True, slots=True)
class TabEvent:
    """One thing that happened to a tab. `data` holds the event's own fields (camelCase keys)."""

    seq: int
    timestamp: float
    type: EventType
    tab_id: int | None
    instance_id: str | None
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "timestamp": self.timestamp,
            "type": self.type,
            "tabId": self.tab_id,
            "instanceId": self.instance_id,
            **self.data,
        }


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What closing a tab did: the tab closed and the active tab now."""

    closed_tab_id: int
    active_tab_id: int | None
    instance_gone: bool = False
    """Its instance went away meanwhile, with its other tabs. No active tab while it stays open:
    it has no tab left (the agent's last tab in the user's browser closed, which ends nothing)."""
