"""`switchyard validate`: output lines and exit codes of the CLI contract."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from switchyard.cli.main import main
from tests.conftest import FIXTURES, REPO, WORKFLOWS

INVALID = FIXTURES / "invalid"


def test_valid_files_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", *map(str, sorted(WORKFLOWS.glob("*.yaml")))]) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "4 of 4 file(s) valid" in captured.err


def test_problems_exit_1_with_one_line_each(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(INVALID / "bad-fallback.yaml")]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert all(": error[" in line and " at steps." in line for line in lines)


def test_unparsable_or_unreadable_files_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(INVALID / "parse-bad-indent.yaml")]) == 2
    assert main(["validate", "/no/such/file.yaml"]) == 2
    assert "cannot read the file" in capsys.readouterr().out


def test_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as caught:
        main(["validate"])
    assert caught.value.code == 2
    with pytest.raises(SystemExit) as caught:
        main(["frobnicate"])
    assert caught.value.code == 2


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    main(["validate", "--json", str(INVALID / "unknown-step-after.yaml")])
    (problem,) = json.loads(capsys.readouterr().out)
    assert problem["code"] == "unknown_step"
    assert problem["path"] == "steps.draft.after[1]"
    assert problem["line"] == 11


def test_sub_workflows_resolve_beside_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parent = (WORKFLOWS / "document-processing.yaml").read_text()
    (tmp_path / "parent.yaml").write_text(parent)
    assert main(["validate", str(tmp_path / "parent.yaml")]) == 1
    assert "unknown_workflow" in capsys.readouterr().out
    (tmp_path / "child.yaml").write_text((WORKFLOWS / "summarize-document.yaml").read_text())
    assert main(["validate", str(tmp_path / "parent.yaml")]) == 0


def test_the_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "switchyard"
    done = subprocess.run(
        [str(script), "validate", str(WORKFLOWS / "customer-support.yaml")],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
