"""One module per state type: what entering it does, as an explicit outcome."""
