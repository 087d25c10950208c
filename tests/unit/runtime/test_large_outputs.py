"""Large outputs go to the output store by reference and come back transparently."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws
from psycopg_pool import ConnectionPool

from switchyard.contract import LARGE_OUTPUT_BYTES, OUTPUT_REF_KEY
from switchyard.runtime.large_outputs import (
    InMemoryOutputStore,
    OutputNotFoundError,
    OutputStore,
    PostgresOutputStore,
    S3OutputStore,
    contains_ref,
    json_size,
    offload,
    resolve,
)


@pytest.fixture(params=["memory", "s3", "postgres"])
def store(request: pytest.FixtureRequest) -> Iterator[OutputStore]:
    if request.param == "memory":
        yield InMemoryOutputStore()
    elif request.param == "s3":
        with mock_aws():
            client = boto3.client("s3", region_name="us-east-1")
            client.create_bucket(Bucket="outputs")
            yield S3OutputStore("outputs", client=client, prefix="runs/")
    else:
        pool: ConnectionPool = request.getfixturevalue("pg_pool")
        yield PostgresOutputStore(pool)


def test_small_output_stays_inline(store: OutputStore) -> None:
    output = {"label": "billing", "text": "short"}
    assert offload(output, store, "run-1/classify") is output


def test_large_field_is_offloaded_and_small_fields_stay_inline(store: OutputStore) -> None:
    output = {"label": "billing", "score": 0.9, "result": {"kind": "x", "text": "é" * 40_000}}
    small = offload(output, store, "run-1/draft")
    assert json_size(small) <= LARGE_OUTPUT_BYTES
    assert small["label"] == "billing" and small["score"] == 0.9
    assert small["result"]["kind"] == "x"
    ref = small["result"]["text"][OUTPUT_REF_KEY]
    assert ref["store"] == store.name and ref["key"].startswith("run-1/draft/")
    assert ref["bytes"] > 40_000
    assert resolve(small, store) == output
    assert output["result"]["text"] == "é" * 40_000  # the input is not changed


def test_many_medium_values_are_offloaded_until_under_the_limit(store: OutputStore) -> None:
    output: dict[str, Any] = {f"part{i}": "x" * 5_000 for i in range(20)}
    output["status"] = "ok"
    small = offload(output, store, "k")
    assert json_size(small) <= LARGE_OUTPUT_BYTES
    assert small["status"] == "ok"
    assert contains_ref(small)
    assert resolve(small, store) == output


def test_one_huge_list_is_offloaded_whole(store: OutputStore) -> None:
    output = {"rows": [{"id": i, "v": "y" * 90} for i in range(2_000)], "count": 2_000}
    small = offload(output, store, "k")
    assert small["count"] == 2_000 and OUTPUT_REF_KEY in small["rows"]
    assert resolve({"steps": {"a": {"output": small}}}, store) == {
        "steps": {"a": {"output": output}}
    }


def test_a_scalar_output_too_large_is_replaced_whole(store: OutputStore) -> None:
    small = offload("z" * 50_000, store, "k")
    assert OUTPUT_REF_KEY in small
    assert resolve(small, store) == "z" * 50_000


def test_same_output_gives_the_same_key(store: OutputStore) -> None:
    output = {"text": "q" * 40_000}
    assert offload(output, store, "k") == offload(output, store, "k")


def test_a_step_result_keeps_at_most_its_compiled_output_limit_inline() -> None:
    """Inside a map of 200 items the compiler gives each item's output a share of the state."""
    from switchyard.runtime.large_outputs import InMemoryOutputStore, json_size
    from switchyard.runtime.services import StepServices
    from switchyard.runtime.step_io import finish
    from tests.unit.runtime.helpers import invocation

    output = {"id": "SUP-1", "summary": "uncapped price escalation " * 40, "risk": "high"}
    services = StepServices(output_store=InMemoryOutputStore())
    step = {"type": "tool", "tool": "http.request", "args": {"url": "https://x"}}
    given = invocation("each", step, scope={"item": {}, "index": 3})
    assert finish(given, services, output).output == output  # 1 KB: under 32 KiB
    limited = given.model_copy(update={"output_limit": 600})
    result = finish(limited, services, output).output
    assert json_size(result) <= 600
    assert result["id"] == "SUP-1" and OUTPUT_REF_KEY in result["summary"]


def test_the_start_of_a_stored_value_is_read_with_its_full_size(store: OutputStore) -> None:
    """What the dashboard shows of a large value: its first bytes, never the whole of it."""
    data = b'{"text": "' + "é".encode() * 50_000 + b'"}'
    store.put("run-1/draft/abc.json", data)
    assert store.get_start("run-1/draft/abc.json", 100) == (data[:100], len(data))
    assert store.get_start("run-1/draft/abc.json", len(data) + 10) == (data, len(data))
    with pytest.raises(OutputNotFoundError):
        store.get_start("run-1/draft/missing.json", 100)
