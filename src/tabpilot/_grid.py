"""Selenium Grid 4 as a source of browsers: a WebDriver session whose `se:cdp` endpoint tabpilot
drives like any Chromium over CDP.

Three plain WebDriver calls, made with the standard library in a worker thread: `GET /status`
(is there a node that can serve these capabilities?), `POST /session` (start a browser, read its
`se:cdp` URL) and `DELETE /session/{id}` (end it: the grid stops the browser). The grid forwards
CDP hub -> node -> browser; when it ends a session it does not close that socket, so the instance
notices an ended session by its heartbeat, not by a disconnect.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import urllib.error
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ._errors import ConnectError
from ._http import in_daemon_thread, request_json
from ._options import BrowserOptions


@dataclass(frozen=True, slots=True)
class GridSession:
    """One WebDriver session on a grid: its id, its WebDriver URL and its CDP endpoint."""

    grid: str
    session_id: str
    cdp_url: str
    capabilities: Mapping[str, Any]
    options: BrowserOptions
    """The options it was asked with; `cdp_headers` has every header the grid needs (its auth too)."""
    asked: Mapping[str, Any] | None = None
    """The capabilities it was asked with (on top of Chrome's): a session in its place asks the same."""

    @property
    def url(self) -> str:
        """The session's WebDriver URL (`DELETE` it to end the session)."""
        return f"{self.grid}/session/{self.session_id}"

    async def unreachable(self) -> str | None:
        """Why the session is out of reach when the grid itself does not answer (its hub down or
        stuck: the session may well run on, on its node), else None."""
        try:
            await in_daemon_thread(
                lambda: request_json("GET", f"{self.grid}/status", self.options.cdp_headers, 3.0),
                name="tabpilot-grid-status",
            )
        except (OSError, urllib.error.URLError):
            return (
                f"the Selenium Grid at {self.grid} stopped answering (its hub is down or stuck), and its "
                f"session {self.url} is out of reach with it"
            )
        return None

    async def delete(self) -> str | None:
        """End the session: the grid stops its browser. A session the grid already ended is fine.
        Returns why it could not be ended (the grid did not answer), else None."""
        return await asyncio.to_thread(_delete, self)


def split_grid_url(url: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The grid URL without a trailing slash or user info, and the Basic auth header for its
    user info (`http://user:key@host:4444/wd/hub`, as hosted grids give them)."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise ConnectError(
            f"{url!r} is not a Selenium Grid URL.",
            "Give the grid's http://host:port (add /wd/hub if the grid serves WebDriver there).",
            reason="bad_url",
        )
    headers: tuple[tuple[str, str], ...] = ()
    if parts.username is not None:
        secret = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers = (("Authorization", "Basic " + base64.b64encode(secret).decode()),)
    netloc = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", "")), headers


def session_request(
    capabilities: Mapping[str, Any] | None, *, headless: bool, browser_args: Sequence[str]
) -> dict[str, Any]:
    """The `POST /session` body: Chrome, headless unless told otherwise, with the caller's
    capabilities on top (`goog:chromeOptions` merged key by key, its `args` added)."""
    args = ["--headless=new"] if headless else []
    args += [a for a in browser_args if a not in args]
    always: dict[str, Any] = {"browserName": "chrome"}
    if args:
        always["goog:chromeOptions"] = {"args": args}
    for key, value in (capabilities or {}).items():
        if key == "goog:chromeOptions" and isinstance(value, Mapping):
            merged = dict(always.get(key, {}))
            for option, setting in value.items():
                if option == "args" and isinstance(setting, list):
                    known = list(merged.get("args", []))
                    merged["args"] = known + [a for a in setting if a not in known]
                else:
                    merged[option] = setting
            always[key] = merged
        else:
            always[key] = value
    return {"capabilities": {"alwaysMatch": always}}


async def create_session(
    url: str,
    capabilities: Mapping[str, Any] | None = None,
    options: BrowserOptions | None = None,
    *,
    timeout: float = 60.0,
) -> GridSession:
    """Start a browser on the grid at `url` (headless unless `options` say headed, with their
    browser args and `cdp_headers`); raises ConnectError saying why it could not."""
    options = options or BrowserOptions()
    grid, auth = split_grid_url(url)
    options = options.replace(cdp_headers=(*auth, *options.cdp_headers))
    body = session_request(capabilities, headless=options.headless, browser_args=options.browser_args)
    # Whoever asked may go (a server stopping) while the grid holds the request in its queue: a
    # session it starts later is ended then (`unclaimed`), and a process that exits meanwhile
    # closes the connection, which takes the request off the queue.
    session = await in_daemon_thread(
        lambda: _create(grid, body, options, timeout),
        name="tabpilot-grid-create",
        unclaimed=_end_unclaimed,
    )
    return dataclasses.replace(session, asked=capabilities)


# -- the WebDriver calls (blocking; run in a worker thread) ------------------------------------------


def _unreachable(grid: str, exc: BaseException, timeout: float) -> ConnectError:
    reason = getattr(exc, "reason", exc)
    if isinstance(reason, TimeoutError):
        return ConnectError(
            f"Could not reach the Selenium Grid at {grid}: no answer within {timeout:g} s.",
            "Check that the host and port are right and reachable from this machine.",
            reason="timeout",
        )
    return ConnectError(
        f"Could not reach the Selenium Grid at {grid}: it is unreachable ({reason}).",
        "Check the host and port, and that the grid (its hub or standalone server) runs there.",
        reason="unreachable",
    )


def _value(payload: Any) -> Any:
    return payload.get("value") if isinstance(payload, dict) else None


def _platform_family(name: Any) -> str | None:
    """The family of a WebDriver platformName (windows, mac, linux), None when it is not one of
    those (`any`, a name this does not know): the grid matches a platform of the family asked for."""
    name = str(name or "").strip().lower()
    if name.startswith("win") or name in ("xp", "vista"):
        return "windows"
    if name.startswith("mac") or "os x" in name or name in _MAC_NAMES:
        return "mac"
    if name in ("linux", "unix"):
        return "linux"
    return None


_MAC_NAMES = frozenset(
    {
        *("snow_leopard", "mountain_lion", "mavericks", "yosemite", "el_capitan", "sierra", "high_sierra"),
        *("mojave", "catalina", "big_sur", "monterey", "ventura", "sonoma", "sequoia"),
    }
)


def _check_platform(grid: str, slots: Sequence[Mapping[str, Any]], browser: str, wanted: Any) -> None:
    """Fail at once when every slot for `browser` runs on another platform family than `wanted`
    (the grid would queue the request until its timeout); a platform this cannot tell is let through."""
    family = _platform_family(wanted)
    offered = {
        str(slot.get("platformName", "")).lower(): _platform_family(slot.get("platformName"))
        for slot in slots
    }
    if family is None or not offered or any(f is None or f == family for f in offered.values()):
        return
    raise ConnectError(
        f"No node of the Selenium Grid at {grid} offers {browser} on platformName {wanted!r}; its nodes "
        f"offer it on {', '.join(sorted(offered))}.",
        "Ask for a platform a node offers (or leave platformName out), or add a node that runs on this one.",
        reason="no_node",
    )


def _check_status(
    grid: str, headers: Sequence[tuple[str, str]], always: Mapping[str, Any], timeout: float
) -> None:
    """Fail at once when the grid says no node can serve the browser and platform asked for
    (`always`: the alwaysMatch capabilities; it would queue the request)."""
    browser = str(always.get("browserName", "chrome"))
    try:
        status, payload = request_json("GET", f"{grid}/status", headers, min(timeout, 10.0))
    except (OSError, urllib.error.URLError) as exc:
        raise _unreachable(grid, exc, min(timeout, 10.0)) from exc
    value = _value(payload)
    if status != 200 or not isinstance(value, dict) or "ready" not in value:
        raise ConnectError(
            f"{grid} answered, but not as a Selenium Grid (GET /status gave HTTP {status}).",
            "Give the URL of the grid's hub or standalone server (http://host:4444; some grids serve "
            "WebDriver under /wd/hub).",
            reason="not_grid",
        )
    nodes = value.get("nodes")
    if not isinstance(nodes, list):
        return  # a grid that does not list its nodes: let the session request tell
    stereotypes = [
        slot.get("stereotype") or {}
        for node in nodes
        if isinstance(node, dict) and node.get("availability", "UP") == "UP"
        for slot in node.get("slots") or []
        if isinstance(slot, dict)
    ]
    # The grid matches browserName exactly, case included: "Chrome" would wait in its queue.
    offered = {str(s.get("browserName", "")) for s in stereotypes if isinstance(s, dict)}
    if browser not in offered:
        names = ", ".join(sorted(b for b in offered if b)) or "nothing (no node is up)"
        if any(b.lower() == browser.lower() for b in offered):
            names += " (the grid matches browserName exactly, case included)"
        raise ConnectError(
            f"No node of the Selenium Grid at {grid} offers browserName {browser!r}; its nodes offer {names}.",
            "Ask for a browser a node offers, or add a node that offers this one (tabpilot needs a "
            "Chromium-based browser: it drives the session over CDP).",
            reason="no_node",
        )
    if always.get("platformName") is not None:
        slots = [s for s in stereotypes if isinstance(s, dict) and str(s.get("browserName", "")) == browser]
        _check_platform(grid, slots, browser, always["platformName"])


def _slots_in_use(grid: str, headers: Sequence[tuple[str, str]], browser: str) -> tuple[int, int] | None:
    """(in use, all) of the grid's slots for `browser` on nodes that are up, from its /status;
    None when it does not say."""
    with contextlib.suppress(OSError, urllib.error.URLError):
        status, payload = request_json("GET", f"{grid}/status", headers, 5.0)
        nodes = (_value(payload) or {}).get("nodes") if status == 200 else None
        if isinstance(nodes, list):
            slots = [
                slot
                for node in nodes
                if isinstance(node, dict) and node.get("availability", "UP") == "UP"
                for slot in node.get("slots") or []
                if isinstance(slot, dict)
                and str((slot.get("stereotype") or {}).get("browserName", "")) == browser
            ]
            return sum(1 for slot in slots if slot.get("session")), len(slots)
    return None


def _not_started(
    grid: str, headers: Sequence[tuple[str, str]], always: Mapping[str, Any], timeout: float
) -> ConnectError:
    """The session request waited `timeout` seconds: say whether every slot was in use, or else
    that slots were free (a capability no node matches keeps a request queued)."""
    browser = str(always.get("browserName", "chrome"))
    fact = f"The Selenium Grid at {grid} did not start a session within {timeout:g} s"
    slots = _slots_in_use(grid, headers, browser)
    matched = sorted(k for k in always if k != "browserName" and not k.startswith(("goog:", "se:")))
    if slots is not None and slots[0] < slots[1] and matched:
        return ConnectError(
            f"{fact}, though {slots[1] - slots[0]} of its {slots[1]} slots for {browser} are free: no node may "
            f"match the capabilities asked for ({', '.join(f'{k}={always[k]!r}' for k in matched)}).",
            f"Ask for capabilities a node offers (GET {grid}/status lists each slot's stereotype), or leave "
            "them out; a request no node matches waits in the grid's queue until it times out.",
            reason="timeout",
        )
    if slots is not None and slots[1] and slots[0] >= slots[1]:
        return ConnectError(
            f"{fact}: every one of its {slots[1]} slots for {browser} is in use, and the request waited in "
            "its queue.",
            "Close a grid instance you no longer need (that ends its session and frees its slot), retry "
            "later, or give the grid more slots.",
            reason="timeout",
        )
    return ConnectError(
        f"{fact}.",
        "Its nodes may have been busy (every slot in use) or slow to start a browser: retry later, "
        "or give the grid more slots.",
        reason="timeout",
    )


def _create(grid: str, body: dict[str, Any], options: BrowserOptions, timeout: float) -> GridSession:
    headers = options.cdp_headers
    always = body["capabilities"]["alwaysMatch"]
    _check_status(grid, headers, always, timeout)
    try:
        status, payload = request_json("POST", f"{grid}/session", headers, timeout, body)
    except (OSError, urllib.error.URLError) as exc:
        error = _unreachable(grid, exc, timeout)
        if error.reason == "timeout":
            error = _not_started(grid, headers, always, timeout)
        raise error from exc
    value = _value(payload)
    if status != 200 or not isinstance(value, dict) or "sessionId" not in value:
        said = value.get("message") if isinstance(value, dict) else None
        if not isinstance(said, str):
            raise ConnectError(
                f"{grid} answered POST /session with HTTP {status}, not as a WebDriver endpoint.",
                "Give the URL of the grid's hub or standalone server (some grids serve WebDriver under /wd/hub).",
                reason="not_grid",
            )
        raise ConnectError(
            f"The Selenium Grid at {grid} could not start a session: {said.strip().splitlines()[0]}",
            "Check the capabilities, and that the node can start its browser (its logs say why not).",
        )
    session_id = str(value["sessionId"])
    capabilities = value.get("capabilities") or {}
    cdp_url = capabilities.get("se:cdp") if isinstance(capabilities, dict) else None
    session = GridSession(grid, session_id, str(cdp_url or ""), capabilities, options)
    if not cdp_url:
        _delete(session)
        raise ConnectError(
            f"The Selenium Grid at {grid} started session {session_id} but gave no CDP endpoint for it "
            "(no se:cdp capability); the session was ended again.",
            "tabpilot drives grid browsers over CDP: use a Chromium-based browser on a Selenium Grid 4 "
            "node (CDP enabled).",
            reason="no_cdp",
        )
    return session


_DELETE_TIMEOUT = 5.0


def _delete(session: GridSession) -> str | None:
    try:
        request_json("DELETE", session.url, session.options.cdp_headers, _DELETE_TIMEOUT)
    except (OSError, urllib.error.URLError) as exc:
        # A grid that does not answer (its hub down or stuck) keeps the session on its node, in
        # a slot, until its own session timeout ends it.
        reason = getattr(exc, "reason", exc)
        why = (
            f"the grid gave no answer within {_DELETE_TIMEOUT:g} s"
            if isinstance(reason, TimeoutError)
            else f"the grid is unreachable: {reason}"
        )
        return (
            f"its grid session {session.url} could not be ended ({why}); it may run on until the grid "
            f"times it out, holding a slot: end it there (DELETE {session.url}) once the grid answers"
        )
    return None


def _end_unclaimed(session: GridSession) -> None:
    """End a session nobody waits for any more (there is nobody to tell if that fails)."""
    _delete(session)


__all__ = ["GridSession", "create_session", "session_request", "split_grid_url"]
