"""Streamable HTTP for `tabpilot serve --http HOST:PORT`.

What this adds to the SDK's `streamable_http_app`:
- Host/Origin checks (DNS rebinding) on every bind: the SDK's TransportSecuritySettings, with the
  bind address and the loopback names allowed. A non-loopback bind needs `--auth-token`; there the
  bearer token is the guard (a rebinding page cannot send it), so Host/Origin are not limited.
- The bearer token: a small middleware compares `Authorization: Bearer TOKEN` in constant time.
  The SDK's `token_verifier` needs OAuth `AuthSettings` and publishes OAuth metadata naming an
  issuer that would not exist; a static token needs none of that.
- Sessions: each MCP session gets its own browser context (`state.py`). The 2026-07-28 protocol
  is sessionless (one POST per request, no session id), so it could not be isolated; requests
  that speak it get a 400, which a client in "auto" mode treats as "use the handshake", and it
  then gets a session.
- The SDK's refusal of a session beyond `--max-sessions` (HTTP 503, "Too many open sessions")
  also names the limit and the ways to make room (`_refusals_reworded`); so does its refusal of a
  request body over its size limit (HTTP 413, in plain text, which the SDK's client reported only as
  "Server returned an error response"), as a JSON-RPC error a client shows; its 404 for a session
  id it does not know (one that ended) and its 400 for a JSON-RPC batch (a list of pydantic errors)
  say what happened and what to do.
- A request whose client drops its connection before the answer is cancelled, as the client's
  `notifications/cancelled` would cancel it (`_Guard._cancel`): the SDK's transport of the
  handshake era ends the response stream but runs the handler to its end (a slow action held
  the tab's input from the next call). Its sessionless transport cancels on a disconnect itself.
- A stop in two steps (`_Server`): on a stop signal the tool calls under way are cut short and
  answered that the server stops, and only once those answers are out is uvicorn told to exit.
  Told at once, it ends every SSE response stream of the SDK (sse-starlette ends them when uvicorn
  starts to exit), and a call in flight got no answer at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hmac
import ipaddress
import json
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import anyio
import uvicorn
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp_types import INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from .app import TabpilotServer
from .config import SHUTDOWN_TIMEOUT, ServerConfig
from .runner import exit_as_stopped_by

logger = logging.getLogger("tabpilot.http")

MCP_PATH = "/mcp"


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """The host as a URL and a Host header write it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host else host


def check_bind(config: ServerConfig) -> None:
    """Refuse an HTTP bind reachable from other machines unless a bearer token guards it."""
    host = config.http_host or "127.0.0.1"
    if not is_loopback(host) and not config.auth_token:
        raise ValueError(
            f"Refusing to serve HTTP on {url_host(host)}: that is reachable from other machines, and anyone who "
            "reaches it controls your browser. Bind 127.0.0.1, or pass --auth-token TOKEN to require a "
            "bearer token."
        )


def transport_security(config: ServerConfig) -> TransportSecuritySettings:
    host = config.http_host or "127.0.0.1"
    if not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = dict.fromkeys([url_host(host), "127.0.0.1", "localhost", "[::1]"])
    # A name without a port is allowed too: a client of a server on port 80 (or behind a local
    # proxy there) sends the bare name, which the SDK's `name:*` does not match.
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for n in names for form in (n, f"{n}:*")],
        allowed_origins=[
            form
            for n in names
            for scheme in ("http", "https")
            for form in (f"{scheme}://{n}", f"{scheme}://{n}:*")
        ],
    )


