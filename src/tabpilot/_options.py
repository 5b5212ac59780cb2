"""How to start or reach a browser: one option record for every front end.

`BrowserOptions` is what `TabManager(options=...)` launches and connects with; a command line,
a config file and a tool call all fill the same record, so an option is defined once.

    options = BrowserOptions(viewport=(1024, 768), user_agent="my-agent/1.0")
    options = BrowserOptions.from_mapping({"viewport": "1024x768", "ignoreHttpsErrors": True})
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DEFAULT_ACTION_TIMEOUT = 5.0
"""Seconds an element action may take (actionability checks included). Short on purpose: an agent
learns more from a fast error that says why than from a long wait."""
DEFAULT_NAVIGATION_TIMEOUT = 30.0
"""Seconds a navigation may take to load."""


def parse_viewport(text: str) -> tuple[int, int]:
    """`1280x720` -> (1280, 720)."""
    match = re.fullmatch(r"\s*(\d{2,5})\s*[xX,]\s*(\d{2,5})\s*", text)
    if match is None:
        raise ValueError(f"{text!r} is not a viewport size: give WIDTHxHEIGHT in pixels, e.g. 1280x720")
    width, height = int(match.group(1)), int(match.group(2))
    if not (100 <= width <= 10000 and 100 <= height <= 10000):
        raise ValueError(f"viewport {width}x{height} is out of range: each side from 100 to 10000 pixels")
    return width, height


def parse_header(text: str) -> tuple[str, str]:
    """`Name: value` -> ("Name", "value")."""
    name, sep, value = text.partition(":")
    if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
        raise ValueError(f"{text!r} is not a header: give NAME:VALUE, e.g. 'Authorization: Bearer abc'")
    return name.strip(), value.strip()


PROXY_SCHEMES = ("http", "https", "socks4", "socks5")


def check_proxy_server(url: str) -> str:
    """`url` as a proxy server Chromium takes (`[SCHEME://]HOST[:PORT]`, no scheme: http), or
    ValueError: Chromium refused one it cannot read by not starting, and ignored a bad scheme."""
    shown = _shown(url)
    scheme, sep, _rest = url.partition("://")
    try:
        parts = urlsplit(url if sep else f"http://{url}")
        port = parts.port
    except ValueError:
        parts, port = None, None
    host = parts.hostname if parts is not None else None
    if (
        parts is None
        or not host
        or not re.fullmatch(r"[\w.-]+|[0-9a-f:.]+", host)
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(
            f"proxy server {shown} is not [SCHEME://]HOST[:PORT], e.g. http://proxy:3128 or "
            "socks5://127.0.0.1:1080"
        )
    if sep and scheme.lower() not in PROXY_SCHEMES:
        raise ValueError(f"proxy server {shown}: the scheme must be one of {', '.join(PROXY_SCHEMES)}")
    if parts.username is not None:
        raise ValueError(  # not echoed: the password would be in the message
            "proxy server: Chromium takes no user name or password in a proxy's URL, and "
            "tabpilot has no option to pass them: use a proxy that needs none"
        )
    if port == 0:
        raise ValueError(f"proxy server {shown}: port 0 is no port; give the proxy's port, or none")
    return url


def check_user_agent(text: str) -> str:
    """`text` as a User-Agent, or ValueError: an HTTP header's value, one line without control
    characters (with a line break in it Chromium did not start, "it exited with code 0")."""
    bad = next((c for c in text if (c < " " and c != "\t") or c == "\x7f"), None)
    if bad is not None:
        raise ValueError(
            f"user agent {text!r} holds the control character {bad!r}: a User-Agent is one line of text"
        )
    return text


def check_storage_state(path: str) -> str:
    """`path` as a storage state to start with, or ValueError saying what is wrong: a JSON object of
    `cookies` (each with a name, a value and a url or a domain and path) and `origins` (each with an
    origin and its localStorage as name/value pairs), as `save_storage_state` writes it."""
    try:
        state = json.loads(Path(path).expanduser().read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"storage state {path!r} is not a readable JSON file ({exc})") from None
    problem = _storage_state_problem(state)
    if problem is not None:
        raise ValueError(
            f"storage state {path!r}: {problem}; a storage state is "
            '{"cookies": [{"name", "value", "domain", "path", ...}], "origins": [{"origin", '
            '"localStorage": [{"name", "value"}]}]}, as saving one writes it'
        )
    return path


def _storage_state_problem(state: Any) -> str | None:
    if not isinstance(state, dict):
        return "it does not hold a JSON object"
    if "cookies" not in state and "origins" not in state:
        # Another JSON file (a config file, say) had started the browser with no cookies, silently.
        keys = f" (its keys: {_shown(list(state))})" if state else ""
        return f"it holds neither cookies nor origins{keys}"
    for key in ("cookies", "origins"):
        if not isinstance(state.get(key, []), list):
            return f"{key} is not a list"
    for i, cookie in enumerate(state.get("cookies", [])):
        if not (isinstance(cookie, dict) and _strings(cookie, "name", "value")):
            return f"cookies[{i}] has no name and value (strings)"
        if not (_strings(cookie, "url") or _strings(cookie, "domain", "path")):
            return f"cookies[{i}] ({_shown(cookie['name'])}) has neither a url nor a domain and path"
    for i, origin in enumerate(state.get("origins", [])):
        if not (isinstance(origin, dict) and _strings(origin, "origin")):
            return f"origins[{i}] has no origin (a string)"
        items = origin.get("localStorage")
        if not (
            isinstance(items, list)
            and all(isinstance(item, dict) and _strings(item, "name", "value") for item in items)
        ):
            return f"origins[{i}].localStorage is not a list of name and value (strings)"
    return None


def _strings(record: dict[str, Any], *keys: str) -> bool:
    return all(isinstance(record.get(key), str) for key in keys)


MAX_SECONDS = 2_000_000
"""The longest wait in seconds: Node's timers (Playwright's driver) hold at most 2**31-1 ms and
fire a longer one at once, so every navigation would say it timed out."""


def seconds_problem(value: object) -> str | None:
    """What is wrong with `value` as a wait in seconds (to follow the value in a message), or None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "is not a number of seconds"
    if not (value > 0 and math.isfinite(value)):
        return "is not a positive, finite number of seconds"
    if value > MAX_SECONDS:
        return (
            f"is more than {MAX_SECONDS:,} seconds (about 23 days), the longest wait the browser "
            "driver can time"
        )
    return None


