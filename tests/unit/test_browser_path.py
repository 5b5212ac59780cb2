from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tabpilot import _browser_path
from tabpilot._browser_path import ensure_browser, find_browser, main
from tabpilot._errors import BrowserNotFoundError
from tabpilot.server.advice import error_text


def make_executable(path: Path, content: str = "\x7fELF fake browser") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH, no env override, no well-known locations, an empty Playwright cache."""
    directory = tmp_path / "bin"
    directory.mkdir()
    monkeypatch.setenv("PATH", str(directory))
    monkeypatch.delenv("TABPILOT_BROWSER", raising=False)
    monkeypatch.delenv("LOCALAPPDATA", raising=False)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "ms-playwright"))
    monkeypatch.setattr(_browser_path, "_WELL_KNOWN", [])
    monkeypatch.setattr(_browser_path, "_DEBIAN_REAL_CHROMIUM", str(tmp_path / "no-such-real-chromium"))
    return directory


def test_an_explicit_path_wins_over_the_environment_and_path(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    explicit = make_executable(tmp_path / "my-chrome")
    monkeypatch.setenv("TABPILOT_BROWSER", str(make_executable(tmp_path / "env-chrome")))
    make_executable(bin_dir / "chromium")
    assert find_browser(str(explicit)) == str(explicit)


def test_an_explicit_path_that_does_not_exist_is_an_error_naming_it(bin_dir: Path) -> None:
    make_executable(bin_dir / "chromium")
    with pytest.raises(BrowserNotFoundError) as info:
        find_browser("/nowhere/chrome")
    assert "browser path option (/nowhere/chrome) does not exist" in str(info.value)
    assert "--browser-path (/nowhere/chrome) does not exist" in error_text(
        info.value
    )  # as the server says it


def test_an_explicit_path_that_is_not_executable_is_an_error(bin_dir: Path, tmp_path: Path) -> None:
    plain = tmp_path / "chrome.txt"
    plain.write_text("not a browser")
    plain.chmod(0o644)
    with pytest.raises(BrowserNotFoundError, match="is not an executable file"):
        find_browser(str(plain))


def test_a_macos_app_bundle_named_as_the_browser_is_the_executable_inside_it(
    bin_dir: Path, tmp_path: Path
) -> None:
    # The path Finder copies is the bundle's: "is not an executable file" named no way out.
    inside = make_executable(tmp_path / "Google Chrome.app" / "Contents" / "MacOS" / "Google Chrome")
    assert find_browser(str(tmp_path / "Google Chrome.app")) == str(inside)
    assert find_browser(str(tmp_path / "Google Chrome.app") + "/") == str(inside)


def test_a_folder_named_as_the_browser_is_an_error_that_says_it_is_a_folder(
    bin_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "Chromium.app").mkdir()  # a bundle without its executable: a folder like any other
    for folder in (tmp_path, tmp_path / "Chromium.app"):
        with pytest.raises(BrowserNotFoundError) as info:
            find_browser(str(folder))
        assert f"({folder}) is a folder, not an executable file" in str(info.value)


def test_an_explicit_name_without_a_slash_is_looked_up_on_path(bin_dir: Path) -> None:
    chrome = make_executable(bin_dir / "my-chrome")
    assert find_browser("my-chrome") == str(chrome)


def test_the_environment_variable_is_used_when_no_path_is_given(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_env = make_executable(tmp_path / "env-chrome")
    make_executable(bin_dir / "chromium")
    monkeypatch.setenv("TABPILOT_BROWSER", str(from_env))
    assert find_browser() == str(from_env)


def test_a_broken_environment_variable_is_an_error_naming_the_variable(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_executable(bin_dir / "chromium")
    monkeypatch.setenv("TABPILOT_BROWSER", "/nowhere/chrome")
    with pytest.raises(BrowserNotFoundError, match="TABPILOT_BROWSER environment variable"):
        find_browser()


def test_chromium_is_found_on_path_before_google_chrome(bin_dir: Path) -> None:
    make_executable(bin_dir / "google-chrome")
    chromium = make_executable(bin_dir / "chromium")
    assert find_browser() == str(chromium)


def test_google_chrome_stable_is_found_on_path(bin_dir: Path) -> None:
    chrome = make_executable(bin_dir / "google-chrome-stable")
    assert find_browser() == str(chrome)


def test_the_debian_wrapper_script_is_skipped_for_the_real_binary(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_executable(bin_dir / "chromium", '#!/bin/sh\nexec /usr/lib/chromium/chromium "$@"\n')
    real = make_executable(tmp_path / "lib" / "chromium" / "chromium")
    monkeypatch.setattr(_browser_path, "_DEBIAN_REAL_CHROMIUM", str(real))
    assert find_browser() == str(real)


def test_a_wrapper_script_is_used_when_the_real_binary_is_missing(bin_dir: Path) -> None:
    wrapper = make_executable(bin_dir / "chromium", "#!/bin/sh\nexec true\n")
    assert find_browser() == str(wrapper)


def test_the_newest_playwright_chromium_is_found_in_the_browsers_path(bin_dir: Path, tmp_path: Path) -> None:
    cache = tmp_path / "ms-playwright"
    make_executable(cache / "chromium-1100" / "chrome-linux" / "chrome")
    newest = make_executable(cache / "chromium-1200" / "chrome-linux64" / "chrome")
    make_executable(cache / "chromium_headless_shell-1300" / "chrome-linux" / "headless_shell")
    assert find_browser() == str(newest)


def test_a_chrome_installed_for_this_user_alone_is_found_before_playwrights(
    bin_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Chrome's Windows installer, run without administrator rights, puts it under %LOCALAPPDATA%;
    # only Program Files was looked in, so tabpilot said "No Chromium found" beside a Chrome.
    local = tmp_path / "AppData" / "Local"
    monkeypatch.setenv("LOCALAPPDATA", str(local))
    make_executable(tmp_path / "ms-playwright" / "chromium-1200" / "chrome-win64" / "chrome.exe")
    chromium = make_executable(local / "Chromium" / "Application" / "chrome.exe")
    assert find_browser() == str(chromium)
    chrome = make_executable(local / "Google" / "Chrome" / "Application" / "chrome.exe")
    assert find_browser() == str(chrome)


def test_no_browser_anywhere_is_an_error_that_says_what_to_do(bin_dir: Path) -> None:
    with pytest.raises(BrowserNotFoundError) as info:
        find_browser()
    message = str(info.value)
    assert "No Chromium found" in message
    assert "apt-get install chromium" in message
    # With the Python tabpilot runs in, which has Playwright: after a pipx or uv install, `python`
    # on PATH has none ("No module named playwright").
    assert f"`{sys.executable} -m playwright install chromium`" in message
    assert "--browser-path" in error_text(info.value)
    assert "TABPILOT_BROWSER=" in message


class FakeInstaller:
    """Records installer commands; the one named ``installs`` creates a browser on PATH."""

    def __init__(self, bin_dir: Path, installs: str | None) -> None:
        self.bin_dir = bin_dir
        self.installs = installs
        self.commands: list[list[str]] = []

    def __call__(self, command: Sequence[str]) -> bool:
        self.commands.append(list(command))
        if self.installs is not None and self.installs in command:
            make_executable(self.bin_dir / "chromium")
        return True


def test_ensure_installs_chromium_with_apt_get_as_root(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_executable(bin_dir / "apt-get")
    installer = FakeInstaller(bin_dir, installs="chromium")
    monkeypatch.setattr(_browser_path, "_run", installer)
    monkeypatch.setattr(_browser_path, "_is_root", lambda: True)
    assert ensure_browser() == str(bin_dir / "chromium")
    assert installer.commands == [["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "chromium"]]


def test_ensure_falls_back_to_playwright_install_without_root(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_executable(bin_dir / "apt-get")
    installer = FakeInstaller(bin_dir, installs="playwright")
    monkeypatch.setattr(_browser_path, "_run", installer)
    monkeypatch.setattr(_browser_path, "_is_root", lambda: False)
    assert ensure_browser() == str(bin_dir / "chromium")
    assert installer.commands == [[sys.executable, "-m", "playwright", "install", "chromium"]]


def test_ensure_raises_with_instructions_when_installing_does_not_help(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installer = FakeInstaller(bin_dir, installs=None)
    monkeypatch.setattr(_browser_path, "_run", installer)
    monkeypatch.setattr(_browser_path, "_is_root", lambda: True)  # but no apt-get on PATH
    with pytest.raises(BrowserNotFoundError) as info:
        ensure_browser()
    assert "installing one did not work" in str(info.value)
    assert "--browser-path" in error_text(info.value)
    assert installer.commands == [[sys.executable, "-m", "playwright", "install", "chromium"]]


def test_ensure_installs_nothing_when_the_named_browser_is_wrong(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installer = FakeInstaller(bin_dir, installs="chromium")
    monkeypatch.setattr(_browser_path, "_run", installer)
    with pytest.raises(BrowserNotFoundError, match="/nowhere/chrome"):
        ensure_browser("/nowhere/chrome")
    assert installer.commands == []


def test_ensure_returns_a_found_browser_without_installing(
    bin_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chromium = make_executable(bin_dir / "chromium")
    installer = FakeInstaller(bin_dir, installs="chromium")
    monkeypatch.setattr(_browser_path, "_run", installer)
    assert ensure_browser() == str(chromium)
    assert installer.commands == []


def test_the_command_line_prints_the_path_or_the_error(
    bin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 1
    assert "No Chromium found" in capsys.readouterr().err
    chromium = make_executable(bin_dir / "chromium")
    assert main([]) == 0
    assert capsys.readouterr().out == f"{chromium}{os.linesep}"
