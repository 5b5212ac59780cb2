"""What the model reads: library errors, events, tabs, instances and telemetry entries as text.

The library's errors carry facts (`tab_id`, `ref`, `reason`, ...) and advice that names no tool;
here the advice names this server's tools and flags, so the model knows the exact next call.
Every line about a tab, an event or an entry is written here and nowhere else.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tabpilot import (
    ActionEntry,
    ActionError,
    BodyEntry,
    BrowserNotFoundError,
    ConnectError,
    ConsoleEntry,
    DialogOpenError,
    ErrorEntry,
    ExtensionNotConnectedError,
    ForeignRefError,
    InstanceInfo,
    InstanceLostError,
    InstanceNotFoundError,
    InstanceUnreachableError,
    LastTabError,
    NavigationBlockedError,
    NetworkEntry,
    NoDialogError,
    PathNotAllowedError,
    PendingRequest,
    StaleRefError,
    TabCrashedError,
    TabEvent,
    TabInfo,
    TabLimitError,
    TabManager,
    TabNotFoundError,
    TabpilotError,
    WebSocketEntry,
    dialog_noun,
    quoted,
    tabs_said,
)

PREVIEW_CHARS = 256
LINE_CHARS = 1_000
"""A console line's text or an error's message is cut here in a list of entries (one entry alone
is shown whole): a page may log 8 KB at a time, and a list is read to find the line that matters."""
URL_CHARS = 300
"""URLs longer than this are cut in text (structured content has them whole)."""


def short(text: str, cap: int = URL_CHARS) -> str:
    return text if len(text) <= cap else text[:cap] + f"…[{len(text) - cap} more]"


def dialog_said(dialog_type: str, message: str | None) -> str:
    """What a dialog says, to follow its name in a line: `: 'Sure?'`, or what a dialog without
    words is about (a beforeunload dialog has none: the page asks before it is left)."""
    if message:
        return f": {quoted(message)}"
    return " (the page asks before it is left)" if dialog_type == "beforeunload" else " (no message)"


def sentences(parts: Sequence[str]) -> str:
    """The non-empty `parts` of a result, one after another; one that follows a code block starts
    on a line of its own (Markdown would read it as part of the block)."""
    text = ""
    for part in filter(None, parts):
        text += ("\n" if text.endswith("```") else " " if text else "") + part
    return text


MAX_RESULT_CHARS = 20_000
"""A script's result longer than this (as JSON) is cut, in text and structured content alike: ask
the page for less (a selector, a slice)."""


def script_value(value: Any) -> tuple[str, dict[str, Any]]:
    """A script's result as JSON text (cut at MAX_RESULT_CHARS, saying so) and the structured
    facts about it: `value`, or when cut `valueJson` (the JSON as far as it goes), `truncated`
    and `valueChars`."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_RESULT_CHARS:
        return text, {"value": value}
    cut = text[:MAX_RESULT_CHARS]
    shown = f"{cut}... ({len(text) - MAX_RESULT_CHARS} more characters cut)"
    return shown, {"valueJson": cut, "truncated": True, "valueChars": len(text)}


def json_block(text: str) -> str:
    return f"```json\n{text}\n```"


@dataclass(frozen=True, slots=True)
class ToolCalls:
    """The calls an error's advice names, in one tool set's words: a set with no such tool has
    None there, and its advice says what to do without naming one."""

    read: Callable[[int | str | None], str] | None
    """Reads a tab's page and gives its element handles (`browser_snapshot(tabId=3)`)."""
    list_tabs: str
    close_tab: Callable[[int | str | None], str]
    close_tabs: str
    """Closes tabs, said in general."""
    open_tab: str | None
    """Opens a tab on a URL."""
    handle_dialog: Callable[[int | str | None], str] | None
    element: str = "a ref"
    """What names an element in the set: 'a ref', 'an index'."""
    activate: Callable[[int | str | None], str] | None = None
    """Brings a tab to the front (None: the set has no such call)."""
    instances: bool = False
    """The set has browser_instance."""
    forms: bool = True
    """The set fills forms (a checkbox takes true or false there) and uploads files."""
    select: bool = True
    """The set selects options of a drop-down list."""
    plain_error: Callable[[str, str], str] | None = None
    """How the set words an error of its tool (the tool's name, what went wrong), as the whole text
    of the response; None: tabpilot's `### Error` section, followed by the other sections."""
    tab_named: Callable[[int], str] | None = None
    """How the set names a tab where its own texts do not say `tab 3` (browser-use: `tab_id "3"`):
    an error names the tabs it is about (its structured ids) so (`tabs_renamed`). None: `tab 3`."""


CONNECT_EXTENSION = "browser_instance(action='connect', extension=true)"
"""The call that connects the user's browser through the tabpilot extension (or, before the
extension connects, returns the connect page's URL to pair it)."""

DEFAULT_CALLS = ToolCalls(
    read=lambda tab: f"browser_snapshot(tabId={tab})" if tab is not None else "browser_snapshot",
    list_tabs="browser_tabs(action='list')",
    close_tab=lambda tab: f"browser_tabs(action='close', tabId={tab})",
    close_tabs="browser_tabs(action='close') or browser_tabs(action='close_others')",
    open_tab="browser_tabs(action='new', url=...)",
    handle_dialog=lambda tab: f"browser_handle_dialog(tabId={tab}, accept=true|false)",
    instances=True,
    activate=lambda tab: f"browser_tabs(action='activate', tabId={tab})",
)


# -- errors ------------------------------------------------------------------------------------------


