"""The app refuses, with a message that names the cause, what it cannot deploy correctly."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.config import SettingsError
from infra.constructs.functions import MissingHandlerError
from infra.constructs.triggers import TriggerError
from infra.tool_access import ToolAccessError
from tests.infra.conftest import SHOWCASE
from tests.infra.synth import REPO, make_repository, synthesize


def _repository(tmp_path: Path, showcase_text: str) -> Path:
    from switchyard.compile import compile_workflow
    from switchyard.validate import validate_text

    workflow = validate_text(showcase_text).workflow
    assert workflow is not None
    root, _ = make_repository(
        tmp_path, {workflow.name: compile_workflow(workflow).text}, {SHOWCASE.name: showcase_text}
    )
    return root


@pytest.mark.slow
def test_a_missing_handler_is_named(tmp_path: Path) -> None:
    root = _repository(tmp_path, SHOWCASE.read_text())
    (root / "functions" / "render" / "handler.py").unlink()
    with pytest.raises(MissingHandlerError, match=r"functions/render/handler\.py is missing"):
        synthesize(root)


@pytest.mark.slow
def test_a_trigger_template_that_needs_code_is_refused_with_its_trigger(tmp_path: Path) -> None:
    text = SHOWCASE.read_text().replace(
        '{ticket_id: "{{ event.detail.id }}"', '{ticket_id: "{{ event.detail.id | upper }}"'
    )
    root = _repository(tmp_path, text)
    with pytest.raises(TriggerError, match=r"trigger-showcase, triggers\[1\] \(event\)"):
        synthesize(root)


def test_the_repository_handlers_exist_for_every_declared_function() -> None:
    from switchyard.constants import FUNCTION_SPECS, PLATFORM_FUNCTIONS

    missing = [
        s.name
        for s in (*FUNCTION_SPECS, *PLATFORM_FUNCTIONS)
        if not (REPO / "functions" / s.name / "handler.py").is_file()
    ]
    assert missing == []


@pytest.mark.slow
def test_a_tool_whose_resource_is_only_known_at_run_time_fails_the_synth(tmp_path: Path) -> None:
    text = SHOWCASE.read_text() + (
        "  file:\n    type: tool\n    after: [answer]\n    tool: s3.put\n"
        '    args: {bucket: "{{ inputs.text }}", key: k, body: b}\n'
    )
    root = _repository(tmp_path, text)
    with pytest.raises(
        ToolAccessError,
        match=r"workflow trigger-showcase, step file \(s3\.put\): its bucket is a template "
        r"\(\{\{ inputs\.text \}\}\), which is only known at run time; declare the buckets it may "
        r'write \(bucket, or bucket/key-pattern\) in cdk context: "switchyard:toolResources"',
    ):
        synthesize(root)
    declared = {"trigger-showcase": {"file": {"s3.put": ["shop-uploads/*"]}}}
    synthesize(root, **{"switchyard:toolResources": declared})


@pytest.mark.slow
def test_a_setting_that_does_not_fit_fails_the_synth_by_name(tmp_path: Path) -> None:
    root = _repository(tmp_path, SHOWCASE.read_text())
    with pytest.raises(SettingsError, match=r"sqlConnections\.ledger: looks like a conninfo"):
        synthesize(root, **{"switchyard:sqlConnections": {"ledger": "postgresql://u:p@db/x"}})


@pytest.mark.slow
def test_a_queue_two_workflows_share_is_refused_naming_both(tmp_path: Path) -> None:
    from switchyard.compile import compile_workflow
    from switchyard.validate import validate_text

    texts = {
        "trigger-showcase": SHOWCASE.read_text(),
        "second-showcase": SHOWCASE.read_text().replace(
            "name: trigger-showcase", "name: second-showcase"
        ),
    }
    machines = {}
    for name, text in texts.items():
        workflow = validate_text(text).workflow
        assert workflow is not None
        machines[name] = compile_workflow(workflow).text
    root, _ = make_repository(tmp_path, machines, {f"{n}.yaml": t for n, t in texts.items()})
    with pytest.raises(
        TriggerError,
        match=r"queue 'tickets' is the trigger of both second-showcase and trigger-showcase",
    ):
        synthesize(root)
