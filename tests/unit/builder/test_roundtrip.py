"""Round-trip edits of workflow files: the same data gives the same bytes; a change edits the
file where the data changed and keeps comments, key order, quoting and indentation elsewhere."""

from __future__ import annotations

import pytest
import yaml

from switchyard.builder.roundtrip import RoundTripError, apply_document, load_plain
from tests.unit.builder.support import EXAMPLES

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_unchanged_data_gives_the_same_bytes(path) -> None:  # type: ignore[no-untyped-def]
    source = path.read_text()
    assert apply_document(source, load_plain(source)) == source


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=lambda p: p.stem)
def test_a_new_key_is_one_added_line_and_the_rest_is_kept(path) -> None:  # type: ignore[no-untyped-def]
    source = path.read_text()
    data = load_plain(source)
    last = list(data["steps"])[-1]
    data["steps"][last]["timeout"] = "99s" if "timeout" not in data["steps"][last] else "98s"
    edited = apply_document(source, data)
    assert load_plain(edited) == data
    before, after = source.splitlines(), edited.splitlines()
    assert len(after) - len(before) in (0, 1)
    assert [line for line in before if line.lstrip().startswith("#")] == [
        line for line in after if line.lstrip().startswith("#")
    ]


def test_removing_a_step_and_editing_a_list_keep_the_comments_elsewhere() -> None:
    source = (EXAMPLES / "customer-support.yaml").read_text()
    data = load_plain(source)
    del data["steps"]["research"]
    data["steps"]["draft"]["after"] = ["fetch_history"]
    data["steps"]["approve"]["channels"] = ["slack"]
    edited = apply_document(source, data)
    assert load_plain(edited) == data
    assert edited.startswith("# yaml-language-server: $schema=../schema/workflow.schema.json\n")
    assert "    after: [fetch_history]\n" in edited
    assert "    channels: [slack]\n" in edited
    assert "  ticket_id: {type: string}\n" in edited


def test_a_new_workflow_is_written_in_block_style() -> None:
    data = {
        "switchyard": 1,
        "name": "new",
        "version": 1,
        "steps": {"a": {"type": "agent", "prompt": "line one\nline two\n"}},
    }
    text = apply_document("", data)
    assert yaml.safe_load(text) == data
    assert "prompt: |\n" in text


def test_yaml_errors_and_alias_bombs_are_refused() -> None:
    with pytest.raises(RoundTripError):
        apply_document("steps: [unclosed\n", {})
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)},"
        f" *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)},"
        f" *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    with pytest.raises(RoundTripError):
        apply_document(bomb, {})
