"""Generate large, realistic workflow files for the benchmarks.

Layers of agent and tool steps, each depending on one or two steps of the layer before, with
conditions, templates and output schemas, so that every check of the validator and every
construct of the compiler has work to do.
"""

from __future__ import annotations

import random

import yaml


def synthetic_workflow(steps: int = 1000, *, width: int = 4, seed: int = 7) -> str:
    rng = random.Random(seed)
    lines = [
        "switchyard: 1",
        f"name: synthetic-{steps}",
        "version: 1",
        "inputs:",
        "  topic: {type: string}",
        "  limit: {type: integer, default: 3}",
        "defaults: {model: claude-haiku-4-5, timeout: 60s}",
        "steps:",
    ]
    layer: list[str] = []
    previous: list[str] = []
    for index in range(steps):
        step_id = f"s{index:04d}"
        deps = (
            sorted(rng.sample(previous, k=min(len(previous), rng.choice((1, 1, 2)))))
            if previous
            else []
        )
        spec: dict[str, object]
        if index % 3 == 0:
            spec = {
                "type": "agent",
                "prompt": "Summarise {{ inputs.topic }} given "
                + " and ".join(
                    f"{{{{ steps.{d}.output.{_field(d)} | default('') }}}}" for d in deps
                ),
                "output_schema": None,
            }
            spec.pop("output_schema")
        elif index % 3 == 1:
            spec = {
                "type": "agent",
                "prompt": "Score {{ inputs.topic }}",
                "output_schema": {
                    "type": "object",
                    "properties": {"score": {"type": "number"}, "label": {"type": "string"}},
                    "required": ["score", "label"],
                },
                "retry": {"max_attempts": 4, "backoff": "exponential", "base_delay": "1s"},
            }
        else:
            spec = {
                "type": "tool",
                "tool": "http.request",
                "args": {"method": "GET", "url": "https://api.example.com/{{ run.id }}/" + step_id},
            }
        if deps:
            spec = {"after": deps, **spec}
            scored = [d for d in deps if int(d[1:]) % 3 == 1]
            if scored and rng.random() < 0.5:
                spec["when"] = f"steps.{scored[0]}.output.score > 0.5"
        lines.append(f"  {step_id}:")
        for text in yaml.safe_dump(spec, sort_keys=False, width=200).splitlines():
            lines.append(f"    {text}")
        layer.append(step_id)
        if len(layer) == width:
            previous, layer = layer, []
    return "\n".join(lines) + "\n"


def _field(step_id: str) -> str:
    """The output field that a step made by `synthetic_workflow` certainly has."""
    return ("text", "label", "body")[int(step_id[1:]) % 3]
