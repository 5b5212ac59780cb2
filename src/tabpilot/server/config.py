"""Every option of `tabpilot serve`, as one frozen record.

The CLI (`tabpilot.cli`) builds it from argv and `--config`; tests build it directly. How the
browser is launched or reached is the library's `BrowserOptions` (`browser`), the same record
`browser_instance launch` fills; the rest is the server's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tabpilot import DEFAULT_EXTENSION_PORT, BrowserOptions, ExtensionScope, TabLimitPolicy

DEFAULT_SESSION_IDLE_TIMEOUT = 30 * 60.0
"""Seconds an HTTP session may stay idle before its browser context is released (the SDK's default)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerConfig:
    browser: BrowserOptions = field(default_factory=BrowserOptions)
    cdp_endpoint: str | None = None
    ws_endpoint: str | None = None
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
    # Tool sets (`--tools default,foxmcp`)
    tools: tuple[str, ...] = ("default",)
    # Telemetry
    buffer_size: int | None = None
    redact: bool = True
    # HTTP transport (None: stdio)
    http_host: str | None = None
    http_port: int = 8931
    auth_token: str | None = None
    session_idle_timeout: float = DEFAULT_SESSION_IDLE_TIMEOUT

    @property
    def shares_browser(self) -> bool:
        """Whether sessions get isolated contexts of one shared browser (HTTP) instead of their own."""
        return self.http_host is not None
