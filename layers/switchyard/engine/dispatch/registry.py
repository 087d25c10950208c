"""Which code runs a Task: `${AgentStepFunctionArn}` → `functions/agent_step/handler.py:handler`.

The registry resolves a Task's function (a placeholder name, a function name or a Lambda ARN) to a
handler called in-process. Handlers load lazily from the functions directory; tests and
benchmarks may register any callable. Pure platform functions (run_start, render) run inline,
inside the transition that schedules them, which saves a round trip per run.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from switchyard.contract.resources import function_for_placeholder

Handler = Callable[[Any, Any], Any]

FUNCTIONS_DIR_ENV = "SWITCHYARD_FUNCTIONS_DIR"
INLINE_FUNCTIONS = frozenset({"run_start", "render"})
DEFAULT_CONCURRENCY = {"agent_step": 32, "tool_step": 64, "router_step": 32, "approval_notify": 16}
_PLACEHOLDER = re.compile(r"^\$\{([A-Za-z0-9]+)\}$")


@dataclass
class FunctionSpec:
    name: str
    handler: Handler
    inline: bool = False
    concurrency: int = 16
    """Most invocations at once, like Lambda's reserved concurrency."""
    timeout_seconds: float = 900.0


def default_functions_dir() -> Path | None:
    """`$SWITCHYARD_FUNCTIONS_DIR`, else a `functions/` folder beside the library or the cwd."""
    configured = os.environ.get(FUNCTIONS_DIR_ENV)
    if configured:
        return Path(configured)
    here = Path(__file__).resolve()
    for candidate in (here.parents[4] / "functions", Path.cwd() / "functions"):
        if candidate.is_dir():
            return candidate
    return None


class FunctionRegistry:
    def __init__(self, directory: Path | None = None) -> None:
        self._directory = directory if directory is not None else default_functions_dir()
        self._specs: dict[str, FunctionSpec] = {}
        self._lock = threading.Lock()

    def register(
        self,
        name: str,
        handler: Handler,
        *,
        inline: bool | None = None,
        concurrency: int | None = None,
        timeout_seconds: float = 900.0,
    ) -> None:
        self._specs[name] = FunctionSpec(
            name,
            handler,
            inline=name in INLINE_FUNCTIONS if inline is None else inline,
            concurrency=concurrency or DEFAULT_CONCURRENCY.get(name, 16),
            timeout_seconds=timeout_seconds,
        )

    def resolve(self, reference: str) -> FunctionSpec | None:
        """The function a `FunctionName` or Lambda ARN names, loading it on first use."""
        name = function_name(reference)
        spec = self._specs.get(name)
        if spec is not None:
            return spec
        with self._lock:
            spec = self._specs.get(name)
            if spec is None:
                handler = self._load(name)
                if handler is None:
                    return None
                self.register(name, handler)
                spec = self._specs[name]
        return spec

    def _load(self, name: str) -> Handler | None:
        if self._directory is None:
            return None
        path = self._directory / name / "handler.py"
        if not path.is_file():
            return None
        module_name = f"switchyard_functions.{name}.handler"
        loaded = sys.modules.get(module_name)
        if loaded is not None and getattr(loaded, "__file__", None) == str(path):
            handler = getattr(loaded, "handler", None)  # a handler module loads once per process
            return handler if callable(handler) else None
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)  # a handler's own small modules sit beside it
        spec.loader.exec_module(module)
        handler = getattr(module, "handler", None)
        return handler if callable(handler) else None


@lru_cache(maxsize=4096)
def function_name(reference: str) -> str:
    """`agent_step` from `${AgentStepFunctionArn}`, `AgentStepFunctionArn`, an ARN or a name."""
    match = _PLACEHOLDER.match(reference)
    if match:
        reference = match.group(1)
    placeholder = function_for_placeholder(reference)
    if placeholder is not None:
        return placeholder.value
    if reference.startswith("arn:aws:lambda:"):
        parts = reference.split(":")
        return parts[6] if len(parts) > 6 else reference
    return reference.split(":")[0]
