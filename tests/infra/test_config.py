"""The runtime's settings from CDK context: cdk.json values, `-c key=value` strings, and refusals
that name the setting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aws_cdk import App

from infra.config import Settings, SettingsError
from tests.infra.synth import REPO


def settings(tmp_path: Path, **context: Any) -> Settings:
    app = App(context={"switchyard:root": str(tmp_path), **context})
    return Settings.from_node(app.node)


def test_nothing_configured_sets_nothing(tmp_path: Path) -> None:
    found = settings(tmp_path)
    assert found.http_allowed_hosts == ()
    assert found.sql_connections == {} and found.tenant_daily_limits == {}
    assert found.model_prices is None and found.email_from is None
    assert found.tool_resources == {}
    assert found.stuck_after_seconds == 300


def test_the_stuck_runs_threshold_is_seconds_from_cdk_json_or_the_command_line(
    tmp_path: Path,
) -> None:
    assert settings(tmp_path, **{"switchyard:stuckAfterSeconds": 600}).stuck_after_seconds == 600
    assert settings(tmp_path, **{"switchyard:stuckAfterSeconds": "90"}).stuck_after_seconds == 90


def test_command_line_strings_are_read_as_json_or_a_host_list(tmp_path: Path) -> None:
    found = settings(
        tmp_path,
        **{
            "switchyard:httpAllowedHosts": "API.example.com, *.example.org",
            "switchyard:tenantDailyLimits": '{"acme": 50}',
            "switchyard:sqlConnections": '{"ledger": "prod/ledger"}',
            "switchyard:toolResources": '{"wf": {"step": {"s3.put": "bucket"}}}',
        },
    )
    assert found.http_allowed_hosts == ("api.example.com", "*.example.org")
    assert found.tenant_daily_limits == {"acme": 50}
    assert found.sql_connections == {"ledger": "prod/ledger"}
    assert found.tool_resources == {"wf": {"step": {"s3.put": ("bucket",)}}}


def test_model_prices_come_from_a_yaml_file_beside_the_app_and_are_checked(
    tmp_path: Path,
) -> None:
    (tmp_path / "prices.yaml").write_text("my-model: {input: 2, output: 8}\n")
    found = settings(tmp_path, **{"switchyard:modelPrices": "prices.yaml"})
    assert found.model_prices == {"my-model": {"input": 2, "output": 8}}
    (tmp_path / "prices.yaml").write_text("my-model: {input: 2}\n")
    with pytest.raises(SettingsError, match=r"prices\.yaml: new model 'my-model' needs input and"):
        settings(tmp_path, **{"switchyard:modelPrices": "prices.yaml"})


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("sqlConnections", {"ledger": "host=db password=x"}, "looks like a conninfo"),
        ("sqlConnections", {"led ger": "prod/ledger"}, "is not a connection name"),
        ("tenantDailyLimits", {"acme": -1}, r"tenantDailyLimits\.acme: expected USD per day"),
        ("httpAllowedHosts", ["https://api.example.com"], "is not a host pattern"),
        ("emailFrom", "support", "is not an email address"),
        ("modelPrices", "missing.json", "no prices file at"),
        ("modelPrices", {"claude-haiku-4-5": {"input": -1}}, "input price .* is negative"),
        ("toolResources", {"wf": {"step": {"s3.put": []}}}, "expected a list of resource names"),
        ("tenantDailyLimits", "{not json", "not JSON"),
        ("stuckAfterSeconds", "5m", "expected a whole number of seconds"),
        ("stuckAfterSeconds", 0, "expected a whole number of seconds"),
        (
            "circuitBreakers",
            {"failure_rate": 1.5},
            r"circuitBreakers\.failure_rate: expected a fraction of the calls above 0",
        ),
        ("circuitBreakers", {"open": 5}, "circuitBreakers: unknown key 'open'"),
        (
            "tenantQuotas",
            {"acme": {"claude-haiku-4-5": {"tokens_per_minute": 0}}},
            r"tenantQuotas\.acme\.claude-haiku-4-5\.tokens_per_minute: expected a whole number",
        ),
    ],
)
def test_a_setting_that_does_not_fit_is_refused_by_name(
    tmp_path: Path, key: str, value: Any, message: str
) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        settings(tmp_path, **{f"switchyard:{key}": value})
    assert str(caught.value).startswith(f"switchyard:{key}")


def test_the_cdk_json_of_the_deploy_guide_is_read_as_documented(tmp_path: Path) -> None:
    guide = (REPO / "docs" / "deploy.md").read_text()
    section = guide.split("## Configuring the steps", 1)[1]
    context = json.loads(section.split("```json\n", 1)[1].split("```", 1)[0])["context"]
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "model-prices.yaml").write_text("claude-haiku-4-5: {input: 1.1}\n")
    found = settings(tmp_path, **context)
    assert found.sql_connections == {"ledger": "prod/ledger-db"}
    assert found.model_prices == {"claude-haiku-4-5": {"input": 1.1}}
    assert found.tool_resources == {
        "reporting": {"file_report": {"s3.put": ("reports-*/incoming/*",)}}
    }
