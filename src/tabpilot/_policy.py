"""Navigation policy: which URLs a tab may be sent to.

    policy = UrlPolicy(allowed_origins=["http://127.0.0.1:8000"], blocked_origins=["https://evil.test"])
    policy.check("http://127.0.0.1:8000/a")   # returns None
    policy.check("file:///etc/passwd")         # raises NavigationBlockedError

Rules, in order:
- `about:blank`, `about:srcdoc` and `data:` URLs are always allowed: they load nothing from
  anywhere, and pages and tests use them as empty documents.
- A URL whose origin is blocked is refused.
- When `allowed_origins` is not empty, only those origins are allowed.
- `file:` URLs are refused unless `file:` (or `file://`) is in `allowed_origins`: a local file
  can hold secrets, and an agent told to "open the report" should not read the disk.
- Other schemes that browsers treat as privileged (`chrome:`, `chrome-extension:`, `devtools:`,
  `view-source:`, `javascript:`, and `about:` but for about:blank and about:srcdoc: Chromium
  opens `about:version` as `chrome://version`) are refused unless allowed the same way.
- The DevTools endpoints of a browser on this machine (`http://127.0.0.1:PORT/json/list`,
  `/json/version`, `/devtools/...` on a loopback host) are always refused: a page that shows them
  reveals the tabs of a browser and how to take control of it. Where pages are guarded, a page's
  own requests there (`refuses_request`) are refused too.
- Hosts are compared as the browser reads them (`canonical_host`): `localhost.`, `0x7f000001` and
  `[::ffff:127.0.0.1]` are the hosts they reach, `0.0.0.0` and `[::]` are loopback.

An origin is written `scheme://host[:port]`; `*.example.com` (any scheme) and `https://*.example.com`
match subdomains; a bare `example.com` matches that host on any scheme and port.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from urllib.parse import SplitResult, urlsplit

from ._errors import NavigationBlockedError
from ._ids import port_number

_ALWAYS_ALLOWED = ("about:blank", "about:srcdoc")
_PRIVILEGED_SCHEMES = {
    "file",
    "chrome",
    "chrome-extension",
    "chrome-untrusted",
    "devtools",
    "view-source",
    "javascript",
    "about",
}
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")


def canonical_host(host: str) -> str:
    """`host` as the browser connects to it: lower case, no trailing dot (`localhost.`), an IPv4
    address in dotted form whatever its spelling (`0x7f000001`, `2130706433`, `0177.0.0.1`,
    `127.1`), an IPv6 one compressed in brackets, and one mapping an IPv4 address as that address
    (`[::ffff:127.0.0.1]`). So no spelling of a host gets past a rule written for another."""
    host = host.lower().rstrip(".")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in bare:
        try:
            v6 = ipaddress.IPv6Address(bare)
        except ValueError:
            return host
        return str(v6.ipv4_mapped) if v6.ipv4_mapped is not None else f"[{v6.compressed}]"
    if host and all(part and part.replace("x", "").isalnum() for part in host.split(".")):
        try:  # the forms WHATWG URLs (and so Chromium) read as IPv4, as inet_aton reads them
            return socket.inet_ntoa(socket.inet_aton(host))
        except OSError:
            return host
    return host


def _url_host(parts: SplitResult) -> str:
    """The canonical host of a parsed URL (`urlsplit` gives an IPv6 one without its brackets)."""
    host = parts.hostname or ""
    return canonical_host(f"[{host}]" if ":" in host else host)


def _is_loopback(host: str) -> bool:
    """Whether `host` (canonical) reaches this machine: a loopback name or address, or the
    unspecified address (connecting to 0.0.0.0 or [::] reaches the local host)."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def is_local_host(host: str) -> bool:
    """Whether `host`, however it is spelt (`Localhost`, `app.localhost`, `127.1`, `[::1]`,
    `0.0.0.0`), reaches this machine."""
    return _is_loopback(canonical_host(f"[{host}]" if ":" in host and not host.startswith("[") else host))


