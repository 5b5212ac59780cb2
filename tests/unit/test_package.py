"""The package loads its names on first use: `import tabpilot` alone imports none of the library."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tabpilot


def test_importing_the_package_loads_no_library_module() -> None:
    """The `tabpilot` command's entry is reached before Playwright loads (a Ctrl-C then is the
    command's to answer, not Python's traceback)."""
    code = (
        "import sys, tabpilot, tabpilot.__main__;"
        "print(sorted(m for m in sys.modules if m.startswith(('playwright', 'tabpilot._', 'mcp'))))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "['tabpilot.__main__']", loaded.stdout


def test_every_public_name_is_there() -> None:
    for name in tabpilot.__all__:
        assert getattr(tabpilot, name) is not None, name
    assert set(tabpilot.__all__) <= set(dir(tabpilot))
    assert tabpilot.DEFAULT_EXTENSION_PORT == 9777 and tabpilot.BROWSER_ENV_VAR == "TABPILOT_BROWSER"
    missing = "nothing_of_the_kind"
    with pytest.raises(AttributeError, match=f"no attribute '{missing}'"):
        getattr(tabpilot, missing)
