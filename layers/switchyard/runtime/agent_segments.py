"""An agent's tool loop in segments: `continue_as_new` on an agent step.

The compiler runs such an agent as one call per execution of the run, each a *segment*
(compile/steps/agent_segments.py). A call works for at most `after` model turns; without an
answer by then, it asks the model once more (a turn like any other: costed, counted toward
`max_turns`) to summarise its work, and returns that summary marked continued. The next segment's
call gets it as `previous` and starts a fresh conversation, the step's prompt followed by the
summary, so no conversation grows past `after` turns: the context window and Lambda's 15 minutes
bound a segment, not the whole agent. Turns count on across segments; the agent fails as any
agent does once the total reaches `max_turns`.

The carried summary is plain text from the model; the marker `{continued, summary, turns}` is
the segment's output, and `StepResult.continued` says so without ambiguity (a final answer may
have a `continued` key of its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from switchyard.model import AgentBody

SUMMARY_REQUEST = (
    "Stop here for now: you will go on in a fresh conversation that starts from the task and "
    "your summary alone. Summarise the work so far and what remains, for yourself to continue "
    "from: what you found (with the facts you will need), what you tried, and what is left to "
    "do. Answer with the summary only."
)
"""What the model is asked at the end of a segment, unless `continue_as_new.summary` says."""
CARRIED_SUMMARY = (
    "You have worked on this task before, for {turns} model turns. Your summary of that work:"
    "\n\n{summary}\n\nGo on from there."
)
"""How a segment's first message carries the summary, after the step's prompt."""


@dataclass(frozen=True)
class Carried:
    """What the segment before handed this one."""

    summary: str
    turns: int
    """Model turns the agent has used so far, summaries included."""


@dataclass(frozen=True)
class Segment:
    """The turns one call of an agent may take: `range(start, stop)`; past `stop` without an
    answer it summarises (when `continues`) or fails."""

    start: int
    stop: int
    continues: bool
    carried: Carried | None = None


def segment_of(step: AgentBody, previous: Any) -> Segment:
    """This call's share of the agent's turns, given its `previous`. Without `continue_as_new`,
    all of them. With it, `after` turns from where the segment before stopped; a segment that
    could not leave the next one a turn after its summary takes the turns that remain and does
    not continue."""
    rule = step.continue_as_new
    if rule is None:
        return Segment(0, step.max_turns, continues=False)
    carried = carried_from(previous)
    start = carried.turns if carried else 0
    stop = start + rule.after
    if stop + 1 >= step.max_turns:
        return Segment(start, step.max_turns, continues=False, carried=carried)
    return Segment(start, stop, continues=True, carried=carried)


def carried_from(previous: Any) -> Carried | None:
    """The summary a continued segment starts from (its `previous`), if any."""
    if not isinstance(previous, dict) or previous.get("continued") is not True:
        return None
    return Carried(summary=str(previous.get("summary") or ""), turns=int(previous["turns"]))


def is_summary(output: Any) -> bool:
    """Whether a recorded output of an agent in segments is a segment's summary (a replay
    reads the records, which keep the output, not `StepResult.continued`)."""
    return (
        isinstance(output, dict)
        and set(output) == {"continued", "summary", "turns"}
        and output["continued"] is True
    )


def first_message(prompt: str, carried: Carried | None) -> str:
    """The conversation's first message: the prompt, and in a continued segment the summary."""
    if carried is None:
        return prompt
    return f"{prompt}\n\n{CARRIED_SUMMARY.format(turns=carried.turns, summary=carried.summary)}"


def continued_output(summary: str, turns: int) -> dict[str, Any]:
    """A segment's output when the agent goes on in the next: its `previous`."""
    return {"continued": True, "summary": summary, "turns": turns}