def _action_advice(exc: ActionError, calls: ToolCalls) -> str:
    snap = calls.read(exc.tab_id) if calls.read is not None else None
    advice = {
        "covered": (
            f"Close or dismiss what covers it (a dialog, banner or menu; call {snap} to find it), then retry."
            if snap
            else "Close or dismiss what covers it (a dialog, banner or menu), then retry."
        ),
        "no_option": "Options match by value or label; use one of them.",
        "timeout": f"The page may be busy or still loading: {f'call {snap} again and ' if snap else ''}retry.",
        "busy": f"The page may be busy: {f'call {snap} again and ' if snap else ''}retry.",
        "too_large": (
            f"Read a part of it: its top levels with browser_snapshot(tabId={exc.tab_id}, depth=3), then the "
            "part you need with browser_snapshot(ref=...) of an element there."
            if calls is DEFAULT_CALLS
            else f"{f'Call {snap} again in a while' if snap else 'Retry in a while'}: the page may be faster then."
        ),
        "not_happened": f"Call {snap} again to see the page as it is." if snap else exc.advice,
        "unresponsive": _unresponsive_advice(exc, calls),
        "tab_closed": f"List tabs with {calls.list_tabs} to see what is open.",
        "navigated": f"Call {snap} again and retry." if snap else "Retry.",
        "dialog": (
            f"Handle it with {calls.handle_dialog(exc.tab_id)}, then retry."
            if calls.handle_dialog is not None
            else "Retry."
        ),
    }
    if exc.reason == "hidden" and calls.activate is not None:
        return (
            f"Bring it to the front with {calls.activate(exc.tab_id)} (if its window is minimized, ask the "
            "user to show it), then take the screenshot again."
        )
    if exc.reason == "loading" and snap:  # the page is on its way: its read call, in a while
        return _SNAPSHOT_OF_TAB.sub(lambda m: f"{'C' if m.group()[0] == 'T' else 'c'}all {snap}", exc.advice)
    if exc.reason == "unknown_key" and calls is DEFAULT_CALLS:  # perhaps text given as a key
        return (
            f"{exc.advice} To type text, use browser_type(ref=..., text=...) on the field (a snapshot "
            "marks the focused one [active])."
        )
    if exc.reason == "wrong_field" and exc.field is not None:
        return _wrong_field_advice(exc.field, snap, calls)
    if exc.reason == "certificate":
        launch = (
            ", or launch a browser with browser_instance(action='launch', options={ignoreHttpsErrors: true})"
            if calls.instances
            else ""
        )
        return exc.advice.replace(
            "start the browser with HTTPS errors ignored (BrowserOptions.ignore_https_errors)",
            f"ask whoever runs tabpilot to start it with --ignore-https-errors{launch}",
        )
    if exc.reason == "proxy":
        return exc.advice.replace("(BrowserOptions.proxy_server)", "(--proxy-server)")
    if exc.reason == "disabled" and snap:
        wait = (
            f"wait for that (browser_wait_for(tabId={exc.tab_id}, text=...) for what the page shows then)"
            if calls is DEFAULT_CALLS
            else "wait for that"
        )
        return (
            f"If the page enables it later (once a load ends, or other fields are filled in), {wait}, then "
            f"retry; else call {snap} again and use {calls.element} of an element you can act on."
        )
    if exc.reason in ("not_visible", "not_editable", "unstable", "detached") and snap:
        return (
            f"Call {snap} again and use {calls.element} of an element you can act on (open the menu or section "
            "that holds it first)."
        )
    return advice.get(exc.reason, exc.advice)


_SNAPSHOT_OF_TAB = re.compile(r"[Tt]ake a snapshot of tab \d+")
"""How the library's advice for a tab whose page is on its way (reason "loading") names the read."""


def _unresponsive_advice(exc: ActionError, calls: ToolCalls) -> str:
    """What to close when a page does not answer: the tab, or first the tabs whose pages run on
    its thread (`exc.close_first`), one of whose scripts may be what keeps it busy."""
    if not exc.close_first:
        again = f"with {calls.read(exc.tab_id)} " if calls.read is not None else ""
        return (
            f"Read it again {again}in a while: a long task ends by itself. If it still does not answer, close "
            f"it with {calls.close_tab(exc.tab_id)}; other tabs keep working. Reloading it may not help while "
            "the script runs."
        )
    first = " and ".join(calls.close_tab(t) for t in exc.close_first)
    return (
        f"Close {first} first, then {calls.close_tab(exc.tab_id)} if tab {exc.tab_id} still does not "
        "answer; other tabs keep working."
    )


def _wrong_field_advice(field: str, snap: str | None, calls: ToolCalls) -> str:
    """What to do with an element that takes something else than the action gives it, said with
    the set's tools (`snap`: the call that reads the page, if the set has one)."""
    if field in ("button", "not_text"):
        find = f"call {snap} to find it" if snap else "read the page again to find it"
        which = "the field you meant" if field == "button" else "a textbox, searchbox or combobox"
        return f"{'Click it, or use' if field == 'button' else 'Use'} {calls.element} of {which} ({find})."
    if field == "text":
        return "Type text into it instead."
    if field == "toggle":
        return "Click it to change it" + (
            " (a form fill takes true or false for it)." if calls.forms else "."
        )
    if field == "options" and calls.select:
        return "Select one of its options instead, by value or label."
    if field == "file" and calls.forms:
        return "Upload files to it instead."
    takes = "one of its options" if field == "options" else "files"  # no tool here gives them
    return f"It takes {takes}, which no tool here gives; leave it, or use a field that takes text."


