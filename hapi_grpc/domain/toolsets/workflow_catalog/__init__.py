"""The `workflow_catalog` tools: search the catalog, validate parameters; built by the
engine itself, since its session feeds the final check and the selection gate."""
