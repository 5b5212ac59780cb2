"""The `tabpilot` command: `tabpilot serve [options]` (MCP over stdio or HTTP), `tabpilot demo`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from tabpilot import __version__

from .server.config import DEFAULT_SESSION_IDLE_TIMEOUT, ServerConfig
from .server.http import check_bind


def _host_port(text: str) -> tuple[str, int]:
    """`PORT`, `HOST:PORT` or `[V6]:PORT`."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT (e.g. 127.0.0.1:8931)")
    return host.strip("[]") or "127.0.0.1", int(port)


def _origins(text: str) -> tuple[str, ...]:
    return tuple(o.strip() for o in text.replace(";", ",").split(",") if o.strip())


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    )
    transport = serve.add_argument_group("transport")
    transport.add_argument(
        "--http",
        metavar="HOST:PORT",
        type=_host_port,
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (a bare PORT binds "
        "127.0.0.1). Each client session gets its own isolated browser context. Host and Origin "
        "headers are checked against the bind address.",
    )
    transport.add_argument(
        "--auth-token",
        metavar="TOKEN",
        help="require 'Authorization: Bearer TOKEN' on every HTTP request; needed to bind an address "
        "other than loopback",
    )
    transport.add_argument(
        "--session-idle-timeout",
        metavar="SECONDS",
        type=float,
        default=DEFAULT_SESSION_IDLE_TIMEOUT,
        help="close an HTTP session (and its browser context) after this long without requests "
        f"(default {DEFAULT_SESSION_IDLE_TIMEOUT:.0f})",
    )

    browser = serve.add_argument_group("browser")
    browser.add_argument("--headed", action="store_true", help="show the browser window (default: headless)")
    browser.add_argument(
        "--browser-path", metavar="PATH", help="the Chromium executable to launch (default: found automatically)"
    )
    endpoint = browser.add_mutually_exclusive_group()
    endpoint.add_argument(
        "--cdp-endpoint",
        metavar="URL",
        help="drive a running Chromium over CDP (http://host:port or its ws:// URL) instead of launching one",
    )
    endpoint.add_argument(
        "--ws-endpoint",
        metavar="URL",
        help="drive a Playwright browser server (ws://...) instead of launching a browser",
    )

    tabs = serve.add_argument_group("tabs")
    tabs.add_argument(
        "--max-tabs", metavar="N", type=_positive, default=20, help="most tabs per browser instance (default 20)"
    )
    tabs.add_argument(
        "--tab-limit-policy",
        choices=["reject", "close-oldest"],
        default="reject",
        help="beyond --max-tabs: 'reject' closes a page-opened tab at once and refuses a tool's new tab; "
        "'close-oldest' closes the least recently used tab that is neither pinned nor active "
        "(default reject)",
    )
    tabs.add_argument(
        "--follow-new-tabs",
        action="store_true",
        help="activate tabs that pages open (links, popups) instead of only reporting them",
    )

    policy = serve.add_argument_group("navigation policy")
    policy.add_argument(
        "--allowed-origins",
        metavar="LIST",
        type=_origins,
        default=(),
        help="comma-separated origins tabs may navigate to (e.g. 'https://example.com,*.test,file:'); "
        "all others are refused. Default: any http(s) origin. file: URLs are refused unless listed.",
    )
    policy.add_argument(
        "--blocked-origins",
        metavar="LIST",
        type=_origins,
        default=(),
        help="comma-separated origins tabs may never navigate to; wins over --allowed-origins",
    )

    tools = serve.add_argument_group("tools")
    tools.add_argument(
        "--tools",
        metavar="SETS",
        default="default",
        help="comma-separated tool sets to offer (default 'default'); see the README for the "
        "compatible sets. Sets whose tool names clash are refused.",
    )

    telemetry = serve.add_argument_group("telemetry")
    telemetry.add_argument(
        "--buffer-size",
        metavar="N",
        type=_positive,
        help="entries kept per telemetry buffer (console, network, ...) before the oldest are dropped",
    )
    telemetry.add_argument(
        "--no-redact",
        action="store_true",
        help="record Authorization, Cookie and Set-Cookie header values instead of redacting them",
    )

    demo = commands.add_parser(
        "demo",
        help="run a scripted multi-tab session against a built-in local site",
        description="Start the server over stdio as an MCP client would and run a scripted multi-tab "
        "session against a built-in local site, printing a transcript. Exits 0 if every step worked.",
    )
    demo.add_argument("--headed", action="store_true", help="show the browser window (default: headless)")
    demo.add_argument(
        "--browser-path", metavar="PATH", help="the Chromium executable to launch (default: found automatically)"
    )
    return parser


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    """The ServerConfig for parsed `serve` arguments; raises ValueError for unusable combinations."""
    http_host, http_port = args.http if args.http else (None, 8931)
    tool_sets = tuple(t.strip() for t in args.tools.split(",") if t.strip()) or ("default",)
    from .server.tools import select_tools

    select_tools(tool_sets)  # refuse unknown and clashing sets before anything starts
    config = ServerConfig(
        headless=not args.headed,
        browser_path=args.browser_path,
        cdp_endpoint=args.cdp_endpoint,
        ws_endpoint=args.ws_endpoint,
        max_tabs=args.max_tabs,
        tab_limit_policy=args.tab_limit_policy,
        follow_new_tabs=args.follow_new_tabs,
        allowed_origins=args.allowed_origins,
        blocked_origins=args.blocked_origins,
        tools=tool_sets,
        buffer_size=args.buffer_size,
        redact=not args.no_redact,
        http_host=http_host,
        http_port=http_port,
        auth_token=args.auth_token,
        session_idle_timeout=args.session_idle_timeout,
    )
    if config.http_host is not None:
        check_bind(config)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "demo":
        try:
            demo = importlib.import_module("tabpilot.demo")
        except ImportError:
            print("tabpilot demo is not available in this build.", file=sys.stderr)
            return 2
        return int(demo.main(browser_path=args.browser_path, headed=args.headed))
    try:
        config = config_from_args(args)
    except ValueError as exc:
        parser.exit(2, f"tabpilot serve: error: {exc}\n")
    from .server.app import create_server

    server = create_server(config)
    if config.http_host is None:
        server.run()
    else:
        from .server.http import run_http

        run_http(server, config)
    return 0