_DEVTOOLS_PATHS = ("/json", "/json/", "/json/list", "/json/version", "/json/protocol")
_DEVTOOLS_PREFIXES = ("/json/new", "/json/activate/", "/json/close/", "/devtools/")


_DEVTOOLS_URL = re.compile(r"^(https?|wss?)://[^/?#]+/(json|devtools)([/?#].*)?$", re.IGNORECASE)
"""A superset of the URLs `_is_devtools_endpoint` refuses (any host: a loopback one can be spelt
many ways), for routing only those requests."""


def _is_devtools_endpoint(scheme: str, host: str, path: str) -> bool:
    if not _is_loopback(host) or scheme not in ("http", "https", "ws", "wss"):
        return False
    path = path.rstrip("/") or "/"
    return path in _DEVTOOLS_PATHS or path.startswith(_DEVTOOLS_PREFIXES) or path == "/devtools"


class _Pattern:
    def __init__(self, text: str) -> None:
        self.text = text.strip()
        raw = self.text.lower().rstrip("/")
        self.scheme: str | None = None
        if raw.endswith(":") and "/" not in raw:  # "file:" or "chrome:"
            self.scheme, rest = raw[:-1], ""
        elif "://" in raw:
            self.scheme, rest = raw.split("://", 1)
        else:
            rest = raw
        self.any_subdomain = rest.startswith("*.")
        host_port = rest[2:] if self.any_subdomain else rest
        self.port: int | None = None
        self.host = host_port
        if self.scheme is not None and not _SCHEME.fullmatch(self.scheme):
            raise ValueError(
                f"{text!r} is not an origin: {self.scheme!r} is no URL scheme (write https://host, file:)"
            )
        port: str | None = None  # the text after the host's colon, if it has one
        if "/" in host_port or "?" in host_port or "#" in host_port:
            raise ValueError(f"{text!r} is not an origin: an origin has no path (write scheme://host[:port])")
        if host_port.startswith("["):  # IPv6 literal
            end = host_port.find("]")
            if end < 0 or host_port[end + 1 : end + 2] not in ("", ":"):
                raise ValueError(f"{text!r} is not an origin: an IPv6 host is written [::1] or [::1]:PORT")
            self.host = host_port[: end + 1]
            if host_port[end + 1 :]:
                port = host_port[end + 2 :]
        elif ":" in host_port:
            self.host, port = host_port.rsplit(":", 1)
        self.host = canonical_host(self.host)
        if port is not None and port_number(port) is None:
            raise ValueError(f"{text!r} is not an origin: its port is not a number from 1 to 65535")
        self.port = port_number(port) if port is not None else None
        if not self.host and (self.scheme is None or self.any_subdomain or port is not None):
            raise ValueError(
                f"{text!r} is not an origin: it names no host (write scheme://host[:port], *.example.com, "
                "example.com, or a bare scheme such as file:)"
            )
        if "*" in self.host:
            raise ValueError(f"{text!r} is not an origin: '*' stands only at the start, as in *.example.com")
        if self.port is None and self.scheme in _DEFAULT_PORTS and "://" in raw and host_port:
            self.port = _DEFAULT_PORTS[self.scheme]

    def matches(self, scheme: str, host: str, port: int | None) -> bool:
        if self.scheme is not None and self.scheme != scheme:
            return False
        if not self.host:  # a bare scheme: "file:"
            return True
        if self.any_subdomain:
            if not (host == self.host or host.endswith("." + self.host)):
                return False
        elif host != self.host:
            return False
        return self.port is None or self.port == port


