"""One small blocking HTTP request with a JSON answer, for the few endpoints tabpilot asks outside
a browser (a Selenium Grid's WebDriver API, a CDP endpoint's /json/version). The standard library
makes it; callers run it in a thread (`in_daemon_thread`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

_JSON = "application/json; charset=utf-8"  # a Selenium Grid refuses a bare application/json
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def request_json(
    method: str,
    url: str,
    headers: Sequence[tuple[str, str]],
    timeout: float,
    body: Any = None,
    *,
    env_proxy: bool = True,
) -> tuple[int, Any]:
    """(HTTP status, decoded JSON or None) of one request; an HTTP error status is returned, not
    raised (an unreachable host raises OSError). `env_proxy=False` goes direct, whatever the
    environment's proxy variables say (a CDP endpoint is reached as Playwright reaches it)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", _JSON)
    for name, value in headers:
        request.add_header(name, value)
    opener = urllib.request.urlopen if env_proxy else _DIRECT.open
    try:
        with opener(request, timeout=timeout) as reply:
            status, raw = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def in_daemon_thread(
    work: Callable[[], T], *, name: str, unclaimed: Callable[[T], None] | None = None
) -> asyncio.Future[T]:
    """`work()` in a daemon thread, as a future of this loop. The process does not wait for the
    thread at exit (a host that never answers does not hold a stop up for its timeout; the socket
    closes with the process). Cancelling the future gives up on the result: `unclaimed(result)` is
    then called with it once it comes, in a thread the process waits for (to end what the request
    started)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def hand_over(value: T) -> None:  # on the loop
        if not future.cancelled():
            future.set_result(value)
        elif unclaimed is not None:
            threading.Thread(target=unclaimed, args=(value,), name=f"{name}-unclaimed").start()

    def fail(exc: BaseException) -> None:  # on the loop
        if not future.cancelled():
            future.set_exception(exc)

    def run() -> None:
        try:
            value = work()
        except BaseException as exc:
            with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits
                loop.call_soon_threadsafe(fail, exc)
            return
        try:
            loop.call_soon_threadsafe(hand_over, value)
        except RuntimeError:  # the loop closed: nobody takes it
            if unclaimed is not None:
                unclaimed(value)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future
