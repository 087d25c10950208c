"""Names shared by the library and the CDK app: environment variables, functions, metrics.

The CDK stack (`infra/`) sets these environment variables on the Lambda functions, and the library
reads them; keeping both sides on one module means a renamed variable cannot leave a function
silently unconfigured. An explicit argument always beats the environment.

Only the standard library is imported here: `infra/` imports this module without the library's
runtime dependencies.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

# --- environment variables the library reads ------------------------------------------------

# Models
MODEL_PRICES_ENV = "SWITCHYARD_MODEL_PRICES"
"""Path of a JSON or YAML file overriding or adding model prices."""
DEFAULT_PROVIDER_ENV = "SWITCHYARD_PROVIDER"
"""`anthropic` or `bedrock`: the provider of steps that do not name one."""
LLM_SCRIPT_ENV = "SWITCHYARD_LLM_SCRIPT"
"""Path of a model script: agent and router steps answer from it (offline runs, tests)."""
API_KEY_ENV = "ANTHROPIC_API_KEY"
API_KEY_SECRET_ENV = "SWITCHYARD_ANTHROPIC_SECRET"
"""Name or ARN of a Secrets Manager secret holding the Anthropic key (raw, or JSON `api_key`)."""

# Budgets and stores
TENANT_DAILY_LIMITS_ENV = "SWITCHYARD_TENANT_DAILY_LIMITS"
"""JSON `{"tenant": usd}`: each tenant's daily spend limit."""
TENANT_QUOTAS_ENV = "SWITCHYARD_TENANT_QUOTAS"
"""JSON `{"tenant": {"model id or *": {"tokens_per_minute": n, "requests_per_minute": n}}}`:
each tenant's per-minute model quotas."""
CIRCUIT_BREAKER_POLICY_ENV = "SWITCHYARD_CIRCUIT_BREAKER_POLICY"
"""JSON `{"failure_rate": 0.5, "window_seconds": 60, "min_calls": 5, "open_seconds": 30,
"probe_seconds": 30}`, any of them: when the tool gateway's circuits open and how long they rest."""
BUDGET_TABLE_ENV = "SWITCHYARD_BUDGET_TABLE"
"""DynamoDB table of the budget ledger (key `pk`)."""
IDEMPOTENCY_TABLE_ENV = "SWITCHYARD_IDEMPOTENCY_TABLE"
"""DynamoDB table of Powertools idempotency records (key `id`, TTL attribute `expiration`)."""
OUTPUT_BUCKET_ENV = "SWITCHYARD_OUTPUT_BUCKET"
"""S3 bucket of large step outputs."""

# The run store (Aurora PostgreSQL on AWS)
DATABASE_SECRET_ARN_ENV = "SWITCHYARD_DATABASE_SECRET_ARN"
"""Secrets Manager secret of the database (RDS layout: host, port, dbname, username, password)."""
DATABASE_HOST_ENV = "SWITCHYARD_DATABASE_HOST"
DATABASE_PORT_ENV = "SWITCHYARD_DATABASE_PORT"
DATABASE_NAME_ENV = "SWITCHYARD_DATABASE_NAME"
POOL_SIZE_ENV = "SWITCHYARD_POOL_SIZE"
"""Most database connections a process holds (default `DEFAULT_POOL_SIZE`)."""
DEFAULT_POOL_SIZE = 8

# Tools
HTTP_ALLOWED_HOSTS_ENV = "SWITCHYARD_HTTP_ALLOWED_HOSTS"
"""Comma-separated host patterns (`api.example.com`, `*.example.com`); unset: any host."""
SQL_CONNECTION_ENV_PREFIX = "SWITCHYARD_SQL_"
"""`SWITCHYARD_SQL_<NAME>`: the conninfo of the named connection `name` of `sql.query`, or
`secret:<name or ARN>` of a Secrets Manager secret holding it (what the CDK stack sets)."""
SECRET_REFERENCE_PREFIX = "secret:"
"""A value that names a Secrets Manager secret (name or ARN) instead of holding the value."""
SECRET_ENV_PREFIX = "SWITCHYARD_SECRET_"
"""`SWITCHYARD_SECRET_<NAME>`: a secret's value; else Secrets Manager secret `<name>`."""
EMAIL_FROM_ENV = "SWITCHYARD_EMAIL_FROM"
SMTP_URL_ENV = "SWITCHYARD_SMTP_URL"
"""`smtp://host:port` or `smtps://user:pass@host:port`: `email.send` (and approval e-mails) go
through this SMTP server instead of SES."""
RECORDER_FUNCTIONS_ENV = "SWITCHYARD_RECORDER_FUNCTIONS"
"""JSON `{"<folder name>": "<deployed function name>"}`: which function each step's Task calls
(the recorder reads a step's spend from the results of `agent_step`, `tool_step`, `router_step`).
Unset: a function's name is its folder's (the local engine, tests)."""
EVENT_BUS_ENV = "SWITCHYARD_EVENT_BUS"
"""Event bus of the `events.put` tool and of `event` triggers."""

