"""The render function: outputs, a sub-workflow's input and a map's items rendered against a
context whose large outputs it reads back from the store their references name."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from switchyard.constants import DATABASE_URL_ENV, OUTPUT_BUCKET_ENV
from switchyard.contract import OUTPUT_REF_KEY
from switchyard.platform.render import handle
from switchyard.runtime import wiring
from switchyard.runtime.large_outputs import (
    OutputStore,
    PostgresOutputStore,
    S3OutputStore,
    offload,
)

RUN = {"id": "run-1", "workflow": "report", "version": 1, "started_at": "2026-01-01T00:00:00Z"}
LONG = "é" * 40_000


@pytest.fixture
def no_stores(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A process with neither a database nor a bucket (render on AWS, by default)."""
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    monkeypatch.delenv("SWITCHYARD_DATABASE_SECRET_ARN", raising=False)
    monkeypatch.delenv(OUTPUT_BUCKET_ENV, raising=False)
    wiring.output_stores.cache_clear()
    wiring.database_pool.cache_clear()
    yield
    wiring.output_stores.cache_clear()
    wiring.database_pool.cache_clear()


@pytest.fixture(params=["postgres", "s3"])
def store(
    request: pytest.FixtureRequest, no_stores: None, monkeypatch: pytest.MonkeyPatch
) -> Iterator[OutputStore]:
    """The store the step functions wrote to, and render's process configured to read it."""
    if request.param == "postgres":
        conninfo: str = request.getfixturevalue("pg_conninfo")
        monkeypatch.setenv(DATABASE_URL_ENV, conninfo)
        pool = wiring.database_pool()
        assert pool is not None
        yield PostgresOutputStore(pool)
        return
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv(OUTPUT_BUCKET_ENV, "switchyard-outputs")
    with mock_aws():
        boto3.client("s3").create_bucket(Bucket="switchyard-outputs")
        yield S3OutputStore("switchyard-outputs")


def written(store: OutputStore, step_id: str, output: Any) -> dict[str, Any]:
    """A step's record as the step function returned it: large parts stored aside."""
    return {"status": "completed", "output": offload(output, store, f"run-1/run-1/{step_id}")}


def test_outputs_see_the_value_of_a_large_output(store: OutputStore) -> None:
    record = written(store, "write", {"label": "long", "text": LONG})
    assert OUTPUT_REF_KEY in json.dumps(record)
    event = {
        "templates": {
            "length": "{{ steps.write.output.text | length }}",
            "head": "{{ steps.write.output.text[:3] }}",
            "label": "{{ steps.write.output.label }}",
        },
        "context": {"inputs": {}, "run": RUN, "steps": {"write": record}},
    }
    assert handle(event) == {"value": {"length": 40_000, "head": "ééé", "label": "long"}}


def test_a_maps_items_and_a_sub_workflows_input_see_the_values(store: OutputStore) -> None:
    parts = [f"part {n}: " + "x" * 8_000 for n in range(6)]
    record = written(store, "split", {"parts": parts})
    assert OUTPUT_REF_KEY in json.dumps(record)
    context = {"inputs": {}, "run": RUN, "steps": {"split": record}}

    items = handle(
        {"step_id": "each", "templates": "{{ steps.split.output.parts }}", "context": context}
    )
    assert items == {"value": parts}

    child_input = handle(
        {
            "step_id": "summarize",
            "templates": {"text": "{{ steps.split.output.parts | join('\\n') }}"},
            "context": context,
            "extra": {"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": "arn:parent"},
        }
    )
    assert child_input["value"]["text"] == "\n".join(parts)
    assert child_input["value"]["AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"] == "arn:parent"


def test_without_a_reference_render_reaches_no_store(no_stores: None) -> None:
    event = {
        "templates": {"n": "{{ steps.count.output.n + 1 }}"},
        "context": {"inputs": {}, "run": RUN, "steps": {"count": {"output": {"n": 1}}}},
    }
    assert handle(event) == {"value": {"n": 2}}
    assert not wiring.output_stores.built  # never asked for


def test_a_reference_no_store_here_can_read_is_permanent(no_stores: None) -> None:
    ref = {OUTPUT_REF_KEY: {"store": "s3", "key": "run-1/run-1/write/abc.json", "bytes": 40002}}
    event = {
        "templates": {"n": "{{ steps.write.output.text | length }}"},
        "context": {"inputs": {}, "run": RUN, "steps": {"write": {"output": {"text": ref}}}},
    }
    with pytest.raises(Exception) as raised:
        handle(event)
    assert type(raised.value).__name__ == "permanent"
    assert "a large output could not be read" in str(raised.value)
    assert "'s3'" in str(raised.value)


def lambda_cause(error: BaseException) -> str:
    """The Cause Step Functions records when a Lambda function raised `error`."""
    return json.dumps({"errorMessage": str(error), "errorType": type(error).__name__})


@pytest.mark.parametrize(
    ("request_fields", "location"),
    [
        ({"templates": {"report": {"ratio": "{{ 10 // inputs.zero }}"}}}, "outputs.report.ratio"),
        (
            {"step_id": "summarize", "templates": {"text": "{{ 10 // inputs.zero }}"}},
            "steps.summarize.input.text",
        ),
        ({"step_id": "each", "templates": "{{ 10 // inputs.zero }}"}, "steps.each.items"),
    ],
)
def test_a_template_error_reads_as_a_plain_message_naming_where_it_is(
    no_stores: None, request_fields: dict[str, Any], location: str
) -> None:
    from switchyard.contract.errors import read_cause

    event = {**request_fields, "context": {"inputs": {"zero": 0}, "run": RUN, "steps": {}}}
    with pytest.raises(Exception) as raised:
        handle(event)
    assert type(raised.value).__name__ == "template"
    cause = json.loads(str(raised.value))
    assert cause["type"] == "template" and cause["location"] == location
    message, _ = read_cause(lambda_cause(raised.value))
    assert message == (
        f"{location}: template '{{{{ 10 // inputs.zero }}}}' failed: "
        "integer division or modulo by zero"
    )


def test_outputs_over_the_runs_share_of_its_parents_state_go_to_the_store(
    store: OutputStore,
) -> None:
    """A sub-workflow's outputs are its result in the parent's state: a map of 200 children
    gives each a share, which the run carries as `output_limit`."""
    summary = "A renewal whose prices rise each year without cap. " * 20
    event = {
        "templates": {"id": "{{ inputs.id }}", "summary": "{{ inputs.summary }}"},
        "context": {
            "inputs": {"id": "SUP-7", "summary": summary},
            "run": {**RUN, "output_limit": 600},
        },
    }
    value = handle(event)["value"]
    assert len(json.dumps(value, separators=(",", ":"))) <= 600
    assert value["id"] == "SUP-7" and OUTPUT_REF_KEY in value["summary"]
    key = value["summary"][OUTPUT_REF_KEY]["key"]
    assert key.startswith("run-1/outputs/")
    assert json.loads(store.get(key)) == summary


def test_outputs_within_the_limit_stay_inline_and_reach_no_store(no_stores: None) -> None:
    event = {"templates": {"id": "{{ inputs.id }}"}, "context": {"inputs": {"id": "x"}, "run": RUN}}
    assert handle(event) == {"value": {"id": "x"}}
    assert not wiring.output_stores.built