async def _refuse(
    send: Send, status: int, text: str, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    """Answer with a JSON-RPC error (the id null), which an MCP client shows: one answers a body
    that is not JSON-RPC only with "Server returned an error response"."""
    start: Message = {"type": "http.response.start", "status": status, "headers": headers or []}
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": text}}
    start, body = _json_answer(start, {"type": "http.response.body"}, error)
    await send(start)
    await send(body)


class _Guard:
    """Bearer token check, steering sessionless-protocol requests to the handshake, and telling
    the server state which sessions have a request in progress (an open GET stream included: the
    SDK counts it too, so a session and its browser context end together) and which ended
    (DELETE)."""

    def __init__(self, app: ASGIApp, server: TabpilotServer, config: ServerConfig) -> None:
        self.app = app
        self.server = server
        self.token = config.auth_token
        self.config = config
        self.answering = 0
        """Requests being answered now, the notification streams (GET) left out: those never end
        by themselves."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        answering = scope["method"] != "GET"
        self.answering += answering
        started = ended = False
        request = _Watched(receive) if scope["method"] == "POST" else None

        async def send_tracked(message: Message) -> None:
            nonlocal started, ended
            started = started or message["type"] == "http.response.start"
            ended = ended or (message["type"] == "http.response.body" and not message.get("more_body"))
            await send(message)

        try:
            await self._serve(
                scope,
                receive if request is None else request.receive,
                _refusals_reworded(send_tracked, self.config, request),
            )
        finally:
            self.answering -= answering
        if request is not None and request.left and started and not ended:
            await self._cancel(scope, request)
        if started and not ended:
            # The SDK leaves a client's notification stream (GET) open-ended when the server stops
            # (its session's task group is cancelled): end it, so the client reads the end of the
            # stream and uvicorn logs no "ASGI callable returned without completing response".
            with contextlib.suppress(Exception):  # the client left already
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _cancel(self, scope: Scope, request: _Watched) -> None:
        """The client of a request left before its answer (it closed the connection): the SDK
        keeps running the request's handler to its end (nothing would read its answer: no event
        store keeps it for a client that resumes), and the tab's next action waited for it. It is
        cancelled as the client's `notifications/cancelled` would cancel it, sent to the SDK on
        the session's behalf, and the log says so."""
        headers = dict(scope["headers"])
        session = headers.get(b"mcp-session-id", b"").decode("latin-1")
        if request.id is None or not session or request.method == "initialize":
            return
        state = self.server.state
        found = state.sessions.get(session) if state is not None else None
        known = request.tool in self.server.tools  # a name the client made up is not logged
        what = f"{request.tool} call" if known else "tools/call" if request.tool else "request"
        whose = f"HTTP session {found.number}" if found is not None else "an HTTP session"
        logger.info(
            "the client of a %s of %s disconnected before its answer: the call is cancelled", what, whose
        )
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request.id, "reason": "the client disconnected"},
            }
        ).encode()
        kept = {b"host", b"origin", b"mcp-session-id", b"mcp-protocol-version"}
        cancel: Scope = {
            **scope,
            "method": "POST",
            "headers": [(k, v) for k, v in scope["headers"] if k.lower() in kept]
            + [
                (b"content-type", b"application/json"),
                (b"accept", b"application/json, text/event-stream"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: Message) -> None:  # the SDK's 202 (or 404: the session ended)
            pass

        try:
            await self.app(cancel, receive, send)
        except Exception:  # the server stops meanwhile: nothing more to cancel
            logger.debug("could not cancel a request whose client left", exc_info=True)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = dict(scope["headers"])
        if self.token is not None:
            given = headers.get(b"authorization", b"").decode("latin-1")
            scheme, _, value = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(value.strip(), self.token):
                await _refuse(
                    send,
                    401,
                    "Missing or wrong bearer token: send the token the server was started with (--auth-token "
                    "or $TABPILOT_AUTH_TOKEN) in the header Authorization: Bearer TOKEN.",
                    [(b"www-authenticate", b'Bearer realm="tabpilot"')],
                )
                return
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if version and version not in HANDSHAKE_PROTOCOL_VERSIONS:
            # One the SDK does not know was said to be sessionless too.
            await _refuse(
                send,
                400,
                f"tabpilot keeps a browser per MCP session; protocol {version} has no sessions. "
                "Connect with the initialize handshake."
                if version in MODERN_PROTOCOL_VERSIONS
                else f"Unsupported protocol version {version} (the MCP-Protocol-Version header): tabpilot "
                f"speaks {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}, agreed in the initialize handshake.",
            )
            return
        session = headers.get(b"mcp-session-id", b"").decode("latin-1")
        state = self.server.state
        if not session:
            await self.app(scope, receive, send)
            return
        if state is None:
            await self.app(scope, receive, send)
            return
        with state.serving(session):
            await self.app(scope, receive, send)
        if scope.get("method") == "DELETE":
            await state.release(session, "its client ended it")


class _Watched:
    """The `receive` of a POST, watched: the JSON-RPC request its body holds (id, method, tool),
    and whether its client left (`http.disconnect`) while it was served."""

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._body: list[bytes] | None = []
        self.id: int | str | None = None
        self.method = ""
        self.tool = ""
        self.left = False
        self.batch = False
        """Whether the body is a JSON-RPC batch (a list)."""

    async def receive(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.left = True
        elif message["type"] == "http.request" and self._body is not None:
            self._body.append(message.get("body", b""))
            if not message.get("more_body"):
                body, self._body = b"".join(self._body), None
                self._read(body)
        return message

    def _read(self, body: bytes) -> None:
        try:
            value = json.loads(body)
        except ValueError:
            return
        self.batch = isinstance(value, list)
        if not isinstance(value, dict) or not isinstance(value.get("method"), str):
            return
        request_id = value.get("id")
        if isinstance(request_id, int | str) and not isinstance(request_id, bool):
            self.id = request_id
        self.method = value["method"]
        params = value.get("params")
        if self.method == "tools/call" and isinstance(params, dict) and isinstance(params.get("name"), str):
            self.tool = params["name"]


def http_app(server: TabpilotServer, config: ServerConfig) -> _Guard:
    """The ASGI app serving `server` at /mcp with the checks above."""
    check_bind(config)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        transport_security=transport_security(config),
        host=config.http_host or "127.0.0.1",
        session_idle_timeout=config.session_idle_timeout,
        max_sessions=config.max_sessions,
    )
    return _Guard(app, server, config)


SESSIONS_FULL = "Too many open sessions"
"""The SDK's refusal of a session beyond its `max_sessions` (HTTP 503)."""


def _refusals_reworded(send: Send, config: ServerConfig, request: _Watched | None) -> Send:
    """`send` for a request (`request`: a POST's, watched): the SDK's refusals said in words that
    name the limit or the reason, and what to do (the status stays; the messages still start with
    the SDK's words). Its refusal of a body over the size limit (413) is plain text, which its
    client does not show: it becomes a JSON-RPC error."""
    held: list[Message] = []

    async def reworded(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] in _REWORDED:
            held.append(message)
            return
        if held and message["type"] == "http.response.body":
            start = held.pop()
            if not message.get("more_body"):
                start, message = _REWORDED[start["status"]](start, message, config, request)
            await send(start)
        await send(message)

    return reworded


Reworder = Callable[[Message, Message, ServerConfig, "_Watched | None"], tuple[Message, Message]]


def _sdk_error(body: Message) -> dict[str, Any] | None:
    """The JSON-RPC error an SDK refusal's body holds (None if it holds none)."""
    try:
        payload = json.loads(body.get("body", b""))
        return payload if isinstance(payload["error"]["message"], str) else None
    except (ValueError, TypeError, KeyError):
        return None


def _sessions_full(
    start: Message, body: Message, config: ServerConfig, request: _Watched | None
) -> tuple[Message, Message]:
    payload = _sdk_error(body)
    if payload is None or payload["error"]["message"] != SESSIONS_FULL:
        return start, body
    limit, idle = config.max_sessions, config.session_idle_timeout
    payload["error"]["message"] = (
        f"{SESSIONS_FULL}: this server serves at most {limit} at once (--max-sessions {limit}). End "
        f"a session you no longer use (an MCP client ends its session when it closes), wait for an "
        f"idle one to end ({idle:g} s without a request, --session-idle-timeout), or restart the "
        "server with a higher --max-sessions."
    )
    return _json_answer(start, body, payload)


TOO_LARGE = b"Request body too large"
"""The SDK's refusal of a request body over `DEFAULT_MAX_REQUEST_BODY_SIZE` (HTTP 413)."""


def _session_gone(
    start: Message, body: Message, config: ServerConfig, request: _Watched | None
) -> tuple[Message, Message]:
    payload = _sdk_error(body)
    if payload is None or payload["error"]["message"] != SESSION_GONE:
        return start, body
    payload["error"]["message"] = (
        f"{SESSION_GONE}: this session ended (its client ended it, it had no request for "
        f"{config.session_idle_timeout:g} s, --session-idle-timeout, or the server restarted), and its "
        "tabs with it. Start a new session (initialize, without a session id)."
    )
    return _json_answer(start, body, payload)


def _batch(
    start: Message, body: Message, config: ServerConfig, request: _Watched | None
) -> tuple[Message, Message]:
    payload = _sdk_error(body)
    if payload is None or request is None or not request.batch:
        return start, body
    payload["error"]["message"] = (
        "JSON-RPC batches are not taken (MCP dropped them in its 2025-06-18 version): send each "
        "request in a POST of its own."
    )
    return _json_answer(start, body, payload)


SESSION_GONE = "Session not found"
"""The SDK's answer (HTTP 404) to a session id it does not know: one that ended, or never was."""


def _too_large(
    start: Message, body: Message, config: ServerConfig, request: _Watched | None
) -> tuple[Message, Message]:
    if body.get("body", b"") != TOO_LARGE:
        return start, body
    limit = DEFAULT_MAX_REQUEST_BODY_SIZE / (1024 * 1024)
    payload = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": INVALID_REQUEST,
            "message": (
                f"The request is too large: this server takes at most {limit:g} MB per request over HTTP "
                "(the arguments of a call included), and the call was not made. Send less at once: a long "
                "text in parts, over several calls."
            ),
        },
    }
    return _json_answer(start, body, payload)