# Stuck runs
STUCK_AFTER_ENV = "SWITCHYARD_STUCK_AFTER"
"""Seconds (or `90s`, `10m`, `1h`) without a transition after which a run that waits on no gate
and no timer is stuck (`switchyard runs list --stuck`, docs/runbooks.md)."""
DEFAULT_STUCK_AFTER_SECONDS = 300

# Gates
ROLES_ENV = "SWITCHYARD_ROLES"
"""JSON `{"role": ["dana", {"name": "lee", "email": "lee@example.com", "slack": "U024BE7LH"}]}`:
who may decide a gate assigned to a role (a bare string is a person's name), and where their
approval links go. Unset: anyone may (a development setup)."""
OPERATORS_ROLE = "operators"
"""The role that decides gates without an assignee (tool calls awaiting approval, `on_error: pause`,
budget pauses) once SWITCHYARD_ROLES defines it; a map without it leaves those gates to anyone."""
DATABASE_URL_ENV = "DATABASE_URL"
"""The run store's PostgreSQL (the local engine; unset: an embedded server)."""
APPROVAL_BASE_URL_ENV = "SWITCHYARD_APPROVAL_BASE_URL"
"""Base URL of the gate links in the local run report (`<base>/gates/<gate id>`); no deployed
function reads it yet."""
SCRIPTS_DIR_ENV = "SWITCHYARD_SCRIPTS_DIR"
"""The directory the local REST API reads request-named model scripts from
(`X-Switchyard-LLM-Script`); default the workflows directory's `scripts/`."""
SFN_ACCESS_KEY_ID_ENV = "SWITCHYARD_SFN_ACCESS_KEY_ID"
SFN_SECRET_ACCESS_KEY_ENV = "SWITCHYARD_SFN_SECRET_ACCESS_KEY"
"""When both are set, the local Step Functions port answers only calls SigV4-signed with these
credentials (as botocore signs every call)."""
PUBLIC_URL_ENV = "SWITCHYARD_PUBLIC_URL"
"""Base of the approval links (`<base>/approvals/<token>`): where people reach the approval pages.
`switchyard dev` defaults it to its own REST address; on AWS the stack sets the HTTP API's URL."""
APPROVAL_SIGNING_KEYS_ENV = "SWITCHYARD_APPROVAL_SIGNING_KEYS"
"""JSON `{"<key id>": "<secret>", ...}`: the keys approval links are signed with, the first one
signing new links and all of them verifying (rotation). Unset locally: one key kept in the
database (`approval_keys`)."""
APPROVAL_SIGNING_SECRET_ENV = "SWITCHYARD_APPROVAL_SIGNING_SECRET_ARN"
"""On AWS: the Secrets Manager secret holding that JSON (what the stack sets)."""
SES_IDENTITY_ENV = "SWITCHYARD_SES_IDENTITY"
"""On AWS: the SES identity (domain or address) approval e-mails are sent from."""
SLACK_BOT_TOKEN_ENV = "SWITCHYARD_SLACK_BOT_TOKEN"
SLACK_SIGNING_SECRET_ENV = "SWITCHYARD_SLACK_SIGNING_SECRET"
SLACK_SECRET_ENV = "SWITCHYARD_SLACK_SECRET_ARN"
"""On AWS: a Secrets Manager secret, JSON `{"bot_token": ..., "signing_secret": ...}`."""
SLACK_API_URL_ENV = "SWITCHYARD_SLACK_API_URL"
"""Base of Slack's Web API (default `https://slack.com/api`); tests point it at a local server."""
API_TOKEN_ENV = "SWITCHYARD_API_TOKEN"
"""When set, the local REST API (`switchyard dev`) answers only requests that carry
`Authorization: Bearer <this value>` (all but `GET /healthz`)."""

# Webhook triggers (functions/webhook_trigger, one function per webhook trigger)
WEBHOOK_WORKFLOW_ENV = "SWITCHYARD_WEBHOOK_WORKFLOW"
"""Name of the workflow the webhook starts."""
WEBHOOK_STATE_MACHINE_ARN_ENV = "SWITCHYARD_WEBHOOK_STATE_MACHINE_ARN"
"""ARN (the alias that new runs start on) of the workflow's state machine."""
WEBHOOK_SECRET_ENV = "SWITCHYARD_WEBHOOK_SECRET"
"""Where the HMAC key is: `env:NAME` or `secret:NAME` (a Secrets Manager name or ARN)."""
WEBHOOK_INPUT_ENV = "SWITCHYARD_WEBHOOK_INPUT"
"""JSON object of the trigger's `input` templates (over `body`, `headers`, `query`)."""
WEBHOOK_DEAD_LETTER_QUEUE_URL_ENV = "SWITCHYARD_WEBHOOK_DEAD_LETTER_QUEUE_URL"
"""SQS queue of verified deliveries whose run could not be started."""

