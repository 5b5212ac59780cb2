"""Navigating a tab: goto/back/forward/reload under a URL policy, with errors an agent can act on.

    result = await navigate(tab, "goto", "http://127.0.0.1:8000/")

A dialog that opens while the page loads (an alert in onload) blocks the load event; navigation
returns as soon as one opens on the tab and says so (the dialog race of `ActionWatch.run`).
The tab's instance holds its pages to the same policy for navigations they start themselves
(links, scripts, popups).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal, get_args
from urllib.parse import urlsplit

from ._errors import ActionError, ActionReason, NavigationBlockedError, quoted, text_given
from ._options import call_timeout
from ._policy import UrlPolicy, is_local_host
from ._pw import BETWEEN_PAGES, Doing, first_line, map_playwright_errors
from ._tab import Tab

NavigateAction = Literal["goto", "back", "forward", "reload"]

MAX_URL_CHARS = 2 * 1024 * 1024
"""Chromium's limit on a URL's length."""
_HAS_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
_HOST_PORT = re.compile(r"^[\w.-]+:\d+(?:[/?#]|$)")
_HOST_NAME = re.compile(r"[\w.\-:%]+")
"""What a host can be made of, as `urlsplit` gives it: names (also international ones), IPv4, and
IPv6 without its brackets (with a zone after %)."""
TAB_SCHEMES = frozenset(
    {"http", "https", "file", "data", "blob", "filesystem", "about", "javascript", "view-source"}
    | {"chrome", "chrome-untrusted", "chrome-extension", "devtools"}
)
"""The schemes Chromium loads in a tab itself (the navigation policy decides which of them a tab may
open). It hands any other (mailto:, tel:, ftp: since Chromium 95, an app's own such as zoommtg:) to
another program, and a tab the browser was told to load one of those in (not a link a page's user
clicks) stops taking clicks and keys: measured, Chromium 156, until it loads a page of another site."""
_NET_CAUSES: tuple[tuple[re.Pattern[str], ActionReason, str, str], ...] = (
    (
        re.compile(r"net::ERR_(?:CERT_|SSL_PINNED|BAD_SSL_CLIENT_AUTH_CERT)"),
        "certificate",
        "the browser does not accept the site's certificate",
        "Check the URL; to load the page anyway, start the browser with HTTPS errors ignored "
        "(BrowserOptions.ignore_https_errors).",
    ),
    (
        re.compile(r"net::ERR_(?:PROXY_|TUNNEL_CONNECTION_FAILED|NO_SUPPORTED_PROXIES|MANDATORY_PROXY)"),
        "proxy",
        "the browser's proxy did not answer, or refused the connection",
        "Check the proxy server the browser was started with (BrowserOptions.proxy_server).",
    ),
)
"""Chromium's load errors whose cause is the browser's setting, not the URL: (error, reason,
the cause in words, what to do)."""
_NOT_HOSTS = TAB_SCHEMES | {"mailto", "tel", "sms", "ftp", "ws", "wss", "news", "irc", "magnet", "intent"}
"""Schemes that `name:digits` is written with (`javascript:1`, `tel:110`): never a host and its port."""


@dataclass(frozen=True, slots=True)
class NavigationResult:
    tab_id: int
    url: str
    status: int | None
    """The HTTP status of the main document (None: no network response, e.g. back to about:blank)."""
    note: str = ""
    """What the agent should know: no history to go back to, a dialog opened, an error status."""
    dialog: bool = False
    """A dialog opened while the page loaded: the load finishes once it is handled."""
    stayed: bool = False
    """Nothing was loaded (yet): a dialog holds the navigation up, the URL is a download, or there
    is no history entry to go back or forward to; the note says which."""
    still_loading: bool = False
    """The page was parsed and shown, but had not finished loading `LOAD_GRACE` seconds later (an
    image, script or frame of it had not come; or by the navigation's timeout, if that came first):
    the navigation answers with the page as it is then, usable."""
    resent: str | None = None
    """A reload of a page a form's POST answered: the method, for the browser sent that request
    (and the form's data) again, unasked; the note says so."""
    turn: int = 0
    """The tab's `turns_taken` as this navigation ran: a larger one later means another action
    (another caller's navigation, a click) has used the tab since."""


def normalize_url(url: str) -> str:
    """Add the scheme a user would mean: `example.com` -> https://, `localhost:8000` -> http://.
    Text that cannot name a web host (`not a url`) is refused (ValueError) rather than looked up,
    and so is a URL the browser does not open in a tab (`TAB_SCHEMES`)."""
    text = text_given(url, "url", "'https://example.com/page'").strip()
    if not text:  # it was quoted back as '' "naming no host"
        raise ValueError("The URL is empty (only spaces): pass a URL such as https://example.com/page.")
    if len(text) > MAX_URL_CHARS:  # the browser refuses it; its error quoted it whole, twice
        raise ValueError(
            f"The URL is {len(text):,} characters long: the browser loads none over {MAX_URL_CHARS:,}. "
            f"It starts {text[:100]!r}. Send large data in a request body, not in the URL."
        )
    if not _HAS_SCHEME.match(text) or (
        _HOST_PORT.match(text) and text.partition(":")[0].lower() not in _NOT_HOSTS
    ):
        text = text.removeprefix("//")  # a scheme-relative URL, as pages write them
        text = ("http://" if _local(text) else "https://") + text
    scheme = text.partition(":")[0].lower()
    if scheme not in TAB_SCHEMES:
        shown = text if len(text) <= 200 else text[:200] + "…"
        if scheme in ("ws", "wss"):
            why = "it is a WebSocket address, not a page (a page's script opens it)"
        else:
            why = (
                f"the browser hands {scheme}: URLs to another program on the computer (there is no page "
                "to load), and a tab sent to one can stop taking clicks"
            )
        raise ValueError(f"{shown!r} does not open in a tab: {why}. Pass an http(s) URL.")
    if text.startswith(("http://", "https://")):
        try:
            host = urlsplit(text).hostname
        except ValueError:  # an unclosed [IPv6 address: the policy check says so
            return text
        wrong = "it names no host" if not host else f"{host!r} cannot be a host name"
        if not host or not _HOST_NAME.fullmatch(host):  # `ht!tp://a` read as the host ht!tp
            raise ValueError(
                f"{url.strip()!r} is not a URL: {wrong}. Pass a URL such as https://example.com/page."
            )
    return text


def _local(text: str) -> bool:
    """Whether a URL without its scheme names this machine, which serves http (a development
    server), however its host is spelt (`Localhost:3000`, `app.localhost`, `0.0.0.0:8000`)."""
    try:
        host = urlsplit("//" + text).hostname
    except ValueError:  # an unclosed [IPv6 address: the policy check says so
        return False
    return host is not None and host != "" and is_local_host(host)


def _what(action: NavigateAction, target: str, tab_id: int) -> str:
    verb = {
        "goto": f"Loading {target}",
        "back": "Going back",
        "forward": "Going forward",
        "reload": "Reloading",
    }
    return f"{verb[action]} on tab {tab_id}"


async def navigate(
    tab: Tab,
    action: NavigateAction,
    url: str | None = None,
    *,
    policy: UrlPolicy | None = None,
    timeout: float | None = None,
) -> NavigationResult:
    """Navigate `tab` and wait for the page to load (or for a dialog to block it). It runs in its
    turn with the tab's input actions (`Tab.input_turn`): after those that asked before it.

    `policy` defaults to the one the tab's manager enforces; `timeout` to its navigation timeout.
    """
    if action not in get_args(NavigateAction):
        raise ValueError(f"action must be {', '.join(map(repr, get_args(NavigateAction)))}, not {action!r}.")
    policy = policy if policy is not None else tab.host.policy
    timeout = call_timeout(timeout, tab.host.timeouts.navigation)
    target = ""
    if url is not None and action != "goto":  # it was ignored: the tab reloaded its own page
        raise ValueError(f"{action} takes no url (it was given {quoted(url)}): use goto to load a URL.")
    if action == "goto":
        if not url:
            raise ValueError("goto needs url: the address to load (or go back, forward or reload).")
        target = normalize_url(url)
        policy.check(target)
    async with tab.input_turn():  # after the actions before it on the tab, before those after
        tab.turns_taken += 1
        return replace(await _navigate(tab, action, target, timeout), turn=tab.turns_taken)


async def _navigate(tab: Tab, action: NavigateAction, target: str, timeout: float) -> NavigationResult:
    handle = await tab.usable()
    what = _what(action, target, tab.id)
    was_at = handle.url
    blocked_before = tab.last_blocked
    try:
        with (
            tab.host.watch(tab) as watch,
            tab.expecting_document(),
            map_playwright_errors(Doing(what, tab_id=tab.id, timeout=timeout)),
        ):
            navigated, finished = await watch.run(handle.navigate(action, target, timeout=timeout))
    except ActionError as exc:
        # Else `_navigation_error` says the page is on its way: unless the page was stuck before
        # (a load asked of a page in an endless loop waited on it, and blamed the server).
        if not tab.document_due or tab.stuck:
            await tab.raise_what_the_page_says(exc, what)
        if exc.reason == "download":
            return NavigationResult(
                tab.id,
                tab.url,
                None,
                f"{target or tab.url} is a file, not a page: the browser downloads it, and tab {tab.id} "
                f"{_stays(tab)}.",
                stayed=True,
            )
        # The URL policy refused where the navigation led (back, forward or a reload to the error
        # page of a URL it refuses): the tab learnt why as it happened.
        blocked = tab.last_blocked if tab.last_blocked is not blocked_before else None
        said = _navigation_error(exc, what, tab, blocked, timeout)
        raise (await tab.why_gone(said, what) if isinstance(said, ActionError) else said) from exc.__cause__
    if not finished:
        leaving = tab.dialog is not None and tab.dialog.type == "beforeunload"
        return NavigationResult(
            tab.id,
            tab.url,
            None,
            f"Tab {tab.id} has not left its page: the page asks first (a beforeunload dialog). Accept the "
            "dialog to go on to the new page, or dismiss it to stay."
            if leaving
            else f"A dialog opened on tab {tab.id} while the page loaded; handle it and the page will finish loading.",
            dialog=True,
            stayed=True,
        )
    status = navigated.status if navigated is not None else None
    frame_moved = navigated.frame_moved if navigated is not None else None
    if frame_moved is not None:  # the history step was an iframe's own (joint session history)
        note = f"The step {action} in tab {tab.id}'s history was an iframe's: it shows {frame_moved} now."
        return NavigationResult(tab.id, tab.url, None, note)
    # Playwright answers None both when there is no history entry to go to and when the entry has
    # no response of its own (a pushState or #hash entry, about:blank): only the URL tells them apart.
    if status is None and action in ("back", "forward") and handle.url == was_at:
        note = f"There is no page to go {action} to in tab {tab.id}'s history; it {_stays(tab)}."
        return NavigationResult(tab.id, tab.url, status, note, stayed=True)
    note = f"The server answered HTTP {status}." if status is not None and status >= 400 else ""
    still = navigated is not None and navigated.loading
    if still:
        note = (
            f"{note} The page is shown before it finished loading: the browser is still loading something "
            "it asked for (an image, a script, a frame). It can be used now; what is still to come may "
            "change it."
        ).strip()
    resent = navigated.resent if navigated is not None else None
    if resent is not None:
        # A browser asks its user first ("Confirm Form Resubmission"); the protocol's reload does not.
        note = (
            f"The reload sent the request that made this page again ({resent} {tab.url}), with the data "
            "of the form that was submitted: the server got it a second time, as if the form were submitted "
            f"again. {note}"
        ).strip()
    return NavigationResult(tab.id, tab.url, status, note, still_loading=still, resent=resent)


def _stays(tab: Tab) -> str:
    """Where a tab that did not move is, in words: its URL as users see it (`Tab.url`: on the
    browser's error page, the URL that failed, never the error page's own)."""
    return f"shows the browser's error page for {tab.url}" if tab.error_page else f"stays on {tab.url}"


def _navigation_error(
    exc: ActionError, what: str, tab: Tab, blocked: NavigationBlockedError | None, timeout: float
) -> Exception:
    """Navigation's own words for what `map_playwright_errors` found."""
    if exc.reason == "tab_closed":
        return exc
    now_at = tab.handle.url
    if exc.reason in ("timeout", "busy") and tab.document_due:
        return ActionError(
            f"{what} did not finish loading within {timeout:g} s: the server has not sent the page yet.",
            f"The browser keeps waiting for it (tab {tab.id} shows {now_at} until it comes): take a "
            f"snapshot of tab {tab.id} in a while, or load another page.",
            tab_id=exc.tab_id,
            reason="loading",
        )
    if exc.reason in ("timeout", "busy"):
        return ActionError(
            f"{what} did not finish loading within {timeout:g} s.",
            "The page may still be usable: take a snapshot of it, or reload.",
            tab_id=exc.tab_id,
            reason="timeout",
        )
    cause = exc.__cause__
    message = first_line(cause) if cause is not None else exc.fact
    if BETWEEN_PAGES in message:  # said in its own words: the URL is not the problem
        return exc
    if "ERR_BLOCKED_BY_CLIENT" in message and blocked is not None:
        return blocked
    if "net::ERR_ABORTED" in message:
        if "frame was detached" in message or tab.closing_cause is not None or tab.closed:
            # The tab went while it loaded (closed by a call, the tab cap, the page, or with its
            # instance): Playwright words it as an aborted load before the page counts as closed.
            return ActionError.tab_gone(
                what, f"tab {tab.id} closed", tab_id=exc.tab_id, cause=tab.closing_cause
            )
        return ActionError(
            f"{what} failed: {message}.",
            "The browser stopped the load: the server sent nothing to show (such as HTTP 204 No "
            f"Content), or another load of the tab took its place. The tab {_stays(tab)}.",
            tab_id=exc.tab_id,
        )
    if "net::ERR_CACHE_MISS" in message:
        # A step back or forward to the answer of a form's POST kept with no copy (no-store): a
        # browser asks its user before it sends the form again ("Confirm Form Resubmission").
        return ActionError(
            f"{what} failed: {message}: the page there is the answer to a form that was submitted (a POST), "
            "and the browser kept no copy of it; it does not send the form again unasked.",
            f"The tab {_stays(tab)}. Reload it to send the form again (the server gets it a second time), "
            "or load another page.",
            tab_id=exc.tab_id,
        )
    for error, reason, why, advice in _NET_CAUSES:
        if error.search(message):
            return ActionError(
                f"{what} failed: {message}: {why}.",
                f"{advice} The tab {_stays(tab)}.",
                tab_id=exc.tab_id,
                reason=reason,
            )
    return ActionError(
        f"{what} failed: {message}.", f"Check the URL; the tab {_stays(tab)}.", tab_id=exc.tab_id
    )
