"""Every environment variable the step runtime reads, in one place.

An explicit argument always beats the environment: these are the defaults that Lambda functions
(configured by the CDK stack) and the local engine rely on.
"""

from __future__ import annotations

# Models
MODEL_PRICES_ENV = "SWITCHYARD_MODEL_PRICES"
"""Path of a JSON or YAML file overriding or adding model prices (see models_catalog)."""
DEFAULT_PROVIDER_ENV = "SWITCHYARD_PROVIDER"
"""`anthropic` or `bedrock`: the provider of steps that do not name one."""
LLM_SCRIPT_ENV = "SWITCHYARD_LLM_SCRIPT"
"""Path of a model script: agent and router steps answer from it (spec/cli.md)."""
API_KEY_ENV = "ANTHROPIC_API_KEY"
API_KEY_SECRET_ENV = "SWITCHYARD_ANTHROPIC_SECRET"
"""Name or ARN of a Secrets Manager secret holding the key (raw, or JSON with `api_key`)."""

# Budgets and stores
TENANT_DAILY_LIMITS_ENV = "SWITCHYARD_TENANT_DAILY_LIMITS"
"""JSON `{"tenant": usd}`: each tenant's daily spend limit."""
BUDGET_TABLE_ENV = "SWITCHYARD_BUDGET_TABLE"
IDEMPOTENCY_TABLE_ENV = "SWITCHYARD_IDEMPOTENCY_TABLE"
OUTPUT_BUCKET_ENV = "SWITCHYARD_OUTPUT_BUCKET"

# Tools
HTTP_ALLOWED_HOSTS_ENV = "SWITCHYARD_HTTP_ALLOWED_HOSTS"
"""Comma-separated host patterns (`api.example.com`, `*.example.com`); unset: any host."""
SQL_CONNECTION_ENV_PREFIX = "SWITCHYARD_SQL_"
"""`SWITCHYARD_SQL_<NAME>`: the conninfo of the named connection `name` of `sql.query`."""
SECRET_ENV_PREFIX = "SWITCHYARD_SECRET_"
"""`SWITCHYARD_SECRET_<NAME>`: a secret's value; else Secrets Manager secret `<name>`."""
EMAIL_FROM_ENV = "SWITCHYARD_EMAIL_FROM"
EVENT_BUS_ENV = "SWITCHYARD_EVENT_BUS"
