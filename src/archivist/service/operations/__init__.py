"""The service's operations as plain async functions over `ServiceState`: the routes, MCP and
tests call them; they return records and raise typed errors, never HTTP answers."""
