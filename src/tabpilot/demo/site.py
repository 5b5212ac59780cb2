"""The built-in local test site: tabs, popups, an OAuth-style flow, console, network and WebSocket pages.

Used by the tests, by ``tabpilot demo`` and by the benchmark, so every one of them runs offline
against 127.0.0.1. The server runs in a background thread with its own event loop: a test whose
loop is blocked (or a browser waiting on a slow response) never stalls the site.

    with LocalSite() as site:
        site.url("/page/a")            # http://127.0.0.1:PORT/page/a
        site.set_content("/x", "<title>X</title>")

``python -m tabpilot.demo.site`` serves it until Ctrl-C, for poking at it by hand.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import html
import json
import socket
import threading
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Match, Route, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

__all__ = ["LocalSite"]

# Query parameters that size a response are capped so a typo cannot exhaust memory.
_MAX_BODY_BYTES = 10 * 1024 * 1024
_MAX_SLOW_MS = 60_000
_MAX_MANY = 5_000


def _page(title: str, body: str, script: str = "") -> str:
    # The empty icon stops Chromium from requesting /favicon.ico, which would add noise to network logs.
    script_tag = f"<script>\n{script}\n</script>" if script else ""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<link rel="icon" href="data:,"><title>{html.escape(title)}</title></head>\n'
        f"<body>\n{body}\n{script_tag}\n</body></html>\n"
    )


def _js(value: object) -> str:
    """A JavaScript literal of ``value`` that is safe inside a <script> element."""
    return json.dumps(value).replace("</", "<\\/")


def _int_param(request: Request, name: str, default: int, *, maximum: int) -> int:
    try:
        value = int(request.query_params.get(name, default))
    except ValueError:
        value = default
    return max(0, min(value, maximum))


# --- pages -------------------------------------------------------------------------------------


async def home(request: Request) -> Response:
    body = """<h1>Home</h1>
<p>A local site for tabpilot: links and buttons that open tabs.</p>
<ul>
<li><a href="/page/a" target="_blank">Open A in new tab</a></li>
<li><button type="button" onclick="window.open('/page/b', 'popup_b', 'width=400,height=300')">Open popup</button></li>
<li><a href="/page/c">Go to C</a></li>
<li><a href="/oauth/start">Sign-in demo</a></li>
</ul>"""
    return HTMLResponse(_page("Home", body))


async def named_page(request: Request) -> Response:
    name = html.escape(request.path_params["name"])
    body = f"""<h1>Page {name}</h1>
<p>This is page {name}.</p>
<button type="button" onclick="document.getElementById('greeting').textContent = 'Hi from page {name}'">Say hi</button>
<p id="greeting" role="status"></p>"""
    return HTMLResponse(_page(f"Page {request.path_params['name']}", body))


async def oauth_start(request: Request) -> Response:
    body = """<h1>App</h1>
<button type="button" onclick="window.open('/oauth/authorize', 'oauth', 'width=500,height=600')">Sign in</button>
<p id="status" role="status">Signed out</p>"""
    script = """window.addEventListener('message', (event) => {
  if (event.origin !== location.origin || !event.data || !event.data.user) return;
  document.getElementById('status').textContent = 'Signed in as ' + event.data.user;
  document.title = 'App - signed in';
});"""
    return HTMLResponse(_page("App", body, script))


async def oauth_authorize(request: Request) -> Response:
    body = """<h1>Authorize</h1>
<form action="/oauth/callback" method="get">
<label for="user">Username</label>
<input id="user" name="user" type="text" autocomplete="off">
<button type="submit">Authorize</button>
</form>"""
    return HTMLResponse(_page("Authorize", body))


async def oauth_callback(request: Request) -> Response:
    user = request.query_params.get("user") or "anonymous"
    body = f"<p>Signing in as {html.escape(user)}…</p>"
    script = f"""if (window.opener) window.opener.postMessage({{user: {_js(user)}}}, '*');
