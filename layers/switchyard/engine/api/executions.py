"""Executions: starts, stops and redrives go through the engine's coordinator (`Engine.submit`);
descriptions, lists and histories are reads on pooled connections."""

from __future__ import annotations

from typing import Any

from switchyard.engine import errors
from switchyard.engine.api import pagination, wire
from switchyard.engine.api.operation import ApiContext, Operation, Request, Response
from switchyard.engine.arns import machine_name
from switchyard.engine.commands import RedriveExecution, StartExecution, StopExecution
from switchyard.engine.interpreter.events import to_text
from switchyard.engine.store import EngineStore, ExecutionRow, HistoryRow

ALIAS_OPTION = "stateMachineAliasArn"
"""The execution option that remembers the alias a start named (the engine resolves an alias to
its version and records only the version)."""

_QUALIFIED = frozenset({"version", "alias"})
_REDRIVABLE = frozenset({"FAILED", "TIMED_OUT", "ABORTED"})
_EXECUTION_DATA = ("input", "output")


def start_execution(api: ApiContext, request: Request) -> Response:
    """Idempotent by name: the same name and input while it runs answers the same execution."""
    target = request["stateMachineArn"]
    _, qualifier = wire.machine_arn(target, allow=_QUALIFIED)
    data = wire.json_member(
        request.get("input", "{}"),
        errors.InvalidExecutionInput,
        "State Machine Execution Input",
    )
    alias = qualifier is not None and not qualifier.isdigit()
    started = api.engine.submit(
        StartExecution(
            target, request.get("name") or "", data, options={ALIAS_OPTION: target} if alias else {}
        )
    )
    return wire.pick(started, "executionArn", "startDate")


def describe_execution(api: ApiContext, request: Request) -> Response:
    arn = wire.execution_arn(request["executionArn"])
    with api.engine.read() as store:
        row = _execution(store, arn)
    return _description(row, data=request.get("includedData") != "METADATA_ONLY")


def list_executions(api: ApiContext, request: Request) -> Response:
    """Newest first, for a machine (all its executions), a version or an alias."""
    target = _list_target(request)
    base, qualifier = wire.machine_arn(target, allow=_QUALIFIED)
    status, redrive = request.get("statusFilter"), request.get("redriveFilter")
    filters = {"arn": target, "status": status, "redrive": redrive}
    before = pagination.position("ListExecutions", filters, request.get("nextToken"))
    if before is not None and not isinstance(before, int):
        raise errors.InvalidToken(f"Invalid Token: '{request['nextToken']}'")
    size = pagination.page_size(request)
    with api.engine.read() as store:
        _check_exists(store, base, qualifier, target)
        rows = (
            []  # the engine redrives at once: no execution waits in PENDING_REDRIVE
            if status == "PENDING_REDRIVE"
            else store.execution_page(
                machine_arn=base,
                qualified_arn=target if qualifier is not None else None,
                status=status,
                redriven=None if redrive is None else redrive == "REDRIVEN",
                before_id=before,
                limit=size + 1,
            )
        )
    token = (
        pagination.issue("ListExecutions", filters, rows[size - 1].id) if len(rows) > size else None
    )
    return pagination.with_token({"executions": [_list_item(row) for row in rows[:size]]}, token)


def get_execution_history(api: ApiContext, request: Request) -> Response:
    arn = wire.execution_arn(request["executionArn"])
    reverse = bool(request.get("reverseOrder"))
    include_data = request.get("includeExecutionData") is not False
    filters = {"arn": arn, "reverse": reverse}
    after = pagination.position("GetExecutionHistory", filters, request.get("nextToken"))
    if after is not None and not isinstance(after, int):
        raise errors.InvalidToken(f"Invalid Token: '{request['nextToken']}'")
    size = pagination.page_size(request)
    with api.engine.read() as store:
        row = _execution(store, arn)
        rows = store.history(row.id, after=after or 0, limit=size + 1, reverse=reverse)
    token = (
        pagination.issue("GetExecutionHistory", filters, rows[size - 1].event_id)
        if len(rows) > size
        else None
    )
    events = [_event(event, include_data=include_data) for event in rows[:size]]
    return pagination.with_token({"events": events}, token)


def stop_execution(api: ApiContext, request: Request) -> Response:
    arn = wire.execution_arn(request["executionArn"])
    stopped = api.engine.submit(
        StopExecution(arn, error=request.get("error"), cause=request.get("cause"))
    )
    return wire.pick(stopped, "stopDate")


def redrive_execution(api: ApiContext, request: Request) -> Response:
    """Runs the failed and unfinished states again; a repeated `clientToken` redrives once."""
    arn = wire.execution_arn(request["executionArn"])
    token = request.get("clientToken")
    if token is not None and (seen := api.redrives.get(arn, token)) is not None:
        return {"redriveDate": seen}
    redriven = api.engine.submit(RedriveExecution(arn))
    if token is not None:
        api.redrives.put(arn, token, redriven["redriveDate"])
    return wire.pick(redriven, "redriveDate")


