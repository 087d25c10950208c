"""Each store imports on its own, before the runtime (no import cycle through runtime errors)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "switchyard.stores.budget",
        "switchyard.stores.idempotency",
        "switchyard.stores.audit",
        "switchyard.stores.tool_calls",
        "switchyard.runtime.errors",
    ],
)
def test_module_imports_first(module: str) -> None:
    subprocess.run([sys.executable, "-c", f"import {module}"], check=True)
