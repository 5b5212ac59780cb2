"""The `tabpilot serve` flags' value types (argparse converters that say what a good value
looks like) and `BROWSER_FLAGS`: the one flag of every `BrowserOptions` field."""

from __future__ import annotations

import argparse
import functools
import ipaddress
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tabpilot import (
    check_profile_dir,
    check_proxy_server,
    check_storage_state,
    check_user_agent,
    parse_header,
    parse_viewport,
    port_number,
    seconds_problem,
)


def host_port(text: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[IPV6]:PORT` (an IPv6 address in brackets, as in a URL: its own colons
    would read as the port's). The host comes back without brackets."""
    if text.startswith("["):
        host, sep, port = text[1:].partition("]")
        if not _is_ipv6(host):
            raise argparse.ArgumentTypeError(
                f"{text!r}: brackets hold an IPv6 address, e.g. [::1]:8931 (IPv6 loopback)"
            )
        if not sep or not port.startswith(":"):
            raise argparse.ArgumentTypeError(f"{text!r} has no port: write [{host}]:PORT, e.g. [{host}]:8931")
        port = port[1:]
    else:
        host, sep, port = text.rpartition(":")
        if ":" in host:
            raise argparse.ArgumentTypeError(
                f"{text!r}: write an IPv6 address in brackets, with the port after them: [::1]:8931 "
                "(IPv6 loopback), [ADDRESS]:PORT for another"
            )
        if not sep:
            host, port = "127.0.0.1", text
    number = port_number(port)
    if number is None and re.fullmatch(r"[0-9]+", port):
        raise argparse.ArgumentTypeError(f"{text!r}: the port is not a number from 1 to 65535 (e.g. 8931)")
    if number is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8931, or [::1]:8931 for IPv6; a bare PORT binds 127.0.0.1)"
        )
    if re.fullmatch(r"[0-9.]+", host):  # numbers and dots: an IPv4 address, or no host at all
        try:
            ipaddress.IPv4Address(host)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"{text!r}: {host!r} is no IPv4 address (four numbers 0-255, e.g. 127.0.0.1:8931)"
            ) from None
    return host or "127.0.0.1", number


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def origins(text: str) -> tuple[str, ...]:
    found = tuple(o.strip() for o in text.replace(";", ",").split(",") if o.strip())
    if not found:  # an empty --allowed-origins (an unset variable) had turned the policy off
        raise argparse.ArgumentTypeError(
            f"{text!r} names no origin (an unset variable?): give one, or leave the option out"
        )
    return found


def positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def port(text: str) -> int:
    number = port_number(text)
    if number is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (1-65535)")
    return number


def extension_ids(text: str) -> tuple[str, ...]:
    ids = tuple(i.strip() for i in text.split(",") if i.strip())
    if not ids:  # an unset variable had meant the shipped extension's id
        raise argparse.ArgumentTypeError(f"{text!r} names no extension id (an unset variable?)")
    for value in ids:
        if len(value) != 32 or any(not "a" <= c <= "p" for c in value):
            raise argparse.ArgumentTypeError(f"{value!r} is not a Chrome extension id (32 letters a-p)")
    return ids


def seconds(text: str) -> float:
    """Every option in seconds: positive, finite, at most `MAX_SECONDS` (inf or 1e999 would wait
    forever; a longer wait overflows the driver's timer, which then fires at once)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    problem = seconds_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text!r} {problem}")
    return value


def idle_seconds(text: str) -> float:
    """The HTTP session idle timeout: `seconds`, and at least one (less ended every session
    between two calls of its client, whose next call then had a 404)."""
    value = seconds(text)
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is under 1 second: a session would end between two calls of its client"
        )
    return value


def parsed(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    def convert(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object")
    return value


def directory(text: str) -> str:
    if not text.strip():  # Path("") is the working directory
        raise argparse.ArgumentTypeError(f"{text!r} names no folder (an unset variable?)")
    path = Path(text).expanduser()
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return str(path.resolve())


def file(text: str) -> str:
    path = Path(text).expanduser()
    if not path.is_file() or not os.access(path, os.R_OK):
        raise argparse.ArgumentTypeError(f"{text!r} is not a readable file")
    return str(path.resolve())


def script_file(text: str) -> str:
    """A JavaScript file, read as the browser gets it (UTF-8)."""
    path = file(text)
    try:
        Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a UTF-8 text file ({exc})") from None
    return path


def storage_state_file(text: str) -> str:
    """A storage state to start with, checked as the library checks one."""
    checked: str = parsed(check_storage_state)(file(text))
    return checked


# Every BrowserOptions field: its flag and how argparse reads it.
BROWSER_FLAGS: dict[str, tuple[str, dict[str, Any]]] = {
    "headless": (
        "--headed",
        {"action": "store_false", "help": "show the browser window (default: headless)"},
    ),
    "browser_path": (
        "--browser-path",
        {
            "metavar": "PATH",
            "help": "the Chromium executable to launch (default: $TABPILOT_BROWSER, else found automatically)",
        },
    ),
    "user_data_dir": (
        "--user-data-dir",
        {
            "metavar": "DIR",
            "type": parsed(functools.partial(check_profile_dir, create=False)),
            "help": "a persistent profile directory (absolute path): logins and cookies survive restarts. Default: a fresh temporary profile, deleted at exit",
        },
    ),
    "storage_state": (
        "--storage-state",
        {
            "metavar": "FILE",
            "type": storage_state_file,
            "help": "start with the cookies and localStorage of this JSON file (as browser_storage_state saves it)",
        },
    ),
    "viewport": (
        "--viewport-size",
        {
            "metavar": "WxH",
            "type": parsed(parse_viewport),
            "help": "viewport of every page in CSS pixels, e.g. 1280x720 (default 1280x720)",
        },
    ),
    "user_agent": (
        "--user-agent",
        {
            "metavar": "UA",
            "type": parsed(check_user_agent),
            "help": "the User-Agent every page sends and sees",
        },
    ),
    "ignore_https_errors": (
        "--ignore-https-errors",
        {
            "action": "store_true",
            "help": "load HTTPS pages whose certificates do not verify (self-signed, expired)",
        },
    ),
    "proxy_server": (
        "--proxy-server",
        {
            "metavar": "URL",
            "type": parsed(check_proxy_server),
            "help": "send traffic through this proxy, e.g. http://proxy:3128 or socks5://127.0.0.1:1080",
        },
    ),
    "proxy_bypass": (
        "--proxy-bypass",
        {"metavar": "LIST", "help": "comma-separated hosts that skip the proxy, e.g. 'localhost,.internal'"},
    ),
    "init_scripts": (
        "--init-script",
        {
            "metavar": "FILE",
            "action": "append",
            "type": script_file,
            "help": "JavaScript file run in every page (popups too) before its own scripts; repeatable",
        },
    ),
    "browser_args": (
        "--browser-arg",
        {
            "metavar": "ARG",
            "action": "append",
            "help": "a Chromium switch to add, as Chromium writes it, e.g. --accept-lang=de (the language pages get); repeatable",
        },
    ),
    "cdp_headers": (
        "--cdp-header",
        {
            "metavar": "K:V",
            "action": "append",
            "type": parsed(parse_header),
            "help": "HTTP header for connecting to a remote endpoint (authentication); repeatable",
        },
    ),
    "timeout_action": (
        "--timeout-action",
        {
            "metavar": "SECONDS",
            "type": seconds,
            "help": "how long a click, type or other element action may take (default 5); counted from "
            "its turn: actions on one tab run one at a time, in the order called",
        },
    ),
    "timeout_navigation": (
        "--timeout-navigation",
        {"metavar": "SECONDS", "type": seconds, "help": "how long a page may take to load (default 30)"},
    ),
    "downloads_dir": (
        "--downloads-dir",
        {
            "metavar": "DIR",
            "help": "save each file a page downloads here, under the name its server suggested; the "
            "events give its path (default: tabpilot-downloads-UID in the system's temp folder, the user's alone)",
        },
    ),
}
