"""The tool sets `--tools` selects from, the groups of the default set `--caps` selects from, and
the check that combined sets do not clash."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .advice import DEFAULT_CALLS
from .names import check_names
from .tools import (
    dialogs,
    evaluate,
    forms,
    input,
    instance,
    navigate,
    observe,
    screenshot,
    snapshot,
    storage,
    tabs,
)
from .tools.base import ToolSpec
from .toolsets import browser_tab, browser_use, foxmcp, pilo

CAPS: dict[str, list[ToolSpec]] = {
    # Always offered: the tab model and the page actions every task needs.
    "core": [
        *tabs.TOOLS,
        *navigate.TOOLS,
        *snapshot.TOOLS,
        *input.TOOLS,
        *dialogs.TOOLS,
    ],
    "forms": forms.TOOLS,
    "vision": screenshot.TOOLS,
    "script": evaluate.TOOLS,
    "observe": observe.TOOLS,
    "instances": instance.TOOLS,
    "storage": storage.TOOLS,
}
"""Groups of the default set (named and described in `names.CAPS`); `--caps forms,observe` offers
core plus those (default: all)."""

TOOLSETS: dict[str, list[ToolSpec]] = {
    "default": [spec for group in CAPS.values() for spec in group],
    # Compatible tool sets (server/toolsets/): tools of other browser servers, on the same tabs.
    "browser-use": browser_use.TOOLS,
    "browser-tab": browser_tab.TOOLS,
    "foxmcp": foxmcp.TOOLS,
    "pilo": pilo.TOOLS,
}


def select_tools(names: Sequence[str], caps: Sequence[str] | None = None) -> list[ToolSpec]:
    """The tools of the named sets, refusing unknown names and sets whose tool names clash.
    `caps` narrows the default set to core plus these groups (None: every group)."""
    check_names(names, caps)
    chosen: dict[str, tuple[str, ToolSpec]] = {}
    for set_name in dict.fromkeys(names):
        clashes: dict[str, list[str]] = {}  # earlier set -> tool names this set defines again
        specs = TOOLSETS[set_name]
        if set_name == "default" and caps is not None:
            # Advice names no tool of a group left out (a form fill, browser_instance).
            calls = replace(DEFAULT_CALLS, forms="forms" in caps, instances="instances" in caps)
            specs = [
                replace(spec, calls=calls) for cap in dict.fromkeys(("core", *caps)) for spec in CAPS[cap]
            ]
        for spec in specs:
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
