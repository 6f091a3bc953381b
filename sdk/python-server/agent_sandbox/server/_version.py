"""The server SDK's version: always the client's (tests/sdk/server checks they agree)."""

__version__ = "0.1.0"
