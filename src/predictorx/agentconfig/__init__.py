"""An agent's configuration as both sides read it: which ACP agents a command line names
(acp_profiles) and its own MCP servers (mcpconfig). The server checks them when an agent is
created or changed; the daemon's adapters use them when a run starts. They live outside agents/
because importing anything of that package registers every adapter (its __init__), which the
server has no use for (tests/api/test_server_imports.py; an import-linter contract)."""