# Powertools (read by aws_lambda_powertools itself)
POWERTOOLS_SERVICE_NAME_ENV = "POWERTOOLS_SERVICE_NAME"
POWERTOOLS_LOG_LEVEL_ENV = "POWERTOOLS_LOG_LEVEL"
POWERTOOLS_METRICS_NAMESPACE_ENV = "POWERTOOLS_METRICS_NAMESPACE"
POWERTOOLS_TRACER_CAPTURE_RESPONSE_ENV = "POWERTOOLS_TRACER_CAPTURE_RESPONSE"
"""`false`: traces must not carry step outputs (prompts, model answers)."""
POWERTOOLS_LOGGER_LOG_EVENT_ENV = "POWERTOOLS_LOGGER_LOG_EVENT"
"""`false`: events carry prompts and task tokens, which must not reach logs."""

# --- metrics ----------------------------------------------------------------------------------

METRICS_NAMESPACE = "switchyard"


class Metric(StrEnum):
    """Metric names in `METRICS_NAMESPACE`.

    The step functions emit the first group with Powertools, dimensions `service` (the function's
    folder name, e.g. `agent_step`) and `workflow` (`switchyard.runtime.lambda_adapter`). The second
    group comes from metric filters
    that the stack puts on each workflow's execution log, so it needs no function code; a metric
    filter cannot add a literal dimension, so these have none (the execution log says where).
    """

    INPUT_TOKENS = "InputTokens"
    OUTPUT_TOKENS = "OutputTokens"
    COST_USD = "StepCostUSD"
    """Dollars spent by one step attempt (unit None: CloudWatch has no currency unit)."""
    STEP_DURATION = "StepDuration"
    """Milliseconds of one attempt of an agent, tool or router step."""
    RETRY_ATTEMPTS = "RetryAttempts"
    """An attempt after a step's first (its `retry`, or a redrive): many at once are a retry
    storm."""
    RATE_LIMITED = "RateLimitedAttempts"
    """An attempt that failed because a model provider or a host answered "too many requests"."""
    VERSION_CONFLICTS = "VersionConflicts"
    """An attempt that found another attempt updating the same record (a duplicate invocation
    holding the step's idempotency record)."""
    THROTTLED_STEPS = "ThrottledSteps"
    """An attempt failed `throttled`: a model call did not fit its tenant's quota."""
    CIRCUIT_OPEN_STEPS = "CircuitOpenSteps"
    """An attempt failed `circuit_open`: a tool call met an open circuit breaker."""

    GATE_TIMEOUTS = "GateTimeouts"
    """A waitForTaskToken gate waited past its timeout (TaskTimedOut in the execution log)."""
    BUDGET_PAUSES = "BudgetPauses"
    """A run entered a budget pause gate (a block's `budget gate`, `budget gate (2)`, ...)."""


class MetricDimension(StrEnum):
    SERVICE = "service"
    WORKFLOW = "workflow"
    STEP_TYPE = "step_type"


# --- the Lambda functions the stack deploys ---------------------------------------------------


class Placement(StrEnum):
    """Where a function runs, which decides what it can reach (docs/deploy.md)."""

    VPC = "vpc"
    """Private subnets: the database directly, the internet through the NAT gateway."""
    PUBLIC = "public"
    """Outside the VPC: AWS APIs with IAM; no database."""


@dataclass(frozen=True, slots=True)
class FunctionSpec:
    """One `functions/<name>/handler.py` and how it is deployed."""

    name: str
    memory_mb: int
    """Memory buys CPU (1,769 MB is one vCPU), and a cold start's import is CPU-bound: each value
    is sized from the handler's measured import (docs/deploy.md, "Cold starts")."""
    timeout_seconds: int
    reserved_concurrency: int | None
    """Per step type: the model provider's rate limit is the real ceiling, so agent and router
    steps are capped below it; None leaves the function on the account's unreserved pool."""
    placement: Placement
    uses_database: bool
    purpose: str


