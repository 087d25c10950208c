"""Every deployed role may do what AWS requires for what its machine or its code calls.

Derived, not repeated: the Task states come from the deployed definitions (every machine of the
synthesized templates, workflows and trigger starters alike), the actions they need from the
table below, which is written once from the Step Functions developer guide; a function's calls
come from its code (the boto3 calls in the modules that use each resource its environment names)
and from its tools (`infra.tool_access`, derived again here from the workflow files). The role's
policies are evaluated as IAM evaluates them (`tests/infra/iam.py`), on resolved ARNs: a grant of
a resource that does not exist, or of the wrong one, fails here, as it would on AWS.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore import xform_name

from infra.config import Settings
from infra.tool_access import ACCOUNT, PARTITION, REGION, derive_tool_access
from switchyard.approvals.settings import ApprovalSettings
from switchyard.constants import (
    API_KEY_SECRET_ENV,
    APPROVAL_SIGNING_SECRET_ENV,
    BUDGET_TABLE_ENV,
    DATABASE_SECRET_ARN_ENV,
    EVENT_BUS_ENV,
    IDEMPOTENCY_TABLE_ENV,
    OUTPUT_BUCKET_ENV,
    SES_IDENTITY_ENV,
    SLACK_SECRET_ENV,
    WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV,
    WEBHOOK_SECRET_ENV,
    WEBHOOK_STATE_MACHINE_ARN_ENV,
)
from switchyard.source import load_document
from switchyard.validate import validate_file
from tests.infra.conftest import CONFIGURED_CONTEXT, CORPUS_CONTEXT
from tests.infra.iam import ANY_NAME, AwsValues, Context, Policies
from tests.infra.synth import REPO, Synthesized

SYNTHESIZED = ["platform", "platform_agnostic", "corpus", "configured"]

# --- what AWS requires, per integration -----------------------------------------------------------
#
# The Step Functions developer guide, "IAM policies for integrated services"
# (https://docs.aws.amazon.com/step-functions/latest/dg/service-integration-iam-templates.html),
# and the page of each service under it:
#   Lambda       https://docs.aws.amazon.com/step-functions/latest/dg/lambda-iam.html
#                lambda:InvokeFunction on the function and on its qualified ARNs (`function:x:*`),
#                for both `lambda:invoke` and `lambda:invoke.waitForTaskToken`.
#   Step Functions https://docs.aws.amazon.com/step-functions/latest/dg/stepfunctions-iam.html
#                asynchronous (and `.waitForTaskToken`): states:StartExecution on the machine;
#                synchronous (`.sync`, `.sync:2`): also states:DescribeExecution and
#                states:StopExecution on `execution:<machine name>:*`, and events:PutTargets,
#                events:PutRule, events:DescribeRule on
#                `rule/StepFunctionsGetEventsForStepFunctionsExecutionRule`.
#   SQS          https://docs.aws.amazon.com/step-functions/latest/dg/sqs-iam.html
#                sqs:SendMessage on the queue.
#   SNS          https://docs.aws.amazon.com/step-functions/latest/dg/sns-iam.html
#                sns:Publish on the topic.
#   EventBridge  https://docs.aws.amazon.com/step-functions/latest/dg/eventbridge-iam.html
#                events:PutEvents on each entry's event bus.
#   DynamoDB     https://docs.aws.amazon.com/step-functions/latest/dg/dynamo-iam.html
#                dynamodb:GetItem / PutItem / UpdateItem / DeleteItem on the table.
# And for the machine itself: logging to CloudWatch Logs
# (https://docs.aws.amazon.com/step-functions/latest/dg/cw-logs-sf.html) needs the log-delivery
# actions below on `*`; X-Ray tracing (https://docs.aws.amazon.com/step-functions/latest/dg/
# concepts-xray-tracing.html) needs xray:PutTraceSegments, PutTelemetryRecords,
# GetSamplingRules and GetSamplingTargets on `*`.

SYNC_RULE = "rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"
LOG_DELIVERY_ACTIONS = (
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
)
TRACING_ACTIONS = (
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
)

Need = tuple[str, str]
"""An action and the resource it is called on."""


@dataclass(frozen=True)
class Arns:
    region: str
    account: str

    def __call__(self, service: str, resource: str) -> str:
        return f"arn:aws:{service}:{self.region}:{self.account}:{resource}"

    def queue(self, url: str) -> str:
        match = re.fullmatch(r"https://sqs\.([a-z0-9-]+)\.amazonaws\.com/(\d{12})/(.+)", url)
        assert match, f"not a queue URL: {url}"
        return f"arn:aws:sqs:{match[1]}:{match[2]}:{match[3]}"


def _lambda(p: dict[str, Any], arns: Arns) -> list[Need]:
    function = p["FunctionName"]
    qualified = function if function.count(":") >= 7 else f"{function}:{ANY_NAME}"
    return [("lambda:InvokeFunction", function), ("lambda:InvokeFunction", qualified)]


def _start(p: dict[str, Any], arns: Arns) -> list[Need]:
    return [("states:StartExecution", p["StateMachineArn"])]


def _start_sync(p: dict[str, Any], arns: Arns) -> list[Need]:
    machine = p["StateMachineArn"].split(":stateMachine:", 1)[1].split(":")[0]
    execution = arns("states", f"execution:{machine}:{ANY_NAME}")
    rule = arns("events", SYNC_RULE)
    return [
        *_start(p, arns),
        ("states:DescribeExecution", execution),
        ("states:StopExecution", execution),
        ("events:PutTargets", rule),
        ("events:PutRule", rule),
        ("events:DescribeRule", rule),
    ]


def _sqs(p: dict[str, Any], arns: Arns) -> list[Need]:
    return [("sqs:SendMessage", arns.queue(p["QueueUrl"]))]


def _sns(p: dict[str, Any], arns: Arns) -> list[Need]:
    return [("sns:Publish", p["TopicArn"])]


def _events(p: dict[str, Any], arns: Arns) -> list[Need]:
    buses = [e.get("EventBusName", "default") for e in p["Entries"]]
    return [
        ("events:PutEvents", b if b.startswith("arn:") else arns("events", f"event-bus/{b}"))
        for b in buses
    ]


def _dynamodb(action: str) -> Callable[[dict[str, Any], Arns], list[Need]]:
    def needs(p: dict[str, Any], arns: Arns) -> list[Need]:
        return [(f"dynamodb:{action}", arns("dynamodb", f"table/{p['TableName']}"))]

    return needs


REQUIRED: dict[str, Callable[[dict[str, Any], Arns], list[Need]]] = {
    "lambda:invoke": _lambda,
    "lambda:invoke.waitForTaskToken": _lambda,
    "states:startExecution": _start,
    "states:startExecution.waitForTaskToken": _start,
    "states:startExecution.sync": _start_sync,
    "states:startExecution.sync:2": _start_sync,
    "sqs:sendMessage": _sqs,
    "sqs:sendMessage.waitForTaskToken": _sqs,
    "sns:publish": _sns,
    "sns:publish.waitForTaskToken": _sns,
    "events:putEvents": _events,
    "events:putEvents.waitForTaskToken": _events,
    "dynamodb:getItem": _dynamodb("GetItem"),
    "dynamodb:putItem": _dynamodb("PutItem"),
    "dynamodb:updateItem": _dynamodb("UpdateItem"),
    "dynamodb:deleteItem": _dynamodb("DeleteItem"),
}
"""`arn:<partition>:states:::<integration>` -> what its role must be allowed, from its
parameters (resolved)."""


# --- the machines -------------------------------------------------------------------------------


def tasks(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every Task state, in maps' and parallels' branches too."""
    for name, state in states.items():
        if state["Type"] == "Task":
            yield name, state
        for inner in (state.get("ItemProcessor"), state.get("Iterator")):
            if inner:
                yield from tasks(inner["States"])
        for branch in state.get("Branches", []):
            yield from tasks(branch["States"])


