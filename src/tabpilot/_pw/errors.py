"""Playwright's errors as tabpilot's, at one boundary: `map_playwright_errors`, most specific first."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from .._errors import ActionError, ConnectError, StaleRefError, TabpilotError

_PREFIX = re.compile(r"^[A-Z][A-Za-z]*\.[a-z_A-Z]+: ")
_INTERCEPTOR = re.compile(r"- (.+?) intercepts pointer events")
_UNREACHABLE = ("ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ECONNRESET")
_SYMPTOMS = (
    ("element is not visible", "not_visible", "is not visible (hidden, collapsed or zero-sized)"),
    ("element is not enabled", "disabled", "is disabled"),
    ("element is not editable", "not_editable", "is read-only (not editable)"),
    ("element is not stable", "unstable", "keeps moving (animating)"),
    ("element is detached", "detached", "was removed from the page"),
    ("element is not attached", "detached", "was removed from the page"),
)

BETWEEN_PAGES = "Not attached to an active page"
"""Chromium's words for a command that reached a tab while it swapped to the process of its next
page (`Page.getNavigationHistory` when going back right after the user navigated)."""

_WRONG_ELEMENT = (
    (
        "Element is not an <input>, <textarea>",
        "is not a text field (an input, text area or editable area)",
        "{snap} and use the ref of a textbox, searchbox or combobox.",
        "wrong_field",
    ),
    (
        "cannot be filled",  # Input of type "hidden" cannot be filled
        "is not a text field (an input that takes typed text)",
        "{snap} and use the ref of a textbox, searchbox or combobox.",
        "wrong_field",
    ),
    (
        "Element is not a <select> element",
        "is not a drop-down list (a <select>)",
        "A list a page draws itself opens with a click on it; then click the option.",
        "failed",
    ),
    (
        "Not a checkbox or radio button",
        "is not a checkbox or radio button (true and false check or uncheck only those)",
        "{snap}: give a checkbox, radio or switch true or false, a text field text, a list an option.",
        "failed",
    ),
    (
        "Non-multiple file input can only accept single file",
        "takes one file (it is no multiple-file input)",
        "Pass one path.",
        "one_file",
    ),
)
"""Playwright's words for an element that cannot take the action: what tabpilot says instead,
what to do ({snap}: take a new snapshot of the tab) and the reason."""


def first_line(exc: BaseException) -> str:
    """What happened, without Playwright's call log and method prefix."""
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return _PREFIX.sub("", line)


def is_closed_error(exc: BaseException) -> bool:
    return isinstance(exc, PlaywrightError) and (
        exc.name == "TargetClosedError" or "has been closed" in str(exc) or "Target closed" in str(exc)
    )


@dataclass(frozen=True, slots=True)
class Doing:
    """What was under way when Playwright failed, for the translated error's message."""

    what: str
    """e.g. 'Clicking 3e5 on tab 3'"""
    tab_id: int | None = None
    ref: str | None = None
    timeout: float | None = None
    endpoint: str = ""
    protocol: Literal["", "cdp", "playwright", "context"] = ""

    @classmethod
    def connecting(
        cls, endpoint: str, protocol: Literal["cdp", "playwright", "context"], timeout: float
    ) -> Doing:
        return cls(f"Connecting to {endpoint}", timeout=timeout, endpoint=endpoint, protocol=protocol)


HIDDEN_TAB = "tabpilot-hidden-tab"
"""What the tabpilot extension's error says when asked for a picture of a tab its browser does not
draw (`service_worker.js`)."""


@contextlib.contextmanager
def map_playwright_errors(doing: Doing) -> Iterator[None]:
    """Turn Playwright's errors (and timeouts of calls without their own) into tabpilot's."""
    try:
        yield
    except TabpilotError:
        raise
    except (PlaywrightError, TimeoutError) as exc:
        raise (_connect_error(exc, doing) if doing.protocol else _action_error(exc, doing)) from exc


