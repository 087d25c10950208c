"""What the step functions may reach for the tools of the deployed workflows.

A built-in tool on an AWS service (`s3.get`, `s3.put`, `sqs.send`, `sns.publish`, `events.put`,
`email.send`), `slack.post` (its webhook URL is a Secrets Manager secret) and a declared tool of
kind `lambda` need an IAM permission on the resource a call names. Each is derived from the
workflows: a tool step's argument written without a template (`bucket: legal-briefs`), a
`lambda` tool's `config.function`, the context's `emailFrom`. A resource only known at run time
(an argument that is a template) must be declared in the context's `switchyard:toolResources`
(workflow → step → tool → resources), or the synth fails saying what to add. A declaration
replaces what would be derived for that step's tool.

Tool steps run in `tool_step`, agents' tools in `agent_step`: each function gets what its steps
need, nothing else. (Agents may call declared tools only, whose resources are in their config;
should the format let them call built-ins, the model would choose the arguments, so those would
need declarations too.) Resources are ARN templates with `<AWS::Partition>`, `<AWS::Region>` and
`<AWS::AccountId>`, which is also how cdk-nag names them in a finding.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from email.utils import parseaddr
from typing import Any

from infra.config import CONTEXT_PREFIX, Settings
from switchyard.model import AgentBody, LoopStep, MapStep, ToolBody, ToolDef, Workflow
from switchyard.templates.references import has_template_syntax

TOOL_STEP = "tool_step"
AGENT_STEP = "agent_step"
PARTITION, REGION, ACCOUNT = "<AWS::Partition>", "<AWS::Region>", "<AWS::AccountId>"
TOOL_RESOURCES = f"{CONTEXT_PREFIX}toolResources"

# What a function's steps use, for the settings only those functions get.
USES_HTTP = "http"
USES_EMAIL = "email"
"""An `email.send` that may send from the default sender."""
USES_SQL = "sql"

Grant = tuple[tuple[str, ...], str]
"""Actions and one resource (an ARN template)."""


class ToolAccessError(ValueError):
    """Tools whose resources the stack cannot grant; one line per problem."""


@dataclass(frozen=True)
class Need:
    """A permission one step's tool needs in one function."""

    function: str
    actions: tuple[str, ...]
    resource: str
    user: str
    """Who needs it: `document-processing.file_brief (s3.put)`."""
    wildcard_reason: str | None = None
    """Why the resource has a wildcard (it is acknowledged with this reason)."""


@dataclass
class ToolAccess:
    needs: list[Need] = field(default_factory=list)
    uses: dict[str, set[str]] = field(default_factory=dict)
    """Function -> `USES_*` of its steps."""
    sql_connections: dict[str, set[str]] = field(default_factory=dict)
    """Function -> names of the SQL connections its steps may use."""

    def statements(self, function: str) -> dict[tuple[str, ...], list[str]]:
        """Actions -> resources, for one function (sorted: same workflows, same template)."""
        grouped: dict[str, set[str]] = {}
        for need in self.needs:
            if need.function == function:
                grouped.setdefault(need.resource, set()).update(need.actions)
        by_actions: dict[tuple[str, ...], list[str]] = {}
        for resource, actions in sorted(grouped.items()):
            by_actions.setdefault(tuple(sorted(actions)), []).append(resource)
        return dict(sorted(by_actions.items()))

    def wildcards(self, function: str) -> dict[str, str]:
        """Resource with a wildcard -> why, for one function."""
        reasons: dict[str, list[str]] = {}
        for need in self.needs:
            if need.function == function and need.wildcard_reason:
                found = reasons.setdefault(need.resource, [])
                if need.wildcard_reason not in found:
                    found.append(need.wildcard_reason)
        return {resource: "; ".join(found) for resource, found in sorted(reasons.items())}


# --- resources of each tool --------------------------------------------------------------------


def _arn(service: str, resource: str) -> str:
    return f"arn:{PARTITION}:{service}:{REGION}:{ACCOUNT}:{resource}"


def _s3(action: str) -> Callable[[str], list[Grant]]:
    def grants(value: str) -> list[Grant]:
        bucket, _, key = value.partition("/")
        if not re.fullmatch(r"[a-z0-9*?][a-z0-9.*?-]*", bucket):
            raise ValueError(f"{value!r} is not a bucket name (or bucket/key-pattern)")
        return [((action,), f"arn:{PARTITION}:s3:::{bucket}/{key or '*'}")]

    return grants