window.close();"""
    return HTMLResponse(_page("Signing in", body, script))


async def console_page(request: Request) -> Response:
    params = request.query_params
    lines = []
    if "msg" in params:
        lines.append(f"console.log({_js(params['msg'])});")
    if "error" in params:
        lines.append(f"console.error({_js(params['error'])});")
    if "throw" in params:
        lines.append(f"throw new Error({_js(params['throw'])});")
    return HTMLResponse(
        _page("Console", "<h1>Console</h1>\n<p>This page writes to the console.</p>", "\n".join(lines))
    )


async def fetch_page(request: Request) -> Response:
    # Only same-origin paths: the page must never reach beyond the local site.
    paths = [p for p in request.query_params.getlist("path") if p.startswith("/")]
    script = f"""const list = document.getElementById('results');
(async () => {{
  for (const path of {_js(paths)}) {{
    const item = document.createElement('li');
    try {{
      const response = await fetch(path);
      await response.arrayBuffer();
      console.log('fetched ' + path + ' ' + response.status);
      item.textContent = 'fetched ' + path + ' ' + response.status;
    }} catch (error) {{
      console.error('fetch failed ' + path + ' ' + error);
      item.textContent = 'fetch failed ' + path;
    }}
    list.appendChild(item);
  }}
  document.getElementById('done').textContent = 'Done';
}})();"""
    body = '<h1>Fetch</h1>\n<ul id="results" aria-label="Results"></ul>\n<p id="done" role="status"></p>'
    return HTMLResponse(_page("Fetch", body, script))


async def ws_page(request: Request) -> Response:
    body = """<h1>WebSocket</h1>
<button type="button" onclick="ws.send('ping')">Send ping</button>
<ul id="messages" aria-label="Messages"></ul>"""
    script = """const ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + '/ws');
ws.addEventListener('open', () => ws.send('hello'));
ws.addEventListener('message', (event) => {
  console.log('ws received: ' + event.data);
  const item = document.createElement('li');
  item.textContent = event.data;
  document.getElementById('messages').appendChild(item);
});"""
    return HTMLResponse(_page("WebSocket", body, script))


async def dialog_page(request: Request) -> Response:
    body = """<h1>Dialogs</h1>
<button type="button" onclick="alert('hello')">Alert</button>
<button type="button" onclick="document.getElementById('result').textContent = 'confirm: ' + confirm('sure?')">Confirm</button>
<button type="button" onclick="document.getElementById('result').textContent = 'prompt: ' + prompt('name?', 'x')">Prompt</button>
<p id="result" role="status"></p>"""
    return HTMLResponse(_page("Dialogs", body))


async def beforeunload_page(request: Request) -> Response:
    # Chromium shows the beforeunload dialog only after the user interacted with the page,
    # hence the input: type into it (or click) before navigating away.
    body = """<h1>Before unload</h1>
<label for="draft">Unsaved text</label>
<input id="draft" type="text">"""
    script = """window.addEventListener('beforeunload', (event) => {
  event.preventDefault();
  event.returnValue = '';
});"""
    return HTMLResponse(_page("Before unload", body, script))


async def many_page(request: Request) -> Response:
    n = _int_param(request, "n", 300, maximum=_MAX_MANY)
    buttons = "\n".join(f'<button type="button">Button {i}</button>' for i in range(1, n + 1))
    links = "\n".join(f'<a href="#{i}">Link {i}</a>' for i in range(1, n + 1))
    body = f"<h1>Many</h1>\n<div>\n{buttons}\n</div>\n<nav>\n{links}\n</nav>"
    return HTMLResponse(_page("Many", body))


async def form_page(request: Request) -> Response:
    body = """<h1>Form</h1>
