"""What the server says of itself: its name and the instructions every client reads at the handshake.

Kept apart from the MCP SDK: `tabpilot serve` answers the handshake with them while the SDK is
still being imported (`server/stdio.py`).
"""

from __future__ import annotations

from collections.abc import Sequence

NAME = "tabpilot"
TITLE = "tabpilot"

INSTRUCTIONS = """\
tabpilot drives a real Chromium with many tabs. The rules, said once for every tool:
- Every tab has a stable integer id, never reused. Use ids, never list positions. A tabId
  argument also takes the id's decimal string or the tab's CDP target id.
- Tabs a page opens (target=_blank links, window.open, OAuth popups) are reported in the
  ### Events section of the response to the action that opened them, with their opener,
  and are NOT switched to. You decide: pass tabId to work on one, or activate it.
- Every page tool takes an optional tabId and works on that tab WITHOUT activating it
  (snapshot, click or type on a background tab). Without tabId it uses the active tab.
  Activate a tab only to make it the default; closing the active tab activates the previous one.
- Element refs belong to one tab: '3e5' is element e5 of tab 3. A ref acts on its own tab,
  so you need no tabId with it. After navigation, take a new snapshot: old refs are stale.
- Actions answer with what changed on the page; a snapshot of an unchanged page says so in one
  line (full=true shows it all again).
- Every response carries ### Events (what happened since your previous call, beyond what its
  result says) and ### Tabs when the tab set changed, with new error counts per tab
  (browser_observe what='errors' shows them). An open dialog blocks only its tab: handle it with
  browser_handle_dialog.
- Text like {{NAME}} in typed text is a secret the server fills in; responses show the name only.
- Close tabs you no longer need (browser_tabs(action='close') or browser_tabs(action='close_others')).
"""

OBSERVE_HINT = "\n  (browser_observe what='errors' shows them)"
"""The part of INSTRUCTIONS that names the observe group's tool."""

OTHER_SETS_INSTRUCTIONS = """\
tabpilot drives a real Chromium with many tabs, with the tools of other browser servers. Every tab
has a stable integer id, never reused and never a list position: every tool here lists and takes
the same ids. Tabs a page opens (target=_blank links, window.open, sign-in popups) are tracked at
once and named in the answer of the action that opened them. Close tabs you no longer need.
"""
"""For a server offering only compatible tool sets: INSTRUCTIONS name tools and sections
(`### Events`, browser_handle_dialog) those sets do not have."""


PILO_INSTRUCTIONS = """\
With Pilo's tools (get_snapshot, click, fill and goto act on the current tab):
- A tab a click opens is named in the click's answer (BROWSER_TAB_OPENED) and listed under
  Available tabs in your next snapshot; it is NOT switched to. Use switch_tab() to work in it, and
  close tabs you no longer need with close_tab().
- Element refs are scoped to the current tab. After switch_tab(), use only refs from the new
  tab's snapshot.
- When the current tab closes by itself (a sign-in popup), the next answer says so and names the
  tab that is current now.
"""
"""The system prompt's bullets Pilo's tab work asks for (seed 004, E), for a server with its set."""


def instructions(tool_sets: Sequence[str], caps: Sequence[str] | None = None) -> str:
    """The instructions for a server offering `tool_sets` (the default set narrowed to `caps`):
    never naming a tool the server does not offer."""
    pilo = PILO_INSTRUCTIONS if "pilo" in tool_sets else ""
    if "default" not in tool_sets:
        return OTHER_SETS_INSTRUCTIONS + pilo
    if caps is not None and "observe" not in caps:
        return INSTRUCTIONS.replace(OBSERVE_HINT, "") + pilo
    return INSTRUCTIONS + pilo
