"""The example workflows as the end-to-end tests run them: their inputs, their scripted answers,
and what a run of each must produce (on moto's interpreter and on the local engine alike).

Expected outputs and usage are read from the scripts where the script decides them (a brief's
title, a step's tokens), so a reworded script does not break the tests; the cost is priced from
the model catalog, never taken from the run.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from switchyard.runtime.models_catalog import default_catalog
from switchyard.runtime.providers import load_script
from tests.conftest import WORKFLOWS

EXAMPLES = ("customer-support", "document-processing", "content-moderation")
CHILDREN = {"document-processing": ("summarize-document",)}

MODELS: dict[str, dict[str, str]] = {
    "customer-support": {
        "classify": "claude-haiku-4-5",
        "research": "claude-sonnet-4-5",
        "draft": "claude-sonnet-4-5",
    },
    "document-processing": {"brief": "claude-sonnet-4-5"},
    "summarize-document": {"summarize": "claude-haiku-4-5"},
    "content-moderation": {
        "score": "claude-haiku-4-5",
        "borderline": "claude-sonnet-4-5",
        "refine": "claude-haiku-4-5",
    },
}
"""Per workflow, the steps that call a model and the model each calls (by the workflow file)."""

APPROVALS = {"customer-support": ("approve",)}
"""The human gates each example's happy path passes (approved)."""

STEP_STATUSES: dict[str, dict[str, str]] = {
    "customer-support": {
        "classify": "completed",
        "research": "completed",
        "fetch_history": "completed",
        "draft": "completed",
        "approve": "completed",
        "send": "completed",
    },
    "document-processing": {
        "summarize_each": "completed",
        "brief": "completed",
        "file_brief": "completed",
        "notify": "completed",
    },
    "content-moderation": {
        "score": "completed",
        "triage": "completed",
        "borderline": "completed",
        "refine": "completed",
        "publish": "completed",
        "human_review": "skipped",
        "block": "skipped",
    },
}
"""The status of each step at the end of the example's run (its scripted path)."""


def workflow_path(name: str) -> Path:
    return WORKFLOWS / f"{name}.yaml"


def script_path(name: str) -> Path:
    return WORKFLOWS / "scripts" / f"{name}.yaml"


def input_path(name: str) -> Path:
    return WORKFLOWS / "inputs" / f"{name}.json"


def run_input(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(input_path(name).read_text())
    return data


def script(name: str) -> dict[str, list[dict[str, Any]]]:
    return load_script(script_path(name))


def expected_child_runs(name: str) -> int:
    """How many sub-workflow runs the example starts: one per document."""
    return len(run_input(name)["documents"]) if name == "document-processing" else 0


def expected_output(name: str) -> Any:
    """The run's output: what the workflow's `outputs` make of the scripted answers."""
    answers = script(name)
    if name == "customer-support":  # no `outputs`: the last step's output
        return {"send": answers["send"][0]["output"]}
    if name == "document-processing":
        brief = answers["brief"][0]["output"]
        batch = run_input(name)["batch_id"]
        return {
            "title": brief["title"],
            "risks": brief["risks"],
            "location": f"s3://legal-briefs/briefs/{batch}.json",
        }
    if name == "content-moderation":
        return {"decision": "published", "toxicity": answers["score"][0]["output"]["toxicity"]}
    raise KeyError(name)


def expected_model_calls(example: str, workflow: str) -> dict[str, list[tuple[str, int, int]]]:
    """Per model step of `workflow` (the example or its child): (model, input tokens, output
    tokens) of each call the happy path makes, in order. A loop makes one call per iteration,
    until its `until` holds."""
    answers = script(example)
    calls: dict[str, list[tuple[str, int, int]]] = {}
    for step_id, model in MODELS[workflow].items():
        entries = answers[step_id]
        if step_id == "refine":  # until: output.toxicity < 0.3
            done = next(n for n, e in enumerate(entries) if e["output"]["toxicity"] < 0.3)
            entries = entries[: done + 1]
        else:
            entries = entries[:1]
        calls[step_id] = [(model, e["input_tokens"], e["output_tokens"]) for e in entries]
    return calls


def price(model: str, input_tokens: int, output_tokens: int) -> Decimal:
    """USD of one call, from the model catalog."""
    return default_catalog().get(model).cost(input_tokens=input_tokens, output_tokens=output_tokens)
