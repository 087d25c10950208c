"""One owner per table (docs/architecture.md, "Who owns which table"): SQL that names a table
lives in its owner's modules, and read-only reports that join several owners' tables live in
the one read model, `records/reports.py`, which never writes. A statement naming a table from
anywhere else fails here, with the module and the table."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

LIBRARY = Path(__file__).resolve().parents[2] / "layers" / "switchyard"

READ_MODEL = "records/reports.py"

OWNERS: dict[str, tuple[str, ...]] = {
    "workflow_runs": ("records/store.py", READ_MODEL),
    "task_runs": ("records/store.py", READ_MODEL),
    "gates": ("gates/store.py", READ_MODEL),
}
"""Each table: the modules whose statements may name it at all."""

ENGINE_TABLES = (
    "sfn_definitions",
    "sfn_state_machines",
    "sfn_state_machine_versions",
    "sfn_aliases",
    "sfn_executions",
    "sfn_history",
    "sfn_frames",
    "sfn_tasks",
    "sfn_task_tokens",
    "sfn_timers",
    "sfn_dead_letters",
    "engine_fence",
    "engine_instances",
    "engine_commands",
)
ENGINE_WRITERS = ("engine/", "records/recorder.py")
"""The engine's tables are read by several reports; only the engine writes them, and the AWS
recorder its mirror rows (`sfn_executions`, `sfn_definitions`)."""

_KEYWORDS = r"(?:FROM|JOIN|INTO|UPDATE|TABLE|TRUNCATE)"
_WRITES = r"(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM|TRUNCATE|ALTER\s+TABLE)"


def _named(table: str) -> re.Pattern[str]:
    return re.compile(rf"\b{_KEYWORDS}\s+(?:ONLY\s+)?{table}\b")


def _written(table: str) -> re.Pattern[str]:
    return re.compile(rf"\b{_WRITES}\s+(?:ONLY\s+)?{table}\b")


def _code_strings(path: Path) -> str:
    """The module's string literals but its docstrings, in source order and joined, so a
    statement split over several literals still reads as one."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]
    found.sort(key=lambda node: (node.lineno, node.col_offset))
    return " ".join(str(node.value) for node in found)


def _modules() -> dict[str, str]:
    return {
        path.relative_to(LIBRARY).as_posix(): _code_strings(path)
        for path in sorted(LIBRARY.rglob("*.py"))
    }


MODULES = _modules()


def _owned_by(module: str, owners: tuple[str, ...]) -> bool:
    return any(module == o or (o.endswith("/") and module.startswith(o)) for o in owners)


@pytest.mark.parametrize("table", sorted(OWNERS))
def test_only_its_owners_name_a_table(table: str) -> None:
    pattern = _named(table)
    outside = [
        module
        for module, text in MODULES.items()
        if pattern.search(text) and not _owned_by(module, OWNERS[table])
    ]
    assert not outside, (
        f"{', '.join(outside)} name {table} in SQL: call its owner "
        f"({' or '.join(OWNERS[table])}) instead"
    )


@pytest.mark.parametrize("table", ENGINE_TABLES)
def test_only_the_engine_writes_its_tables(table: str) -> None:
    pattern = _written(table)
    outside = [
        module
        for module, text in MODULES.items()
        if pattern.search(text) and not _owned_by(module, ENGINE_WRITERS)
    ]
    assert not outside, f"{', '.join(outside)} write {table}: only the engine does"


def test_the_read_model_never_writes() -> None:
    text = MODULES[READ_MODEL]
    for table in (*OWNERS, *ENGINE_TABLES):
        assert not _written(table).search(text), f"{READ_MODEL} writes {table}"


def test_the_check_sees_a_statement_split_over_literals_and_skips_docstrings(
    tmp_path: Path,
) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        '"""Reads workflow_runs: FROM gates, in a docstring."""\n'
        'sql = "SELECT 1 FROM"\n'
        'sql += " workflow_runs r"\n'
    )
    text = _code_strings(module)
    assert _named("workflow_runs").search(text)
    assert not _named("gates").search(text)
    assert not _named("gates").search("open gates wait on a person")
