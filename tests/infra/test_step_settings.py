"""The runtime's settings and the tools' permissions, on the synthesized template: each only on the
functions that read or use it, secrets never as plain values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.constructs.step_settings import named_env
from switchyard.constants import (
    APPROVAL_BASE_URL_ENV,
    CIRCUIT_BREAKER_POLICY_ENV,
    EMAIL_FROM_ENV,
    HTTP_ALLOWED_HOSTS_ENV,
    MODEL_PRICES_ENV,
    SQL_CONNECTION_ENV_PREFIX,
    TENANT_DAILY_LIMITS_ENV,
    TENANT_QUOTAS_ENV,
)
from tests.infra.synth import Synthesized


def function(synthesized: Synthesized, folder: str) -> tuple[str, dict[str, Any]]:
    (found,) = [
        (logical_id, resource["Properties"])
        for logical_id, resource in synthesized.resources("AWS::Lambda::Function").items()
        if {"Key": "switchyard:function", "Value": folder} in resource["Properties"].get("Tags", [])
    ]
    return found


def environment(synthesized: Synthesized, folder: str) -> dict[str, Any]:
    variables: dict[str, Any] = function(synthesized, folder)[1]["Environment"]["Variables"]
    return variables


def tool_policy(synthesized: Synthesized, folder: str) -> dict[str, Any] | None:
    """The policy of a function's tools (`StepSettings<Function>Tools`)."""
    name = "StepSettings" + "".join(p.capitalize() for p in folder.split("_")) + "Tools"
    found = [r for k, r in synthesized.resources("AWS::IAM::Policy").items() if k.startswith(name)]
    return found[0] if found else None


def granted(synthesized: Synthesized, folder: str) -> dict[str, list[str]]:
    """Actions -> resources as text with CloudFormation's pseudo parameters in `<>`."""
    policy = tool_policy(synthesized, folder)
    assert policy is not None

    def text(value: Any) -> str:
        if isinstance(value, str):
            return value
        if "Ref" in value:
            return f"<{value['Ref']}>"
        separator, parts = value["Fn::Join"]
        return str(separator).join(text(p) for p in parts)

    result: dict[str, list[str]] = {}
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        actions = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        resources = statement["Resource"]
        resources = resources if isinstance(resources, list) else [resources]
        result[",".join(actions)] = [text(r) for r in resources]
    return result


def regional(synthesized: Synthesized) -> str:
    """Region and account in an ARN: the synth's own, or CloudFormation's when agnostic."""
    return f"{synthesized.region or '<AWS::Region>'}:{synthesized.account or '<AWS::AccountId>'}"


def test_the_tool_step_may_reach_exactly_what_its_tools_name(configured: Synthesized) -> None:
    where = regional(configured)
    assert granted(configured, "tool_step") == {
        "events:PutEvents": [f"arn:<AWS::Partition>:events:{where}:event-bus/audit"],
        "lambda:InvokeFunction": [
            f"arn:<AWS::Partition>:lambda:{where}:function:report-enricher:live"
        ],
        "s3:GetObject": ["arn:<AWS::Partition>:s3:::report-templates/default.md"],
        "s3:PutObject": [
            "arn:<AWS::Partition>:s3:::report-archive/*",
            "arn:<AWS::Partition>:s3:::reports-*/reports/*",
        ],
        "secretsmanager:GetSecretValue": [
            f"arn:<AWS::Partition>:secretsmanager:{where}:secret:prod/ledger-??????",
            f"arn:<AWS::Partition>:secretsmanager:{where}:secret:slack/reports-??????",
        ],
        "ses:SendEmail": [
            f"arn:<AWS::Partition>:ses:{where}:identity/example.com",
            f"arn:<AWS::Partition>:ses:{where}:identity/reports@example.com",
        ],
        "sns:ListTopics": ["*"],
        "sns:Publish": [f"arn:<AWS::Partition>:sns:{where}:report-news"],
        "sqs:SendMessage": ["arn:<AWS::Partition>:sqs:eu-west-1:123456789012:reports"],
    }


def test_the_agent_step_may_invoke_only_its_agents_lambda_tool(configured: Synthesized) -> None:
    where = regional(configured)
    assert granted(configured, "agent_step") == {
        "lambda:InvokeFunction": [
            f"arn:<AWS::Partition>:lambda:{where}:function:report-enricher:live"
        ]
    }
    assert tool_policy(configured, "router_step") is None


def test_the_tools_policy_is_attached_to_the_functions_role_before_it_runs(
    configured: Synthesized,
) -> None:
    logical_id, properties = function(configured, "tool_step")
    policy_id = next(
        k
        for k in configured.resources("AWS::IAM::Policy")
        if k.startswith("StepSettingsToolStepTools")
    )
    policy = configured.template["Resources"][policy_id]["Properties"]
    assert policy["Roles"] == [{"Ref": properties["Role"]["Fn::GetAtt"][0]}]
    assert policy_id in configured.template["Resources"][logical_id]["DependsOn"]


