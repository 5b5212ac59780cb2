"""The navigation policy (pure logic; the server tests drive it through a real browser)."""

from __future__ import annotations

import re

import pytest

from tabpilot import NavigationBlockedError, UrlPolicy, normalize_url
from tabpilot.server.advice import error_text


def test_with_no_lists_any_web_url_is_allowed_and_file_urls_are_not() -> None:
    policy = UrlPolicy()
    policy.check("https://example.com/a")
    policy.check("http://127.0.0.1:8000/")
    for url in ("about:blank", "data:text/html,<p>hi</p>"):
        policy.check(url)
    with pytest.raises(NavigationBlockedError, match="file: URLs are refused"):
        policy.check("file:///etc/passwd")
    assert not policy.allows("chrome://settings")
    # about:version is chrome://version: only about:blank and about:srcdoc are always allowed.
    for url in ("about:blank#top", "ABOUT:BLANK", "about:srcdoc"):
        policy.check(url)
    with pytest.raises(NavigationBlockedError, match="about: URLs are refused"):
        policy.check("about:version")
    UrlPolicy(allowed_origins=["about:"]).check("about:version")


def test_file_urls_are_allowed_when_listed() -> None:
    UrlPolicy(allowed_origins=["file:"]).check("file:///tmp/report.html")


def test_allowed_origins_admit_only_their_scheme_host_and_port() -> None:
    policy = UrlPolicy(allowed_origins=["http://127.0.0.1:8000", "*.example.com", "docs.test"])
    assert policy.allows("http://127.0.0.1:8000/page")
    assert not policy.allows("http://127.0.0.1:9000/page")
    assert not policy.allows("https://127.0.0.1:8000/page")
    assert policy.allows("https://a.b.example.com/")
    assert policy.allows("http://example.com/")
    assert policy.allows("https://docs.test:4443/x")
    with pytest.raises(NavigationBlockedError, match="not among the allowed origins") as refused:
        policy.check("https://evil.test/")
    assert refused.value.reason == "not_allowed"
    # The server says which of its options decides it.
    assert "not in --allowed-origins" in error_text(refused.value)


def test_blocked_origins_win_over_allowed_ones() -> None:
    policy = UrlPolicy(allowed_origins=["*.example.com"], blocked_origins=["https://admin.example.com"])
    assert policy.allows("https://www.example.com/")
    with pytest.raises(NavigationBlockedError, match="blocked origin") as refused:
        policy.check("https://admin.example.com/users")
    assert refused.value.reason == "blocked"
    assert "--blocked-origins" in error_text(refused.value)
    assert policy.allows("http://admin.example.com/")  # another scheme is another origin


def test_a_url_without_scheme_gets_the_one_a_user_means() -> None:
    assert normalize_url("example.com/a") == "https://example.com/a"
    assert normalize_url("localhost:8000/x") == "http://localhost:8000/x"
    assert normalize_url("127.0.0.1:9/") == "http://127.0.0.1:9/"
    assert normalize_url("about:blank") == "about:blank"
    # This machine however it is spelt serves http (a development server), not https: these got
    # https:// and failed on the TLS handshake. A scheme-relative URL (as pages write them) gets one.
    for local in (
        "Localhost:3000/a",
        "app.localhost:5173",
        "0.0.0.0:8000",
        "127.1:8000",
        "[::]:8000",
        "localhost.:80",
    ):
        assert normalize_url(local) == f"http://{local}"
    assert normalize_url("//127.0.0.1:8000/x") == "http://127.0.0.1:8000/x"
    assert normalize_url("//example.com/x") == "https://example.com/x"
    assert normalize_url("notlocalhost.com:8000") == "https://notlocalhost.com:8000"
    assert normalize_url("http://a.test") == "http://a.test"
    assert normalize_url("https://a.test/a b") == "https://a.test/a b"  # the browser encodes the space
    # A scheme followed by digits is no host and port: javascript:1 had become https://javascript:1.
    assert normalize_url("javascript:1") == "javascript:1"
    for other in ("mailto:1", "tel:110"):
        with pytest.raises(ValueError, match="does not open in a tab"):
            normalize_url(other)
    with pytest.raises(ValueError, match=r"^The URL is empty \(only spaces\)"):
        normalize_url("   ")  # it was quoted back as ''
    # Over the browser's limit: its error quoted the URL whole, twice (6 MB), and blamed the server.
    with pytest.raises(ValueError) as too_long:
        normalize_url("https://a.test/" + "a" * 2_100_000)
    said = str(too_long.value)
    assert len(said) < 300 and said.startswith("The URL is 2,100,015 characters long"), said


def test_text_that_names_no_web_host_is_refused_instead_of_looked_up() -> None:
    for text, why in (
        ("not a url", "'not a url' cannot be a host name"),
        ("https://a b/", "'a b' cannot be a host name"),
        # Read as https://ht!tp://bad, with --allowed-origins refused as an origin not allowed.
        ("ht!tp://bad", "'ht!tp' cannot be a host name"),
        ("http://", "it names no host"),
    ):
        with pytest.raises(ValueError) as refused:
            normalize_url(text)
        assert (
            str(refused.value)
            == f"{text!r} is not a URL: {why}. Pass a URL such as https://example.com/page."
        )


