"""With `provider: bedrock`, the model steps may invoke what Bedrock serves: each catalog model's
inference profile for the stack's region, and the foundation model behind it in every region the
profile routes to (AWS: "Supported Regions and models for inference profiles",
https://docs.aws.amazon.com/bedrock/latest/userguide/inference-profiles-support.html; the
prerequisites of cross-region inference ask for both the profile and the models it routes to)."""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import pytest

from switchyard.runtime.models_catalog import ModelCatalog
from switchyard.runtime.providers.bedrock import BedrockProvider
from tests.infra.synth import AGNOSTIC, Synthesized, make_repository, synthesize

ACCOUNT = "123456789012"


def _resolve(value: Any, region: str) -> str:
    """A policy resource with its pseudo parameters as they would be in `region`."""
    if isinstance(value, str):
        return value
    if "Ref" in value:
        return {"AWS::Partition": "aws", "AWS::Region": region, "AWS::AccountId": ACCOUNT}[
            value["Ref"]
        ]
    separator, parts = value["Fn::Join"]
    return str(separator).join(_resolve(p, region) for p in parts)


def invoke_resources(synthesized: Synthesized, function: str, region: str) -> list[str]:
    """The resources the role of `function` may call `bedrock:InvokeModel` on."""
    roles = [
        logical_id
        for logical_id, resource in synthesized.resources("AWS::Lambda::Function").items()
        if function.replace("_", "") in logical_id.lower()
    ]
    assert roles, function
    role = synthesized.resources("AWS::Lambda::Function")[roles[0]]["Properties"]["Role"]
    role_id = role["Fn::GetAtt"][0]
    found: list[str] = []
    for policy in synthesized.resources("AWS::IAM::Policy").values():
        if {"Ref": role_id} not in policy["Properties"]["Roles"]:
            continue
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"]
            actions = actions if isinstance(actions, list) else [actions]
            if "bedrock:InvokeModel" in actions and statement["Effect"] == "Allow":
                resources = statement["Resource"]
                resources = resources if isinstance(resources, list) else [resources]
                found += [_resolve(r, region) for r in resources]
    return found


def allowed(resources: list[str], arn: str) -> bool:
    return any(fnmatch.fnmatchcase(arn, pattern) for pattern in resources)


def _synth(tmp_path: Path, region: str | None) -> Synthesized:
    """`cdk synth` without credentials (`region` None: an environment-agnostic stack), or
    `cdk deploy` into `region` (`build_app` reads the environment it is given, not the
    process's)."""
    environ = (
        AGNOSTIC
        if region is None
        else {"CDK_DEFAULT_ACCOUNT": ACCOUNT, "CDK_DEFAULT_REGION": region}
    )
    root, _ = make_repository(tmp_path, {}, {})
    return synthesize(root, environ=environ, **{"switchyard:provider": "bedrock"})


@pytest.mark.parametrize(
    ("synth_region", "run_region"),
    [(None, "us-east-1"), (None, "eu-central-1"), ("eu-central-1", "eu-central-1")],
)
def test_every_catalog_model_may_be_invoked_as_the_provider_names_it(
    tmp_path: Path, synth_region: str | None, run_region: str
) -> None:
    """The synth passes cdk-nag (or it would raise), and for every model the provider would call
    from the region, the role allows the profile there and the foundation model in the regions
    it routes to."""
    synthesized = _synth(tmp_path, synth_region)
    provider = BedrockProvider(region=run_region)
    for function in ("agent_step", "router_step"):
        resources = invoke_resources(synthesized, function, run_region)
        assert not any(r.endswith("/*") or r.endswith("anthropic.*") for r in resources)
        for model in ModelCatalog().models():
            try:
                invoked = provider.bedrock_id(model.id)
            except Exception:
                continue  # no profile this region may use: the provider refuses, nothing to grant
            assert model.bedrock_id is not None
            if invoked != model.bedrock_id:
                profile = f"arn:aws:bedrock:{run_region}:{ACCOUNT}:inference-profile/{invoked}"
                assert allowed(resources, profile), (function, profile)
            for destination in ("us-west-2", "eu-west-1", "ap-northeast-1", ""):
                arn = f"arn:aws:bedrock:{destination}::foundation-model/{model.bedrock_id}"
                assert allowed(resources, arn), (function, arn)


def test_another_regions_profile_is_not_granted_when_the_region_is_known(
    tmp_path: Path,
) -> None:
    synthesized = _synth(tmp_path, "eu-central-1")
    resources = invoke_resources(synthesized, "agent_step", "eu-central-1")
    sonnet = "anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert allowed(
        resources, f"arn:aws:bedrock:eu-central-1:{ACCOUNT}:inference-profile/eu.{sonnet}"
    )
    assert not allowed(
        resources, f"arn:aws:bedrock:eu-central-1:{ACCOUNT}:inference-profile/us.{sonnet}"
    )
    assert not allowed(resources, "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-pro")
