"""The agent's side of the workflows: `predictorx mcp` (the MCP tools a task's agent calls, each one
HTTP request with the task token) and the task-start sweep rendered as prompt text. It reaches the
server only over HTTP (an import contract in pyproject.toml)."""