OWN_MACHINE = "$$.StateMachine.Id"
"""A loop that continues as new starts its next segment on the machine running it."""


def _own(parameters: dict[str, Any], machine: Machine, arns: Arns) -> dict[str, Any]:
    """`StateMachineArn.$: $$.StateMachine.Id` resolved: the machine's own ARN, qualified by
    the `live` alias its runs start on (the context object names what the run was started on)."""
    if parameters.get("StateMachineArn.$") != OWN_MACHINE:
        return parameters
    rest = {k: v for k, v in parameters.items() if k != "StateMachineArn.$"}
    return {**rest, "StateMachineArn": arns("states", f"stateMachine:{machine.name}:live")}


def _static(parameters: dict[str, Any]) -> dict[str, Any]:
    dynamic = [k for k in parameters if k.endswith(".$") and k[:-2] in REQUIRED_FIELDS]
    assert not dynamic, f"a resource chosen at run time ({dynamic}): its grant cannot be checked"
    return parameters


REQUIRED_FIELDS = {"FunctionName", "StateMachineArn", "QueueUrl", "TopicArn", "TableName"}


@dataclass(frozen=True)
class Machine:
    name: str
    stack: str
    logical_id: str
    properties: dict[str, Any]


def deployed_machines(synthesized: Synthesized) -> list[Machine]:
    return [
        Machine(
            str(resource["Properties"]["StateMachineName"]),
            stack,
            logical_id,
            resource["Properties"],
        )
        for stack, template in synthesized.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::StepFunctions::StateMachine"
    ]


