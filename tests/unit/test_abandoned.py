"""`sweep_abandoned`: what a killed tabpilot process left in the temp dir goes, and nothing else."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tabpilot._process import started_at
from tabpilot._profile import OWNER_FILE, forget_temporary, made_temporary, sweep_abandoned


def _dir(root: Path, name: str, owner: str | None) -> Path:
    made = root / name
    (made / "Default").mkdir(parents=True)
    if owner is not None:
        (made / OWNER_FILE).write_text(owner)
    return made


def test_only_what_a_process_that_ended_on_this_host_made_is_removed(tmp_path: Path) -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    host, me = socket.gethostname(), os.getpid()
    killed = _dir(tmp_path, "tabpilot-profile-killed", f"{host} {ended.pid} 12345")
    killed_driver = _dir(tmp_path, "tp-killed", f"{host} {ended.pid} -")
    running = _dir(tmp_path, "tabpilot-profile-running", f"{host} {me} {started_at(me) or '-'}")
    # Its pid is this process's now, but the process that made it started at another time.
    reused = _dir(tmp_path, "tp-reused", f"{host} {me} 1")
    elsewhere = _dir(tmp_path, "tp-elsewhere", f"another-{host} {ended.pid} 12345")
    unmarked = _dir(tmp_path, "tabpilot-profile-being-made", None)
    garbled = _dir(tmp_path, "tp-garbled", "nothing to read")
    not_ours = _dir(tmp_path, "other-killed", f"{host} {ended.pid} 12345")
    # This process's own, also while it may not have its mark yet.
    own = made_temporary(str(_dir(tmp_path, "tp-own", f"{host} {ended.pid} 12345")), profile=False)

    try:
        removed = sweep_abandoned(str(tmp_path))
    finally:
        forget_temporary(own)

    assert sorted(removed) == sorted(str(p) for p in (killed, killed_driver, reused))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (running, elsewhere, unmarked, garbled, not_ours, Path(own))
    )


def test_a_directory_tabpilot_makes_names_its_maker(tmp_path: Path) -> None:
    made = tmp_path / "tp-new"
    made.mkdir()
    made_temporary(str(made), profile=False)
    forget_temporary(str(made))
    host, pid, started = (made / OWNER_FILE).read_text().split()
    assert (host, int(pid)) == (socket.gethostname(), os.getpid())
    assert started == (started_at(os.getpid()) or "-")
    assert sweep_abandoned(str(tmp_path)) == []