def _connect_advice(exc: ConnectError, calls: ToolCalls) -> str:
    if exc.reason == "use_cdp":
        return "It looks like a Chrome DevTools endpoint: connect it with cdpEndpoint instead (browser_instance(action='connect'))."
    if exc.reason == "no_debugging":
        return (
            f"{exc.advice} Then call again (tabpilot serve --auto-connect reads the DevToolsActivePort file of "
            "the profile --user-data-dir names, or of Chrome's default profile)."
        )
    if exc.reason == "already_connected" and exc.instance_id is not None:
        return f"Use instance {exc.instance_id}: its tabs are in {calls.list_tabs}" + (
            f"; to connect the browser again, close it first "
            f"(browser_instance(action='close', instanceId={exc.instance_id!r}))."
            if calls.instances
            else "."
        )
    if exc.reason == "profile_in_use" and exc.instance_id is not None:
        return f"Use instance {exc.instance_id}: its tabs are in {calls.list_tabs}" + (
            f"; to launch on that profile again, close it first "
            f"(browser_instance(action='close', instanceId={exc.instance_id!r})), or launch without "
            "userDataDir for a fresh profile."
            if calls.instances
            else "."
        )
    if exc.reason == "use_server":
        return "For a Playwright browser server use wsEndpoint instead (the ws:// URL `playwright launch-server` prints)."
    return exc.advice


def _stale_advice(exc: StaleRefError, calls: ToolCalls) -> str:
    if calls.read is None:
        return exc.advice
    return f"Call {calls.read(exc.tab_id)} and use {calls.element} from it."


def _foreign_advice(exc: ForeignRefError, calls: ToolCalls) -> str:
    if calls.read is None:
        return exc.advice
    return f"Leave tabId out to act on tab {exc.ref_tab_id}, or take a {calls.read(exc.tab_id)} and use one of its refs."


def _dialog_advice(exc: DialogOpenError, calls: ToolCalls) -> str:
    if calls.handle_dialog is None:
        return exc.advice
    if exc.waiting_tab_id is not None:
        return (
            f"Handle it first with {calls.handle_dialog(exc.tab_id)}, then retry on tab {exc.waiting_tab_id}."
        )
    return f"Handle it first with {calls.handle_dialog(exc.tab_id)}; other tabs keep working."


def _last_tab_advice(exc: LastTabError, calls: ToolCalls) -> str:
    instance = ", or close the instance" if calls.instances else ""
    if not exc.room:
        return f"Load the page you need in this tab instead (the tab limit leaves no room for another){instance}."
    if calls.open_tab is None:
        return "Keep it open: a browser needs one tab."
    return f"Open another tab first ({calls.open_tab}){instance}."


def _tab_limit_advice(exc: TabLimitError, calls: ToolCalls) -> str:
    higher = ", or ask whoever runs the server to raise --max-total-tabs" if exc.total else ""
    if exc.total and exc.own == 0:
        return f"The other sessions hold them all: retry once they have closed tabs or ended{higher}."
    if (exc.own if exc.total else exc.count) == 1:
        # The one tab cannot be closed (a browser keeps its last tab): closing is no way out.
        return f"Load the page in the tab you have instead{higher}."
    return f"Close tabs you no longer need ({calls.close_tabs}), then retry."


def tab_limit_closed(manager: TabManager, calls: ToolCalls, *, tabs: int = 1) -> str:
    """What an answer says of the `tabs` tabs a page opened that the tab limit closed at once:
    which limit is reached, and the way out (the tabs never showed: their action seems to have
    opened nothing)."""
    budget = manager.rules.budget
    listed = manager.tabs()
    them = "it" if tabs == 1 else "them"
    if (
        budget is not None
        and budget.full
        and all(count < manager.max_tabs for count in Counter(t.instance_id for t in listed).values())
    ):
        limit = f"--max-total-tabs {budget.limit}, for all sessions together"
        if sum(not t.users_own for t in listed) <= 1:
            # Its one tab cannot be closed (a browser keeps its last tab): others hold the rest.
            return (
                f"the tab limit ({limit}) closed {them} at once: the other sessions hold the other "
                "tabs. To let a page open tabs, retry once they have closed tabs or ended, or ask "
                "whoever runs the server to raise the limit"
            )
    else:
        limit = f"--max-tabs {manager.max_tabs}"
        if manager.max_tabs <= 1:
            return (
                f"the tab limit ({limit}) closed {them} at once: each instance has only the one tab. To "
                "let a page open tabs, ask whoever runs the server to raise the limit"
            )
    return (
        f"the tab limit ({limit}) closed {them} at once. To let a page open "
        f"tabs, close tabs you no longer need ({calls.close_tabs}), or ask whoever runs the server to "
        "raise the limit"
    )


def _crashed_advice(exc: TabCrashedError, calls: ToolCalls) -> str:
    if calls.open_tab is None:  # a set that opens no tabs puts a blank one in a last tab's place
        return f"Close it with {calls.close_tab(exc.tab_id)} (a blank tab takes its place if it is the last)."
    return (
        f"Close it with {calls.close_tab(exc.tab_id)} and open {short(exc.url)} again with {calls.open_tab}."
    )


def _not_found_advice(exc: TabNotFoundError, calls: ToolCalls) -> str:
    if exc.kept_by is not None:  # its browser keeps it: how to reach it again
        return _lost_advice(exc.kept_by, calls)
    if exc.open_tabs:
        return f"Use one of these ids, or list tabs again with {calls.list_tabs}."
    if exc.no_instance is not None:  # no tab can be opened either: what gives an instance
        return f"{exc.no_instance.fact} {_advice_for(exc.no_instance, calls)}"
    if exc.no_room is not None:  # nor can one be opened: the other sessions hold every tab there may be
        room = exc.no_room
        then = f"Open one with {calls.open_tab}" if calls.open_tab else "Retry"
        return (
            f"None can be opened either: {_tabs_open(room.count)} in all sessions and instances together, "
            f"the limit (--max-total-tabs {room.limit}), and the other sessions hold them all. {then} once "
            "they have closed tabs or ended, or ask whoever runs the server to raise --max-total-tabs."
        )
    return f"No tab is open: open one with {calls.open_tab}." if calls.open_tab else exc.advice


