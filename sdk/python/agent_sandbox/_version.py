"""The SDK's version (the package metadata reads it from here too)."""

__version__ = "0.1.0"
