"""The CDK app: `cdk synth` / `cdk deploy` run `python -m infra.app` (cdk.json)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from aws_cdk import App, Environment, Validations
from cdk_nag import AwsSolutionsChecks

from infra.config import Settings
from infra.stacks.platform import SwitchyardStack


def build_app(
    context: dict[str, Any] | None = None,
    outdir: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> App:
    """The app with its stack and the AwsSolutions checks (synth fails on any finding that is
    not acknowledged in infra/nag.py).

    The stack's account and region are `CDK_DEFAULT_ACCOUNT` and `CDK_DEFAULT_REGION` of `environ`
    (the process environment by default), which `cdk deploy` sets from the credentials; without
    them (`cdk synth` with no credentials) the stack is environment-agnostic. Both must work."""
    environ = os.environ if environ is None else environ
    app = App(context=context, outdir=outdir)
    # Acknowledged findings are written into each resource's Metadata: the audit trail.
    Validations.of(app).add_plugins(
        AwsSolutionsChecks(app, write_suppressions_to_cloud_formation=True)
    )
    settings = Settings.from_node(app.node)
    account, region = environ.get("CDK_DEFAULT_ACCOUNT"), environ.get("CDK_DEFAULT_REGION")
    env = Environment(account=account, region=region) if account and region else None
    SwitchyardStack(app, settings.stack_name, settings=settings, env=env)
    return app


if __name__ == "__main__":
    build_app().synth()
