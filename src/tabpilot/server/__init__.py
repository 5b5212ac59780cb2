"""The tabpilot MCP server: `create_server(ServerConfig(...))`, or `tabpilot serve` on the command line.

The names load on first use: `tabpilot serve` imports the state and the runner without the MCP SDK,
to start the browser while the SDK (most of start-up) is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .about import INSTRUCTIONS
    from .app import TabpilotServer, create_server
    from .config import ServerConfig

__all__ = ["INSTRUCTIONS", "ServerConfig", "TabpilotServer", "create_server"]
_HOMES = {"INSTRUCTIONS": "about", "TabpilotServer": "app", "create_server": "app", "ServerConfig": "config"}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
