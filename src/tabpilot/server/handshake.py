"""The MCP handshake, answered before the MCP SDK is loaded (`stdio.StdioTransport`).

Importing the SDK takes most of a second; a client that starts `tabpilot serve` waits for its
session until the first request is answered. That request is the handshake (`initialize`, or
`server/discover` for the 2026-07-28 protocol), and its answer needs nothing the SDK computes:
the server's name, version and instructions, its capabilities (tools and logging, whatever its
options) and the SDK's protocol versions, written out here. `Greeting.answer` gives
the answer for a handshake it recognises in full, and None for anything else (the SDK answers
that one itself). The SDK still gets the request first and its answer is compared with the one
sent; `tests/server/test_server_stdio.py` holds these answers against the SDK's for every
protocol version.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
"""Protocol versions of the initialize handshake the SDK serves (`mcp_types.version`), oldest first."""
MODERN_VERSIONS = ("2026-07-28",)
"""Protocol versions without a handshake, whose clients ask `server/discover` first."""
CAPABILITIES: dict[str, Any] = {"logging": {}, "tools": {"listChanged": False}}
"""What the server offers: tools, a list that never changes while it runs, and the log records of
a client's calls (`logging/setLevel` in the handshake era; a 2026 request asks in its `_meta`)."""

_META = "io.modelcontextprotocol/"


@dataclass(frozen=True, slots=True)
class Greeting:
    """What the server says of itself at the handshake."""

    name: str
    title: str
    version: str
    instructions: str

    def answer(self, line: bytes) -> tuple[int | str, dict[str, Any]] | None:
        """The JSON-RPC answer to `line` if it is a handshake request recognised in full, with its id."""
        try:
            message = json.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return None
        request_id, params = message.get("id"), message.get("params")
        if (
            isinstance(request_id, bool)
            or not isinstance(request_id, int | str)
            or not isinstance(params, dict)
        ):
            return None
        if message.get("method") == "initialize":
            result = self._initialized(params)
        elif message.get("method") == "server/discover":
            result = self._discovered(params)
        else:
            return None
        if result is None:
            return None
        return request_id, {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _server_info(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "version": self.version}

    def _initialized(self, params: dict[str, Any]) -> dict[str, Any] | None:
        requested = params.get("protocolVersion")
        if not (
            isinstance(requested, str)
            and isinstance(params.get("capabilities"), dict)
            and _implementation(params.get("clientInfo"))
        ):
            return None
        return {
            "capabilities": CAPABILITIES,
            "instructions": self.instructions,
            "protocolVersion": requested if requested in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1],
            "serverInfo": self._server_info(),
        }

    def _discovered(self, params: dict[str, Any]) -> dict[str, Any] | None:
        meta = params.get("_meta")
        if not (
            isinstance(meta, dict)
            and meta.get(_META + "protocolVersion") in MODERN_VERSIONS
            and isinstance(meta.get(_META + "clientCapabilities"), dict)
            and _implementation(meta.get(_META + "clientInfo"))
        ):
            return None
        return {
            "cacheScope": "private",
            "capabilities": CAPABILITIES,
            "instructions": self.instructions,
            "resultType": "complete",
            "supportedVersions": list(MODERN_VERSIONS),
            "ttlMs": 0,
            "_meta": {_META + "serverInfo": self._server_info()},
        }


def _implementation(info: Any) -> bool:
    """Whether `info` is a client's name and version as the protocol gives them."""
    return (
        isinstance(info, dict) and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)
    )
