"""The exceptions tabpilot raises.

Every error carries facts (`tab_id`, `ref`, `instance_id`, `reason`, ...) and its message says
what went wrong (`fact`) and what to do next (`advice`), in words that name no tool of any
server and no command-line flag: the library has many front ends. A server turns the same
facts into its own advice (tabpilot's MCP server: `tabpilot.server.advice`).

    TabpilotError                 .fact, .advice
    ├── BrowserNotFoundError      no Chromium to launch
    ├── PathNotAllowedError       a file path outside `roots` (.path, .roots; a ValueError too)
    ├── InstanceError             .instance_id
    │   ├── InstanceNotFoundError no instance has that id
    │   │   └── ExtensionNotConnectedError  none yet: the browser extension has not connected
    │   ├── InstanceLostError     the browser died or the endpoint went away
    │   ├── InstanceUnreachableError  the browser cannot be reached now, and may come back
    │   └── ConnectError          an endpoint could not be reached or spoke another protocol
    ├── TabError                  .tab_id
    │   ├── TabNotFoundError      no open tab has that id (.open_tabs, .reason)
    │   ├── TabCrashedError       its page's process died (.url)
    │   ├── LastTabError          refusing to close the last tab of an instance
    │   ├── TabLimitError         the tab cap refuses a new tab (.limit, .policy)
    │   ├── DialogOpenError       a dialog blocks the tab; handle it first (.dialog)
    │   └── NoDialogError         there is no dialog to handle
    ├── RefError                  .ref, .tab_id
    │   ├── StaleRefError         the ref is not in its tab's latest snapshot
    │   └── ForeignRefError       the ref belongs to another tab (.ref_tab_id)
    ├── NavigationBlockedError    the navigation policy refuses a URL (.url, .reason)
    └── ActionError               a page action failed (.tab_id, .ref, .reason)

They pickle and copy with their facts (a process pool's worker can raise them).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ._types import closed_reason

if TYPE_CHECKING:
    from ._types import DialogInfo


class TabLike(Protocol):
    """What an error message needs to name a tab."""

    @property
    def id(self) -> int: ...

    @property
    def title(self) -> str: ...

    @property
    def url(self) -> str: ...


@dataclass(frozen=True, slots=True)
class TabSummary:
    """An open tab as an error lists it (a copy: the error outlives the moment)."""

    id: int
    title: str
    url: str


def summarize(tabs: Iterable[TabLike]) -> tuple[TabSummary, ...]:
    return tuple(TabSummary(t.id, t.title, t.url) for t in tabs)


def quoted(text: str | None, cap: int = 200) -> str:
    """A quoted piece of text for a message, cut if long (so a huge input is not echoed back)."""
    shown = repr(text)
    return shown if len(shown) <= cap else shown[:cap] + f"… ({len(text or '')} characters)"


def text_given(value: object, what: str, example: str) -> str:
    """`value` if it is text; a TypeError that says what `what` takes otherwise (Python's own
    error named an attribute of the wrong type: `'NoneType' object has no attribute 'strip'`)."""
    if not isinstance(value, str):
        given = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
        of_type = "" if value is None else f" ({type(value).__name__})"
        raise TypeError(f"{what} takes text, such as {example}; it was given {given}{of_type}.")
    return value


def check_tab_id(value: object, *, text: bool = False) -> None:
    """Refuse a `value` that is no int (with `text`, no int or str: a decimal string or a CDP
    target id names a tab too) with a TypeError that says what a tab id is: `3.0` and `True`
    were looked up as they were, said as not found, or found tabs 3 and 1 in a dict."""
    if isinstance(value, bool) or not isinstance(value, (int, str) if text else int):
        given = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
        takes = (
            "an int such as 3, its decimal string or the tab's CDP target id" if text else "an int such as 3"
        )
        raise TypeError(f"tab_id takes a tab id, {takes}; it was given {given} ({type(value).__name__}).")


def check_count(value: object, name: str, meaning: str, *, minimum: int, unit: str) -> int:
    """`value` if it is an int of at least `minimum`; a TypeError that says what `name` takes
    (`meaning`: what the number is), or a ValueError, otherwise: `since="5"` failed in a comparison
    deep inside (`'<=' not supported between instances of 'int' and 'str'`), and `since=True` was
    read as 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        given = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
        raise TypeError(f"{name} takes an int, {meaning}; it was given {given} ({type(value).__name__}).")
    if value < minimum:
        least = "zero or more" if minimum == 0 else f"at least {minimum}"
        raise ValueError(f"{name} must be {least} {unit}, not {value}.")
    return value


