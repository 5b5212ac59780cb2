"""Plain records the library hands out: tab info, dialogs, events."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

TabStatus = Literal["loading", "complete", "crashed"]
OpenCause = Literal["tool", "link", "popup", "external"]
CloseCause = Literal["tool", "page", "external", "crash", "cap"]
TabLimitPolicy = Literal["reject", "close-oldest"]
EventType = Literal[
    "tab_opened",
    "tab_closed",
    "tab_activated",
    "tab_crashed",
    "dialog_opened",
    "dialog_closed",
    "download",
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

    @property
    def noun(self) -> str:
        """'an alert dialog', 'a confirm dialog': for sentences about it."""
        return dialog_noun(self.type)


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

    def describe(self) -> str:
        """A one-line summary for the model."""
        d = self.data
        if self.type == "tab_opened":
            opener = f" by tab {d['openerId']}" if d.get("openerId") is not None else ""
            return f"tab {self.tab_id} opened ({d.get('cause')}){opener}: {d.get('url') or 'about:blank'}"
        if self.type == "tab_closed":
            active = d.get("activeTabId")
            tail = ""
            if d.get("activeChanged"):
                tail = f"; active tab is now {active}" if active is not None else "; no tab is active"
            return f"tab {self.tab_id} closed (by {d.get('by')}){tail}"
        if self.type == "tab_activated":
            return f"tab {self.tab_id} is now active"
        if self.type == "tab_crashed":
            return f"tab {self.tab_id} crashed; close it or reload it"
        if self.type == "dialog_opened":
            return (
                f"tab {self.tab_id} shows {dialog_noun(str(d.get('dialogType')))}: {d.get('message')!r}; "
                "handle it with browser_handle_dialog"
            )
        if self.type == "dialog_closed":
            return f"tab {self.tab_id}: dialog closed"
        if self.type == "download":
            return f"tab {self.tab_id} downloaded {d.get('suggestedFilename')!r} from {d.get('url')}"
        if self.type == "instance_lost":
            return f"instance {self.instance_id} was lost: {d.get('reason')}"
        if self.type == "instance_relaunched":
            return (
                f"instance {self.instance_id} was launched in place of lost instance {d.get('replaces')} "
                f"({d.get('reason')}); the old tabs are gone, tab {d.get('activeTabId')} is its blank tab"
            )
        return f"{self.type} on tab {self.tab_id}"


def dialog_noun(dialog_type: str) -> str:
    """'an alert dialog', 'a confirm dialog': the type with its indefinite article."""
    return f"{'an' if dialog_type[:1] in 'aeiou' else 'a'} {dialog_type} dialog"
