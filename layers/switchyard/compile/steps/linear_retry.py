"""Linear backoff, which `Retry` cannot express, as an explicit loop around a step's Task:

    <id>:attempts (Pass: retries 0) -> <id> --caught--> <id>:retry? (Choice)
        retries left: <id>:count retry (Pass: retries + 1, the delay) -> <id>:backoff -> <id>
        none left:    the failure path, or inside a map or loop <id>:give up? -> a Fail

The retry counter and the delay live in the step's record while it runs."""

from __future__ import annotations

from typing import Any

from switchyard.compile.fragments import State
from switchyard.compile.retry import NEVER_RETRIED, linear_delays, retried_error_names
from switchyard.compile.steps.failure import ERROR_PATH, catch
from switchyard.compile.steps.unit import Unit
from switchyard.contract.errors import ALL_ERRORS
from switchyard.model import RetryPolicy

TIMEOUT_ERRORS = ("States.Timeout", "States.HeartbeatTimeout")


def attempts_counter(unit: Unit, first: str) -> str:
    """The state that starts the counter before the step's first state; returns its name."""
    counter: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' starts counting its retries (linear backoff)",
        "Result": {"status": "running", "retries": 0},
        "ResultPath": unit.record_path,
        "Next": first,
    }
    return unit.block.add(unit.name("attempts"), counter)


def wait_loop(unit: Unit, policy: RetryPolicy, task_name: str) -> tuple[str, State]:
    """Count the retry, wait min(base * (n+1), max) (jittered), try `task_name` again.

    Returns the loop's first state and its Choice, whose Default (retries exhausted) the caller
    sets."""
    block = unit.block
    delays = linear_delays(policy)
    ceilings = ", ".join(str(d + 1 if policy.jitter == "full" else d) for d in delays)
    pick = f"States.ArrayGetItem(States.Array({ceilings}), {unit.record_path}.retries)"
    delay = f"States.MathRandom(0, {pick})" if policy.jitter == "full" else pick
    wait: State = {
        "Type": "Wait",
        "Comment": f"'{unit.step_id}' waits before its next attempt",
        "SecondsPath": f"{unit.record_path}.delay",
        "Next": task_name,
    }
    wait_name = block.add(unit.name("backoff"), wait)
    count: State = {
        "Type": "Pass",
        "Comment": f"'{unit.step_id}' counts a retry and picks its delay",
        "Parameters": {
            "status": "running",
            "retries.$": f"States.MathAdd({unit.record_path}.retries, 1)",
            "delay.$": delay,
        },
        "ResultPath": unit.record_path,
        "Next": wait_name,
    }
    count_name = block.add(unit.name("count retry"), count)
    decide: State = {
        "Type": "Choice",
        "Comment": f"has '{unit.step_id}' a retry left?",
        "Choices": [
            {
                "Variable": f"{unit.record_path}.retries",
                "NumericLessThan": policy.max_attempts - 1,
                "Next": count_name,
            }
        ],
    }
    return block.add(unit.name("retry?"), decide), decide


def loop_catches(policy: RetryPolicy, loop_start: str, stop: str) -> tuple[list[Any], bool]:
    """The Task's catchers into the wait loop, and whether they catch everything.

    With `on: [all]` the loop's catcher is `States.ALL`, which must be the last; errors no retry
    can fix go to `stop` (the failure path, or the give-up) before it. Otherwise the caller adds
    its own `States.ALL` catcher after these."""
    names = retried_error_names(policy)
    if names == [ALL_ERRORS]:
        return [catch(list(NEVER_RETRIED), stop), catch([ALL_ERRORS], loop_start)], True
    return [catch(names, loop_start)], False


def give_up(unit: Unit) -> str:
    """Inside a map or loop, retries exhausted: fail the item with the caught error, which the
    map's or loop's own failure path then handles. A Fail state may not raise a `States.*` name,
    so those are raised under their workflow error type (`timeout`, else `permanent`)."""
    block = unit.block
    cause = f"{ERROR_PATH}.Cause"
    said = f"'{unit.step_id}' has no retries left: the item fails"
    raised = {
        "Type": "Fail",
        "Comment": said,
        "ErrorPath": f"{ERROR_PATH}.Error",
        "CausePath": cause,
    }
    as_timeout = {"Type": "Fail", "Comment": said, "Error": "timeout", "CausePath": cause}
    as_permanent = {"Type": "Fail", "Comment": said, "Error": "permanent", "CausePath": cause}
    timeouts = [
        {"Variable": f"{ERROR_PATH}.Error", "StringEquals": name} for name in TIMEOUT_ERRORS
    ]
    check: State = {
        "Type": "Choice",
        "Comment": "which error the item fails with (a Fail state may not raise a States.* name)",
        "Choices": [
            {"Or": timeouts, "Next": block.add(unit.name("give up: timeout"), as_timeout)},
            {
                "Variable": f"{ERROR_PATH}.Error",
                "StringMatches": "States.*",
                "Next": block.add(unit.name("give up: permanent"), as_permanent),
            },
        ],
        "Default": block.add(unit.name("give up"), raised),
    }
    return block.add(unit.name("give up?"), check)