def machine_needs(machine: Machine, values: AwsValues) -> list[tuple[str, Need]]:
    """(`<state>`, need) for each Task state and for the machine's logging and tracing."""
    arns = Arns(values.region, values.account)
    definition = json.loads(values.definition((machine.stack, machine.logical_id)))
    found: list[tuple[str, Need]] = []
    for state, task in tasks(definition["States"]):
        match = re.fullmatch(r"arn:aws:states:::(.+)", task["Resource"])
        assert match, f"{machine.name}.{state}: not a service integration: {task['Resource']}"
        integration = match[1]
        assert integration in REQUIRED, (
            f"{machine.name}.{state}: {integration} is not in the table of required actions; "
            "add it from the Step Functions developer guide"
        )
        parameters = _static(
            _own(task.get("Parameters") or task.get("Arguments") or {}, machine, arns)
        )
        found += [(state, need) for need in REQUIRED[integration](parameters, arns)]
    if machine.properties.get("LoggingConfiguration", {}).get("Destinations"):
        found += [("(logging)", (action, "*")) for action in LOG_DELIVERY_ACTIONS]
    if machine.properties.get("TracingConfiguration", {}).get("Enabled"):
        found += [("(tracing)", (action, "*")) for action in TRACING_ACTIONS]
    return found


@pytest.mark.parametrize("which", SYNTHESIZED)
def test_every_machines_role_may_do_what_each_of_its_task_states_needs(
    which: str, request: pytest.FixtureRequest
) -> None:
    synthesized: Synthesized = request.getfixturevalue(which)
    policies = Policies(synthesized)
    denied, checked = [], 0
    for machine in deployed_machines(synthesized):
        role = policies.role_of(machine.stack, machine.properties["RoleArn"])
        for state, (action, resource) in machine_needs(machine, policies.values):
            checked += 1
            if not policies.allows(role, action, resource):
                denied.append(f"{machine.name}.{state}: {action} on {resource}")
    assert checked > 0
    assert not denied, "\n".join(denied)


def test_the_sync_rule_that_does_not_exist_would_be_denied(platform: Synthesized) -> None:
    """The check fails where AWS would: the rule name the stack used to grant is not the one
    `startExecution.sync` puts."""
    policies = Policies(platform)
    (machine,) = [m for m in deployed_machines(platform) if m.name.endswith("-document-processing")]
    role = policies.role_of(machine.stack, machine.properties["RoleArn"])
    arns = Arns(policies.values.region, policies.values.account)
    assert policies.allows(role, "events:PutRule", arns("events", SYNC_RULE))
    wrong = "rule/StepFunctionsGetEventsForStepFunctionsExecutionManagedRule"
    assert not policies.allows(role, "events:PutRule", arns("events", wrong))
    # ... and a child's executions are those of its machine, not of any other.
    child = arns("states", f"execution:Switchyard-summarize-document:{ANY_NAME}")
    other = arns("states", f"execution:Switchyard-customer-support:{ANY_NAME}")
    assert policies.allows(role, "states:DescribeExecution", child)
    assert not policies.allows(role, "states:DescribeExecution", other)


# --- the functions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class UsedResource:
    """A resource a function's environment names, and the code that calls it."""

    service: str
    """The boto3 client (`dynamodb`); its IAM prefix is `IAM_PREFIX` of it, or itself."""
    modules: tuple[str, ...]
    """Files (from the repository, or `powertools:` from aws-lambda-powertools), or one class of a
    file (`path::Class`), whose calls of that client are on this resource."""
    arn: Callable[[str, Arns], str]
    """The resource's ARN from the variable's (resolved) value."""


IAM_PREFIX = {"stepfunctions": "states", "sesv2": "ses"}
OUTPUT_READERS = {
    "render": "s3:GetObject",
    "approval_notify": "s3:GetObject",
    "dashboard_api": "s3:GetObject",
}
"""Functions whose code only resolves references to large outputs (`wiring.output_stores()`,
`OutputStore.get`, the dashboard's `OutputStore.get_start`) and stores none: of the output
store's calls, only the read is theirs."""
POWERTOOLS = Path(__import__("aws_lambda_powertools").__file__).parent


def _secret_reference(value: str, arns: Arns) -> str:
    """`secret:<name or ARN>`, or an ARN: Secrets Manager's ARN of a name ends in 6 characters."""
    secret = value.removeprefix("secret:")
    return (
        secret if secret.startswith("arn:") else arns("secretsmanager", f"secret:{secret}-AbCdEf")
    )


