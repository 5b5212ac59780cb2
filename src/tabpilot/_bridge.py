"""The bridge to the tabpilot browser extension: the user's own browser as a CDP endpoint.

One WebSocket server on 127.0.0.1 serves two kinds of peers:

- `/extension?token=T&browser=B`: the extension's service worker (B: its profile's own id). Accepted only with the Origin
  `chrome-extension://<id>` of the shipped extension (or of the ids given instead) AND the pairing
  token; a web page can open sockets to 127.0.0.1 but cannot forge either. One browser at a time:
  another is told so as it connects (`ANOTHER_BROWSER`), also while the relay awaits the return of
  the one it has (the extension's `browser` id, kept in its profile, tells them apart).
- `/devtools/browser/<secret>`: the CDP endpoint tabpilot's own Playwright connects to
  (`cdp_endpoint`), played by a `Relay` over the tabs the extension has in scope. Its path is
  random and nothing lists it (no `/json` discovery); a request that carries an Origin (a web
  page) is refused even with the right path.

The extension may drop and come back (Chrome stops and restarts its service worker): for
`reconnect_grace` seconds the relay keeps its clients and its tabs; requests made meanwhile wait
for the extension, and tabpilot's page work fails at once, saying so (`unreachable()`,
`dropped()`). A reconnect in time continues where it was, the same tabs under the same targets
(the extension's debugger attachments outlive its worker). After that the bridge gives up: it
closes the relay's clients (the instance using it is lost, `loss()` says why) and starts afresh
when the extension comes back. (A drop cannot tell a worker restart from a browser that died: both
close the socket the same way.) An extension the user pairs with another server, or makes forget
this one, says so as it closes (`LEFT_ON_PURPOSE`): the browser counts as gone at once, for that
reason.

Closing the instance that uses the browser (the relay's last client goes) lets go of its tabs: the
extension detaches from every tab, which stays in its scope, and attaches again when a client
comes (`_release`, `_hold`), so the user's Chrome shows no debugging bar while no agent uses it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import http
import json
import logging
import os
import secrets
import time
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import parse_qs

from ._relay import Relay
from ._relay_parts import Answer, Client, JsonDict, LinkError, ignored

if TYPE_CHECKING:  # the WebSocket library is loaded when a bridge starts: most runs have none
    from websockets.asyncio.server import Server, ServerConnection
    from websockets.http11 import Request, Response

logger = logging.getLogger("tabpilot.bridge")

ExtensionScope = Literal["agent", "all"]
DEFAULT_PORT = 9777
RECONNECT_GRACE = 15.0
"""Seconds a dropped extension may take to come back before its browser counts as gone."""
HELLO_TIMEOUT = 30.0
PROTOCOL = 1
MAX_MESSAGE = 256 * 1024 * 1024
"""Largest message from a peer (a full-page screenshot travels as one)."""
ANOTHER_BROWSER = 4002
"""The close code that tells an extension another browser holds this server (its worker says so on
its connect page: a refused handshake reads as no answer in a browser)."""
LEFT_ON_PURPOSE = {
    4000: "the user paired the tabpilot extension with another tabpilot server",
    4001: "the user made the tabpilot extension forget this server (on its connect page)",
}
"""Why the extension closed its connection, by the code it closed it with: it does not come back
by itself, so there is nothing to wait for."""


def extension_path() -> Path:
    """The folder of the shipped extension: what to load unpacked at chrome://extensions."""
    return Path(str(resources.files("tabpilot") / "extension"))


def extension_id(public_key: str | None = None) -> str:
    """Chrome's id for an extension with this manifest `key` (the shipped one's by default): the
    first 32 hex digits of the SHA-256 of the key's DER bytes, each mapped 0-f to a-p."""
    if public_key is None:
        manifest = json.loads((extension_path() / "manifest.json").read_text(encoding="utf-8"))
        public_key = str(manifest["key"])
    digest = hashlib.sha256(base64.b64decode(public_key)).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def _check_extension_id(value: str) -> str:
    if len(value) != 32 or any(not "a" <= c <= "p" for c in value):
        raise ValueError(f"{value!r} is not a Chrome extension id (32 letters a-p)")
    return value


