"""The default downloads folder is in the temp folder of the moment a manager starts."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tabpilot._downloads import Downloads


def test_the_default_downloads_folder_follows_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # It was fixed when tabpilot was imported: a process (the tests) that sets TMPDIR after that
    # had its downloads in the system's /tmp, one more file each run.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    assert Downloads().directory.parent == tmp_path
    assert Downloads(tmp_path / "mine").directory == tmp_path / "mine"
