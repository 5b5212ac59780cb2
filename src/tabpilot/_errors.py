"""The exceptions tabpilot raises.

Every message says what went wrong and what to do next, because the reader
is often a language model that can only act on the text it gets.

    TabpilotError
    ├── BrowserNotFoundError      no Chromium to launch
    ├── InstanceError             .instance_id
    │   ├── InstanceNotFoundError no instance has that id
    │   ├── InstanceLostError     the browser died or the endpoint went away
    │   └── ConnectError          an endpoint could not be reached or spoke another protocol
    ├── TabError                  .tab_id
    │   ├── TabNotFoundError      no open tab has that id (lists the open tabs)
    │   ├── LastTabError          refusing to close the last tab of an instance
    │   ├── TabLimitError         the tab cap refuses a new tab
    │   ├── DialogOpenError       a dialog blocks the tab; handle it first
    │   └── NoDialogError         there is no dialog to handle
    ├── RefError                  .ref, .tab_id
    │   ├── StaleRefError         the ref is not in its tab's latest snapshot
    │   └── ForeignRefError       the ref belongs to another tab
    ├── NavigationBlockedError    the navigation policy refuses a URL
    └── ActionError               a page action failed (timeout, detached element, ...)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol


class _TabLike(Protocol):
    id: int

    @property
    def title(self) -> str: ...

    @property
    def url(self) -> str: ...


class TabpilotError(Exception):
    """Base class of every tabpilot error."""


class BrowserNotFoundError(TabpilotError):
    """No Chromium could be found or installed."""


class InstanceError(TabpilotError):
    def __init__(self, message: str, *, instance_id: str | None = None) -> None:
        super().__init__(message)
        self.instance_id = instance_id


class InstanceNotFoundError(InstanceError):
    pass


class InstanceLostError(InstanceError):
    pass


class ConnectError(InstanceError):
    pass


class TabError(TabpilotError):
    def __init__(self, message: str, *, tab_id: int | str | None = None) -> None:
        super().__init__(message)
        self.tab_id = tab_id


def describe_tabs(tabs: Iterable[_TabLike]) -> str:
    """One line per tab, as error messages list them."""
    lines = [f"  - tab {t.id}: {t.title or '(no title)'} ({t.url})" for t in tabs]
    return "\n".join(lines) if lines else "  (no open tabs)"


class TabNotFoundError(TabError):
    def __init__(self, tab_id: int | str, open_tabs: Sequence[_TabLike], *, reason: str = "") -> None:
        why = f" {reason}" if reason else ""
        super().__init__(
            f"Tab {tab_id!r} not found.{why} Open tabs:\n{describe_tabs(open_tabs)}\n"
            "Use one of these ids, or list tabs again.",
            tab_id=tab_id,
        )
        self.open_tab_ids = [t.id for t in open_tabs]


class LastTabError(TabError):
    pass


class TabLimitError(TabError):
    pass


class DialogOpenError(TabError):
    pass


class NoDialogError(TabError):
    pass


class RefError(TabpilotError):
    def __init__(self, message: str, *, ref: str, tab_id: int | None = None) -> None:
        super().__init__(message)
        self.ref = ref
        self.tab_id = tab_id


class StaleRefError(RefError):
    pass


class ForeignRefError(RefError):
    pass


class NavigationBlockedError(TabpilotError):
    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class ActionError(TabpilotError):
    pass
