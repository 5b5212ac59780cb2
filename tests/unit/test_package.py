"""The package loads its names on first use: `import tabpilot` alone imports none of the library."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

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


def test_the_version_has_one_source_that_the_command_and_the_readme_give() -> None:
    """pyproject.toml's version was a second copy of `__version__`, free to drift from what
    `tabpilot --version` and the server's handshake say, and from the wheel's name in the README."""
    root = Path(__file__).parents[2]
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    source = root / project["tool"]["hatch"]["version"]["path"]
    assert re.search(rf'^__version__ = "{re.escape(tabpilot.__version__)}"$', source.read_text(), re.M)
    wheels = re.findall(
        r"tabpilot-([^-\s]+)-py3-none-any\.whl", (root / "README.md").read_text(encoding="utf-8")
    )
    assert wheels and set(wheels) == {tabpilot.__version__}
    # `python -m tabpilot` is the `tabpilot` script.
    assert project["project"]["scripts"] == {"tabpilot": "tabpilot.__main__:main"}
    said = subprocess.run([sys.executable, "-m", "tabpilot", "--version"], capture_output=True, text=True)
    assert said.stdout == f"tabpilot {tabpilot.__version__}\n"
