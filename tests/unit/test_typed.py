"""The package says it is typed (`Typing :: Typed`), and so it ships the marker type checkers read."""

from __future__ import annotations

import textwrap
from importlib import resources
from pathlib import Path

from support import mypy_strict


def test_the_package_ships_py_typed() -> None:
    assert resources.files("tabpilot").joinpath("py.typed").is_file()


def test_a_user_script_is_checked_against_tabpilots_types(tmp_path: Path) -> None:
    # Without the marker mypy read every tabpilot name as Any ("missing library stubs or py.typed").
    script = tmp_path / "agent.py"
    script.write_text(
        textwrap.dedent(
            """
            from tabpilot import TabManager, click

            async def main() -> None:
                async with TabManager() as manager:
                    tab = await manager.new_tab()
                    await click(tab, "e1", modifiers=["ctrl"])  # as the docs say: read as key_name reads keys
                    title: int = tab.title
            """
        )
    )
    said = mypy_strict(script)
    assert 'Incompatible types in assignment (expression has type "str", variable has type "int")' in said, (
        said
    )
    assert "Found 1 error" in said, said  # that one: `modifiers=["ctrl"]` is typed as documented
