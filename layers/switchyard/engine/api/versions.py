"""Versions and aliases of state machines. An alias routes starts to one or two versions of the
same machine by weight (the engine starts on the heaviest; see `Engine._machine_for`)."""

from __future__ import annotations

from typing import Any

from switchyard.engine import errors, machines
from switchyard.engine.api import pagination, wire
from switchyard.engine.api.errors import ConflictException
from switchyard.engine.api.operation import ApiContext, Operation, Request, Response
from switchyard.engine.store import AliasRow, EngineStore

_VERSION = frozenset({"version"})
_ALIAS = frozenset({"alias"})


# --- versions ---------------------------------------------------------------------------------


def publish_state_machine_version(api: ApiContext, request: Request) -> Response:
    arn, _ = wire.machine_arn(request["stateMachineArn"])
    with api.engine.read() as store, store.conn.transaction():
        machine = store.machine(arn)
        if machine is None:
            raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
        revision = request.get("revisionId")
        if revision is not None and revision != machine.revision_id:
            raise ConflictException(
                f"Failed to publish the state machine version: revisionId '{revision}' is not"
                f" the latest revision of '{arn}' ({machine.revision_id})"
            )
        return machines.publish(
            store, arn, description=request.get("description"), revision_id=None
        )


def list_state_machine_versions(api: ApiContext, request: Request) -> Response:
    arn, _ = wire.machine_arn(request["stateMachineArn"])
    with api.engine.read() as store:
        listed = machines.list_versions(store, arn)
    page, token = pagination.offset_page("ListStateMachineVersions", {"arn": arn}, request, listed)
    return pagination.with_token({"stateMachineVersions": page}, token)


def delete_state_machine_version(api: ApiContext, request: Request) -> Response:
    arn = request["stateMachineVersionArn"]
    base, qualifier = wire.machine_arn(arn, allow=_VERSION)
    if qualifier is None:
        raise errors.InvalidArn(f"Invalid Arn: 'Not a state machine version ARN: {arn}'")
    with api.engine.read() as store, store.conn.transaction():
        for alias in store.aliases(base):
            if any(route["stateMachineVersionArn"] == arn for route in alias.routing):
                raise ConflictException(
                    f"Version '{arn}' is routed to by alias '{alias.arn}': update or delete"
                    " the alias first"
                )
        store.delete_version(arn)
    return {}


# --- aliases ----------------------------------------------------------------------------------


def create_state_machine_alias(api: ApiContext, request: Request) -> Response:
    base, routing = _routing(request["routingConfiguration"])
    arn = f"{base}:{request['name']}"
    description = request.get("description")
    with api.engine.read() as store, store.conn.transaction():
        existing = store.alias(arn)
        if existing is not None:  # idempotent for the same configuration, as on AWS
            if existing.routing != routing or existing.description != description:
                raise ConflictException(
                    f"Alias '{arn}' already exists with a different configuration"
                )
            return {"stateMachineAliasArn": arn, "creationDate": existing.created_at}
        return machines.create_alias(
            store, name=request["name"], routing=routing, description=description
        )


def describe_state_machine_alias(api: ApiContext, request: Request) -> Response:
    arn = _alias_arn(request["stateMachineAliasArn"])
    with api.engine.read() as store:
        alias = _alias(store, arn)
    return wire.compact(
        {
            "stateMachineAliasArn": alias.arn,
            "name": alias.name,
            "description": alias.description,
            "routingConfiguration": alias.routing,
            "creationDate": alias.created_at,
            "updateDate": alias.updated_at,
        }
    )


def list_state_machine_aliases(api: ApiContext, request: Request) -> Response:
    arn, _ = wire.machine_arn(request["stateMachineArn"])
    with api.engine.read() as store:
        if store.machine(arn) is None:
            raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
        listed = [
            {"stateMachineAliasArn": a.arn, "creationDate": a.created_at}
            for a in store.aliases(arn)
        ]
    page, token = pagination.offset_page("ListStateMachineAliases", {"arn": arn}, request, listed)
    return pagination.with_token({"stateMachineAliases": page}, token)


def update_state_machine_alias(api: ApiContext, request: Request) -> Response:
    arn = _alias_arn(request["stateMachineAliasArn"])
    if request.get("description") is None and request.get("routingConfiguration") is None:
        raise errors.ValidationException(
            "Either the description or the routingConfiguration must be specified"
        )
    with api.engine.read() as store, store.conn.transaction():
        alias = _alias(store, arn)
        routing = alias.routing
        if request.get("routingConfiguration") is not None:
            base, routing = _routing(request["routingConfiguration"])
            if base != alias.machine_arn:
                raise errors.ValidationException(
                    f"The routing configuration of '{arn}' must name versions of"
                    f" '{alias.machine_arn}'"
                )
            _versions_exist(store, routing)
        store.upsert_alias(arn, alias.machine_arn, alias.name, routing, request.get("description"))
        return {"updateDate": _alias(store, arn).updated_at}


def delete_state_machine_alias(api: ApiContext, request: Request) -> Response:
    arn = _alias_arn(request["stateMachineAliasArn"])
    with api.engine.read() as store, store.conn.transaction():
        if not store.delete_alias(arn):
            raise errors.ResourceNotFound(f"Resource not found: '{arn}'")
    return {}


def _alias_arn(arn: str) -> str:
    _, qualifier = wire.machine_arn(arn, allow=_ALIAS)
    if qualifier is None:
        raise errors.InvalidArn(f"Invalid Arn: 'Not a state machine alias ARN: {arn}'")
    return arn


def _alias(store: EngineStore, arn: str) -> AliasRow:
    alias = store.alias(arn)
    if alias is None:
        raise errors.ResourceNotFound(f"Resource not found: '{arn}'")
    return alias


def _routing(routes: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    """(machine ARN, routes): one or two distinct versions of one machine, weights adding to 100."""
    bases: set[str] = set()
    arns: list[str] = []
    for route in routes:
        base, qualifier = wire.machine_arn(route["stateMachineVersionArn"], allow=_VERSION)
        if qualifier is None:
            raise errors.ValidationException(
                f"Routing needs state machine version ARNs, not '{route['stateMachineVersionArn']}'"
            )
        bases.add(base)
        arns.append(route["stateMachineVersionArn"])
    if len(bases) != 1:
        raise errors.ValidationException("Routing must name versions of one state machine")
    if len(set(arns)) != len(arns):
        raise errors.ValidationException("Routing must name each version once")
    if sum(int(route["weight"]) for route in routes) != 100:
        raise errors.ValidationException("The weights of the routing configuration must add to 100")
    return bases.pop(), [
        {"stateMachineVersionArn": r["stateMachineVersionArn"], "weight": r["weight"]}
        for r in routes
    ]


def _versions_exist(store: EngineStore, routing: list[dict[str, Any]]) -> None:
    for route in routing:
        if store.version(route["stateMachineVersionArn"]) is None:
            raise errors.ResourceNotFound(
                f"Resource not found: '{route['stateMachineVersionArn']}'"
            )


OPERATIONS: dict[str, Operation] = {
    "PublishStateMachineVersion": publish_state_machine_version,
    "ListStateMachineVersions": list_state_machine_versions,
    "DeleteStateMachineVersion": delete_state_machine_version,
    "CreateStateMachineAlias": create_state_machine_alias,
    "DescribeStateMachineAlias": describe_state_machine_alias,
    "ListStateMachineAliases": list_state_machine_aliases,
    "UpdateStateMachineAlias": update_state_machine_alias,
    "DeleteStateMachineAlias": delete_state_machine_alias,
}
