"""`switchyard:roles` in CDK context: the people as JSON, or a file naming them; checked at synth
as the functions will read them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.config import SettingsError
from infra.constructs.approvals import MAX_ROLES_JSON, read_roles
from switchyard.constants import ROLES_ENV, SES_IDENTITY_ENV, SLACK_SECRET_ENV
from tests.infra.synth import Synthesized

PEOPLE = {"lead": [{"name": "dana", "email": "dana@example.com", "slack": "U024BE7LH"}, "sam"]}


def test_roles_come_as_json_an_object_or_a_file(tmp_path: Path) -> None:
    compact = json.dumps(PEOPLE, separators=(",", ":"))
    assert read_roles(PEOPLE, tmp_path) == compact
    assert read_roles(json.dumps(PEOPLE), tmp_path) == compact
    (tmp_path / "people.yaml").write_text(
        "lead:\n  - {name: dana, email: dana@example.com, slack: U024BE7LH}\n  - sam\n"
    )
    assert read_roles("people.yaml", tmp_path) == compact


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("missing.yaml", "no file"),
        ("{not json", "not JSON"),
        ({"lead": [{"name": "d", "email": "nope"}]}, "not an e-mail address"),
        ({"lead": [f"person-{n:04d}" for n in range(400)]}, "environment holds"),
    ],
)
def test_roles_that_cannot_work_fail_the_synth_by_name(
    tmp_path: Path, value: object, message: str
) -> None:
    with pytest.raises(SettingsError, match=message) as raised:
        read_roles(value, tmp_path)
    assert "switchyard:roles" in str(raised.value)
    assert MAX_ROLES_JSON < 4096


@pytest.mark.slow
def test_slack_and_people_reach_both_approval_functions(configured: Synthesized) -> None:
    functions = {
        tags["Value"]: resource["Properties"]
        for resource in configured.resources("AWS::Lambda::Function").values()
        for tags in resource["Properties"].get("Tags", [])
        if tags["Key"] == "switchyard:function"
    }
    (slack,) = [
        logical_id
        for logical_id, resource in configured.template["Resources"].items()
        if resource["Type"] == "AWS::SecretsManager::Secret" and "Slack" in logical_id
    ]
    for name in ("approval_notify", "approval_api"):
        variables = functions[name]["Environment"]["Variables"]
        assert json.loads(variables[ROLES_ENV])["lead"][0]["name"] == "dana"
        assert variables[SLACK_SECRET_ENV] == {"Ref": slack}
        assert variables[SES_IDENTITY_ENV] == "noreply@example.com"