def check_switch(value: object, name: str, *, none: bool = False) -> None:
    """Refuse a `value` that is not True or False (with `none`: or None) with a TypeError that
    says so: `submit="no"` was read as true, and submitted."""
    if not isinstance(value, bool) and not (none and value is None):
        given = repr(value) if len(repr(value)) <= 60 else repr(value)[:60] + "…"
        raise TypeError(f"{name} takes True or False{' (or None)' if none else ''}, not {given}.")


def id_shown(tab_id: object) -> str:
    """A tab id as a caller gave it, for a message: a number as it is, text quoted and cut (an
    empty or a 100k-character id is shown as such, not as nothing or whole)."""
    return str(tab_id) if isinstance(tab_id, int) else quoted(str(tab_id), 40)


def tabs_said(ids: Sequence[int], shown: int = 10) -> str:
    """Tab ids in a sentence: `tab 7`, `tabs 7, 9`; past `shown`, how many more."""
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return f"tab{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids[:shown]))}{more}"


def describe_tabs(tabs: Iterable[TabLike]) -> str:
    """One line per tab, as error messages list them."""
    lines = [f"  - tab {t.id}: {t.title or '(no title)'} ({t.url})" for t in tabs]
    return "\n".join(lines) if lines else "  (no open tabs)"


class TabpilotError(Exception):
    """Base class of every tabpilot error: `fact` (what happened) and `advice` (what to do next)."""

    def __init__(self, fact: str, advice: str = "") -> None:
        super().__init__(self.worded(fact, advice))
        self.fact = fact
        self.advice = advice

    def __reduce__(self) -> tuple[Any, ...]:
        # Made again from its message and attributes, not by calling `__init__` with the message
        # alone (Exception's way): most take facts, so pickle (a process pool, multiprocessing)
        # and copy failed with "__init__() missing 1 required positional argument".
        return (_remade, (type(self), self.args), self.__dict__)

    @staticmethod
    def worded(fact: str, advice: str) -> str:
        """The fact, then the advice (on its own line after a fact that ends with a list)."""
        if not advice:
            return fact
        return f"{fact}{'' if fact.endswith(chr(10)) else ' '}{advice}"


def _remade(kind: type[TabpilotError], args: tuple[Any, ...]) -> TabpilotError:
    """An error of `kind` with these `args`, its `__init__` not called: unpickling sets its
    attributes next (`TabpilotError.__reduce__`)."""
    return kind.__new__(kind, *args)


class BrowserNotFoundError(TabpilotError):
    """No Chromium could be found or installed."""


class PathNotAllowedError(TabpilotError, ValueError):
    """A file path outside the folders files may be read from or written to (`roots`)."""

    def __init__(self, path: str, roots: Sequence[str], doing: str) -> None:
        shown = ", ".join(roots) or "(none)"
        named = path if len(path) <= 200 else f"{path[:200]}… ({len(path)} characters)"
        super().__init__(
            f"{named} is outside the folders files may be {doing} ({shown}).",
            "Use a path inside one of them." if len(roots) > 1 else "Use a path inside it.",
        )
        self.path = path
        self.roots = tuple(roots)


class InstanceError(TabpilotError):
    def __init__(self, fact: str, advice: str = "", *, instance_id: str | None = None) -> None:
        super().__init__(fact, advice)
        self.instance_id = instance_id


def manager_closed() -> InstanceError:
    """Why no tab can be opened (and none is open): the TabManager is closed."""
    return InstanceError(
        "This TabManager is closed (its close() ran, or its `async with` block ended): its tabs "
        "closed with it.",
        "Make a new TabManager to open browsers again.",
    )


