"""catalog of resolver."""
