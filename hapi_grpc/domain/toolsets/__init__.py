"""Toolsets: the tools an investigation offers the model.

Shared machinery lives here: `tool.py` (one tool: name, description, pydantic
argument model, `run`), `toolset.py` (a named group of tools with its own
limits), `dispatcher.py` (runs tool calls; owns what every tool shares),
`shared_texts`, `failure_answers`, `jsontext`.

Each toolset is one package (`workflow_catalog`, `kubernetes`, `prometheus`,
`alertmanager`, `mcp`) holding its tools, argument models, port and views.
"""
