"""The `tabpilot` command: `tabpilot serve [options]` (MCP over stdio or HTTP), `tabpilot demo`,
`tabpilot extension path|id` (the browser extension that ships in the package).

The browser options are the library's `BrowserOptions`: every field has exactly one flag here
(`BROWSER_FLAGS`), and `--config FILE` takes the same options as JSON, keyed by flag name
without the dashes (`{"viewport-size": "1280x720", "max-tabs": 10}`, a list for a repeatable or
comma-separated option); the command line wins.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from tabpilot import (
    BROWSER_ENV_VAR,
    DEFAULT_EXTENSION_PORT,
    BrowserNotFoundError,
    BrowserOptions,
    ConnectError,
    Secrets,
    UrlPolicy,
    __version__,
    check_endpoint,
    extension_id,
    extension_path,
    find_browser,
    split_grid_url,
)

from .cli_flags import (
    BROWSER_FLAGS,
    directory,
    extension_ids,
    file,
    host_port,
    idle_seconds,
    json_object,
    origins,
    port,
    positive,
)
from .server.config import (
    DEFAULT_MAX_SESSIONS,
    DEFAULT_MAX_SNAPSHOT_CHARS,
    DEFAULT_MAX_TOTAL_TABS,
    DEFAULT_SESSION_IDLE_TIMEOUT,
    ServerConfig,
)
from .server.logs import LEVELS
from .server.logs import configure as configure_logs
from .server.names import CAPS, CORE, NETWORK_CAP, TOOL_SETS

if TYPE_CHECKING:
    from .server.app import TabpilotServer
    from .server.state import ServerState

SERVE_OPTIONS: dict[str, dict[str, Any]] = {}
"""Every `serve` option by flag name without dashes, with how argparse reads it (for --config)."""
COMMA_LISTS = frozenset(
    {"tools", "caps", "allowed-origins", "blocked-origins", "proxy-bypass", "extension-id"}
)
"""The options whose value is a comma-separated list: a config file may give a JSON list instead."""
_EMPTY_VALUE = "a value is empty (an unset variable?): give one, or leave the option out"


class _AddToList(argparse.Action):
    """A comma-separated list option given again adds to its list: `--blocked-origins a
    --blocked-origins b` blocks both (argparse would keep only b, and a would be let through)."""

    def __call__(self, parser: Any, namespace: argparse.Namespace, values: Any, option: Any = None) -> None:
        before = getattr(namespace, self.dest, None)
        if before is not None:
            values = before + values if isinstance(values, tuple) else f"{before},{values}"
        setattr(namespace, self.dest, values)


def _option(group: Any, flag: str, **options: Any) -> None:
    if flag.lstrip("-") in COMMA_LISTS:
        options.setdefault("action", _AddToList)
    _valued(group.add_argument(flag, **options))
    SERVE_OPTIONS[flag.lstrip("-")] = options


DASH_VALUED = ("--browser-arg",)
"""Options whose value is itself a switch (Chromium's start with --), which argparse would take
for an option of its own: `--browser-arg --accept-lang=de` is read as `--browser-arg=--accept-lang=de`."""

_NEGATIVE = re.compile(r"-\d")
"""A value that starts as a negative number does (`--viewport-size -5x10`): no option of ours
does, and argparse takes it for one ("expected one argument") unless it is a plain number."""


class _Parser(argparse.ArgumentParser):
    """argparse's, with `DASH_VALUED` options, and options given a negative-looking value, joined
    to their value first (the value's own check then says what is wrong with it). No option is
    taken by a prefix of its name (argparse's default: `--head` was --headed, `--max-t 5` --max-tabs
    or --max-total-tabs, a typo silently another option): an unknown option is refused, naming the
    options it was likely meant as."""

    commands: dict[str, _Parser]
    """The parser of each command, by name (`build_parser` fills it in)."""
    flags: list[str]
    """The option strings of this parser (`build_parser` adds those its argument groups take)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.commands = {}
        self.flags = []  # before argparse's __init__, which adds -h/--help
        self.given: list[str] = []
        """The arguments it was last given."""
        kwargs.setdefault("allow_abbrev", False)  # the commands' parsers are made by this class too
        super().__init__(*args, **kwargs)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = _valued(super().add_argument(*args, **kwargs))
        self.flags.extend(action.option_strings)
        return action

    def error(self, message: str) -> NoReturn:
        """The error, and where the options are listed: `serve`'s usage alone is 25 lines, above
        the one that says what is wrong. No command, but an option that is none of tabpilot's own
        (`tabpilot --vers`): that option is what is wrong."""
        unknown = [a for a in self.given if a.startswith("--") and a.partition("=")[0] not in self.flags]
        if self.commands and unknown and message.startswith("the following arguments are required"):
            message = f"unrecognized arguments: {' '.join(unknown)}{self.meant(unknown)}"
        self.exit(2, f"{self.prog}: error: {message}\n(`{self.prog} --help` says what it takes.)\n")

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        """An argument no command takes is said by that command, pointing to its own --help
        (argparse has the top parser say it, whose --help lists none of `serve`'s options)."""
        parsed, unknown = self.parse_known_args(args, namespace)
        if unknown:
            command = self.commands.get(getattr(parsed, "command", None) or "", self)
            command.error(f"unrecognized arguments: {' '.join(unknown)}{command.meant(unknown)}")
        return parsed

    def meant(self, unknown: Sequence[str]) -> str:
        """What the unknown options were likely meant as (" (did you mean --headed?)"), or "": the
        options whose names they begin, else the ones they are close to."""
        said = []
        names = [given.partition("=")[0] for given in unknown if given.startswith("--") and len(given) > 2]
        longs = [flag for flag in dict.fromkeys(self.flags) if flag.startswith("--")]
        for name in names:
            close = [flag for flag in longs if flag.startswith(name)] or difflib.get_close_matches(
                name, longs, n=3, cutoff=0.8
            )
            if close:
                said.append(" or ".join(close) + (f" for {name}" if len(names) > 1 else ""))
        return f" (did you mean {', '.join(said)}?)" if said else ""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self.given = sys.argv[1:] if args is None else list(args)
        return super().parse_known_args(_dash_values(self.given), namespace)


_VALUED: set[str] = set()
"""The option strings of every option of every command that takes a value."""


def _valued(action: argparse.Action) -> argparse.Action:
    if action.nargs != 0:
        _VALUED.update(action.option_strings)
    return action


def _dash_values(argv: list[str]) -> list[str]:
    joined: list[str] = []
    at = 0
    while at < len(argv):
        option, value = argv[at], argv[at + 1] if at + 1 < len(argv) else ""
        if option in _VALUED and (
            (option in DASH_VALUED and value.startswith("-")) or _NEGATIVE.match(value)
        ):
            joined.append(f"{argv[at]}={argv[at + 1]}")
            at += 2
        else:
            joined.append(argv[at])
            at += 1
    return joined


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tabpilot",
        description="Give AI agents a real Chromium with many tabs, over MCP, and never lose a tab.",
    )
    parser.add_argument("--version", action="version", version=f"tabpilot {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser(
        "serve",
        help="run the MCP server (stdio by default)",
        description="Run the tabpilot MCP server. Without --http it speaks MCP over stdin/stdout, "
        "which is what MCP clients that launch servers expect.",
        argument_default=argparse.SUPPRESS,  # so --config values apply unless given here
    )
    serve.add_argument(
        "--config",
        metavar="FILE",
        type=file,
        help="read options from this JSON file, keyed by flag name without dashes "
        '(e.g. {"viewport-size": "1280x720", "max-tabs": 10, "tools": ["default", "foxmcp"]}): true/false '
        "for a switch, a list for a repeatable option or one that takes a comma-separated list; the "
        "command line wins. A comma-separated option given twice adds to its list",
    )
    transport = serve.add_argument_group("transport")
    _option(
        transport,
        "--http",
        metavar="HOST:PORT",
        type=host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (a bare PORT binds "
        "127.0.0.1; an IPv6 address goes in brackets: [::1]:8931). Each client session gets its own "
        "isolated browser context. Host and Origin headers are checked against the bind address.",
    )
    _option(
        transport,
        "--auth-token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every HTTP request; needed to bind an address "
        "other than loopback. Better: set it in $TABPILOT_AUTH_TOKEN (a command line shows in ps)",
    )
    _option(
        transport,
        "--session-idle-timeout",
        metavar="SECONDS",
        type=idle_seconds,
        help="close an HTTP session (and its browser context) after this long with no request of it in "
        "progress (a running call and an open notification stream both count), counted from the end of "
        f"its last one; its id then answers 404 (default {DEFAULT_SESSION_IDLE_TIMEOUT:.0f}, at least 1)",
    )
    _option(
        transport,
        "--max-sessions",
        metavar="N",
        type=positive,
        help=f"most HTTP sessions at once; a client beyond it is refused (default {DEFAULT_MAX_SESSIONS})",
    )
    _option(
        transport,
        "--allow-instances",
        action="store_true",
        help="over HTTP, let clients launch, connect and close browsers with browser_instance (off by "
        "default: a client could reach browsers it does not own)",
    )

    browser = serve.add_argument_group("browser")
    for name, (flag, options) in BROWSER_FLAGS.items():
        _option(browser, flag, dest=name, **options)
    endpoint = browser.add_mutually_exclusive_group()
    _option(
        endpoint,
        "--cdp-endpoint",
        metavar="URL",
        help="drive a running Chromium over CDP (http://host:port or its ws:// URL) instead of launching one",
    )
    _option(
        endpoint,
        "--ws-endpoint",
        metavar="URL",
        help="drive a Playwright browser server (ws://...) instead of launching a browser",
    )
    _option(
        endpoint,
        "--selenium-grid",
        metavar="URL",
        help="start the browser as a session on this Selenium Grid 4 (http://host:4444) and drive it "
        "over the session's CDP endpoint; the session ends when the server stops",
    )
    _option(
        browser,
        "--grid-capabilities",
        metavar="JSON",
        type=json_object,
        help="WebDriver capabilities for --selenium-grid sessions, on top of Chrome's (e.g. '{\"platformName\": "
        '"linux", "goog:chromeOptions": {"args": ["--accept-lang=de"]}}\')',
    )

    own = serve.add_argument_group(
        "your own browser",
        "Drive the browser you use every day instead of a launched one: the Chrome you run with remote "
        "debugging on (--auto-connect), or any Chrome through the tabpilot extension (--extension).",
    )
    _option(
        own,
        "--auto-connect",
        action="store_true",
        help="attach to the Chrome running with remote debugging on (Chrome 144+: "
        "chrome://inspect/#remote-debugging), found through the DevToolsActivePort file of its profile: "
        "--user-data-dir, else Chrome's default profile",
    )
    _option(
        own,
        "--extension",
        action="store_true",
        help="listen on 127.0.0.1 for the tabpilot browser extension (`tabpilot extension path` is the folder "
        "to load unpacked) and drive the tabs it shares: the ones the agent opens and the ones you share "
        "with its button. Over stdio only",
    )
    _option(
        own,
        "--extension-port",
        metavar="PORT",
        type=port,
        help=f"the port the extension connects to (default {DEFAULT_EXTENSION_PORT})",
    )
    _option(
        own,
        "--extension-token",
        metavar="TOKEN",
        help="the pairing token the extension must present (default: $TABPILOT_EXTENSION_TOKEN, else a "
        "new one, printed with the connect page's URL at start). A token that starts with '-' is given as "
        "--extension-token=TOKEN",
    )
    _option(
        own,
        "--extension-scope",
        choices=["agent", "all"],
        help="'agent': the tabs the agent opens, the tabs those open and the tabs you share; 'all': every "
        "tab (default agent)",
    )
    _option(
        own,
        "--extension-id",
        metavar="IDS",
        type=extension_ids,
        dest="extension_ids",
        help="accept only these extension ids (comma-separated) instead of the shipped extension's "
        "(a copy loaded from another folder with another key)",
    )

    tabs = serve.add_argument_group("tabs")
    _option(
        tabs, "--max-tabs", metavar="N", type=positive, help="most tabs per browser instance (default 20)"
    )
    _option(
        tabs,
        "--max-total-tabs",
        metavar="N",
        type=positive,
        help="most tabs of all instances and HTTP sessions together (the tabs they see: the shared "
        "browser's own is not counted); beyond it a page-opened tab closes at once and a new tab is "
        "refused (with --tab-limit-policy close-oldest, the session's own least recently used tab "
        f"closes instead), never another session's tab closed (default {DEFAULT_MAX_TOTAL_TABS})",
    )
    _option(
        tabs,
        "--tab-limit-policy",
        choices=["reject", "close-oldest"],
        help="beyond --max-tabs: 'reject' closes a page-opened tab at once and refuses a tool's new tab; "
        "'close-oldest' closes the least recently used tab that is neither pinned nor active "
        "(default reject)",
    )
    _option(
        tabs,
        "--follow-new-tabs",
        action="store_true",
        help="activate tabs that pages open (links, popups) instead of only reporting them "
        "(a click with followNewTab=false keeps its own in the background)",
    )

    policy = serve.add_argument_group("navigation policy")
    _option(
        policy,
        "--allowed-origins",
        metavar="LIST",
        type=origins,
        help="comma-separated origins tabs may navigate to (e.g. 'https://example.com,*.test,file:'); "
        "all others are refused. Default: any http(s) origin. file:, chrome:, view-source: and about: "
        "URLs (but about:blank) are refused unless listed.",
    )
    _option(
        policy,
        "--blocked-origins",
        metavar="LIST",
        type=origins,
        help="comma-separated origins tabs may never navigate to; wins over --allowed-origins",
    )

    tools = serve.add_argument_group("tools")
    _option(
        tools,
        "--tools",
        metavar="SETS",
        help=f"comma-separated tool sets to offer: {', '.join(TOOL_SETS)} (default 'default'; the others "
        "are the tools of other browser servers, see the README). Sets whose tool names clash are refused.",
    )
    _option(
        tools,
        "--caps",
        metavar="GROUPS",
        help=f"offer only these groups of the default set, besides core ({CORE}): "
        + "; ".join(f"{name} ({what})" for name, what in CAPS.items())
        + f". Without {NETWORK_CAP}, telemetry keeps console messages and errors only (no network recording). "
        "Default: all",
    )
    _option(
        tools,
        "--navigate-returns",
        choices=["snapshot", "page"],
        help="what browser_navigate and browser_tabs new with a url answer with: 'snapshot', the loaded page's "
        "accessibility tree (saves the read that usually follows), or 'page', its URL and title only "
        "(default snapshot)",
    )
    _option(
        tools,
        "--max-snapshot-chars",
        metavar="N",
        type=positive,
        help="the most characters of a page's accessibility tree an answer shows (navigate, a new tab, "
        "browser_snapshot, pilo's get_snapshot and browser-use's browser_get_state without full=true); a "
        "larger tree is cut at a whole line (browser_get_state: a whole element), saying how much was "
        f"left out and how to read the rest (default {DEFAULT_MAX_SNAPSHOT_CHARS})",
    )
    _option(
        tools,
        "--structured-content",
        action="store_true",
        help="also send each response's facts as MCP structured content (JSON), for clients that parse "
        "responses. Off by default: hosts that get both show the model the JSON instead of the text, or "
        "both",
    )
    _option(
        tools,
        "--allowed-file-root",
        metavar="DIR",
        action="append",
        type=directory,
        help="a folder tools may read uploads from and write files to; repeatable (default: the "
        "working directory)",
    )
    _option(
        tools,
        "--secrets",
        metavar="FILE",
        type=file,
        help="a dotenv file of NAME=value secrets: the agent types {{NAME}} and the server puts the value "
        "in; the value is masked as {{NAME}} in every response and log (at least 4 characters)",
    )

    telemetry = serve.add_argument_group("telemetry")
    _option(
        telemetry,
        "--buffer-size",
        metavar="N",
        type=positive,
        help="entries kept per telemetry buffer (console, network, ...) before the oldest are dropped "
        "(default 5000)",
    )
    _option(
        telemetry,
        "--no-redact",
        action="store_true",
        help="record Authorization, Cookie and Set-Cookie header values instead of redacting them",
    )

    diagnostics = serve.add_argument_group("diagnostics")
    _option(
        diagnostics,
        "--log-level",
        choices=list(LEVELS),
        help="log records at this level and above (default warning); never to stdout. A tool call's "
        "records also go to its MCP client when it asks for them",
    )
    _option(
        diagnostics,
        "--log-file",
        metavar="PATH",
        help="append the log to this file instead of stderr",
    )

    demo = commands.add_parser(
        "demo",
        help="run a scripted multi-tab session against a built-in local site",
        description="Start the server over stdio as an MCP client would and run a scripted multi-tab "
        "session against a built-in local site, printing a transcript. Exits 0 if every step worked.",
    )
    demo.add_argument("--headed", action="store_true", help="show the browser window (default: headless)")
    demo.add_argument(
        "--browser-path",
        metavar="PATH",
        help="the Chromium executable to launch (default: $TABPILOT_BROWSER, else found automatically)",
    )
    demo.add_argument(
        "--extension",
        action="store_true",
        help="run the story through the tabpilot extension: a Chromium is started with the extension "
        "loaded and the server drives it as the user's own browser (tabpilot serve --extension)",
    )

    extension = commands.add_parser(
        "extension",
        help="where the tabpilot browser extension is, and its id",
        description="The tabpilot browser extension ships in this package. Load its folder unpacked at "
        "chrome://extensions (Developer mode on), then pair it by opening the connect page that "
        "`tabpilot serve --extension` prints.",
    )
    extension.add_argument(
        "what",
        metavar="{path,id}",  # named so in "the following arguments are required"
        choices=["path", "id"],
        help="path: the folder to load unpacked; id: the extension's id (fixed by its manifest key)",
    )
    serve.flags.extend(f"--{name}" for name in SERVE_OPTIONS)  # added to its argument groups
    parser.commands.update(serve=serve, demo=demo, extension=extension)
    return parser


def in_config_file(key: str, path: str) -> str:
    """An option given in a config file, named for the operator."""
    return f"option {key!r} of --config {path}"


def read_config_file(path: str) -> dict[str, Any]:
    """The options of a JSON config file, as argparse would have parsed the same flags; a relative
    file or folder in it is taken from the file's folder (an MCP client chooses the working one)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"--config {path}: not a readable JSON file ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"--config {path}: the file must hold a JSON object of options")
    values: dict[str, Any] = {}
    for key, value in data.items():
        options = SERVE_OPTIONS.get(key)
        if options is None:
            raise ValueError(
                f"--config {path}: unknown option {key!r}{_key_meant(key)}; options are: "
                f"{', '.join(sorted(SERVE_OPTIONS))}"
            )
        dest = options.get("dest", key.replace("-", "_"))
        convert = options.get("type", str)
        if options.get("metavar") in ("FILE", "DIR", "PATH") and key != "user-data-dir":  # that one: absolute
            convert = _beside(path, convert, names_on_path=key == "browser-path")
        action = options.get("action", "store")
        try:
            if action in ("store_true", "store_false"):
                if not isinstance(value, bool):
                    raise ValueError("must be true or false")
                values[dest] = value if action == "store_true" else not value
            elif action == "append":
                items = value if isinstance(value, list) else [value]
                values[dest] = [convert(_scalar(item)) for item in items]
            elif isinstance(value, list) and key in COMMA_LISTS:
                values[dest] = convert(",".join(_scalar(item) for item in value))
            elif isinstance(value, dict) and convert is json_object:
                values[dest] = convert(json.dumps(value))  # read as the JSON the flag would have taken
            else:
                values[dest] = convert(_scalar(value))
        except (ValueError, argparse.ArgumentTypeError) as exc:
            raise ValueError(f"{in_config_file(key, path)}: {exc}") from None
        choices = options.get("choices")
        if choices is not None and values[dest] not in choices:
            raise ValueError(f"{in_config_file(key, path)} must be one of {', '.join(map(str, choices))}")
    return values


def _key_meant(key: str) -> str:
    """The config key an unknown one was likely meant as (" (did you mean 'user-agent'?)"), or "":
    the flag written as the command line has it (`--headed`), as a launch's options have it
    (`userAgent`) or with underscores (`max_tabs`), else a key close to it (`max-tab`)."""
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", key.lstrip("-")).replace("_", "-").lower()
    close = [name] if name in SERVE_OPTIONS else difflib.get_close_matches(name, list(SERVE_OPTIONS), n=2)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def _beside(
    config: str, convert: Callable[[str], Any], *, names_on_path: bool = False
) -> Callable[[str], Any]:
    """`convert` of a path given in the config file `config`, a relative one taken from its folder.
    With `names_on_path` (a browser), a bare name found on PATH stays a name, as on the command line."""

    def converted(text: str) -> Any:
        given = Path(text).expanduser()
        if names_on_path and "/" not in text and os.sep not in text and shutil.which(text):
            return convert(text)  # `"browser-path": "chromium"` had become <the file's folder>/chromium
        if text.strip() and not given.is_absolute():
            text = str(Path(config).expanduser().resolve().parent / given)
        return convert(text)

    return converted


def _scalar(value: Any) -> str:
    """A config file's value of one flag, as the command line would have it."""
    if isinstance(value, str | int | float) and not isinstance(value, bool):
        return str(value)
    raise ValueError(f"give one value as a string or number, not {json.dumps(value)}")


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """The ServerConfig for parsed `serve` arguments; raises ValueError for unusable combinations."""
    given = vars(args)
    if not SERVE_OPTIONS:
        build_parser()
    flag_of = {options.get("dest", flag.replace("-", "_")): flag for flag, options in SERVE_OPTIONS.items()}
    values: dict[str, Any] = {}
    how: dict[str, str] = {}  # how each option was given, by flag name without dashes
    if "config" in given:
        from_file = read_config_file(given["config"])
        values.update(from_file)
        how.update({flag_of[dest]: in_config_file(flag_of[dest], given["config"]) for dest in from_file})
    from_command_line = {k: v for k, v in given.items() if k not in ("command", "config")}
    values.update(from_command_line)
    how.update({flag_of[dest]: f"--{flag_of[dest]}" for dest in from_command_line})
    for dest, value in values.items():
        # `--cdp-endpoint "$UNSET"` had launched a local browser instead, as if no option was given;
        # `--browser-arg ''` gave Chromium an empty switch, `--allowed-file-root ''` meant the
        # working directory, `--tools ,,` the default set.
        given_values = value if isinstance(value, list) else [value]
        names = value.split(",") if dest in ("tools", "caps") and isinstance(value, str) else given_values
        if dest == "caps" and not value.strip():
            continue  # an empty --caps: the core tools alone
        if any(isinstance(v, str) and not v.strip() for v in names) and dest != "auth_token":
            raise ValueError(f"{how[flag_of[dest]]}: {_EMPTY_VALUE}")
    browser = BrowserOptions()
    changes: dict[str, Any] = {}
    for name in BrowserOptions.field_names():
        if name in values:
            value = values[name]
            changes[name] = tuple(value) if isinstance(value, list) else value
    browser = browser.replace(**changes)
    http_host, http_port = values.get("http", (None, 8931))
    tool_sets = tuple(t.strip() for t in values.get("tools", "default").split(",") if t.strip()) or (
        "default",
    )
    caps_given = values.get("caps")
    caps = None if caps_given is None else tuple(c.strip() for c in caps_given.split(",") if c.strip())
    secrets_file = values.get("secrets")
    try:
        secrets = Secrets.from_dotenv(secrets_file) if secrets_file else Secrets()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{how.get('secrets', '--secrets')}: {exc}") from None
    for origin_list in ("allowed_origins", "blocked_origins"):
        try:
            UrlPolicy(**{origin_list: values.get(origin_list, ())})
        except ValueError as exc:
            raise ValueError(f"{how.get(flag_of[origin_list], '--' + flag_of[origin_list])}: {exc}") from None
    config = ServerConfig(
        browser=browser,
        cdp_endpoint=values.get("cdp_endpoint"),
        ws_endpoint=values.get("ws_endpoint"),
        selenium_grid=values.get("selenium_grid"),
        grid_capabilities=values.get("grid_capabilities"),
        auto_connect=values.get("auto_connect", False),
        extension=values.get("extension", False),
        extension_port=values.get("extension_port", DEFAULT_EXTENSION_PORT),
        extension_token=values.get("extension_token") or os.environ.get("TABPILOT_EXTENSION_TOKEN") or None,
        extension_scope=values.get("extension_scope", "agent"),
        extension_ids=tuple(values.get("extension_ids", ())),
        max_tabs=values.get("max_tabs", 20),
        max_total_tabs=values.get("max_total_tabs", DEFAULT_MAX_TOTAL_TABS),
        tab_limit_policy=values.get("tab_limit_policy", "reject"),
        follow_new_tabs=values.get("follow_new_tabs", False),
        allowed_origins=values.get("allowed_origins", ()),
        blocked_origins=values.get("blocked_origins", ()),
        tools=tool_sets,
        caps=caps,
        navigate_returns=values.get("navigate_returns", "snapshot"),
        max_snapshot_chars=values.get("max_snapshot_chars", DEFAULT_MAX_SNAPSHOT_CHARS),
        structured_content=values.get("structured_content", False),
        allowed_file_roots=tuple(values.get("allowed_file_root") or ()),
        secrets=secrets,
        buffer_size=values.get("buffer_size"),
        redact=not values.get("no_redact", False),
        http_host=http_host,
        http_port=http_port,
        auth_token=_auth_token(values.get("auth_token"), http=http_host is not None),
        session_idle_timeout=values.get("session_idle_timeout", DEFAULT_SESSION_IDLE_TIMEOUT),
        max_sessions=values.get("max_sessions", DEFAULT_MAX_SESSIONS),
        allow_instances=values.get("allow_instances", False),
        log_level=values.get("log_level", "warning"),
        log_file=values.get("log_file"),
        given=how,
    )
    sources = [
        flag
        for flag, given in (
            ("--cdp-endpoint", config.cdp_endpoint),
            ("--ws-endpoint", config.ws_endpoint),
            ("--selenium-grid", config.selenium_grid),
            ("--auto-connect", config.auto_connect),
            ("--extension", config.extension),
        )
        if given
    ]
    if len(sources) > 1:
        raise ValueError(f"{' and '.join(sources)} exclude each other: give one")
    # A URL that can name no such endpoint is refused now, not at the first call.
    for option, url, check in (
        ("cdp-endpoint", config.cdp_endpoint, lambda u: check_endpoint(u, "cdp")),
        ("ws-endpoint", config.ws_endpoint, lambda u: check_endpoint(u, "playwright")),
        ("selenium-grid", config.selenium_grid, split_grid_url),
    ):
        if url:
            try:
                check(url)
            except ConnectError as exc:
                raise ValueError(f"{config.named(option)}: {exc}") from None
    if (config.browser.browser_path or os.environ.get(BROWSER_ENV_VAR)) and not sources:
        # Checked when the server launches its browser; with an endpoint only a later launch uses it.
        try:
            find_browser(config.browser.browser_path)
        except BrowserNotFoundError as exc:
            from .server.advice import in_flag_words  # only an error needs it

            # The message names the option (or the environment variable) as the operator gave it.
            raise ValueError(in_flag_words(exc, config.named("browser-path"))) from None
    if config.grid_capabilities is not None and not config.selenium_grid:
        raise ValueError(
            f"{config.named('grid-capabilities')} applies to --selenium-grid sessions: give --selenium-grid "
            "URL too"
        )
    # An option that would change nothing is refused, as the user meant it to change something.
    if "user-data-dir" in how and sources and not config.auto_connect:
        # A later browser_instance launch gets a fresh profile too, unless the call names one.
        raise ValueError(
            f"{how['user-data-dir']} is the profile of the browser the server launches (or, with "
            f"--auto-connect, of the Chrome to find): the browser that {sources[0]} reaches has its own. "
            "Drop it, or give the profile to that browser where it starts"
        )
    for flag in ("extension-port", "extension-token", "extension-scope", "extension-id"):
        if flag in how and not config.extension:
            raise ValueError(f"{how[flag]} applies to the extension's bridge: give --extension too")
    token = config.extension_token
    if config.extension and token is not None and (len(token) < 8 or token != token.strip() or " " in token):
        source = how.get("extension-token", "$TABPILOT_EXTENSION_TOKEN")
        raise ValueError(
            f"{source}: give a token of at least 8 characters without spaces (it is all a web page lacks "
            "to drive the browser), or leave it out for a random one"
        )
    for flag in ("max-sessions", "session-idle-timeout", "allow-instances"):
        if flag in how and config.http_host is None:
            raise ValueError(f"{how[flag]} only applies to an HTTP server: add --http HOST:PORT, or drop it")
    if caps is not None and "default" not in tool_sets:
        raise ValueError(
            f"{config.named('caps')} narrows the default tool set, which {config.named('tools')} leaves out: "
            "add default to it, or drop the option"
        )
    if config.http_host is not None:
        if config.extension:
            raise ValueError(
                "--extension serves one MCP client (the user's own browser has no isolated contexts to give "
                "each HTTP session): use it over stdio, without --http"
            )
        from .server.http import check_bind  # uvicorn: only HTTP needs it

        check_bind(config)
    return config


AUTH_TOKEN_ENV = "TABPILOT_AUTH_TOKEN"


def _auth_token(given: str | None, *, http: bool) -> str | None:
    """The bearer token: --auth-token, else $TABPILOT_AUTH_TOKEN (not visible in `ps`)."""
    token = given if given is not None else os.environ.get(AUTH_TOKEN_ENV)
    if token is None:
        return None
    source = "--auth-token" if given is not None else f"${AUTH_TOKEN_ENV}"
    if not http:
        if given is None:
            return None  # an environment variable set for other runs does not stop a stdio server
        raise ValueError("--auth-token only applies to an HTTP server: add --http HOST:PORT, or drop it")
    if not token.strip() or token != token.strip():
        raise ValueError(f"{source} is empty or starts or ends with spaces: give a real secret")
    if len(token) < 8:
        raise ValueError(f"{source} is shorter than 8 characters: give a longer secret")
    return token


TYPED_IN_A_TERMINAL = (
    "tabpilot serve speaks MCP over stdin/stdout: an MCP client starts it and writes to it (see "
    "'Use it from an MCP client' in the README). To see it work, run `tabpilot demo`; to serve "
    "clients over HTTP, `tabpilot serve --http 127.0.0.1:8931`. Ctrl-C stops it."
)
"""What `tabpilot serve` says on stderr when its stdin is a terminal, where it would seem to hang."""
CLOSED_STDIO = (
    "it was started with its stdin or stdout closed: over stdio it reads MCP messages from stdin and "
    "answers on stdout. Let an MCP client start it, or serve HTTP (--http HOST:PORT)"
)


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while starting: no traceback
        return 130


def _main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "extension":
        print(extension_path() if args.what == "path" else extension_id())
        return 0
    if args.command == "demo":
        if args.browser_path is not None and not args.browser_path.strip():
            parser.exit(2, f"tabpilot demo: error: --browser-path: {_EMPTY_VALUE}\n")
        try:
            demo = importlib.import_module("tabpilot.demo")
        except ImportError as exc:  # a broken install: the demo needs only core dependencies
            print(f"tabpilot demo could not start: {exc}", file=sys.stderr)
            return 2
        return int(demo.main(browser_path=args.browser_path, headed=args.headed, extension=args.extension))
    try:
        config = config_from_args(args)
    except ValueError as exc:
        parser.exit(2, f"tabpilot serve: error: {exc}\n")
    try:
        configure_logs(config.log_level, config.log_file, mask=config.secrets.mask)
    except OSError as exc:
        parser.exit(
            2,
            f"tabpilot serve: error: {config.named('log-file')}: cannot append to "
            f"{os.path.abspath(config.log_file or '')} ({exc.strerror or exc}): name a file you may write in a "
            "folder that exists, or leave the option out to log to stderr\n",
        )
    # Every argument is checked by now: what starts from here (a browser) is not started in vain.
    from .server.runner import loading, serve_stdio

    if config.http_host is None:
        if sys.stdin is None or sys.stdout is None:  # their descriptors were closed at start
            parser.exit(2, f"tabpilot serve: error: {CLOSED_STDIO}\n")
        if os.isatty(0):  # typed by hand: no MCP client will write to this terminal
            print(TYPED_IN_A_TERMINAL, file=sys.stderr, flush=True)
        return serve_stdio(config, _build_server)
    with loading():  # as serve_stdio does
        from .server.app import create_server
        from .server.http import run_http

        server = create_server(config)
    try:
        return run_http(server, config)
    except ValueError as exc:  # the address cannot be listened on
        parser.exit(1, f"tabpilot serve: error: {exc}\n")


def _build_server(state: ServerState) -> TabpilotServer:
    from .server.app import create_server  # the MCP SDK: imported while the browser starts

    return create_server(started=state)
