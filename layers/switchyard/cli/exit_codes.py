"""Exit codes of the `switchyard` command (docs/cli.md). Scripts depend on them."""

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    """The run failed, was cancelled or timed out, or validation found problems."""
    USAGE = 2
    """Usage error, unreadable or unparsable file, invalid run input."""
    WAITING = 3
    """The run waits for a human or is paused and the command did not wait."""
