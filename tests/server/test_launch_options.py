"""Launch options on a real Chromium, through a real MCP client: what the page sees and what the
local site receives. A persistent profile keeps a cookie across two server runs; the viewport and
user agent are what the page sees and the site gets; an init script runs in a popup before the
page's own scripts; a self-signed HTTPS page loads only with ignore-HTTPS-errors; a --config file
gives the same options as flags."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import trustme
from mcp import Client

from support import data, error, ok, recording_browser, ref_of, result_of, text
from tabpilot import BrowserOptions, Telemetry
from tabpilot.cli import SERVE_OPTIONS, build_parser, config_from_args
from tabpilot.demo.site import LocalSite
from tabpilot.server import ServerConfig, create_server
from tabpilot.server.config import DEFAULT_MAX_SNAPSHOT_CHARS


def server(browser_path: str, **options: Any) -> Client:
    """An in-memory client of a server that launches its own browser with these options."""
    config = ServerConfig(
        browser=BrowserOptions(browser_path=browser_path, **options), structured_content=True
    )
    return Client(create_server(config))


async def evaluate(mcp: Client, function: str, tab_id: int | None = None) -> Any:
    arguments: dict[str, Any] = {"function": function}
    if tab_id is not None:
        arguments["tabId"] = tab_id
    return result_of(ok(await mcp.call_tool("browser_evaluate", arguments)))["value"]


async def test_a_persistent_profile_keeps_a_cookie_across_two_server_runs(
    browser_path: str, site: LocalSite, tmp_path: Path
) -> None:
    profile = str(tmp_path / "profile")
    # Persistent cookies need an expiry: a session cookie ends with the browser.
    site.set_content(
        "/remember", "<script>document.cookie = 'who=ada; max-age=3600; path=/'</script><h1>Remembered</h1>"
    )
    async with server(browser_path, user_data_dir=profile) as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/remember")}))
        assert await evaluate(mcp, "() => document.cookie") == "who=ada"
    async with server(browser_path, user_data_dir=profile) as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")}))
        assert await evaluate(mcp, "() => document.cookie") == "who=ada"
    async with server(browser_path) as mcp:  # without the profile: a fresh one, no cookie
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")}))
        assert await evaluate(mcp, "() => document.cookie") == ""


async def test_another_browser_launched_beside_a_kept_profile_gets_a_fresh_one(
    browser_path: str, tmp_path: Path
) -> None:
    # It was launched with the server's --user-data-dir, which its first browser holds: every
    # browser_instance launch failed ("SingletonLock: File exists").
    async with server(browser_path, user_data_dir=str(tmp_path / "profile")) as mcp:
        ok(await mcp.call_tool("browser_tabs", {"action": "list"}))
        launched = result_of(ok(await mcp.call_tool("browser_instance", {"action": "launch"})))
        (listed,) = [
            i
            for i in result_of(await mcp.call_tool("browser_instance", {"action": "list"}))["instances"]
            if i["id"] == launched["instanceId"]
        ]
        assert listed["userDataDir"] is None


def test_a_browser_argument_is_given_as_chromium_writes_it() -> None:
    # argparse took `--lang=de` for an option of its own: the server exited ("expected one argument").
    argv = ["serve", "--browser-arg", "--lang=de", "--browser-arg", "--mute-audio", "--headed"]
    config = config_from_args(build_parser().parse_args(argv))
    assert config.browser.browser_args == ("--lang=de", "--mute-audio")
    assert config.browser.headless is False


async def test_the_browser_argument_the_help_shows_gives_pages_that_language(
    browser_path: str, site: LocalSite
) -> None:
    # The help, README and config examples gave `--lang=de`, which Chromium on Linux ignores:
    # pages still got en-US, and a user who followed them saw nothing change.
    build_parser()
    example = re.search(
        r"e\.g\. (--accept-lang=(\w+)) \(the language pages get\)",
        SERVE_OPTIONS["browser-arg"]["help"],
    )
    assert example is not None, SERVE_OPTIONS["browser-arg"]["help"]
    async with server(browser_path, browser_args=(example[1],)) as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/api/echo")}))
        assert await evaluate(mcp, "() => navigator.languages") == [example[2]]
        echoed = json.loads(await evaluate(mcp, "() => document.body.innerText"))
        assert echoed["headers"]["accept-language"] == example[2]


async def test_viewport_user_agent_and_an_init_script_in_a_popup(
    browser_path: str, site: LocalSite, tmp_path: Path
) -> None:
    script = tmp_path / "init.js"
    # Runs before the page's scripts: the page can read what it set.
    script.write_text("window.__initRan = (window.__initRan || 0) + 1;")
    site.set_content("/opener", "<button onclick=\"window.open('/popup')\">Open it</button>")
    site.set_content("/popup", "<h1>Popup</h1><script>window.__seenByPage = window.__initRan;</script>")
    async with server(
        browser_path, viewport=(1024, 640), user_agent="tabpilot-test-agent/1.0", init_scripts=(str(script),)
    ) as mcp:
        ok(await mcp.call_tool("browser_navigate", {"url": site.url("/api/echo")}))
        echoed = json.loads(await evaluate(mcp, "() => document.body.innerText"))
        assert echoed["headers"]["user-agent"] == "tabpilot-test-agent/1.0"
        assert await evaluate(mcp, "() => [innerWidth, innerHeight, navigator.userAgent]") == [
            1024,
            640,
            "tabpilot-test-agent/1.0",
        ]
        went = ok(await mcp.call_tool("browser_navigate", {"url": site.url("/opener")}))
        home = result_of(went)["tabId"]
        snap = data(ok(await mcp.call_tool("browser_snapshot", {"full": True, "tabId": home})))["snapshot"]
        clicked = ok(await mcp.call_tool("browser_click", {"ref": ref_of(snap, "Open it")}))
        popup = next(e["tabId"] for e in data(clicked)["events"] if e["type"] == "tab_opened")
        ok(await mcp.call_tool("browser_wait_for", {"text": "Popup", "tabId": popup}))
        # The page's own script saw what the init script set: it ran first, once.
        assert await evaluate(mcp, "() => [window.__initRan, window.__seenByPage]", popup) == [1, 1]


@contextlib.contextmanager
def page_server(
    page: Callable[[BaseHTTPRequestHandler], str], tls: ssl.SSLContext | None = None
) -> Iterator[int]:
    """An HTTP server on 127.0.0.1 that answers every GET with the HTML `page` makes of the
    request (over TLS with `tls`); yields its port."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = page(self).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    if tls is not None:
        httpd.socket = tls.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def proxy() -> Iterator[tuple[str, list[str]]]:
    """An HTTP proxy on 127.0.0.1 that answers every request itself (nothing is forwarded): its URL,
    and the request lines it was sent."""
    seen: list[str] = []

    def answer(request: BaseHTTPRequestHandler) -> str:
        seen.append(request.requestline)
        return f"<title>Via proxy</title><p>The proxy answered {request.path}</p>"

    with page_server(answer) as port:
        yield f"http://127.0.0.1:{port}", seen