USED: dict[str, UsedResource] = {
    BUDGET_TABLE_ENV: UsedResource(
        "dynamodb",
        ("layers/switchyard/stores/budget/dynamodb.py::DynamoDBBudgetLedger",),
        lambda v, a: a("dynamodb", f"table/{v}"),
    ),
    IDEMPOTENCY_TABLE_ENV: UsedResource(
        "dynamodb",
        ("powertools:utilities/idempotency/persistence/dynamodb.py",),
        lambda v, a: a("dynamodb", f"table/{v}"),
    ),
    OUTPUT_BUCKET_ENV: UsedResource(
        "s3", ("layers/switchyard/runtime/large_outputs.py",), lambda v, a: f"arn:aws:s3:::{v}/k"
    ),
    EVENT_BUS_ENV: UsedResource(
        "events",
        ("layers/switchyard/runtime/tools/aws_tools.py",),
        lambda v, a: a("events", f"event-bus/{v}"),
    ),
    API_KEY_SECRET_ENV: UsedResource(
        "secretsmanager",
        ("layers/switchyard/runtime/providers/anthropic_api.py",),
        _secret_reference,
    ),
    DATABASE_SECRET_ARN_ENV: UsedResource(
        "secretsmanager",
        ("layers/switchyard/runtime/wiring.py", "functions/migrate/handler.py"),
        _secret_reference,
    ),
    WEBHOOK_STATE_MACHINE_ARN_ENV: UsedResource(
        "stepfunctions", ("layers/switchyard/triggers/webhook.py",), lambda v, a: v
    ),
    WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV: UsedResource(
        "sqs", ("functions/webhook_trigger/handler.py",), lambda v, a: a.queue(v)
    ),
    WEBHOOK_SECRET_ENV: UsedResource(
        "secretsmanager",
        ("layers/switchyard/triggers/webhook.py", "functions/webhook_trigger/handler.py"),
        _secret_reference,
    ),
    APPROVAL_SIGNING_SECRET_ENV: UsedResource(
        "secretsmanager", ("layers/switchyard/approvals/settings.py",), _secret_reference
    ),
    SLACK_SECRET_ENV: UsedResource(
        "secretsmanager", ("layers/switchyard/approvals/settings.py",), _secret_reference
    ),
    SES_IDENTITY_ENV: UsedResource(
        # SES authorizes a send on the sender's identity: its address (the variable's value).
        "sesv2",
        ("layers/switchyard/approvals/email.py::SesSender",),
        lambda v, a: a("ses", f"identity/{v}"),
    ),
}
"""Environment variables that name an AWS resource, and where the code calls it."""


GATE_FUNCTION = "approval_notify"
"""Every `waitForTaskToken` gate hands its task token to this function (FUNCTION_SPECS)."""
GATE_ANSWERS = ("layers/switchyard/gates/callbacks.py::Boto3Callbacks",)
"""The code that answers a gate's task token (Step Functions' task-token API)."""
GATE_ANSWERERS = {
    "approval_api": {"states:SendTaskSuccess", "states:SendTaskFailure"},
    "dashboard_api": {"states:SendTaskSuccess", "states:SendTaskFailure"},
    "approval_notify": {"states:SendTaskSuccess"},
}
"""Functions that answer the gates' tokens, and which of those calls are theirs: a link, a
Slack click, an operator's route (approval_api) or the dashboard's Approve/Reject approves,
rejects or resumes (`switchyard.gates.decide`); a reset run's gate replays its recorded decision
(approval_notify, `switchyard.runtime.replay`); a cancel's StopExecution is an operator's
(`RUN_OPERATIONS`)."""
RUN_OPERATIONS = (
    "layers/switchyard/gates/callbacks.py::Boto3Callbacks.stop",
    "layers/switchyard/approvals/executions.py",
)
"""The code of an operator's cancel on AWS: StopExecution and DescribeExecution of a run."""
RESET_READS = ("layers/switchyard/approvals/resets.py::StepFunctionsResetSource.original",)
"""The code of an operator's reset on AWS that reads the run's execution (on executions)."""
RESET_STARTS = (
    "layers/switchyard/approvals/resets.py::StepFunctionsResetSource.target",
    "layers/switchyard/approvals/resets.py::StepFunctionsResetSource.start",
)
"""The code of an operator's reset that finds the version to run and starts the new run: on the
workflows' machines, their versions and their aliases."""
RUN_OPERATORS = {"approval_api"}
"""Functions that serve the operators' routes: they act on the executions of every workflow."""
BUDGET_RAISERS = {
    "approval_api": tuple(
        f"layers/switchyard/stores/budget/dynamodb.py::DynamoDBBudgetLedger.{method}"
        for method in ("totals", "set_limit", "_get")
    )
}
"""Functions whose code only raises a scope's limit (`raise_budget_in`: `BudgetLedger.totals`
and `set_limit`): of the budget ledger's calls, only these are theirs."""


RECORDER_FUNCTION = "recorder"
RECORDER_READS = ("layers/switchyard/records/recorder.py::Recorder",)
"""The code that reads executions (their description, definition and history) for the run
records: on every execution of the stack's workflow machines."""
CATCH_UP_FUNCTION = "dashboard_api"
CATCH_UP_READS = (
    "layers/switchyard/records/catch_up.py::CatchUp",
    "layers/switchyard/records/recorder.py::Recorder._history",
)
"""What the dashboard's catch-up of a running run calls (`records.catch_up`, and
`Recorder.record` on executions the recorder has described already): their history."""


def workflow_machine_names(synthesized: Synthesized, values: AwsValues) -> set[str]:
    """The names of the machines switchyard compiled (not the trigger starters)."""
    return {
        machine.name
        for machine in deployed_machines(synthesized)
        if str(
            json.loads(values.definition((machine.stack, machine.logical_id))).get("Comment", "")
        ).startswith("switchyard workflow ")
    }