def _action_error(exc: BaseException, doing: Doing) -> TabpilotError:
    what, tab, ref = doing.what, doing.tab_id, doing.ref
    element = f"element {ref}" if ref else "the element"
    waited = f" (waited {doing.timeout:g} s)" if doing.timeout is not None else ""
    snap = f"Take a new snapshot of tab {tab}"
    if HIDDEN_TAB in str(exc):  # the tabpilot extension's answer to a screenshot of a hidden tab
        return ActionError.hidden(what, tab_id=tab, ref=ref)
    if is_closed_error(exc):
        gone = f"tab {tab} closed (or its browser went away)" if tab is not None else "its browser went away"
        return ActionError.tab_gone(what, gone, tab_id=tab, ref=ref)
    if isinstance(exc, PlaywrightTimeoutError):
        log = str(exc)
        if "intercepts pointer events" in log:
            found = _INTERCEPTOR.findall(log)
            cover = f" ({found[-1]})" if found else ""
            return ActionError(
                f"{what} failed: {element} is covered by another element{cover}.",
                f"Close or dismiss what covers it (a dialog, banner or menu; {snap.lower()} to find it), then retry.",
                tab_id=tab,
                ref=ref,
                reason="covered",
            )
        if "did not find some options" in log:
            return ActionError(
                f"{what} failed: no option of {element} matches.",
                "Options match by value or label; a snapshot of the element shows them.",
                tab_id=tab,
                ref=ref,
                reason="no_option",
            )
        for symptom, reason, says in _SYMPTOMS:
            if symptom in log and reason == "disabled":
                return ActionError.disabled(what, tab_id=tab, ref=ref, waited=waited)
            if symptom in log:
                return ActionError(
                    f"{what} failed: {element} {says}{waited}.",
                    f"{snap} and use a ref of an element you can act on (open the menu or section that holds it first).",
                    tab_id=tab,
                    ref=ref,
                    reason=reason,  # type: ignore[arg-type]
                )
        if ref is not None and "resolved to" not in log and "waiting for locator" in log:
            return StaleRefError(
                f"{what} failed: {element} is no longer on tab {tab} (the page changed).",
                f"{snap} and use a ref from it.",
                ref=ref,
                tab_id=tab,
            )
        return ActionError(
            f"{what} did not finish{waited}.",
            f"The page may be busy or still loading: {snap.lower()} and retry.",
            tab_id=tab,
            ref=ref,
            reason="timeout",
        )
    if isinstance(exc, TimeoutError):  # an asyncio timeout around a call that has none of its own
        within = f" within {doing.timeout:g} s" if doing.timeout is not None else ""
        return ActionError(
            f"{what} did not finish{within}.",
            f"The page may be busy: {snap.lower()} and retry.",
            tab_id=tab,
            ref=ref,
            reason="busy",
        )
    message = first_line(exc).rstrip(".")
    if message.startswith("Download is starting"):
        return ActionError(
            f"{what} started a download instead of loading a page.",
            "The browser downloads the file; the tab stays where it was.",
            tab_id=tab,
            reason="download",
        )
    if "Execution context was destroyed" in message or "Frame was detached" in message:
        return ActionError(
            f"{what} was interrupted: tab {tab} navigated to another page meanwhile.",
            f"{snap} and retry.",
            tab_id=tab,
            ref=ref,
            reason="navigated",
        )
    if "not attached to the DOM" in message or "not connected" in message:
        return StaleRefError(
            f"{what} failed: {element} was removed from the page.",
            f"{snap} and use a ref from it.",
            ref=ref or "",
            tab_id=tab,
        )
    for symptom, says, advice, reason in _WRONG_ELEMENT:
        if symptom in message:
            return ActionError(
                f"{what} failed: {element} {says}.",
                advice.format(snap=snap),
                tab_id=tab,
                ref=ref,
                reason=reason,  # type: ignore[arg-type]
                field="not_text" if reason == "wrong_field" else None,
            )
    if BETWEEN_PAGES in message:  # a cross-process navigation (the user's, a page's) under way
        return ActionError(
            f"{what} failed: the tab was between two pages (a navigation under way).",
            "Retry in a moment.",
            tab_id=tab,
            ref=ref,
            reason="navigated",
        )
    if "Target crashed" in message:  # before the page's crash event came: `Tab.raise_what_the_page_says`
        return ActionError(f"{what} failed: the page crashed.", tab_id=tab, ref=ref, reason="crashed")
    if "No dialog is showing" in message:
        return ActionError(
            f"{what} failed: the dialog had closed already (its page went on without it, or another "
            "call answered it).",
            f"{snap} to see the page as it is now.",
            tab_id=tab,
        )
    if "Cannot serialize result" in message:  # CDP's limit, or `_AS_JSON`'s (a script's result)
        why = message.split("Cannot serialize result: ", 1)[-1].split("\n", 1)[0]
        if "characters" in why:
            return ActionError(
                f"{what} failed: its result is too large to send ({why}).",
                "Return a part of it (e.g. `.slice(0, 100)`) or a summary of it (e.g. its length).",
                tab_id=tab,
                ref=ref,
            )
        return ActionError(
            f"{what} failed: its result is nested too deeply to send ({why}).",
            "Return a part of it, nested less deeply.",
            tab_id=tab,
            ref=ref,
        )
    if message.startswith("Unknown key"):
        return ActionError(
            f"{what} failed: {message}.",
            "Use key names like Enter, Tab, Escape, ArrowDown, PageDown, a, or combinations like Control+a, Shift+Tab.",
            tab_id=tab,
            reason="unknown_key",
        )
    return ActionError(f"{what} failed: {message}.", tab_id=tab, ref=ref)


