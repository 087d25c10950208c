"""Model scripts named by a request come only from the server's scripts directory: a regular
file inside it, under the size limit. Everything else is refused with a message that names the
problem and never the file's content, nor whether a path outside the directory exists."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest

from switchyard.api.scripts import MAX_SCRIPT_DEPTH, ScriptDirectory, ScriptRefusedError
from tests.unit.api.support import Stack

SCRIPT = "touch:\n  - output: {status: 200, headers: {}, body: null}\n"
SECRET = "root-secret-line-7f3a"


@pytest.fixture
def scripts(tmp_path: Path) -> ScriptDirectory:
    root = tmp_path / "scripts"
    (root / "team").mkdir(parents=True)
    (root / "noop.yaml").write_text(SCRIPT)
    (root / "team" / "noop.json").write_text(
        '{"touch": [{"output": {"status": 200, "headers": {}, "body": null}}]}'
    )
    (tmp_path / "outside.yaml").write_text(f"{SECRET}: [{{text: {SECRET}}}]\n")
    return ScriptDirectory(root)


def _refusal(scripts: ScriptDirectory, name: str) -> str:
    with pytest.raises(ScriptRefusedError) as refused:
        scripts.load(name)
    message = str(refused.value)
    assert SECRET not in message
    return message


def test_a_script_of_the_directory_is_read_by_relative_or_absolute_name(
    scripts: ScriptDirectory,
) -> None:
    expected = {"touch": [{"output": {"status": 200, "headers": {}, "body": None}}]}
    assert scripts.load("noop.yaml") == expected
    assert scripts.load("team/noop.json") == expected
    assert scripts.load(str(scripts.root / "noop.yaml")) == expected


@pytest.mark.parametrize(
    "name",
    ["/etc/shadow", "/etc/passwd", "/dev/zero", "../outside.yaml", "team/../../outside.yaml", "/"],
)
def test_a_path_outside_the_directory_is_refused_alike_whether_it_exists(
    scripts: ScriptDirectory, name: str
) -> None:
    message = _refusal(scripts, name)
    assert "is not a file of the server's scripts directory" in message
    assert "No such file" not in message and "Permission" not in message


def test_a_path_that_does_not_exist_outside_reads_as_one_that_does(
    scripts: ScriptDirectory,
) -> None:
    exists = _refusal(scripts, "/etc/passwd").replace("/etc/passwd", "X")
    missing = _refusal(scripts, "/etc/no-such-file-here").replace("/etc/no-such-file-here", "X")
    assert exists == missing


def test_a_symlink_out_of_the_directory_is_refused(
    scripts: ScriptDirectory, tmp_path: Path
) -> None:
    (scripts.root / "escape.yaml").symlink_to(tmp_path / "outside.yaml")
    (scripts.root / "zero.yaml").symlink_to("/dev/zero")
    (scripts.root / "up").symlink_to(tmp_path)
    for name in ("escape.yaml", "zero.yaml", "up/outside.yaml"):
        assert "not a file of the server's scripts directory" in _refusal(scripts, name)


def test_a_symlink_inside_the_directory_is_followed(scripts: ScriptDirectory) -> None:
    (scripts.root / "alias.yaml").symlink_to(scripts.root / "noop.yaml")
    assert "touch" in scripts.load("alias.yaml")


def test_what_is_not_a_regular_file_is_refused(scripts: ScriptDirectory) -> None:
    os.mkfifo(scripts.root / "pipe.yaml")  # opening a FIFO for reading would block a naive server
    assert "not a regular file" in _refusal(scripts, "pipe.yaml")
    assert "not a regular file" in _refusal(scripts, "team")
    assert "no model script" in _refusal(scripts, "missing.yaml")


def test_a_file_over_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    root = tmp_path / "scripts"
    root.mkdir()
    with (root / "big.yaml").open("wb") as big:
        big.truncate(10 * 1024 * 1024 * 1024)  # 10 GiB, sparse: reading it would take the memory
    message = _refusal(ScriptDirectory(root, max_bytes=1024), "big.yaml")
    assert "at most 1024 are read" in message


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (f"{SECRET}: [\n  - {{text: 'unclosed\n", "is not YAML (line"),
        (f"- {SECRET}\n- {SECRET}\n", "must map step ids to lists of entries"),
        (f"step:\n  - {{{SECRET}: 1}}\n", "is not a script"),
        (f"{SECRET}: [{{error: {SECRET}}}]\n", "is not a script"),
        ("a: " + "[" * (MAX_SCRIPT_DEPTH + 1) + "]" * (MAX_SCRIPT_DEPTH + 1), "nests deeper"),
    ],
)
def test_an_invalid_script_is_refused_without_quoting_it(
    scripts: ScriptDirectory, text: str, problem: str
) -> None:
    (scripts.root / "bad.yaml").write_text(text)
    assert problem in _refusal(scripts, "bad.yaml")


def test_bytes_that_are_not_utf8_are_refused(scripts: ScriptDirectory) -> None:
    (scripts.root / "binary.yaml").write_bytes(b"\xff\xfe\x00" + SECRET.encode())
    assert "not UTF-8" in _refusal(scripts, "binary.yaml")


def test_yaml_aliases_that_expand_without_bound_are_refused(scripts: ScriptDirectory) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (scripts.root / "laughs.yaml").write_text("\n".join(lines) + "\n")
    assert "once its aliases are expanded" in _refusal(scripts, "laughs.yaml")
    (scripts.root / "loop.yaml").write_text("step: &s [*s]\n")
    assert "alias loop" in _refusal(scripts, "loop.yaml")


@pytest.mark.parametrize("name", ["/dev/zero", "/etc/shadow", "../../../../etc/shadow"])
def test_the_api_refuses_a_script_outside_its_directory(client: httpx.Client, name: str) -> None:
    answer = client.post("/workflows/noop/runs", json={}, headers={"X-Switchyard-LLM-Script": name})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "bad_llm_script"
    assert "is not a file of the server's scripts directory" in error["message"]
    assert "root:" not in error["message"]


def test_the_api_answers_from_a_script_of_its_directory(stack: Stack, client: httpx.Client) -> None:
    answer = client.post("/workflows/noop/runs", json={}, headers=stack.script_header("noop"))
    assert answer.status_code == 201, answer.text
