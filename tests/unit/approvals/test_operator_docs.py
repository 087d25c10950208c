"""docs/approvals.md, "Operators on AWS": its Python snippet runs and signs its request as API
Gateway's IAM authorizer checks it (SigV4, service `execute-api`), and its operator policy allows
every IAM-authorized route of approval_api and nothing public."""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import re
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from infra.constructs.approvals import OPERATOR_ROUTES, PUBLIC_ROUTES
from tests.conftest import REPO

SECTION = "### Operators on AWS"
KEY, SECRET, REGION = "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "eu-west-1"
API = "arn:aws:execute-api:eu-west-1:123456789012:a1b2c3d4e5"


def _section() -> str:
    text = (REPO / "docs" / "approvals.md").read_text()
    start = text.index(SECTION)
    end = text.index("\n## ", start)
    return text[start:end]


def _block(language: str, containing: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", _section(), flags=re.S)
    (block,) = [b for b in blocks if containing in b]
    return str(block)


class _Recorded(BaseHTTPRequestHandler):
    received: list[tuple[str, str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.received.append(("POST", self.path, headers, body))
        answer = json.dumps({"decision": "approved"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api_url() -> Iterator[str]:
    _Recorded.received.clear()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_python_snippet_signs_its_request_for_execute_api(
    api_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("API_URL", api_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_block("python", "SigV4Auth"), "docs/approvals.md", "exec"), {})
    assert printed.getvalue().strip() == "200 {'decision': 'approved'}"
    ((method, path, headers, body),) = _Recorded.received
    assert (method, path) == ("POST", "/runs/ticket-T-1/steps/approve/approve")
    assert headers["x-switchyard-user"] == "dana" and json.loads(body) == {"note": "looks right"}
    signed = re.fullmatch(
        r"AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/(?P<region>[^/]+)"
        r"/(?P<service>[^/]+)/aws4_request, SignedHeaders=(?P<names>[^,]+), Signature=(?P<sig>\w+)",
        headers["authorization"],
    )
    assert signed is not None
    assert (signed["key"], signed["region"], signed["service"]) == (KEY, REGION, "execute-api")
    names = signed["names"].split(";")
    assert {"host", "x-switchyard-user", "x-amz-date"} <= set(names)
    # Signed again over the request as received, as the authorizer does: the same signature.
    again = AWSRequest(
        method=method, url=api_url + path, data=body, headers={n: headers[n] for n in names}
    )
    again.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(KEY, SECRET), "execute-api", REGION)
    expected = signer.signature(
        signer.string_to_sign(again, signer.canonical_request(again)), again
    )
    assert expected == signed["sig"]


def _allowed(resources: list[str], arn: str) -> bool:
    """IAM's ARN matching: `*` is any run of characters, `/` included."""
    return any(fnmatch.fnmatchcase(arn, pattern) for pattern in resources)


def _arn(route: str) -> str:
    method, path = route.split(" ", 1)
    concrete = re.sub(r"\{[^}]+\}", "x1", path)
    return f"{API}/$default/{method}{concrete}"


def test_the_operator_policy_allows_every_iam_route_and_no_public_one() -> None:
    policy = json.loads(
        _block("json", "execute-api:Invoke")
        .replace("<region>", "eu-west-1")
        .replace("<account>", "123456789012")
        .replace("<api id>", "a1b2c3d4e5")
    )
    (statement,) = policy["Statement"]
    assert statement["Effect"] == "Allow" and statement["Action"] == "execute-api:Invoke"
    resources = statement["Resource"]
    for route in OPERATOR_ROUTES:
        assert _allowed(resources, _arn(route)), route
    for route in PUBLIC_ROUTES:
        assert not _allowed(resources, _arn(route)), route
    assert not _allowed(resources, f"{API}/$default/POST/workflows/refund/runs")
