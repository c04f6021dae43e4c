"""MCP: a call carried in ``params._meta`` to the server that runs the tool."""
