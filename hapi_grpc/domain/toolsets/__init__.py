"""Toolsets: the tools an investigation offers the model.

- `tool.py`: one tool (name, description, pydantic argument model, `run`).
- `toolset.py`: a named group of tools with its own limits.
- `dispatcher.py`: runs tool calls; owns what every tool shares.
- `workflow_catalog.py`: the first toolset (search, validate parameters),
  over `catalog_session.py` (search context, returned workflows, the guarded
  catalog call) and `validation_ledger.py` (the shared validation budget).
"""