def _foreign(
    start: Message, body: Message, config: ServerConfig, request: _Watched | None
) -> tuple[Message, Message]:
    said = body.get("body", b"")
    if said not in (FOREIGN_HOST, FOREIGN_ORIGIN):
        return start, body
    host = config.http_host or "127.0.0.1"
    text = (
        f"Invalid Host header: this server listens on a loopback address and takes only requests addressed "
        f"to it as {url_host(host)}, 127.0.0.1, localhost or [::1] (a guard against DNS rebinding). Connect "
        f"to {url_host(host)} (or serve on another address, with --auth-token)."
        if said == FOREIGN_HOST
        else "Invalid Origin header: the request comes from a web page of another site, and this server "
        "takes requests only from clients and pages of this machine's loopback addresses (a guard against DNS "
        "rebinding). Connect from an MCP client, not a web page."
    )
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": text}}
    return _json_answer(start, body, error)


FOREIGN_HOST = b"Invalid Host header"
FOREIGN_ORIGIN = b"Invalid Origin header"
"""The SDK's refusals (421 and 403, plain text) of a request whose Host or Origin is not this
machine's loopback address (`transport_security`)."""


_REWORDED: dict[int, Reworder] = {
    400: _batch,
    403: _foreign,
    404: _session_gone,
    413: _too_large,
    421: _foreign,
    503: _sessions_full,
}


