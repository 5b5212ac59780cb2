"""`tabpilot demo`: a scripted multi-tab session over MCP against a built-in local site.

`site` is that local site (HTTP and WebSocket on 127.0.0.1, also what the tests use); `story` is
the scripted session; `user_browser` stands in for the user's own browser with the tabpilot
extension (`tabpilot demo --extension`).
"""

from __future__ import annotations


def main(*, browser_path: str | None = None, headed: bool = False, extension: bool = False) -> int:
    """Run the demo story (see `story.main`)."""
    # Imported here, not at the top: `python -m tabpilot.demo.site` would otherwise find the site
    # module imported already (through the story) and warn about it.
    from .story import main as run_story

    return run_story(browser_path=browser_path, headed=headed, extension=extension)


__all__ = ["main"]
