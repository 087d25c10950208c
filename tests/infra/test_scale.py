"""A deployment of many workflows: every stack stays well under CloudFormation's limits.

120 generated workflows (plain ones with an agent and a tool step, some with triggers, and parents
of sub-workflows, pinned and not) synthesize into a top-level stack that holds the platform and
one nested stack per workflow, each far below 500 resources, 200 parameters and 200 outputs.
"""

from __future__ import annotations

import json

import pytest

from switchyard.compile import compile_workflow
from switchyard.validate import validate_text
from tests.infra.cfn_lint import cfn_lint
from tests.infra.resolve import FakeAws, machines_by_workflow
from tests.infra.synth import Synthesized, make_repository, synthesize

PLAIN = 100
FAMILIES = 10
"""Each family is a child and its parent: 2 workflows."""
TRIGGERS = {
    0: "event",
    7: "schedule",
    14: "queue",
    21: "webhook",
}
"""Every 28th plain workflow, from these offsets, has this trigger."""

_TRIGGER_YAML = {
    "event": """  - type: event
    pattern: {{source: [shop.n{n}], detail-type: [Created]}}
    input: {{id: "{{{{ event.detail.id }}}}"}}
""",
    "schedule": """  - type: schedule
    cron: "0 6 * * *"
    input: {{id: "{{{{ schedule.time }}}}"}}
""",
    "queue": """  - type: queue
    queue: inbox-{n}
    input: {{id: "{{{{ message.body.id }}}}"}}
""",
    "webhook": """  - type: webhook
    secret: env:HOOK_{n}
    input: {{id: "{{{{ body.id }}}}"}}
""",
}


def _plain(n: int) -> str:
    kind = TRIGGERS.get(n % 28)
    triggers = f"triggers:\n{_TRIGGER_YAML[kind].format(n=n)}" if kind else ""
    return f"""switchyard: 1
name: plain-{n:03d}
version: 1
inputs:
  id: {{type: string}}
{triggers}steps:
  look:
    type: tool
    tool: http.request
    args: {{method: GET, url: "https://api.example.com/items/{{{{ inputs.id }}}}"}}
  answer:
    type: agent
    after: [look]
    model: claude-haiku-4-5
    prompt: "Summarize item {{{{ inputs.id }}}}: {{{{ steps.look.output.body }}}}"
"""


def _child(n: int) -> str:
    return f"""switchyard: 1
name: child-{n:02d}
version: 1
inputs:
  id: {{type: string}}
steps:
  answer:
    type: agent
    model: claude-haiku-4-5
    prompt: "Answer {{{{ inputs.id }}}}"
outputs:
  text: "{{{{ steps.answer.output.text }}}}"
"""


def _parent(n: int) -> str:
    pinned = "@1" if n % 2 == 0 else ""
    return f"""switchyard: 1
name: parent-{n:02d}
version: 1
inputs:
  id: {{type: string}}
steps:
  ask:
    type: sub_workflow
    workflow: child-{n:02d}{pinned}
    input: {{id: "{{{{ inputs.id }}}}"}}
"""


def workflow_files() -> dict[str, str]:
    files = {f"plain-{n:03d}.yaml": _plain(n) for n in range(PLAIN)}
    for n in range(FAMILIES):
        files[f"child-{n:02d}.yaml"] = _child(n)
        files[f"parent-{n:02d}.yaml"] = _parent(n)
    return files


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    files = workflow_files()
    machines = {}
    for name, text in files.items():
        result = validate_text(text)
        assert result.workflow is not None, [d.format() for d in result.diagnostics]
        machines[name.removesuffix(".yaml")] = compile_workflow(result.workflow).text
    root, _ = make_repository(tmp_path_factory.mktemp("many"), machines, files)
    return synthesize(root, **{"switchyard:httpAllowedHosts": ["api.example.com"]})


def test_120_workflows_get_a_nested_stack_each(many: Synthesized) -> None:
    machines = machines_by_workflow(many)
    assert len(machines) == PLAIN + 2 * FAMILIES == 120
    assert len({stack for stack, _ in machines.values()}) == 120
    assert len(many.nested) == 120


