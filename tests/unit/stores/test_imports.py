"""The stores sit below the step runtime: each imports without loading any of it (their errors
come from `switchyard.contract.step_errors`), so there is no stores <-> runtime import cycle."""

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
        "switchyard.stores.quota",
        "switchyard.stores.breaker",
    ],
)
def test_store_imports_without_the_runtime(module: str) -> None:
    check = (
        f"import sys, {module}\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('switchyard.runtime'))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", check], check=True)
