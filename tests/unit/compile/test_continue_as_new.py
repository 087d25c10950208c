"""The compiled form of a loop with `continue_as_new`: valid ASL, a run_start that hands a
continued segment's state back, a `resume?` Choice into the loop, and the hand-over states."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from switchyard.compile import compile_workflow
from switchyard.diagnostics import Code
from switchyard.model import Workflow
from switchyard.source import load_document
from switchyard.validate import validate_document
from tests.unit.compile.test_compiler import ASL_VALIDATOR

LOOP = """
switchyard: 1
name: long-loop
version: 1
defaults: {model: claude-haiku-4-5}
steps:
  prep: {type: agent, prompt: "prep"}
  refine:
    type: loop
    after: [prep]
    max_iterations: 100000
    timeout: 1h
    until: output.done == true
    continue_as_new: {after: 50, summary: {notes: "{{ previous.notes }}"}}
    step:
      type: agent
      prompt: "refine {{ previous }}"
      output_schema: {type: object, properties: {done: {type: boolean}, notes: {type: string}}}
"""


def _workflow(text: str = LOOP) -> Workflow:
    result = validate_document(load_document(text, file="long.yaml"))
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return result.workflow


def _definition() -> dict[str, Any]:
    return compile_workflow(_workflow()).definition


def test_the_machine_passes_asl_validator(tmp_path: Path) -> None:
    path = tmp_path / "long.json"
    path.write_text(json.dumps(_definition()))
    done = subprocess.run(
        [str(ASL_VALIDATOR), "--json-path", str(path)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_run_start_hands_back_steps_and_where_to_resume() -> None:
    states = _definition()["States"]
    start = states["start"]
    assert start["Parameters"]["Payload"]["continuable"] is True
    assert start["ResultSelector"]["steps.$"] == "$.Payload.steps"
    assert start["ResultSelector"]["resume.$"] == "$.Payload.resume"
    choice = states[start["Next"]]
    assert choice["Type"] == "Choice" and choice["Default"] == "prep"
    resume = states[choice["Choices"][0]["Next"]]
    assert resume["Parameters"]["deadline.$"] == "$.resume.deadline"  # the loop's timeout goes on
    assert resume["Parameters"]["scope"]["segment_end.$"] == (
        "States.MathAdd($.resume.scope.iteration, 49)"
    )


def test_the_segment_hands_on_by_a_fire_and_forget_start_of_itself() -> None:
    states = _definition()["States"]
    start = states["refine:next segment"]
    assert start["Resource"] == "arn:aws:states:::states:startExecution"
    assert start["Parameters"]["StateMachineArn.$"] == "$$.StateMachine.Id"
    carried = start["Parameters"]["Input"]["switchyard:continue"]
    assert carried["scope"]["previous.$"] == "$.summary.value"
    assert carried["deadline.$"] == "$.deadline"
    assert states[start["Next"]]["End"] is True
    assert states["refine:summary"]["Parameters"]["Payload"]["templates"] == {
        "notes": "{{ previous.notes }}"
    }


def test_a_loop_without_continue_as_new_compiles_as_before() -> None:
    plain = LOOP.replace("max_iterations: 100000", "max_iterations: 5").replace(
        '    continue_as_new: {after: 50, summary: {notes: "{{ previous.notes }}"}}\n', ""
    )
    definition = compile_workflow(_workflow(plain)).definition
    assert "resume?" not in definition["States"]
    assert definition["States"]["start"]["ResultSelector"]["steps"] == {}


def test_the_history_estimate_counts_one_segment() -> None:
    notes = compile_workflow(_workflow()).notes
    assert not [n for n in notes if n.code is Code.HISTORY_LIMIT]
    many = LOOP.replace("after: 50", "after: 5000")
    notes = compile_workflow(_workflow(many)).notes
    (note,) = [n for n in notes if n.code is Code.HISTORY_LIMIT]
    assert "Step Functions stops an execution at 25,000" in note.message
