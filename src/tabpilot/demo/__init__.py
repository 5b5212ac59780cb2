"""`tabpilot demo`: a scripted multi-tab session over MCP against a built-in local site.

`site` is that local site (HTTP and WebSocket on 127.0.0.1, also what the tests use); `story` is
the scripted session; `user_browser` stands in for the user's own browser with the tabpilot
extension (`tabpilot demo --extension`).
"""

from .story import main

__all__ = ["main"]