def _json_answer(start: Message, body: Message, payload: dict[str, Any]) -> tuple[Message, Message]:
    """`start` and `body` of an answer, its body replaced by `payload` as JSON."""
    text = json.dumps(payload).encode()
    headers = [(k, v) for k, v in start["headers"] if k.lower() not in (b"content-length", b"content-type")]
    headers += [(b"content-type", b"application/json"), (b"content-length", str(len(text)).encode())]
    return {**start, "headers": headers}, {**body, "body": text}


class _Server(uvicorn.Server):
    """uvicorn's server, stopping in two steps (see the module docstring). A second signal while
    the calls are answered stops it at once, as uvicorn does."""

    def __init__(self, config: uvicorn.Config, server: TabpilotServer, guard: _Guard) -> None:
        super().__init__(config)
        self.tabpilot = server
        self.guard = guard
        self.stop_asked = False
        self.answering: asyncio.Task[None] | None = None
        self.stopped_by: int | None = None
        """The first stop signal, by which the process ends once the server stopped (`run_http`)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """uvicorn's, without raising the signals it caught again once it stopped: two Ctrl-Cs
        raised twice met asyncio's own handler (a traceback), and a SIGINT the process ignores
        (started in the background by a shell) ended it with 0. `run_http` ends it instead."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handled = (signal.SIGINT, signal.SIGTERM)
        original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
        try:
            yield
        finally:
            for sig, handler in original.items():
                signal.signal(sig, handler)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """uvicorn's handler of SIGINT and SIGTERM. A second signal while stopping ends the process
        at once, as over stdio (uvicorn's forced exit cut its own shutdown short, with tracebacks),
        its browsers killed and their temporary profiles removed first (`exit_as_stopped_by`)."""
        if self.stopped_by is not None:
            logger.warning("%s again while stopping: exiting at once", signal.Signals(sig).name)
            sys.stderr.flush()
            exit_as_stopped_by(sig)
        self.stopped_by = sig
        self.stop(lambda: super(_Server, self).handle_exit(sig, frame))

    def stop(self, exit_: Callable[[], None]) -> None:
        """Answer the calls under way, then `exit_()` (which tells uvicorn to exit)."""
        if self.stop_asked or not self.started or self.tabpilot.state is None:
            exit_()
            return
        self.stop_asked = True
        loop = asyncio.get_running_loop()

        def answer() -> None:  # in the loop, not in the signal handler this runs in
            self.answering = loop.create_task(self._exit_once_answered(exit_))

        loop.call_soon_threadsafe(answer)

    async def _exit_once_answered(self, exit_: Callable[[], None]) -> None:
        state = self.tabpilot.state
        if state is not None:
            state.stop_calls()
        with anyio.move_on_after(SHUTDOWN_TIMEOUT):
            while self.guard.answering:
                await anyio.sleep(0.02)
        if not self.should_exit:  # unless a second signal stopped it already
            exit_()


