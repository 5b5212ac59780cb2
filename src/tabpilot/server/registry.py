"""The tool sets `--tools` selects from, and the groups of the default set `--caps` selects from
(`names.py` names them, and the sets that clash, without importing a tool)."""

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
    """The tools of the named sets, refusing unknown names and sets whose tool names clash
    (`names.check_names`). `caps` narrows the default set to core plus these groups (None: every
    group)."""
    check_names(names, caps)
    chosen: dict[str, ToolSpec] = {}
    for set_name in dict.fromkeys(names):
        specs = TOOLSETS[set_name]
        if set_name == "default" and caps is not None:
            # Advice names no tool of a group left out (a form fill, browser_instance).
            calls = replace(DEFAULT_CALLS, forms="forms" in caps, instances="instances" in caps)
            specs = [
                replace(spec, calls=calls) for cap in dict.fromkeys(("core", *caps)) for spec in CAPS[cap]
            ]
        for spec in specs:
            chosen.setdefault(spec.name, spec)  # a tool two sets share (the same spec) once
    return list(chosen.values())
