"""One fixture per error code (tests/fixtures/invalid/): each asserts code, path and line.

A fixture lists what it must produce as trailing comments, `# expect: LINE CODE PATH`; the
validator must report exactly those problems, no more and no fewer.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from switchyard.diagnostics import Code
from switchyard.validate import WorkflowCatalog, validate_file
from tests.conftest import FIXTURES

INVALID = FIXTURES / "invalid"
_EXPECT = re.compile(r"^# expect: (\d+) (\w+) (\S+)$", re.MULTILINE)
FILES = sorted(p for p in INVALID.glob("*.yaml") if "# expect:" in p.read_text())


def expected(path: Path) -> set[tuple[int, str, str]]:
    return {
        (int(line), code, "" if where == "-" else where)
        for line, code, where in _EXPECT.findall(path.read_text())
    }


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_fixture_reports_exactly_what_it_expects(path: Path) -> None:
    result = validate_file(path, catalog=WorkflowCatalog.of_directory(INVALID))
    found = {(d.line, str(d.code), d.path) for d in result.diagnostics}
    assert found == expected(path)
    assert not result.ok


def test_every_error_code_has_a_fixture() -> None:
    covered = {code for path in FILES for _, code, _ in expected(path)}
    required = {
        Code.PARSE, Code.SCHEMA, Code.UNKNOWN_STEP, Code.CYCLE, Code.UNREACHABLE,
        Code.DUPLICATE_ID, Code.TYPE_MISMATCH, Code.BAD_CONDITION, Code.BAD_TEMPLATE,
        Code.BAD_ROUTE, Code.BAD_FALLBACK, Code.UNKNOWN_TOOL, Code.UNKNOWN_WORKFLOW,
        Code.BAD_DURATION, Code.BAD_TIMEOUT,
    }  # fmt: skip
    assert {str(c) for c in required} <= covered


def test_a_file_with_several_problems_reports_all_of_them() -> None:
    result = validate_file(INVALID / "many-problems.yaml", catalog=WorkflowCatalog())
    codes = [str(d.code) for d in result.diagnostics]
    assert codes == [
        "schema",
        "schema",
        "type_mismatch",
        "bad_duration",
        "unknown_step",
        "unknown_tool",
    ]


def test_a_cycle_is_named_in_order() -> None:
    result = validate_file(INVALID / "cycle-three.yaml", catalog=WorkflowCatalog())
    (cycle,) = [d for d in result.diagnostics if d.code is Code.CYCLE]
    assert "a → b → c → a" in cycle.message


def test_the_line_format_is_the_cli_contract() -> None:
    result = validate_file(INVALID / "unknown-step-after.yaml", catalog=WorkflowCatalog())
    (line,) = [d.format() for d in result.diagnostics]
    assert re.fullmatch(
        r".*unknown-step-after\.yaml:11: error\[unknown_step\] at steps\.draft\.after\[1\]: .+",
        line,
    )
