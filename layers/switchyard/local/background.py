"""The background engine: `switchyard engine start`, and the engine `switchyard run --detach`,
`approve` and the other one-off commands start when none runs.

    python -m switchyard.local.background [--database-url URL] [--sfn-port 8083]

The engine process of `switchyard.local.serve` (it waits for the database's engine lock, then
runs the engine and its command listener) with the local triggers that need no HTTP server: it
fires the schedules and reads the queues of the workflows installed in its database. Webhooks and
EventBridge events arrive over HTTP, which `switchyard dev` serves (docs/triggers.md).
"""

from __future__ import annotations

import sys

from switchyard.local.stack import serve_engine
from switchyard.local.triggers.runtime import background_triggers


def main(argv: list[str] | None = None) -> int:
    return serve_engine(
        argv, extra_servers=[background_triggers], prog="python -m switchyard.local.background"
    )


if __name__ == "__main__":
    sys.exit(main())
