"""An agent in segments (`continue_as_new`), through the real SDK (mocked HTTP): a call that runs
out of its segment's turns summarises its work and returns that summary; the next segment's call
starts a fresh conversation from the prompt and the summary, counting turns on."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from switchyard.contract.step_errors import PermanentError
from switchyard.model import AgentBody
from switchyard.runtime import run_agent_step
from switchyard.runtime.agent_segments import SUMMARY_REQUEST, Carried, Segment, segment_of
from tests.unit.runtime.helpers import invocation
from tests.unit.runtime.providers.fake_api import FakeClaude, ok, text_message
from tests.unit.runtime.test_agent import TOOL_DEFS, agent, services_for, tool_use

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

MODEL = "claude-sonnet-4-5"


def researcher(**extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "tools": ["lookup_order"],
        "tool_defs": TOOL_DEFS,
        "max_turns": 20,
        "continue_as_new": {"after": 2},
    }
    return agent(**{**fields, **extra})


def looking_up(order: str) -> Any:
    return ok(tool_use("lookup_order", {"order_id": order}, input_tokens=500, output_tokens=30))


def carried(summary: str, turns: int) -> dict[str, Any]:
    return {"iteration": 2, "previous": {"continued": True, "summary": summary, "turns": turns}}


def test_a_segment_out_of_turns_returns_the_models_summary_marked_continued() -> None:
    fake = FakeClaude()
    fake.queue(
        MODEL,
        looking_up("A-1"),
        looking_up("A-2"),
        ok(text_message("Looked up A-1 and A-2; A-3 is left.", input_tokens=900, output_tokens=20)),
    )
    inv = invocation("research", researcher(), inputs={"body": "orders"}, scope={"iteration": 1})
    result = run_agent_step(inv, services_for(fake))
    assert result.continued is True
    assert result.output == {
        "continued": True,
        "summary": "Looked up A-1 and A-2; A-3 is left.",
        "turns": 3,
    }
    assert len(fake.requests) == 3
    # the summary request rides with the last tool results, one user message, tools still offered
    last = fake.requests[2][1]
    content = last["messages"][-1]["content"]
    assert [block["type"] for block in content] == ["tool_result", "text"]
    assert content[-1]["text"] == SUMMARY_REQUEST
    assert last["tools"][0]["name"] == "lookup_order"
    # the summary is a turn like any other: costed with the rest
    assert result.usage is not None and result.usage.input_tokens == 1900
    assert Decimal(str(result.cost_usd)) == Decimal(1900 * 3 + 80 * 15) / 1_000_000


def test_a_continued_segment_starts_afresh_from_the_prompt_and_the_summary() -> None:
    fake = FakeClaude()
    fake.queue(MODEL, looking_up("A-3"), ok(text_message("All three were delivered.")))
    inv = invocation(
        "research",
        researcher(),
        inputs={"body": "orders"},
        scope=carried("Looked up A-1 and A-2; A-3 is left.", 3),
    )
    result = run_agent_step(inv, services_for(fake))
    assert result.continued is False
    assert result.output == {"text": "All three were delivered."}
    first = fake.requests[0][1]["messages"]
    assert len(first) == 1
    assert first[0]["content"].startswith("Ticket: orders\n\nYou have worked on this task before")
    assert "for 3 model turns" in first[0]["content"]
    assert "Looked up A-1 and A-2; A-3 is left." in first[0]["content"]


def test_the_summary_request_can_be_the_steps_own_template() -> None:
    fake = FakeClaude()
    fake.queue(MODEL, looking_up("A-1"), looking_up("A-2"), ok(text_message("notes")))
    step = researcher(
        continue_as_new={"after": 2, "summary": "Note what is left of {{ inputs.body }}"}
    )
    inv = invocation("research", step, inputs={"body": "orders"}, scope={"iteration": 1})
    result = run_agent_step(inv, services_for(fake))
    assert result.output["summary"] == "notes"
    asked = fake.requests[2][1]["messages"][-1]["content"][-1]
    assert asked == {"type": "text", "text": "Note what is left of orders"}


def test_turns_count_on_across_segments_up_to_max_turns() -> None:
    """With 8 turns and segments of 2 (+1 summary), the third segment starts at turn 6: it could
    not leave the next a turn after a summary, so it takes the two that remain, then fails."""
    fake = FakeClaude()
    fake.queue(MODEL, looking_up("A-7"), looking_up("A-8"), looking_up("A-9"))
    step = researcher(max_turns=8)
    inv = invocation("research", step, inputs={"body": "orders"}, scope=carried("s", 6))
    with pytest.raises(PermanentError, match=r"after max_turns \(8\) model calls"):
        run_agent_step(inv, services_for(fake))
    assert len(fake.requests) == 2


def test_a_model_that_gives_no_summary_fails_the_step() -> None:
    fake = FakeClaude()
    fake.queue(MODEL, looking_up("A-1"), looking_up("A-2"), ok(text_message("  ")))
    inv = invocation("research", researcher(), inputs={"body": "x"}, scope={"iteration": 1})
    with pytest.raises(PermanentError, match="asked to summarise its work after 2 model calls"):
        run_agent_step(inv, services_for(fake))


def _body(max_turns: int, after: int | None) -> AgentBody:
    rule = {"continue_as_new": {"after": after}} if after else {}
    return AgentBody.model_validate(
        {"type": "agent", "prompt": "p", "tools": ["t"], "max_turns": max_turns, **rule}
    )


def test_segment_of() -> None:
    assert segment_of(_body(8, None), None) == Segment(0, 8, continues=False)
    assert segment_of(_body(20, 5), None) == Segment(0, 5, continues=True)
    previous = {"continued": True, "summary": "s", "turns": 6}
    assert segment_of(_body(20, 5), previous) == Segment(6, 11, True, Carried("s", 6))
    # 6 + 5 turns and a summary would leave the next segment no turn of 12: take them all here
    assert segment_of(_body(12, 5), previous) == Segment(6, 12, False, Carried("s", 6))
    # an answer of an earlier run of the step is no summary
    assert segment_of(_body(20, 5), {"text": "x", "continued": "yes"}).carried is None
