"""Adapters of code that executes tools (agent frameworks, tool runners, MCP servers): each
execution becomes an ``execute_tool`` span linked to its streamed call when that call completed."""
