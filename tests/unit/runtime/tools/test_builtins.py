"""Built-in and declared tools against mocked HTTP, moto, and a real PostgreSQL."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import psycopg
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from moto import mock_aws

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import (
    PermanentError,
    PolicyViolationError,
    RateLimitedError,
    StepTimeoutError,
    TransientError,
)
from switchyard.runtime.tools import CallInfo, SecretResolver, ToolEnvironment, ToolRegistry
from switchyard.runtime.tools.aws_tools import aws_call
from switchyard.stores.idempotency import OutcomeUnknownError

CALL = CallInfo("run-1", "send", "run-1:send", timeout=5.0)


def http_env(handler: Any, **kwargs: Any) -> ToolEnvironment:
    return ToolEnvironment(http_transport=httpx.MockTransport(handler), **kwargs)


def invoke(
    name: str, args: dict[str, Any], env: ToolEnvironment, defs: dict[str, Any] | None = None
) -> Any:
    return ToolRegistry(defs).get(name).invoke(args, env, CALL)


def test_http_request_parses_json_and_sends_an_idempotency_key_on_writes() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(201, json={"id": 9}, headers={"x-trace": "t"})

    out = invoke(
        "http.request",
        {"method": "POST", "url": "https://crm.example.com/t", "json": {"a": 1}},
        http_env(handler),
    )
    assert out["status"] == 201 and out["body"] == {"id": 9} and out["headers"]["x-trace"] == "t"
    assert seen[0].headers["Idempotency-Key"] == "run-1:send"
    assert json.loads(seen[0].content) == {"a": 1}


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (httpx.Response(429, headers={"retry-after": "7"}), RateLimitedError),
        (httpx.Response(503), TransientError),
        (httpx.Response(404, text="no such customer"), PermanentError),
    ],
)
def test_http_status_mapping(response: httpx.Response, error: type[Exception]) -> None:
    with pytest.raises(error) as info:
        invoke("http.request", {"url": "https://api.example.com/x"}, http_env(lambda r: response))
    if isinstance(info.value, RateLimitedError):
        assert info.value.retry_after == 7.0


def test_http_connection_refused_is_transient_and_a_read_timeout_is_an_unknown_outcome() -> None:
    def refused(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    def lost(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no answer", request=request)

    with pytest.raises(TransientError) as info:
        invoke("http.request", {"url": "https://api.example.com/"}, http_env(refused))
    assert not isinstance(info.value, OutcomeUnknownError)
    with pytest.raises(OutcomeUnknownError):
        invoke(
            "http.request", {"method": "POST", "url": "https://api.example.com/"}, http_env(lost)
        )


def test_http_timeouts_are_timeout_and_one_after_sending_leaves_the_outcome_unknown() -> None:
    def slow_to_connect(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    def no_answer(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    def dropped(request: httpx.Request) -> httpx.Response:
        raise httpx.RemoteProtocolError("peer closed connection", request=request)

    with pytest.raises(StepTimeoutError) as connect:
        invoke("http.request", {"url": "https://api.example.com/"}, http_env(slow_to_connect))
    assert connect.value.name is StepErrorName.TIMEOUT
    assert not isinstance(connect.value, OutcomeUnknownError)  # nothing was sent
    with pytest.raises(OutcomeUnknownError) as read:
        invoke("http.request", {"method": "POST", "url": "https://x.example/"}, http_env(no_answer))
    assert read.value.name is StepErrorName.TIMEOUT
    with pytest.raises(OutcomeUnknownError) as drop:
        invoke("http.request", {"method": "POST", "url": "https://x.example/"}, http_env(dropped))
    assert drop.value.name is StepErrorName.TRANSIENT


def test_aws_timeouts_are_timeout() -> None:
    import socket
    import threading

    from botocore.config import Config
    from botocore.exceptions import ConnectTimeoutError

    # A server that accepts the connection and never answers: a real read timeout.
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted: list[socket.socket] = []
    threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True).start()
    s3 = boto3.client(
        "s3",
        region_name="us-east-1",
        endpoint_url=f"http://127.0.0.1:{server.getsockname()[1]}",
        aws_access_key_id="x",
        aws_secret_access_key="y",
        config=Config(read_timeout=0.2, connect_timeout=0.2, retries={"max_attempts": 0}),
    )
    env = ToolEnvironment(aws_clients={"s3": s3})
    try:
        with pytest.raises(OutcomeUnknownError) as read:
            invoke("s3.put", {"bucket": "b", "key": "k", "body": "x"}, env)
        assert read.value.name is StepErrorName.TIMEOUT
    finally:
        for conn in accepted:
            conn.close()
        server.close()

    def slow_to_connect() -> None:
        raise ConnectTimeoutError(endpoint_url="https://s3.us-east-1.amazonaws.com")

    with pytest.raises(StepTimeoutError) as connect:
        aws_call("s3.get", slow_to_connect)
    assert not isinstance(connect.value, OutcomeUnknownError)


def test_a_sql_statement_past_its_timeout_is_timeout(pg_conninfo: str) -> None:
    env = ToolEnvironment(sql_connections={"crm": pg_conninfo})
    quick = CallInfo("run-1", "slow", "run-1:slow", timeout=0.2)
    with pytest.raises(StepTimeoutError, match="statement timeout"):
        ToolRegistry().get("sql.query").invoke(
            {"connection": "crm", "query": "SELECT pg_sleep(5)"}, env, quick
        )


def test_http_host_allow_list(monkeypatch: pytest.MonkeyPatch) -> None:
    env = http_env(lambda r: httpx.Response(200, text="ok"), http_allowed_hosts=("*.example.com",))
    assert invoke("http.request", {"url": "https://api.example.com/"}, env)["body"] == "ok"
    with pytest.raises(PolicyViolationError, match="allow-list"):
        invoke("http.request", {"url": "https://evil.test/"}, env)
    monkeypatch.setenv("SWITCHYARD_HTTP_ALLOWED_HOSTS", "only.example.org")
    with pytest.raises(PolicyViolationError):
        invoke(
            "http.request",
            {"url": "https://api.example.com/"},
            http_env(lambda r: httpx.Response(200)),
        )


def test_declared_http_tool_renders_its_config_over_args() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"order": "A-1", "total": 12.5})

    defs = {
        "lookup_order": {
            "description": "Look up an order.",
            "kind": "http",
            "config": {
                "method": "GET",
                "url": "https://shop.example.com/orders/{{ args.order_id }}",
                "headers": {"X-Tier": "{{ args.tier }}"},
            },
        }
    }
    out = invoke("lookup_order", {"order_id": "A-1", "tier": "pro"}, http_env(handler), defs)
    assert out["body"]["total"] == 12.5
    assert seen[0].url.path == "/orders/A-1" and seen[0].headers["X-Tier"] == "pro"


def test_slack_post_reads_its_webhook_from_a_secret() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, text="ok")

    env = http_env(
        handler,
        secrets=SecretResolver(
            values={"support-webhook": "https://hooks.slack.com/services/T/B/X"}
        ),
        http_allowed_hosts=("api.example.com",),
    )
    assert invoke("slack.post", {"webhook": "support-webhook", "text": "hello"}, env) == {
        "ok": True
    }
    assert str(seen[0].url) == "https://hooks.slack.com/services/T/B/X"
    assert json.loads(seen[0].content) == {"text": "hello"}


@pytest.fixture
def aws() -> Iterator[ToolEnvironment]:
    with mock_aws():
        region = "us-east-1"
        yield ToolEnvironment(
            aws_clients={
                s: boto3.client(s, region_name=region)
                for s in ("s3", "sqs", "sns", "events", "ses", "secretsmanager")
            },
            email_from="noreply@example.com",
        )


def test_s3_put_then_get(aws: ToolEnvironment) -> None:
    aws.aws("s3").create_bucket(Bucket="docs")
    put = invoke("s3.put", {"bucket": "docs", "key": "a.json", "body": {"x": 1}}, aws)
    assert put["etag"]
    assert json.loads(invoke("s3.get", {"bucket": "docs", "key": "a.json"}, aws)["body"]) == {
        "x": 1
    }
    with pytest.raises(PermanentError, match="NoSuchKey"):
        invoke("s3.get", {"bucket": "docs", "key": "missing"}, aws)


def test_sqs_send_by_name_with_fifo_deduplication(aws: ToolEnvironment) -> None:
    sqs = aws.aws("sqs")
    url = sqs.create_queue(QueueName="jobs.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"]
    first = invoke("sqs.send", {"queue": "jobs.fifo", "message": {"job": 1}, "group_id": "g"}, aws)
    second = invoke("sqs.send", {"queue": url, "message": {"job": 1}, "group_id": "g"}, aws)
    assert first["message_id"]
    messages = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    assert len(messages) == 1  # the retried send was deduplicated by the step's key
    assert json.loads(messages[0]["Body"]) == {"job": 1}
    assert second["message_id"]


def test_sns_events_and_email(aws: ToolEnvironment) -> None:
    arn = aws.aws("sns").create_topic(Name="alerts")["TopicArn"]
    assert invoke("sns.publish", {"topic": arn, "message": "hi"}, aws)["message_id"]
    assert invoke("sns.publish", {"topic": "alerts", "message": {"a": 1}}, aws)["message_id"]
    assert invoke(
        "events.put", {"source": "shop", "detail_type": "Done", "detail": {"id": 1}}, aws
    )["event_id"]
    aws.aws("ses").verify_email_identity(EmailAddress="noreply@example.com")
    out = invoke("email.send", {"to": "c@example.com", "subject": "Re", "body": "Hello"}, aws)
    assert out["message_id"]
    with pytest.raises(PermanentError):
        invoke(
            "email.send",
            {"to": "c@example.com", "body": "x", "from": "unverified@example.com"},
            aws,
        )


def test_sql_query_uses_parameters_on_a_named_connection(pg_conninfo: str) -> None:
    with psycopg.connect(pg_conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS customers (id int, email text)")
        conn.execute("INSERT INTO customers VALUES (1, 'a@example.com'), (2, 'b@example.com')")
    env = ToolEnvironment(sql_connections={"crm": pg_conninfo})
    out = invoke(
        "sql.query",
        {
            "connection": "crm",
            "query": "SELECT id, email FROM customers WHERE email = %(email)s",
            "params": {"email": "b@example.com"},
        },
        env,
    )
    assert out == {"rows": [{"id": 2, "email": "b@example.com"}], "rowcount": 1}
    out = invoke(
        "sql.query",
        {
            "connection": "crm",
            "query": "UPDATE customers SET email = %(e)s WHERE id = 1",
            "params": {"e": "x@example.com"},
        },
        env,
    )
    assert out == {"rows": [], "rowcount": 1}
    with pytest.raises(PermanentError, match=r"sql\.query"):
        invoke("sql.query", {"connection": "crm", "query": "SELECT nope FROM customers"}, env)
    with pytest.raises(PermanentError, match="SWITCHYARD_SQL_BILLING"):
        invoke("sql.query", {"connection": "billing", "query": "SELECT 1"}, env)


def test_lambda_tool_invokes_the_function_and_maps_its_errors() -> None:
    client = boto3.client(
        "lambda", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    defs = {"score": {"description": "Score.", "kind": "lambda", "config": {"function": "scorer"}}}
    env = ToolEnvironment(aws_clients={"lambda": client})

    def payload(data: Any) -> StreamingBody:
        raw = json.dumps(data).encode()
        return StreamingBody(io.BytesIO(raw), len(raw))

    with Stubber(client) as stub:
        stub.add_response(
            "invoke",
            {"StatusCode": 200, "Payload": payload({"score": 0.7})},
            {
                "FunctionName": "scorer",
                "InvocationType": "RequestResponse",
                "Payload": json.dumps({"text": "x"}).encode(),
            },
        )
        stub.add_response(
            "invoke",
            {
                "StatusCode": 200,
                "FunctionError": "Unhandled",
                "Payload": payload({"errorType": "transient", "errorMessage": "busy"}),
            },
        )
        stub.add_client_error(
            "invoke", service_error_code="TooManyRequestsException", http_status_code=429
        )
        assert invoke("score", {"text": "x"}, env, defs) == {"score": 0.7}
        with pytest.raises(TransientError, match="busy"):
            invoke("score", {"text": "x"}, env, defs)
        with pytest.raises(RateLimitedError):
            invoke("score", {"text": "x"}, env, defs)
