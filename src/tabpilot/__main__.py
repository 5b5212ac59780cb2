"""`python -m tabpilot ...` is `tabpilot ...`; `main` is the command's entry (pyproject's script).

It imports the command (and with it the library and Playwright, about 0.3 s) inside its own
`except KeyboardInterrupt`: a Ctrl-C in those first moments ends it with status 130, as one while
the server starts does, instead of a traceback. The package itself loads nothing at import
(`tabpilot.__init__`), so this is reached at once.
"""

from __future__ import annotations

import sys


def main() -> int:
    try:
        from .cli import main as run

        return run()
    except KeyboardInterrupt:  # Ctrl-C while Python loads the command
        return 130  # as `cli.main` ends after a Ctrl-C while the server starts


if __name__ == "__main__":
    sys.exit(main())
