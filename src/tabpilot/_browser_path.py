"""Find the Chromium to launch, and install one when asked and none is found.

Order: an explicit path, ``TABPILOT_BROWSER``, ``chromium``/``google-chrome`` and friends on
``PATH``, the usual install locations, then a Chromium that Playwright downloaded. A path the
user named that does not work is an error, never silently replaced by another browser.

``python -m tabpilot._browser_path [--ensure]`` prints the path it would use.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from tabpilot._errors import BrowserNotFoundError

__all__ = ["ENV_VAR", "ensure_browser", "find_browser"]

ENV_VAR = "TABPILOT_BROWSER"

_PATH_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

# Debian's /usr/bin/chromium is a shell wrapper that prints noise on stderr before exec'ing this.
_DEBIAN_REAL_CHROMIUM = "/usr/lib/chromium/chromium"

_WELL_KNOWN: list[str] = [
    _DEBIAN_REAL_CHROMIUM,
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    r"C:\Program Files\Google\Chrome\Application\chrome.exe",
    r"C:\Program Files (x86)\Google\Chrome\Application\chrome.exe",
]

# Executables inside one ms-playwright/chromium-NNNN directory, across platforms and Playwright versions.
_PLAYWRIGHT_EXECUTABLES = (
    "chrome-linux64/chrome",
    "chrome-linux/chrome",
    "chrome-mac-arm64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
    "chrome-mac-x64/Google Chrome for Testing.app/Contents/MacOS/Google Chrome for Testing",
    "chrome-mac/Chromium.app/Contents/MacOS/Chromium",
    "chrome-win64/chrome.exe",
    "chrome-win/chrome.exe",
)

# The Python tabpilot runs in has Playwright (a bare `python` may not, after a pipx or uv install).
_PYTHON = f'"{sys.executable}"' if " " in sys.executable else sys.executable or "python"

_HOW_TO_FIX = (
    "Install Chromium (Debian/Ubuntu: `sudo apt-get install chromium`; anywhere with internet: "
    f"`{_PYTHON} -m playwright install chromium`; or run `make browser` in a tabpilot checkout), "
    f"or name a Chromium/Chrome binary: the browser path option, or {ENV_VAR}=/path/to/chrome."
)


def _is_executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _check_named(path: str, source: str) -> str:
    """Resolve a browser the user named; a name without a slash is looked up on PATH."""
    expanded = os.path.expanduser(path)
    if os.sep not in expanded and "/" not in expanded:
        found = shutil.which(expanded)
        if found:
            return _prefer_real_binary(found)
    if _is_executable(expanded):
        return os.path.abspath(expanded)
    bundle = expanded.rstrip("/\\")
    if bundle.endswith(".app") and os.path.isdir(bundle):  # macOS: the path Finder gives is the bundle's
        inside = os.path.join(bundle, "Contents", "MacOS", os.path.basename(bundle)[: -len(".app")])
        if _is_executable(inside):
            return os.path.abspath(inside)
    if os.path.isdir(expanded):
        problem = "is a folder, not an executable file"
    else:
        problem = "is not an executable file" if os.path.exists(expanded) else "does not exist"
    raise BrowserNotFoundError(
        f"The browser given by {source} ({path}) {problem}. "
        f"Pass the path of a Chromium/Chrome executable, or leave it unset to find one automatically."
    )


def _prefer_real_binary(path: str) -> str:
    """Skip Debian's chromium wrapper script in favour of the binary it runs."""
    is_wrapper = os.path.basename(path) in ("chromium", "chromium-browser") and _is_script(path)
    if is_wrapper and _is_executable(_DEBIAN_REAL_CHROMIUM):
        return _DEBIAN_REAL_CHROMIUM
    return path


