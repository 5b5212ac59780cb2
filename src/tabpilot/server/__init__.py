"""The tabpilot MCP server: `create_server(ServerConfig(...))`, or `tabpilot serve` on the command line."""

from __future__ import annotations

from .app import INSTRUCTIONS, TabpilotServer, create_server
from .config import ServerConfig

__all__ = ["INSTRUCTIONS", "ServerConfig", "TabpilotServer", "create_server"]
