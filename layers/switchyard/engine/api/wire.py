"""What crosses the wire: responses as JSON with timestamps in epoch seconds (the JSON protocol's
form, which botocore parses into datetimes), JSON values carried as JSON text members (`input`,
`output`), and ARNs checked for the resource each member names."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from switchyard.engine import errors
from switchyard.serving.jsontext import UnholdableJsonError, loads_holdable


def encode(body: dict[str, Any]) -> bytes:
    text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_default)
    try:
        return text.encode()
    except UnicodeEncodeError:  # a lone surrogate echoed from a request: escape it as JSON does
        return json.dumps(body, separators=(",", ":"), default=_default).encode()


def _default(value: Any) -> Any:
    if isinstance(value, datetime):
        return round(value.timestamp(), 3)  # AWS answers with millisecond precision
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def json_member(text: str, error: type[errors.EngineError], what: str) -> Any:
    """The JSON value of a text member; `error` (e.g. InvalidExecutionInput) when it is not JSON,
    or is JSON the engine cannot store (a NUL or a lone surrogate in a string, nesting beyond
    `MAX_JSON_DEPTH`: `switchyard.serving.jsontext`)."""
    try:
        return loads_holdable(text)
    except UnholdableJsonError as exc:
        raise error(f"Invalid {what}: '{exc}'") from None


# --- ARNs ------------------------------------------------------------------------------------
#   arn:<partition>:states:<region>:<account>:<resource type>:<name>[:<qualifier>]


def _parts(arn: str, resource_types: tuple[str, ...]) -> list[str]:
    parts = arn.split(":")
    if len(parts) < 7 or parts[0] != "arn" or not parts[1].startswith("aws"):
        raise errors.InvalidArn(f"Invalid Arn: 'Invalid ARN prefix: {arn}'")
    if parts[2] != "states":
        raise errors.InvalidArn(f"Invalid Arn: 'Invalid ARN service: {parts[2]}'")
    if parts[5] not in resource_types:
        raise errors.InvalidArn(
            f"Invalid Arn: 'Resource type not valid in this context: {parts[5]}'"
        )
    if any(not part for part in parts[6:]):
        raise errors.InvalidArn(f"Invalid Arn: 'Invalid resource name: {arn}'")
    return parts


def machine_arn(arn: str, *, allow: frozenset[str] = frozenset()) -> tuple[str, str | None]:
    """(machine ARN, qualifier) of a state machine ARN. `allow` says which qualified forms the
    operation accepts: "version" (`...:name:3`) and/or "alias" (`...:name:live`)."""
    parts = _parts(arn, ("stateMachine",))
    if len(parts) > 8:
        raise errors.InvalidArn(f"Invalid Arn: 'Invalid resource name: {arn}'")
    base = ":".join(parts[:7])
    if len(parts) == 7:
        return base, None
    qualifier = parts[7]
    kind = "version" if qualifier.isdigit() else "alias"
    if kind not in allow:
        raise errors.InvalidArn(
            f"Invalid Arn: 'A state machine {kind} ARN is not valid in this context: {arn}'"
        )
    return base, qualifier


def execution_arn(arn: str) -> str:
    parts = _parts(arn, ("execution",))
    if len(parts) != 8:
        raise errors.InvalidArn(f"Invalid Arn: 'Invalid resource name: {arn}'")
    return arn


def role_arn(arn: str) -> str:
    """A role ARN is only stored here, never assumed: any IAM-shaped ARN will do."""
    if not arn.startswith("arn:") or len(arn.split(":")) < 6:
        raise errors.InvalidArn(f"Invalid Arn: 'Invalid ARN prefix: {arn}'")
    return arn


def pick(values: dict[str, Any], *names: str) -> dict[str, Any]:
    """The named members that are present, for an answer built from a richer dict."""
    return {name: values[name] for name in names if values.get(name) is not None}


def compact(values: dict[str, Any]) -> dict[str, Any]:
    """Without the members that have no value (the JSON protocol leaves them out)."""
    return {name: value for name, value in values.items() if value is not None}
