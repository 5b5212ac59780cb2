"""Removing a browser profile tabpilot made, with what the stopped browser left outside it."""

from __future__ import annotations

import contextlib
import os
import shutil

SOCKET_DIR_PREFIXES = ("org.chromium.Chromium.", "com.google.Chrome.")
"""Names of the directories Chromium and Chrome make in the temp dir for their singleton socket."""


def remove_profile(profile: str) -> None:
    """Remove `profile` and the directory of its browser's singleton socket. Chromium makes that
    directory in the temp dir (the profile's `SingletonSocket` link names the socket in it) and
    removes it on a clean exit only: a killed or crashed browser leaves it behind. Call this once
    the browser is gone."""
    with contextlib.suppress(OSError):
        socket_dir = os.path.dirname(os.readlink(os.path.join(profile, "SingletonSocket")))
        if os.path.basename(socket_dir).startswith(SOCKET_DIR_PREFIXES):
            shutil.rmtree(socket_dir, ignore_errors=True)
    shutil.rmtree(profile, ignore_errors=True)