_NEXT_CALL_REPLACES = {
    "launch": "The next call launches a new browser in its place, with a blank tab.",
    "isolate": "The next call opens your session a new browser in its place, with a blank tab.",
    "reconnect": "The next call connects to it again; its tabs keep their ids.",
    "reconnect-blank": "The next call connects to it again, with a blank tab.",
}
"""What replaces a lost default instance, said to a set without browser_instance: its next call."""


_NOTHING_REPLACES = (
    "This server does not connect to it again by itself, and its tools cannot launch or connect another "
    "browser: ask the user to restart the tabpilot server (with the browser it connects to running)."
)
"""What a set without browser_instance says of a lost browser that nothing replaces (a CDP browser
that closed): the library's advice names calls the set does not have."""


def _lost_advice(exc: InstanceLostError, calls: ToolCalls) -> str:
    if not calls.instances:  # a set without browser_instance (nor instanceId)
        if exc.replacement is None and exc.replaced_by is None:
            return _NOTHING_REPLACES
        return _NEXT_CALL_REPLACES.get(str(exc.replacement), exc.advice)
    if exc.replaced_by is not None:
        return f"Use instance {exc.replaced_by} instead, or leave instanceId out for the default instance."
    if exc.replacement == "reconnect":
        return "A call without tabId and instanceId connects it again as the default instance; its tabs keep their ids."
    if exc.replacement == "reconnect-blank":
        return "A call without tabId and instanceId connects to it again as the default instance, with a blank tab."
    if exc.replacement == "launch":
        return "A call without tabId and instanceId launches a new default browser in its place, with a blank tab."
    if exc.replacement == "isolate":  # a session's own context of the server's browser (HTTP)
        return "A call without tabId and instanceId opens your session a new browser in its place, with a blank tab."
    if exc.replacement in ("pair", "extension"):  # the user's browser: its tabs wait there
        page = f"{CONNECT_EXTENSION} returns its connect page's URL"
        how = (
            f"Ask the user to pair the tabpilot extension with this server again ({page}, to open in their browser)."
            if exc.replacement == "pair"
            else "The tabpilot extension connects again by itself once the user's browser runs with it; if the "
            f"user paired it with another server meanwhile, ask them to pair it with this one again ({page})."
        )
        return (
            f"{how} Its tabs are back, under the ids they had, as soon as it connects: see {calls.list_tabs}."
        )
    if exc.elsewhere:  # nothing takes its place, and other instances have tabs to go on in
        first = exc.elsewhere[0]
        activate = f", or {calls.activate(first)} to make its instance the default" if calls.activate else ""
        return (
            f"Pass tabId of a tab of another instance ({tabs_said(exc.elsewhere)}){activate}; or launch or "
            "connect another instance with browser_instance."
        )
    return "Launch or connect another instance with browser_instance."


_BLOCKED = {
    "blocked": lambda e: (
        f"Navigation to {short(e.url)} is blocked: {short(e.origin)} is in --blocked-origins. Choose another URL."
    ),
    "privileged": lambda e: (
        f"Navigation to {short(e.url)} is blocked: {e.origin} URLs are refused unless the server is started with "
        f"--allowed-origins {e.origin} . Use an http(s) URL instead."
    ),
}

_ADVICE: list[tuple[type[TabpilotError], Callable[[Any, ToolCalls], str]]] = [
    (StaleRefError, _stale_advice),
    (ForeignRefError, _foreign_advice),
    (DialogOpenError, _dialog_advice),
    # Called only once no tab has one (browser_handle_dialog names the tabs that do).
    (NoDialogError, lambda e, calls: "No tab has an open dialog; continue with your next step."),
    (TabNotFoundError, _not_found_advice),
    (LastTabError, _last_tab_advice),
    (TabCrashedError, _crashed_advice),
    (TabLimitError, _tab_limit_advice),
    (
        InstanceLostError,
        _lost_advice,
    ),
    (
        ExtensionNotConnectedError,
        lambda e, calls: (
            f"Ask the user to open the tabpilot extension's connect page (chrome-extension://{e.extension_id}/"
            "connect.html?port=...&token=..., as the server printed it at start"
            + (f", or as {CONNECT_EXTENSION} returns it" if calls.instances else "")
            + ") in the browser where the extension is loaded (`tabpilot extension path` prints the folder to "
            "load unpacked at chrome://extensions). It connects by itself from then on; then retry."
        ),
    ),
    (
        InstanceUnreachableError,
        lambda e, calls: (
            (
                "The tab asked for may have opened all the same before the link dropped: retry in a few "
                f"seconds with {calls.list_tabs} first, and use or close a tab it shows that you did not "
                "open rather than opening another."
                if e.opening
                else f"Retry in a few seconds: {calls.list_tabs} shows whether its tabs are back."
            )
            + (" Tabs of other instances keep working." if calls.instances else "")
        ),
    ),
    (
        InstanceNotFoundError,
        lambda e, calls: (
            # A set with no instance tool: the error lists the open ones, and cannot list them again.
            ("Use one of these." if e.instance_id else e.advice)
            if not calls.instances
            else "Use browser_instance(action='list') to see them."
            if e.instance_id
            else f"Connect it again with {CONNECT_EXTENSION}."
            if e.extension
            else "Launch one (browser_instance(action='launch')) or connect one."
        ),
    ),
    (ActionError, _action_advice),
    (ConnectError, _connect_advice),
]


