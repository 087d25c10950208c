"""Fill a compiled machine's placeholders for the local engine (CDK does it on AWS)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from switchyard.contract import FUNCTIONS, function_placeholder
from switchyard.engine.arns import Arns

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z0-9]+)\}")
DEAD_LETTER_QUEUE = "switchyard-dead-letters"


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[-_]", name) if part)


def local_values(
    arns: Arns,
    machines: Iterable[tuple[str, str]],
    pinned: Iterable[tuple[str, int, str]] = (),
) -> dict[str, str]:
    """Placeholder name -> value: local function ARNs, the local dead-letter queue, every known
    machine `(name, arn)`, and every pinned version `(name, version, alias arn)` — the `v<n>`
    alias that `switchyard.local.workflows.install` keeps on the version installed from a
    workflow's version n. (A pinned version with no alias resolves to the machine itself.)"""
    values = {function_placeholder(f)[2:-1]: arns.function(f.value) for f in FUNCTIONS}
    values["DeadLetterQueueUrl"] = (
        f"https://sqs.{arns.region}.amazonaws.com/{arns.account}/{DEAD_LETTER_QUEUE}"
    )
    for name, arn in machines:
        values[f"{_pascal(name)}StateMachineArn"] = arn
    for name, version, arn in pinned:
        values[f"{_pascal(name)}V{version}StateMachineArn"] = arn
    return values


def substitute(definition: str, values: dict[str, str]) -> tuple[str, list[str]]:
    """The definition with placeholders filled, and the names it could not fill."""
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in values:
            return values[name]
        pinned = re.fullmatch(r"(.+)V\d+StateMachineArn", name)
        if pinned and f"{pinned.group(1)}StateMachineArn" in values:
            return values[f"{pinned.group(1)}StateMachineArn"]
        missing.append(name)
        return match.group(0)

    return _PLACEHOLDER.sub(replace, definition), missing
