"""One small blocking HTTP request with a JSON answer, for the few endpoints tabpilot asks outside
a browser (a Selenium Grid's WebDriver API, a CDP endpoint's /json/version). The standard library
makes it; callers run it in a worker thread."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import Any

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