def test_urls_the_browser_hands_to_other_programs_are_refused_before_any_tab_is_sent_there() -> None:
    for text in ("ftp://files.example.com/a", "mailto:a@example.com", "zoommtg://join?id=1", "foo:bar"):
        scheme = text.partition(":")[0]
        with pytest.raises(ValueError) as refused:
            normalize_url(text)
        assert str(refused.value) == (
            f"{text!r} does not open in a tab: the browser hands {scheme}: URLs to another program on "
            "the computer (there is no page to load), and a tab sent to one can stop taking clicks. "
            "Pass an http(s) URL."
        )
    with pytest.raises(
        ValueError, match=re.escape("'wss://a.test/' does not open in a tab: it is a WebSocket")
    ):
        normalize_url("wss://a.test/")
    for text in ("blob:https://a.test/1", "data:,hi", "file:///tmp/a.html", "view-source:https://a.test/"):
        assert normalize_url(text) == text  # loaded by the browser (the policy decides)


def test_devtools_endpoints_on_this_machine_are_always_refused() -> None:
    policy = UrlPolicy(allowed_origins=["http://127.0.0.1:9222", "localhost"])
    for url in (
        "http://127.0.0.1:9222/json/list",
        "http://localhost:9222/json",
        "http://localhost:9222/json/version/",
        "http://127.0.0.1:9222/devtools/inspector.html",
        "ws://127.0.0.1:9222/devtools/browser/abc",
        # Other spellings of this machine, which the browser reads as loopback.
        "http://localhost.:9222/json/list",
        "http://0.0.0.0:9222/json/list",
        "http://[::ffff:127.0.0.1]:9222/json/list",
        "http://[0:0:0:0:0:0:0:1]:9222/json/list",
        "http://[::]:9222/json/list",
        "http://2130706433:9222/json/list",
        "http://0x7f000001:9222/json/list",
        "http://0177.0.0.1:9222/json/list",
        "http://127.1:9222/json/close/ABC",
    ):
        assert not policy.allows(url), url
        assert policy.refuses_request(url), url
        assert UrlPolicy(guard_pages=True).page_routes.match(url), url  # type: ignore[union-attr]
    assert not policy.refuses_request("http://127.0.0.1:9222/page") and not policy.refuses_request(
        "http://[::1"
    )
    with pytest.raises(NavigationBlockedError) as refused:
        policy.check("http://[::1]:9222/json/list")
    assert refused.value.reason == "devtools"
    # Pages of the same name elsewhere are fine: another host, another path.
    assert policy.allows("http://127.0.0.1:9222/jsonp")
    assert UrlPolicy().allows("https://example.com/json/list")
    # Only the DevTools URLs are routed when no origin lists are set.
    guarded = UrlPolicy(guard_pages=True)
    assert guarded.restricts and not isinstance(guarded.page_routes, str)
    assert guarded.page_routes.match("http://localhost:9222/json/list")
    assert not guarded.page_routes.match("http://127.0.0.1:8000/page/a")
    assert not UrlPolicy().restricts


def test_a_blocked_origin_is_blocked_however_its_host_is_spelt() -> None:
    policy = UrlPolicy(blocked_origins=["http://localhost:8000", "https://evil.test", "http://[::1]:80"])
    for url in (
        "http://LOCALHOST.:8000/secret",
        "https://evil.test./",
        "http://[0:0:0:0:0:0:0:1]/",
    ):
        assert not policy.allows(url), url
    only = UrlPolicy(allowed_origins=["http://127.0.0.1:8000"])
    assert only.allows("http://0x7f000001:8000/a") and only.allows("http://[::ffff:127.0.0.1]:8000/a")
    assert not only.allows("http://127.0.0.2:8000/a")


@pytest.mark.parametrize(
    "origin",
    [
        "[::1",
        ":8080",
        "*.",
        "[",
        "*.[::1",
        "[::1]:x",
        "[::1]:",
        "*:",
        "http://127.0.0.1:8000/page",
        "*",
        "a:99999",
    ],
)
def test_a_malformed_origin_is_refused_rather_than_matching_everything(origin: str) -> None:
    with pytest.raises(ValueError, match="is not an origin"):
        UrlPolicy([origin])
    with pytest.raises(ValueError, match="is not an origin"):
        UrlPolicy(blocked_origins=[origin])


def test_one_string_of_origins_is_refused_rather_than_read_letter_by_letter() -> None:
    with pytest.raises(TypeError, match="a list of origins, not one string"):
        UrlPolicy("http://127.0.0.1:8000")
    assert not UrlPolicy(["[::1]:8000", "file:"]).allows("http://127.0.0.1:8000/")
