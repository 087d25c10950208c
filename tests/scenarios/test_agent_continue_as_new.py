"""An agent whose tool loop continues as new, on moto's Step Functions interpreter and on
switchyard's engine, with the real agent runtime (a fake Claude behind the real SDK, a real
Python tool): five tool turns with `after: 2` take three segments, each segment's first model
request carries the summary the segment before ended with, and the steps after the agent see its
answer. Both interpreters agree."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from switchyard.contract import StepInvocation, continued_to
from switchyard.contract.step_errors import StepError
from switchyard.runtime import StepServices, run_agent_step
from switchyard.runtime.agent_segments import SUMMARY_REQUEST
from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.source import load_document
from switchyard.validate import validate_document
from tests.scenarios.harness.scenario import Scenario
from tests.scenarios.harness.scripted import ScriptedFunctions
from tests.scenarios.test_continue_as_new import chain_on_engine, chain_on_moto
from tests.unit.runtime.providers.fake_api import FakeClaude, message, ok, text_message

WORKFLOW = """
switchyard: 1
name: deep-research
version: 1
defaults: {model: claude-haiku-4-5}
inputs: {topic: {type: string}}
tools:
  search:
    description: Search the notes.
    input_schema: {type: object, properties: {q: {type: string}}, required: [q]}
    kind: python
    config: {function: "tests.scenarios.test_agent_continue_as_new:search"}
    side_effect: none
steps:
  prep: {type: agent, prompt: "prepare {{ inputs.topic }}"}
  research:
    type: agent
    after: [prep]
    tools: [search]
    max_turns: 20
    continue_as_new: {after: 2}
    prompt: "Research {{ inputs.topic }}"
  publish: {type: agent, after: [research], prompt: "publish {{ steps.research.output.text }}"}
outputs:
  answer: "{{ steps.research.output.text }}"
  prep: "{{ steps.prep.output.text }}"
"""
PROMPT = "Research anvils"


def search(q: str) -> dict[str, Any]:
    return {"q": q, "hits": 1}


def _searching(q: str, turn: int) -> Callable[..., Any]:
    block = {"type": "tool_use", "id": f"toolu_{turn}", "name": "search", "input": {"q": q}}
    return ok(message([block], model="claude-haiku-4-5", stop_reason="tool_use"))


def _fake() -> FakeClaude:
    """The agent's eight model calls, in order over its segments."""
    fake = FakeClaude()
    fake.queue(
        "claude-haiku-4-5",
        _searching("one", 0),
        _searching("two", 1),
        ok(text_message("SUMMARY-A: one and two searched", model="claude-haiku-4-5")),
        _searching("three", 3),
        _searching("four", 4),
        ok(text_message("SUMMARY-B: four searches done", model="claude-haiku-4-5")),
        _searching("five", 6),
        ok(text_message("anvils are heavy", model="claude-haiku-4-5")),
    )
    return fake


@dataclass
class RealAgent(ScriptedFunctions):
    """The scripted functions, but `research` runs in the real agent runtime."""

    fake: FakeClaude = field(default_factory=_fake)

    def invoke(self, function: str, payload: dict[str, Any]) -> Any:
        if function != "agent_step" or payload.get("step_id") != "research":
            return super().invoke(function, payload)
        invocation = StepInvocation.model_validate(payload)
        self.calls["research"] += 1
        services = StepServices(provider=self.fake.provider("anthropic"), catalog=ModelCatalog())
        try:
            return run_agent_step(invocation, services).model_dump(mode="json")
        except StepError as error:
            raise error.as_lambda_exception(attempt=invocation.attempt) from None


@dataclass
class Segments:
    statuses: list[str]
    outputs: list[Any]
    names: list[str]
    functions: RealAgent


def _scenario() -> Scenario:
    result = validate_document(load_document(WORKFLOW, file="deep-research.yaml"))
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    script = {"prep": [{"text": "notes"}], "publish": [{"text": "done"}]}
    return Scenario("agent-can", "", result.workflow, [], {"topic": "anvils"}, script, {}, {})


def run_on_moto(scenario: Scenario) -> Segments:
    functions = RealAgent(scenario.script)
    return Segments(*chain_on_moto(functions, scenario, "run-agent"), functions)


def run_on_engine(conninfo: str, scenario: Scenario) -> Segments:
    functions = RealAgent(scenario.script)
    return Segments(*chain_on_engine(conninfo, functions, scenario, "run-agent"), functions)


def _check(segments: Segments) -> None:
    assert segments.statuses == ["SUCCEEDED"] * 3
    assert segments.names == ["run-agent", "run-agent-2", "run-agent-3"]
    assert segments.outputs[-1] == {"answer": "anvils are heavy", "prep": "notes"}
    # one call of the agent per segment; the steps before it did not run again
    assert dict(segments.functions.calls) == {"prep": 1, "research": 3, "publish": 1}
    requests = [body for _, body in segments.functions.fake.requests]
    assert len(requests) == 8
    # the first segment ends by asking for a summary, beside the last tool results
    assert requests[2]["messages"][-1]["content"][-1] == {"type": "text", "text": SUMMARY_REQUEST}
    # each later segment starts a fresh conversation: the prompt, then the summary it carries
    for first, summary, turns in ((3, "SUMMARY-A", 3), (6, "SUMMARY-B", 6)):
        (opening,) = requests[first]["messages"]
        assert opening["content"].startswith(f"{PROMPT}\n\nYou have worked on this task before")
        assert summary in opening["content"] and f"for {turns} model turns" in opening["content"]


def test_an_agent_continues_as_new_on_moto_and_on_the_engine(pg_conninfo: str) -> None:
    logging.getLogger("moto").setLevel(logging.CRITICAL)
    scenario = _scenario()
    on_moto = run_on_moto(scenario)
    _check(on_moto)
    on_engine = run_on_engine(pg_conninfo, scenario)
    _check(on_engine)
    assert on_engine.outputs[-1] == on_moto.outputs[-1]
    assert [(continued_to(o) or {}).get("segment") for o in on_engine.outputs] == [2, 3, None]
    assert [(continued_to(o) or {}).get("segment") for o in on_moto.outputs] == [2, 3, None]
