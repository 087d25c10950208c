"""One module per kind of step: how each becomes states."""
