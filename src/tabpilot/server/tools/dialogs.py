"""`browser_handle_dialog`: accept or dismiss the dialog (alert, confirm, prompt) open on a tab.

A dialog blocks only its own tab; other tabs keep working. Dialogs on background tabs are
reported in ### Events and ### Tabs, and handled here with their tabId.
"""

from __future__ import annotations

from typing import Annotated

from mcp.types import ToolAnnotations
from pydantic import Field

from tabpilot import NoDialogError, Tab, quoted

from ..advice import dialog_said
from .base import Call, TabIdValue, ToolSpec


async def browser_handle_dialog(
    call: Call,
    tab: Tab,
    accept: Annotated[bool, Field(description="OK (true) or Cancel (false).")],
    promptText: Annotated[str | None, Field(description="prompt: the answer.")] = None,
    tabId: Annotated[
        TabIdValue | None,
        Field(description="The dialog's tab. Default: the active tab."),
    ] = None,
) -> None:
    if tab.dialog is None:
        waiting = [t for t in call.manager.tabs() if t.dialog is not None]
        if not waiting:
            raise NoDialogError(tab.id)
        shown = ", ".join(f"tab {t.id} ({t.dialog.type})" for t in waiting if t.dialog)
        raise ValueError(
            f"Tab {tab.id} has no open dialog. Tabs with an open dialog: {shown}; pass tabId={waiting[0].id}."
        )
    info = await tab.handle_dialog(accept=accept, prompt_text=promptText)
    verb = "Accepted" if accept else "Dismissed"
    answer = (
        f" answering {promptText!r}" if accept and promptText is not None and info.type == "prompt" else ""
    )
    said = f" {quoted(info.message)}" if info.message else dialog_said(info.type, info.message)
    unused = ""
    if promptText is not None and not answer:
        unused = (
            f" promptText was not used: a {info.type} dialog takes no text."
            if info.type != "prompt"
            else " promptText was not used: a dismissed prompt answers nothing."
        )
    call.response.result(
        f"{verb} the {info.type} dialog{said} on tab {tab.id}{answer}.{unused}",
        {"tabId": tab.id, "accepted": accept, "dialog": info.to_dict()},
    )
    call.response.told("dialog_closed", tab.id)
    call.response.set_page(tab, changes=True)


TOOLS = [
    ToolSpec(
        "browser_handle_dialog",
        browser_handle_dialog,
        "Accept or dismiss the dialog that blocks a tab.",
        ToolAnnotations(title="Handle a dialog", destructive_hint=True, open_world_hint=True),
        tab=True,
        allows_dialog=True,
    )
]
