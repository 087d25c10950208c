"""State machines: thin handlers over `switchyard.engine.machines`, a write in one transaction."""

from __future__ import annotations

from typing import Any

from switchyard.engine import errors, machines
from switchyard.engine.api import pagination, wire
from switchyard.engine.api.errors import MissingRequiredParameter, StateMachineTypeNotSupported
from switchyard.engine.api.operation import ApiContext, Operation, Request, Response
from switchyard.engine.asl import InvalidDefinitionError, parse_definition

_UPDATABLE = (
    "definition",
    "roleArn",
    "loggingConfiguration",
    "tracingConfiguration",
    "encryptionConfiguration",
)


def create_state_machine(api: ApiContext, request: Request) -> Response:
    if request.get("type", "STANDARD") != "STANDARD":
        raise StateMachineTypeNotSupported(
            "The local engine runs STANDARD state machines only (EXPRESS is not supported)"
        )
    wire.role_arn(request["roleArn"])
    _check_version_description(request)
    with api.engine.read() as store, store.conn.transaction():
        created = machines.create(
            store,
            api.engine.arns,
            name=request["name"],
            definition=request["definition"],
            role_arn=request["roleArn"],
            publish=bool(request.get("publish")),
            version_description=request.get("versionDescription"),
        )
    return wire.pick(created, "stateMachineArn", "creationDate", "stateMachineVersionArn")


def update_state_machine(api: ApiContext, request: Request) -> Response:
    arn, _ = wire.machine_arn(request["stateMachineArn"])
    if all(request.get(member) is None for member in _UPDATABLE):
        raise MissingRequiredParameter(
            "Either the definition, the role ARN, the LoggingConfiguration,"
            " the EncryptionConfiguration or the TracingConfiguration must be specified"
        )
    if request.get("roleArn") is not None:
        wire.role_arn(request["roleArn"])
    _check_version_description(request)
    with api.engine.read() as store, store.conn.transaction():
        updated = machines.update(
            store,
            arn,
            definition=request.get("definition"),
            role_arn=request.get("roleArn"),
            publish=bool(request.get("publish")),
            version_description=request.get("versionDescription"),
        )
    return wire.pick(updated, "updateDate", "revisionId", "stateMachineVersionArn")


def delete_state_machine(api: ApiContext, request: Request) -> Response:
    """Deleting is immediate here (AWS marks it DELETING first); running executions go on."""
    arn, _ = wire.machine_arn(request["stateMachineArn"])
    with api.engine.read() as store, store.conn.transaction():
        machines.delete(store, arn)
    return {}


def describe_state_machine(api: ApiContext, request: Request) -> Response:
    wire.machine_arn(request["stateMachineArn"], allow=frozenset({"version"}))
    with api.engine.read() as store:
        return machines.describe(store, request["stateMachineArn"])


def list_state_machines(api: ApiContext, request: Request) -> Response:
    with api.engine.read() as store:
        listed = machines.list_machines(store)
    page, token = pagination.offset_page("ListStateMachines", {}, request, listed)
    return pagination.with_token({"stateMachines": page}, token)


def validate_state_machine_definition(api: ApiContext, request: Request) -> Response:
    """The engine's own parser is the validator: what it rejects, CreateStateMachine rejects."""
    diagnostics: list[dict[str, Any]] = []
    try:
        parse_definition(request["definition"])
    except InvalidDefinitionError as exc:
        diagnostics = [
            {"severity": "ERROR", "code": p.code, "message": p.message, "location": p.location}
            for p in exc.problems
        ]
    except ValueError as exc:
        diagnostics = [
            {"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": str(exc)}
        ]
    limit = int(request.get("maxResults") or 100)
    return {
        "result": "FAIL" if diagnostics else "OK",
        "diagnostics": diagnostics[:limit],
        "truncated": len(diagnostics) > limit,
    }


def _check_version_description(request: Request) -> None:
    if request.get("versionDescription") is not None and not request.get("publish"):
        raise errors.ValidationException("versionDescription can only be set when publish is true")


OPERATIONS: dict[str, Operation] = {
    "CreateStateMachine": create_state_machine,
    "UpdateStateMachine": update_state_machine,
    "DeleteStateMachine": delete_state_machine,
    "DescribeStateMachine": describe_state_machine,
    "ListStateMachines": list_state_machines,
    "ValidateStateMachineDefinition": validate_state_machine_definition,
}