def describe_state_machine_for_execution(api: ApiContext, request: Request) -> Response:
    """The definition the execution runs (its version's, or the machine's when it started),
    even after the machine was updated or deleted."""
    arn = wire.execution_arn(request["executionArn"])
    with api.engine.read() as store:
        row = _execution(store, arn)
        definition = store.definition(row.definition_hash)
        machine = store.machine(row.machine_arn)
        version = store.version(row.version_arn) if row.version_arn else None
    revision: str | None
    if version is not None:
        revision, updated = version.revision_id, version.created_at
    elif machine is not None:
        current = machine.definition_hash == row.definition_hash
        revision, updated = (machine.revision_id if current else None), machine.updated_at
    else:
        revision, updated = None, row.started_at
    return wire.compact(
        {
            "stateMachineArn": row.machine_arn,
            "name": machine_name(row.machine_arn),
            "definition": definition,
            "roleArn": (machine.role_arn if machine else "") or api.engine.arns.role(),
            "updateDate": updated,
            "revisionId": revision,
            "loggingConfiguration": {"level": "OFF", "includeExecutionData": False},
            "tracingConfiguration": {"enabled": False},
        }
    )


# --- shapes -----------------------------------------------------------------------------------


def _description(row: ExecutionRow, *, data: bool) -> Response:
    described = {
        **_summary(row),
        "input": to_text(row.input) if data else None,
        "inputDetails": {"included": data},
    }
    if row.status == "SUCCEEDED":
        described["output"] = to_text(row.output) if data else None
        described["outputDetails"] = {"included": data}
    if row.status in _REDRIVABLE:
        described.update(error=row.error, cause=row.cause, redriveStatus="REDRIVABLE")
    else:
        described.update(
            redriveStatus="NOT_REDRIVABLE",
            redriveStatusReason=f"Execution is {row.status} and cannot be redriven",
        )
    return wire.compact(described)


def _list_item(row: ExecutionRow) -> dict[str, Any]:
    return wire.compact(_summary(row))


def _summary(row: ExecutionRow) -> dict[str, Any]:
    """What ListExecutions and DescribeExecution both say of an execution."""
    return {
        "executionArn": row.arn,
        "stateMachineArn": row.machine_arn,
        "name": row.name,
        "status": row.status,
        "startDate": row.started_at,
        "stopDate": row.stopped_at,
        "stateMachineVersionArn": row.version_arn,
        "stateMachineAliasArn": row.options.get(ALIAS_OPTION),
        "redriveCount": row.redrive_count,
        "redriveDate": row.redrive_at,
    }


def _event(row: HistoryRow, *, include_data: bool) -> dict[str, Any]:
    details: dict[str, Any] = row.details
    if not include_data:
        details = {
            key: {name: value for name, value in fields.items() if name not in _EXECUTION_DATA}
            for key, fields in details.items()
        }
    return {
        "timestamp": row.at,
        "type": row.type,
        "id": row.event_id,
        "previousEventId": row.previous_event_id,
        **details,
    }


# --- lookups ----------------------------------------------------------------------------------


def _execution(store: EngineStore, arn: str) -> ExecutionRow:
    row = store.execution_row(arn=arn)
    if row is None:
        raise errors.ExecutionDoesNotExist(f"Execution Does Not Exist: '{arn}'")
    return row


def _list_target(request: Request) -> str:
    machine, map_run = request.get("stateMachineArn"), request.get("mapRunArn")
    if machine is not None and map_run is not None:
        raise errors.ValidationException(
            "Specify either a stateMachineArn or a mapRunArn, not both"
        )
    if map_run is not None:
        raise errors.ResourceNotFound(
            f"Resource not found: '{map_run}' (the local engine runs Map states inline and has no"
            " Map Runs)"
        )
    if machine is None:
        raise errors.ValidationException("Must provide a StateMachine ARN or MapRun ARN")
    return str(machine)


def _check_exists(store: EngineStore, base: str, qualifier: str | None, arn: str) -> None:
    if store.machine(base) is None or (
        qualifier is not None and qualifier.isdigit() and store.version(arn) is None
    ):
        raise errors.StateMachineDoesNotExist(f"State Machine Does Not Exist: '{arn}'")
    if qualifier is not None and not qualifier.isdigit() and store.alias(arn) is None:
        raise errors.ResourceNotFound(f"Resource not found: '{arn}'")


OPERATIONS: dict[str, Operation] = {
    "StartExecution": start_execution,
    "DescribeExecution": describe_execution,
    "ListExecutions": list_executions,
    "GetExecutionHistory": get_execution_history,
    "StopExecution": stop_execution,
    "RedriveExecution": redrive_execution,
    "DescribeStateMachineForExecution": describe_state_machine_for_execution,
}
