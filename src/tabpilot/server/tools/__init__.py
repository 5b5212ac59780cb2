"""The default tool set's tools, one module per family; each module ends with `TOOLS: list[ToolSpec]`.

To add a tool family: write `server/tools/<family>.py` like `tabs.py` or `navigate.py` (read
`base.py` for `ToolSpec`, `Call` and what the wrapper does for you), then add its `TOOLS` to a set
in `server/registry.py`.
"""
