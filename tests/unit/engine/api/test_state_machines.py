"""State machines through boto3: create (idempotent), describe, update, list, delete, validate."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest

from tests.unit.engine.api.support import PIPELINE, ROLE, Endpoint, create_machine, unique

PASS = {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}


@pytest.fixture(scope="module")
def sfn(endpoint: Endpoint) -> Any:
    return endpoint.client()


def test_create_then_describe_returns_the_definition_and_its_metadata(sfn: Any) -> None:
    name = unique("described")
    created = sfn.create_state_machine(name=name, definition=json.dumps(PIPELINE), roleArn=ROLE)

    described = sfn.describe_state_machine(stateMachineArn=created["stateMachineArn"])

    assert (
        created["stateMachineArn"] == f"arn:aws:states:us-east-1:000000000000:stateMachine:{name}"
    )
    assert "stateMachineVersionArn" not in created
    assert json.loads(described["definition"]) == PIPELINE
    assert described["name"] == name and described["roleArn"] == ROLE
    assert described["status"] == "ACTIVE" and described["type"] == "STANDARD"
    assert described["creationDate"] == created["creationDate"]
    assert isinstance(described["creationDate"], datetime)
    assert described["revisionId"]


def test_create_is_idempotent_for_the_same_definition_and_conflicts_otherwise(sfn: Any) -> None:
    name = unique("twice")
    first = sfn.create_state_machine(name=name, definition=json.dumps(PASS), roleArn=ROLE)

    again = sfn.create_state_machine(name=name, definition=json.dumps(PASS), roleArn=ROLE)

    assert again == {**first, "ResponseMetadata": again["ResponseMetadata"]}
    with pytest.raises(sfn.exceptions.StateMachineAlreadyExists):
        sfn.create_state_machine(name=name, definition=json.dumps(PIPELINE), roleArn=ROLE)


def test_create_refuses_an_invalid_definition_with_its_problems(sfn: Any) -> None:
    broken = {"StartAt": "Missing", "States": {"P": {"Type": "Pass", "End": True}}}
    with pytest.raises(sfn.exceptions.InvalidDefinition) as raised:
        sfn.create_state_machine(name=unique("bad"), definition=json.dumps(broken), roleArn=ROLE)
    assert "Missing" in raised.value.response["Error"]["Message"]
    with pytest.raises(sfn.exceptions.InvalidDefinition):
        sfn.create_state_machine(name=unique("bad"), definition="{not json", roleArn=ROLE)


def test_create_refuses_bad_names_role_arns_and_express(sfn: Any) -> None:
    with pytest.raises(sfn.exceptions.InvalidName):
        sfn.create_state_machine(name="has space", definition=json.dumps(PASS), roleArn=ROLE)
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.create_state_machine(name=unique("r"), definition=json.dumps(PASS), roleArn="role")
    with pytest.raises(sfn.exceptions.StateMachineTypeNotSupported):
        sfn.create_state_machine(
            name=unique("x"), definition=json.dumps(PASS), roleArn=ROLE, type="EXPRESS"
        )
    with pytest.raises(sfn.exceptions.ValidationException):
        sfn.create_state_machine(
            name=unique("v"), definition=json.dumps(PASS), roleArn=ROLE, versionDescription="v"
        )


def test_update_changes_the_definition_and_the_revision(sfn: Any) -> None:
    arn = create_machine(sfn, PASS)
    before = sfn.describe_state_machine(stateMachineArn=arn)

    updated = sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(PIPELINE))

    after = sfn.describe_state_machine(stateMachineArn=arn)
    assert json.loads(after["definition"]) == PIPELINE
    assert updated["revisionId"] == after["revisionId"] != before["revisionId"]
    assert isinstance(updated["updateDate"], datetime)
    role = "arn:aws:iam::000000000000:role/other"
    sfn.update_state_machine(stateMachineArn=arn, roleArn=role)
    assert sfn.describe_state_machine(stateMachineArn=arn)["roleArn"] == role


def test_update_needs_something_to_change_and_an_existing_machine(endpoint: Endpoint) -> None:
    sfn = endpoint.client()
    arn = create_machine(sfn, PASS)
    with pytest.raises(sfn.exceptions.MissingRequiredParameter):
        sfn.update_state_machine(stateMachineArn=arn)
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.update_state_machine(stateMachineArn=arn + "-gone", definition=json.dumps(PASS))
    with pytest.raises(sfn.exceptions.InvalidDefinition):
        sfn.update_state_machine(stateMachineArn=arn, definition="[]")
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.update_state_machine(stateMachineArn=arn + ":1", definition=json.dumps(PASS))


def test_list_state_machines_pages_through_all_of_them(sfn: Any) -> None:
    mine = {create_machine(sfn, PASS, "listed") for _ in range(3)}

    pages = list(
        sfn.get_paginator("list_state_machines").paginate(PaginationConfig={"PageSize": 2})
    )

    listed = [m for page in pages for m in page["stateMachines"]]
    assert all(len(page["stateMachines"]) <= 2 for page in pages)
    assert mine <= {m["stateMachineArn"] for m in listed}
    assert len(listed) == len({m["stateMachineArn"] for m in listed})
    item = next(m for m in listed if m["stateMachineArn"] in mine)
    assert item["type"] == "STANDARD" and isinstance(item["creationDate"], datetime)
    with pytest.raises(sfn.exceptions.InvalidToken):
        sfn.list_state_machines(nextToken="not-a-token")


def test_delete_removes_the_machine_and_is_idempotent(sfn: Any) -> None:
    arn = create_machine(sfn, PASS)

    sfn.delete_state_machine(stateMachineArn=arn)

    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.describe_state_machine(stateMachineArn=arn)
    sfn.delete_state_machine(stateMachineArn=arn)
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.delete_state_machine(stateMachineArn=arn + ":1")


def test_describe_of_missing_or_misnamed_machines(sfn: Any) -> None:
    missing = "arn:aws:states:us-east-1:000000000000:stateMachine:absent"
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist) as raised:
        sfn.describe_state_machine(stateMachineArn=missing)
    assert raised.value.response["Error"]["Message"] == f"State Machine Does Not Exist: '{missing}'"
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.describe_state_machine(stateMachineArn="arn:aws:states:us-east-1:0:activity:a")


def test_validate_state_machine_definition_reports_problems(sfn: Any) -> None:
    ok = sfn.validate_state_machine_definition(definition=json.dumps(PIPELINE))
    broken = {"StartAt": "Nowhere", "States": {"P": {"Type": "Pass"}}}

    failed = sfn.validate_state_machine_definition(definition=json.dumps(broken))

    assert ok["result"] == "OK" and ok["diagnostics"] == []
    assert failed["result"] == "FAIL" and failed["truncated"] is False
    assert failed["diagnostics"] and all(d["severity"] == "ERROR" for d in failed["diagnostics"])
    assert all(d["code"] and d["message"] for d in failed["diagnostics"])
