"""Built-in tools on AWS services: `s3.get`, `s3.put`, `sqs.send`, `sns.publish`, `events.put`,
`email.send` (SES), and declared tools of kind `lambda`.

AWS errors map like HTTP ones: throttling → `rate_limit`, 5xx and connection failures →
`transient`, a connect timeout → `timeout`, a read timeout after sending → `timeout` with an
unknown outcome, a dropped connection after sending → `transient` with an unknown outcome, the
rest → `permanent`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from botocore.exceptions import (  # type: ignore[import-untyped]
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    NoCredentialsError,
    NoRegionError,
    ReadTimeoutError,
)

from switchyard.contract.step_errors import (
    PermanentError,
    RateLimitedError,
    StepError,
    StepTimeoutError,
    TransientError,
)
from switchyard.model import SideEffect
from switchyard.model.builtin_tools import BUILTIN_TOOLS
from switchyard.runtime.settings import EVENT_BUS_ENV, SMTP_URL_ENV
from switchyard.runtime.tools.base import CallInfo, ToolEnvironment, missing_aws_setting
from switchyard.runtime.tools.smtp_email import build_message, send_smtp
from switchyard.stores.idempotency import OutcomeUnknownError, OutcomeUnknownTimeoutError

T = TypeVar("T")
_THROTTLED = {
    "Throttling",
    "ThrottlingException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "RequestLimitExceeded",
    "SlowDown",
}


def aws_call(tool: str, action: Callable[[], T]) -> T:
    """Run one AWS API call, mapping its failures to step errors."""
    try:
        return action()
    except ClientError as exc:
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        message = f"{tool}: {code}: {error.get('Message', '')}"
        if code in _THROTTLED or status == 429:
            raise RateLimitedError(message) from None
        if status >= 500 or code in ("ServiceUnavailable", "InternalError", "InternalFailure"):
            raise TransientError(message) from None
        raise PermanentError(message) from None
    except ConnectTimeoutError as exc:
        raise StepTimeoutError(f"{tool}: timed out connecting: {exc}") from None
    except EndpointConnectionError as exc:
        raise TransientError(f"{tool}: could not connect: {exc}") from None
    except ReadTimeoutError as exc:
        raise OutcomeUnknownTimeoutError(f"{tool}: timed out after sending: {exc}") from None
    except ConnectionClosedError as exc:
        raise OutcomeUnknownError(f"{tool}: no answer after sending: {exc}") from None
    except (NoRegionError, NoCredentialsError) as exc:
        raise missing_aws_setting(tool, exc) from None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


class BuiltinTool:
    """Name, description, schema and default side effect from the model's built-in table."""

    name: str = ""

    def __init__(self) -> None:
        builtin = BUILTIN_TOOLS[self.name]
        self.description = builtin.description
        self.input_schema = builtin.args_schema

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return BUILTIN_TOOLS[self.name].default_side_effect(dict(args))


class S3GetTool(BuiltinTool):
    name = "s3.get"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        s3 = env.aws("s3")
        response = aws_call(
            self.name, lambda: s3.get_object(Bucket=args["bucket"], Key=args["key"])
        )
        data: bytes = response["Body"].read()
        try:
            return {"body": data.decode("utf-8")}
        except UnicodeDecodeError:
            raise PermanentError(
                f"s3.get: s3://{args['bucket']}/{args['key']} is not UTF-8 text"
            ) from None


class S3PutTool(BuiltinTool):
    name = "s3.put"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        s3 = env.aws("s3")
        body = args["body"]
        content_type = args.get("content_type") or (
            "text/plain; charset=utf-8" if isinstance(body, str) else "application/json"
        )
        response = aws_call(
            self.name,
            lambda: s3.put_object(
                Bucket=args["bucket"],
                Key=args["key"],
                Body=_text(body).encode(),
                ContentType=content_type,
            ),
        )
        return {"etag": str(response["ETag"]).strip('"'), "version_id": response.get("VersionId")}


class SqsSendTool(BuiltinTool):
    name = "sqs.send"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        sqs = env.aws("sqs")
        queue = str(args["queue"])
        url = (
            queue
            if queue.startswith("https://") or queue.startswith("http://")
            else aws_call(self.name, lambda: sqs.get_queue_url(QueueName=queue))["QueueUrl"]
        )
        request: dict[str, Any] = {"QueueUrl": url, "MessageBody": _text(args["message"])}
        if args.get("group_id"):
            # FIFO queues drop a duplicate with the same deduplication id for five minutes.
            request["MessageGroupId"] = args["group_id"]
            request["MessageDeduplicationId"] = hashlib.sha256(
                call.idempotency_key.encode()
            ).hexdigest()[:64]
        if args.get("delay_seconds") is not None:
            request["DelaySeconds"] = int(args["delay_seconds"])
        response = aws_call(self.name, lambda: sqs.send_message(**request))
        return {"message_id": response["MessageId"]}