def error_text(exc: BaseException, calls: ToolCalls = DEFAULT_CALLS) -> str:
    """An exception as the text of an `### Error` section: what happened, then the next call, in
    the words of the tool set `calls` describes (its tools, and its name of a tab: `tab_named`). A
    long word in it (a URL, a value the caller sent) is cut: an error repeats, it never echoes."""
    text = _error_text(exc, calls)
    if calls.tab_named is not None:
        text = tabs_renamed(text, error_tab_ids(exc), calls.tab_named)
    return _LONG_WORD.sub(lambda m: short(m.group()), text)


def error_tab_ids(exc: BaseException) -> set[int]:
    """The tabs an error is about, by its structured fields (never read from its text)."""
    ids: list[object] = [getattr(exc, name, None) for name in ("tab_id", "waiting_tab_id", "ref_tab_id")]
    if isinstance(exc, ActionError):
        ids += exc.close_first
    if isinstance(exc, InstanceLostError):
        ids += exc.elsewhere
    if isinstance(exc, TabNotFoundError):
        ids += exc.open_tab_ids
    return {i for i in ids if isinstance(i, int) and not isinstance(i, bool)}


_TAB_WORDS = re.compile(r"\b([Tt])ab (\d+)\b(?:'s (\w+))?")
_PAGE_WORDS = re.compile(
    r"""(?<!\w)'(?:[^'\\\n]|\\.)*'|(?<!\w)"(?:[^"\\\n]|\\.)*"|<[^\n]*>|\S+://\S*|^  - tab \d+: (?P<title>.*)$""",
    re.MULTILINE,
)
"""What a text of tabpilot's quotes of a page's, left as it is by `tabs_renamed`: a value quoted
as `quoted` quotes it (a dialog's message, a key), an element's HTML (what covers one), a URL,
and the titles of an error's list of open tabs."""


def tabs_renamed(text: str, tab_ids: set[int], named: Callable[[int], str]) -> str:
    """`text`, tabpilot's words, with each tab of `tab_ids` (the tabs it is about, known from
    structured facts, not guessed from the text) named as `named` names it: `tab 5` -> `named(5)`,
    `Tab 5` -> `Tab with named(5)`, `tab 5's history` -> `the history of named(5)`. What the text
    quotes of a page's (`_PAGE_WORDS`) is left as it is, even where it says `tab 5`."""
    if not tab_ids:
        return text

    def rename(match: re.Match[str]) -> str:
        tab_id = int(match.group(2))
        if tab_id not in tab_ids:
            return match.group()
        if match.group(3):
            return f"the {match.group(3)} of {named(tab_id)}"
        return f"Tab with {named(tab_id)}" if match.group(1) == "T" else named(tab_id)

    parts, at = [], 0
    for page in _PAGE_WORDS.finditer(text):
        start = page.start("title") if page.group("title") is not None else page.start()
        parts += [_TAB_WORDS.sub(rename, text[at:start]), text[start : page.end()]]
        at = page.end()
    return "".join([*parts, _TAB_WORDS.sub(rename, text[at:])])


_LONG_WORD = re.compile(rf"\S{{{URL_CHARS + 1},}}")


def _blocked_text(exc: NavigationBlockedError) -> str:
    """Why the URL policy refuses a URL, in the words of the server's options."""
    if exc.reason in _BLOCKED:
        return _BLOCKED[exc.reason](exc)
    if exc.reason == "not_allowed":
        return (
            f"Navigation to {short(exc.url)} is blocked: {short(exc.origin)} is not in --allowed-origins. "
            "Choose a URL on an allowed origin."
        )
    return str(exc)


def in_flag_words(exc: BaseException, browser_path: str = "--browser-path") -> str:
    """An error as the one who started the server reads it (in a tool's answer, in the log, at
    start): the library's name of an option is the flag that sets it (`browser_path`: as the
    operator gave it, a config file's key)."""
    if isinstance(exc, BrowserNotFoundError):
        return str(exc).replace("the browser path option", browser_path)
    return str(exc)


def _error_text(exc: BaseException, calls: ToolCalls) -> str:
    if isinstance(exc, NavigationBlockedError):
        return _blocked_text(exc)
    if isinstance(exc, TabLimitError):
        if exc.total:
            return (
                f"Cannot open a new tab: {_tabs_open(exc.count)} in all sessions and instances together, "
                f"the limit (--max-total-tabs {exc.limit}){_whose(exc)}. {_advice_for(exc, calls)}"
            )
        tabs = "1 tab" if exc.count == 1 else f"{exc.count} tabs"
        # A set that knows no instances names the browser, as it does a last tab (LastTabError).
        holder = f"instance {exc.instance_id}" if calls.instances else "its browser"
        return (
            f"Cannot open a new tab: {holder} has {tabs}, the limit (--max-tabs "
            f"{exc.limit}, --tab-limit-policy {exc.policy}). {_advice_for(exc, calls)}"
        )
    if isinstance(exc, PathNotAllowedError):
        return (
            f"{exc.fact} {exc.advice} Other folders are allowed only by starting the server with "
            "--allowed-file-root DIR (ask whoever runs it)."
        )
    if isinstance(exc, BrowserNotFoundError):
        return in_flag_words(exc)
    if isinstance(exc, LastTabError) and not calls.instances:  # a set that knows no instances (the
        # user's browser through the extension may have other tabs, out of tabpilot's scope)
        if exc.elsewhere:  # another browser has them: a tab this set opens goes there, no help
            fact = exc.fact.replace(
                f"only tab of instance {exc.instance_id}",
                "only tab of its browser (the other open tabs are another browser's)",
            )
            return exc.worded(fact, "Keep it open: a browser keeps its last tab. Load pages in it instead.")
        fact = exc.fact.replace(f"only tab of instance {exc.instance_id}", "only open tab")
        return exc.worded(fact, _advice_for(exc, calls)).strip()
    if isinstance(exc, TabpilotError):
        advice = _advice_for(exc, calls)
        return exc.worded(exc.fact, advice).strip()
    return str(exc)


