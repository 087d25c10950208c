"""The one Jinja2 environment that renders and checks templates: sandboxed, strict."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment


@lru_cache(maxsize=1)
def template_environment() -> ImmutableSandboxedEnvironment:
    """Sandboxed (no attribute tricks), immutable, and undefined names are errors."""
    env = ImmutableSandboxedEnvironment(
        undefined=StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
    )
    env.policies["json.dumps_kwargs"] = {"sort_keys": False, "ensure_ascii": False}
    return env
