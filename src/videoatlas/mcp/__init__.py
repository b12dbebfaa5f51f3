"""``videoatlas mcp``: the agents as tools of an MCP server, for assistant tools (Claude Desktop, IDEs, agents).

Built on the official ``mcp`` SDK: :mod:`.tools` is what each tool does (plain async functions over a
:class:`~.tools.Service`), :mod:`.roots` the folders the server may open files under, :mod:`.server`
the MCP server that exposes the tools over stdio or streamable HTTP.
"""
