"""Evaluate a synthesized role's identity policies the way IAM does, on resolved ARNs.

`AwsValues` resolves a template's intrinsics to the values CloudFormation would give them, in
the shape AWS gives them (an alias's ARN is its machine's ARN plus `:<alias>`, a queue's URL and
ARN share its name), so a statement's `Resource` and a definition's `Parameters` resolve alike.
`Policies.allows(role, action, resource)` is IAM's identity-policy evaluation: an explicit `Deny`
wins, else some `Allow` must match the action (case-insensitive, `*` and `?` wildcards) and the
resource (case-sensitive, wildcards spanning `:` and `/`) and its `Condition`, if any, must hold
in the request's context (`allows(..., context=)`: the condition keys' values the request carries,
`None` for a key it does not carry). The string and ARN operators are evaluated (`IfExists` too);
any other operator, a condition key the caller gave no value for, a `NotAction` or a `NotResource`
cannot be evaluated and fails the test.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.infra.resolve import FakeAws
from tests.infra.synth import STACK, Synthesized
from tests.scenarios.harness.moto_runner import ACCOUNT, REGION

ANY_NAME = "any-name-7f3a"
"""Stands for a name known only at run time (an execution's, an object's key)."""


class AwsValues(FakeAws):
    """Realistic values for every `Ref` and `Fn::GetAtt` of the templates."""

    def __init__(self, synthesized: Synthesized) -> None:
        super().__init__(synthesized)
        self.region = synthesized.region or REGION
        self.account = synthesized.account or ACCOUNT
        self.pseudo = {
            "AWS::Partition": "aws",
            "AWS::Region": self.region,
            "AWS::AccountId": self.account,
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackId": f"arn:aws:cloudformation:{self.region}:{self.account}:stack/"
            "Switchyard/0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0",
            "AWS::StackName": STACK,
        }

    def resolve(self, value: Any, stack: str = STACK) -> Any:
        if isinstance(value, dict) and len(value) == 1:
            (function, argument), *_ = value.items()
            if function == "Fn::Select":
                index, items = argument
                return self.resolve(items, stack)[int(index)]
            if function == "Fn::Split":
                separator, text = argument
                return str(self.resolve(text, stack)).split(separator)
            if function == "Fn::GetAZs":
                return [f"{self.region}a", f"{self.region}b"]
        return super().resolve(value, stack)

    def _arn(self, service: str, resource: str, *, regional: bool = True) -> str:
        where = f"{self.region}:{self.account}" if regional else ":"
        return f"arn:aws:{service}:{where}:{resource}"

    def attribute(self, stack: str, logical_id: str, attribute: str) -> str:
        if logical_id in self.pseudo:
            return self.pseudo[logical_id]
        if logical_id in self.templates[stack].get("Parameters", {}):
            parent = self.resources(STACK)[stack]["Properties"]["Parameters"]
            return str(self.resolve(parent[logical_id], STACK))
        resource = self.resources(stack)[logical_id]
        kind, properties = resource["Type"], resource.get("Properties", {})
        generated = f"{stack}-{logical_id}"[:64]
        if kind == "AWS::CloudFormation::Stack" and attribute.startswith("Outputs."):
            output = self.templates[logical_id]["Outputs"][attribute.removeprefix("Outputs.")]
            return str(self.resolve(output["Value"], logical_id))
        if kind == "AWS::Lambda::Function":
            name = properties.get("FunctionName", generated)
            arn = self._arn("lambda", f"function:{name}")
            return name if attribute == "Ref" else arn
        if kind == "AWS::SQS::Queue":
            name = str(self.resolve(properties.get("QueueName", generated), stack))
            return {
                "Ref": f"https://sqs.{self.region}.amazonaws.com/{self.account}/{name}",
                "QueueUrl": f"https://sqs.{self.region}.amazonaws.com/{self.account}/{name}",
                "Arn": self._arn("sqs", name),
                "QueueName": name,
            }[attribute]
        if kind == "AWS::StepFunctions::StateMachine":
            name = str(self.resolve(properties.get("StateMachineName", generated), stack))
            return name if attribute == "Name" else self._arn("states", f"stateMachine:{name}")
        if kind == "AWS::StepFunctions::StateMachineVersion":
            return f"{self.resolve(properties['StateMachineArn'], stack)}:1"
        if kind == "AWS::StepFunctions::StateMachineAlias":
            version = properties["RoutingConfiguration"][0]["StateMachineVersionArn"]
            machine = str(self.resolve(version, stack)).rsplit(":", 1)[0]
            return f"{machine}:{properties['Name']}"
        if kind == "AWS::Events::EventBus":
            name = properties["Name"]
            return (
                name if attribute in ("Ref", "Name") else self._arn("events", f"event-bus/{name}")
            )
        if kind == "AWS::DynamoDB::Table":
            name = properties.get("TableName", generated)
            return name if attribute == "Ref" else self._arn("dynamodb", f"table/{name}")
        if kind == "AWS::S3::Bucket":
            name = properties.get("BucketName", generated.lower())
            return name if attribute == "Ref" else f"arn:aws:s3:::{name}"
        if kind == "AWS::SecretsManager::Secret":
            return self._arn("secretsmanager", f"secret:{generated}-AbCdEf")
        if kind == "AWS::KMS::Key":
            return self._arn("kms", f"key/{generated}")
        if kind == "AWS::Logs::LogGroup":
            name = str(self.resolve(properties.get("LogGroupName", generated), stack))
            return name if attribute == "Ref" else self._arn("logs", f"log-group:{name}:*")
        # Any other resource: a value of its own, the same wherever it is referred to.
        service = kind.split("::")[1].lower()
        return self._arn(service, f"{kind.split('::')[2].lower()}/{generated}/{attribute}")


def _pattern(wildcard: str, *, case_sensitive: bool) -> re.Pattern[str]:
    text = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in wildcard)
    return re.compile(text, 0 if case_sensitive else re.IGNORECASE)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


Context = Mapping[str, str | None]
"""A request's condition keys (case-insensitive) and their values; `None`: the request does not
carry that key."""


def _equals(value: str, policy: str) -> bool:
    return value == policy


def _equals_ignore_case(value: str, policy: str) -> bool:
    return value.casefold() == policy.casefold()


def _like(value: str, policy: str) -> bool:
    return _pattern(policy, case_sensitive=True).fullmatch(value) is not None


def _arn_like(value: str, policy: str) -> bool:
    """ARNs compare part by part: a wildcard does not span the first five `:` separators."""
    values, policies = value.split(":", 5), policy.split(":", 5)
    return len(values) == len(policies) == 6 and all(map(_like, values, policies))


CONDITION_OPERATORS = {
    # operator -> (how one policy value matches the request's value, negated)
    "StringEquals": (_equals, False),
    "StringNotEquals": (_equals, True),
    "StringEqualsIgnoreCase": (_equals_ignore_case, False),
    "StringNotEqualsIgnoreCase": (_equals_ignore_case, True),
    "StringLike": (_like, False),
    "StringNotLike": (_like, True),
    "ArnEquals": (_arn_like, False),
    "ArnLike": (_arn_like, False),
    "ArnNotEquals": (_arn_like, True),
    "ArnNotLike": (_arn_like, True),
}
"""The single-valued string and ARN condition operators
(https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html)."""


@dataclass(frozen=True)
class Condition:
    operator: str
    key: str
    values: tuple[str, ...]

    def holds(self, context: Context) -> bool:
        """IAM's evaluation: any of the policy's values may match; a key the request does not
        carry makes the condition false, but true for a negated operator or with `IfExists`."""
        known = {k.lower(): v for k, v in context.items()}
        assert self.key.lower() in known, (
            f"cannot evaluate the condition {self.operator} on {self.key}: the request's value "
            f"of it is not known (the check must pass it in the context)"
        )
        value = known[self.key.lower()]
        base = self.operator.removesuffix("IfExists")
        match, negated = CONDITION_OPERATORS[base]
        if value is None:
            return negated or self.operator.endswith("IfExists")
        matched = any(match(value, policy) for policy in self.values)
        return matched != negated


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    conditions: tuple[Condition, ...] = ()

    def matches(self, action: str, resource: str, context: Context) -> bool:
        return (
            any(_pattern(a, case_sensitive=False).fullmatch(action) for a in self.actions)
            and any(_pattern(r, case_sensitive=True).fullmatch(resource) for r in self.resources)
            and all(c.holds(context) for c in self.conditions)
        )


class Policies:
    """Every identity policy statement of every role in the templates, resolved."""

    def __init__(self, synthesized: Synthesized) -> None:
        self.values = AwsValues(synthesized)
        self.by_role: dict[tuple[str, str], list[Statement]] = {}
        for stack, template in synthesized.templates.items():
            for logical_id, resource in template["Resources"].items():
                properties = resource.get("Properties", {})
                if resource["Type"] == "AWS::IAM::Role":
                    self.by_role.setdefault((stack, logical_id), [])
                    for policy in properties.get("Policies", []):
                        self._add(stack, [{"Ref": logical_id}], policy["PolicyDocument"])
                elif resource["Type"] in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                    self._add(stack, properties.get("Roles", []), properties["PolicyDocument"])

    def _add(self, stack: str, roles: list[Any], document: dict[str, Any]) -> None:
        for role in roles:
            assert set(role) == {"Ref"}, f"a policy attached to a role of another stack: {role}"
            statements = self.by_role.setdefault((stack, role["Ref"]), [])
            for statement in document["Statement"]:
                unsupported = {"NotAction", "NotResource", "Principal"} & set(statement)
                assert not unsupported, f"cannot evaluate {sorted(unsupported)}: {statement}"
                statements.append(
                    Statement(
                        effect=statement["Effect"],
                        actions=tuple(_listed(statement["Action"])),
                        resources=tuple(
                            str(self.values.resolve(r, stack))
                            for r in _listed(statement["Resource"])
                        ),
                        conditions=self._conditions(stack, statement),
                    )
                )

    def _conditions(self, stack: str, statement: dict[str, Any]) -> tuple[Condition, ...]:
        found = []
        for operator, keys in statement.get("Condition", {}).items():
            assert operator.removesuffix("IfExists") in CONDITION_OPERATORS, (
                f"cannot evaluate the condition operator {operator}: {statement}"
            )
            for key, values in keys.items():
                resolved = tuple(str(self.values.resolve(v, stack)) for v in _listed(values))
                found.append(Condition(operator, key, resolved))
        return tuple(found)

    def allows(
        self, role: tuple[str, str], action: str, resource: str, context: Context | None = None
    ) -> bool:
        """`context`: the request's condition keys; a statement that matches the action and the
        resource and has a condition on a key it does not give fails the check."""
        statements = self.by_role[role]
        given = context or {}
        if any(s.effect == "Deny" and s.matches(action, resource, given) for s in statements):
            return False
        return any(s.effect == "Allow" and s.matches(action, resource, given) for s in statements)

    def role_of(self, stack: str, role: Any) -> tuple[str, str]:
        """The role a `RoleArn`/`Role` property refers to (`Fn::GetAtt [Role, Arn]`)."""
        if "Fn::GetAtt" in role:
            return (stack, role["Fn::GetAtt"][0])
        return (stack, role["Ref"])