def _tabs_open(count: int) -> str:
    return "1 tab is open" if count == 1 else f"{count} tabs are open"


def _whose(exc: TabLimitError) -> str:
    """How many of the tabs over the total are the caller's, where not all of them are."""
    if exc.own is None or exc.own == exc.count:
        return ""
    if not exc.own:
        return "; this session has none of them"
    return f"; {exc.own} of them {'is' if exc.own == 1 else 'are'} this session's"


def _advice_for(exc: TabpilotError, calls: ToolCalls) -> str:
    for kind, advise in _ADVICE:
        if isinstance(exc, kind):
            return str(advise(exc, calls))
    return exc.advice


# -- tabs, events, instances ------------------------------------------------------------------------


ERROR_PAGE_MARK = "failed to load (error page)"
"""How a tab on the browser's error page is marked (its URL is the one that failed)."""
BLOCKED_PAGE_MARK = "blocked by the URL policy (error page)"
"""How a tab on the browser's error page is marked when the URL policy refused that URL (a link,
a form or a script led the tab there; the `navigation_blocked` event said why)."""


def error_page_mark(blocked: bool) -> str:
    return BLOCKED_PAGE_MARK if blocked else ERROR_PAGE_MARK


def tab_line(
    info: TabInfo, *, active_id: int | None, new_errors: int = 0, errors_dropped: bool = False
) -> str:
    """One line of a `### Tabs` section. `active_id`: the tab calls without tabId use (the default
    instance's active tab; None: none); each other instance's own active tab is marked as only its.
    `errors_dropped`: more new errors than `new_errors` came, and were dropped."""
    marks: list[str] = []
    if info.active:
        marks.append("active" if info.id == active_id else "active in its instance")
    if info.opener_id is not None:
        marks.append(f"opened by tab {info.opener_id}")
    if info.pinned:
        marks.append("pinned")
    if info.users_own:
        marks.append("the user's")
    if info.loading_url and info.loading_url != info.url:  # a popup shows about:blank till its page comes
        marks.append(f"loading {short(info.loading_url)}")
    elif info.status != "complete":
        marks.append(info.status)
    if info.error_page:
        marks.append(error_page_mark(info.blocked))
    if info.dialog is not None:
        marks.append(f"{info.dialog.type} dialog open{dialog_said(info.dialog.type, info.dialog.message)}")
    if info.held_by is not None:
        marks.append(f"waits for the dialog on tab {info.held_by}")
    if errors_dropped:
        marks.append(
            f"more than {new_errors} new errors (some dropped)" if new_errors else "new errors (all dropped)"
        )
    elif new_errors:
        marks.append(f"{new_errors} new error{'s' if new_errors != 1 else ''}")
    tail = f" [{', '.join(marks)}]" if marks else ""
    return f"- tab {info.id}: {page_line(info.title, info.url)}{tail}"


def page_line(title: str, url: str) -> str:
    """`Title (url)`, or the URL alone when the title says nothing more (a page without one, or
    still loading: Chromium shows the URL, without its scheme, as the title). A window not yet
    given a URL (a popup whose opener has not loaded it) shows as about:blank, as it is."""
    url = url or "about:blank"
    if not title or title in (url, url.split("://", 1)[-1]):
        return short(url)
    return f"{short(title, 200)} ({short(url)})"


_CLOSED_AS = {
    "cap": "over the tab limit",
    "shutdown": "its session ended",
    "crash": "its browser was lost",
    "user": "by the user, in their browser",
}
"""How a `tab_closed` event says its cause where "by <cause>" would not read right. (`crash` is
the cause of the tabs of a lost instance, whatever took it: a kill, a quit, a grid that ended its
session; the `instance_lost` event beside says which.)"""


def loading_said(tab_id: int, page: str | None) -> str:
    """That a tab is on its way to `page` (None: a page not named) whose server has not sent it
    yet: the action that made it load is done, and the browser keeps waiting."""
    return f"Tab {tab_id} is loading {page or 'a new page'}; its server has not sent it yet."


def closed_as(cause: object, limit: object = None) -> str:
    """A close cause in words, as `closed (...)` says it: `by page`, `over the tab limit`; of the
    tab cap, which one (`limit` of the event: the total of all sessions and instances, or none)."""
    if cause == "cap" and limit == "total":
        return "over the tab limit of all sessions and instances together, --max-total-tabs"
    return _CLOSED_AS.get(str(cause), f"by {cause}")


LEFT_OPEN = {
    "unshared": "no longer shared with the agent by the user; it stays open in their browser",
    "unreachable": "out of reach: the link to the user's browser was lost; it stays open there unless that browser closed",
    "released": "no longer the agent's, as its instance was closed; it stays open in its browser",
    "privileged": (
        "out of reach: it went to a page the tabpilot extension may not reach (a browser or extension "
        "page, or a local file the URL policy refuses); it stays open there"
    ),
}
"""The ways a tab leaves the agent while it stays open (`tab_closed` causes), in words: every tool
set tells them so, not as closed."""


