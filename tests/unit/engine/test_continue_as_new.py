"""Step Functions' 25,000-event history limit on a compiled loop, on the engine: a segment too
long for it fails with `States.Runtime` as on AWS (the compiler warned), and the same loop
handed on in shorter segments runs to its end."""

from __future__ import annotations

import pytest

from switchyard.compile import compile_workflow
from switchyard.contract import continued_to
from switchyard.diagnostics import Code
from switchyard.engine.commands import StartExecution
from switchyard.local.stack import local_engine
from switchyard.model import Workflow
from switchyard.source import load_document
from switchyard.validate import validate_document
from tests.scenarios.harness.engine_runner import install, scripted_registry
from tests.scenarios.harness.scenario import Scenario
from tests.scenarios.harness.scripted import ScriptedFunctions

LOOP = """
switchyard: 1
name: runaway-AFTER
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  grind:
    type: loop
    max_iterations: 3000
    continue_as_new: {after: AFTER}
    step: {type: agent, prompt: "again"}
"""


def _workflow(after: int) -> Workflow:
    text = LOOP.replace("AFTER", str(after))
    result = validate_document(load_document(text, file="runaway.yaml"))
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return result.workflow


def _run(conninfo: str, after: int) -> list[tuple[str, str | None, str | None]]:
    """(status, error, cause) of each segment, in order."""
    workflow = _workflow(after)
    script = {"grind": [{"text": "x"}]}
    scenario = Scenario(f"runaway-{after}", "", workflow, [], {}, script, {}, {})
    engine = local_engine(conninfo, registry=scripted_registry(ScriptedFunctions(scenario.script)))
    engine.start()
    segments = []
    try:
        arn = install(engine, scenario, f"h{after}")
        execution = engine.submit(StartExecution(arn, f"run-{after}", {}))["executionArn"]
        while execution:
            assert engine.wait(execution, timeout=300) != "RUNNING"
            with engine.read() as store:
                row = store.execution_row(arn=execution)
            assert row is not None
            segments.append((row.status, row.error, row.cause))
            handed = continued_to(row.output)
            execution = handed["execution_arn"] if handed else ""
    finally:
        engine.close()
    return segments


@pytest.mark.slow  # two loops of 1,500 and 3,000 iterations through the engine: about 70 s
def test_a_segment_past_25000_events_fails_and_shorter_segments_finish(pg_conninfo: str) -> None:
    notes = compile_workflow(_workflow(2999)).notes
    assert [n.code for n in notes if n.code is Code.HISTORY_LIMIT] == [Code.HISTORY_LIMIT]
    too_long = _run(pg_conninfo, 2999)
    assert too_long == [
        (
            "FAILED",
            "States.Runtime",
            "The execution reached the maximum number of history events (25000).",
        )
    ]
    handed_on = _run(pg_conninfo, 1500)
    assert [s[0] for s in handed_on] == ["SUCCEEDED"] * 2
