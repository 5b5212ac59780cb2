"""tabpilot: control a real browser with many tabs, and never lose one.

The library is the core; the MCP server (`tabpilot.server`) uses only these names.

The names (listed in `_api`) are loaded on first use (PEP 562): `import tabpilot` alone imports
none of the library (Playwright, most of it), so the `tabpilot` command's entry
(`__main__.main`) is reached at once and a Ctrl-C while the rest loads ends it without a
traceback. `from tabpilot import X`, `tabpilot.X` and `from tabpilot import *` work as before,
and type checkers read the names from `_api`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._api import *  # noqa: F403
    from ._api import __all__ as __all__
else:

    def _names() -> Any:
        return importlib.import_module("tabpilot._api")  # the module holding every public name

    def __getattr__(name: str) -> Any:
        # Not a private name: a submodule the import system asks about (`_api` itself, as it loads).
        if name.startswith("_") and not name.endswith("__"):
            raise AttributeError(f"module 'tabpilot' has no attribute {name!r}")
        api = _names()
        if name != "__all__" and name not in api.__all__:
            raise AttributeError(f"module 'tabpilot' has no attribute {name!r}")
        value = getattr(api, name)
        globals()[name] = value  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *_names().__all__})
