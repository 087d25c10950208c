"""Side effects made effectively once with Powertools idempotency.

The key is the step's idempotency key, `run_id:step_id[:index][:iteration]` (an agent's tool calls
add `#<turn>.<n>`), which never contains the attempt number: a retry, a redrive or a re-dispatch
after a crash finds the first attempt's record. What Powertools gives, per key:

- a finished call returns its stored result without running again;
- a call running elsewhere makes a duplicate fail (`transient`: try later);
- a crashed attempt's in-progress record expires when that attempt's Lambda would have timed out
  (`IdempotencyConfig.register_lambda_context`), and then the call may run again;
- the payload (tool and arguments) is hashed and checked: different arguments under the same key
  are an error, never a silent replay of another call's result.

`non_idempotent` tools are never run again automatically. A new attempt that finds an expired
in-progress record (its predecessor crashed mid-call) or whose own call ends with an unknown outcome
(a timeout or dropped connection after the request went out) raises `human_required` with kind
`unknown_outcome`; a person checks what happened and decides.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.utilities.idempotency import (
    BasePersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyItemNotFoundError,
    IdempotencyPersistenceLayerError,
    IdempotencyValidationError,
)

from switchyard.contract import HumanRequest, StepErrorName
from switchyard.contract.step_errors import (
    ConcurrentUpdateError,
    HumanRequiredError,
    PermanentError,
    StepError,
    TransientError,
)
from switchyard.stores.audit import redact

DEFAULT_EXPIRES_AFTER = 30 * 24 * 3600
"""Records outlive a run's retries and redrives (Step Functions redrives within 14 days)."""
KEY_PREFIX = "switchyard"
LAMBDA_MAX_MILLIS = 15 * 60 * 1000


class RemainingTime:
    """A stand-in for a Lambda context outside Lambda (the local engine): a fixed time budget.

    Without one, a crashed attempt's in-progress record would block its key until the record's
    full expiry (days); with it, until the attempt could at most have run.
    """

    def __init__(self, millis: int = LAMBDA_MAX_MILLIS) -> None:
        self.millis = millis

    def get_remaining_time_in_millis(self) -> int:
        return self.millis


class OutcomeUnknownError(TransientError):
    """The request went out and no answer came back: it may or may not have taken effect."""


class OutcomeUnknownTimeoutError(OutcomeUnknownError):
    """The request went out and timed out waiting for its answer: a `timeout`, whose outcome is
    unknown all the same."""

    name = StepErrorName.TIMEOUT


class IdempotentCalls:
    """Runs side-effecting calls once per key on one persistence layer."""

    def __init__(
        self,
        persistence: BasePersistenceLayer,
        *,
        expires_after_seconds: int = DEFAULT_EXPIRES_AFTER,
        key_prefix: str = KEY_PREFIX,
    ) -> None:
        self.persistence = persistence
        self.expires_after_seconds = expires_after_seconds
        self.key_prefix = key_prefix

    def _config(self, lambda_context: Any) -> IdempotencyConfig:
        config = IdempotencyConfig(
            event_key_jmespath="key",
            payload_validation_jmespath="payload",
            raise_on_no_idempotency_key=True,
            expires_after_seconds=self.expires_after_seconds,
            hash_function="sha256",
        )
        context: Any = lambda_context if lambda_context is not None else RemainingTime()
        config.register_lambda_context(context)
        return config

    def run(
        self,
        key: str,
        payload: Any,
        call: Callable[[], Any],
        *,
        non_idempotent: bool = False,
        rerun_approved: bool = False,
        lambda_context: Any = None,
        describe: str = "call",
        call_id: str | None = None,
    ) -> Any:
        """`call()`'s result, made once for `key` (see the module doc).

        `payload` (JSON) is what must not change under the key: the tool and its arguments.
        `lambda_context` (anything with `get_remaining_time_in_millis()`) bounds how long a crashed
        attempt's in-progress record blocks the key. `rerun_approved`: a person has looked at an
        unknown outcome of this non-idempotent call and said to run it again. `call_id` names the
        call in a `human_required` request, so the person's decision can be found.
        """
        config = self._config(lambda_context)
        data = {"key": key, "payload": json.loads(json.dumps(payload, default=str))}
        name = call_id or key
        if non_idempotent and not rerun_approved:
            self._refuse_after_crash(config, data, describe, name)

        @idempotent_function(  # type: ignore[untyped-decorator]
            data_keyword_argument="data",
            persistence_store=self.persistence,
            config=config,
            key_prefix=self.key_prefix,
        )
        def once(data: dict[str, Any]) -> dict[str, Any]:
            try:
                return {"result": call()}
            except OutcomeUnknownError as exc:
                if non_idempotent:
                    raise _unknown_outcome(describe, data, exc.message, name) from exc
                raise

        try:
            stored = once(data=data)
        except IdempotencyAlreadyInProgressError:
            raise ConcurrentUpdateError(
                f"{describe} is already running for key {key} (a duplicate invocation)"
            ) from None
        except IdempotencyValidationError:
            raise PermanentError(
                f"{describe} was called with other arguments than the first attempt "
                f"under idempotency key {key}"
            ) from None
        except IdempotencyPersistenceLayerError as exc:
            raise TransientError(f"idempotency store failed for {key}: {exc}") from None
        return stored["result"] if isinstance(stored, dict) else stored

    def _refuse_after_crash(
        self, config: IdempotencyConfig, data: dict[str, Any], describe: str, call_id: str
    ) -> None:
        """A non-idempotent call that an earlier attempt started and never finished: a person."""
        self.persistence.configure(config, key_prefix=self.key_prefix)
        try:
            record = self.persistence.get_record(data=data)
        except IdempotencyItemNotFoundError:
            return
        except IdempotencyValidationError:
            return  # the run's idempotent_function call reports it
        if record is None or record.status != "INPROGRESS":
            return
        expiry = record.in_progress_expiry_timestamp
        now_ms = int(dt.datetime.now().timestamp() * 1000)
        if expiry is not None and expiry < now_ms:
            raise _unknown_outcome(
                describe, data, "an earlier attempt started this call and never finished", call_id
            )
        raise ConcurrentUpdateError(f"{describe} is already running for key {data['key']}")


def _unknown_outcome(describe: str, data: dict[str, Any], why: str, call_id: str) -> StepError:
    payload = data.get("payload") or {}
    return HumanRequiredError(
        HumanRequest(
            kind="unknown_outcome",
            reason=f"{describe} is not safe to repeat and its outcome is unknown: {why}. "
            "Check whether it took effect, then approve to run it again or reject.",
            tool=payload.get("tool") if isinstance(payload, dict) else None,
            args=redact(payload.get("args")) if isinstance(payload, dict) else None,
            call_id=call_id,
        )
    )
