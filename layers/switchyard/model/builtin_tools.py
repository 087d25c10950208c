"""The built-in tools: their arguments, their output, their default side effect.

The validator checks steps against these schemas; the step runtime implements the tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from switchyard.model.base import SideEffect

_STR = {"type": "string"}
_OBJ = {"type": "object"}


def _args(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _out(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


@dataclass(frozen=True)
class BuiltinTool:
    name: str
    description: str
    args_schema: dict[str, Any]
    output_schema: dict[str, Any]
    reads_only_with: tuple[tuple[str, str], ...] = ()
    """Argument values that make a call a read (side effect `none` by default)."""

    def default_side_effect(self, args: dict[str, Any]) -> SideEffect:
        for key, value in self.reads_only_with:
            if str(args.get(key, "GET" if key == "method" else "")).upper() == value:
                return SideEffect.NONE
        if self.name == "s3.get":
            return SideEffect.NONE
        return SideEffect.IDEMPOTENT


BUILTIN_TOOLS: dict[str, BuiltinTool] = {
    tool.name: tool
    for tool in (
        BuiltinTool(
            "http.request",
            "Call an HTTP endpoint.",
            _args(
                {
                    "method": {"enum": ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]},
                    "url": _STR,
                    "headers": _OBJ,
                    "params": _OBJ,
                    "json": {},
                    "body": _STR,
                    "timeout": {"type": "number", "exclusiveMinimum": 0},
                },
                "url",
            ),
            _out({"status": {"type": "integer"}, "headers": _OBJ, "body": {}}),
            reads_only_with=(("method", "GET"), ("method", "HEAD")),
        ),
        BuiltinTool(
            "sql.query",
            "Run one parameterised SQL statement on a named connection.",
            _args(
                {"connection": _STR, "query": _STR, "params": {"type": ["object", "array"]}},
                "connection",
                "query",
            ),
            _out({"rows": {"type": "array", "items": _OBJ}, "rowcount": {"type": "integer"}}),
        ),
        BuiltinTool(
            "s3.get",
            "Read an object from S3.",
            _args({"bucket": _STR, "key": _STR}, "bucket", "key"),
            _out({"body": _STR}),
        ),
        BuiltinTool(
            "s3.put",
            "Write an object to S3.",
            _args(
                {"bucket": _STR, "key": _STR, "body": {}, "content_type": _STR},
                "bucket",
                "key",
                "body",
            ),
            _out({"etag": _STR, "version_id": {"type": ["string", "null"]}}),
        ),
        BuiltinTool(
            "sqs.send",
            "Send a message to an SQS queue (name or URL).",
            _args(
                {
                    "queue": _STR,
                    "message": {},
                    "group_id": _STR,
                    "delay_seconds": {"type": "integer"},
                },
                "queue",
                "message",
            ),
            _out({"message_id": _STR}),
        ),
        BuiltinTool(
            "sns.publish",
            "Publish a message to an SNS topic.",
            _args({"topic": _STR, "message": {}, "subject": _STR}, "topic", "message"),
            _out({"message_id": _STR}),
        ),
        BuiltinTool(
            "events.put",
            "Put an event on an EventBridge bus.",
            _args(
                {"bus": _STR, "source": _STR, "detail_type": _STR, "detail": {}},
                "source",
                "detail_type",
                "detail",
            ),
            _out({"event_id": _STR}),
        ),
        BuiltinTool(
            "email.send",
            "Send an email with Amazon SES.",
            _args(
                {
                    "to": {"type": ["string", "array"]},
                    "subject": _STR,
                    "body": _STR,
                    "from": _STR,
                    "cc": {"type": ["string", "array"]},
                    "html": _STR,
                },
                "to",
                "body",
            ),
            _out({"message_id": _STR}),
        ),
        BuiltinTool(
            "slack.post",
            "Post a message to Slack through an incoming webhook (a named secret).",
            _args({"webhook": _STR, "text": _STR, "blocks": {"type": "array"}}, "webhook", "text"),
            _out({"ok": {"type": "boolean"}}),
        ),
    )
}
