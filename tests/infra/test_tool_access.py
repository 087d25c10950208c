"""Tool permissions derived from workflows: exactly what each step's tools name, and a refusal that
says what to add when a resource is only known at run time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from infra.config import Settings
from infra.tool_access import ToolAccess, ToolAccessError, derive_tool_access
from switchyard.model import Workflow
from switchyard.validate import validate_text
from tests.infra.conftest import TOOL_SHOWCASE

S3 = "arn:<AWS::Partition>:s3:::"
REGIONAL = "<AWS::Region>:<AWS::AccountId>"


def settings(**kwargs: Any) -> Settings:
    return Settings(root=Path(), statemachines=Path(), workflows=Path(), **kwargs)


def workflow(steps: str) -> Workflow:
    text = f"switchyard: 1\nname: wf\nversion: 1\ninputs:\n  x: {{type: string}}\nsteps:\n{steps}"
    result = validate_text(text)
    assert result.workflow is not None, [d.format() for d in result.diagnostics]
    return result.workflow


def tool_step(tool: str, args: str, step: str = "call") -> str:
    return f"  {step}:\n    type: tool\n    tool: {tool}\n    args: {args}\n"


def grants(access: ToolAccess, function: str = "tool_step") -> dict[str, list[str]]:
    return {",".join(a): r for a, r in access.statements(function).items()}


def showcase() -> Workflow:
    result = validate_text(TOOL_SHOWCASE.read_text())
    assert result.workflow is not None
    return result.workflow


def test_static_arguments_become_exact_resources() -> None:
    access = derive_tool_access(
        [
            workflow(
                tool_step("s3.get", "{bucket: docs, key: a/b.md}", "read")
                + tool_step("sqs.send", "{queue: jobs, message: hi}", "enqueue")
                + tool_step("sns.publish", '{topic: "arn:aws:sns:eu-west-1:1:news", message: hi}')
                + tool_step(
                    "events.put", "{bus: audit, source: s, detail_type: d, detail: {}}", "e"
                )
            )
        ],
        settings(),
    )
    assert grants(access) == {
        "events:PutEvents": [f"arn:<AWS::Partition>:events:{REGIONAL}:event-bus/audit"],
        "s3:GetObject": [f"{S3}docs/a/b.md"],
        "sns:Publish": ["arn:aws:sns:eu-west-1:1:news"],
        "sqs:GetQueueUrl,sqs:SendMessage": [f"arn:<AWS::Partition>:sqs:{REGIONAL}:jobs"],
    }
    assert access.wildcards("tool_step") == {}
    assert access.statements("agent_step") == {}


def test_a_templated_key_grants_the_objects_under_its_static_prefix_with_a_reason() -> None:
    access = derive_tool_access(
        [workflow(tool_step("s3.put", '{bucket: out, key: "r/{{ inputs.x }}.md", body: b}'))],
        settings(),
    )
    assert grants(access) == {"s3:PutObject": [f"{S3}out/r/*"]}
    (reason,) = access.wildcards("tool_step").values()
    assert "wf.call (s3.put)" in reason and "r/{{ inputs.x }}.md" in reason


def test_a_templated_bucket_is_refused_naming_the_workflow_step_and_what_to_add() -> None:
    steps = tool_step("s3.put", '{bucket: "{{ inputs.x }}", key: k, body: b}', "file")
    with pytest.raises(ToolAccessError) as caught:
        derive_tool_access([workflow(steps)], settings())
    message = str(caught.value)
    assert "workflow wf, step file (s3.put): its bucket is a template ({{ inputs.x }})" in message
    assert '"switchyard:toolResources": {"wf": {"file": {"s3.put": ["my-bucket/reports/*"]}}}' in (
        message
    )


def test_a_declaration_replaces_the_derived_resources() -> None:
    steps = tool_step("s3.put", '{bucket: "{{ inputs.x }}", key: k, body: b}', "file")
    declared = {"wf": {"file": {"s3.put": ("team-*/in/*", "shared")}}}
    access = derive_tool_access([workflow(steps)], settings(tool_resources=declared))
    assert grants(access) == {"s3:PutObject": [f"{S3}shared/*", f"{S3}team-*/in/*"]}
    reasons = access.wildcards("tool_step")
    assert set(reasons) == {f"{S3}shared/*", f"{S3}team-*/in/*"}
    assert all(
        "declared in switchyard:toolResources for wf.file (s3.put)" in r for r in reasons.values()
    )


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ({"other": {"file": {"s3.put": ["b"]}}}, "no deployed workflow is named other"),
        ({"wf": {"nope": {"s3.put": ["b"]}}}, "workflow wf has no step nope"),
        ({"wf": {"file": {"s3.get": ["b"]}}}, "step file of workflow wf does not use tool s3.get"),
    ],
)
def test_a_declaration_nothing_uses_is_refused(declared: dict[str, Any], problem: str) -> None:
    steps = tool_step("s3.put", "{bucket: b, key: k, body: b}", "file")
    with pytest.raises(ToolAccessError, match=problem):
        derive_tool_access([workflow(steps)], settings(tool_resources=declared))


def test_a_queue_url_and_a_topic_name_become_their_arns() -> None:
    steps = tool_step(
        "sqs.send", '{queue: "https://sqs.eu-west-1.amazonaws.com/123456789012/q", message: m}'
    ) + tool_step("sns.publish", "{topic: news, message: m}", "tell")
    access = derive_tool_access([workflow(steps)], settings())
    assert grants(access) == {
        "sns:ListTopics": ["*"],
        "sns:Publish": [f"arn:<AWS::Partition>:sns:{REGIONAL}:news"],
        "sqs:SendMessage": ["arn:<AWS::Partition>:sqs:eu-west-1:123456789012:q"],
    }
    # ListTopics takes no resource: the only wildcard, and it says why.
    assert list(access.wildcards("tool_step")) == ["*"]
    assert "sns:ListTopics has no resource-level permissions" in access.wildcards("tool_step")["*"]


def test_email_sends_from_its_from_or_the_configured_sender() -> None:
    steps = tool_step("email.send", '{from: "Ops <ops@example.com>", to: a@b.c, body: x}') + (
        tool_step("email.send", "{to: a@b.c, body: x}", "notify")
    )
    identity = f"arn:<AWS::Partition>:ses:{REGIONAL}:identity/"
    access = derive_tool_access([workflow(steps)], settings(email_from="noreply@mail.example.org"))
    assert grants(access) == {
        "ses:SendEmail": [
            f"{identity}example.com",
            f"{identity}mail.example.org",
            f"{identity}noreply@mail.example.org",
            f"{identity}ops@example.com",
        ]
    }
    assert "email" in access.uses["tool_step"]  # notify relies on the default sender
    with pytest.raises(ToolAccessError) as caught:
        derive_tool_access([workflow(steps)], settings())
    assert (
        "workflow wf, step notify (email.send): it gives no `from` and switchyard:emailFrom is "
        'not set; set the sender in cdk context: "switchyard:emailFrom"'
    ) in str(caught.value)


def test_slack_webhooks_and_sql_connections_are_secrets_read_by_name() -> None:
    steps = tool_step("slack.post", "{webhook: slack/ops, text: t}") + tool_step(
        "sql.query", "{connection: ledger, query: SELECT 1}", "count"
    )
    connections = {"ledger": "arn:aws:secretsmanager:eu-west-1:1:secret:ledger", "x": "prod/x"}
    access = derive_tool_access([workflow(steps)], settings(sql_connections=connections))
    assert grants(access) == {
        "secretsmanager:GetSecretValue": [
            "arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:slack/ops-??????",
            "arn:aws:secretsmanager:eu-west-1:1:secret:ledger",
            "arn:aws:secretsmanager:eu-west-1:1:secret:ledger-??????",
        ]
    }
    assert access.sql_connections == {"tool_step": {"ledger"}}  # not x: no step uses it


def test_a_sql_connection_that_is_not_configured_is_refused() -> None:
    steps = tool_step("sql.query", "{connection: ledger, query: SELECT 1}", "count")
    with pytest.raises(
        ToolAccessError,
        match=r"step count \(sql\.query\): connection 'ledger' is not configured; add it to "
        "switchyard:sqlConnections",
    ):
        derive_tool_access([workflow(steps)], settings())


def test_an_agent_gets_its_lambda_tools_and_nothing_of_the_tool_steps() -> None:
    access = derive_tool_access(
        [showcase()],
        settings(
            email_from="noreply@example.com",
            sql_connections={"ledger": "prod/ledger"},
            tool_resources={"tool-showcase": {"file_report": {"s3.put": ("reports-*/reports/*",)}}},
        ),
    )
    enricher = f"arn:<AWS::Partition>:lambda:{REGIONAL}:function:report-enricher:live"
    assert grants(access, "agent_step") == {"lambda:InvokeFunction": [enricher]}
    assert access.uses["agent_step"] == {"http"}
    assert access.uses["tool_step"] == {"sql"}  # its email step names its sender; no http
    assert grants(access)["lambda:InvokeFunction"] == [enricher]


def test_every_problem_is_reported_at_once() -> None:
    steps = tool_step("s3.get", '{bucket: "{{ inputs.x }}", key: k}', "a") + tool_step(
        "sqs.send", '{queue: "{{ inputs.x }}", message: m}', "b"
    )
    with pytest.raises(ToolAccessError) as caught:
        derive_tool_access([workflow(steps)], settings())
    lines = str(caught.value).splitlines()
    assert lines[0] == "the tools of these steps cannot be given permissions:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == [
        "workflow wf, step a (s3.get)",
        "workflow wf, step b (sqs.send)",
    ]