_REGION_IN_HOST = re.compile(r"(?:^|\.)([a-z]{2}(?:-[a-z]+)+-\d+)\.")


def _sqs(value: str) -> list[Grant]:
    if value.startswith(("https://", "http://")):
        match = re.fullmatch(r"https?://([^/]+)/(\d{12})/([^/]+)", value)
        region = _REGION_IN_HOST.search(match.group(1)) if match else None
        if match is None or region is None:
            raise ValueError(f"{value!r} is not an SQS queue URL")
        arn = f"arn:{PARTITION}:sqs:{region.group(1)}:{match.group(2)}:{match.group(3)}"
        return [(("sqs:SendMessage",), arn)]
    if value.startswith("arn:"):
        raise ValueError(f"{value!r}: sqs.send takes a queue's name or URL, not its ARN")
    # A name: the tool looks its URL up first.
    return [(("sqs:GetQueueUrl", "sqs:SendMessage"), _arn("sqs", value))]


def _sns(value: str) -> list[Grant]:
    if value.startswith("arn:"):
        return [(("sns:Publish",), value)]
    # A name: the tool finds its ARN with ListTopics, which takes no resource.
    return [(("sns:Publish",), _arn("sns", value)), (("sns:ListTopics",), "*")]


def _events(value: str) -> list[Grant]:
    arn = value if value.startswith("arn:") else _arn("events", f"event-bus/{value}")
    return [(("events:PutEvents",), arn)]


def _ses(value: str) -> list[Grant]:
    """An address's identity and its domain's: SES authorizes whichever is verified."""
    _, address = parseaddr(value)
    if "@" in address:
        domain = address.rpartition("@")[2]
        identities = [address, domain]
    elif re.fullmatch(r"[A-Za-z0-9*?.-]+\.[A-Za-z0-9*?-]+", value):
        identities = [value]
    else:
        raise ValueError(f"{value!r} is not an email address or a domain")
    return [(("ses:SendEmail",), _arn("ses", f"identity/{i}")) for i in identities]


def _secret(value: str) -> list[Grant]:
    """Secrets Manager appends 6 random characters to a secret's name in its ARN."""
    if value.startswith("arn:"):
        return [(("secretsmanager:GetSecretValue",), arn) for arn in (value, f"{value}-??????")]
    return [(("secretsmanager:GetSecretValue",), _arn("secretsmanager", f"secret:{value}-??????"))]


def lambda_arn(function: str) -> str:
    """A function name, `name:qualifier`, `account:function:name` or ARN, as an ARN."""
    if function.startswith("arn:"):
        return function
    if re.fullmatch(r"\d{12}:function:.+", function):
        return f"arn:{PARTITION}:lambda:{REGION}:{function}"
    return _arn("lambda", f"function:{function}")


@dataclass(frozen=True)
class _ResourceTool:
    argument: str
    """The argument that names the resource."""
    described: str
    """What a declaration lists, for messages."""
    example: str
    grants: Callable[[str], list[Grant]]


RESOURCE_TOOLS: dict[str, _ResourceTool] = {
    "s3.get": _ResourceTool(
        "bucket",
        "the buckets it may read (bucket, or bucket/key-pattern)",
        "my-bucket/reports/*",
        _s3("s3:GetObject"),
    ),
    "s3.put": _ResourceTool(
        "bucket",
        "the buckets it may write (bucket, or bucket/key-pattern)",
        "my-bucket/reports/*",
        _s3("s3:PutObject"),
    ),
    "sqs.send": _ResourceTool(
        "queue", "the queues it may send to (names or URLs)", "my-queue", _sqs
    ),
    "sns.publish": _ResourceTool(
        "topic", "the topics it may publish to (names or ARNs)", "my-topic", _sns
    ),
    "events.put": _ResourceTool(
        "bus", "the event buses it may put events on (names or ARNs)", "my-bus", _events
    ),
    "email.send": _ResourceTool(
        "from",
        "the SES identities it may send from (addresses or domains)",
        "support@example.com",
        _ses,
    ),
    "slack.post": _ResourceTool(
        "webhook",
        "the Secrets Manager secrets holding its webhook URLs (names)",
        "slack/alerts",
        _secret,
    ),
}


# --- deriving --------------------------------------------------------------------------------


def _tool_using_steps(workflow: Workflow) -> Iterator[tuple[str, AgentBody | ToolBody]]:
    """Steps that call tools, with the inline step of a map or loop under the map's id."""
    for step_id, step in workflow.steps.items():
        inner = step.step if isinstance(step, MapStep | LoopStep) else step
        if isinstance(inner, ToolBody) or (isinstance(inner, AgentBody) and inner.tools):
            yield step_id, inner


