"""Synthesize the CDK app offline (no credentials, Docker or network) into a temporary repository.

The temporary repository holds a chosen set of compiled machines and workflow files beside the
real `functions/` and `layers/`; bundling of the library layer is skipped (CDK's
`aws:cdk:bundling-stacks` context), since it needs PyPI (tests/infra/test_layer.py builds it).

The app is a top-level stack and one nested stack per workflow: `Synthesized` reads them all.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

from switchyard.constants import FUNCTION_SPECS, PLATFORM_FUNCTIONS

REPO = Path(__file__).resolve().parents[2]
STACK = "Switchyard"
ONE_LINE_HANDLER = "def handler(event, context):\n    return event\n"

AGNOSTIC: Mapping[str, str] = {}
"""`cdk synth` without credentials: account, region and partition are CloudFormation's."""
US_EAST_1: Mapping[str, str] = {
    "CDK_DEFAULT_ACCOUNT": "123456789012",
    "CDK_DEFAULT_REGION": "us-east-1",
}
"""What `cdk deploy` sets from the credentials (moto's account and region, for the moto tests)."""
EU_CENTRAL_1: Mapping[str, str] = {
    "CDK_DEFAULT_ACCOUNT": "210987654321",
    "CDK_DEFAULT_REGION": "eu-central-1",
}
"""A second region and account."""


@dataclass
class Synthesized:
    root: Path
    template: dict[str, Any]
    """The top-level stack's template (`Switchyard`, or the context's `switchyard:stackName`)."""
    nested: dict[str, dict[str, Any]]
    """Each nested stack's template, by the logical id of its `AWS::CloudFormation::Stack`."""
    app: Any
    environ: Mapping[str, str] = field(default_factory=dict)
    """`CDK_DEFAULT_ACCOUNT` and `CDK_DEFAULT_REGION` of the synth (empty: agnostic)."""

    @property
    def account(self) -> str | None:
        return self.environ.get("CDK_DEFAULT_ACCOUNT")

    @property
    def region(self) -> str | None:
        return self.environ.get("CDK_DEFAULT_REGION")

    @property
    def templates(self) -> dict[str, dict[str, Any]]:
        """Every template: the top-level stack's under `STACK`, the nested ones by logical id."""
        return {STACK: self.template, **self.nested}

    def resources(self, kind: str) -> dict[str, dict[str, Any]]:
        """Resources of a type in every stack: a nested one's as `<stack>/<logical id>`."""
        found = {}
        for stack, template in self.templates.items():
            for logical_id, resource in template["Resources"].items():
                if resource["Type"] == kind:
                    found[logical_id if stack == STACK else f"{stack}/{logical_id}"] = resource
        return found

    def workflow_stack(self, workflow: str) -> dict[str, Any]:
        """The template of a workflow's nested stack."""
        (template,) = [
            t
            for t in self.nested.values()
            if t.get("Description", "").startswith(f"switchyard workflow {workflow} (")
        ]
        return template


def make_repository(
    root: Path, machines: dict[str, str], workflow_files: dict[str, str]
) -> tuple[Path, list[str]]:
    """A repository copy; returns it and the handlers it had to stand in for (not yet written)."""
    shutil.copytree(
        REPO / "functions", root / "functions", ignore=shutil.ignore_patterns("__pycache__")
    )
    stand_ins = []
    for spec in (*FUNCTION_SPECS, *PLATFORM_FUNCTIONS):
        handler = root / "functions" / spec.name / "handler.py"
        if not handler.is_file():
            handler.parent.mkdir(parents=True, exist_ok=True)
            handler.write_text(ONE_LINE_HANDLER)
            stand_ins.append(spec.name)
    (root / "layers").symlink_to(REPO / "layers")
    write_web_app(root)
    (root / "statemachines").mkdir()
    (root / "workflows").mkdir()
    for name, text in machines.items():
        (root / "statemachines" / f"{name}.asl.json").write_text(text)
    for name, text in workflow_files.items():
        (root / "workflows" / name).write_text(text)
    return root, stand_ins


WEB_APP = {
    "index.html": '<!doctype html><script type="module" src="/ui/assets/index-t3st.js"></script>',
    "assets/index-t3st.js": "document.title = 'switchyard';",
}
"""A stand-in for the built dashboard (`web/dist`, which `make setup` builds): the stack uploads
whatever is there."""


def write_web_app(root: Path) -> None:
    for name, text in WEB_APP.items():
        path = root / "web" / "dist" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def synthesize(root: Path, *, environ: Mapping[str, str] = AGNOSTIC, **context: Any) -> Synthesized:
    """The app as `cdk synth` (`environ` empty) or `cdk deploy` (`US_EAST_1`) builds it."""
    from infra.app import build_app

    app = build_app(
        context={"switchyard:root": str(root), "aws:cdk:bundling-stacks": [], **context},
        outdir=str(root / "cdk.out"),
        environ=environ,
    )
    app.synth()
    out = root / "cdk.out"
    stack = context.get("switchyard:stackName", STACK)
    template = json.loads((out / f"{stack}.template.json").read_text())
    return Synthesized(
        root=root,
        template=template,
        nested=_nested(out, template, stack),
        app=app,
        environ=environ,
    )


def _nested(out: Path, template: dict[str, Any], stack: str) -> dict[str, dict[str, Any]]:
    """Nested templates by logical id: a stack's `TemplateURL` ends in its asset's object key."""
    assets = json.loads((out / f"{stack}.assets.json").read_text())["files"]
    files = {
        destination["objectKey"]: asset["source"]["path"]
        for asset in assets.values()
        for destination in asset["destinations"].values()
    }
    nested = {}
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::CloudFormation::Stack":
            key = resource["Properties"]["TemplateURL"]["Fn::Join"][1][-1].rsplit("/", 1)[1]
            nested[logical_id] = json.loads((out / files[key]).read_text())
    return nested
