"""Secrets an agent may type without ever seeing them: `{{NAME}}` placeholders and masking.

    secrets = Secrets.from_dotenv("secrets.env")     # PASSWORD=hunter22
    secrets.expand("{{PASSWORD}}")                     # 'hunter22', typed into the page
    secrets.mask("logged in with hunter22")            # 'logged in with {{PASSWORD}}'

A front end expands placeholders in what it types and masks every text it shows (snapshots,
telemetry, logs), so a value never travels back to the model.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_LINE = re.compile(r"\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*")
# A value is masked wherever it appears; a shorter one would be found inside tab ids, numbers
# and words of every response ("tab 12" with a secret "1") and garble them.
MIN_LENGTH = 4


class Secrets:
    """Named secret values: expands `{{NAME}}` placeholders, masks values back to placeholders."""

    def __init__(self, values: Mapping[str, str] | None = None) -> None:
        self._values = dict(values or {})
        empty = [name for name, value in self._values.items() if not value]
        if empty:
            raise ValueError(f"secret {', '.join(empty)} is empty: give it a value or remove it")
        short = [name for name, value in self._values.items() if len(value) < MIN_LENGTH]
        if short:
            raise ValueError(
                f"secret {', '.join(short)} is shorter than {MIN_LENGTH} characters: every response "
                "masks a secret wherever its value appears, and one this short would garble tab ids, "
                "numbers and words; type such a value as plain text instead"
            )
        # Longest first, so a value that contains another is masked whole.
        self._masks = sorted(self._values.items(), key=lambda item: -len(item[1]))

    def __repr__(self) -> str:
        return f"<Secrets {', '.join(self._values) or 'none'}>"  # the names only, never a value

    @classmethod
    def from_dotenv(cls, path: str | Path) -> Secrets:
        """Read NAME=value lines (dotenv: `#` comments, optional `export`, single or double quotes)."""
        values: dict[str, str] = {}
        text = Path(path).expanduser().read_text(encoding="utf-8")
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            match = _LINE.fullmatch(line)
            if match is None:
                raise ValueError(f"{path}, line {number}: not NAME=value")
            name, value = match.groups()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
                if line.strip()[-1] == '"':
                    value = value.replace("\\n", "\n").replace('\\"', '"')
            else:
                value = re.sub(r"\s+#.*$", "", value)  # an unquoted value ends at a comment
            values[name] = value
        return cls(values)

    @property
    def names(self) -> list[str]:
        return sorted(self._values)

    def __bool__(self) -> bool:
        return bool(self._values)

    def expand(self, text: str) -> str:
        """`text` with each `{{NAME}}` replaced by its value; an unknown name is an error."""
        if not self._values:
            return text

        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self._values:
                known = ", ".join(self.names)
                raise ValueError(f"{{{{{name}}}}} names no secret; the secrets are: {known}")
            return self._values[name]

        return _PLACEHOLDER.sub(value, text)

    def expand_all(self, value: Any) -> Any:
        """`expand` applied to every string in a JSON-like value (lists, dicts)."""
        if isinstance(value, str):
            return self.expand(value)
        if isinstance(value, list | tuple):
            return type(value)(self.expand_all(v) for v in value)
        if isinstance(value, dict):
            return {k: self.expand_all(v) for k, v in value.items()}
        return value

    def mask(self, text: str) -> str:
        """`text` with every secret value replaced by its placeholder."""
        for name, value in self._masks:
            if value in text:
                text = text.replace(value, f"{{{{{name}}}}}")
        return text

    def mask_all(self, value: Any) -> Any:
        """`mask` applied to every string in a JSON-like value (lists, dicts, their keys too)."""
        if not self._values:
            return value
        if isinstance(value, str):
            return self.mask(value)
        if isinstance(value, list | tuple):
            return type(value)(self.mask_all(v) for v in value)
        if isinstance(value, dict):
            return {self.mask_all(k): self.mask_all(v) for k, v in value.items()}
        return value
