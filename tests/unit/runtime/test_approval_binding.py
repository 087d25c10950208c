"""A tool call's approval binds to the exact arguments the person was shown: if the call comes
again with other arguments, the approval does not apply and a person is asked again."""

from __future__ import annotations

import pytest

from switchyard.contract import StepInvocation
from switchyard.contract.step_errors import HumanRequiredError
from switchyard.runtime.services import StepServices
from switchyard.runtime.tool_step import run_tool_step
from switchyard.stores.tool_calls import ToolDecision
from tests.unit.runtime.helpers import invocation
from tests.unit.runtime.test_tool_step import SCRIPT, STEPS, _scripted, tool_defs, tool_step


def _approval_needed() -> tuple[StepInvocation, StepServices, str]:
    defs = tool_defs("send_invoice")
    defs["invoice"]["policy"] = {"require_approval_if": "args.amount > 40"}
    inv = _scripted(invocation("bill", tool_step(tool_defs=defs), inputs={"customer": "b"},
                               steps=STEPS), SCRIPT)  # fmt: skip
    services = StepServices()
    with pytest.raises(HumanRequiredError) as info:
        run_tool_step(inv, services)
    assert info.value.request.args == {"customer": "b", "amount": 42.5}
    return inv, services, info.value.request.call_id or ""


def test_an_approval_of_the_arguments_shown_lets_the_call_run() -> None:
    inv, services, call_id = _approval_needed()
    shown = {"customer": "b", "amount": 42.5}
    services.tools.decisions.record(
        inv.context.run.id,
        call_id,
        ToolDecision("approved", reviewer="dana", shown_args=shown),
    )
    assert run_tool_step(inv, services).output == {"invoice": "INV-scripted"}


def test_an_approval_of_other_arguments_does_not_apply() -> None:
    inv, services, call_id = _approval_needed()
    services.tools.decisions.record(
        inv.context.run.id,
        call_id,
        ToolDecision("approved", reviewer="dana", shown_args={"customer": "b", "amount": 4.25}),
    )
    with pytest.raises(HumanRequiredError):
        run_tool_step(inv, services)
