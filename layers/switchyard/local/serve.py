"""The local engine as a process, with switchyard's hooks (run records, model scripts):

    python -m switchyard.local.serve [--database-url URL] [--sfn-port 8083] [--functions-dir DIR]

`switchyard.local.background` is the same with the local triggers."""

from __future__ import annotations

import sys

from switchyard.local.stack import serve_engine

if __name__ == "__main__":
    sys.exit(serve_engine())