def test_each_wildcard_of_the_tools_is_acknowledged_with_its_own_reason(
    configured: Synthesized,
) -> None:
    policy = tool_policy(configured, "tool_step")
    assert policy is not None
    acknowledged = {
        a["id"]: a["reason"] for a in policy["Metadata"]["cdk_nag"]["rules_to_suppress"]
    }
    s3 = "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::"
    assert set(acknowledged) >= {
        f"{s3}report-archive/*]",
        f"{s3}reports-*/reports/*]",
        "AwsSolutions-IAM5[Resource::*]",
    }
    assert (
        "tool-showcase.archive (s3.put) renders the whole key per run"
        in (acknowledged[f"{s3}report-archive/*]"])
    )
    assert (
        "declared in switchyard:toolResources for tool-showcase.file_report (s3.put)"
        in (acknowledged[f"{s3}reports-*/reports/*]"])
    )
    assert "sns:ListTopics" in acknowledged["AwsSolutions-IAM5[Resource::*]"]


def test_sql_connections_are_secret_references_on_the_functions_that_use_them(
    configured: Synthesized,
) -> None:
    tool_env = environment(configured, "tool_step")
    assert tool_env["SWITCHYARD_SQL_LEDGER"] == "secret:prod/ledger"
    # `unused` is configured, but no step names it; the agent runs no SQL.
    for folder in ("tool_step", "agent_step", "router_step"):
        env = environment(configured, folder)
        assert "SWITCHYARD_SQL_UNUSED" not in env
        assert not any("postgres" in json.dumps(v) for v in env.values())
    assert "SWITCHYARD_SQL_LEDGER" not in environment(configured, "agent_step")


def test_the_stack_names_sql_variables_the_way_the_runtime_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from switchyard.runtime.tools import ToolEnvironment

    monkeypatch.setenv(named_env(SQL_CONNECTION_ENV_PREFIX, "ledger-db.eu"), "host=db")
    assert ToolEnvironment().sql_conninfo("ledger-db.eu") == "host=db"


def test_hosts_sender_limits_and_prices_are_set_only_where_they_are_read(
    configured: Synthesized,
) -> None:
    tool, agent, router = (
        environment(configured, f) for f in ("tool_step", "agent_step", "router_step")
    )
    # Only the agent has http tools (crm); no tool step relies on the default sender.
    assert agent[HTTP_ALLOWED_HOSTS_ENV] == "crm.example.com,*.example.org"
    assert HTTP_ALLOWED_HOSTS_ENV not in tool
    assert EMAIL_FROM_ENV not in tool and EMAIL_FROM_ENV not in agent
    for env in (agent, router):
        assert json.loads(env[TENANT_DAILY_LIMITS_ENV]) == {"acme": 50, "default": 200}
        assert json.loads(env[TENANT_QUOTAS_ENV]) == {
            "acme": {"claude-sonnet-4-5": {"tokens_per_minute": 400000}}
        }
        assert env[MODEL_PRICES_ENV] == "/opt/switchyard-config/model-prices.json"
    assert TENANT_DAILY_LIMITS_ENV not in tool and MODEL_PRICES_ENV not in tool
    assert TENANT_QUOTAS_ENV not in tool
    for env in (agent, tool):  # the gateway's users
        assert json.loads(env[CIRCUIT_BREAKER_POLICY_ENV]) == {
            "failure_rate": 0.25,
            "open_seconds": 10,
        }
    assert CIRCUIT_BREAKER_POLICY_ENV not in router


def test_model_prices_ship_in_a_layer_of_their_own(configured: Synthesized) -> None:
    (layer_id,) = [
        k for k in configured.resources("AWS::Lambda::LayerVersion") if "ModelPrices" in k
    ]
    for folder in ("agent_step", "router_step"):
        layers = function(configured, folder)[1]["Layers"]
        assert {"Ref": layer_id} in layers and len(layers) == 2
    assert len(function(configured, "tool_step")[1]["Layers"]) == 1
    assets = configured.root / "cdk.out"
    (prices,) = assets.glob("asset.*/switchyard-config/model-prices.json")
    assert json.loads(prices.read_text()) == {"claude-haiku-4-5": {"input": 1.1, "output": 5.5}}


def test_the_repository_workflows_get_their_bucket_queue_and_sender(platform: Synthesized) -> None:
    where = regional(platform)
    grants = granted(platform, "tool_step")
    assert grants["s3:PutObject"] == ["arn:<AWS::Partition>:s3:::legal-briefs/briefs/*"]
    assert grants["sqs:GetQueueUrl,sqs:SendMessage"] == [
        f"arn:<AWS::Partition>:sqs:{where}:moderation-manual-blocks"
    ]
    assert grants["ses:SendEmail"] == [
        f"arn:<AWS::Partition>:ses:{where}:identity/example.com",
        f"arn:<AWS::Partition>:ses:{where}:identity/support@example.com",
    ]
    # Both examples name their sender: no default sender is needed, none is set.
    assert EMAIL_FROM_ENV not in environment(platform, "tool_step")
    assert tool_policy(platform, "agent_step") is None  # no agent has tools


@pytest.mark.parametrize("folder", ["approval_notify", "agent_step", "tool_step"])
def test_no_function_gets_an_approval_base_url_it_would_not_read(
    platform: Synthesized, folder: str
) -> None:
    assert APPROVAL_BASE_URL_ENV not in environment(platform, folder)