def _connect_error(exc: BaseException, doing: Doing) -> ConnectError:
    endpoint, timeout = doing.endpoint, doing.timeout or 0
    if isinstance(exc, TimeoutError | PlaywrightTimeoutError):
        return ConnectError.no_answer(endpoint or "", timeout)
    detail = first_line(exc)
    if any(k in detail for k in _UNREACHABLE):
        return ConnectError(
            f"Could not connect to {endpoint}: it is unreachable ({detail}).",
            "Check the host and port, and that the browser (server) runs there.",
            reason="unreachable",
        )
    if doing.protocol == "context":
        return ConnectError(f"Connected to {endpoint}, but it could not open a browser context: {detail}")
    if doing.protocol == "cdp":
        return ConnectError(
            f"Could not connect over CDP to {endpoint}: it answered, but not as a Chrome DevTools endpoint ({detail}).",
            "Give the http://host:port of a Chromium started with --remote-debugging-port, or its "
            "ws://.../devtools/browser/<id> URL; a Playwright browser server is connected as one instead.",
            reason="use_server",
        )
    if "Executable doesn't exist" in detail or "Failed to launch" in detail or "browserType.launch" in detail:
        return ConnectError(
            f"The Playwright browser server at {endpoint} could not launch its browser: {detail}",
            "Install a browser where the server runs, or start it with an executablePath that exists there.",
        )
    return ConnectError(
        f"Could not connect to {endpoint} as a Playwright browser server: it answered, but not in "
        f"Playwright's protocol ({detail}).",
        "Give the ws:// URL that `playwright launch-server` or `run-server` prints (it ends in its secret "
        "path); a Chrome with a debugging port is connected over CDP instead.",
        reason="use_cdp",
    )


_CHROMIUM_PREFIX = re.compile(r"^(- )?\[pid=\d+\]\[err\] (\[[^\]]*:(?:ERROR|FATAL|WARNING)[^\]]*\] )?")
_LAUNCH_NOISE = (
    "Failed to connect to the bus",
    "Failed to call method: org.freedesktop",
    "zygote_linux.cc",
    "Broken pipe",
    "Fontconfig",
)
_EXIT_CODE = re.compile(r"exitCode=(\d+)")


def driver_error(exc: Exception, node_options: str | None) -> ConnectError:
    """Playwright's driver (a Node.js process) that stopped as it started. Node says why on stderr;
    the one cause a user sets without knowing is NODE_OPTIONS: Node refuses to start with an
    option it does not allow there, and the driver inherits the variable."""
    fact = f"Playwright's driver (its Node.js process) stopped as it started: {first_line(exc)}."
    if node_options:
        return ConnectError(
            f"{fact} NODE_OPTIONS is set to {node_options!r}: Node stops at once on an option it does not "
            "allow there (its message is on stderr).",
            "Unset NODE_OPTIONS, or remove that option from it, and start tabpilot again.",
            reason="driver",
        )
    return ConnectError(
        fact,
        "Node's message is on stderr. Reinstall Playwright for Python (`make install`, or "
        "`pip install --force-reinstall playwright`) if its driver is damaged.",
        reason="driver",
    )


def launch_error(exc: PlaywrightError, executable: str, user_data_dir: str | None) -> ConnectError:
    """A browser that failed to start, in its own words: the lines it wrote to stderr (Playwright's
    log carries them), without Playwright's bookkeeping and the usual harmless noise."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    said = list(
        dict.fromkeys(  # the log repeats itself: each line once, in order
            _CHROMIUM_PREFIX.sub("", line)
            for line in lines
            if "][err]" in line and not any(noise in line for noise in _LAUNCH_NOISE)
        )
    )
    everything = "\n".join(lines)
    exit_code = _EXIT_CODE.search(everything)
    said_first = first_line(exc).rstrip(".")
    if exit_code:
        how = f"exited with code {exit_code.group(1)}"
    elif said_first.startswith("Timeout"):
        how = f"did not come up in time ({said_first})"
    elif is_closed_error(exc):
        how = "ended while it was starting (it was killed, crashed or quit)"
    else:
        how = f"failed ({said_first})"
    hint = "Check that the browser runs on this machine (run it by hand to see why not)."
    if user_data_dir is not None and ("ProcessSingleton" in everything or "profile" in everything.lower()):
        hint = f"The profile {user_data_dir} may be in use by another Chromium; a profile serves one browser at a time."
    elif "Socket path too long" in everything:
        hint = (
            "The path of its temp dir (TMPDIR) is too long for the Unix socket Chromium makes there: set "
            "TMPDIR to a shorter directory (such as /tmp) and start again."
        )
    elif "Missing X server" in everything or "$DISPLAY" in everything:
        hint = "A headed browser needs a display: run headless, or set DISPLAY (e.g. under Xvfb)."
    detail = "".join(f"\n  {line}" for line in said[:8]) + ("\n" if said else "")
    return ConnectError(f"Chromium ({executable}) failed to start: it {how}.{detail}", hint)
