"""Micro-benchmarks of the engine's pure ASL primitives (not a CI test).

    .venv/bin/python benchmarks/asl_primitives.py

Prints the median and p99 time per call, in microseconds, for what the interpreter does on every
state transition: paths, a typical Parameters template, ResultPath, a Choice, an intrinsic call,
and parsing a compiled state machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from switchyard.engine.asl import (
    PayloadTemplate,
    apply_result_path,
    choose,
    compile_path,
    compile_reference_path,
    evaluate_intrinsic,
    parse_definition,
    parse_intrinsic,
)
from switchyard.engine.asl.choice_rules import parse_choice

ROOT = Path(__file__).resolve().parent.parent
DATA: dict[str, Any] = {
    "run": {"id": "r-1", "workflow": "support"},
    "inputs": {"question": "Where is my order?", "customer_id": "c-42"},
    "steps": {
        "classify": {"output": {"label": "shipping", "score": 0.93}, "attempts": 1},
        "lookup": {"output": {"orders": [{"id": "o-1", "status": "shipped"}]}},
    },
    "budget": {"remaining_usd": 1.25},
}
CONTEXT: dict[str, Any] = {
    "Execution": {"Id": "arn:aws:states:::execution:m:e", "Name": "e"},
    "State": {"Name": "Answer", "EnteredTime": "2026-01-01T00:00:00.000Z", "RetryCount": 0},
    "Task": {"Token": "token"},
}
TEN_FIELD_TEMPLATE = {
    "run_id.$": "$.run.id",
    "workflow.$": "$.run.workflow",
    "question.$": "$.inputs.question",
    "customer.$": "$.inputs.customer_id",
    "label.$": "$.steps.classify.output.label",
    "orders.$": "$.steps.lookup.output.orders",
    "first_order.$": "$.steps.lookup.output.orders[0].id",
    "step.$": "$$.State.Name",
    "token.$": "$$.Task.Token",
    "key.$": "States.Format('{}:{}', $.run.id, $$.State.Name)",
    "config": {"model": "claude", "max_tokens": 1024},
}


def measure(name: str, call: Callable[[], Any], *, batch: int = 200, rounds: int = 200) -> None:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(batch):
            call()
        samples.append((time.perf_counter_ns() - start) / batch / 1000)
    samples.sort()
    p50, p99 = statistics.median(samples), samples[int(len(samples) * 0.99) - 1]
    print(f"{name:<52} p50 {p50:8.2f} us   p99 {p99:8.2f} us")


def main() -> None:
    reference = compile_path("$.steps.classify.output.label")
    query = compile_path("$.steps.lookup.output.orders[*].id")
    template = PayloadTemplate.compile(TEN_FIELD_TEMPLATE)
    result_path = compile_reference_path("$.steps.answer.output")
    choices = [
        parse_choice(
            {"Variable": "$.budget.remaining_usd", "NumericLessThan": 0.1, "Next": "A"}, ""
        ),
        parse_choice(
            {"Variable": "$.steps.classify.output.label", "StringEquals": "billing", "Next": "B"},
            "",
        ),
        parse_choice(
            {
                "And": [
                    {"Variable": "$.steps.classify.output.score", "NumericGreaterThanEquals": 0.9},
                    {"Variable": "$.steps.classify.output.label", "StringMatches": "ship*"},
                ],
                "Next": "C",
            },
            "",
        ),
    ]
    call = parse_intrinsic("States.Format('{}:{}', $.run.id, $$.State.Name)")
    machine_text = (ROOT / "statemachines" / "customer-support.asl.json").read_text()

    measure("compile_path (cached)", lambda: compile_path("$.steps.classify.output.label"))
    measure("reference path evaluate (5 steps)", lambda: reference.evaluate(DATA))
    measure("query path evaluate ([*] over 1 item)", lambda: query.evaluate(DATA))
    measure(
        "Parameters template, 10 '.$' fields + static", lambda: template.evaluate(DATA, CONTEXT)
    )
    measure(
        "ResultPath $.steps.answer.output", lambda: apply_result_path(result_path, DATA, {"a": 1})
    )
    measure("Choice, 3 rules (third matches)", lambda: choose(choices, "D", DATA, CONTEXT))
    measure(
        "States.Format with a path and a context path",
        lambda: evaluate_intrinsic(call, DATA, CONTEXT),
    )
    measure(
        "parse_definition(customer-support.asl.json)",
        lambda: parse_definition(machine_text),
        batch=5,
        rounds=40,
    )


if __name__ == "__main__":
    main()