FUNCTION_SPECS: tuple[FunctionSpec, ...] = (
    FunctionSpec(
        name="agent_step",
        memory_mb=1024,
        timeout_seconds=900,
        reserved_concurrency=50,
        placement=Placement.VPC,
        uses_database=True,
        purpose="agent steps: model calls, tool loop, turn journal, budgets (Aurora + model API)",
    ),
    FunctionSpec(
        name="tool_step",
        memory_mb=512,
        timeout_seconds=900,
        reserved_concurrency=50,
        placement=Placement.VPC,
        uses_database=True,
        purpose="tool steps: HTTP, SQL, AWS tools behind the tool gateway (Aurora + internet)",
    ),
    FunctionSpec(
        name="router_step",
        memory_mb=512,
        timeout_seconds=300,
        reserved_concurrency=20,
        placement=Placement.VPC,
        uses_database=True,
        purpose="LLM routers: one model call, budgets, the rate-limit gate (Aurora + model API)",
    ),
    FunctionSpec(
        name="approval_notify",
        memory_mb=512,
        timeout_seconds=60,
        reserved_concurrency=10,
        placement=Placement.VPC,
        uses_database=True,
        purpose="every waitForTaskToken gate: records the approval and notifies a person",
    ),
    FunctionSpec(
        name="run_start",
        memory_mb=512,
        timeout_seconds=30,
        reserved_concurrency=None,
        placement=Placement.PUBLIC,
        uses_database=False,
        purpose="first state of every machine: checks the run input (pure computation)",
    ),
    FunctionSpec(
        name="render",
        memory_mb=512,
        timeout_seconds=30,
        reserved_concurrency=None,
        placement=Placement.PUBLIC,
        uses_database=False,
        purpose="templates that JSONPath cannot express (pure computation)",
    ),
)
"""Functions that compiled state machines call (`switchyard.contract.FunctionName`)."""

WEBHOOK_FUNCTION = FunctionSpec(
    name="webhook_trigger",
    memory_mb=256,
    timeout_seconds=30,
    reserved_concurrency=10,
    placement=Placement.PUBLIC,
    uses_database=False,
    purpose="webhook triggers: verifies the HMAC of the raw body, starts the run (one per trigger)",
)
MIGRATE_FUNCTION = FunctionSpec(
    name="migrate",
    memory_mb=256,
    timeout_seconds=300,
    reserved_concurrency=1,
    placement=Placement.VPC,
    uses_database=True,
    purpose="custom resource: applies schema migrations to Aurora on deploys that change them",
)
APPROVAL_API_FUNCTION = FunctionSpec(
    name="approval_api",
    memory_mb=1024,
    timeout_seconds=30,
    reserved_concurrency=10,
    placement=Placement.VPC,
    uses_database=True,
    purpose="approval links and Slack clicks: the page, the decision, SendTaskSuccess (Aurora)",
)
DASHBOARD_API_FUNCTION = FunctionSpec(
    name="dashboard_api",
    memory_mb=1024,
    timeout_seconds=30,
    reserved_concurrency=10,
    placement=Placement.VPC,
    uses_database=True,
    purpose="the dashboard's data API behind Cognito: run, step and cost reads, gate decisions",
)
"""An open page reads about once a second, each read tens of milliseconds: ten at a time serve
a hundred open pages (docs/dashboard.md, "On AWS"). 1,024 MB for a cold import of about 1.5 s
(its import is approval_api's, about 3 s at 512 MB): a page opened after an idle spell waits
for it."""
RECORDER_FUNCTION = FunctionSpec(
    name="recorder",
    memory_mb=512,
    timeout_seconds=300,
    reserved_concurrency=20,
    placement=Placement.VPC,
    uses_database=True,
    purpose="run records: Step Functions status events -> execution history -> Aurora",
)
PLATFORM_FUNCTIONS: tuple[FunctionSpec, ...] = (
    WEBHOOK_FUNCTION,
    MIGRATE_FUNCTION,
    APPROVAL_API_FUNCTION,
    DASHBOARD_API_FUNCTION,
    RECORDER_FUNCTION,
)

# --- identifiers of deployed resources ---------------------------------------------------------

# The event bus that `event` triggers listen on is named after the stack (infra/names.py).
DATABASE_NAME = "switchyard"
DATABASE_USER = "switchyard"
LIVE_ALIAS = "live"
"""The alias that new runs start on; `v<n>` aliases serve sub-workflows pinned to version n."""
STEP_DEAD_LETTER_QUEUE = "step-dead-letters"
IDEMPOTENCY_KEY_ATTRIBUTE = "id"
IDEMPOTENCY_TTL_ATTRIBUTE = "expiration"
BUDGET_KEY_ATTRIBUTE = "pk"
BUDGET_TTL_ATTRIBUTE = "expires_at"
"""Epoch seconds after which DynamoDB deletes a budget item (the table's TTL attribute)."""
BUDGET_RETENTION_DAYS = 400
"""How long a budget item outlives its last reservation or step count: longer than the one
year a Standard execution may run, so no run loses its totals while it can still spend."""


def pinned_alias(version: int) -> str:
    """The alias of a workflow's version `version` (`v2`)."""
    return f"v{version}"