class _Extension:
    """The extension's connection: requests with ids, sent in call order, each answer handed on
    the moment it is read (in order with the events around it)."""

    def __init__(self, socket: ServerConnection, browser: str | None) -> None:
        self.socket = socket
        self.browser = browser
        """The id of its browser (its profile's, made by the extension), if it gave one."""
        self._ids = 0
        self._waiting: dict[int, Answer] = {}
        self._outbox: asyncio.Queue[str | None] = asyncio.Queue()
        self._writer = asyncio.get_running_loop().create_task(self._write())

    def post(self, message: JsonDict) -> None:
        self._outbox.put_nowait(json.dumps(message))

    def request(self, method: str, params: JsonDict, answer: Answer) -> None:
        self._ids += 1
        self._waiting[self._ids] = answer
        self.post({"id": self._ids, "method": method, "params": params})

    def answered(self, message: JsonDict) -> None:
        answer = self._waiting.pop(int(message["id"]), None)
        if answer is None:
            return
        error = message.get("error")
        if error is not None:
            code = int(error.get("code", -32000))
            answer(None, LinkError(str(error.get("message", error)), code, error.get("data")))
        else:
            answer(message.get("result", {}), None)

    async def _write(self) -> None:
        from websockets.exceptions import ConnectionClosed

        while (text := await self._outbox.get()) is not None:
            try:
                await self.socket.send(text)
            except ConnectionClosed:
                return

    def close(self, why: str) -> None:
        self._outbox.put_nowait(None)
        waiting, self._waiting = self._waiting, {}
        for answer in waiting.values():
            answer(None, LinkError(why))


WRONG_TOKEN_MEMORY = 120.0
"""Seconds a refused token counts as the reason the extension has not connected (it retries
every few seconds while its browser runs)."""


