"""Investigation toolsets, one package each, registered by class (`registry.TOOLSETS`).

A package holds its settings and its `ToolsetPlugin` subclass (`__init__.py`,
cheap to import), its client, its tools and how they fill the observed record;
`base` is what every toolset is, `registry` the list and the opening of the
configured ones. The investigation core (`hapi_grpc/domain`) never imports them.
"""
