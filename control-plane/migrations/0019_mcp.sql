-- An API's MCP server as its provider set it (JSON: whether it is served, and each
-- operation's tool name, description and whether it is a tool); NULL: never set, not
-- served.
ALTER TABLE apis ADD COLUMN mcp TEXT;
