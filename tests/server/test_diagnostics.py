"""What an operator and a client learn from the server: the log (level, file, never stdout over
stdio, also sent to the client), the HTTP start line, a port in use, a browser that cannot start,
and progress of long waits."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import select
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import LoggingMessageNotificationParams

from support import STDIO_HANDSHAKE, cmdline, descendants, free_port, ok
from tabpilot.demo.site import LocalSite


def _tabpilot(*args: str, **options: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tabpilot", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **options,
    )


def _read_until(stream: Any, needle: str, timeout: float = 30) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    while needle not in seen and time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            break
        seen += line.decode(errors="replace")
    return seen


def test_http_mode_says_where_it_listens_and_a_port_in_use_is_one_clear_line(browser_path: str) -> None:
    port = free_port()
    first = _tabpilot("serve", "--http", f"127.0.0.1:{port}", "--browser-path", browser_path)
    try:
        banner = _read_until(first.stderr, "\n}")
        assert f"listening on http://127.0.0.1:{port}/mcp" in banner, banner
        second = _tabpilot("serve", "--http", f"127.0.0.1:{port}", "--browser-path", browser_path)
        _, stderr = second.communicate(timeout=30)
        said = stderr.decode().strip()
        assert second.returncode == 1
        assert said == (
            f"tabpilot serve: error: cannot listen on 127.0.0.1:{port}: it is in use (another server runs "
            "there?). Choose another with --http HOST:PORT"
        ), said
    finally:
        first.terminate()
        first.communicate(timeout=30)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_serve_typed_in_a_terminal_says_it_waits_for_an_mcp_client_and_how_to_try_it(
    browser_path: str,
) -> None:
    # `tabpilot serve` typed by hand showed nothing at all, as if it hung.
    primary, terminal = os.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tabpilot", "serve", "--browser-path", browser_path],
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        said = ""
        if select.select([proc.stderr], [], [], 30)[0]:
            said = proc.stderr.readline().decode()
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=30)
    finally:
        os.close(primary)
        os.close(terminal)
    assert said.startswith("tabpilot serve speaks MCP over stdin/stdout"), (said, rest)
    assert "tabpilot demo" in said and "--http" in said and "Ctrl-C" in said, said
    assert out == b"" and proc.returncode == 130, (proc.returncode, rest)


@pytest.mark.parametrize("closed", [0, 1], ids=["stdin", "stdout"])
def test_serve_started_with_stdin_or_stdout_closed_says_so_in_one_line(closed: int) -> None:
    # The wire's claim of the standard streams took whatever file had got the free descriptor
    # (the event loop's own): a traceback ending in "OSError: [Errno 22] Invalid argument".
    served = subprocess.run(
        [sys.executable, "-m", "tabpilot", "serve"],
        stdin=subprocess.PIPE,
        capture_output=True,
        preexec_fn=lambda: os.close(closed),
        timeout=60,
    )
    assert served.returncode == 2, served
    assert served.stderr.decode() == (
        "tabpilot serve: error: it was started with its stdin or stdout closed: over stdio it reads MCP "
        "messages from stdin and answers on stdout. Let an MCP client start it, or serve HTTP (--http "
        "HOST:PORT)\n"
    )


@contextmanager
def _broken_browser(tmp_path: Path) -> Iterator[str]:
    """A 'browser' that writes why it cannot start on stderr and exits."""
    script = tmp_path / "broken-chromium"
    script.write_text("#!/bin/sh\necho 'FATAL: this browser cannot start here' >&2\nexit 3\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    yield str(script)


def _initialize(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    for message in (
        *STDIO_HANDSHAKE,
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "browser_tabs", "arguments": {"action": "list"}},
        },
    ):
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()


def _first_call(proc: subprocess.Popen[bytes]) -> tuple[dict[str, Any], str]:
    """Initialize, call browser_tabs list once, close stdin: the call's result and the stderr."""
    _initialize(proc)
    assert proc.stdin is not None and proc.stdout is not None
    replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
    _, stderr = proc.communicate(timeout=30)
    return next(r for r in replies if r.get("id") == 2)["result"], stderr.decode()


@contextmanager
def _driver_environ(browser_path: str, env: dict[str, str]) -> Iterator[list[bytes]]:
    """Serve with `env` until the first call has been answered: the environment of the server's
    Playwright driver. The server stops (stdin closed) after the block."""
    proc = _tabpilot("serve", "--browser-path", browser_path, env=env)
    try:
        _initialize(proc)
        assert proc.stdout is not None
        replies = [json.loads(proc.stdout.readline()) for _ in range(2)]
        call = next(r for r in replies if r.get("id") == 2)["result"]
        assert not call.get("isError"), call
        (driver,) = [pid for pid in descendants(proc.pid) if "run-driver" in cmdline(pid)]
        yield Path(f"/proc/{driver}/environ").read_bytes().split(b"\0")
    finally:
        proc.communicate(timeout=30)