def _is_script(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def _playwright_cache_dirs() -> list[Path]:
    configured = os.environ.get("PLAYWRIGHT_BROWSERS_PATH")
    if configured == "0":
        # "0" means "inside the playwright package", next to its driver.
        try:
            import playwright
        except ImportError:
            return []
        return [Path(playwright.__file__).parent / "driver" / "package" / ".local-browsers"]
    if configured:
        return [Path(configured).expanduser()]
    cache = user_cache_dir()
    return [cache / "ms-playwright"] if cache is not None else []


def user_cache_dir() -> Path | None:
    """This user's cache directory on this platform (None on Windows without LOCALAPPDATA)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches"
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA")
        return Path(local) if local else None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def _revision(directory: Path) -> int:
    match = re.search(r"-(\d+)$", directory.name)
    return int(match.group(1)) if match else -1


def _playwright_candidates() -> Iterator[str]:
    for cache in _playwright_cache_dirs():
        if not cache.is_dir():
            continue
        # Newest revision first: it is the one the installed Playwright most likely expects.
        builds = sorted(cache.glob("chromium-*"), key=_revision, reverse=True)
        for build in builds:
            for relative in _PLAYWRIGHT_EXECUTABLES:
                yield str(build / relative)


def _user_installs() -> Iterator[str]:
    """Chrome or Chromium installed for this user alone: on Windows, an installer run without
    administrator rights puts it under %LOCALAPPDATA% instead of Program Files."""
    local = os.environ.get("LOCALAPPDATA")
    if local:
        yield os.path.join(local, "Google", "Chrome", "Application", "chrome.exe")
        yield os.path.join(local, "Chromium", "Application", "chrome.exe")


def _automatic_candidates() -> Iterator[str]:
    for name in _PATH_NAMES:
        found = shutil.which(name)
        if found:
            yield _prefer_real_binary(found)
    yield from _WELL_KNOWN
    yield from _user_installs()
    yield from _playwright_candidates()


def find_browser(explicit: str | None = None) -> str:
    """The Chromium to launch; raises ``BrowserNotFoundError`` saying what to do if there is none."""
    if explicit:
        return _check_named(explicit, "the browser path option")
    configured = os.environ.get(ENV_VAR)
    if configured:
        return _check_named(configured, f"the {ENV_VAR} environment variable")
    for candidate in _automatic_candidates():
        if _is_executable(candidate):
            return candidate
    raise BrowserNotFoundError(
        f"No Chromium found (looked on PATH for {', '.join(_PATH_NAMES)}, in the usual install "
        f"locations and in Playwright's browser cache). {_HOW_TO_FIX}"
    )


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _run(command: Sequence[str]) -> bool:
    """Run an installer with its output on stderr (stdout is reserved for the path); True on success."""
    print(f"tabpilot: running {' '.join(command)}", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    try:
        result = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=sys.stderr, env=env, check=False)
    except OSError as exc:
        print(f"tabpilot: {command[0]} failed: {exc}", file=sys.stderr)
        return False
    return result.returncode == 0


def ensure_browser(explicit: str | None = None) -> str:
    """Like ``find_browser``, but installs Chromium when none is found and none was named."""
    if explicit or os.environ.get(ENV_VAR):
        # The user chose a browser; installing another one would hide their mistake.
        return find_browser(explicit)
    try:
        return find_browser()
    except BrowserNotFoundError:
        pass
    tried: list[str] = []
    if _is_root() and shutil.which("apt-get"):
        tried.append("apt-get install chromium")
        if _run(["apt-get", "update", "-q"]) and _run(["apt-get", "install", "-y", "-q", "chromium"]):
            try:
                return find_browser()
            except BrowserNotFoundError:
                pass
    tried.append("python -m playwright install chromium")
    if _run([sys.executable, "-m", "playwright", "install", "chromium"]):
        try:
            return find_browser()
        except BrowserNotFoundError:
            pass
    raise BrowserNotFoundError(
        f"No Chromium found, and installing one did not work (tried: {'; '.join(tried)}; "
        f"see the output above). {_HOW_TO_FIX}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tabpilot._browser_path",
        description="Print the Chromium tabpilot would launch.",
        allow_abbrev=False,
    )
    parser.add_argument("--ensure", action="store_true", help="install Chromium if none is found")
    parser.add_argument("--browser-path", help="check this browser instead of searching")
    args = parser.parse_args(argv)
    try:
        path = ensure_browser(args.browser_path) if args.ensure else find_browser(args.browser_path)
    except BrowserNotFoundError as exc:
        print(f"tabpilot: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
