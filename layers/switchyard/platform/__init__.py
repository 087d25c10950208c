"""The platform's own functions, behind the handlers in `functions/`: run_start and render."""
