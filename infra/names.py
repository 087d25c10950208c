"""Physical names the stack gives resources, each checked at synth against its AWS limit.

Every name carries the stack's name, so two stacks (`-c switchyard:stackName=...`) live in one
account and region side by side. A name the stack composes from a workflow's (a state machine's)
is made to fit: past the limit it is cut and ends in a hash of the whole name, so it stays the
same from synth to synth and two long names that share their start still differ. A name a person
chose and uses by that name (a trigger's queue) is refused instead, saying what to shorten.

Log groups whose names are fixed (a state machine's `/aws/vendedlogs/states/...`, the
database's `/aws/rds/cluster/<id>/postgresql`) end in a part of the stack's id (`Fn::Split` of
`AWS::StackId`): the data key's stack keeps log groups after `cdk destroy` (`retainData`), and a
redeploy creates new ones rather than failing on the names of the kept ones.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from aws_cdk import Aws, Fn

from infra.config import Settings


class NameLimitError(ValueError):
    """A name the stack cannot shorten by itself is longer than AWS allows."""


@dataclass(frozen=True)
class Limit:
    what: str
    max_length: int
    pattern: str
    """The characters AWS allows (a regular expression for the whole name)."""


STATE_MACHINE = Limit("state machine name", 80, r"[A-Za-z0-9_-]+")
LOG_GROUP = Limit("log group name", 512, r"[A-Za-z0-9_/.#-]+")
QUEUE = Limit("SQS queue name", 80, r"[A-Za-z0-9_-]+(\.fifo)?")
EVENT_BUS = Limit("event bus name", 256, r"[A-Za-z0-9/._-]+")
DATABASE_CLUSTER = Limit("database cluster identifier", 63, r"[a-z][a-z0-9-]*")
DASHBOARD = Limit("dashboard name", 255, r"[A-Za-z0-9_-]+")
HTTP_API = Limit("HTTP API name", 128, r".+")
ALARM = Limit("alarm name", 255, r"[A-Za-z0-9_.-]+")

HASH_LENGTH = 8
STACK_ID_SUFFIX_LENGTH = 8
"""Characters of the stack's id a kept log group's name ends in (the start of its UUID)."""


def check(name: str, limit: Limit, fix: str) -> str:
    """`name` if AWS takes it; else a `NameLimitError` naming the limit and `fix`."""
    if len(name) > limit.max_length:
        raise NameLimitError(
            f"{limit.what} {name!r} has {len(name)} characters; AWS allows "
            f"{limit.max_length}: {fix}"
        )
    if not re.fullmatch(limit.pattern, name):
        raise NameLimitError(
            f"{limit.what} {name!r} has characters AWS does not allow ({limit.pattern}): {fix}"
        )
    return name


def fit(name: str, limit: Limit) -> str:
    """`name`, or its start and a hash of all of it when it is longer than `limit` allows."""
    if len(name) <= limit.max_length:
        return check(name, limit, "rename it")
    digest = hashlib.sha256(name.encode()).hexdigest()[:HASH_LENGTH]
    cut = name[: limit.max_length - HASH_LENGTH - 1].rstrip("-_")
    return check(f"{cut}-{digest}", limit, "rename it")


def stack_id_suffix() -> str:
    """A token: the first 8 characters of the stack's id's UUID, new with every stack that
    CloudFormation creates (`arn:...:stack/<name>/<uuid>`)."""
    uuid = Fn.select(2, Fn.split("/", Aws.STACK_ID))
    return Fn.select(0, Fn.split("-", uuid))


# --- the names -----------------------------------------------------------------------------------


def machine_name(settings: Settings, workflow: str) -> str:
    """A workflow's state machine (`Switchyard-customer-support`): fixed, so that its executions'
    ARNs are known to a parent workflow's role and its metrics to the dashboard."""
    return fit(f"{settings.stack_name}-{workflow}", STATE_MACHINE)


def starter_name(settings: Settings, trigger_key: str) -> str:
    """A trigger's EXPRESS starter (`Switchyard-content-moderation-event-0`)."""
    return fit(f"{settings.stack_name}-{trigger_key}", STATE_MACHINE)


def machine_log_group(machine: str) -> str:
    """A machine's log group, under `/aws/vendedlogs/` (one CloudWatch Logs resource policy
    covers them all, instead of one entry per group), ending in the stack id's part."""
    prefix = f"/aws/vendedlogs/states/{machine}-"
    check(f"{prefix}{'x' * STACK_ID_SUFFIX_LENGTH}", LOG_GROUP, "use a shorter stackName")
    return prefix + stack_id_suffix()


def queue_name(settings: Settings, queue: str) -> str:
    """A queue trigger's queue, named as the workflow file says, after the stack's name."""
    return check(
        f"{settings.stack_name}-{queue}",
        QUEUE,
        f"shorten the trigger's queue ({queue}) or the stackName ({settings.stack_name})",
    )


def event_bus_name(settings: Settings) -> str:
    """The bus `event` triggers listen on and `events.put` puts on by default: the stack's."""
    return check(settings.stack_name, EVENT_BUS, "use another stackName")


def database_cluster_identifier(settings: Settings) -> str:
    """`<stack>-database-<stack id part>`: the cluster's log group is named after it by RDS."""
    stack = re.sub(r"[^a-z0-9]+", "-", settings.stack_name.lower()).strip("-") or "switchyard"
    if not stack[0].isalpha():
        stack = f"s-{stack}"
    room = DATABASE_CLUSTER.max_length - len("-database-") - STACK_ID_SUFFIX_LENGTH
    stack = stack[:room].rstrip("-")
    check(f"{stack}-database-{'x' * STACK_ID_SUFFIX_LENGTH}", DATABASE_CLUSTER, "rename the stack")
    return f"{stack}-database-{stack_id_suffix()}"


def dashboard_name(settings: Settings) -> str:
    return check(f"{settings.stack_name}-switchyard", DASHBOARD, "use another stackName")


def http_api_name(settings: Settings) -> str:
    return check(f"{settings.stack_name}-api", HTTP_API, "use a shorter stackName")


def alarm_name(settings: Settings, what: str) -> str:
    """`<stack>-<what>` (`Switchyard-stuck-runs`): the name docs/runbooks.md looks alarms up by;
    a trigger's alarm names its trigger (`Switchyard-<trigger key>-backlog`)."""
    return fit(f"{settings.stack_name}-{what}", ALARM)