def gate_machines(synthesized: Synthesized, values: AwsValues) -> set[str]:
    """The ARNs of the machines with a Task state that hands `GATE_FUNCTION` a task token: a
    task token's calls are authorized on the machine of the execution that issued it."""
    notify = {
        values.attribute(stack, logical_id, "Arn")
        for stack, template in synthesized.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
        and {"Key": "switchyard:function", "Value": GATE_FUNCTION}
        in resource["Properties"].get("Tags", [])
    }
    assert len(notify) == 1, notify
    (arn,) = notify
    found = set()
    for machine in deployed_machines(synthesized):
        definition = json.loads(values.definition((machine.stack, machine.logical_id)))
        for _, task in tasks(definition["States"]):
            if not task["Resource"].endswith(".waitForTaskToken"):
                continue
            function = str(
                (task.get("Parameters") or task.get("Arguments") or {}).get("FunctionName")
            )
            if function == arn or function.startswith(f"{arn}:"):
                found.add(values.attribute(machine.stack, machine.logical_id, "Arn"))
    return found


class _StandInSecrets:
    """Secrets Manager as `ApprovalSettings.from_env` reads it, with a stand-in signing key."""

    def get_secret_value(self, SecretId: str) -> dict[str, str]:  # noqa: N803 (boto3's name)
        return {"SecretString": json.dumps({"k1": "stand-in-" + "0" * 32})}


def request_context(variables: Mapping[str, str]) -> Context:
    """The condition keys of a function's requests, from its (resolved) environment: SES's
    `ses:FromAddress` is the address of the sender its code sends as (`ApprovalSettings`)."""
    if SES_IDENTITY_ENV not in variables:
        return {}
    settings = ApprovalSettings.from_env(None, variables, secrets=_StandInSecrets())
    return {"ses:FromAddress": parseaddr(settings.email_from)[1]}


def _source(module: str) -> str:
    """A file's source, or one class's (`path::Class`), or one method's (`path::Class.method`)."""
    file, _, name = module.partition("::")
    path = (
        POWERTOOLS / file.removeprefix("powertools:")
        if file.startswith("powertools:")
        else REPO / file
    )
    text = path.read_text()
    if not name:
        return text
    cls, _, method = name.partition(".")
    (node,) = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == cls]
    if method:
        (node,) = [
            n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method
        ]  # fmt: skip
    return ast.get_source_segment(text, node) or ""


def code_actions(service: str, modules: tuple[str, ...]) -> set[str]:
    """IAM actions of the calls of a boto3 client of `service` in `modules`: each call of one
    of its operations (`.get_item(`), and a transaction's item operations."""
    model = botocore.session.get_session().get_service_model(service)
    operations = {xform_name(op): op for op in model.operation_names}
    prefix = IAM_PREFIX.get(service, service)
    actions: set[str] = set()
    for module in modules:
        source = _source(module)
        for method in re.findall(r"\.([a-z_]+)\(", source):
            if method not in operations:
                continue
            if method == "transact_write_items":
                # IAM authorizes a transaction per item (there is no TransactWriteItems action).
                kinds = set(re.findall(r'"(Put|Update|Delete|ConditionCheck)":', source))
                actions |= {f"dynamodb:{k}Item" for k in kinds}
            else:
                actions.add(f"{prefix}:{operations[method]}")
    assert actions, f"no {service} call in {modules}"
    return actions


def function_needs(
    synthesized: Synthesized, values: AwsValues
) -> dict[tuple[str, str], tuple[str, set[tuple[str, str]]]]:
    """Each function (stack, logical id) -> (folder, what its code calls on its resources)."""
    arns = Arns(values.region, values.account)
    found = {}
    answered = gate_machines(synthesized, values)
    executions = {
        arns("states", f"execution:{machine.name}:{ANY_NAME}")
        for machine in deployed_machines(synthesized)
        if machine.properties.get("StateMachineType", "STANDARD") == "STANDARD"
    }
    for stack, template in synthesized.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            properties = resource["Properties"]
            tags = {t["Key"]: t["Value"] for t in properties.get("Tags", [])}
            if "switchyard:function" not in tags:
                continue  # CDK's own (custom-resource providers)
            variables = properties.get("Environment", {}).get("Variables", {})
            needs: set[tuple[str, str]] = set()
            for variable, used in USED.items():
                if variable not in variables:
                    continue
                value = str(values.resolve(variables[variable], stack))
                arn = used.arn(value, arns)
                actions = code_actions(used.service, used.modules)
                reader = OUTPUT_READERS.get(tags["switchyard:function"])
                if variable == OUTPUT_BUCKET_ENV and reader is not None:
                    actions = {reader} & actions
                raiser = BUDGET_RAISERS.get(tags["switchyard:function"])
                if variable == BUDGET_TABLE_ENV and raiser is not None:
                    actions = code_actions(used.service, raiser)
                needs |= {(a, arn) for a in actions}
                needs |= kms_needs(synthesized, values, stack, variables[variable], actions)
            answers = GATE_ANSWERERS.get(tags["switchyard:function"])
            if answers is not None:
                actions = code_actions("stepfunctions", GATE_ANSWERS) & answers
                assert actions == answers, f"{GATE_ANSWERS} no longer calls {answers - actions}"
                needs |= {(a, machine) for a in actions for machine in answered}
            if tags["switchyard:function"] in RUN_OPERATORS:
                actions = code_actions("stepfunctions", RUN_OPERATIONS + RESET_READS)
                needs |= {(a, execution) for a in actions for execution in executions}
                actions = code_actions("stepfunctions", RESET_STARTS)
                needs |= {
                    (a, arns("states", f"stateMachine:{machine}{qualifier}"))
                    for a in actions
                    for machine in workflow_machine_names(synthesized, values)
                    for qualifier in ("", f":{ANY_NAME}")
                }
            reads = {RECORDER_FUNCTION: RECORDER_READS, CATCH_UP_FUNCTION: CATCH_UP_READS}
            if tags["switchyard:function"] in reads:
                actions = code_actions("stepfunctions", reads[tags["switchyard:function"]])
                needs |= {
                    (a, arns("states", f"execution:{machine}:{ANY_NAME}"))
                    for a in actions
                    for machine in workflow_machine_names(synthesized, values)
                }
            found[(stack, logical_id)] = (tags["switchyard:function"], needs)
    return found