class ExtensionBridge:
    """Where the tabpilot extension connects, and the CDP endpoint made of its tabs.

    Use it as an async context manager, or `start()` / `close()`::

        async with ExtensionBridge(token="...") as bridge:
            print(bridge.connect_url)         # open it in the browser with the extension
            await bridge.wait_connected(60)
            instance = await manager.connect_extension(bridge)
    """

    def __init__(
        self,
        *,
        port: int = DEFAULT_PORT,
        token: str | None = None,
        scope: ExtensionScope = "agent",
        extension_ids: Sequence[str] = (),
        reconnect_grace: float = RECONNECT_GRACE,
        files: bool = False,
    ) -> None:
        """`files`: the extension may follow a tab to `file:` pages (the URL policy allows them);
        else a tab in scope that goes to one (the user's history, a page's link) leaves scope, as
        one that goes to a browser page does."""
        if scope not in ("agent", "all"):
            raise ValueError("scope must be 'agent' or 'all'")
        if not 0 <= port < 65536:
            raise ValueError(f"port {port} is out of range")
        self.host = "127.0.0.1"
        self.port = port
        self.token_generated = not token
        self.token = token or secrets.token_urlsafe(24)
        self.scope: ExtensionScope = scope
        self.extension_ids = tuple(_check_extension_id(i) for i in extension_ids) or (extension_id(),)
        self.reconnect_grace = reconnect_grace
        self.files = files
        self.relay = Relay(self)
        self._relay_path = "/devtools/browser/" + secrets.token_hex(16)
        self._server: Server | None = None
        self._extension: _Extension | None = None
        self._wrong_token_at: float | None = None
        self._clients: dict[ServerConnection, Client] = {}
        self._connected = asyncio.Event()
        self._listeners: list[Callable[[], None]] = []
        self._dropped_at: float | None = None
        self._give_up: asyncio.TimerHandle | None = None
        self._loss: str | None = None
        self._left = False
        self._drop: asyncio.Future[None] | None = None
        self._browser: str | None = None
        """The id of the browser (its extension's profile) connected, or last connected."""
        self._held: list[tuple[str, JsonDict, Answer]] = []
        """Requests made while the extension was away, sent when it is back (failed if it is not)."""
        self._let_go = False
        """The relay's last client went (its instance closed) and none came since: the extension
        keeps no tab attached."""
        self._holding: asyncio.Future[None] | None = None
        """The extension attaching to its tabs again for a client that came (`_hold`)."""
        self.user_agent = ""

    # -- lifecycle ---------------------------------------------------------------------------------

    async def __aenter__(self) -> ExtensionBridge:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Listen on 127.0.0.1:`port` (0: any free port; `port` tells which)."""
        if self._server is not None:
            return
        from websockets.asyncio.server import serve

        try:
            self._server = await serve(
                self._serve,
                self.host,
                self.port,
                process_request=self._check,
                max_size=MAX_MESSAGE,
                compression=None,
            )
        except OSError as exc:
            why = os.strerror(exc.errno) if exc.errno else exc.strerror  # not asyncio's long wording
            raise OSError(
                exc.errno, f"cannot listen on {self.host}:{self.port} for the extension: {why}"
            ) from None
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._give_up is not None:
            self._give_up.cancel()
        self._release_held(None)
        server, self._server = self._server, None
        if server is not None:
            server.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)

    # -- state -----------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        """Whether the extension is connected (and has reported its tabs)."""
        return self._connected.is_set()

    @property
    def cdp_endpoint(self) -> str:
        """The relay's CDP endpoint (for tabpilot's own connection: keep it to yourself)."""
        return f"ws://{self.host}:{self.port}{self._relay_path}"

    @property
    def connect_url(self) -> str:
        """The extension's page that pairs it with this bridge (it holds the token)."""
        return self.connect_url_with(self.token)

    def connect_url_with(self, token: str) -> str:
        """The pairing page with `token` in place of the bridge's (a placeholder, to show it)."""
        return f"chrome-extension://{self.extension_ids[0]}/connect.html?port={self.port}&token={token}"

    async def wait_connected(self, timeout: float | None = None) -> bool:
        """Wait until the extension is connected; False if it was not within `timeout` seconds."""
        try:
            await asyncio.wait_for(self._connected.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def on_connect(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call `listener()` whenever the extension connects (or reconnects); returns the disposer."""
        self._listeners.append(listener)

        def dispose() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return dispose

    def unreachable(self) -> str | None:
        """Why the browser cannot be reached now (the extension dropped and may come back), or None."""
        if self._dropped_at is None or self._loss is not None:
            return None
        ago = time.monotonic() - self._dropped_at
        return (
            f"the tabpilot extension disconnected {ago:.1f} s ago (the browser was closed, the extension "
            f"disabled, or its service worker restarts); it has {self.reconnect_grace:g} s to come back"
        )

    def loss(self) -> str | None:
        """Why the browser counts as gone (the extension did not come back in time), or None."""
        return self._loss

    def left_for_good(self) -> bool:
        """Whether the extension closed its connection for good (the user paired it with another
        server, or made it forget this one): it comes back only once the user pairs it again."""
        return self._left

    def dropped(self) -> asyncio.Future[None]:
        """Done when the extension drops (at once while it is away)."""
        if self._drop is None or (self._drop.done() and self.connected):
            self._drop = asyncio.get_running_loop().create_future()
            if not self.connected:
                self._drop.set_result(None)
        return self._drop

    # -- the Link the relay sends through ----------------------------------------------------------------

    def request(self, method: str, params: JsonDict, answer: Answer) -> None:
        """Send a request to the extension. While it is away (and may come back), the request waits
        for it: a client's command then completes after a service worker restart."""
        extension = self._extension
        if extension is not None and self.connected:
            extension.request(method, params, answer)
        elif self._dropped_at is not None:
            self._held.append((method, params, answer))
        else:
            raise LinkError("The tabpilot extension is not connected; the browser cannot be reached.")

    def _release_held(self, extension: _Extension | None) -> None:
        held, self._held = self._held, []
        for method, params, answer in held:
            if extension is not None:
                extension.request(method, params, answer)
            else:
                answer(None, LinkError("The tabpilot extension did not come back."))

    @property
    def refused_a_token(self) -> bool:
        """Whether the extension tried to connect lately with a token this bridge does not take
        (paired with an earlier server, whose token was another): the user must pair it again."""
        return (
            self._wrong_token_at is not None and time.monotonic() - self._wrong_token_at < WRONG_TOKEN_MEMORY
        )

    # -- the WebSocket server ---------------------------------------------------------------------------

    def _check(self, connection: ServerConnection, request: Request) -> Response | None:
        path, _, query = request.path.partition("?")
        origin = request.headers.get("Origin")
        if path == "/extension":
            allowed = {f"chrome-extension://{i}" for i in self.extension_ids}
            if origin not in allowed:
                logger.warning("refused an extension connection from Origin %r", origin)
                return connection.respond(
                    http.HTTPStatus.FORBIDDEN, "Forbidden: not the tabpilot extension.\n"
                )
            token = parse_qs(query).get("token", [""])[0]
            if not token or not hmac.compare_digest(token.encode(), self.token.encode()):
                logger.warning("refused an extension connection without the right token")
                self._wrong_token_at = time.monotonic()
                return connection.respond(http.HTTPStatus.FORBIDDEN, "Forbidden: wrong or missing token.\n")
            return None  # another browser connected already: told after the handshake (`_serve_extension`)
        if path == self._relay_path and origin is None:
            return None
        return connection.respond(http.HTTPStatus.NOT_FOUND, "Not found.\n")

    async def _serve(self, socket: ServerConnection) -> None:
        if socket.request is not None and socket.request.path.startswith("/extension"):
            await self._serve_extension(socket)
        else:
            await self._serve_client(socket)

    async def _serve_extension(self, socket: ServerConnection) -> None:
        from websockets.exceptions import ConnectionClosed

        query = socket.request.path.partition("?")[2] if socket.request is not None else ""
        browser = parse_qs(query).get("browser", [""])[0] or None
        if self._extension is not None or self._someone_else(browser):
            await socket.close(ANOTHER_BROWSER, "another browser is connected to this tabpilot server")
            return
        extension = self._extension = _Extension(socket, browser)
        # `relay` names this relay's state: attachments the worker kept for another relay (its own
        # restarted meanwhile) have domains on that this one knows nothing of, and start afresh.
        extension.post(
            {
                "type": "welcome",
                "scope": self.scope,
                "files": self.files,
                "protocol": PROTOCOL,
                "relay": self.relay.browser_target_id,
                "hold": not self._let_go,
            }
        )
        left: str | None = None
        try:
            async with asyncio.timeout(HELLO_TIMEOUT) as deadline:
                while True:  # not `async for`: it hides the close code of a clean close
                    message = json.loads(await socket.recv())
                    if message.get("type") == "hello":
                        deadline.reschedule(None)
                        self._hello(extension, message)
                    elif self.connected:
                        self._dispatch(extension, message)
        except ConnectionClosed as exc:
            logger.info("the extension's connection ended: %s", exc)
            left = LEFT_ON_PURPOSE.get(exc.rcvd.code) if exc.rcvd is not None else None
        except (TimeoutError, ValueError) as exc:
            logger.info("the extension's connection ended: %s", exc)
        finally:
            self._dropped(extension, left)

    def _someone_else(self, browser: str | None) -> bool:
        """Whether `browser` (the id the extension connects with) is another than the one whose
        return the relay awaits (its worker restarting): its tabs would take the place of the awaited
        one's, in the same instance. After the grace any browser may connect."""
        awaited = self._browser is not None and self._give_up is not None
        return awaited and browser is not None and browser != self._browser

    def _hello(self, extension: _Extension, message: JsonDict) -> None:
        if self._give_up is not None:
            self._give_up.cancel()
            self._give_up = None
        self._dropped_at = None
        self._loss = None
        self._left = False
        self.user_agent = str(message.get("userAgent", ""))
        self._browser = extension.browser
        self.relay.hello(
            list(message.get("tabs") or []),
            user_agent=self.user_agent,
            left=[g for g in message.get("left") or [] if isinstance(g, dict)],
        )
        self._connected.set()
        self._release_held(extension)
        logger.info("the tabpilot extension connected (%d tabs in scope)", len(self.relay.tabs))
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:
                logger.exception("an extension listener failed")

    def _dispatch(self, extension: _Extension, message: JsonDict) -> None:
        kind = message.get("type")
        if "id" in message and kind is None:
            extension.answered(message)
        elif kind == "cdp":
            self.relay.debugger_event(
                int(message["tabId"]),
                message.get("sessionId"),
                str(message["method"]),
                message.get("params") or {},
            )
        elif kind == "tab":
            event = message.get("event")
            if event in ("opening", "created"):
                self.relay.tab_reported(message["tab"], attached=event == "created")
            elif event == "updated":
                self.relay.tab_updated(message["tab"])
            elif event == "removed":
                self.relay.tab_removed(int(message["tabId"]), reason=message.get("reason"))
        elif kind == "ping":
            extension.post({"type": "pong"})

    def _dropped(self, extension: _Extension, left: str | None = None) -> None:
        """The extension's connection ended; `left`: why, if it closed it for good."""
        if self._extension is not extension:
            return
        self._extension = None
        extension.close("The tabpilot extension disconnected before it answered.")
        if not self._connected.is_set():
            return  # it never said hello: nothing was built on it
        self._connected.clear()
        self._dropped_at = time.monotonic()
        if self._drop is not None and not self._drop.done():
            self._drop.set_result(None)
        if left is not None:
            logger.info("the tabpilot extension disconnected: %s", left)
            self._left = True
            self._gone(left)
            return
        logger.info("the tabpilot extension disconnected; waiting %g s for it", self.reconnect_grace)
        self._give_up = asyncio.get_running_loop().call_later(self.reconnect_grace, self._gone)

    def _gone(self, why: str | None = None) -> None:
        """The extension did not come back (or `why`: it will not): its browser is gone for the
        relay's clients."""
        self._give_up = None
        self._loss = why or (
            f"the tabpilot extension disconnected and did not come back within {self.reconnect_grace:g} s "
            "(the browser was closed, or the extension disabled or removed)"
        )
        self._release_held(None)
        # The clients hear of it as a browser that went away (their connection ends), not as tabs
        # closing one by one: the relay forgets the tabs after letting go of them.
        for socket, client in list(self._clients.items()):
            self.relay.remove_client(client)
            asyncio.get_running_loop().create_task(socket.close(1001, "the browser is gone"))
        self.relay.clear()

    def _release(self) -> None:
        """The relay's last client went (its instance was closed, or lost): no agent uses the
        user's tabs now. The extension lets go of them, as when the server stops: they stay in its
        scope, for the next client (`_hold`), and Chrome's debugging bar goes."""
        self._let_go = True
        self.relay.clear()
        extension = self._extension
        if extension is not None and self.connected:
            extension.request("release", {}, ignored)
        # Else it is away: its welcome tells it to hold none when it is back.

    async def _hold(self) -> None:
        """A client came while the extension holds no tab (`_release`): the extension attaches to
        them again, and the relay has them before the client asks for any."""
        if self._holding is None:
            extension = self._extension
            if not self._let_go:
                return
            self._let_go = False
            if extension is None or not self.connected:
                return  # away: its welcome tells it to hold them when it is back
            holding = self._holding = asyncio.get_running_loop().create_future()

            def held(result: Any, error: LinkError | None) -> None:
                if error is None and isinstance(result, dict):
                    self.relay.hello(list(result.get("tabs") or []), user_agent=self.user_agent)
                if self._holding is holding:
                    self._holding = None
                if not holding.done():
                    holding.set_result(None)

            extension.request("hold", {}, held)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._holding), HELLO_TIMEOUT)

    async def _serve_client(self, socket: ServerConnection) -> None:
        from websockets.exceptions import ConnectionClosed

        outbox: asyncio.Queue[str | None] = asyncio.Queue()

        async def write() -> None:
            while (text := await outbox.get()) is not None:
                try:
                    await socket.send(text)
                except ConnectionClosed:
                    return

        await self._hold()
        writer = asyncio.get_running_loop().create_task(write())
        client = self.relay.add_client(outbox.put_nowait)
        self._clients[socket] = client
        try:
            async for raw in socket:
                self.relay.client_message(client, raw if isinstance(raw, str) else raw.decode())
        except ConnectionClosed:
            pass
        finally:
            self._clients.pop(socket, None)
            self.relay.remove_client(client)
            if not self._clients:
                self._release()
            outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(writer, 1)


__all__ = ["DEFAULT_PORT", "ExtensionBridge", "ExtensionScope", "extension_id", "extension_path"]
