"""cfn-lint on a synthesized template, offline, with the checks we ignore and why."""

from __future__ import annotations

import json
from typing import Any

CFN_LINT_IGNORED = {
    # CDK adds DependsOn from a resource to its role's DefaultPolicy even when a GetAtt of the
    # role already orders them: harmless, and not ours to remove.
    "W3005",
}


def cfn_lint(template: dict[str, Any]) -> list[str]:
    """cfn-lint's findings on a template, one `<rule> <message>` each."""
    from cfnlint.api import ManualArgs, lint

    config = ManualArgs(regions=["us-east-1"], ignore_checks=sorted(CFN_LINT_IGNORED))
    return [f"{m.rule.id} {m.message}" for m in lint(json.dumps(template), config=config)]
