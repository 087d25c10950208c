"""What the dashboard's data API function (`functions/dashboard_api`) may do besides reading
Aurora with the database secret (docs/dashboard.md, "On AWS"), each on this stack's own
resources only:

- answer a gate's task token (`states:SendTaskSuccess|SendTaskFailure`) on the workflows'
  machines: *Approve* and *Reject* on the page;
- read the workflows' executions' history (`states:GetExecutionHistory`): a run read while it
  is RUNNING is caught up with it (`switchyard.records.catch_up`); the recorder has described
  the execution already, so nothing else of Step Functions is called;
- read the output bucket's objects (`s3:GetObject`, and `kms:Decrypt` with the data key): the
  large values a page loads (`/blobs`).

No StartExecution, StopExecution or DescribeExecution, no write to the bucket.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_

from infra.config import Settings
from infra.constructs.approvals import MAX_LISTED_MACHINES
from infra.constructs.functions import Functions
from infra.constructs.recorder import execution_arns
from infra.constructs.state_store import StateStore
from infra.nag import acknowledge, acknowledge_resource, token
from infra.names import machine_name
from switchyard.constants import OUTPUT_BUCKET_ENV, RECORDER_FUNCTIONS_ENV
from switchyard.records import STEP_FUNCTIONS

DECISION_ACTIONS = ["states:SendTaskSuccess", "states:SendTaskFailure"]
"""A gate decided on the page is approved or rejected (`switchyard.gates.decide`), never
cancelled nor kept alive."""
CATCH_UP_ACTIONS = ["states:GetExecutionHistory"]
"""What `switchyard.records.catch_up` calls (through `Recorder.record`), on an execution."""


def data_api_environment(stack: Stack, store: StateStore, functions: Functions) -> dict[str, str]:
    """The output bucket (`/blobs`), and the step functions' deployed names, which the catch-up
    needs to tell a step's Task by its function (as the recorder does)."""
    names = {name: functions.by_name[name].function_name for name in STEP_FUNCTIONS}
    return {
        OUTPUT_BUCKET_ENV: store.output_bucket.bucket_name,
        RECORDER_FUNCTIONS_ENV: stack.to_json_string(names),
    }


def grant_data_api(
    function: lambda_.Function,
    *,
    settings: Settings,
    store: StateStore,
    functions: Functions,
    machines: Sequence[str],
) -> None:
    """Every grant above, to `function`'s role; `machines` are the workflows' names."""
    _grant_task_tokens(function, settings, machines)
    _grant_history(function, settings, machines)
    _grant_outputs(function, store, functions)


def _grant_task_tokens(
    function: lambda_.Function, settings: Settings, machines: Sequence[str]
) -> None:
    """A gate decided on the page answers its task token, as an approval link does: on the
    workflows' machines only."""
    stack = Stack.of(function)
    base = f"arn:{stack.partition}:states:{stack.region}:{stack.account}:stateMachine:"
    if not machines:
        return
    if len(machines) <= MAX_LISTED_MACHINES:
        resources = [base + machine_name(settings, name) for name in sorted(machines)]
    else:
        resources = [f"{base}{settings.stack_name}-*"]
        acknowledge_resource(
            function.role or function,
            resources[0],
            "the task-token actions on this stack's machines, named by their fixed prefix: "
            f"past {MAX_LISTED_MACHINES} machines a list would near IAM's policy size limit",
        )
    function.add_to_role_policy(iam.PolicyStatement(actions=DECISION_ACTIONS, resources=resources))


def _grant_history(function: lambda_.Function, settings: Settings, machines: Sequence[str]) -> None:
    """The history of the workflows' executions, and of no other machine's."""
    if not machines:
        return
    stack = Stack.of(function)
    base = f"arn:{stack.partition}:states:{stack.region}:{stack.account}:execution:"
    names = sorted(machine_name(settings, name) for name in machines)
    resources = execution_arns(base, names, settings)
    for resource in resources:
        acknowledge_resource(
            function.role or function,
            resource,
            "GetExecutionHistory only, on the executions of this stack's workflow machines "
            "(named when each run starts): a running run's records are caught up from it when "
            "a page reads the run",
        )
    function.add_to_role_policy(iam.PolicyStatement(actions=CATCH_UP_ACTIONS, resources=resources))


def _grant_outputs(function: lambda_.Function, store: StateStore, functions: Functions) -> None:
    """Large values, read back: the bucket holds only the steps' offloaded outputs, each keyed
    by its run id and a content hash (not known in advance)."""
    function.add_to_role_policy(
        iam.PolicyStatement(
            actions=["s3:GetObject"], resources=[store.output_bucket.arn_for_objects("*")]
        )
    )
    acknowledge(
        function.role or function,
        f"IAM5[Resource::{token(store.output_bucket)}/*]",
        "reads the large values a page loads from the platform's own output bucket, keyed by "
        "run id and content hash (not known in advance); GetObject only",
    )
    functions.grant_key_decrypt(function)