async def test_pages_load_through_the_proxy_server(browser_path: str, proxy: tuple[str, list[str]]) -> None:
    url, seen = proxy
    # A name no resolver knows: only the proxy can answer it (nothing leaves this machine).
    async with server(browser_path, proxy_server=url) as mcp:
        went = text(ok(await mcp.call_tool("browser_navigate", {"url": "http://shop.invalid/cart"})))
        assert "The proxy answered http://shop.invalid/cart" in went, went
    assert "GET http://shop.invalid/cart HTTP/1.1" in seen, seen


async def test_a_proxy_that_does_not_answer_is_named_as_the_cause(browser_path: str) -> None:
    with contextlib.closing(socket.socket()) as closed:
        closed.bind(("127.0.0.1", 0))  # a port nothing listens on: bound, never listening
        port = closed.getsockname()[1]
        async with server(browser_path, proxy_server=f"http://127.0.0.1:{port}") as mcp:
            refused = error(await mcp.call_tool("browser_navigate", {"url": "http://shop.invalid/cart"}))
    assert "ERR_PROXY_CONNECTION_FAILED" in refused, refused
    assert "the browser's proxy did not answer" in refused and "(--proxy-server)" in refused, refused


@pytest.fixture(scope="module")
def https_site() -> Iterator[str]:
    """A page over HTTPS on 127.0.0.1 whose certificate no browser trusts (a throwaway CA)."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    with page_server(lambda _request: "<title>Secure</title><h1>Self-signed</h1>", context) as port:
        yield f"https://127.0.0.1:{port}/"


async def test_a_self_signed_https_page_loads_only_with_ignore_https_errors(
    browser_path: str, https_site: str
) -> None:
    async with server(browser_path) as mcp:
        refused = error(await mcp.call_tool("browser_navigate", {"url": https_site}))
        assert "ERR_CERT" in refused and "does not accept the site's certificate" in refused, refused
        # The way to load it is named in the server's words: its flag, and a launch with the option.
        assert "start it with --ignore-https-errors" in refused, refused
        assert "options={ignoreHttpsErrors: true}" in refused, refused
        assert "BrowserOptions" not in refused
        launched = result_of(
            ok(
                await mcp.call_tool(
                    "browser_instance", {"action": "launch", "options": {"ignoreHttpsErrors": True}}
                )
            )
        )
        went = ok(
            await mcp.call_tool("browser_navigate", {"url": https_site, "tabId": launched["activeTabId"]})
        )
        assert "Secure (" in text(went)  # its title, in ### Page or ### Tabs
    async with server(browser_path, ignore_https_errors=True) as mcp:
        went = ok(await mcp.call_tool("browser_navigate", {"url": https_site}))
        assert "Secure (" in text(went)  # its title, in ### Page or ### Tabs


def test_a_config_file_gives_the_options_and_the_command_line_wins(tmp_path: Path) -> None:
    secrets = tmp_path / "secrets.env"
    secrets.write_text("PASSWORD=pw-1234\n")
    config_file = tmp_path / "tabpilot.json"
    config_file.write_text(
        json.dumps(
            {
                "viewport-size": "800x600",
                "user-agent": "from-file",
                "ignore-https-errors": True,
                "timeout-action": 7,
                "caps": "forms,observe",
                "allowed-file-root": [str(tmp_path)],
                "secrets": str(secrets),
                # A comma-separated option takes a JSON list too; a repeatable one, a list of its values.
                "tools": ["default", "foxmcp"],
                "allowed-origins": ["http://127.0.0.1", "*.test"],
                "extension": True,
                "extension-id": ["a" * 32, "b" * 32],
                "browser-arg": ["--lang=de", "--mute-audio"],
            }
        )
    )
    parser = build_parser()
    config = config_from_args(
        parser.parse_args(["serve", "--config", str(config_file), "--user-agent", "from-flag"])
    )
    assert config.browser.viewport == (800, 600) and config.browser.ignore_https_errors
    assert config.browser.user_agent == "from-flag" and config.browser.timeout_action == 7
    assert config.caps == ("forms", "observe") and config.allowed_file_roots == (str(tmp_path),)
    assert config.secrets.expand("{{PASSWORD}}") == "pw-1234"
    assert config.tools == ("default", "foxmcp") and config.allowed_origins == ("http://127.0.0.1", "*.test")
    assert config.extension_ids == ("a" * 32, "b" * 32)
    assert config.browser.browser_args == ("--lang=de", "--mute-audio")


def test_a_relative_path_in_a_config_file_is_taken_from_the_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was taken from the working directory, which an MCP client chooses (often /).
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "secrets.env").write_text("PASSWORD=pw-1234\n")
    (tmp_path / "conf" / "uploads").mkdir()
    config_file = tmp_path / "conf" / "tabpilot.json"
    config_file.write_text(json.dumps({"secrets": "secrets.env", "allowed-file-root": ["uploads"]}))
    monkeypatch.chdir("/")
    config = config_from_args(build_parser().parse_args(["serve", "--config", str(config_file)]))
    assert config.secrets.expand("{{PASSWORD}}") == "pw-1234"
    assert config.allowed_file_roots == (str(tmp_path / "conf" / "uploads"),)


def test_a_browser_named_in_a_config_file_is_looked_up_on_path_as_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `"browser-path": "chromium"` was refused as <the file's folder>/chromium, which does not
    # exist, while `--browser-path chromium` (and TABPILOT_BROWSER=chromium) found it on PATH.
    (tmp_path / "bin").mkdir()
    browser = tmp_path / "bin" / "my-chrome"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    (tmp_path / "conf").mkdir()
    config_file = tmp_path / "conf" / "tabpilot.json"
    config_file.write_text(json.dumps({"browser-path": "my-chrome"}))
    monkeypatch.chdir("/")
    for argv in (["--config", str(config_file)], ["--browser-path", "my-chrome"]):
        config = config_from_args(build_parser().parse_args(["serve", *argv]))
        assert config.browser.browser_path == "my-chrome"
    # A relative path is still the file's folder's.
    (tmp_path / "conf" / "chrome").write_text("#!/bin/sh\n")
    (tmp_path / "conf" / "chrome").chmod(0o755)
    config_file.write_text(json.dumps({"browser-path": "./chrome"}))
    config = config_from_args(build_parser().parse_args(["serve", "--config", str(config_file)]))
    assert config.browser.browser_path == str(tmp_path / "conf" / "chrome")


async def test_a_list_option_given_twice_keeps_both_lists(
    connect: Callable[..., Client], site: LocalSite
) -> None:
    # argparse keeps the last value of an option given twice: the site's origin, blocked first,
    # had been let through.
    site_origin = site.url("/").rstrip("/")
    twice = ["--blocked-origins", site_origin, "--blocked-origins", "*.test", "--tools", "default"]
    twice += ["--tools", "foxmcp", "--proxy-bypass", "a.test", "--proxy-bypass", "b.test"]
    config = config_from_args(build_parser().parse_args(["serve", *twice]))
    assert config.blocked_origins == (site_origin, "*.test") and config.tools == ("default", "foxmcp")
    assert config.browser.proxy_bypass == "a.test,b.test"
    async with connect(blocked_origins=config.blocked_origins, tools=config.tools) as mcp:
        refused = error(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")}))
        assert "blocked" in refused and site_origin in refused
        names = {tool.name for tool in (await mcp.list_tools()).tools}
        assert {"browser_navigate", "tabs_list"} <= names  # both sets are offered


def test_a_secret_too_short_to_mask_is_refused_naming_it(tmp_path: Path) -> None:
    # Masked wherever it appears, a one-letter secret turned 'tab 12' into 'tab {{PIN}}2'.
    secrets = tmp_path / "secrets.env"
    secrets.write_text("PASSWORD=hunter22\nPIN=1\n")
    with pytest.raises(ValueError) as refused:
        config_from_args(build_parser().parse_args(["serve", "--secrets", str(secrets)]))
    assert str(refused.value).startswith("--secrets: secret PIN is shorter than 4 characters")
    assert "PASSWORD" not in str(refused.value)
    secrets.write_text("PASSWORD=hunter22\nPIN=1234\n")
    config = config_from_args(build_parser().parse_args(["serve", "--secrets", str(secrets)]))
    assert config.secrets.mask("tab 12, pin 1234") == "tab 12, pin {{PIN}}"


def test_the_buffer_size_help_gives_the_default_the_recorder_keeps() -> None:
    build_parser()  # which fills SERVE_OPTIONS
    default = inspect.signature(Telemetry).parameters["max_entries"].default
    assert SERVE_OPTIONS["buffer-size"]["help"].endswith(f"(default {default})")


def test_the_snapshot_limit_is_an_option_whose_help_gives_its_default() -> None:
    assert (
        config_from_args(build_parser().parse_args(["serve"])).max_snapshot_chars
        == DEFAULT_MAX_SNAPSHOT_CHARS
    )
    given = build_parser().parse_args(["serve", "--max-snapshot-chars", "5000"])
    assert config_from_args(given).max_snapshot_chars == 5000
    assert SERVE_OPTIONS["max-snapshot-chars"]["help"].endswith(f"(default {DEFAULT_MAX_SNAPSHOT_CHARS})")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--max-snapshot-chars", "0"])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"user-data-dir": "relative/dir"},
            "option 'user-data-dir' of --config {file}: the profile directory ",
        ),
        (
            {"timeout-navigation": 1e999},
            "option 'timeout-navigation' of --config {file}: 'inf' is not a positive, ",
        ),
        (
            {"max-tabs": [3]},
            "option 'max-tabs' of --config {file}: give one value as a string or number, not [3]",
        ),
        (
            {"browser-path": "/no/such/chrome"},
            "The browser given by option 'browser-path' of --config {file} (/no/such/chrome) does not exist",
        ),
        # An unknown key listed all 47 options alone: one written as a launch's options have it
        # (browser_instance launch takes userAgent), or mistyped, had to be found among them.
        ({"userAgent": "x"}, "--config {file}: unknown option 'userAgent' (did you mean 'user-agent'?); "),
        (
            {"max-tab": 3},
            "--config {file}: unknown option 'max-tab' (did you mean 'max-tabs' or 'max-total-tabs'?)",
        ),
        (
            {"tools": ["default", "playwright"]},
            "option 'tools' of --config {file}: Unknown tool set 'playwright'. Known sets: browser-tab",
        ),
    ],
)
def test_a_bad_value_in_a_config_file_is_refused_naming_its_key_and_file(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    config_file = tmp_path / "tabpilot.json"
    config_file.write_text(json.dumps(options))
    with pytest.raises(ValueError) as refused:
        config_from_args(build_parser().parse_args(["serve", "--config", str(config_file)]))
    assert str(refused.value).startswith(message.format(file=config_file)), refused.value


def test_a_bad_option_is_said_in_two_lines_not_under_the_whole_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # serve's usage block (25 lines) came first, the one line that says what is wrong last.
    from tabpilot import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--max-tabs", "x"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "tabpilot serve: error: argument --max-tabs: 'x' is not a positive integer\n"
        "(`tabpilot serve --help` says what it takes.)\n"
    )


@pytest.mark.parametrize(
    ("argv", "meant"),
    [
        # argparse took a prefix of an option's name for the option: a typo meant another option.
        (["serve", "--head"], "--headed?"),
        (["serve", "--max-t", "5"], "--max-tabs or --max-total-tabs?"),
        (["serve", "--max-session=3"], "--max-sessions?"),
        (["serve", "--toolz", "pilo", "--heded"], "--tools for --toolz, --headed for --heded?"),
        (["demo", "--head"], "--headed?"),
    ],
)
def test_an_abbreviated_or_mistyped_option_is_refused_naming_the_options_meant(
    capsys: pytest.CaptureFixture[str], argv: list[str], meant: str
) -> None:
    from tabpilot import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    unknown = " ".join(argv[1:])
    assert capsys.readouterr().err == (
        f"tabpilot {argv[0]}: error: unrecognized arguments: {unknown} (did you mean {meant})\n"
        f"(`tabpilot {argv[0]} --help` says what it takes.)\n"
    )


def test_an_unknown_option_without_a_command_is_said_to_be_unknown(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # It was "the following arguments are required: COMMAND" (and --vers had been --version).
    from tabpilot import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(["--vers"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "tabpilot: error: unrecognized arguments: --vers (did you mean --version?)\n"
        "(`tabpilot --help` says what it takes.)\n"
    )
    with pytest.raises(SystemExit):
        cli.main([])
    assert "the following arguments are required: COMMAND" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["flag", "config file"])
def test_tool_sets_that_clash_are_refused_naming_the_option_as_given(
    browser_path: str, tmp_path: Path, given: str
) -> None:
    # Every other refusal of a tool set named its option ("--tools: Unknown tool set ..."); this
    # one did not, nor the config file it came from. It came once the browser had started, too:
    # the clash was found as the tools were built, with the MCP SDK, which loads as the browser starts.
    if given == "flag":
        args, named = ["--tools", "default,browser-use"], "--tools"
    else:
        config_file = tmp_path / "tabpilot.json"
        config_file.write_text(json.dumps({"tools": ["default", "browser-use"]}))
        args, named = ["--config", str(config_file)], f"option 'tools' of --config {config_file}"
    browser, started = recording_browser(tmp_path, browser_path)
    with subprocess.Popen(
        [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser, *args],
        stdin=subprocess.PIPE,  # left open: a server that did start would wait for its client
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as served:
        try:
            code = served.wait(timeout=60)
        finally:
            served.kill()
        stdout, stderr = served.communicate()
    assert code == 2 and stdout == "", stderr
    assert stderr == (
        f"tabpilot serve: error: {named}: Tool sets 'default' and 'browser-use' both define "
        "'browser_navigate', 'browser_click', 'browser_type' with different arguments; use one of them.\n"
    )
    assert not started.exists(), "a browser was launched for a command refused for its arguments"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["serve", "--brower-path", "/x"],
            "tabpilot serve: error: unrecognized arguments: --brower-path /x (did you mean --browser-path?)\n",
        ),
        # Not "did you mean --headed?": the opposite of what was asked (headless is the default).
        (["demo", "--headless"], "tabpilot demo: error: unrecognized arguments: --headless\n"),
        (["extension", "id", "path"], "tabpilot extension: error: unrecognized arguments: path\n"),
    ],
)
def test_an_unknown_option_of_a_command_points_to_that_commands_help(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was "tabpilot: error: ..." and pointed to `tabpilot --help`, which lists none of serve's options.
    from tabpilot import cli

    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"{said}(`tabpilot {argv[0]} --help` says what it takes.)\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--caps", "forms,telepathy"], "--caps: Unknown capability 'telepathy'. Known: forms, vision"),
        (
            ["--tools", "default,playwright"],
            "--tools: Unknown tool set 'playwright'. Known sets: browser-tab",
        ),
        (["--allowed-file-root", "/no/such/folder"], "is not a folder"),
        (["--secrets", "/no/such/file.env"], "is not a readable file"),
        (
            ["--user-data-dir", "relative/dir"],
            "argument --user-data-dir: the profile directory 'relative/dir' must be an absolute path",
        ),
        (
            ["--browser-path", "/no/such/chrome"],
            "The browser given by --browser-path (/no/such/chrome) does not exist",
        ),
        (
            ["--browser-path", __file__],
            f"The browser given by --browser-path ({__file__}) is not",
        ),
        (["--storage-state", __file__], "argument --storage-state: storage state "),
        (["--proxy-server", "proxy:3128/x"], 'argument --proxy-server: proxy server "proxy:3128/x" is not'),
        (["--init-script", sys.executable], "is not a UTF-8 text file"),
        # Every option in seconds is positive and finite, by one check.
        (
            ["--session-idle-timeout", "inf"],
            "argument --session-idle-timeout: 'inf' is not a positive, finite number",
        ),
        (["--timeout-action", "inf"], "argument --timeout-action: 'inf' is not a positive, finite number"),
        (
            ["--session-idle-timeout", "1e-9"],
            "argument --session-idle-timeout: '1e-9' is under 1 second: a session would end between",
        ),
        (
            ["--timeout-navigation", "1e400"],
            "argument --timeout-navigation: '1e400' is not a positive, finite number",
        ),
        (["--timeout-action", "nan"], "argument --timeout-action: 'nan' is not a positive, finite number"),
        # A wait longer than Node's timers hold would fire at once: every action would time out.
        (
            ["--timeout-navigation", "3000000"],
            "argument --timeout-navigation: '3000000' is more than 2,000,000",
        ),
        # A malformed origin never turns the URL policy off: it is refused, named.
        (["--allowed-origins", ":8080"], "--allowed-origins: ':8080' is not an origin: it names no host"),
        (["--allowed-origins", "[::1]:x"], "--allowed-origins: '[::1]:x' is not an origin: its port is not"),
        (["--blocked-origins", "*"], "--blocked-origins: '*' is not an origin"),
        (
            ["--browser-arg=--user-data-dir=/tmp/profile"],
            "browser argument '--user-data-dir=/tmp/profile': give the profile as the user data dir option",
        ),
        (["--http", "999.1.1.1:80"], "argument --http: '999.1.1.1:80': '999.1.1.1' is no IPv4 address"),
        # A port in digits str.isdigit() takes but int() does not: argparse said "invalid ... value",
        # the origin check answered int()'s own words.
        (["--http", "127.0.0.1:²"], "argument --http: '127.0.0.1:²' is not HOST:PORT"),
        # A port out of range was "not HOST:PORT", which it is.
        (
            ["--http", "127.0.0.1:99999"],
            "argument --http: '127.0.0.1:99999': the port is not a number from 1 to",
        ),
        (["--http", "0"], "argument --http: '0': the port is not a number from 1 to 65535"),
        (["--http", "[::1]:0"], "argument --http: '[::1]:0': the port is not a number from 1 to 65535"),
        (["--extension", "--extension-port", "²"], "argument --extension-port: '²' is not a port number"),
        (
            ["--allowed-origins", "http://h:²"],
            "'http://h:²' is not an origin: its port is not a number from 1",
        ),
        (["--blocked-origins", "h:" + "9" * 5000], "is not an origin: its port is not a number from 1"),
        # An option that would change nothing is refused.
        (
            ["--extension-port", "9999"],
            "--extension-port applies to the extension's bridge: give --extension",
        ),
        (["--extension-scope", "all"], "--extension-scope applies to the extension's bridge"),
        (
            ["--tools", "foxmcp", "--caps", "vision"],
            "--caps narrows the default tool set, which --tools leaves out: add default to it",
        ),
        (["--grid-capabilities", "{}"], "--grid-capabilities applies to --selenium-grid sessions"),
        # An endpoint URL that can name no such endpoint: refused at start, not at the first call.
        (["--cdp-endpoint", "nonsense"], "--cdp-endpoint: 'nonsense' is not a CDP endpoint URL."),
        (["--cdp-endpoint", "http://"], "--cdp-endpoint: 'http://' names no host."),
        (["--ws-endpoint", "http://127.0.0.1:9"], "--ws-endpoint: 'http://127.0.0.1:9' is not a Playwright"),
        (["--selenium-grid", "127.0.0.1"], "--selenium-grid: '127.0.0.1' is not a Selenium Grid URL."),
        # An empty value (an unset variable) is refused: `--cdp-endpoint ''` launched a local browser.
        (["--cdp-endpoint", ""], "--cdp-endpoint: a value is empty (an unset variable?)"),
        (["--selenium-grid", " "], "--selenium-grid: a value is empty"),
        (["--browser-path", ""], "--browser-path: a value is empty"),
        # In repeatable options and lists too: Chromium got an empty switch, '' meant the working
        # directory, ",," the default tool set, an empty id the shipped extension's.
        (["--browser-arg", ""], "--browser-arg: a value is empty"),
        (["--browser-arg", "--lang=de", "--browser-arg", " "], "--browser-arg: a value is empty"),
        (["--allowed-file-root", ""], "argument --allowed-file-root: '' names no folder"),
        (["--tools", ",,"], "--tools: a value is empty"),
        (["--extension", "--extension-id", " , "], "argument --extension-id: ' , ' names no extension id"),
        (["--downloads-dir", __file__], "is not a folder: name one (it is made if missing)"),
        (["--extension", "--extension-token", "ab"], "--extension-token: give a token of at least 8"),
        (
            ["--extension", "--extension-token", "with spaces"],
            "--extension-token: give a token of at least 8",
        ),
        # Options of an HTTP server change nothing over stdio.
        (["--max-sessions", "5"], "--max-sessions only applies to an HTTP server: add --http"),
        (["--session-idle-timeout", "60"], "--session-idle-timeout only applies to an HTTP server"),
        (["--allow-instances"], "--allow-instances only applies to an HTTP server"),
        # Nor does a profile beside a browser the server reaches but does not launch: no cookie of
        # it was there, nor does a later browser_instance launch take it.
        (
            ["--user-data-dir", "/tmp/profile", "--cdp-endpoint", "http://127.0.0.1:9222"],
            "--user-data-dir is the profile of the browser the server launches (or, with --auto-connect, "
            "of the Chrome to find): the browser that --cdp-endpoint reaches has its own.",
        ),
        (
            ["--user-data-dir", "/tmp/profile", "--extension"],
            "the browser that --extension reaches has its own",
        ),
        (["--allowed-origins", ""], "argument --allowed-origins: '' names no origin (an unset variable?)"),
        (["--blocked-origins", " , "], "names no origin"),
        # A value that starts as a negative number does gets its own check's words (argparse took
        # it for an option: "expected one argument").
        (["--viewport-size", "-5x10"], "argument --viewport-size: '-5x10' is not a viewport size"),
        (["--max-tabs", "-5x"], "argument --max-tabs: '-5x' is not a positive integer"),
        # Chromium did not start ("it exited with code 0"), the server running on without it.
        (
            ["--user-agent", "tabpilot\nX-Injected: 1"],
            "argument --user-agent: user agent 'tabpilot\\nX-Injected: 1' holds the control character '\\n'",
        ),
    ],
)
def test_bad_tool_options_are_refused_before_a_browser_starts(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tabpilot import cli
    from tabpilot.server.state import ServerState

    def no_browser(*_: Any) -> None:
        raise AssertionError("a server state (and its browser) was started for a config that is refused")

    monkeypatch.setattr(ServerState, "warm_up", no_browser)
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", *argv])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


def test_a_browser_in_the_environment_is_checked_at_start(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Checked only at the first call before: the server started, then every tool failed.
    from tabpilot import cli

    monkeypatch.setenv("TABPILOT_BROWSER", "/no/such/chrome")
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve"])
    assert exited.value.code == 2
    assert "The browser given by the TABPILOT_BROWSER environment variable" in capsys.readouterr().err
    # With an endpoint the server launches no browser: the variable is not its business.
    config = config_from_args(build_parser().parse_args(["serve", "--cdp-endpoint", "http://127.0.0.1:9"]))
    assert config.cdp_endpoint == "http://127.0.0.1:9"


def test_a_browser_path_is_checked_only_when_the_server_launches_its_browser() -> None:
    # With an endpoint, the server launches no browser at start; only a later launch would use it.
    parser = build_parser()
    argv = ["serve", "--browser-path", "/no/such/chrome", "--cdp-endpoint", "http://127.0.0.1:9222"]
    assert config_from_args(parser.parse_args(argv)).browser.browser_path == "/no/such/chrome"


def test_the_registry_offers_exactly_the_names_the_config_checks() -> None:
    from tabpilot.server import names, registry

    assert tuple(registry.TOOLSETS) == names.TOOL_SETS
    assert [c for c in registry.CAPS if c != "core"] == list(names.CAPS)
    # The sets that clash, checked before the tools (and the MCP SDK) are loaded: two sets that
    # define a tool of one name differently, each pair once.
    clashes = {}
    for at, earlier in enumerate(names.TOOL_SETS):
        for later in names.TOOL_SETS[at + 1 :]:
            first = {spec.name: spec for spec in registry.TOOLSETS[earlier]}
            both = [s.name for s in registry.TOOLSETS[later] if first.get(s.name, s) is not s]
            if both:
                clashes[frozenset({earlier, later})] = tuple(both)
    assert clashes == names.CLASHES
    assert ServerConfig(caps=("core", "forms")).caps == ("core", "forms")  # core: always on anyway
    # ... and naming it gives the same tools as leaving it out (it had defined them twice).
    with_core = [t.name for t in registry.select_tools(["default"], ["core", "forms"])]
    assert with_core == [t.name for t in registry.select_tools(["default"], ["forms"])]


def test_the_library_checks_a_proxy_and_a_storage_state_before_any_launch(tmp_path: Path) -> None:
    # A proxy Chromium cannot read stopped it from starting ("check that the browser runs on this
    # machine"); one with another scheme was ignored; a storage state of the wrong shape failed the
    # launch in Playwright's words ("expected object, got object").
    for good in ("proxy:3128", "http://proxy:3128", "socks5://127.0.0.1:1080", "http://[::1]:8080"):
        assert BrowserOptions(proxy_server=good).proxy_server == good
    for bad, message in (
        ("not a url", 'proxy server "not a url" is not [SCHEME://]HOST[:PORT], e.g. http://proxy:3128'),
        ("http://proxy:3128/path", "is not [SCHEME://]HOST[:PORT]"),
        ("proxy:99999", "is not [SCHEME://]HOST[:PORT]"),
        (
            "ftp://proxy:21",
            'proxy server "ftp://proxy:21": the scheme must be one of http, https, socks4, socks5',
        ),
        ("proxy:0", "port 0 is no port"),
        ("http://ada:s3cret@proxy:3128", "proxy server: Chromium takes no user name or password"),
    ):
        with pytest.raises(ValueError) as refused:
            BrowserOptions(proxy_server=bad)
        assert message in str(refused.value), refused.value
        assert "s3cret" not in str(refused.value)
    state = tmp_path / "state.json"
    for content, problem in (
        ("[]", "it does not hold a JSON object"),
        # Another JSON file, such as a config file, started the browser without a cookie.
        (
            '{"tools": ["default"], "max-tabs": 5}',
            'it holds neither cookies nor origins (its keys: ["tools", "max-tabs"])',
        ),
        ("{}", "it holds neither cookies nor origins;"),
        ('{"cookies": {}}', "cookies is not a list"),
        (
            '{"cookies": [{"name": "a", "value": "b"}]}',
            'cookies[0] ("a") has neither a url nor a domain and path',
        ),
        ('{"origins": [{"origin": "http://127.0.0.1:1"}]}', "origins[0].localStorage is not a list"),
        ("{", "is not a readable JSON file"),
    ):
        state.write_text(content)
        with pytest.raises(ValueError) as refused:
            BrowserOptions(storage_state=str(state))
        assert f"storage state {str(state)!r}" in str(refused.value) and problem in str(refused.value), (
            refused.value
        )
    state.write_text(
        '{"cookies": [{"name": "a", "value": "b", "url": "http://127.0.0.1:1/"}], "origins": []}'
    )
    assert BrowserOptions(storage_state=str(state)).storage_state == str(state)


def test_the_library_checks_a_user_agent_before_any_launch() -> None:
    # A line break in it stopped Chromium from starting, said as "it exited with code 0";
    # browser_instance launch takes the same options.
    for bad in ("tabpilot\nX-Injected: 1", "a\rb", "a\x00b", "a\x7f"):
        with pytest.raises(ValueError, match="a User-Agent is one line of text"):
            BrowserOptions(user_agent=bad)
    assert (
        BrowserOptions(user_agent="Mozilla/5.0 (X11)\ttabpilot").user_agent == "Mozilla/5.0 (X11)\ttabpilot"
    )


def test_the_library_checks_a_viewport_before_any_launch() -> None:
    # A string or an odd pair reached the launch, which failed as "the browser failed to start".
    for bad, message in (
        ("800x600", "viewport must be (width, height) in pixels, e.g. (1280, 720), not '800x600'"),
        ((800.5, 600), "viewport must be (width, height)"),
        ((50, 600), "viewport 50x600 is out of range"),
    ):
        with pytest.raises(ValueError) as refused:
            BrowserOptions(viewport=bad)  # type: ignore[arg-type]
        assert str(refused.value).startswith(message), refused.value
    assert BrowserOptions(viewport=[800, 600]).viewport == (800, 600)  # type: ignore[arg-type]
