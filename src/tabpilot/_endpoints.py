"""Where browsers are: endpoint URLs checked before connecting, profile directories, and the
DevToolsActivePort file through which a running Chrome with remote debugging on is found."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from ._errors import ConnectError
from ._http import in_daemon_thread, request_json

Protocol = Literal["cdp", "playwright"]

_SCHEMES: dict[Protocol, tuple[str, ...]] = {
    "cdp": ("http", "https", "ws", "wss"),
    "playwright": ("ws", "wss"),
}
_WS_PATH = re.compile(r"/devtools/browser/[A-Za-z0-9._-]+")
_BROWSER_ID = re.compile(r"/devtools/browser/([A-Za-z0-9._-]+)/?")
_TARGET_PATH = re.compile(r"/devtools/([a-z_]+)/[^/]+/?$")
"""A DevTools socket's path: /devtools/browser/<id> for the browser, /devtools/page/<id> for a tab."""


def check_endpoint(endpoint: str, protocol: Protocol) -> None:
    """Refuse (ConnectError, reason "bad_url" or "use_cdp") an endpoint URL that cannot be one of
    `protocol`'s: its scheme, or no host (`http://`)."""
    parts = urlsplit(endpoint.strip())
    scheme = parts.scheme.lower()
    try:
        host = parts.hostname
    except ValueError:  # an unclosed [IPv6 address
        host = None
    if scheme in _SCHEMES[protocol] and not host:
        raise ConnectError(
            f"{endpoint!r} names no host.",
            "Give the host and port, e.g. http://127.0.0.1:9222"
            if protocol == "cdp"
            else "Give the host and port, e.g. ws://127.0.0.1:3000/",
            reason="bad_url",
        )
    if scheme in _SCHEMES[protocol]:
        target = _TARGET_PATH.match(parts.path)
        if protocol == "cdp" and target and target.group(1) != "browser":
            # One tab's (or worker's) socket, from /json/list: Chromium refuses the browser-wide
            # calls on it, which Playwright reported as a protocol error ("Not allowed").
            http = "https" if scheme in ("https", "wss") else "http"
            browser_url = f"{http}://{parts.netloc}"
            raise ConnectError(
                f"{endpoint} is the DevTools URL of one {target.group(1)} of the browser (as /json/list gives "
                "it), not of the browser: tabpilot drives the whole browser, every tab of it.",
                f"Give {browser_url} instead (or the browser's ws://.../devtools/browser/<id> URL, "
                f"webSocketDebuggerUrl in {browser_url}/json/version).",
                reason="bad_url",
            )
        if protocol == "playwright" and "/devtools/" in parts.path:
            raise ConnectError(
                f"{endpoint} is a Chrome DevTools (CDP) URL, not a Playwright browser server.",
                "Connect it over CDP instead.",
                reason="use_cdp",
            )
        return
    if protocol == "playwright":
        hint = (
            " An http:// address is usually a Chrome started with --remote-debugging-port: connect it over CDP instead."
            if scheme in ("http", "https")
            else ""
        )
        raise ConnectError(
            f"{endpoint!r} is not a Playwright browser server URL: it must start with ws:// or wss://.",
            f"`playwright launch-server` and `run-server` print one.{hint}",
            reason="use_cdp" if hint else "bad_url",
        )
    raise ConnectError(
        f"{endpoint!r} is not a CDP endpoint URL.",
        "Give http://host:port (the browser's --remote-debugging-port) or its ws://host:port/devtools/browser/<id> URL.",
        reason="bad_url",
    )


async def cdp_browser_id(endpoint: str, headers: Sequence[tuple[str, str]], timeout: float) -> str | None:
    """The id of the browser at a CDP endpoint, whatever address reaches it: the one in its
    ws://.../devtools/browser/<id> URL (new at every browser start), which an http(s) endpoint's
    /json/version gives. None when the endpoint does not say: not reachable (connecting then says
    why), or a proxy whose URL names no browser (each connection may get another one). An endpoint
    that says nothing within `timeout` raises ConnectError: a connection would wait as long again."""
    url = await _browser_ws_url(endpoint, headers, timeout)
    match = _BROWSER_ID.fullmatch(urlsplit(url or "").path)
    return match.group(1) if match else None


async def _browser_ws_url(endpoint: str, headers: Sequence[tuple[str, str]], timeout: float) -> str | None:
    """The browser's WebSocket URL at a CDP endpoint: a ws(s) endpoint itself, an http(s) one's
    from its /json/version; None when that does not say. Silence for `timeout` raises ConnectError."""
    if urlsplit(endpoint).scheme.lower() not in ("http", "https"):
        return endpoint
    version = endpoint.rstrip("/") + "/json/version"
    try:
        status, reply = await asyncio.wait_for(
            in_daemon_thread(
                lambda: request_json("GET", version, headers, timeout, env_proxy=False),
                name="tabpilot-cdp-version",
            ),
            timeout,
        )
    except TimeoutError:
        raise ConnectError.no_answer(endpoint, timeout) from None
    except (OSError, ValueError) as exc:
        if isinstance(getattr(exc, "reason", None), TimeoutError):  # urllib's, connecting
            raise ConnectError.no_answer(endpoint, timeout) from None
        return None
    if status != 200 or not isinstance(reply, dict) or not reply.get("webSocketDebuggerUrl"):
        return None
    return str(reply["webSocketDebuggerUrl"])


