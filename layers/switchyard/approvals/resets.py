"""Where a reset on AWS finds what it needs (`switchyard.local.reset.ResetSource`): the original
execution's input and the workflow version it ran in Step Functions (`DescribeExecution`, and the
machine's Comment, "switchyard workflow NAME version N", in `DescribeStateMachineForExecution`);
version N as the machine itself when its definition is version N (what the stack deployed last),
else as one of its aliases (`live`, `v<n>`) that routes to a version of it; and the new run
started with `StartExecution` on that ARN. approval_api may describe executions of the stack's
workflow machines, and describe, list the aliases of and start those machines only
(infra/constructs/approvals.py)."""

from __future__ import annotations

import json
from typing import Any

from switchyard.local.reset import OriginalRun, VersionTarget
from switchyard.local.run_actions import RunRef
from switchyard.records.projection import workflow_of


class StepFunctionsResetSource:
    def __init__(self, client: Any) -> None:
        self._client = client

    def original(self, run: RunRef) -> OriginalRun:
        described = self._client.describe_execution(executionArn=run.execution_arn)
        machine = self._client.describe_state_machine_for_execution(executionArn=run.execution_arn)
        ran = _workflow(str(machine.get("definition") or ""))
        workflow, version = ran if ran is not None else (run.workflow, 1)
        given = json.loads(described.get("input") or "{}")
        return OriginalRun(run, workflow, version, given if isinstance(given, dict) else {}, {})

    def target(self, original: OriginalRun, version: int) -> VersionTarget | None:
        machine_arn = machine_of(original.ref.execution_arn)
        machine = self._client.describe_state_machine(stateMachineArn=machine_arn)
        definition = str(machine.get("definition") or "")
        if _is_version(definition, original.workflow, version):
            return VersionTarget(version, machine_arn, definition)
        listed = self._client.list_state_machine_aliases(stateMachineArn=machine_arn)
        for alias in listed.get("stateMachineAliases") or []:
            alias_arn = str(alias["stateMachineAliasArn"])
            routing = self._client.describe_state_machine_alias(stateMachineAliasArn=alias_arn)
            for route in routing.get("routingConfiguration") or []:
                published = self._client.describe_state_machine(
                    stateMachineArn=route["stateMachineVersionArn"]
                )
                text = str(published.get("definition") or "")
                if _is_version(text, original.workflow, version):
                    return VersionTarget(version, alias_arn, text)
        return None

    def start(
        self, target: VersionTarget, name: str, data: dict[str, Any], options: dict[str, Any]
    ) -> str:
        started = self._client.start_execution(
            stateMachineArn=target.start_arn, name=name, input=json.dumps(data)
        )
        return str(started["executionArn"])


def machine_of(execution_arn: str) -> str:
    """`arn:…:stateMachine:<machine>` of `arn:…:execution:<machine>:<name>`."""
    head, _, rest = execution_arn.partition(":execution:")
    return f"{head}:stateMachine:{rest.rsplit(':', 1)[0]}"


def _workflow(definition: str) -> tuple[str, int] | None:
    try:
        comment = json.loads(definition).get("Comment")
    except (ValueError, AttributeError):
        return None
    return workflow_of(comment if isinstance(comment, str) else None)


def _is_version(definition: str, workflow: str, version: int) -> bool:
    return _workflow(definition) == (workflow, version)
