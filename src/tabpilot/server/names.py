"""The names `--tools` and `--caps` take, and the sets that cannot be offered together, known
without importing a tool module (or the MCP SDK).

`ServerConfig` checks its names against these when it is made, so a typo or a clash is refused
before any browser starts. `registry.py` maps each name to its tools (a test keeps the two in step).
"""

from __future__ import annotations

from collections.abc import Sequence

TOOL_SETS = ("default", "browser-use", "browser-tab", "foxmcp", "pilo")
"""`default`, and the compatible sets of other browser servers (server/toolsets/)."""

CLASHES: dict[frozenset[str], tuple[str, ...]] = {
    frozenset({"default", "browser-use"}): ("browser_navigate", "browser_click", "browser_type"),
}
"""The tool sets that cannot be offered together: the tools both define, with different arguments."""

CORE = "tabs, navigate, snapshot, click, type, keys, select, hover, wait, dialogs"
"""What the default set always offers, whatever `--caps` says."""

CAPS: dict[str, str] = {
    "forms": "fill a form, upload files, drag and drop",
    "vision": "screenshots, viewport size",
    "script": "run JavaScript",
    "observe": "console, errors, network, WebSocket, actions",
    "instances": "several browsers: launch, connect, close",
    "storage": "save cookies and localStorage",
}
"""The default set's optional groups, and what each offers."""

NETWORK_CAP = "observe"
"""The group whose tool shows the tabs' network traffic (browser_observe)."""


def check_names(tool_sets: Sequence[str], caps: Sequence[str] | None) -> None:
    """Raise ValueError, naming the known ones, for a tool set or group that does not exist."""
    check_caps(caps)
    check_tool_sets(tool_sets)


def check_caps(caps: Sequence[str] | None) -> None:
    """Raise ValueError, naming the known ones, for a group of the default set that does not exist."""
    unknown_caps = [c for c in caps or () if c not in CAPS and c != "core"]
    if unknown_caps:
        raise ValueError(
            f"Unknown capability {', '.join(map(repr, unknown_caps))}. Known: {', '.join(CAPS)} "
            "(core is always on)."
        )


def check_tool_sets(tool_sets: Sequence[str]) -> None:
    """Raise ValueError, naming the known ones, for a tool set that does not exist, and naming the
    tools they both define for two sets that clash (`CLASHES`)."""
    unknown = [n for n in tool_sets if n not in TOOL_SETS]
    if unknown:
        raise ValueError(
            f"Unknown tool set {', '.join(map(repr, unknown))}. Known sets: {', '.join(sorted(TOOL_SETS))}."
        )
    chosen = list(dict.fromkeys(tool_sets))
    for at, later in enumerate(chosen):
        for earlier in chosen[:at]:
            tools = CLASHES.get(frozenset({earlier, later}))
            if tools:
                raise ValueError(
                    f"Tool sets {earlier!r} and {later!r} both define {', '.join(map(repr, tools))} with "
                    "different arguments; use one of them."
                )