@pytest.mark.parametrize("given", ["flag", "config file"])
def test_a_browser_that_cannot_start_is_reported_at_start_and_on_the_first_call(
    tmp_path: Path, given: str
) -> None:
    with _broken_browser(tmp_path) as broken:
        if given == "flag":
            args, named = ["--browser-path", broken], "--browser-path"
        else:
            config = tmp_path / "tabpilot.json"
            config.write_text(json.dumps({"browser-path": broken}))
            args, named = ["--config", str(config)], f"option 'browser-path' of --config {config}"
        call, logged = _first_call(_tabpilot("serve", *args))
    assert "ERROR tabpilot.server: the browser could not start" in logged, logged
    assert "FATAL: this browser cannot start here" in logged
    said = call["content"][0]["text"]
    assert call["isError"] and "FATAL: this browser cannot start here" in said
    # The call names the option the browser was started with, as the operator gave it; the
    # browser's words are in the call's answer (not only in the log, which it does not send to it).
    assert said.endswith(f"\nCheck {named}."), said
    assert "Traceback" not in logged


def test_a_node_option_the_driver_refuses_is_named_with_the_fix(browser_path: str) -> None:
    # Node stops at once on an option it does not allow in NODE_OPTIONS, and Playwright's driver
    # inherits the variable: the call used to say only "Connection closed while reading from the
    # driver" and to suggest checking --browser-path.
    env = {**os.environ, "NODE_OPTIONS": "--no-such-node-option"}
    call, logged = _first_call(_tabpilot("serve", "--browser-path", browser_path, env=env))
    text = call["content"][0]["text"]
    assert call["isError"], text
    assert "NODE_OPTIONS is set to '--no-such-node-option'" in text, text
    assert "Unset NODE_OPTIONS" in text and "--browser-path" not in text, text
    assert "--no-such-node-option is not allowed in NODE_OPTIONS" in logged, logged  # Node's own words
    assert "Traceback" not in logged, logged


@pytest.mark.parametrize("users_arenas", [None, "4"])
def test_the_driver_gets_tabpilots_node_options_and_the_users_after_them(
    browser_path: str, users_arenas: str | None
) -> None:
    # tabpilot bounds the driver's heap growth and its malloc arenas (its memory at many busy
    # tabs); an option the user sets comes after tabpilot's, so Node takes the user's, and a
    # MALLOC_ARENA_MAX of the user's is kept.
    env = {**os.environ, "NODE_OPTIONS": "--max-old-space-size=1500"}
    env.pop("MALLOC_ARENA_MAX", None)
    if users_arenas is not None:
        env["MALLOC_ARENA_MAX"] = users_arenas
    with _driver_environ(browser_path, env) as environ:
        (options,) = [item.decode() for item in environ if item.startswith(b"NODE_OPTIONS=")]
        assert options == (
            "NODE_OPTIONS=--max-semi-space-size=1 --max-old-space-size=1024 --max-old-space-size=1500"
        ), options
        (arenas,) = [item.decode() for item in environ if item.startswith(b"MALLOC_ARENA_MAX=")]
        assert arenas == f"MALLOC_ARENA_MAX={users_arenas or 2}", arenas


@pytest.mark.parametrize("users_cache", [False, True])
def test_the_driver_keeps_its_compiled_code_in_the_users_cache_or_where_the_user_says(
    browser_path: str, tmp_path: Path, users_cache: bool
) -> None:
    # The driver loads a large bundle at every start; Node's compile cache keeps it compiled.
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    env.pop("NODE_DISABLE_COMPILE_CACHE", None)
    env.pop("NODE_COMPILE_CACHE", None)
    expected = tmp_path / "cache" / "tabpilot" / "node-compile-cache"
    if users_cache:
        expected = tmp_path / "mine"
        env["NODE_COMPILE_CACHE"] = str(expected)
    with _driver_environ(browser_path, env) as environ:
        assert f"NODE_COMPILE_CACHE={expected}".encode() in environ, environ
    # Node wrote the driver's compiled code there as it stopped (one folder per Node version).
    written = [path for path in expected.rglob("*") if path.is_file()]
    assert written, sorted(expected.rglob("*"))


