"""What the approval pieces are configured with, read once from the environment (explicit
arguments beat it: tests build `ApprovalSettings` directly).

Secrets come from the environment locally and from Secrets Manager on AWS (the stack sets the
`*_SECRET_ARN` variables); without a configured signing key, the local database holds one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg_pool import ConnectionPool

from switchyard.approvals.links import LinkSigner
from switchyard.approvals.people import People
from switchyard.constants import (
    APPROVAL_BASE_URL_ENV,
    APPROVAL_SIGNING_KEYS_ENV,
    APPROVAL_SIGNING_SECRET_ENV,
    EMAIL_FROM_ENV,
    PUBLIC_URL_ENV,
    SES_IDENTITY_ENV,
    SLACK_API_URL_ENV,
    SLACK_BOT_TOKEN_ENV,
    SLACK_SECRET_ENV,
    SLACK_SIGNING_SECRET_ENV,
    SMTP_URL_ENV,
)

DEFAULT_SLACK_API_URL = "https://slack.com/api"
DEFAULT_PUBLIC_URL = "http://localhost:8080"
DEFAULT_SENDER = "switchyard@localhost"

_KEY_SQL = "SELECT key_id, secret FROM approval_keys ORDER BY created_at DESC, key_id"


@dataclass(frozen=True)
class ApprovalSettings:
    signer: LinkSigner
    public_url: str = DEFAULT_PUBLIC_URL
    people: People = field(default_factory=People)
    smtp_url: str | None = None
    ses_identity: str | None = None
    email_from: str = DEFAULT_SENDER
    slack_bot_token: str | None = field(default=None, repr=False)
    slack_signing_secret: str | None = field(default=None, repr=False)
    slack_api_url: str = DEFAULT_SLACK_API_URL

    @classmethod
    def from_env(
        cls,
        pool: ConnectionPool | psycopg.Connection[Any] | None,
        environ: Mapping[str, str] | None = None,
        *,
        secrets: Any = None,
    ) -> ApprovalSettings:
        env = environ if environ is not None else os.environ
        slack: dict[str, Any] = {}
        if env.get(SLACK_SECRET_ENV):
            slack = _secret_json(env[SLACK_SECRET_ENV], secrets)
        return cls(
            signer=_signer(env, pool, secrets),
            public_url=public_url(env),
            people=People.from_env(env),
            smtp_url=env.get(SMTP_URL_ENV) or None,
            ses_identity=env.get(SES_IDENTITY_ENV) or None,
            email_from=env.get(EMAIL_FROM_ENV) or env.get(SES_IDENTITY_ENV) or DEFAULT_SENDER,
            slack_bot_token=env.get(SLACK_BOT_TOKEN_ENV) or slack.get("bot_token") or None,
            slack_signing_secret=(
                env.get(SLACK_SIGNING_SECRET_ENV) or slack.get("signing_secret") or None
            ),
            slack_api_url=(env.get(SLACK_API_URL_ENV) or DEFAULT_SLACK_API_URL).rstrip("/"),
        )

    def link(self, token: str) -> str:
        return f"{self.public_url}/approvals/{token}"


def _signer(
    env: Mapping[str, str], pool: ConnectionPool | psycopg.Connection[Any] | None, secrets: Any
) -> LinkSigner:
    if env.get(APPROVAL_SIGNING_KEYS_ENV):
        return LinkSigner.from_json(env[APPROVAL_SIGNING_KEYS_ENV])
    if env.get(APPROVAL_SIGNING_SECRET_ENV):
        keys = _secret_json(env[APPROVAL_SIGNING_SECRET_ENV], secrets)
        return LinkSigner.from_json(json.dumps(keys))
    if pool is None:
        raise ValueError(
            f"approval links need a signing key: set {APPROVAL_SIGNING_KEYS_ENV} or a database"
        )
    if isinstance(pool, psycopg.Connection):
        return connection_signer(pool)
    return database_signer(pool)


def database_signer(pool: ConnectionPool) -> LinkSigner:
    """The local key (migration 0009 made one; every process on the database reads the same,
    so links survive restarts and work from any process)."""
    with pool.connection() as conn:
        return connection_signer(conn)


def connection_signer(conn: psycopg.Connection[Any]) -> LinkSigner:
    rows = conn.execute(_KEY_SQL).fetchall()
    if not rows:
        raise ValueError(
            f"the database holds no approval signing key: set {APPROVAL_SIGNING_KEYS_ENV}"
        )
    return LinkSigner({str(key_id): str(secret).encode() for key_id, secret in rows})


def _secret_json(secret_id: str, secrets: Any) -> dict[str, Any]:
    if secrets is None:
        import boto3  # type: ignore[import-untyped]

        secrets = boto3.client("secretsmanager")
    value = json.loads(secrets.get_secret_value(SecretId=secret_id)["SecretString"])
    if not isinstance(value, dict):
        raise ValueError(f"secret {secret_id} must hold a JSON object")
    return value


def public_url(environ: Mapping[str, str] | None = None) -> str:
    """The links' base: SWITCHYARD_PUBLIC_URL (or the older SWITCHYARD_APPROVAL_BASE_URL)."""
    env = environ if environ is not None else os.environ
    base = env.get(PUBLIC_URL_ENV) or env.get(APPROVAL_BASE_URL_ENV) or DEFAULT_PUBLIC_URL
    return base.rstrip("/")
