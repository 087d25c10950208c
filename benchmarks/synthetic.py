"""Generate large, realistic workflow files for the benchmarks.

`shape="blocks"` (the default) nests fan-out/fan-in blocks the way real workflows do (a step, then
two to four branches side by side, then a join), with a cross dependency now and then that makes
the DAG not series-parallel. `shape="layers"` is a stress test: every step depends on one or two
random steps of the layer before, which is as far from series-parallel as DAGs get.

Steps are agents and tools with conditions, templates and output schemas, so every check of the
validator and every construct of the compiler has work to do.

The workflow must also fit one run's state (256 KB, validate/payload_size.py): its inputs are
bounded, and the agents' outputs are small closed objects (`SUMMARY_LENGTH`), so that the
tools' outputs, which the output store takes beyond 512 bytes each, leave room for them. A
thousand steps of unbounded outputs cannot share one state (each keeps at least a reference to
the output store), and the validator refuses them (`payload_size`).
"""

from __future__ import annotations

import random
from typing import Any

import yaml

SUMMARY_LENGTH = 24
"""The longest summary a generated agent answers (its output is checked against it)."""


def synthetic_workflow(steps: int = 1000, *, shape: str = "blocks", seed: int = 7) -> str:
    rng = random.Random(seed)
    builder = _Builder(rng)
    if shape == "layers":
        builder.layers(steps)
    else:
        builder.blocks(steps)
    header = [
        "switchyard: 1",
        f"name: synthetic-{steps}",
        "version: 1",
        "inputs:",
        "  topic: {type: string, maxLength: 200}",
        "  limit: {type: integer, default: 3}",
        "defaults: {model: claude-haiku-4-5, timeout: 60s}",
        "steps:",
    ]
    body: list[str] = []
    for step_id, spec in builder.specs.items():
        body.append(f"  {step_id}:")
        body += [
            f"    {line}" for line in yaml.safe_dump(spec, sort_keys=False, width=200).splitlines()
        ]
    return "\n".join(header + body) + "\n"


def _field(step_id: str) -> str:
    """The output field that a generated step certainly has."""
    return ("text", "label", "body")[int(step_id[1:]) % 3]


class _Builder:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.specs: dict[str, dict[str, Any]] = {}

    def add(self, deps: list[str]) -> str:
        index = len(self.specs)
        step_id = f"s{index:04d}"
        spec: dict[str, Any]
        if index % 3 == 0:
            spec = {
                "type": "agent",
                "prompt": "Summarise {{ inputs.topic }} given "
                + " and ".join(
                    f"{{{{ steps.{d}.output.{_field(d)} | default('') }}}}" for d in deps
                ),
                "output_schema": {
                    "type": "object",
                    "properties": {"text": {"type": "string", "maxLength": SUMMARY_LENGTH}},
                    "required": ["text"],
                    "additionalProperties": False,
                },
            }
        elif index % 3 == 1:
            spec = {
                "type": "agent",
                "prompt": "Score {{ inputs.topic }}",
                "output_schema": {
                    "type": "object",
                    "properties": {
                        "score": {"type": "number"},
                        "label": {"type": "string", "enum": ["keep", f"drop-{index}"]},
                    },
                    "required": ["score", "label"],
                    "additionalProperties": False,
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
            spec = {"after": sorted(set(deps)), **spec}
            scored = [d for d in deps if int(d[1:]) % 3 == 1]
            if scored and self.rng.random() < 0.5:
                spec["when"] = f"steps.{scored[0]}.output.score > 0.5"
        self.specs[step_id] = spec
        return step_id

    def blocks(self, total: int) -> None:
        """Series of fan-out/fan-in blocks until `total` steps exist."""
        tails = [self.add([])]
        while len(self.specs) < total:
            tails = self._block(tails, total, depth=0)

    def _block(self, heads: list[str], total: int, depth: int) -> list[str]:
        if depth >= 2 or self.rng.random() < 0.4 or len(self.specs) + 4 > total:
            return [self.add(heads)]
        ends: list[str] = []
        branches = [self._block(heads, total, depth + 1) for _ in range(self.rng.randint(2, 4))]
        for branch in branches:
            ends += branch
        if self.rng.random() < 0.05 and len(branches) >= 2:  # now and then, a cross dependency
            self.specs[branches[1][0]].setdefault("after", [])
            self.specs[branches[1][0]]["after"] = sorted(
                {*self.specs[branches[1][0]]["after"], *branches[0]}
            )
        return [self.add(ends)] if len(self.specs) < total else ends

    def layers(self, total: int, width: int = 4) -> None:
        previous: list[str] = []
        layer: list[str] = []
        while len(self.specs) < total:
            picks = self.rng.choice((1, 1, 2))
            deps = self.rng.sample(previous, k=min(len(previous), picks)) if previous else []
            layer.append(self.add(deps))
            if len(layer) == width:
                previous, layer = layer, []