def test_the_app_passes_aws_solutions_checks(many: Synthesized) -> None:
    report = json.loads((many.root / "cdk.out" / "validation-report.json").read_text())
    assert all(r["conclusion"] == "success" for r in report["pluginReports"])


def test_every_stack_stays_well_under_cloudformation_limits(many: Synthesized) -> None:
    counts = {stack: len(t["Resources"]) for stack, t in many.templates.items()}
    top = counts.pop("Switchyard")
    assert top == len(many.template["Resources"])
    # The top-level stack holds the platform and one nested stack per workflow. The platform
    # (about 150 resources: 27 of them the dashboard's, 10 the recorder's) must
    # leave room for at least 300 workflows under CloudFormation's 500.
    platform = top - len(counts)
    assert platform + 300 <= 500, f"the platform has {platform} resources"
    assert max(counts.values()) < 50, max(counts.items(), key=lambda c: c[1])
    for template in many.templates.values():
        assert len(template.get("Parameters", {})) < 50
        assert len(template.get("Outputs", {})) < 20
        assert len(json.dumps(template)) < 500_000  # CloudFormation takes 1 MB from S3


def test_a_triggers_resources_are_in_its_workflows_stack(many: Synthesized) -> None:
    resources = many.template["Resources"].values()
    top = json.dumps([r for r in resources if r["Type"] != "AWS::Events::Rule"])
    rules = [r["Properties"] for r in resources if r["Type"] == "AWS::Events::Rule"]
    # The only rule at the top is the recorder's, on the default bus (a trigger's is on the
    # stack's bus, in its workflow's stack); past the pattern's size limit it names the stack's
    # machines by their prefix.
    (recorder,) = rules
    assert "EventBusName" not in recorder
    prefixes = recorder["EventPattern"]["detail"]["executionArn"]
    assert (
        len(prefixes) == 1 and prefixes[0]["prefix"]["Fn::Join"][1][-1] == ":execution:Switchyard-"
    )
    for kind in ("AWS::Events::Rule", "AWS::Scheduler::Schedule", "AWS::Pipes::Pipe"):
        assert kind not in top
        assert many.resources(kind)
    webhooks = [
        r
        for r in many.resources("AWS::ApiGatewayV2::Route").values()
        if r["Properties"]["RouteKey"].startswith("POST /webhooks/")
    ]
    assert len(webhooks) == len([n for n in range(PLAIN) if n % 28 == 21])


def test_parents_reach_their_children_through_parameters(many: Synthesized) -> None:
    fake = FakeAws(many)  # names each machine by its workflow, as the moto harness does
    machines = machines_by_workflow(many)
    for n in range(FAMILIES):
        definition = fake.definition(machines[f"parent-{n:02d}"])
        assert (
            f'"StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:child-{n:02d}"'
            in definition
        )


def test_the_dashboard_shows_every_workflow_in_graphs_of_at_most_100(many: Synthesized) -> None:
    (dashboard,) = many.resources("AWS::CloudWatch::Dashboard").values()
    body = json.loads(FakeAws(many).resolve(dashboard["Properties"]["DashboardBody"]))
    started = [
        w["properties"]
        for w in body["widgets"]
        if w["properties"]["title"].startswith("Runs started")
    ]
    assert [len(w["metrics"]) for w in started] == [100, 20]
    labels = [m[-1]["label"] for w in started for m in w["metrics"]]
    assert sorted(labels) == sorted(machines_by_workflow(many))
    for widget in body["widgets"]:
        assert len(widget["properties"].get("metrics", [])) <= 500  # CloudWatch's limit


@pytest.mark.slow
def test_cfn_lint_passes_on_the_top_level_stack_and_every_kind_of_workflow_stack(
    many: Synthesized,
) -> None:
    """The top-level template and one nested template of each shape (120 take a minute)."""
    machines = machines_by_workflow(many)
    kinds = ["plain-001", "plain-000", "plain-007", "plain-014", "plain-021"]  # none, each trigger
    kinds += ["child-00", "parent-00", "parent-01"]  # a v1 alias; pinned and live children
    templates = {"Switchyard": many.template}
    templates.update({name: many.nested[machines[name][0]] for name in kinds})
    found = {name: cfn_lint(template) for name, template in templates.items()}
    assert {name: problems for name, problems in found.items() if problems} == {}
