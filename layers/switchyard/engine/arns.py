"""ARNs of the local engine's resources, shaped like AWS's so clients and tools accept them."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "000000000000"


@dataclass(frozen=True)
class Arns:
    region: str = DEFAULT_REGION
    account: str = DEFAULT_ACCOUNT

    def machine(self, name: str) -> str:
        return f"arn:aws:states:{self.region}:{self.account}:stateMachine:{name}"

    def execution(self, machine_name: str, name: str) -> str:
        return f"arn:aws:states:{self.region}:{self.account}:execution:{machine_name}:{name}"

    def function(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{self.account}:function:{name}"

    def role(self) -> str:
        return f"arn:aws:iam::{self.account}:role/switchyard-local"


def split_machine_arn(arn: str) -> tuple[str, str | None]:
    """(machine ARN, qualifier): the qualifier is a version number or an alias name."""
    parts = arn.split(":")
    if len(parts) >= 8 and parts[5] == "stateMachine":
        return ":".join(parts[:7]), parts[7]
    return arn, None


def machine_name(arn: str) -> str:
    return split_machine_arn(arn)[0].rsplit(":", 1)[-1]


def execution_names(arn: str) -> tuple[str, str]:
    """(machine name, execution name) of an execution ARN."""
    parts = arn.split(":")
    if len(parts) < 8 or parts[5] != "execution":
        raise ValueError(f"not an execution ARN: {arn}")
    return parts[6], parts[7]
