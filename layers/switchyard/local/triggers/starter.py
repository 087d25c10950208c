"""The triggers of installed workflows, and starting one run per delivery.

Each trigger has a key, `<workflow>-<type>-<index>` (its place in the workflow's `triggers`), as
the CDK stack names it. A delivery's run id derives from the delivery's own id, as the AWS
starter state machine derives it (`infra/translate/starter.py`):

    <ev|sc|q>-SHA256("<trigger key>:<delivery id>")

(webhooks: `wh-SHA256("<workflow>\\ndelivery:<X-Switchyard-Delivery>")`, the deployed function's
`execution_name`). A second delivery of the same id finds that run and starts nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, overload

from pydantic import TypeAdapter

from switchyard.contract.step_errors import TemplateRenderError
from switchyard.engine import errors as engine_errors
from switchyard.local.triggers.store import Delivery, TriggerKind, TriggerStore
from switchyard.model import EventTrigger, QueueTrigger, ScheduleTrigger, WebhookTrigger, Workflow
from switchyard.model.triggers import Trigger
from switchyard.platform.run_start import InvalidRunInputError, check_inputs
from switchyard.runtime.rendering import render

AnyTrigger = ScheduleTrigger | EventTrigger | WebhookTrigger | QueueTrigger
_PREFIX: dict[str, str] = {"event": "ev", "schedule": "sc", "queue": "q"}
_ROOT: dict[str, str] = {"event": "event", "schedule": "schedule", "queue": "message"}


class Starts(Protocol):
    """What starts runs: the engine's commands (`local.engine_client.EngineCommands`)."""

    def start_execution(
        self, machine_arn: str, name: str, data: Any, options: dict[str, Any]
    ) -> str: ...


class RunNames(Protocol):
    def run_exists(self, run_id: str) -> bool: ...


@dataclass(frozen=True)
class TriggerSpec:
    workflow: str
    """The workflow's name."""
    machine_arn: str
    """Where its runs start: the workflow's state machine."""
    key: str
    trigger: AnyTrigger
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """The workflow's input schemas, which the trigger's rendered input must fit."""
    version: int = 1

    @property
    def kind(self) -> TriggerKind:
        return self.trigger.type

    def run_id(self, delivery_id: str) -> str:
        digest = hashlib.sha256(f"{self.key}:{delivery_id}".encode()).hexdigest()
        return f"{_PREFIX[self.kind]}-{digest}"


def trigger_specs(workflows: Iterable[tuple[Workflow, str]]) -> list[TriggerSpec]:
    """Every trigger of the given (workflow, machine ARN) pairs, in order."""
    specs = []
    for workflow, arn in workflows:
        specs += specs_of_workflow(
            workflow.name, workflow.version, arn, workflow.inputs, workflow.triggers
        )
    return specs


_TRIGGERS: TypeAdapter[list[AnyTrigger]] = TypeAdapter(list[Trigger])


def specs_of_workflow(
    name: str,
    version: int,
    machine_arn: str,
    inputs: Mapping[str, Any],
    triggers: Iterable[AnyTrigger] | list[dict[str, Any]],
) -> list[TriggerSpec]:
    """The triggers of one workflow, models or as stored (`TriggerStore.installed`)."""
    parsed = _TRIGGERS.validate_python(list(triggers))
    return [
        TriggerSpec(name, machine_arn, f"{name}-{trigger.type}-{index}", trigger, inputs, version)
        for index, trigger in enumerate(parsed)
    ]


class Starter:
    """Starts the run of one delivery, at most once, and records what came of it."""

    def __init__(self, engine: Starts, runs: RunNames, store: TriggerStore) -> None:
        self.engine = engine
        self.runs = runs
        self.store = store

    @overload
    def deliver(
        self, spec: TriggerSpec, delivery_id: str, value: Mapping[str, Any]
    ) -> Delivery: ...

    @overload
    def deliver(
        self,
        spec: TriggerSpec,
        delivery_id: str,
        value: Mapping[str, Any],
        *,
        retry_failures: bool,
    ) -> Delivery | None: ...

    def deliver(
        self,
        spec: TriggerSpec,
        delivery_id: str,
        value: Mapping[str, Any],
        *,
        retry_failures: bool = False,
    ) -> Delivery | None:
        """Start `spec`'s run for a delivery whose trigger context is `value` (`event`,
        `schedule` or `message`). A start that cannot work (its input) is a dead letter, kept
        with its payload; one the engine failed is too, unless `retry_failures`, when nothing
        is recorded and None says "try again later"."""
        run_id = spec.run_id(delivery_id)
        base = Delivery(spec.key, spec.workflow, spec.kind, delivery_id, run_id, "started")
        if self.runs.run_exists(run_id):
            return self._keep(base, "duplicate")
        try:
            rendered = render(dict(spec.trigger.input), {_ROOT[spec.kind]: value})
            assert isinstance(rendered, dict)
            inputs = check_inputs(dict(spec.inputs), rendered)
            self.engine.start_execution(spec.machine_arn, run_id, inputs, {})
        except engine_errors.ExecutionAlreadyExists:
            return self._keep(base, "duplicate")
        except (TemplateRenderError, InvalidRunInputError) as exc:
            return self._dead(base, "invalid_input", _message(exc), value)
        except Exception as exc:  # the engine refused or failed: kept, never lost
            if retry_failures:
                return None
            return self._dead(base, type(exc).__name__, str(exc), value)
        return self._keep(base, "started")

    def _keep(self, base: Delivery, status: Any) -> Delivery:
        delivery = Delivery(**{**_fields(base), "status": status})
        self.store.record(delivery)
        return delivery

    def _dead(self, base: Delivery, kind: str, message: str, payload: Any) -> Delivery:
        delivery = Delivery(
            **{
                **_fields(base),
                "status": "dead_letter",
                "error": {"type": kind, "message": message},
            }
        )
        self.store.record(delivery, payload)
        return delivery


def _fields(delivery: Delivery) -> dict[str, Any]:
    return {name: getattr(delivery, name) for name in Delivery.__dataclass_fields__}


def _message(exc: Exception) -> str:
    if isinstance(exc, InvalidRunInputError):
        return "invalid run input: " + "; ".join(exc.problems)
    return str(exc)