def event_line(event: TabEvent, *, default_instance: str | None = None) -> str:
    """One line of an `### Events` section. `default_instance`: the instance whose active tab calls
    without tabId use; another's active tab is told as that instance's own."""
    d, tab = event.data, event.tab_id
    if event.type == "tab_opened":
        if d.get("back"):
            return f"tab {tab} is back under its id (its browser is connected again): {short(d.get('url') or 'about:blank')}"
        opener = f" by tab {d['openerId']}" if d.get("openerId") is not None else ""
        head, url = f"tab {tab} opened ({d.get('cause')}){opener}", d.get("url") or "about:blank"
        if d.get("cause") == "tool" and url == "about:blank":
            # A tool opens a blank tab, then loads its URL (if any): the blank says nothing.
            return head
        return f"{head}: {short(url)}"
    if event.type == "tab_closed":
        tail = ""
        if d.get("activeChanged"):
            active = d.get("activeTabId")
            if default_instance is not None and event.instance_id not in (None, default_instance):
                own = f"instance {event.instance_id}"
                tail = (
                    f"; {own}'s active tab is now {active}"
                    if active is not None
                    else f"; {own} has no active tab"
                )
            else:
                tail = f"; active tab is now {active}" if active is not None else "; no tab is active"
        if d.get("by") in LEFT_OPEN:
            return f"tab {tab} is {LEFT_OPEN[str(d['by'])]}{tail}"
        return f"tab {tab} closed ({closed_as(d.get('by'), d.get('limit'))}){tail}"
    if event.type == "tab_activated":
        return f"tab {tab} is now active"
    if event.type == "tab_crashed":
        return (
            f"tab {tab} crashed; it takes no more work: close it (browser_tabs(action='close')) and open "
            f"{short(str(d.get('url') or 'its page'))} again in a new tab (browser_tabs(action='new'))"
        )
    if event.type == "dialog_opened":
        return (
            f"tab {tab} shows {dialog_noun(str(d.get('dialogType')))}"
            f"{dialog_said(str(d.get('dialogType')), d.get('message'))}; "
            "handle it with browser_handle_dialog"
        )
    if event.type == "dialog_closed":
        return f"tab {tab}: dialog closed"
    if event.type == "script_result":
        dialog = "its dialog" if d.get("heldBy") == tab else f"the dialog on tab {d.get('heldBy')}"
        script = f" ({quoted(str(d['function']), 80)})" if d.get("function") else ""
        held = f"the script{script} that waited for {dialog}"
        if "error" in d:
            return f"tab {tab}: {held} ended with an error: {d['error']}"
        returned = "undefined (no value)" if d.get("undefined") else script_value(d.get("value"))[0]
        return f"tab {tab}: {held} returned {returned}"
    if event.type == "navigation_blocked":
        refused = NavigationBlockedError(
            d["fact"], d["advice"], url=d["url"], reason=d["reason"], origin=d["origin"]
        )
        why = _blocked_text(refused)
        if tab is None:
            return f"a new tab was kept from loading a URL the URL policy blocks; it shows the browser's error page. {why}"
        if d.get("inFrame"):
            return f"tab {tab}: a frame in its page was kept from loading a URL the URL policy blocks. {why}"
        return (
            f"tab {tab} was kept from loading a URL the URL policy blocks (a link, a form, a script or a "
            f"server's redirect led it there) and shows the browser's error page. {why}"
        )
    if event.type == "download":
        return f"tab {tab} started downloading {_file_name(d)} from {_download_source(str(d.get('url')))}"
    if event.type == "download_finished":
        name = _file_name(d)
        if d.get("failure") is not None:
            return f"tab {tab}: the download of {name} failed: {d['failure']}"
        if d.get("path") is None:  # the user's own browser saved it where it saves downloads
            return (
                f"tab {tab} finished downloading {name}; the user's browser saved it in its downloads folder"
            )
        size = d.get("bytes")
        return f"tab {tab} finished downloading {name}: saved as {d['path']} ({size:,} byte{'s' if size != 1 else ''})"
    if event.type == "instance_lost":
        return f"instance {event.instance_id} was lost: {d.get('reason')}"
    if event.type == "instance_relaunched":
        if d.get("kind") == "extension":
            return (
                f"instance {event.instance_id} connected the user's browser again in place of lost instance "
                f"{d.get('replaces')} ({d.get('reason')}); the tabs it still has are back under their ids"
            )
        how = "connected" if d.get("reconnected") else "launched"
        tabs = (
            "the tabs the browser still has keep their ids"
            if d.get("tabsKept")
            else f"the old tabs are gone, tab {d.get('activeTabId')} is its blank tab"
        )
        return f"instance {event.instance_id} was {how} in place of lost instance {d.get('replaces')} ({d.get('reason')}); {tabs}"
    return f"{event.type} on tab {tab}"


def _file_name(data: dict[str, Any]) -> str:
    """A download's suggested file name as the events quote it (a page can make it 250 characters)."""
    return repr(short(str(data.get("suggestedFilename")), 100))


def _download_source(url: str) -> str:
    """Where a download came from: its URL, or for a data: URL its type and size (the rest is the
    file itself)."""
    if url.startswith("data:"):
        kind = url[5:].split(",", 1)[0].split(";", 1)[0] or "text/plain"
        return f"a data: URL ({kind}, {len(url):,} characters)"
    return short(url)


