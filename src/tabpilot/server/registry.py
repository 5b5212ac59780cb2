"""The tool sets `--tools` selects from, and the check that combined sets do not clash."""

from __future__ import annotations

from collections.abc import Sequence

from .tools import dialogs, evaluate, input, instance, navigate, observe, screenshot, snapshot, tabs
from .tools.base import ToolSpec
from .toolsets import browser_tab, browser_use, foxmcp, pilo

TOOLSETS: dict[str, list[ToolSpec]] = {
    "default": [
        *tabs.TOOLS,
        *navigate.TOOLS,
        *snapshot.TOOLS,
        *input.TOOLS,
        *dialogs.TOOLS,
        *screenshot.TOOLS,
        *evaluate.TOOLS,
        *observe.TOOLS,
        *instance.TOOLS,
    ],
    # Compatible tool sets (server/toolsets/): tools of other browser servers, on the same tabs.
    "browser-use": browser_use.TOOLS,
    "browser-tab": browser_tab.TOOLS,
    "foxmcp": foxmcp.TOOLS,
    "pilo": pilo.TOOLS,
}


def select_tools(names: Sequence[str]) -> list[ToolSpec]:
    """The tools of the named sets, refusing unknown names and sets whose tool names clash."""
    unknown = [n for n in names if n not in TOOLSETS]
    if unknown:
        raise ValueError(
            f"Unknown tool set {', '.join(map(repr, unknown))}. Known sets: {', '.join(sorted(TOOLSETS))}."
        )
    chosen: dict[str, tuple[str, ToolSpec]] = {}
    for set_name in dict.fromkeys(names):
        clashes: dict[str, list[str]] = {}  # earlier set -> tool names this set defines again
        for spec in TOOLSETS[set_name]:
            seen = chosen.get(spec.name)
            if seen is not None and seen[1] is not spec:
                clashes.setdefault(seen[0], []).append(spec.name)
            chosen.setdefault(spec.name, (set_name, spec))
        for earlier, tools in clashes.items():
            raise ValueError(
                f"Tool sets {earlier!r} and {set_name!r} both define {', '.join(map(repr, tools))} with "
                "different arguments; use one of them."
            )
    return [spec for _, spec in chosen.values()]
