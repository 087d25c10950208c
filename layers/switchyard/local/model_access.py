"""Whether a run on one machine can answer its agent steps: from a model script, or from a
provider whose credentials are set. `switchyard run` and the REST API refuse a run that could do
neither before it starts, rather than let it fail at its first agent step."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from switchyard.constants import API_KEY_ENV
from switchyard.model import AgentBody, LlmRouter, LoopStep, MapStep, Workflow

CREDENTIAL_ENVS = (API_KEY_ENV, "SWITCHYARD_ANTHROPIC_SECRET", "AWS_ACCESS_KEY_ID", "AWS_PROFILE")


def needs_model(workflows: Iterable[Workflow]) -> bool:
    """True when a workflow has an agent step or an LLM router (inside maps and loops too)."""
    for workflow in workflows:
        for step in workflow.steps.values():
            body = step.step if isinstance(step, MapStep | LoopStep) else step
            if isinstance(body, AgentBody | LlmRouter):
                return True
    return False


def has_model_credentials(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    return any(env.get(name) for name in CREDENTIAL_ENVS)
