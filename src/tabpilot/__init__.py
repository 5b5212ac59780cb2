"""tabpilot: control a real browser with many tabs, and never lose one.

The library is the core; the MCP server (`tabpilot.server`) uses only these names.
"""

from __future__ import annotations

from ._actions import (
    ActionResult,
    KeyModifier,
    MouseButton,
    click,
    evaluate,
    hover,
    press_key,
    screenshot,
    select_option,
    type_text,
    wait_for,
)
from ._browser_path import find_browser
from ._errors import (
    ActionError,
    BrowserNotFoundError,
    ConnectError,
    DialogOpenError,
    ForeignRefError,
    InstanceError,
    InstanceLostError,
    InstanceNotFoundError,
    LastTabError,
    NavigationBlockedError,
    NoDialogError,
    RefError,
    StaleRefError,
    TabError,
    TabLimitError,
    TabNotFoundError,
    TabpilotError,
)
from ._events import EventBus
from ._instance import Instance, InstanceInfo, InstanceKind
from ._manager import CloseResult, TabIds, TabManager
from ._navigation import NavigateAction, NavigationResult, navigate, normalize_url, policy_route_hook
from ._policy import UrlPolicy
from ._refs import parse_ref, scope_snapshot
from ._tab import Snapshot, Tab
from ._telemetry import Telemetry
from ._types import CloseCause, DialogInfo, OpenCause, TabEvent, TabInfo, TabLimitPolicy, TabStatus

__version__ = "0.1.0"

__all__ = [
    "ActionError",
    "ActionResult",
    "BrowserNotFoundError",
    "CloseCause",
    "CloseResult",
    "ConnectError",
    "DialogInfo",
    "DialogOpenError",
    "EventBus",
    "ForeignRefError",
    "Instance",
    "InstanceError",
    "InstanceInfo",
    "InstanceKind",
    "InstanceLostError",
    "InstanceNotFoundError",
    "KeyModifier",
    "LastTabError",
    "MouseButton",
    "NavigateAction",
    "NavigationBlockedError",
    "NavigationResult",
    "NoDialogError",
    "OpenCause",
    "RefError",
    "Snapshot",
    "StaleRefError",
    "Tab",
    "TabError",
    "TabEvent",
    "TabIds",
    "TabInfo",
    "TabLimitError",
    "TabLimitPolicy",
    "TabManager",
    "TabNotFoundError",
    "TabStatus",
    "TabpilotError",
    "Telemetry",
    "UrlPolicy",
    "__version__",
    "click",
    "evaluate",
    "find_browser",
    "hover",
    "navigate",
    "normalize_url",
    "parse_ref",
    "policy_route_hook",
    "press_key",
    "scope_snapshot",
    "screenshot",
    "select_option",
    "type_text",
    "wait_for",
]
