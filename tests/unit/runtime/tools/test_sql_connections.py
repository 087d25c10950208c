"""Named SQL connections: SWITCHYARD_SQL_<NAME>, a conninfo or a Secrets Manager secret."""

from __future__ import annotations

import json

import boto3
import pytest
from moto import mock_aws
from psycopg.conninfo import conninfo_to_dict

from switchyard.contract.step_errors import PermanentError
from switchyard.runtime.tools import SecretResolver, ToolEnvironment


def test_a_plain_variable_is_the_conninfo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SWITCHYARD_SQL_LEDGER", "postgresql://app@db.example.com/ledger")
    assert ToolEnvironment().sql_conninfo("ledger") == "postgresql://app@db.example.com/ledger"


def test_a_secret_reference_reads_the_conninfo_from_secrets_manager(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("SWITCHYARD_SQL_LEDGER_DB", "secret:prod/ledger")
    with mock_aws():
        boto3.client("secretsmanager").create_secret(
            Name="prod/ledger", SecretString="host=db.example.com dbname=ledger user=app"
        )
        conninfo = ToolEnvironment().sql_conninfo("ledger-db")
    assert conninfo == "host=db.example.com dbname=ledger user=app"


def test_a_secret_in_the_rds_layout_becomes_a_conninfo_that_requires_tls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rds = {"host": "db.example.com", "port": 5433, "dbname": "ledger", "username": "app"}
    rds["password"] = "p w'd"
    monkeypatch.setenv(
        "SWITCHYARD_SQL_LEDGER", "secret:arn:aws:secretsmanager:eu-west-1:1:secret:x"
    )
    env = ToolEnvironment(
        secrets=SecretResolver(
            values={"arn:aws:secretsmanager:eu-west-1:1:secret:x": json.dumps(rds)}
        )
    )
    assert conninfo_to_dict(env.sql_conninfo("ledger")) == {
        "host": "db.example.com",
        "port": "5433",
        "dbname": "ledger",
        "user": "app",
        "password": "p w'd",
        "sslmode": "require",
    }


def test_an_unreadable_secret_fails_permanent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("SWITCHYARD_SQL_LEDGER", "secret:missing")
    with mock_aws(), pytest.raises(PermanentError, match="secret 'missing' could not be read"):
        ToolEnvironment().sql_conninfo("ledger")
