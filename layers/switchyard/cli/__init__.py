"""The `switchyard` command: a thin layer over the library (docs/cli.md)."""