def _static_prefix(text: str) -> str:
    cut = min((i for i in (text.find(m) for m in ("{{", "{%", "{#")) if i >= 0), default=len(text))
    return text[:cut]


class _Deriver:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.access = ToolAccess()
        self.problems: list[str] = []
        self.declared_uses: set[tuple[str, str, str]] = set()

    def workflow(self, workflow: Workflow) -> None:
        for step_id, step in _tool_using_steps(workflow):
            if isinstance(step, ToolBody):
                self.call(workflow, step_id, TOOL_STEP, step.tool, step.args)
            else:
                for tool in step.tools:
                    self.call(workflow, step_id, AGENT_STEP, tool, None)

    def call(
        self,
        workflow: Workflow,
        step_id: str,
        function: str,
        tool: str,
        args: dict[str, Any] | None,
    ) -> None:
        """One tool of one step; `args` None: an agent's, whose model chooses them."""
        uses = self.access.uses.setdefault(function, set())
        where = f"workflow {workflow.name}, step {step_id} ({tool})"
        user = f"{workflow.name}.{step_id} ({tool})"
        declared = self.settings.tool_resources.get(workflow.name, {}).get(step_id, {}).get(tool)
        if declared is not None:
            self.declared_uses.add((workflow.name, step_id, tool))
        definition = workflow.tools.get(tool)
        if definition is not None:
            self.declared_tool(definition, function, where, user, declared, uses)
            return
        if tool == "http.request":
            uses.add(USES_HTTP)
        elif tool == "sql.query":
            uses.add(USES_SQL)
            self.sql(function, where, args)
        if tool not in RESOURCE_TOOLS:
            if declared is not None:
                self.problems.append(
                    f"{where}: needs no AWS resources; remove {TOOL_RESOURCES}.{workflow.name}"
                    f".{step_id}.{tool}"
                )
            return
        if tool == "email.send" and self.default_sender(args):
            uses.add(USES_EMAIL)
        spec = RESOURCE_TOOLS[tool]
        values: list[tuple[str, str | None]]  # (resource, why it may have a wildcard)
        if declared is not None:
            chosen = "by its model" if args is None else "from its arguments"
            reason = (
                f"declared in {TOOL_RESOURCES} for {user}, whose {spec.argument} is chosen at "
                f"run time {chosen}"
            )
            values = [(value, reason) for value in declared]
        else:
            values = self.derived(workflow, step_id, tool, spec, args, where, user)
        if tool == "email.send" and self.settings.email_from and self.default_sender(args):
            default = f"the default sender ({CONTEXT_PREFIX}emailFrom) of {user}"
            values.append((self.settings.email_from, default))
        for value, why_named in values:
            try:
                grants = spec.grants(value)
            except ValueError as exc:
                self.problems.append(f"{where}: {exc}")
                continue
            for actions, resource in grants:
                why = why_named if "*" in resource else None
                if resource == "*":
                    why = (
                        "sns:ListTopics has no resource-level permissions: sns.publish lists "
                        f"topics to find the ARN of a topic given by name ({user})"
                    )
                self.access.needs.append(Need(function, actions, resource, user, why))

    def default_sender(self, args: dict[str, Any] | None) -> bool:
        """Whether the call may send from `emailFrom`: an agent's, or a step without `from`."""
        return args is None or "from" not in args

    def derived(
        self,
        workflow: Workflow,
        step_id: str,
        tool: str,
        spec: _ResourceTool,
        args: dict[str, Any] | None,
        where: str,
        user: str,
    ) -> list[tuple[str, str | None]]:
        """Resources named by the step itself; a problem when it names none."""
        value = None if args is None else args.get(spec.argument)
        if value is None:
            if tool == "events.put":
                return []  # the platform's bus (SWITCHYARD_EVENT_BUS), granted to every step
            if tool == "email.send" and self.settings.email_from:
                return []  # emailFrom, which the caller adds
        if args is not None and value is None:
            fix = f'"{CONTEXT_PREFIX}emailFrom": "{spec.example}"'
            self.problems.append(
                f"{where}: it gives no `{spec.argument}` and {CONTEXT_PREFIX}emailFrom is not "
                f"set; set the sender in cdk context: {fix}"
            )
            return []
        if args is None:
            problem = f"the model chooses its {spec.argument}"
        elif isinstance(value, str) and has_template_syntax(value):
            problem = f"its {spec.argument} is a template ({value})"
        elif tool in ("s3.get", "s3.put"):
            return [self.s3_object(str(value), args, user)]
        else:
            return [(str(value), f"named in workflow {workflow.name}, step {step_id} ({tool})")]
        example = json.dumps({workflow.name: {step_id: {tool: [spec.example]}}})
        fix = f'"{TOOL_RESOURCES}": {example}'
        if tool == "email.send" and args is None:
            fix = f'"{CONTEXT_PREFIX}emailFrom": "{spec.example}", or {fix}'
        self.problems.append(
            f"{where}: {problem}, which is only known at run time; declare {spec.described} "
            f"in cdk context: {fix}"
        )
        return []

    def s3_object(
        self, bucket: str, args: dict[str, Any] | None, user: str
    ) -> tuple[str, str | None]:
        key = str((args or {}).get("key", ""))
        if not has_template_syntax(key):
            return f"{bucket}/{key}", None
        prefix = _static_prefix(key)
        reason = (
            f"objects of bucket {bucket} under key prefix '{prefix}': {user} renders the rest of "
            f"the key per run ({key})"
            if prefix
            else f"objects of bucket {bucket}: {user} renders the whole key per run ({key})"
        )
        return f"{bucket}/{prefix}*", reason

    def declared_tool(
        self,
        definition: ToolDef,
        function: str,
        where: str,
        user: str,
        declared: tuple[str, ...] | None,
        uses: set[str],
    ) -> None:
        if declared is not None:
            self.problems.append(
                f"{where}: a declared {definition.kind} tool takes no {TOOL_RESOURCES} entry "
                "(a lambda tool's function is its config.function)"
            )
        if definition.kind == "http":
            uses.add(USES_HTTP)
        elif definition.kind == "lambda":
            arn = lambda_arn(str(definition.config["function"]))
            self.access.needs.append(Need(function, ("lambda:InvokeFunction",), arn, user))

    def sql(self, function: str, where: str, args: dict[str, Any] | None) -> None:
        configured = self.settings.sql_connections
        names = self.access.sql_connections.setdefault(function, set())
        connection = None if args is None else args.get("connection")
        if isinstance(connection, str) and not has_template_syntax(connection):
            if connection not in configured:
                self.problems.append(
                    f"{where}: connection '{connection}' is not configured; add it to "
                    f'{CONTEXT_PREFIX}sqlConnections: {{"{connection}": "<Secrets Manager '
                    'secret holding its conninfo>"}'
                )
                return
            names.add(connection)
            return
        if not configured:
            self.problems.append(
                f"{where}: its connection is chosen at run time but "
                f"{CONTEXT_PREFIX}sqlConnections configures none"
            )
        names.update(configured)

    def check_declarations(self, workflows: Sequence[Workflow]) -> None:
        """Every declaration must be used: a typo would otherwise grant nothing, silently."""
        by_name = {w.name: w for w in workflows}
        for workflow, steps in self.settings.tool_resources.items():
            for step, tools in steps.items():
                for tool in tools:
                    if (workflow, step, tool) in self.declared_uses:
                        continue
                    if workflow not in by_name:
                        problem = f"no deployed workflow is named {workflow}"
                    elif step not in by_name[workflow].steps:
                        problem = f"workflow {workflow} has no step {step}"
                    else:
                        problem = f"step {step} of workflow {workflow} does not use tool {tool}"
                    self.problems.append(
                        f"{TOOL_RESOURCES}.{workflow}.{step}.{tool}: {problem}; remove it"
                    )


def derive_tool_access(workflows: Iterable[Workflow], settings: Settings) -> ToolAccess:
    """The permissions and settings the tools of `workflows` need; `ToolAccessError` lists every
    tool whose resources cannot be granted."""
    workflows = list(workflows)
    deriver = _Deriver(settings)
    for workflow in workflows:
        deriver.workflow(workflow)
    deriver.check_declarations(workflows)
    for function, names in deriver.access.sql_connections.items():
        for name in sorted(names):
            user = f"SQL connection {name}"
            for actions, resource in _secret(settings.sql_connections[name]):
                deriver.access.needs.append(Need(function, actions, resource, user))
    if deriver.problems:
        raise ToolAccessError(
            "the tools of these steps cannot be given permissions:\n"
            + "\n".join(f"  {p}" for p in deriver.problems)
        )
    return deriver.access