<form onsubmit="return false">
<label for="name">Name</label>
<input id="name" name="name" type="text">
<label for="color">Color</label>
<select id="color" name="color">
<option value="red">red</option>
<option value="green">green</option>
<option value="blue">blue</option>
</select>
<label><input id="subscribe" name="subscribe" type="checkbox"> Subscribe</label>
<label for="message">Message</label>
<textarea id="message" name="message"></textarea>
<button type="button" onclick="submitForm()">Submit</button>
</form>
<p id="result" role="status"></p>
<div id="hover" onmouseover="this.textContent = 'Hovered'">Hover me</div>
<div id="late"></div>"""
    script = """function submitForm() {
  const value = (id) => document.getElementById(id).value;
  const subscribed = document.getElementById('subscribe').checked ? 'yes' : 'no';
  document.getElementById('result').textContent =
    'Name=' + value('name') + '; Color=' + value('color') + '; Subscribe=' + subscribed + '; Message=' + value('message');
}
setTimeout(() => {
  const ready = document.createElement('p');
  ready.id = 'ready';
  ready.textContent = 'Ready';
  document.getElementById('late').appendChild(ready);
}, 500);"""
    return HTMLResponse(_page("Form", body, script))


async def close_self_page(request: Request) -> Response:
    # Chromium honours window.close() only in a tab a script opened (or with one history entry):
    # open this page with window.open or target=_blank to get a tab that closes itself.
    body = '<h1>Close self</h1>\n<button type="button" onclick="window.close()">Close me</button>'
    return HTMLResponse(_page("Close self", body))


async def download_page(request: Request) -> Response:
    body = '<h1>Download</h1>\n<a href="/api/file">Get file</a>'
    return HTMLResponse(_page("Download", body))


# --- HTTP API ----------------------------------------------------------------------------------


async def api_echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse(
        {
            "method": request.method,
            "path": request.url.path,
            "query": dict(request.query_params),
            "headers": dict(request.headers),
            "body": body.decode("utf-8", errors="replace"),
        }
    )


async def api_status(request: Request) -> Response:
    code = int(request.path_params["code"])
    if not 200 <= code <= 599:
        return PlainTextResponse(f"status must be 200-599, got {code}", status_code=400)
    if code in (204, 304):  # these must not carry a body
        return Response(status_code=code)
    return PlainTextResponse(f"status {code}", status_code=code)


async def api_slow(request: Request) -> Response:
    ms = _int_param(request, "ms", 1000, maximum=_MAX_SLOW_MS)
    await asyncio.sleep(ms / 1000)
    return PlainTextResponse(f"slow {ms}")


async def api_text(request: Request) -> Response:
    n = _int_param(request, "n", 1024, maximum=_MAX_BODY_BYTES)
    alphabet = "abcdefghijklmnopqrstuvwxyz"
    return PlainTextResponse((alphabet * (n // len(alphabet) + 1))[:n])


async def api_binary(request: Request) -> Response:
    n = _int_param(request, "n", 1024, maximum=_MAX_BODY_BYTES)
    return Response((bytes(range(256)) * (n // 256 + 1))[:n], media_type="application/octet-stream")


async def api_set_cookie(request: Request) -> Response:
    name = request.query_params.get("name", "session")
    value = request.query_params.get("value", "secret-session-value")
    response = JSONResponse({"set": name})
    response.set_cookie(name, value, path="/", samesite="lax")
    return response


async def api_file(request: Request) -> Response:
    return PlainTextResponse(
        "Hello from tabpilot's local site.\n",
        headers={"Content-Disposition": 'attachment; filename="tabpilot.txt"'},
    )


async def ws_echo(websocket: WebSocket) -> None:
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("text") is not None:
                text = message["text"]
                await websocket.send_text("pong" if text == "ping" else text)
            elif message.get("bytes") is not None:
                await websocket.send_bytes(message["bytes"])
    except WebSocketDisconnect:
        return


_ROUTES: list[BaseRoute] = [
    Route("/", home),
    Route("/page/{name}", named_page),
    Route("/oauth/start", oauth_start),
    Route("/oauth/authorize", oauth_authorize),
    Route("/oauth/callback", oauth_callback),
    Route("/console", console_page),
    Route("/fetch", fetch_page),
    Route("/ws-page", ws_page),
    Route("/dialog", dialog_page),
    Route("/beforeunload", beforeunload_page),
    Route("/many", many_page),
    Route("/form", form_page),
    Route("/close-self", close_self_page),
    Route("/download", download_page),
    Route("/api/echo", api_echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
    Route("/api/status/{code:int}", api_status),
    Route("/api/slow", api_slow),
    Route("/api/text", api_text),
    Route("/api/binary", api_binary),
    Route("/api/set-cookie", api_set_cookie),
    Route("/api/file", api_file),
    WebSocketRoute("/ws", ws_echo),
]


class _App:
    """The built-in pages, with routes added at run time (``set_content``/``set_route``) taking precedence."""

    def __init__(self) -> None:
        self._site = Starlette(routes=list(_ROUTES))
        # Replaced, never mutated, so the server thread always iterates a consistent list.
        self._runtime: dict[str, BaseRoute] = {}

    def set(self, path: str, route: BaseRoute) -> None:
        self._runtime = {**self._runtime, path: route}

    def clear(self) -> None:
        self._runtime = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            for route in self._runtime.values():
                match, child_scope = route.matches(scope)
                if match is Match.FULL:
                    scope.update(child_scope)
                    await route.handle(scope, receive, send)
                    return
        await self._site(scope, receive, send)


class LocalSite:
    """The local site served on 127.0.0.1 at a free port, from a background thread."""

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._app = _App()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("LocalSite is not running; call start() or use it as a context manager.")
        return self._port

    @property
    def origin(self) -> str:
        return f"http://{self._host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.origin + _absolute(path)

    def ws_url(self, path: str = "/ws") -> str:
        return f"ws://{self._host}:{self.port}{_absolute(path)}"

    def set_content(self, path: str, content: str | bytes, *, content_type: str = "text/html") -> None:
        """Serve ``content`` at ``path`` (any method) until ``clear_routes()``; replaces a built-in page."""
        body = content.encode() if isinstance(content, str) else content
        if content_type.startswith("text/") and "charset" not in content_type:
            content_type += "; charset=utf-8"

        async def endpoint(request: Request) -> Response:
            return Response(body, headers={"Content-Type": content_type})

        self._app.set(path, Route(path, endpoint, methods=None))

    def set_route(self, path: str, endpoint: Callable[..., Any], *, websocket: bool = False) -> None:
        """Serve a Starlette endpoint at ``path`` (``/x/{id}`` patterns work); a WebSocket one if ``websocket``."""
        route: BaseRoute = (
            WebSocketRoute(path, endpoint) if websocket else Route(path, endpoint, methods=None)
        )
        self._app.set(path, route)

    def clear_routes(self) -> None:
        """Forget everything added by ``set_content``/``set_route``."""
        self._app.clear()

    def start(self) -> LocalSite:
        if self._server is not None:
            return self
        # Binding here, not inside uvicorn, gives us the port before the thread starts and leaves no race.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self._host, self._port))
        except OSError:
            sock.close()
            raise
        self._port = sock.getsockname()[1]
        config = uvicorn.Config(
            self._app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            # Browsers keep connections alive; do not let them hold up stop().
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        self._server = server
        self._error = None
        self._thread = threading.Thread(
            target=self._serve, args=(server, sock), name="tabpilot-site", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + 10
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the local site did not start: {self._error!r}")
            time.sleep(0.005)
        return self

    def _serve(self, server: uvicorn.Server, sock: socket.socket) -> None:
        try:
            asyncio.run(server.serve(sockets=[sock]))
        except BaseException as exc:  # reported by start(); a daemon thread has nowhere else to say it
            self._error = exc
        finally:
            sock.close()

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(timeout=10)

    def __enter__(self) -> LocalSite:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _absolute(path: str) -> str:
    return path if path.startswith("/") else "/" + path


def _port(text: str) -> int:
    if not (text.isascii() and text.isdigit() and int(text) < 65536):
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535; 0 or none: a free one)")
    return int(text)


def main() -> None:
    """`python -m tabpilot.demo.site [PORT]`: serve the site on 127.0.0.1 (a free port by default)."""
    parser = argparse.ArgumentParser(
        prog="python -m tabpilot.demo.site",
        description="Serve tabpilot's local test site until Ctrl-C.",
        allow_abbrev=False,
    )
    parser.add_argument("port", metavar="PORT", type=_port, nargs="?", default=0, help="default: a free one")
    port: int = parser.parse_args().port
    site = LocalSite(port=port)
    try:
        site.start()
    except OSError as exc:
        why = "it is in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        parser.exit(
            2,
            f"{parser.prog}: error: cannot listen on 127.0.0.1:{port}: {why}; give another PORT, or "
            "none for a free one\n",
        )
    with site:
        print(f"tabpilot local site at {site.origin} (Ctrl-C stops it)", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