class InstanceNotFoundError(InstanceError):
    def __init__(
        self, fact: str, advice: str = "", *, instance_id: str | None = None, extension: str | None = None
    ) -> None:
        super().__init__(fact, advice, instance_id=instance_id)
        self.extension = extension
        """The address of an extension bridge whose browser is connected with no instance on it (its
        instance was closed): connecting that browser again is the way on."""


class ExtensionNotConnectedError(InstanceNotFoundError):
    """No instance yet: the browser extension has not connected to the bridge (`address`)."""

    def __init__(self, address: str, extension_id: str, *, wrong_token: bool = False) -> None:
        tried = (
            " It tried, with a token this server does not take: it was paired with another server (or "
            "one started earlier with another token), and must be paired with this one again."
            if wrong_token
            else ""
        )
        super().__init__(
            f"No browser is connected yet: the tabpilot extension has not connected to {address}.{tried}",
            f"In the browser with the tabpilot extension (id {extension_id}), open the extension's connect "
            "page with this bridge's port and token, or pair it on that page; it connects by itself from then on.",
        )
        self.address = address
        self.extension_id = extension_id
        self.wrong_token = wrong_token


class InstanceUnreachableError(InstanceError):
    """The instance's browser cannot be reached right now (`reason`); it may come back."""

    def __init__(self, instance_id: str, reason: str, *, opening: bool = False) -> None:
        super().__init__(
            f"Instance {instance_id} cannot reach its browser now: {reason}.",
            "Retry in a few seconds; if the browser is gone, the instance is reported lost by then."
            + (
                " The tab asked for may have opened all the same before the link dropped: once the "
                "browser is back, look for it in the tab list before opening another."
                if opening
                else ""
            ),
            instance_id=instance_id,
        )
        self.reason = reason
        self.opening = opening
        """The link dropped while a tab was being opened: the browser may have opened it anyway
        (its answer was lost), and it shows up once the link is back."""


Replacement = Literal["launch", "isolate", "reconnect", "reconnect-blank", "extension", "pair"]
"""How the next call that needs the default instance replaces a lost one (`InstanceLostError`;
"isolate": a new isolated context where the browser it lived in runs again), or
what the user's browser, reached through the tabpilot extension, waits for: the extension to connect
again by itself ("extension"), or the user to pair it with this bridge again ("pair")."""


class InstanceLostError(InstanceError):
    def __init__(
        self,
        fact: str,
        advice: str = "",
        *,
        instance_id: str | None = None,
        lost_reason: str | None = None,
        replacement: Replacement | None = None,
        replaced_by: str | None = None,
        elsewhere: Sequence[int] = (),
    ) -> None:
        super().__init__(fact, advice, instance_id=instance_id)
        self.lost_reason = lost_reason
        self.replaced_by = replaced_by
        self.elsewhere = tuple(elsewhere)
        """The open tabs of the manager's other instances, when nothing takes this one's place:
        where work can go on (a tab id given to a call, or a tab activated, whose instance becomes
        the default)."""
        """The open instance that took its place (directly, or in place of its replacement)."""
        self.replacement = replacement
        """How the next call that needs the default instance replaces this one
        (`TabManager.ensure_default`): a new browser is launched, the same browser (which keeps its
        tabs) is connected again, or the same endpoint is connected again, giving a blank tab; for the
        user's browser through the extension, what its coming back waits for (`Replacement`). None:
        nothing replaces it by itself."""


ConnectReason = Literal[
    "unreachable",
    "timeout",
    "use_cdp",
    "use_server",
    "bad_url",
    "not_grid",
    "no_node",
    "no_cdp",
    "already_connected",
    "driver",
    "no_debugging",
    "stalled_tab",
    "profile_in_use",
    "failed",
]


