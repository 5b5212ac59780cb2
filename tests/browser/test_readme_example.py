"""The README's library example, run as a user runs it: a fresh Python process each time."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from support import mypy_strict
from tabpilot.demo.site import LocalSite

README = Path(__file__).resolve().parents[2] / "README.md"
RUNS = 10


def library_blocks() -> list[str]:
    """The ```python blocks of the README's library section, in order."""
    section = README.read_text().split("\n## Library API\n", 1)[1]
    blocks: list[str] = re.findall(r"```python\n(.*?)```", section, re.S)
    assert blocks, "no python block in the README's library section"
    return blocks


def library_example() -> str:
    """The first ```python block of the README's library section."""
    return library_blocks()[0]


async def run_example(code: str, browser_path: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env={**os.environ, "TABPILOT_BROWSER": browser_path},
    )
    output, _ = await asyncio.wait_for(process.communicate(), 120)
    return await process.wait(), output.decode()


async def test_the_readme_library_example_works_ten_times_in_a_row(
    browser_path: str, site: LocalSite
) -> None:
    example = library_example()
    assert "http://127.0.0.1:8000/" in example
    code = example.replace("http://127.0.0.1:8000/", site.url("/"))
    for run in range(1, RUNS + 1):
        returncode, output = await run_example(code, browser_path)
        assert returncode == 0, f"run {run} failed:\n{output}"
        lines = output.splitlines()
        # The tab the raw Playwright click opened was announced before settle() returned...
        opened = [line for line in lines if line.startswith("tab_opened 3 ")]
        assert len(opened) == 1 and "'openerId': 2" in opened[0] and "'cause': 'link'" in opened[0], output
        assert lines.index(opened[0]) < lines.index(f"2 True None Home {site.url('/')}"), output
        # ...and listed with its opener, not active (its URL, or about:blank while its page is on
        # its way: `TabInfo.loading_url` has it then, 1 run in 100 or so on a loaded machine);
        # tabpilot.click reported the tab it opened.
        shown = (site.url("/page/a"), "about:blank")
        assert any(line.startswith("3 False 2 ") and line.endswith(shown) for line in lines), output
        assert lines[lines.index("(4,)") + 1] == "2", output


def telemetry_example() -> str:
    """The README's telemetry snippet (the library section's second python block)."""
    blocks = library_blocks()
    assert len(blocks) >= 2 and "Telemetry(" in blocks[1], "no telemetry block in the library section"
    return blocks[1]


async def test_the_readme_telemetry_snippet_records_the_tabs_console(
    browser_path: str, site: LocalSite
) -> None:
    snippet = telemetry_example().replace("http://127.0.0.1:8000/", site.url("/"))
    imports = [line for line in snippet.splitlines() if line.startswith(("from ", "import "))]
    body = [line for line in snippet.splitlines() if line not in imports]
    code = "\n".join(
        ["import asyncio", *imports, "async def main() -> None:"]
        + ["    " + line for line in body]
        + ["    print('warnings:', [entry.text for entry in warnings])", "asyncio.run(main())"]
    )
    returncode, output = await run_example(code, browser_path)
    assert returncode == 0, output
    assert "warnings: ['low disk']" in output, output


def test_the_readme_library_example_is_typed_for_mypy_strict(tmp_path: Path) -> None:
    # `re.search(...)[1]` failed mypy --strict ("Match[str] | None" is not indexable).
    script = tmp_path / "example.py"
    script.write_text(library_example())
    said = mypy_strict(script)
    assert "Success: no issues found" in said, said