class SnsPublishTool(BuiltinTool):
    name = "sns.publish"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        sns = env.aws("sns")
        topic = str(args["topic"])
        if not topic.startswith("arn:"):
            topic = self._arn_of(sns, topic)
        request: dict[str, Any] = {"TopicArn": topic, "Message": _text(args["message"])}
        if args.get("subject"):
            request["Subject"] = args["subject"]
        response = aws_call(self.name, lambda: sns.publish(**request))
        return {"message_id": response["MessageId"]}

    def _arn_of(self, sns: Any, name: str) -> str:
        paginator = sns.get_paginator("list_topics")
        for page in aws_call(self.name, lambda: list(paginator.paginate())):
            for topic in page.get("Topics", []):
                if str(topic["TopicArn"]).rsplit(":", 1)[-1] == name:
                    return str(topic["TopicArn"])
        raise PermanentError(f"sns.publish: no topic named {name!r}")


class EventsPutTool(BuiltinTool):
    name = "events.put"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        import os

        events = env.aws("events")
        entry = {
            "Source": args["source"],
            "DetailType": args["detail_type"],
            "Detail": _text(args["detail"]),
            "EventBusName": args.get("bus") or os.environ.get(EVENT_BUS_ENV, "default"),
        }
        response = aws_call(self.name, lambda: events.put_events(Entries=[entry]))
        result = response["Entries"][0]
        if response.get("FailedEntryCount") or "EventId" not in result:
            code = result.get("ErrorCode", "")
            error: StepError = (
                RateLimitedError(f"events.put: {code}")
                if "Throttl" in code
                else PermanentError(f"events.put: {code}: {result.get('ErrorMessage', '')}")
            )
            raise error
        return {"event_id": result["EventId"]}


class EmailSendTool(BuiltinTool):
    """SES, or the SMTP server of `SWITCHYARD_SMTP_URL` when that is set (one machine)."""

    name = "email.send"

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        smtp_url = env.smtp()
        if smtp_url:
            message = build_message(args, args.get("from") or env.sender(), call.idempotency_key)
            return {"message_id": send_smtp(smtp_url, message, timeout=call.timeout)}
        ses = env.aws("ses", hint=f"or set {SMTP_URL_ENV} to send through an SMTP server")

        def addresses(value: Any) -> list[str]:
            if value is None:
                return []
            return [value] if isinstance(value, str) else [str(v) for v in value]

        body: dict[str, Any] = {"Text": {"Data": args["body"], "Charset": "UTF-8"}}
        if args.get("html"):
            body["Html"] = {"Data": args["html"], "Charset": "UTF-8"}
        response = aws_call(
            self.name,
            lambda: ses.send_email(
                Source=args.get("from") or env.sender(),
                Destination={
                    "ToAddresses": addresses(args["to"]),
                    "CcAddresses": addresses(args.get("cc")),
                },
                Message={
                    "Subject": {"Data": args.get("subject", ""), "Charset": "UTF-8"},
                    "Body": body,
                },
            ),
        )
        return {"message_id": response["MessageId"]}


_ERROR_NAMES: dict[str, type[StepError]] = {
    "rate_limit": RateLimitedError,
    "transient": TransientError,
    "timeout": StepTimeoutError,
    "Sandbox.Timedout": StepTimeoutError,
    "permanent": PermanentError,
}


@dataclass
class LambdaTool:
    """A workflow's `kind: lambda` tool: invokes `config.function` with the arguments as event."""

    name: str
    description: str
    input_schema: dict[str, Any]
    function: str
    declared_side_effect: SideEffect

    def side_effect(self, args: Mapping[str, Any]) -> SideEffect:
        return self.declared_side_effect

    def invoke(self, args: dict[str, Any], env: ToolEnvironment, call: CallInfo) -> Any:
        client = env.aws("lambda")
        response = aws_call(
            self.name,
            lambda: client.invoke(
                FunctionName=self.function,
                InvocationType="RequestResponse",
                Payload=json.dumps(args).encode(),
            ),
        )
        raw = response["Payload"].read()
        payload = json.loads(raw) if raw else None
        if response.get("FunctionError"):
            error_type = str((payload or {}).get("errorType", ""))
            message = (
                f"{self.name}: {self.function} failed: {(payload or {}).get('errorMessage', '')}"
            )
            raise _ERROR_NAMES.get(error_type, PermanentError)(message)
        return payload
