"""The AWS CLI, unchanged, against the local endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from switchyard.engine.api import SigV4Credentials, sfn_api_in_thread
from tests.unit.engine.api.support import PIPELINE, ROLE, Endpoint, pipeline_input, unique


def _run_aws(
    endpoint: Endpoint,
    home: Path,
    command: str,
    *,
    url: str | None = None,
    credentials: tuple[str, str] = ("x", "x"),
    **options: str,
) -> subprocess.CompletedProcess[str]:
    """`aws stepfunctions <command> --<option> <value> ...` with (dummy) credentials and no
    config, against the endpoint (or `url`)."""
    arguments = [
        part for name, value in options.items() for part in (f"--{name.replace('_', '-')}", value)
    ]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("AWS_")},
        "AWS_ACCESS_KEY_ID": credentials[0],
        "AWS_SECRET_ACCESS_KEY": credentials[1],
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    return subprocess.run(
        [sys.executable, "-m", "awscli", "stepfunctions", command, *arguments,
         "--endpoint-url", url or endpoint.url, "--output", "json"],
        env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def _aws(endpoint: Endpoint, home: Path, command: str, **options: str) -> Any:
    done = _run_aws(endpoint, home, command, **options)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_aws_cli_creates_starts_describes_and_reads_history(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    name = unique("cli")
    created = _aws(
        endpoint, tmp_path, "create-state-machine",
        name=name, definition=json.dumps(PIPELINE), role_arn=ROLE,
    )  # fmt: skip
    started = _aws(
        endpoint, tmp_path, "start-execution",
        state_machine_arn=created["stateMachineArn"], name="from-cli", input=pipeline_input(10),
    )  # fmt: skip
    execution = started["executionArn"]
    endpoint.engine.wait(execution, timeout=15)

    described = _aws(endpoint, tmp_path, "describe-execution", execution_arn=execution)
    history = _aws(endpoint, tmp_path, "get-execution-history", execution_arn=execution)

    assert created["stateMachineArn"].endswith(f":stateMachine:{name}")
    assert execution.endswith(f":execution:{name}:from-cli")
    assert described["status"] == "SUCCEEDED"
    assert json.loads(described["output"]) == {"value": 20}
    assert described["startDate"]  # botocore parsed the epoch seconds; the CLI prints a date
    types = [event["type"] for event in history["events"]]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded"


def test_the_aws_cli_reports_an_api_error_by_its_code(endpoint: Endpoint, tmp_path: Path) -> None:
    arn = "arn:aws:states:us-east-1:000000000000:execution:m:missing"

    done = _run_aws(endpoint, tmp_path, "describe-execution", execution_arn=arn)

    assert done.returncode != 0
    assert "ExecutionDoesNotExist" in done.stderr


def test_the_aws_cli_signs_its_calls_as_a_sigv4_endpoint_requires(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    credentials = SigV4Credentials("AKIDCLI", "cli-secret")
    with sfn_api_in_thread(endpoint.engine, credentials=credentials) as signed:
        pair = (credentials.access_key_id, credentials.secret_access_key)
        served = _run_aws(
            endpoint, tmp_path, "list-state-machines", url=signed.endpoint_url, credentials=pair
        )
        refused = _run_aws(
            endpoint,
            tmp_path,
            "list-state-machines",
            url=signed.endpoint_url,
            credentials=(credentials.access_key_id, "wrong"),
        )
    assert served.returncode == 0, served.stderr
    assert "stateMachines" in json.loads(served.stdout)
    assert refused.returncode != 0 and "InvalidSignatureException" in refused.stderr
