"""State machines, versions and aliases: the Step Functions API calls that do not touch
running executions (they run on a pooled connection, outside the coordinator)."""

from __future__ import annotations

import re
import uuid
from datetime import datetime
from typing import Any

from switchyard.engine import errors
from switchyard.engine.arns import Arns, split_machine_arn
from switchyard.engine.asl import InvalidDefinitionError, parse_definition
from switchyard.engine.store import EngineStore, MachineRow

_NAME = re.compile(r"^[0-9A-Za-z_-]{1,80}$")


def check_definition(text: str) -> None:
    try:
        parse_definition(text)
    except InvalidDefinitionError as exc:
        raise errors.InvalidDefinition(str(exc)) from None
    except ValueError as exc:
        raise errors.InvalidDefinition(f"Invalid State Machine Definition: {exc}") from None


def create(
    store: EngineStore,
    arns: Arns,
    *,
    name: str,
    definition: str,
    role_arn: str = "",
    machine_type: str = "STANDARD",
    publish: bool = False,
    version_description: str | None = None,
) -> dict[str, Any]:
    if not _NAME.match(name):
        raise errors.InvalidName(f"Invalid Name: '{name}'")
    check_definition(definition)
    arn = arns.machine(name)
    existing = store.machine(arn)
    digest = store.save_definition(definition)
    if existing is not None:
        if existing.definition_hash == digest and existing.role_arn == role_arn:
            result: dict[str, Any] = {"stateMachineArn": arn, "creationDate": existing.created_at}
            if publish:
                result.update(_publish(store, existing, version_description))
            return result  # CreateStateMachine is idempotent for the same definition
        raise errors.StateMachineAlreadyExists(f"State Machine Already Exists: '{arn}'")
    revision = str(uuid.uuid4())
    store.insert_machine(
        arn=arn, name=name, machine_type=machine_type, digest=digest, role_arn=role_arn,
        revision=revision, description=None,
    )  # fmt: skip
    machine = store.machine(arn)
    assert machine is not None
    result = {"stateMachineArn": arn, "creationDate": machine.created_at}
    if publish:
        result.update(_publish(store, machine, version_description))
    return result


def update(
    store: EngineStore,
    arn: str,
    *,
    definition: str | None,
    role_arn: str | None,
    publish: bool = False,
    version_description: str | None = None,
) -> dict[str, Any]:
    machine = _machine(store, arn)
    digest = None
    if definition is not None:
        check_definition(definition)
        digest = store.save_definition(definition)
    revision = machine.revision_id
    if (digest and digest != machine.definition_hash) or (
        role_arn and role_arn != machine.role_arn
    ):
        revision = str(uuid.uuid4())
        store.update_machine(machine.arn, digest=digest, role_arn=role_arn, revision=revision)
    updated = _machine(store, arn)
    result: dict[str, Any] = {"updateDate": updated.updated_at, "revisionId": updated.revision_id}
    if publish:
        result.update(_publish(store, updated, version_description))
    return result


def publish(
    store: EngineStore, arn: str, *, description: str | None, revision_id: str | None
) -> dict[str, Any]:
    machine = _machine(store, arn)
    if revision_id is not None and revision_id != machine.revision_id:
        raise errors.ValidationException("The revision ID does not match the latest revision")
    published = _publish(store, machine, description)
    return {
        "stateMachineVersionArn": published["stateMachineVersionArn"],
        "creationDate": published["_created"],
    }


def _publish(store: EngineStore, machine: MachineRow, description: str | None) -> dict[str, Any]:
    published = store.publish_version(
        machine.arn,
        digest=machine.definition_hash,
        revision=machine.revision_id,
        description=description,
    )
    return {"stateMachineVersionArn": published.arn, "_created": published.created_at}


def describe(store: EngineStore, arn: str) -> dict[str, Any]:
    base, qualifier = split_machine_arn(arn)
    machine = _machine(store, base)
    if qualifier is not None and qualifier.isdigit():
        version = store.version(arn)
        if version is None:
            raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
        return _description(
            machine, version.definition, arn, version.created_at, version.description
        )
    return _description(
        machine, machine.definition, machine.arn, machine.created_at, machine.description
    )


def _description(
    machine: MachineRow, definition: str, arn: str, created: datetime, description: str | None
) -> dict[str, Any]:
    result: dict[str, Any] = {
        "stateMachineArn": arn,
        "name": machine.name,
        "status": "ACTIVE",
        "definition": definition,
        "roleArn": machine.role_arn or "arn:aws:iam::000000000000:role/switchyard-local",
        "type": machine.type,
        "creationDate": created,
        "revisionId": machine.revision_id,
        "loggingConfiguration": {"level": "OFF", "includeExecutionData": False},
        "tracingConfiguration": {"enabled": False},
    }
    if description:
        result["description"] = description
    return result


def list_machines(store: EngineStore) -> list[dict[str, Any]]:
    return [
        {"stateMachineArn": m.arn, "name": m.name, "type": m.type, "creationDate": m.created_at}
        for m in store.machines()
    ]


def list_versions(store: EngineStore, arn: str) -> list[dict[str, Any]]:
    _machine(store, arn)
    return [
        {"stateMachineVersionArn": v.arn, "creationDate": v.created_at} for v in store.versions(arn)
    ]


def delete(store: EngineStore, arn: str) -> None:
    base, _ = split_machine_arn(arn)
    store.delete_machine(base)


def create_alias(
    store: EngineStore, *, name: str, routing: list[dict[str, Any]], description: str | None
) -> dict[str, Any]:
    if not routing:
        raise errors.ValidationException("routingConfiguration needs a version")
    base, _ = split_machine_arn(str(routing[0]["stateMachineVersionArn"]))
    _machine(store, base)
    for route in routing:
        if store.version(str(route["stateMachineVersionArn"])) is None:
            raise errors.ResourceNotFound(
                f"Resource not found: '{route['stateMachineVersionArn']}'"
            )
    arn = f"{base}:{name}"
    store.upsert_alias(arn, base, name, routing, description)
    alias = store.alias(arn)
    assert alias is not None
    return {"stateMachineAliasArn": arn, "creationDate": alias.created_at}


def _machine(store: EngineStore, arn: str) -> MachineRow:
    base, _ = split_machine_arn(arn)
    machine = store.machine(base)
    if machine is None:
        raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
    return machine
