"""`switchyard schema`: a valid JSON Schema that accepts the examples and flags mistakes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema_rs
import pytest

from switchyard.cli.main import main
from switchyard.cli.schema_cmd import schema_text
from switchyard.source import load_file
from tests.conftest import FIXTURES, REPO, WORKFLOWS


@pytest.fixture(scope="module")
def validator() -> jsonschema_rs.Validator:
    schema = json.loads(schema_text())
    jsonschema_rs.meta.validate(schema)
    return jsonschema_rs.validator_for(schema)


def test_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert set(schema["required"]) == {"switchyard", "name", "version", "steps"}


def test_the_committed_schema_is_current() -> None:
    assert (REPO / "schema" / "workflow.schema.json").read_text() == schema_text()


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.yaml")), ids=lambda p: p.stem)
def test_examples_pass_the_schema(validator: jsonschema_rs.Validator, path: Path) -> None:
    assert [e.message for e in validator.iter_errors(load_file(path).data)] == []


@pytest.mark.parametrize(
    "name", ["schema-unknown-key", "schema-missing-and-bad-type", "loop-bounds", "bad-duration"]
)
def test_schema_errors_are_caught_by_the_schema(
    validator: jsonschema_rs.Validator, name: str
) -> None:
    data = load_file(FIXTURES / "invalid" / f"{name}.yaml").data
    assert not validator.is_valid(data)


def test_examples_point_editors_at_the_schema() -> None:
    for path in WORKFLOWS.glob("*.yaml"):
        first = path.read_text().splitlines()[0]
        assert first == "# yaml-language-server: $schema=../schema/workflow.schema.json"