class ConnectError(InstanceError):
    """`reason`: unreachable, no answer in time, an endpoint of the other protocol (`use_cdp`:
    connect it over CDP; `use_server`: as a Playwright browser server), not an endpoint URL, not a
    Selenium Grid (`not_grid`), no grid node offers the browser or platform (`no_node`), a grid session without
    a CDP endpoint (`no_cdp`), a browser an open instance is connected to already (`already_connected`,
    `instance_id` is that instance), a Chrome profile without remote debugging on (`no_debugging`),
    a browser that answers but has a tab whose page does not (`stalled_tab`: a dialog waits for
    its user; connecting waits for every page), a profile an open instance's browser runs on
    (`profile_in_use`, `instance_id` is that instance), Playwright's driver that stopped as it started
    (`driver`: no browser option is at fault), other."""

    def __init__(
        self, fact: str, advice: str = "", *, instance_id: str | None = None, reason: ConnectReason = "failed"
    ) -> None:
        super().__init__(fact, advice, instance_id=instance_id)
        self.reason: ConnectReason = reason

    @classmethod
    def no_answer(cls, endpoint: str, timeout: float) -> ConnectError:
        """The endpoint was reached, or not, and said nothing within `timeout` seconds."""
        return cls(
            f"Could not connect to {endpoint}: no answer within {timeout:g} s.",
            "Check that the host and port are right and reachable from this machine, and that the browser "
            "(server) runs there.",
            reason="timeout",
        )

    @classmethod
    def stalled_tabs(cls, endpoint: str, timeout: float, tabs: Sequence[tuple[str, str]]) -> ConnectError:
        """The browser at `endpoint` answered, but these tabs' pages (title, url) did not, and a
        connection waits for every page."""
        named = "; ".join(f"{title!r} ({url})" if title and title != url else url for title, url in tabs)
        which = "that tab" if len(tabs) == 1 else "those tabs"
        return cls(
            f"Could not connect to {endpoint} within {timeout:g} s: the browser answers, but the page of "
            f"{'a tab' if len(tabs) == 1 else f'{len(tabs)} tabs'} does not, and connecting waits for "
            f"every page: {named}. A dialog waiting for its user (an alert, a confirm or prompt, a "
            "'Leave site?' question) stops its page so, as does a script that never ends.",
            f"Answer the dialog in {which} (or close {which}) in that browser, then connect again.",
            reason="stalled_tab",
        )


class TabError(TabpilotError):
    def __init__(self, fact: str, advice: str = "", *, tab_id: int | str | None = None) -> None:
        super().__init__(fact, advice)
        self.tab_id = tab_id


class TabCrashedError(TabError):
    """The tab's page process died; Chromium shows its error page and the tab takes no more work."""

    def __init__(self, tab_id: int, url: str) -> None:
        super().__init__(
            f"Tab {tab_id} crashed (the process that ran its page died); it cannot be used again.",
            "Close it and open its page again in a new tab.",
            tab_id=tab_id,
        )
        self.url = url


class TabNotFoundError(TabError):
    """`reason` adds why (it was closed, its instance was lost); `open_tabs` lists what is open;
    `no_instance`: why no tab can be opened either (no instance is open, or the default one was
    lost and waits for the user), when that is so; `no_room`: why no tab can be opened either
    because of a tab limit (the total, when other managers hold every tab it allows), when that is
    so; `kept_by`: the loss of the instance whose browser still has the tab (lost with Playwright's
    driver), whose advice says how to reach it again."""

    def __init__(
        self,
        tab_id: int | str,
        open_tabs: Sequence[TabLike],
        *,
        reason: str = "",
        no_instance: InstanceError | None = None,
        no_room: TabLimitError | None = None,
        kept_by: InstanceLostError | None = None,
        no_active_in: str | None = None,
    ) -> None:
        """`no_active_in`: no tab id was given, and that instance has no tab to work on."""
        self.open_tabs = summarize(open_tabs)
        self.reason = reason
        self.no_instance = no_instance
        self.no_room = no_room
        self.kept_by = kept_by
        why = f" {reason}" if reason else ""
        head = (
            f"Instance {no_active_in} has no open tab to work on."
            if no_active_in is not None
            else f"Tab {id_shown(tab_id)} not found.{why}"
        )
        super().__init__(
            f"{head} Open tabs:\n{describe_tabs(self.open_tabs)}\n",
            kept_by.advice
            if kept_by is not None
            else "Use one of these ids, or list tabs again."
            if self.open_tabs
            else str(no_instance)
            if no_instance is not None
            else f"None can be opened either: {no_room}"
            if no_room is not None
            else "No tab is open: open one.",
            tab_id=tab_id,
        )

    @property
    def open_tab_ids(self) -> list[int]:
        return [t.id for t in self.open_tabs]


