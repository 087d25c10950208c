"""The `switchyard` command as a user runs it: a subprocess, with an environment of its own (a
fresh database, a home directory, no model key or script from the developer's shell)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.pg import fresh_database


def switchyard(
    env: dict[str, str], *args: str, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "switchyard"
    return subprocess.run(
        [str(script), *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@contextmanager
def cli_environment(home: Path, **extra: str) -> Iterator[dict[str, str]]:
    """The CLI's environment on a fresh database; the engine it starts is stopped afterwards."""
    with fresh_database() as conninfo:
        environment = {
            **os.environ,
            "DATABASE_URL": conninfo,
            "SWITCHYARD_HOME": str(home),
            **extra,
        }
        environment.pop("ANTHROPIC_API_KEY", None)
        environment.pop("SWITCHYARD_LLM_SCRIPT", None)
        yield environment
        switchyard(environment, "engine", "stop")
