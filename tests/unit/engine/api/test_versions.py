"""Versions and aliases through boto3, and executions started on them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.engine.api.support import (
    PIPELINE,
    ROLE,
    Endpoint,
    create_machine,
    pipeline_input,
    unique,
    wait_done,
)

V1 = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "v1", "End": True}}}
V2 = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Result": "v2", "End": True}}}


@pytest.fixture(scope="module")
def sfn(endpoint: Endpoint) -> Any:
    return endpoint.client()


@pytest.fixture
def versioned(sfn: Any) -> tuple[str, str, str]:
    """A machine (now at V2) with version 1 (V1) and version 2 (V2)."""
    created = sfn.create_state_machine(
        name=unique("versioned"),
        definition=json.dumps(V1),
        roleArn=ROLE,
        publish=True,
        versionDescription="first",
    )
    arn = created["stateMachineArn"]
    updated = sfn.update_state_machine(
        stateMachineArn=arn, definition=json.dumps(V2), publish=True, versionDescription="second"
    )
    return arn, created["stateMachineVersionArn"], updated["stateMachineVersionArn"]


def _route(version_arn: str, weight: int) -> dict[str, Any]:
    return {"stateMachineVersionArn": version_arn, "weight": weight}


def test_publishing_numbers_versions_and_keeps_each_definition(
    sfn: Any, versioned: tuple[str, str, str]
) -> None:
    arn, v1, v2 = versioned

    assert (v1, v2) == (f"{arn}:1", f"{arn}:2")
    first = sfn.describe_state_machine(stateMachineArn=v1)
    assert json.loads(first["definition"]) == V1
    assert first["stateMachineArn"] == v1 and first["description"] == "first"
    assert json.loads(sfn.describe_state_machine(stateMachineArn=v2)["definition"]) == V2
    listed = sfn.list_state_machine_versions(stateMachineArn=arn)["stateMachineVersions"]
    assert [v["stateMachineVersionArn"] for v in listed] == [v2, v1]
    paged = sfn.list_state_machine_versions(stateMachineArn=arn, maxResults=1)
    assert len(paged["stateMachineVersions"]) == 1 and "nextToken" in paged


def test_publish_of_an_unchanged_revision_answers_the_same_version(
    sfn: Any, versioned: tuple[str, str, str]
) -> None:
    arn, _, v2 = versioned
    revision = sfn.describe_state_machine(stateMachineArn=arn)["revisionId"]

    published = sfn.publish_state_machine_version(stateMachineArn=arn, revisionId=revision)

    assert published["stateMachineVersionArn"] == v2
    with pytest.raises(sfn.exceptions.ConflictException):
        sfn.publish_state_machine_version(stateMachineArn=arn, revisionId="stale")
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.publish_state_machine_version(stateMachineArn=arn + "-gone")
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.describe_state_machine(stateMachineArn=f"{arn}:9")


def test_an_execution_on_a_version_runs_that_version(
    sfn: Any, versioned: tuple[str, str, str]
) -> None:
    arn, v1, _ = versioned

    execution = sfn.start_execution(stateMachineArn=v1)["executionArn"]

    described = wait_done(sfn, execution)
    assert json.loads(described["output"]) == "v1"
    assert described["stateMachineArn"] == arn
    assert described["stateMachineVersionArn"] == v1
    assert "stateMachineAliasArn" not in described
    on_version = sfn.list_executions(stateMachineArn=v1)["executions"]
    assert [e["executionArn"] for e in on_version] == [execution]
    assert sfn.list_executions(stateMachineArn=f"{arn}:2")["executions"] == []
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.start_execution(stateMachineArn=f"{arn}:7")


def test_an_alias_routes_starts_to_its_version(sfn: Any, versioned: tuple[str, str, str]) -> None:
    arn, v1, v2 = versioned
    alias = sfn.create_state_machine_alias(
        name="live",
        description="prod",
        routingConfiguration=[_route(v1, 100)],
    )["stateMachineAliasArn"]

    first = sfn.start_execution(stateMachineArn=alias)["executionArn"]
    sfn.update_state_machine_alias(
        stateMachineAliasArn=alias,
        routingConfiguration=[_route(v2, 100)],
    )
    second = sfn.start_execution(stateMachineArn=alias)["executionArn"]

    assert alias == f"{arn}:live"
    assert json.loads(wait_done(sfn, first)["output"]) == "v1"
    described = wait_done(sfn, second)
    assert json.loads(described["output"]) == "v2"
    assert described["stateMachineAliasArn"] == alias
    assert described["stateMachineVersionArn"] == v2
    on_alias = sfn.list_executions(stateMachineArn=alias)["executions"]
    assert [e["executionArn"] for e in on_alias] == [second, first]
    assert on_alias[0]["stateMachineAliasArn"] == alias
    shown = sfn.describe_state_machine_alias(stateMachineAliasArn=alias)
    assert shown["name"] == "live" and shown["description"] == "prod"
    assert shown["routingConfiguration"] == [_route(v2, 100)]
    assert shown["updateDate"] >= shown["creationDate"]
    listed = sfn.list_state_machine_aliases(stateMachineArn=arn)["stateMachineAliases"]
    assert [a["stateMachineAliasArn"] for a in listed] == [alias]


def test_alias_create_is_idempotent_and_conflicts_on_another_configuration(
    sfn: Any, versioned: tuple[str, str, str]
) -> None:
    _, v1, v2 = versioned
    routing = [_route(v1, 100)]
    first = sfn.create_state_machine_alias(name="stable", routingConfiguration=routing)

    again = sfn.create_state_machine_alias(name="stable", routingConfiguration=routing)

    assert again["stateMachineAliasArn"] == first["stateMachineAliasArn"]
    assert again["creationDate"] == first["creationDate"]
    with pytest.raises(sfn.exceptions.ConflictException):
        sfn.create_state_machine_alias(name="stable", routingConfiguration=[_route(v2, 100)])


def test_alias_routing_must_be_versions_of_one_machine_weighing_100(
    sfn: Any, versioned: tuple[str, str, str]
) -> None:
    arn, v1, v2 = versioned
    other = sfn.create_state_machine(
        name=unique("other"), definition=json.dumps(V1), roleArn=ROLE, publish=True
    )["stateMachineVersionArn"]
    bad_routes = [
        [_route(v1, 60), _route(v2, 30)],
        [_route(v1, 50), _route(other, 50)],
        [_route(v1, 50), _route(v1, 50)],
    ]
    for routing in bad_routes:
        with pytest.raises(sfn.exceptions.ValidationException):
            sfn.create_state_machine_alias(name="bad", routingConfiguration=routing)
    with pytest.raises(sfn.exceptions.ValidationException):  # all digits would read as a version
        sfn.create_state_machine_alias(name="123", routingConfiguration=[_route(v1, 100)])
    with pytest.raises(sfn.exceptions.ResourceNotFound):
        sfn.create_state_machine_alias(
            name="ghost",
            routingConfiguration=[_route(f"{arn}:9", 100)],
        )
    split = sfn.create_state_machine_alias(
        name="canary",
        routingConfiguration=[_route(v1, 90), _route(v2, 10)],
    )["stateMachineAliasArn"]
    execution = sfn.start_execution(stateMachineArn=split)["executionArn"]
    assert json.loads(wait_done(sfn, execution)["output"]) == "v1"  # the heavier version


def test_deleting_aliases_and_versions(sfn: Any, versioned: tuple[str, str, str]) -> None:
    arn, v1, v2 = versioned
    alias = sfn.create_state_machine_alias(name="doomed", routingConfiguration=[_route(v1, 100)])[
        "stateMachineAliasArn"
    ]

    with pytest.raises(sfn.exceptions.ConflictException):  # the alias still routes to it
        sfn.delete_state_machine_version(stateMachineVersionArn=v1)
    sfn.delete_state_machine_alias(stateMachineAliasArn=alias)
    sfn.delete_state_machine_version(stateMachineVersionArn=v1)

    with pytest.raises(sfn.exceptions.ResourceNotFound):
        sfn.describe_state_machine_alias(stateMachineAliasArn=alias)
    with pytest.raises(sfn.exceptions.ResourceNotFound):
        sfn.delete_state_machine_alias(stateMachineAliasArn=alias)
    with pytest.raises(sfn.exceptions.ResourceNotFound):
        sfn.start_execution(stateMachineArn=alias)
    versions = sfn.list_state_machine_versions(stateMachineArn=arn)["stateMachineVersions"]
    assert [v["stateMachineVersionArn"] for v in versions] == [v2]
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.delete_state_machine_version(stateMachineVersionArn=arn)
    with pytest.raises(sfn.exceptions.InvalidArn):
        sfn.describe_state_machine_alias(stateMachineAliasArn=v2)


def test_aliases_of_a_missing_machine(sfn: Any) -> None:
    missing = "arn:aws:states:us-east-1:000000000000:stateMachine:absent"
    with pytest.raises(sfn.exceptions.StateMachineDoesNotExist):
        sfn.list_state_machine_aliases(stateMachineArn=missing)
    with pytest.raises(sfn.exceptions.ResourceNotFound):
        sfn.update_state_machine_alias(stateMachineAliasArn=f"{missing}:live", description="x")


def test_listing_executions_of_a_missing_alias_is_resource_not_found(sfn: Any) -> None:
    arn = create_machine(sfn, PIPELINE)
    sfn.start_execution(stateMachineArn=arn, input=pipeline_input(1))
    with pytest.raises(sfn.exceptions.ResourceNotFound):
        sfn.list_executions(stateMachineArn=f"{arn}:nope")