class LastTabError(TabError):
    def __init__(self, tab_id: int, instance_id: str, *, room: bool = True) -> None:
        """`room`: another tab could be opened (False: a tab limit leaves no room for one)."""
        super().__init__(
            f"Cannot close last tab: tab {tab_id} is the only tab of instance {instance_id}.",
            "Open another tab first, or close the instance."
            if room
            else "Load the page you need in this tab instead (the tab limit leaves no room for another), "
            "or close the instance.",
            tab_id=tab_id,
        )
        self.instance_id = instance_id
        self.room = room
        self.elsewhere = 0
        """Tabs open in the manager's other instances (`TabManager.close_tab` counts them): the
        last tab of one browser is not the last open tab."""


class TabLimitError(TabError):
    def __init__(
        self,
        instance_id: str,
        count: int,
        limit: int,
        policy: str,
        *,
        total: bool = False,
        own: int | None = None,
    ) -> None:
        """`total`: the cap shared by every manager of the browser (count and limit are theirs);
        `own`: how many of those tabs are the refused manager's."""
        super().__init__(
            f"Cannot open a new tab: {count} tabs are open in all sessions together, their limit "
            f"(total {limit})."
            if total
            else f"Cannot open a new tab: instance {instance_id} has {count} tabs, its limit "
            f"(max_tabs={limit}, policy {policy}).",
            "Other managers hold them all: retry once they have closed tabs."
            if total and own == 0
            else "Close tabs you no longer need, then retry.",
        )
        self.total = total
        self.instance_id = instance_id
        self.count = count
        self.limit = limit
        self.policy = policy
        self.own = own


class DialogOpenError(TabError):
    """A dialog blocks the page work: tab `tab_id` shows it. `waiting_tab_id`: the tab the work was
    for, when that is another tab, whose page the dialog holds up too (see `Tab.ensure_no_dialog`)."""

    def __init__(self, tab_id: int, dialog: DialogInfo, *, waiting_tab_id: int | None = None) -> None:
        # A beforeunload dialog has no words of its own: the page asks before it is left.
        said = (
            quoted(dialog.message)
            if dialog.message
            else "the page asks before it is left"
            if dialog.type == "beforeunload"
            else "no message"
        )
        fact = f"Tab {tab_id} has an open {dialog.type} dialog ({said})."
        if waiting_tab_id is not None:
            fact = (
                f"Tab {waiting_tab_id} waits for the {dialog.type} dialog open on tab {tab_id} "
                f"({said}): a page and the popups it opened share one script thread, which "
                "the dialog holds."
            )
        super().__init__(fact, "Accept or dismiss it first; other tabs keep working.", tab_id=tab_id)
        self.dialog = dialog
        self.waiting_tab_id = waiting_tab_id


class NoDialogError(TabError):
    def __init__(self, tab_id: int) -> None:
        super().__init__(
            f"Tab {tab_id} has no open dialog.",
            "Nothing to handle; continue with your next step.",
            tab_id=tab_id,
        )


class RefError(TabpilotError):
    def __init__(self, fact: str, advice: str = "", *, ref: str, tab_id: int | None = None) -> None:
        super().__init__(fact, advice)
        self.ref = ref
        self.tab_id = tab_id


class StaleRefError(RefError):
    """`tab_id` is the ref's tab: take a new snapshot of it."""


class ForeignRefError(RefError):
    """`ref_tab_id` is the tab the ref belongs to, `tab_id` the tab it was used on."""

    def __init__(self, ref: str, *, ref_tab_id: int, tab_id: int) -> None:
        super().__init__(
            f"Ref {ref} belongs to tab {ref_tab_id}, not tab {tab_id}.",
            f"Act with it on tab {ref_tab_id}, the tab it belongs to, or take a snapshot of tab {tab_id} "
            "and use one of its refs.",
            ref=ref,
            tab_id=tab_id,
        )
        self.ref_tab_id = ref_tab_id


