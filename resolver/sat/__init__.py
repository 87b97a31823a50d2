"""sat of resolver."""