def instance_line(info: InstanceInfo) -> str:
    where = f" {info.endpoint}" if info.endpoint else ""
    health = (
        f"LOST ({info.lost_reason})"
        if info.state == "lost"
        else f"UNREACHABLE for now ({info.unreachable})"
        if info.unreachable
        else info.state
    )
    default = ", default" if info.default else ""
    pid = f", pid {info.pid}" if info.pid else ""
    replaced = f", replaced by {info.replaced_by}" if info.replaced_by else ""
    tabs = f"{info.tab_count} tab{'s' if info.tab_count != 1 else ''}"
    return f"{info.id}: {info.kind}{where}, {tabs}, {health}{default}{pid}{replaced}"


# -- telemetry entries -----------------------------------------------------------------------------


def _method(method: str) -> str:
    """A request's method; none for one that started before tabpilot's session could see it."""
    return method or "(method not seen)"


def _body_lines(head: str, entry: BodyEntry, *, whole: bool) -> str:
    """A body entry: its request and response, each body cut at PREVIEW_CHARS unless `whole` (then
    with both sides' headers too)."""
    lines = [f"{head} {_method(entry.method)} {short(entry.url)} → {entry.status} {entry.mime_type}"]

    def show(body: str) -> str:
        return repr(body if whole else _cut(body))

    if whole:
        lines += ["    request headers:", *(f"      {k}: {v}" for k, v in entry.request_headers)]
    if entry.request_body is not None:
        lines.append(f"    request body: {show(entry.request_body)}")
    elif entry.request_binary:
        lines.append("    request body: binary (not kept)")
    if whole:
        lines += ["    response headers:", *(f"      {k}: {v}" for k, v in entry.response_headers)]
    if entry.response_body is None:
        why = "not read: too many bodies were waiting" if entry.omitted == "busy" else entry.omitted
        lines.append(f"    response body {why}")
    else:
        of = f" of {entry.body_size:,} B" if entry.body_size is not None else ""
        cut = f" (kept the first {len(entry.response_body.encode()):,} B{of})" if entry.truncated else ""
        lines.append(f"    response body{cut}: {show(entry.response_body)}")
    return "\n".join(lines)


def _cut(text: str, cap: int = PREVIEW_CHARS) -> str:
    return text if len(text) <= cap else text[:cap] + f"… [{len(text) - cap} more characters]"


def cut_in_list(entry: Any) -> bool:
    """Whether `entry_line` cuts this entry's text when it is not shown `whole`."""
    if isinstance(entry, ConsoleEntry):
        return len(entry.text) > LINE_CHARS
    if isinstance(entry, ErrorEntry):
        return len(entry.message) > LINE_CHARS
    return False


def entry_line(entry: Any, *, whole: bool = False) -> str:
    """One line (or a few) of `browser_observe` text for a recorded entry or tab event; `whole`: a
    body entry with its headers and its bodies as recorded (else each body cut at PREVIEW_CHARS),
    a console line's text or an error's message whole (else cut at LINE_CHARS)."""
    head = f"[tab {entry.tab_id}]" if entry.tab_id is not None else "[no tab]"
    if isinstance(entry, TabEvent):
        return f"{head} #{entry.seq} {event_line(entry)}"
    if isinstance(entry, PendingRequest):
        waiting = time.time() - entry.started
        return f"{head} pending {_method(entry.method)} {short(entry.url)} ({entry.resource_type}, waiting {waiting:.1f} s)"
    head += f" #{entry.seq}"
    if isinstance(entry, ConsoleEntry):
        page_line = entry.source == "console"
        at = f":{entry.line}" if entry.line else ""  # the browser's lines about a resource have none
        where = f" ({short(entry.url)}{at})" if entry.url else ""
        kind = "" if page_line else f" ({entry.source})"
        said = entry.text if whole else _cut(entry.text, LINE_CHARS)
        return f"{head} {entry.level}{kind}: {said}{where}"
    if isinstance(entry, ErrorEntry):
        line = f"{head} {entry.source}: {entry.message if whole else _cut(entry.message, LINE_CHARS)}"
        # The first frames tell where; the whole stack is in structured content.
        frames = [f.strip() for f in entry.stack.splitlines()[1:4] if f.strip()]
        if frames:
            return line + "\n    " + "\n    ".join(frames)
        return line + (f" ({short(entry.url)})" if entry.url else "")
    if isinstance(entry, NetworkEntry):
        status = "status not seen" if entry.status is None else str(entry.status)
        outcome = (
            f"FAILED {entry.failure}"
            if entry.failure
            else status + (", downloaded" if entry.download else "")
        )
        if entry.failure and entry.status is not None:  # failed after its response (its body cut)
            outcome += f" after status {entry.status}"
        size = f", {entry.response_body_size} B" if entry.response_body_size is not None else ""
        took = f", {entry.duration_ms:.0f} ms" if entry.duration_ms >= 0 else ""
        return f"{head} {_method(entry.method)} {short(entry.url)} → {outcome} ({entry.resource_type}{took}{size})"
    if isinstance(entry, BodyEntry):
        return _body_lines(head, entry, whole=whole)
    if isinstance(entry, WebSocketEntry):
        line = f"{head} ws{entry.socket_id} {entry.event}"
        if entry.event in ("sent", "received"):
            return f"{line} {f'<binary {entry.size} B>' if entry.binary else f'{entry.preview!r} ({entry.size} B)'}"
        if entry.event == "error":
            return f"{line}: {entry.error} ({short(entry.url)})"
        why = f" ({entry.error})" if entry.error else ""  # a close Chromium never reported
        return f"{line} {short(entry.url)}{why}"
    if isinstance(entry, ActionEntry):
        args = ", ".join(f"{k}={v!r}" for k, v in entry.arguments.items())
        return f"{head} {entry.tool}({args}) {'ok' if entry.ok else 'FAILED'}: {entry.outcome}"
    return f"{head} {entry.to_dict()}"