BlockReason = Literal["blocked", "not_allowed", "privileged", "devtools"]


class NavigationBlockedError(TabpilotError):
    """`reason`: the origin is blocked, not among the allowed ones, or a privileged scheme."""

    def __init__(
        self, fact: str, advice: str = "", *, url: str, reason: BlockReason, origin: str = ""
    ) -> None:
        super().__init__(fact, advice)
        self.url = url
        self.reason: BlockReason = reason
        self.origin = origin


ActionReason = Literal[
    "covered",
    "no_option",
    "not_visible",
    "disabled",
    "not_editable",
    "unstable",
    "detached",
    "timeout",
    "busy",
    "too_large",
    "loading",
    "unresponsive",
    "tab_closed",
    "navigated",
    "certificate",
    "proxy",
    "download",
    "unknown_key",
    "dialog",
    "no_file_input",
    "one_file",
    "bad_value",
    "wrong_field",
    "crashed",
    "not_happened",
    "script_pending",
    "hidden",
    "no_focus",
    "failed",
]
FieldKind = Literal["text", "toggle", "options", "file", "button", "not_text"]
"""What an element takes that an action could not give it (`ActionError.field`, reason
"wrong_field"): text, true or false, an option, files; a button takes a click; "not_text": no text
field, for an action that types."""


class ActionError(TabpilotError):
    """A page action failed. `reason` says how (for a front end's advice); `tab_id` and `ref` where."""

    def __init__(
        self,
        fact: str,
        advice: str = "",
        *,
        tab_id: int | None = None,
        ref: str | None = None,
        reason: ActionReason = "failed",
        field: FieldKind | None = None,
        close_first: tuple[int, ...] = (),
    ) -> None:
        super().__init__(fact, advice)
        self.tab_id = tab_id
        self.ref = ref
        self.reason: ActionReason = reason
        self.field = field
        self.close_first = close_first
        """"unresponsive": tabs to close before `tab_id` (their pages run on its page's thread, and
        one of their scripts may be what keeps it busy)."""
        self.close_cause: str | None = None
        """"tab_closed": why the tab closed, when the error says so already (`tab_gone`)."""

    @classmethod
    def hidden(cls, what: str, *, tab_id: int | None, ref: str | None = None) -> ActionError:
        """`what` (a screenshot) cannot be done: a browser with windows draws only the tab each
        window shows (the user's own browser), and the tab is behind another or minimized."""
        return cls(
            f"{what} failed: tab {tab_id} is hidden (behind another tab of its window, or its window is "
            "minimized), and its browser draws no picture of a hidden tab.",
            "Bring the tab to the front (TabManager.activate; the user shows a minimized window), then take "
            "the screenshot again.",
            tab_id=tab_id,
            ref=ref,
            reason="hidden",
        )

    @classmethod
    def disabled(cls, what: str, *, tab_id: int | None, ref: str | None, waited: str = "") -> ActionError:
        """`what` cannot act on element `ref`: it is disabled (`waited`: how long it stayed so,
        e.g. ' (waited 2 s)'). A page may enable it later (once a load ends, or other fields are
        filled in): waiting for that is the way, not a retry at once."""
        return cls(
            f"{what} failed: {f'element {ref}' if ref else 'the element'} is disabled{waited}.",
            f"If the page enables it later (once a load ends, or other fields are filled in), wait for that, "
            f"then retry; else take a new snapshot of tab {tab_id} and use a ref of an element you can act on.",
            tab_id=tab_id,
            ref=ref,
            reason="disabled",
        )

    @classmethod
    def tab_gone(
        cls, what: str, gone: str, *, tab_id: int | None, ref: str | None = None, cause: str | None = None
    ) -> ActionError:
        """`what` failed because its tab went while it ran (`gone`: e.g. 'tab 3 closed'); `cause`:
        the close cause, when it is known (another call's close, the tab cap: said)."""
        why = f" {closed_reason(cause)}" if cause else ""
        error = cls(
            f"{what} failed: {gone} during the action.{why}",
            "List the tabs to see what is open.",
            tab_id=tab_id,
            ref=ref,
            reason="tab_closed",
        )
        error.close_cause = cause
        return error
