"""Tools as the investigation core runs them.

`tool.py` (one tool: name, description, pydantic argument model, `run`; reader
failures answered to the model),
`toolset.py` (a named group of tools with its own limits, as an investigation
offers it), `dispatcher.py` (runs tool calls; owns what every tool shares),
`shared_texts`, `jsontext`, `arguments_gen` (argument models
generated from tools.proto). The workflow catalog's tools (`workflow_catalog`)
are the engine's own; every other toolset is a package of `hapi_grpc/toolsets/`,
which the core never imports: the composition root opens them and hands their
sources over.
"""
