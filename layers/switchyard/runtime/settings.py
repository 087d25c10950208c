"""The environment variables the step runtime reads, named once in `switchyard.constants` (which
the CDK stack shares) and re-exported here for the runtime's modules.

An explicit argument always beats the environment: these are the defaults that Lambda functions
(configured by the CDK stack) and the local engine rely on.
"""

from __future__ import annotations

from switchyard.constants import (
    API_KEY_ENV,
    API_KEY_SECRET_ENV,
    BUDGET_TABLE_ENV,
    CIRCUIT_BREAKER_POLICY_ENV,
    DEFAULT_PROVIDER_ENV,
    EMAIL_FROM_ENV,
    EVENT_BUS_ENV,
    HTTP_ALLOWED_HOSTS_ENV,
    IDEMPOTENCY_TABLE_ENV,
    LLM_SCRIPT_ENV,
    MODEL_PRICES_ENV,
    OUTPUT_BUCKET_ENV,
    SECRET_ENV_PREFIX,
    SECRET_REFERENCE_PREFIX,
    SMTP_URL_ENV,
    SQL_CONNECTION_ENV_PREFIX,
    TENANT_DAILY_LIMITS_ENV,
    TENANT_QUOTAS_ENV,
)

__all__ = [
    "API_KEY_ENV",
    "API_KEY_SECRET_ENV",
    "BUDGET_TABLE_ENV",
    "CIRCUIT_BREAKER_POLICY_ENV",
    "DEFAULT_PROVIDER_ENV",
    "EMAIL_FROM_ENV",
    "EVENT_BUS_ENV",
    "HTTP_ALLOWED_HOSTS_ENV",
    "IDEMPOTENCY_TABLE_ENV",
    "LLM_SCRIPT_ENV",
    "MODEL_PRICES_ENV",
    "OUTPUT_BUCKET_ENV",
    "SECRET_ENV_PREFIX",
    "SECRET_REFERENCE_PREFIX",
    "SMTP_URL_ENV",
    "SQL_CONNECTION_ENV_PREFIX",
    "TENANT_DAILY_LIMITS_ENV",
    "TENANT_QUOTAS_ENV",
]
