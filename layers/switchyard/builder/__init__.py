"""The visual builder's server side: the workflow files' source (read, and written only when it
did not change on disk), the validator and compiler on a source sent as text, round-trip YAML
edits, and installing a saved file. docs/builder.md."""

from switchyard.builder.routes import builder_router

__all__ = ["builder_router"]
