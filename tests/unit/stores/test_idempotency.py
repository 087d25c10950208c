"""One conformance suite for both Powertools persistence layers (DynamoDB on moto, PostgreSQL)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract import StepErrorName
from switchyard.contract.step_errors import HumanRequiredError, PermanentError, TransientError
from switchyard.stores.idempotency import (
    IdempotentCalls,
    OutcomeUnknownError,
    PostgresPersistenceLayer,
    create_idempotency_table,
    dynamodb_persistence_layer,
)
from tests.unit.stores.backends import serialised_dynamodb_client


@dataclass
class LambdaContext:
    """What the Lambda runtime hands a handler; only the remaining time matters here."""

    remaining_ms: int

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


class Crash(BaseException):
    """The process dies mid-call: no exception handler of ours or Powertools' runs."""


@pytest.fixture(params=["dynamodb", "postgres"])
def persistence(request: pytest.FixtureRequest) -> Iterator[BasePersistenceLayer]:
    if request.param == "dynamodb":
        with mock_aws():
            client = serialised_dynamodb_client()
            create_idempotency_table(client, "idempotency")
            yield dynamodb_persistence_layer("idempotency", client=client)
    else:
        pool: ConnectionPool = request.getfixturevalue("pg_pool")
        yield PostgresPersistenceLayer(pool)


@pytest.fixture
def calls(persistence: BasePersistenceLayer) -> IdempotentCalls:
    return IdempotentCalls(persistence)


def new_key() -> str:
    return f"run-{uuid.uuid4().hex[:8]}:send"


class Effects:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> dict[str, Any]:
        self.count += 1
        return {"message_id": f"m-{self.count}"}


PAYLOAD = {"tool": "email.send", "args": {"to": "a@example.com", "body": "hi"}}


def test_a_duplicate_call_returns_the_stored_result(calls: IdempotentCalls) -> None:
    key, effect = new_key(), Effects()
    first = calls.run(key, PAYLOAD, effect, lambda_context=LambdaContext(30_000))
    second = calls.run(key, PAYLOAD, effect, lambda_context=LambdaContext(30_000))
    assert first == second == {"message_id": "m-1"}
    assert effect.count == 1


def test_a_concurrent_duplicate_is_refused_while_in_progress(calls: IdempotentCalls) -> None:
    key, effect = new_key(), Effects()
    started, finish = threading.Event(), threading.Event()

    def slow() -> dict[str, Any]:
        started.set()
        finish.wait(5)
        return effect()

    results: list[Any] = []
    first = threading.Thread(
        target=lambda: results.append(
            calls.run(key, PAYLOAD, slow, lambda_context=LambdaContext(30_000))
        )
    )
    first.start()
    assert started.wait(5)
    with pytest.raises(TransientError, match="already running"):
        calls.run(key, PAYLOAD, effect, lambda_context=LambdaContext(30_000))
    finish.set()
    first.join()
    assert calls.run(key, PAYLOAD, effect) == results[0] == {"message_id": "m-1"}
    assert effect.count == 1


def test_a_crashed_attempt_blocks_the_key_until_its_lambda_would_have_timed_out(
    calls: IdempotentCalls,
) -> None:
    key, effect = new_key(), Effects()

    def crash() -> dict[str, Any]:
        raise Crash

    with pytest.raises(Crash):
        calls.run(key, PAYLOAD, crash, lambda_context=LambdaContext(60_000))
    with pytest.raises(TransientError, match="already running"):
        calls.run(key, PAYLOAD, effect, lambda_context=LambdaContext(60_000))
    assert effect.count == 0

    other = new_key()
    with pytest.raises(Crash):
        calls.run(other, PAYLOAD, crash, lambda_context=LambdaContext(1))
    time.sleep(0.01)  # the crashed attempt's Lambda deadline (1 ms) has passed
    assert calls.run(other, PAYLOAD, effect, lambda_context=LambdaContext(60_000)) == {
        "message_id": "m-1"
    }


def test_a_changed_payload_under_the_same_key_is_caught(calls: IdempotentCalls) -> None:
    key, effect = new_key(), Effects()
    calls.run(key, PAYLOAD, effect)
    changed = {"tool": "email.send", "args": {"to": "b@example.com", "body": "hi"}}
    with pytest.raises(PermanentError, match="other arguments"):
        calls.run(key, changed, effect)
    assert effect.count == 1


def test_a_failed_call_can_be_retried(calls: IdempotentCalls) -> None:
    key, effect = new_key(), Effects()

    def refused() -> dict[str, Any]:
        raise TransientError("503")

    with pytest.raises(TransientError):
        calls.run(key, PAYLOAD, refused)
    assert calls.run(key, PAYLOAD, effect) == {"message_id": "m-1"}


def test_non_idempotent_call_after_a_crash_goes_to_a_person(calls: IdempotentCalls) -> None:
    key, effect = new_key(), Effects()

    def crash() -> dict[str, Any]:
        raise Crash

    with pytest.raises(Crash):
        calls.run(key, PAYLOAD, crash, non_idempotent=True, lambda_context=LambdaContext(1))
    time.sleep(0.01)
    with pytest.raises(HumanRequiredError) as info:
        calls.run(key, PAYLOAD, effect, non_idempotent=True, call_id="c-1")
    assert info.value.name is StepErrorName.HUMAN_REQUIRED
    assert info.value.request.kind == "unknown_outcome"
    assert info.value.request.call_id == "c-1"
    assert info.value.request.tool == "email.send"
    assert effect.count == 0
    # A person checked and said: run it again.
    result = calls.run(key, PAYLOAD, effect, non_idempotent=True, rerun_approved=True)
    assert result == {"message_id": "m-1"}


def test_unknown_outcome_of_a_non_idempotent_call_goes_to_a_person(calls: IdempotentCalls) -> None:
    def lost() -> dict[str, Any]:
        raise OutcomeUnknownError("read timeout after the request was sent")

    with pytest.raises(HumanRequiredError) as info:
        calls.run(new_key(), PAYLOAD, lost, non_idempotent=True)
    assert info.value.request.kind == "unknown_outcome"
    # An idempotent call with an unknown outcome is simply retried (its key protects it).
    with pytest.raises(TransientError):
        calls.run(new_key(), PAYLOAD, lost)


def test_a_person_asked_about_an_unknown_outcome_sees_the_arguments_redacted(
    calls: IdempotentCalls,
) -> None:
    def lost() -> dict[str, Any]:
        raise OutcomeUnknownError("read timeout after the request was sent")

    payload = {"tool": "slack.post", "args": {"webhook": "hooks-secret-url", "text": "hi"}}
    with pytest.raises(HumanRequiredError) as info:
        calls.run(new_key(), payload, lost, non_idempotent=True)
    assert info.value.request.args == {"webhook": "***", "text": "hi"}
