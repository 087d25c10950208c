"""The Step Functions port with SigV4 credentials configured: boto3 signing with them is
served; an unsigned call, another key, another secret, a body changed after signing, or a
signature older than 15 minutes is refused with AWS's error; without credentials the port
binds only loopback."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from switchyard.constants import SFN_ACCESS_KEY_ID_ENV, SFN_SECRET_ACCESS_KEY_ENV
from switchyard.engine.api import SfnApiServer, SigV4Credentials, sfn_api_in_thread
from switchyard.engine.api.sigv4 import SignedRequest, verify
from switchyard.engine.errors import EngineError
from tests.unit.engine.api.support import Endpoint

CREDENTIALS = SigV4Credentials("AKIDSWITCHYARDLOCAL", "local-secret-key")
TARGET = "AWSStepFunctions.ListStateMachines"


@pytest.fixture(scope="module")
def signed(endpoint: Endpoint) -> Iterator[SfnApiServer]:
    with sfn_api_in_thread(endpoint.engine, credentials=CREDENTIALS) as server:
        yield server


def _client(server: SfnApiServer, key: str, secret: str) -> Any:
    return boto3.client(
        "stepfunctions",
        endpoint_url=server.endpoint_url,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="eu-west-1",
        config=Config(retries={"total_max_attempts": 1}),
    )


def _code(error: pytest.ExceptionInfo[ClientError]) -> str:
    return str(error.value.response["Error"]["Code"])


def test_a_call_signed_with_the_configured_credentials_is_served(signed: SfnApiServer) -> None:
    sfn = _client(signed, CREDENTIALS.access_key_id, CREDENTIALS.secret_access_key)
    assert isinstance(sfn.list_state_machines()["stateMachines"], list)


def test_another_secret_is_an_invalid_signature(signed: SfnApiServer) -> None:
    sfn = _client(signed, CREDENTIALS.access_key_id, "not-the-secret")
    with pytest.raises(ClientError) as refused:
        sfn.list_state_machines()
    assert _code(refused) == "InvalidSignatureException"


def test_another_key_is_an_unrecognized_client(signed: SfnApiServer) -> None:
    sfn = _client(signed, "AKIDSOMEONEELSE", CREDENTIALS.secret_access_key)
    with pytest.raises(ClientError) as refused:
        sfn.list_state_machines()
    assert _code(refused) == "UnrecognizedClientException"


def test_an_unsigned_call_is_missing_authentication(signed: SfnApiServer) -> None:
    answer = httpx.post(
        signed.endpoint_url,
        content=b"{}",
        headers={"X-Amz-Target": TARGET, "Content-Type": "application/x-amz-json-1.0"},
    )
    assert answer.status_code == 403
    assert answer.json()["__type"] == "MissingAuthenticationTokenException"


def _signed_request(url: str, body: bytes) -> AWSRequest:
    request = AWSRequest(
        method="POST",
        url=url,
        data=body,
        headers={"X-Amz-Target": TARGET, "Content-Type": "application/x-amz-json-1.0"},
    )
    SigV4Auth(
        Credentials(CREDENTIALS.access_key_id, CREDENTIALS.secret_access_key),
        "states",
        "us-east-1",
    ).add_auth(request)
    return request


def test_a_body_changed_after_signing_is_an_invalid_signature(signed: SfnApiServer) -> None:
    request = _signed_request(f"{signed.endpoint_url}/", b"{}")
    answer = httpx.post(
        signed.endpoint_url, content=b'{"maxResults": 1}', headers=dict(request.headers.items())
    )
    assert answer.status_code == 400
    assert answer.json()["__type"] == "InvalidSignatureException"
    untouched = httpx.post(
        signed.endpoint_url, content=b"{}", headers=dict(request.headers.items())
    )
    assert untouched.status_code == 200


def _as_received(request: AWSRequest, host: str) -> SignedRequest:
    headers = {name.lower(): value for name, value in request.headers.items()}
    return SignedRequest("POST", "http", "/", "", {**headers, "host": host}, request.body)


def test_a_signature_more_than_15_minutes_old_is_refused() -> None:
    request = _signed_request("http://127.0.0.1:8083/", b"{}")
    received = _as_received(request, "127.0.0.1:8083")
    verify(received, CREDENTIALS)  # now: accepted
    later = datetime.now(UTC) + timedelta(minutes=16)
    with pytest.raises(EngineError) as refused:
        verify(received, CREDENTIALS, now=lambda: later)
    assert refused.value.code == "InvalidSignatureException"
    assert "Signature expired" in refused.value.message


def test_without_credentials_the_port_binds_only_loopback(endpoint: Endpoint) -> None:
    with pytest.raises(ValueError, match="only with SigV4 credentials"):
        SfnApiServer(("0.0.0.0", 0), endpoint.engine)
    exposed = SfnApiServer(("0.0.0.0", 0), endpoint.engine, credentials=CREDENTIALS)
    exposed.server_close()


def test_credentials_come_from_the_environment_both_or_neither() -> None:
    assert SigV4Credentials.from_env({}) is None
    both = {SFN_ACCESS_KEY_ID_ENV: "k", SFN_SECRET_ACCESS_KEY_ENV: "s"}
    assert SigV4Credentials.from_env(both) == SigV4Credentials("k", "s")
    with pytest.raises(ValueError, match="both"):
        SigV4Credentials.from_env({SFN_ACCESS_KEY_ID_ENV: "k"})