def test_the_log_goes_to_the_log_file_at_its_level_and_never_to_stdout(
    browser_path: str, tmp_path: Path
) -> None:
    log = tmp_path / "tabpilot.log"
    proc = _tabpilot("serve", "--browser-path", browser_path, "--log-level", "debug", "--log-file", str(log))
    _initialize(proc)
    assert proc.stdin is not None and proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(2)]
    rest, stderr = proc.communicate(timeout=30)
    for line in [*lines, *rest.splitlines()]:
        assert json.loads(line)["jsonrpc"] == "2.0"  # stdout carries the protocol only
    written = log.read_text()
    assert "INFO tabpilot: instance inst_1: launched\n" in written, written
    assert "DEBUG tabpilot.server: browser_tabs(action='list'" in written and "): ok in" in written
    assert stderr.decode().strip() == ""


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a disk that is always full)")
def test_a_log_file_that_cannot_be_written_is_said_once_and_the_server_goes_on(browser_path: str) -> None:
    # Every record printed logging's "--- Logging error ---" and a traceback on stderr.
    proc = _tabpilot(
        "serve", "--browser-path", browser_path, "--log-level", "debug", "--log-file", "/dev/full"
    )
    _initialize(proc)
    assert proc.stdin is not None and proc.stdout is not None
    lines = [proc.stdout.readline() for _ in range(2)]
    _, stderr = proc.communicate(timeout=30)
    assert '"isError":false' in lines[1].decode().replace(" ", ""), lines  # the call worked
    said = stderr.decode()
    assert said.count("tabpilot: writing the log to /dev/full failed (") == 1, said
    assert "Traceback" not in said and "Logging error" not in said, said


@pytest.mark.parametrize("given", ["{tmp}/no/such/dir/x.log", "{tmp}", "no/such/dir/x.log"])
def test_a_bad_log_file_is_refused_at_start_saying_what_to_give(tmp_path: Path, given: str) -> None:
    # A relative one is named as the absolute path it became: MCP clients choose the working folder.
    proc = _tabpilot("serve", "--log-file", given.format(tmp=tmp_path), cwd=tmp_path)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 2
    why = "Is a directory" if given == "{tmp}" else "No such file or directory"
    where = tmp_path if given == "{tmp}" else tmp_path / "no/such/dir/x.log"
    assert stderr.decode() == (
        f"tabpilot serve: error: --log-file: cannot append to {where} ({why}): name a file you may "
        "write in a folder that exists, or leave the option out to log to stderr\n"
    )


async def test_a_client_that_asks_for_logs_gets_those_of_its_calls(
    make_server: Callable[..., Any], site: LocalSite
) -> None:
    got: list[LoggingMessageNotificationParams] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        got.append(params)

    tabpilot_logger = logging.getLogger("tabpilot")
    level = tabpilot_logger.level
    tabpilot_logger.setLevel(logging.DEBUG)  # what --log-level does; records are made
    try:
        async with Client(make_server(), logging_callback=on_log, log_level="debug") as mcp:
            ok(await mcp.call_tool("browser_navigate", {"url": site.url("/page/a")}))
    finally:
        tabpilot_logger.setLevel(level)
    said = [str(p.data) for p in got]
    assert any(s.startswith("browser_navigate(") and ": ok in" in s for s in said), said
    assert {p.logger for p in got} >= {"tabpilot.server"}


async def test_long_waits_report_progress_to_a_client_that_asks(make_server: Callable[..., Any]) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with Client(make_server()) as mcp:
        ok(await mcp.call_tool("browser_wait_for", {"time": 2.5}, progress_callback=on_progress))
        assert len(seen) >= 2, seen
        assert [total for _, total, _ in seen] == [2.5] * len(seen)
        assert seen[0][2] is not None and "waiting for 2.5 s on tab" in seen[0][2]
        assert [done for done, _, _ in seen] == sorted(done for done, _, _ in seen)


def test_auth_token_from_the_environment_is_not_on_the_command_line() -> None:
    port = free_port()
    env = {**os.environ, "TABPILOT_AUTH_TOKEN": "environment-secret"}
    proc = _tabpilot("serve", "--http", f"0.0.0.0:{port}", env=env)
    try:
        banner = _read_until(proc.stderr, "\n}")
        assert "listening on http://0.0.0.0" in banner and "Bearer <your token>" in banner, banner
        with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
            conn.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}")
            assert b" 401 " in conn.recv(200)
        assert "environment-secret" not in Path(f"/proc/{proc.pid}/cmdline").read_text()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


async def test_a_browser_that_is_not_found_is_logged_naming_the_flag_as_the_answer_does(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # The operator's log said "name a Chromium/Chrome binary: the browser path option", the
    # library's words, where the tool's answer says --browser-path.
    import tabpilot._browser_path
    from tabpilot.server.config import ServerConfig
    from tabpilot.server.state import ServerState

    monkeypatch.delenv("TABPILOT_BROWSER", raising=False)
    monkeypatch.setattr(tabpilot._browser_path, "_automatic_candidates", lambda: iter(()))
    state = ServerState(ServerConfig())
    with caplog.at_level(logging.ERROR, logger="tabpilot.server"):
        state.warm_up()
        deadline = time.monotonic() + 30
        while not caplog.records and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
    await state.close()
    (said,) = [record.getMessage() for record in caplog.records]
    assert said.startswith("the browser could not start: No Chromium found"), said
    assert "name a Chromium/Chrome binary: --browser-path, or TABPILOT_BROWSER=" in said, said
