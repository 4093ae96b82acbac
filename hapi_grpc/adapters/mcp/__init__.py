"""Tools from MCP servers: configuration, connections and a manager that exposes them."""
