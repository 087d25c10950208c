"""The platform's constructs, one per concern (docs/deploy.md lists what each owns)."""
