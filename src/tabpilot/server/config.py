"""Every option of `tabpilot serve`, as one frozen record.

The CLI (`tabpilot.cli`) builds it from argv and `--config`; tests build it directly. How the
browser is launched or reached is the library's `BrowserOptions` (`browser`), the same record
`browser_instance launch` fills; the rest is the server's own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from tabpilot import DEFAULT_EXTENSION_PORT, BrowserOptions, ExtensionScope, Secrets, TabLimitPolicy

from .logs import LogLevel
from .names import NETWORK_CAP, check_caps, check_tool_sets

DEFAULT_SESSION_IDLE_TIMEOUT = 5 * 60.0
"""Seconds an HTTP session may stay idle before its browser context is released."""
DEFAULT_MAX_TOTAL_TABS = 64
"""Open tabs of all sessions and instances together."""
DEFAULT_MAX_SESSIONS = 16
"""HTTP sessions at once; each holds a browser context with its tabs."""
DEFAULT_MAX_SNAPSHOT_CHARS = 40_000
"""Characters of an accessibility tree a response shows (about 10,000 tokens): a page of 300
buttons and 300 links fits whole; a table of thousands of rows is cut, saying how to read on."""
SHUTDOWN_TIMEOUT = 5.0
"""Seconds a stopping server gives its browsers to close."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    browser: BrowserOptions = field(default_factory=BrowserOptions)
    cdp_endpoint: str | None = None
    ws_endpoint: str | None = None
    selenium_grid: str | None = None
    grid_capabilities: dict[str, Any] | None = None
    """WebDriver capabilities for the grid session, on top of Chrome's (headless unless --headed)."""
    # The user's own browser: the Chrome with remote debugging on, or the extension's bridge
    auto_connect: bool = False
    extension: bool = False
    extension_port: int = DEFAULT_EXTENSION_PORT
    extension_token: str | None = None
    extension_scope: ExtensionScope = "agent"
    extension_ids: tuple[str, ...] = ()
    # Tabs
    max_tabs: int = 20
    tab_limit_policy: TabLimitPolicy = "reject"
    follow_new_tabs: bool = False
    # Navigation policy
    allowed_origins: tuple[str, ...] = ()
    blocked_origins: tuple[str, ...] = ()
    # Tool sets (`--tools default,foxmcp`) and the default set's groups (`--caps`; None: all)
    tools: tuple[str, ...] = ("default",)
    caps: tuple[str, ...] | None = None
    navigate_returns: Literal["snapshot", "page"] = "snapshot"
    """What browser_navigate and browser_tabs new (with a url) answer with: the loaded page's
    snapshot (saves the read that follows nearly every navigation) or only its URL and title."""
    max_snapshot_chars: int = DEFAULT_MAX_SNAPSHOT_CHARS
    """The most characters of an accessibility tree a response shows (navigate, a new tab, an
    action that loads a page, browser_snapshot and the compatible sets' page reads without
    full=true): more is cut at a whole line."""
    structured_content: bool = False
    """Also send every response's facts as MCP structured content (JSON). Off by default: hosts
    that get both forms show the model the JSON instead of the text (Claude Code, VS Code) or
    both (the same facts twice); clients that parse responses turn it on."""
    # Files tools read (uploads) and write (storage state): only inside these folders (): the
    # working directory)
    allowed_file_roots: tuple[str, ...] = ()
    secrets: Secrets = field(default_factory=Secrets)
    """Values typed for `{{NAME}}` placeholders and masked in every response and log."""
    # Telemetry
    buffer_size: int | None = None
    redact: bool = True
    # HTTP transport (None: stdio)
    http_host: str | None = None
    """The address to bind; an IPv6 one without brackets ("::1": `--http [::1]:PORT` gives that)."""
    http_port: int = 8931
    auth_token: str | None = None
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT
    max_sessions: int = DEFAULT_MAX_SESSIONS
    max_total_tabs: int = DEFAULT_MAX_TOTAL_TABS
    allow_instances: bool = False
    """Over HTTP, whether clients may launch or connect browsers (browser_instance launch/connect)."""
    log_level: LogLevel = "warning"
    log_file: str | None = None
    given: Mapping[str, str] = field(default_factory=dict, compare=False)
    """How each option the operator set was given, by flag name without dashes: `--browser-path`,
    or `browser-path in /etc/tabpilot.json` (--config), so that a message names it as it was given."""

    def __post_init__(self) -> None:
        # A typo is refused before any browser starts.
        try:
            check_caps(self.caps)
        except ValueError as exc:
            raise self._as_given("caps", exc) from None
        try:
            check_tool_sets(self.tools)
        except ValueError as exc:
            raise self._as_given("tools", exc) from None

    def _as_given(self, flag: str, exc: ValueError) -> ValueError:
        """`exc` about option `flag`, naming the option as it was given (a --config file's key and
        file, or the flag) where it was."""
        given = self.given.get(flag)
        return ValueError(f"{given}: {exc}" if given else str(exc))

    def named(self, flag: str) -> str:
        """How to name the option `flag` (without dashes) to the operator."""
        return self.given.get(flag, f"--{flag}")

    def browser_start_options(self) -> list[str]:
        """The options set that decide how the browser starts or is reached, named as given: where to
        look when it does not start."""
        browser = self.browser
        # The browser path is for a browser the server launches: with an endpoint it names none
        # of what the server starts with (it serves a later browser_instance launch).
        launches = not (self.cdp_endpoint or self.ws_endpoint or self.selenium_grid or self.auto_connect)
        set_ = {
            "cdp-endpoint": self.cdp_endpoint,
            "ws-endpoint": self.ws_endpoint,
            "selenium-grid": self.selenium_grid,
            "grid-capabilities": self.grid_capabilities,
            "auto-connect": self.auto_connect,
            "browser-path": launches and browser.browser_path,
            "user-data-dir": browser.user_data_dir,
            "storage-state": browser.storage_state,
            "init-script": browser.init_scripts,
            "browser-arg": browser.browser_args,
            "proxy-server": browser.proxy_server,
            "cdp-header": browser.cdp_headers,
        }
        return [self.named(flag) for flag, value in set_.items() if value]

    @property
    def instances_allowed(self) -> bool:
        """Launching and connecting browsers from a tool: always over stdio (the client owns the
        machine), over HTTP only when the operator allows it (a client could reach other browsers)."""
        return self.http_host is None or self.allow_instances

    @property
    def shows_network(self) -> bool:
        """Whether a tool shows the tabs' network traffic: browser_observe, in the default set's
        observe group. Without it telemetry keeps console messages and errors only (the error
        counts every response carries), and the tabs' network events never reach the server."""
        return "default" in self.tools and (self.caps is None or NETWORK_CAP in self.caps)

    @property
    def shares_browser(self) -> bool:
        """Whether sessions get isolated contexts of one shared browser (HTTP) instead of their own."""
        return self.http_host is not None


def file_roots(config: ServerConfig) -> list[str]:
    """The folders tools may read files from and write files to."""
    return list(config.allowed_file_roots) or [os.getcwd()]