class UrlPolicy:
    """Decides whether a tab may navigate to a URL; see the module docstring for the rules."""

    def __init__(
        self,
        allowed_origins: Iterable[str] = (),
        blocked_origins: Iterable[str] = (),
        *,
        guard_pages: bool = False,
    ) -> None:
        """`guard_pages`: hold the navigations pages start themselves (links, scripts, popups) to the
        rules even with no origin lists, so a page cannot lead a tab to a refused URL either. It costs
        a check per request, worth it when the browser is shared with clients one does not know."""
        self.guard_pages = guard_pages
        for name, given in (("allowed_origins", allowed_origins), ("blocked_origins", blocked_origins)):
            if isinstance(given, str):
                raise TypeError(f"{name} takes a list of origins, not one string: [{given!r}]")
        self.allowed_origins = tuple(o for o in allowed_origins if o.strip())
        self.blocked_origins = tuple(o for o in blocked_origins if o.strip())
        self._allowed = [_Pattern(o) for o in self.allowed_origins]
        self._blocked = [_Pattern(o) for o in self.blocked_origins]

    @property
    def restricts(self) -> bool:
        """Whether navigations pages start must be checked too (worth routing page traffic)."""
        return bool(self._allowed or self._blocked) or self.guard_pages

    @property
    def page_routes(self) -> str | re.Pattern[str]:
        """The URLs worth checking when pages navigate: all with origin lists, else the DevTools ones."""
        return "**/*" if self._allowed or self._blocked else _DEVTOOLS_URL

    def refuses_request(self, url: str) -> bool:
        """Whether a page's own request (a fetch, an image, a script: not a navigation) to `url` is
        refused: those to a DevTools endpoint on this machine, which would read or close the tabs
        of any browser there (no-cors requests reach it too)."""
        try:
            parts = urlsplit(url.strip())
            host = _url_host(parts)
        except ValueError:
            return False
        return _is_devtools_endpoint(parts.scheme.lower(), host, parts.path)

    def allows(self, url: str) -> bool:
        try:
            self.check(url)
        except NavigationBlockedError:
            return False
        return True

    def check(self, url: str) -> None:
        """Raise NavigationBlockedError if the policy refuses `url`."""
        text = url.strip()
        if re.split(r"[?#]", text, maxsplit=1)[0].lower() in _ALWAYS_ALLOWED or text.lower().startswith(
            "data:"
        ):
            return
        try:
            parts = urlsplit(text)
        except ValueError as exc:  # e.g. an unclosed IPv6 bracket: 'http://[::1'
            raise ValueError(f"{url!r} is not a valid URL ({exc}). Check it and call again.") from exc
        scheme = parts.scheme.lower()
        host = _url_host(parts)
        try:
            port = parts.port or _DEFAULT_PORTS.get(scheme)
        except ValueError:
            port = None
        origin = f"{scheme}://{parts.netloc}" if parts.netloc else f"{scheme}:"
        if _is_devtools_endpoint(scheme, host, parts.path):
            raise NavigationBlockedError(
                f"Navigation to {url} is blocked: it is the DevTools endpoint of a browser on this machine.",
                "Tabs may not read or drive other browsers.",
                url=url,
                reason="devtools",
                origin=origin,
            )
        if any(p.matches(scheme, host, port) for p in self._blocked):
            raise NavigationBlockedError(
                f"Navigation to {url} is blocked: {origin} is a blocked origin.",
                "Choose another URL.",
                url=url,
                reason="blocked",
                origin=origin,
            )
        allowed = any(p.matches(scheme, host, port) for p in self._allowed)
        if scheme in _PRIVILEGED_SCHEMES and not allowed:
            raise NavigationBlockedError(
                f"Navigation to {url} is blocked: {scheme}: URLs are refused unless the navigation policy "
                f"allows them ('{scheme}:' among its allowed origins).",
                "Use an http(s) URL instead.",
                url=url,
                reason="privileged",
                origin=f"{scheme}:",
            )
        if self._allowed and not allowed:
            raise NavigationBlockedError(
                f"Navigation to {url} is blocked: {origin} is not among the allowed origins "
                f"({', '.join(self.allowed_origins)}).",
                "Choose a URL on an allowed origin.",
                url=url,
                reason="not_allowed",
                origin=origin,
            )