def uvicorn_config(app: ASGIApp, config: ServerConfig, **options: Any) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=config.http_host or "127.0.0.1",
        port=config.http_port,
        log_config=None,  # the process's logging (--log-level, --log-file) applies
        lifespan="on",
        **options,
    )


def listen(config: ServerConfig) -> socket.socket:
    """The listening socket, bound here so a port in use is one clear error (ValueError)."""
    host = config.http_host or "127.0.0.1"
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, config.http_port))
    except OSError as exc:
        sock.close()
        why = "it is in use (another server runs there?)" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise ValueError(
            f"cannot listen on {url_host(host)}:{config.http_port}: {why}. Choose another with --http HOST:PORT"
        ) from exc
    sock.listen(128)
    return sock


def start_banner(config: ServerConfig, port: int) -> str:
    """What an operator reads when the server is up: where, and how a client connects."""
    host = config.http_host or "127.0.0.1"
    url = f"http://{url_host(host)}:{port}{MCP_PATH}"
    everywhere = host in ("0.0.0.0", "::")
    reach = f"http://<this machine's name>:{port}{MCP_PATH}" if everywhere else url
    entry: dict[str, Any] = {"type": "http", "url": reach}
    if config.auth_token:
        entry["headers"] = {"Authorization": "Bearer <your token>"}
    snippet = json.dumps({"mcpServers": {"tabpilot": entry}}, indent=2)
    return (
        f"tabpilot {__version__} listening on {url}{' (every interface)' if everywhere else ''} "
        "(streamable HTTP; stop with Ctrl-C)\n"
        f'Client configuration (VS Code: "servers" instead of "mcpServers"):\n{snippet}'
    )


def run_http(server: TabpilotServer, config: ServerConfig) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP (uvicorn stops gracefully: sessions' browsers close).
    The process then ends as stopped by its signal (`exit_as_stopped_by`, as over stdio): 0 after
    SIGHUP, 130 after SIGINT, as stopped by SIGTERM (status 143) after SIGTERM, as a supervisor
    that sent it expects. Raises ValueError when the address cannot be listened on."""
    sock = listen(config)
    port = sock.getsockname()[1]  # read now: a stop signal in the first moments closes the socket
    app = http_app(server, config)
    uv = _Server(uvicorn_config(app, config), server, app)
    if hasattr(signal, "SIGHUP"):  # not one of uvicorn's: the process then ends with status 0
        signal.signal(
            signal.SIGHUP, lambda _signum, _frame: uv.stop(lambda: setattr(uv, "should_exit", True))
        )

    async def serve() -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(uv.serve, [sock])
            while not uv.started and not uv.should_exit:
                await anyio.sleep(0.05)
            if uv.started and not uv.should_exit:
                print(start_banner(config, port), file=sys.stderr, flush=True)

    try:
        anyio.run(serve)
    except KeyboardInterrupt:
        return 130
    finally:
        sock.close()
    if uv.stopped_by is not None:
        sys.stderr.flush()
        exit_as_stopped_by(uv.stopped_by)
    return 0