async def stalled_pages(
    endpoint: str, headers: Sequence[tuple[str, str]], timeout: float = 2.0
) -> list[tuple[str, str]]:
    """(title, url) of each page of the browser at a CDP endpoint whose page does not answer a
    trivial script within `timeout` seconds: a dialog waiting for the user (alert, confirm, prompt,
    "Leave site?") holds its page so, as does a script that never stops. A connection is ready
    only once every page has answered it, so one such tab holds it up: this says which.
    [] when every page answers, or when the browser cannot be asked."""
    from websockets.asyncio.client import connect

    url = None
    with contextlib.suppress(ConnectError):
        url = await _browser_ws_url(endpoint, headers, timeout)
    if url is None:
        return []
    ids = itertools.count(1)
    with contextlib.suppress(Exception):
        async with asyncio.timeout(timeout * 2):
            async with connect(
                url, additional_headers=list(headers), max_size=None, open_timeout=timeout
            ) as ws:

                async def send(method: str, params: dict[str, Any], session: str | None = None) -> int:
                    message: dict[str, Any] = {"id": next(ids), "method": method, "params": params}
                    if session is not None:
                        message["sessionId"] = session
                    await ws.send(json.dumps(message))
                    return int(message["id"])

                asked = await send("Target.getTargets", {})
                pages: dict[str, tuple[str, str]] = {}
                probes: dict[int, str] = {}  # the id of each page's script: its target
                attaching: dict[int, str] = {}
                waiting = True
                loop = asyncio.get_running_loop()
                deadline: float | None = None
                while waiting or attaching or probes:
                    left = None if deadline is None else deadline - loop.time()
                    try:
                        message = json.loads(await asyncio.wait_for(ws.recv(), left))
                    except TimeoutError:  # those still asked did not answer
                        break
                    answered = message.get("id")
                    if answered == asked:
                        waiting = False
                        for target in message.get("result", {}).get("targetInfos", []):
                            if target.get("type") == "page":
                                target_id = str(target["targetId"])
                                pages[target_id] = (str(target.get("title", "")), str(target.get("url", "")))
                                attach = {"targetId": target_id, "flatten": True}
                                attaching[await send("Target.attachToTarget", attach)] = target_id
                        deadline = loop.time() + timeout
                    elif answered in attaching:
                        target_id = attaching.pop(answered)
                        session = message.get("result", {}).get("sessionId")
                        if session is None:  # gone meanwhile
                            pages.pop(target_id, None)
                            continue
                        probe = {"expression": "0", "returnByValue": True}
                        probes[await send("Runtime.evaluate", probe, str(session))] = target_id
                    elif answered in probes:
                        pages.pop(probes.pop(answered), None)
                return [pages[target_id] for target_id in probes.values() if target_id in pages]
    return []


def check_profile_dir(path: str, *, create: bool = True) -> str:
    """A profile directory the user named, expanded: absolute (or ~), a directory or creatable;
    made if `create` (else only checked, as a command line is before anything starts)."""
    expanded = Path(path).expanduser()
    if not expanded.is_absolute() or ".." in expanded.parts:
        raise ValueError(
            f"the profile directory {path!r} must be an absolute path without '..' (a relative path would "
            "depend on where the server was started)."
        )
    if expanded.exists() and not expanded.is_dir():
        raise ValueError(f"the profile directory {path!r} exists and is not a directory.")
    if not create:
        existing = next(p for p in (expanded, *expanded.parents) if p.exists())
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            raise ValueError(f"the profile directory {path!r} cannot be created: {existing} is not writable.")
        return str(expanded)
    try:
        expanded.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"the profile directory {path!r} cannot be created: {exc.strerror}.") from None
    return str(expanded)


def default_chrome_profile() -> Path:
    """Where Google Chrome keeps its default profile on this platform."""
    home = Path.home()
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Google" / "Chrome"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(local) / "Google" / "Chrome" / "User Data"
    config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(config) / "google-chrome"


_HOW_TO_TURN_ON = (
    "Turn remote debugging on in that Chrome: open chrome://inspect/#remote-debugging and switch it on "
    "(Chrome 144 or newer), or start Chrome with a remote debugging port on a profile directory of its "
    "own (Chrome ignores the port on its default profile)."
)


def running_chrome_endpoint(user_data_dir: str | None) -> str:
    """The CDP endpoint of the Chrome running on `user_data_dir` (its default profile if None),
    from the DevToolsActivePort file Chrome writes there while remote debugging is on: the port on
    its first line, the browser's WebSocket path on its second."""
    profile = Path(user_data_dir).expanduser() if user_data_dir else default_chrome_profile()
    port_file = profile / "DevToolsActivePort"
    try:
        lines = port_file.read_text(encoding="utf-8").split()
    except OSError:
        raise ConnectError(
            f"No Chrome with remote debugging on was found for the profile {profile}: it has no "
            "DevToolsActivePort file (Chrome is not running there, or remote debugging is off).",
            _HOW_TO_TURN_ON,
            reason="no_debugging",
        ) from None
    if not lines or not lines[0].isdigit() or not 0 < int(lines[0]) < 65536:
        raise ConnectError(
            f"{port_file} does not name a port (it holds {' '.join(lines)[:80]!r}).",
            "Restart Chrome with remote debugging on; it writes the file again.",
            reason="no_debugging",
        )
    port = int(lines[0])
    if len(lines) > 1 and _WS_PATH.fullmatch(lines[1]):
        return f"ws://127.0.0.1:{port}{lines[1]}"
    return f"http://127.0.0.1:{port}"


def stale_port_error(endpoint: str, user_data_dir: str | None, cause: ConnectError) -> ConnectError:
    """The port in DevToolsActivePort did not answer: Chrome quit (the file outlives a crash) or
    turned debugging off."""
    profile = Path(user_data_dir).expanduser() if user_data_dir else default_chrome_profile()
    return ConnectError(
        f"The DevToolsActivePort file of {profile} names {endpoint}, but it did not answer ({cause.fact}).",
        "Chrome there may have quit or turned remote debugging off. " + _HOW_TO_TURN_ON,
        reason="no_debugging",
    )