def check_seconds(value: float, name: str) -> float:
    """`value` as a wait in seconds, or ValueError naming `name`: positive, finite, at most
    `MAX_SECONDS` (inf would wait forever; a longer wait overflows the driver's timer)."""
    problem = seconds_problem(value)
    if problem is not None:
        raise ValueError(f"{name}: {value!r} {problem}")
    return float(value)


def call_timeout(timeout: float | None, default: float) -> float:
    """One call's `timeout` in seconds, checked as `check_seconds` checks options; None: `default`."""
    return default if timeout is None else check_seconds(timeout, "timeout")


HIDDEN = "<hidden>"
"""What a repr shows in place of a value that may be a credential."""

_SWITCHES = ("headless", "ignore_https_errors")
_PATHS = ("browser_path", "user_data_dir", "storage_state", "downloads_dir")
_TEXTS = ("user_agent", "proxy_server", "proxy_bypass")


@dataclass(frozen=True, slots=True, kw_only=True)
class BrowserOptions:
    """Options for launching a local Chromium and for reaching a remote one.

    Launch options apply to a browser tabpilot starts (and to each isolated context of it);
    `cdp_headers` to endpoints it connects to; the timeouts to every tab.
    """

    headless: bool = True
    browser_path: str | None = None
    """The Chromium executable (default: found automatically, see `find_browser`)."""
    user_data_dir: str | None = None
    """A profile directory to use and keep (logins survive restarts). None: a fresh temporary profile."""
    storage_state: str | None = None
    """A JSON file of cookies and localStorage (as `save_storage_state` writes) to start with."""
    viewport: tuple[int, int] | None = None
    """Width and height of every page's viewport in CSS pixels (None: 1280x720)."""
    user_agent: str | None = None
    ignore_https_errors: bool = False
    proxy_server: str | None = None
    """e.g. `http://proxy:3128` or `socks5://127.0.0.1:1080`."""
    proxy_bypass: str | None = None
    """Comma-separated hosts that skip the proxy, e.g. `localhost,.internal`."""
    init_scripts: tuple[str, ...] = ()
    """JavaScript files run in every page (popups included) before the page's own scripts."""
    browser_args: tuple[str, ...] = ()
    """Extra Chromium command-line arguments."""
    cdp_headers: tuple[tuple[str, str], ...] = ()
    """HTTP headers sent when connecting to a remote endpoint (authentication)."""
    timeout_action: float = DEFAULT_ACTION_TIMEOUT
    timeout_navigation: float = DEFAULT_NAVIGATION_TIMEOUT
    downloads_dir: str | None = None
    """Where each file a page downloads is saved, under the name the server suggested (made when
    the first comes). None: `tabpilot-downloads-UID` in the system's temporary folder, the user's alone."""
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    """Unused by the library: room for a front end's own settings in the same file."""

    def __repr__(self) -> str:
        """As the dataclass shows it, but with the values of `cdp_headers` hidden: they are
        credentials (an `Authorization` header, a grid's user and key), and a repr ends up in
        logs, tracebacks and debuggers."""
        shown = []
        for option in dataclasses.fields(self):
            if option.repr:
                value = getattr(self, option.name)
                if option.name == "cdp_headers":
                    value = tuple((name, HIDDEN) for name, _ in value)
                shown.append(f"{option.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"

    def __post_init__(self) -> None:
        self._check_types()
        check_seconds(self.timeout_action, "timeout_action")
        check_seconds(self.timeout_navigation, "timeout_navigation")
        if self.storage_state is not None:
            check_storage_state(self.storage_state)
        if self.proxy_server is not None:
            check_proxy_server(self.proxy_server)
        if self.user_agent is not None:
            check_user_agent(self.user_agent)
        if self.downloads_dir is not None:
            where = Path(self.downloads_dir).expanduser()
            if not str(self.downloads_dir).strip() or (where.exists() and not where.is_dir()):
                # Every download failed then, each saying it could not save its file.
                raise ValueError(
                    f"downloads dir {self.downloads_dir!r} is not a folder: name one (it is made if missing)"
                )
        for script in self.init_scripts:
            if not Path(script).expanduser().is_file():
                raise ValueError(f"init script {script!r} is not a readable file")
        if self.viewport is not None:
            # A string ("800x600") or an odd pair reached the launch, which failed in Playwright's words.
            pair = _viewport_pair(self.viewport)
            if pair is None:
                raise ValueError(
                    f"viewport must be (width, height) in pixels, e.g. (1280, 720), not {self.viewport!r}"
                )
            object.__setattr__(self, "viewport", pair)  # a list (from JSON) as a pair
        for arg in self.browser_args:
            if arg.split("=", 1)[0] == "--user-data-dir":  # the launch failed in Playwright's words
                raise ValueError(
                    f"browser argument {arg!r}: give the profile as the user data dir option "
                    "(--user-data-dir), not as a browser argument"
                )

    def _check_types(self) -> None:
        """A value of another type is refused here, saying what the option takes: the launch
        failed in Playwright's words, which read as a browser that does not run. A path may be
        given as a `Path` (kept as text)."""
        for name in _SWITCHES:
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise TypeError(f"{name} takes True or False, not {value!r}")
        for name in _PATHS:
            value = getattr(self, name)
            if isinstance(value, os.PathLike):
                object.__setattr__(self, name, os.fspath(value))
            elif value is not None and not isinstance(value, str):
                raise TypeError(f"{name} takes a path (text or a Path), not {value!r}")
        for name in _TEXTS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} takes text, not {value!r}")
        for name in ("init_scripts", "browser_args"):
            value = getattr(self, name)
            if isinstance(value, str | os.PathLike):  # one string is a sequence of its characters
                raise TypeError(f"{name} takes a tuple of strings, not one string: write ({value!r},)")
            items = tuple(
                os.fspath(v) if name == "init_scripts" and isinstance(v, os.PathLike) else v for v in value
            )
            wrong = next((v for v in items if not isinstance(v, str)), None)
            if wrong is not None:
                raise TypeError(f"{name} takes a tuple of strings, and {wrong!r} is not one")
            object.__setattr__(self, name, items)
        for header in self.cdp_headers:
            if not (len(header) == 2 and all(isinstance(part, str) for part in header)):
                raise TypeError(f"cdp_headers takes (name, value) pairs of text, and {header!r} is not one")

    def replace(self, **changes: Any) -> BrowserOptions:
        return dataclasses.replace(self, **changes)

    def init_script_sources(self) -> list[str]:
        return [Path(p).expanduser().read_text(encoding="utf-8") for p in self.init_scripts]

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls) if f.name != "extra")

    @classmethod
    def mapping_keys(cls) -> dict[str, str]:
        """Each key `from_mapping` reads, in snake_case and camelCase, and the field it sets."""
        known = {name: name for name in cls.field_names()}
        known.update({_camel(name): name for name in cls.field_names()})
        return known

    @classmethod
    def from_mapping(
        cls,
        values: Mapping[str, Any],
        *,
        base: BrowserOptions | None = None,
        check_files: Callable[[list[str]], object] | None = None,
    ) -> BrowserOptions:
        """Options from a mapping (a JSON config file, tool arguments): keys in snake_case or
        camelCase, values as JSON gives them (`"viewport": "1280x720"` or `[1280, 720]`).
        Unknown keys are an error that lists the known ones. `check_files` is given the files the
        values name that `base` does not (init scripts, storage state) before any of them is read."""
        known = cls.mapping_keys()
        changes: dict[str, Any] = {}
        for key, value in values.items():
            name = known.get(key)
            if name is None:
                raise ValueError(
                    f"unknown browser option {key!r}; known options: {', '.join(sorted(cls.field_names()))}"
                )
            changes[name] = _coerce(name, value)
        base = base or cls()
        if check_files is not None:
            named = [*changes.get("init_scripts", ()), changes.get("storage_state")]
            before = {*base.init_scripts, base.storage_state}
            files = [f for f in named if f and f not in before]
            if files:
                check_files(files)
        return dataclasses.replace(base, **changes)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _coerce(name: str, value: Any) -> Any:
    """A JSON value as the field's type."""
    if value is None:
        return None
    if name == "viewport":
        if isinstance(value, str):
            return parse_viewport(value)
        pair = _viewport_pair(
            (value.get("width"), value.get("height")) if isinstance(value, Mapping) else value
        )
        if pair is None:
            raise ValueError(
                'viewport must be \'WIDTHxHEIGHT\', [width, height] or {"width": ..., "height": ...} in '
                f"pixels, e.g. '1280x720', not {_shown(value)}"
            )
        return pair
    if name in ("init_scripts", "browser_args"):
        items = [value] if isinstance(value, str) else value
        if not (isinstance(items, list | tuple) and all(isinstance(item, str) for item in items)):
            raise ValueError(f"{name} must be a list of strings, not {_shown(value)}")
        return tuple(items)
    if name == "cdp_headers":
        if isinstance(value, Mapping):
            return tuple((str(k), str(v)) for k, v in value.items())
        items = [value] if isinstance(value, str) else value
        if not (
            isinstance(items, list | tuple)
            and all(
                isinstance(item, str) or (isinstance(item, list | tuple) and len(item) == 2) for item in items
            )
        ):
            raise ValueError(
                f"cdp_headers must be an object of name: value, or a list of 'Name: value', not {_shown(value)}"
            )
        return tuple(
            parse_header(item) if isinstance(item, str) else (str(item[0]), str(item[1])) for item in items
        )
    if name in ("headless", "ignore_https_errors"):
        if not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {_shown(value)}")
        return value
    if name in ("timeout_action", "timeout_navigation"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{name} must be a number of seconds, got {_shown(value)}")
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {_shown(value)}")
    return value


def _viewport_pair(value: object) -> tuple[int, int] | None:
    """`value` as (width, height) if it is a pair of whole numbers (a list too), each side checked
    by `parse_viewport` (ValueError out of range); None for any other shape."""
    if not (
        isinstance(value, tuple | list)
        and len(value) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in value)
    ):
        return None
    return parse_viewport(f"{value[0]}x{value[1]}")


def _shown(value: Any) -> str:
    """A JSON value in a message, cut if long (a huge one is not echoed back)."""
    text = json.dumps(value, default=repr)
    return text if len(text) <= 100 else f"{text[:100]}… ({len(text)} characters)"