def function_contexts(
    synthesized: Synthesized, values: AwsValues
) -> dict[tuple[str, str], Context]:
    """Each function (stack, logical id) -> the condition keys of its requests."""
    return {
        (stack, logical_id): request_context(
            {
                name: str(values.resolve(value, stack))
                for name, value in resource["Properties"]
                .get("Environment", {})
                .get("Variables", {})
                .items()
            }
        )
        for stack, template in synthesized.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::Lambda::Function"
    }


KMS_FOR = {
    "s3:GetObject": "kms:Decrypt",
    "s3:PutObject": "kms:GenerateDataKey",
    "secretsmanager:GetSecretValue": "kms:Decrypt",
}
"""What reading or writing a resource encrypted with a customer-managed key also takes: S3 with
SSE-KMS (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingKMSEncryption.html), Secrets
Manager (https://docs.aws.amazon.com/secretsmanager/latest/userguide/security-encryption.html).
(DynamoDB decrypts through the grants it holds on the table's key; its callers need none.)"""


def _referenced(
    synthesized: Synthesized, stack: str, value: Any
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The resources `value` refers to (through nested stacks' parameters), with their stack."""
    if isinstance(value, list):
        for item in value:
            yield from _referenced(synthesized, stack, item)
        return
    if not isinstance(value, dict):
        return
    name = value.get("Ref") or (value.get("Fn::GetAtt") or [None])[0]
    if isinstance(name, str):
        template = synthesized.templates[stack]
        if name in template.get("Parameters", {}):
            passed = synthesized.template["Resources"][stack]["Properties"]["Parameters"][name]
            yield from _referenced(synthesized, "Switchyard", passed)
        elif name in template["Resources"]:
            yield stack, template["Resources"][name]
        return
    for inner in value.values():
        yield from _referenced(synthesized, stack, inner)


def kms_needs(
    synthesized: Synthesized, values: AwsValues, stack: str, variable: Any, actions: set[str]
) -> set[Need]:
    """The key actions that `actions` on the resource `variable` names take, when that resource
    is encrypted with a key of the stack."""
    found: set[Need] = set()
    for where, resource in _referenced(synthesized, stack, variable):
        properties = resource.get("Properties", {})
        key = None
        if resource["Type"] == "AWS::S3::Bucket":
            rules = properties.get("BucketEncryption", {}).get("ServerSideEncryptionConfiguration")
            key = (rules or [{}])[0].get("ServerSideEncryptionByDefault", {}).get("KMSMasterKeyID")
        elif resource["Type"] == "AWS::SecretsManager::Secret":
            key = properties.get("KmsKeyId")
        if key is None:
            continue
        key_arn = str(values.resolve(key, where))
        found |= {(KMS_FOR[a], key_arn) for a in actions if a in KMS_FOR}
    return found


def tool_needs(synthesized: Synthesized, context: dict[str, Any]) -> dict[str, set[Need]]:
    """Function folder -> what its tools need, derived again from the workflow files."""
    settings = Settings.from_node(_Context(synthesized.root, context))
    workflows = []
    for path in sorted((synthesized.root / "workflows").glob("*.yaml")):
        if "steps" not in (load_document(path.read_text()).data or {}):
            continue
        workflow = validate_file(path).workflow
        assert workflow is not None, path
        workflows.append(workflow)
    access = derive_tool_access(workflows, settings)
    arns_values = AwsValues(synthesized)
    found: dict[str, set[Need]] = {}
    for need in access.needs:
        resource = (
            need.resource.replace(PARTITION, "aws")
            .replace(REGION, arns_values.region)
            .replace(ACCOUNT, arns_values.account)
        )
        found.setdefault(need.function, set()).update((a, resource) for a in need.actions)
    return found


class _Context:
    """The part of a construct node `Settings.from_node` reads: context values."""

    def __init__(self, root: Path, context: dict[str, Any]) -> None:
        self._context = {"switchyard:root": str(root), **context}

    def try_get_context(self, key: str) -> Any:
        return self._context.get(key)


CONTEXTS = {
    "platform": {},
    "platform_agnostic": {},
    "corpus": CORPUS_CONTEXT,
    "configured": CONFIGURED_CONTEXT,
}


@pytest.mark.parametrize("which", SYNTHESIZED)
def test_every_functions_role_may_call_what_its_code_and_its_tools_call(
    which: str, request: pytest.FixtureRequest
) -> None:
    synthesized: Synthesized = request.getfixturevalue(which)
    policies = Policies(synthesized)
    tools = tool_needs(synthesized, CONTEXTS[which])
    contexts = function_contexts(synthesized, policies.values)
    denied, checked = [], 0
    for (stack, logical_id), (folder, needs) in function_needs(
        synthesized, policies.values
    ).items():
        role = policies.role_of(
            stack, synthesized.templates[stack]["Resources"][logical_id]["Properties"]["Role"]
        )
        for action, resource in sorted(needs | tools.get(folder, set())):
            checked += 1
            wildcard = resource.replace("*", ANY_NAME).replace("?", "x")
            if not policies.allows(role, action, wildcard, contexts[(stack, logical_id)]):
                denied.append(f"{folder} ({logical_id}): {action} on {wildcard}")
    assert checked > 20
    assert not denied, "\n".join(denied)


def task_token_actions() -> set[str]:
    """Step Functions' calls that answer a task token: the operations whose input is a
    `taskToken` (SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat), from botocore's model."""
    model = botocore.session.get_session().get_service_model("stepfunctions")
    return {
        f"states:{name}"
        for name in model.operation_names
        if "taskToken" in model.operation_model(name).input_shape.members
    }


@pytest.mark.parametrize("which", ["platform", "configured"])
def test_no_role_may_answer_a_gates_token_in_a_way_its_code_does_not(
    which: str, request: pytest.FixtureRequest
) -> None:
    """Least privilege the other way round: every task-token call a function's role allows on a
    gate's machine is one its code makes. approval_api approves and rejects; no code sends
    heartbeats, so no role may (a grant nobody uses is one an attacker with the role could)."""
    synthesized: Synthesized = request.getfixturevalue(which)
    policies = Policies(synthesized)
    machines = gate_machines(synthesized, policies.values)
    actions = task_token_actions()
    assert machines and "states:SendTaskHeartbeat" in actions
    contexts = function_contexts(synthesized, policies.values)
    unused = []
    for (stack, logical_id), (folder, needs) in function_needs(
        synthesized, policies.values
    ).items():
        role = policies.role_of(
            stack, synthesized.templates[stack]["Resources"][logical_id]["Properties"]["Role"]
        )
        for action in sorted(actions):
            for machine in sorted(machines):
                allowed = policies.allows(role, action, machine, contexts[(stack, logical_id)])
                if allowed and (action, machine) not in needs:
                    unused.append(f"{folder} ({logical_id}): {action} on {machine}")
    assert not unused, "\n".join(unused)


def test_code_actions_are_read_from_the_code() -> None:
    """The budget ledger's transactions and reads; Powertools' idempotency store's calls."""
    budget = code_actions("dynamodb", USED[BUDGET_TABLE_ENV].modules)
    assert {"dynamodb:GetItem", "dynamodb:UpdateItem"} <= budget
    idempotency = code_actions("dynamodb", USED[IDEMPOTENCY_TABLE_ENV].modules)
    assert {"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:DeleteItem"} <= idempotency
    assert code_actions("s3", USED[OUTPUT_BUCKET_ENV].modules) == {
        "s3:GetObject",
        "s3:PutObject",
    }


def test_encrypted_outputs_and_secrets_take_their_key(platform: Synthesized) -> None:
    """The derivation itself: the output bucket and the secrets are under the data key."""
    values = AwsValues(platform)
    needs = dict(function_needs(platform, values).values())
    agent = {
        action for action, resource in needs["agent_step"] if resource.startswith("arn:aws:kms:")
    }
    assert agent == {"kms:Decrypt", "kms:GenerateDataKey"}  # outputs, and the secrets
    reader = {action for action, resource in needs["render"] if ":kms:" in resource}
    assert reader == {"kms:Decrypt"}


def test_approval_apis_calls_are_derived_and_its_sender_condition_is_evaluated(
    configured: Synthesized,
) -> None:
    """approval_api's calls come from its code and its environment (the signing key and Slack
    secrets, SES as the configured sender, the gates' task tokens); the SES grant's condition is
    evaluated on the address the code sends as, so another sender is denied."""
    policies = Policies(configured)
    values = policies.values
    needs = {
        folder: (key, found) for key, (folder, found) in function_needs(configured, values).items()
    }
    (stack, logical_id), found = needs["approval_api"]
    actions = {action for action, _ in found}
    assert {
        "secretsmanager:GetSecretValue",
        "ses:SendEmail",
        "states:SendTaskSuccess",
        "states:SendTaskFailure",
        "states:StopExecution",
        "states:DescribeExecution",
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
    } <= actions
    assert "dynamodb:TransactWriteItems" not in actions  # a raise reserves nothing
    context = function_contexts(configured, values)[(stack, logical_id)]
    assert context == {"ses:FromAddress": "noreply@example.com"}
    role = policies.role_of(
        stack, configured.templates[stack]["Resources"][logical_id]["Properties"]["Role"]
    )
    identity = Arns(values.region, values.account)("ses", "identity/noreply@example.com")
    assert policies.allows(role, "ses:SendEmail", identity, context)
    assert not policies.allows(
        role, "ses:SendEmail", identity, {"ses:FromAddress": "someone@example.com"}
    )
    assert not policies.allows(role, "ses:SendEmail", identity, {"ses:FromAddress": None})
    with pytest.raises(AssertionError, match="cannot evaluate the condition"):
        policies.allows(role, "ses:SendEmail", identity)
    # An operator's cancel reaches the workflows' executions, and nothing else.
    arns = Arns(values.region, values.account)
    own = arns("states", f"execution:Switchyard-tool-showcase:{ANY_NAME}")
    assert policies.allows(role, "states:StopExecution", own)
    assert policies.allows(role, "states:DescribeExecution", own)
    for other in ("execution:Other-tool-showcase:", "execution:Switchyard-tool-showcase-2:"):
        assert not policies.allows(role, "states:StopExecution", arns("states", other + ANY_NAME))
    machine = arns("states", "stateMachine:Switchyard-tool-showcase")
    assert not policies.allows(role, "states:StopExecution", machine)
    # An operator's reset starts a new run of the same workflows' machines (their aliases too).
    assert policies.allows(role, "states:StartExecution", machine)
    assert policies.allows(role, "states:StartExecution", f"{machine}:live")
    for other in ("stateMachine:Other-tool-showcase", "stateMachine:Switchyard-tool-showcase-2"):
        assert not policies.allows(role, "states:StartExecution", arns("states", other))


def test_the_recorder_reads_the_executions_of_this_stacks_workflows_and_no_others(
    platform: Synthesized,
) -> None:
    """Its calls come from its code (describe, definition, history); each is allowed on every
    workflow machine's executions and denied on another stack's and on a trigger's starter."""
    policies = Policies(platform)
    values = policies.values
    needs = {
        folder: (key, found) for key, (folder, found) in function_needs(platform, values).items()
    }
    (stack, logical_id), found = needs[RECORDER_FUNCTION]
    reads = {(action, arn) for action, arn in found if action.startswith("states:")}
    assert {action for action, _ in reads} == {
        "states:DescribeExecution",
        "states:DescribeStateMachineForExecution",
        "states:GetExecutionHistory",
    }
    machines = workflow_machine_names(platform, values)
    assert "Switchyard-customer-support" in machines
    assert len(reads) == 3 * len(machines)
    role = policies.role_of(
        stack, platform.templates[stack]["Resources"][logical_id]["Properties"]["Role"]
    )
    arns = Arns(values.region, values.account)
    for other in ("Other-customer-support", "Switchyard-trigger-showcase-event-0"):
        execution = arns("states", f"execution:{other}:{ANY_NAME}")
        assert not policies.allows(role, "states:GetExecutionHistory", execution), other


def test_the_dashboard_reads_only_the_history_of_this_stacks_workflows(
    platform: Synthesized,
) -> None:
    """Its catch-up of a running run reads the history (derived from its code), on every
    workflow machine's executions; not their description, not another stack's, nor a
    trigger's starter's; and nothing of the output bucket but its objects' content."""
    policies = Policies(platform)
    values = policies.values
    needs = {
        folder: (key, found) for key, (folder, found) in function_needs(platform, values).items()
    }
    (stack, logical_id), found = needs[CATCH_UP_FUNCTION]
    reads = {(action, arn) for action, arn in found if action.startswith("states:")}
    history = {(a, arn) for a, arn in reads if a == "states:GetExecutionHistory"}
    assert len(history) == len(workflow_machine_names(platform, values))
    assert {a for a, _ in reads} == {"states:GetExecutionHistory"} | set(
        GATE_ANSWERERS[CATCH_UP_FUNCTION]
    )
    role = policies.role_of(
        stack, platform.templates[stack]["Resources"][logical_id]["Properties"]["Role"]
    )
    arns = Arns(values.region, values.account)
    own = arns("states", f"execution:Switchyard-customer-support:{ANY_NAME}")
    assert policies.allows(role, "states:GetExecutionHistory", own)
    assert not policies.allows(role, "states:DescribeExecution", own)
    assert not policies.allows(role, "states:StopExecution", own)
    for other in ("Other-customer-support", "Switchyard-trigger-showcase-event-0"):
        execution = arns("states", f"execution:{other}:{ANY_NAME}")
        assert not policies.allows(role, "states:GetExecutionHistory", execution), other
    s3 = {a for a, _ in found if a.startswith("s3:")}
    assert s3 == {"s3:GetObject"}
    for action in ("s3:PutObject", "s3:DeleteObject"):
        bucket = next(arn for a, arn in found if a == "s3:GetObject")
        assert not policies.allows(role, action, bucket), action
