"""SigV4 for the Step Functions port: when credentials are configured, a call must be signed
with them, as botocore (boto3, the AWS CLI) signs every call to AWS. The signature is computed
again with botocore's own signer (`SigV4Auth`) over the request as received and compared in
constant time, so what is accepted is exactly what botocore produces.

    SWITCHYARD_SFN_ACCESS_KEY_ID=local SWITCHYARD_SFN_SECRET_ACCESS_KEY=... switchyard dev
    boto3.client("stepfunctions", endpoint_url=..., aws_access_key_id="local",
                 aws_secret_access_key="...", region_name="us-east-1")

Any region is accepted (the scope's own), the service must be `states`, and the `X-Amz-Date`
must be within 15 minutes of the server's clock, as AWS requires. Refusals carry the error codes
AWS answers with (`MissingAuthenticationTokenException`, `UnrecognizedClientException`,
`InvalidSignatureException`)."""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth  # type: ignore[import-untyped]
from botocore.awsrequest import AWSRequest  # type: ignore[import-untyped]
from botocore.credentials import Credentials  # type: ignore[import-untyped]

from switchyard.constants import SFN_ACCESS_KEY_ID_ENV, SFN_SECRET_ACCESS_KEY_ENV
from switchyard.engine.api.errors import (
    InvalidSignatureException,
    MissingAuthenticationTokenException,
    UnrecognizedClientException,
)

SERVICE = "states"
MAX_SKEW = timedelta(minutes=15)
_AUTHORIZATION = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)"
    r"/(?P<service>[^/,\s]+)/aws4_request,\s*SignedHeaders=(?P<headers>[a-z0-9;._-]+),"
    r"\s*Signature=(?P<signature>[0-9a-f]{64})$"
)


@dataclass(frozen=True)
class SigV4Credentials:
    access_key_id: str
    secret_access_key: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> SigV4Credentials | None:
        """The configured credentials, or None when the port takes unsigned calls."""
        key, secret = environ.get(SFN_ACCESS_KEY_ID_ENV), environ.get(SFN_SECRET_ACCESS_KEY_ENV)
        if not key and not secret:
            return None
        if not key or not secret:
            raise ValueError(
                f"set both {SFN_ACCESS_KEY_ID_ENV} and {SFN_SECRET_ACCESS_KEY_ENV}, or neither"
            )
        return cls(key, secret)


@dataclass(frozen=True)
class SignedRequest:
    """A call as the server received it."""

    method: str
    scheme: str
    path: str
    query: str
    headers: Mapping[str, str]
    """By lower-case name."""
    body: bytes


def verify(
    request: SignedRequest,
    credentials: SigV4Credentials,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> None:
    """Nothing when `request` is signed with `credentials`; else the error AWS answers."""
    authorization = request.headers.get("authorization")
    if not authorization:
        raise MissingAuthenticationTokenException("Missing Authentication Token")
    parsed = _AUTHORIZATION.match(authorization.strip())
    if parsed is None:
        raise InvalidSignatureException("The Authorization header is not a SigV4 signature")
    if not hmac.compare_digest(parsed["key"], credentials.access_key_id):
        raise UnrecognizedClientException("The security token included in the request is invalid.")
    if parsed["service"] != SERVICE:
        raise InvalidSignatureException(
            f"Credential should be scoped to correct service: '{SERVICE}'."
        )
    timestamp = request.headers.get("x-amz-date", "")
    _check_time(timestamp, parsed["date"], now())
    signed = parsed["headers"].split(";")
    if "host" not in signed or any(name not in request.headers for name in signed):
        raise InvalidSignatureException("The request's SignedHeaders are not all in the request")
    content_sha = request.headers.get("x-amz-content-sha256")
    if content_sha is not None and content_sha != hashlib.sha256(request.body).hexdigest():
        raise InvalidSignatureException("The body does not match X-Amz-Content-SHA256")
    expected = _signature(request, credentials, parsed["region"], timestamp, signed)
    if not hmac.compare_digest(expected, parsed["signature"]):
        raise InvalidSignatureException(
            "The request signature we calculated does not match the signature you provided."
            " Check your AWS Secret Access Key and signing method."
        )


def _check_time(timestamp: str, scope_date: str, now: datetime) -> None:
    try:
        signed_at = datetime.strptime(timestamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        raise InvalidSignatureException("The request has no valid X-Amz-Date") from None
    if timestamp[:8] != scope_date:
        raise InvalidSignatureException("The credential scope's date is not the X-Amz-Date's")
    if abs(now - signed_at) > MAX_SKEW:
        raise InvalidSignatureException(
            f"Signature expired: {timestamp} is not within 15 minutes of the server's time"
        )


def _signature(
    request: SignedRequest,
    credentials: SigV4Credentials,
    region: str,
    timestamp: str,
    signed: list[str],
) -> str:
    """botocore's signature of the request, over the headers the client signed."""
    url = f"{request.scheme}://{request.headers['host']}{request.path}"
    if request.query:
        url += f"?{request.query}"
    headers = {name: request.headers[name] for name in signed}
    aws_request = AWSRequest(method=request.method, url=url, headers=headers, data=request.body)
    aws_request.context["timestamp"] = timestamp
    signer = SigV4Auth(
        Credentials(credentials.access_key_id, credentials.secret_access_key), SERVICE, region
    )
    canonical = signer.canonical_request(aws_request)
    return str(signer.signature(signer.string_to_sign(aws_request, canonical), aws_request))
