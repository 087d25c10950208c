"""Triggers: what starts a run besides the API (which is always on)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import Field, field_validator

from switchyard.model.base import Spec, Template

_CRON_FIELD = re.compile(r"^[0-9A-Za-z*?/,#LW-]+$")
SECRET_PATTERN = r"^(env|secret):[A-Za-z0-9_./-]+$"


class ScheduleTrigger(Spec):
    """Start a run on a cron schedule, in a time zone."""

    type: Literal["schedule"]
    cron: str
    """Five fields: minute hour day-of-month month day-of-week, e.g. `0 9 * * MON-FRI`."""
    timezone: str = "UTC"
    input: dict[str, Template] = Field(default_factory=dict)

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, value: str) -> str:
        fields = value.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(f) for f in fields):
            raise ValueError(
                "cron needs five fields: minute hour day-of-month month day-of-week, "
                "e.g. '0 9 * * MON-FRI'"
            )
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            ZoneInfo(value)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown time zone '{value}'; use an IANA name such as Europe/Berlin"
            ) from None
        return value


class EventTrigger(Spec):
    """Start a run for each event on the switchyard event bus that matches `pattern`."""

    type: Literal["event"]
    pattern: dict[str, Any]
    """An EventBridge event pattern."""
    input: dict[str, Template] = Field(default_factory=dict)
    """Templates over `event`."""


class WebhookTrigger(Spec):
    """Start a run for each verified POST to the workflow's webhook URL."""

    type: Literal["webhook"]
    secret: Annotated[str, Field(pattern=SECRET_PATTERN)]
    """Where the HMAC-SHA256 key is: `env:NAME` or `secret:NAME` (Secrets Manager)."""
    input: dict[str, Template] = Field(default_factory=dict)
    """Templates over `body`, `headers` and `query`."""


class QueueTrigger(Spec):
    """Start a run for each message on a queue."""

    type: Literal["queue"]
    queue: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,80}$")]
    input: dict[str, Template] = Field(default_factory=dict)
    """Templates over `message`."""


Trigger = Annotated[
    ScheduleTrigger | EventTrigger | WebhookTrigger | QueueTrigger,
    Field(discriminator="type"),
]
