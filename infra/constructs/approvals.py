"""Approvals on AWS (docs/approvals.md): the approval_api function behind the HTTP API, the
signing key and Slack secrets, the people, and what approval_notify needs to send links.

- `GET|POST /approvals/{token}` and `POST /slack/interactions` are public at the gateway: the
  signed link and Slack's v0 signature are their authentication (the function refuses anything
  else); the operators' routes need IAM: `GET /approvals` (open gates and their links) and the
  REST API's decide, resume and cancel routes (`switchyard.api.operators`, the one definition
  both places serve).
- approval_api may call `states:SendTaskSuccess|SendTaskFailure` on the workflows' machines only
  (a decision approves, rejects or resumes; nothing sends heartbeats),
  `states:DescribeExecution|StopExecution|DescribeStateMachineForExecution` on their executions
  only, `states:DescribeStateMachine|ListStateMachineAliases|DescribeStateMachineAlias|
  StartExecution` on those machines, their versions and aliases only (a reset), read and raise
  budgets in the budget table (`dynamodb:GetItem|UpdateItem`), and read the signing key, the
  Slack secret and the database secret.
- approval_notify may call `states:SendTaskSuccess` on the workflows' machines only: a reset
  run's gate before the reset's step answers its own task token with the decision the run it
  resets recorded.
- approval_notify and approval_api send e-mail through SES as the configured sender only.

Context: `switchyard:roles` (the people, `SWITCHYARD_ROLES`'s JSON, or the name of a JSON or
YAML file holding it), `switchyard:approvalSender` (default `switchyard:emailFrom`),
`switchyard:slack` (true: a Slack secret to fill with `{"bot_token", "signing_secret"}`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parseaddr
from pathlib import Path
from typing import Any

import yaml
from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct, Node

from infra.config import CONTEXT_PREFIX, Settings, SettingsError
from infra.constructs.api import Api
from infra.constructs.functions import Functions
from infra.constructs.state_store import StateStore
from infra.nag import acknowledge, acknowledge_resource
from infra.names import machine_name
from switchyard.api import operators
from switchyard.approvals.people import People, PeopleError
from switchyard.constants import (
    APPROVAL_API_FUNCTION,
    APPROVAL_SIGNING_SECRET_ENV,
    BUDGET_TABLE_ENV,
    EMAIL_FROM_ENV,
    PUBLIC_URL_ENV,
    ROLES_ENV,
    SES_IDENTITY_ENV,
    SLACK_SECRET_ENV,
)

SIGNING_KEY_ID = "k1"
PUBLIC_ROUTES = ("GET /approvals/{token}", "POST /approvals/{token}", "POST /slack/interactions")
OPERATOR_ROUTES = ("GET /approvals", *operators.route_keys())
"""IAM-authorized: `GET /approvals` and the REST API's decide, resume and cancel routes."""
TASK_TOKEN_ACTIONS = ["states:SendTaskSuccess", "states:SendTaskFailure"]
"""What `switchyard.gates.callbacks` calls; no gate has a `HeartbeatSeconds`, so no heartbeat."""
REPLAY_ACTIONS = ["states:SendTaskSuccess"]
"""approval_notify's: a reset run's gate answers its own task token with the recorded decision."""
EXECUTION_ACTIONS = [
    "states:DescribeExecution",
    "states:StopExecution",
    "states:DescribeStateMachineForExecution",
]
"""An operator's cancel: StopExecution, and DescribeExecution to refuse a run that has ended (its
StopExecution would succeed and change nothing) and to answer the status; a reset reads the
run's input and the version it ran (DescribeStateMachineForExecution)."""
RESET_ACTIONS = [
    "states:DescribeStateMachine",
    "states:ListStateMachineAliases",
    "states:DescribeStateMachineAlias",
    "states:StartExecution",
]
"""An operator's reset (`switchyard.approvals.resets`): find the version to run on the machine,
its aliases and the versions they route to, and start the new run there."""
BUDGET_ACTIONS = ["dynamodb:GetItem", "dynamodb:UpdateItem"]
"""A resume's budget raise: the scope's totals, then its new limit (`BudgetLedger.set_limit`)."""
MAX_LISTED_CHARACTERS = 5000
"""The most characters of ARNs the task-token statement lists, one per machine (the execution
statement lists as many again); past it both name the machines by the stack's machine-name
prefix. One statement must fit in one policy: CDK moves what passes a role's inline size into
managed policies of at most 6,144 characters each."""
ARN_CHARACTERS = len('"arn:aws-us-gov:states:ap-southeast-2:123456789012:stateMachine:",')
"""A machine's ARN in a policy without its name, at its longest."""
MAX_LISTED_MACHINES = 60
"""Up to this many, a policy with one statement of machine ARNs lists each machine (the
dashboard's task-token policy, infra/constructs/dashboard.py); past it, the stack's prefix."""
MAX_ROLES_JSON = 3000
"""Characters: Lambda's environment holds 4 KB in all."""


@dataclass(frozen=True)
class ApprovalConfig:
    roles_json: str | None
    sender: str | None
    slack: bool

    @classmethod
    def from_node(cls, node: Node, settings: Settings) -> ApprovalConfig:
        roles = node.try_get_context(CONTEXT_PREFIX + "roles")
        sender = node.try_get_context(CONTEXT_PREFIX + "approvalSender") or settings.email_from
        slack = node.try_get_context(CONTEXT_PREFIX + "slack")
        return cls(
            roles_json=read_roles(roles, settings.root) if roles is not None else None,
            sender=str(sender) if sender else None,
            slack=slack is True or str(slack).lower() == "true",
        )


def read_roles(value: Any, root: Path) -> str:
    """The people as compact JSON, checked as the functions will read them."""
    key = CONTEXT_PREFIX + "roles"
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        path = (root / value).resolve()
        if not path.is_file():
            raise SettingsError(f"{key}: no file {path}")
        value = yaml.safe_load(path.read_text())  # JSON is YAML too
    elif isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise SettingsError(f"{key}: not JSON") from None
    try:
        People.from_json(value)
    except PeopleError as exc:
        raise SettingsError(f"{key}: {exc}") from None
    text = json.dumps(value, separators=(",", ":"))
    if len(text) > MAX_ROLES_JSON:
        raise SettingsError(
            f"{key}: {len(text)} characters of people; a function's environment holds about "
            f"{MAX_ROLES_JSON}: keep the roles' people short (names and contacts only)"
        )
    return text


class Approvals(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: Settings,
        store: StateStore,
        functions: Functions,
        api: Api,
        machines: Sequence[str],
    ) -> None:
        super().__init__(scope, construct_id)
        config = ApprovalConfig.from_node(self.node, settings)
        self.signing_key = secretsmanager.Secret(
            self,
            "SigningKey",
            description='switchyard: approval link signing keys, {"<key id>": "<secret>"}',
            encryption_key=store.key,
            removal_policy=store.removal,
            generate_secret_string=secretsmanager.SecretStringGenerator(
                secret_string_template="{}",
                generate_string_key=SIGNING_KEY_ID,
                exclude_punctuation=True,
                password_length=64,
            ),
        )
        acknowledge(
            self.signing_key,
            "SMG4",
            "rotated by hand with a new key id placed first (the old id keeps verifying the links "
            "still out until their tiers end): docs/approvals.md; a rotation function would break "
            "every link in flight",
        )
        self.slack_secret: secretsmanager.Secret | None = None
        if config.slack:
            self.slack_secret = secretsmanager.Secret(
                self,
                "Slack",
                description='switchyard: Slack app, {"bot_token": ..., "signing_secret": ...}',
                encryption_key=store.key,
                removal_policy=store.removal,
            )
            acknowledge(
                self.slack_secret,
                "SMG4",
                "Slack's bot token and signing secret: only Slack's app settings can issue new "
                "ones; rotate them there and store them with put-secret-value",
            )
        environment = {
            PUBLIC_URL_ENV: api.url,
            APPROVAL_SIGNING_SECRET_ENV: self.signing_key.secret_arn,
        }
        operator_environment = {BUDGET_TABLE_ENV: store.budget_table.table_name}
        if config.roles_json:
            environment[ROLES_ENV] = config.roles_json
        if self.slack_secret is not None:
            environment[SLACK_SECRET_ENV] = self.slack_secret.secret_arn
        address = parseaddr(config.sender)[1] if config.sender else ""
        if address:
            environment[SES_IDENTITY_ENV] = address
            environment[EMAIL_FROM_ENV] = str(config.sender)
        self.function = functions.function(
            APPROVAL_API_FUNCTION, environment={**environment, **operator_environment}
        )
        notify = functions.by_name["approval_notify"]
        for name, value in environment.items():
            notify.add_environment(name, value)
        for function in (self.function, notify):
            self._grant_secrets(function)
            if address:
                self._grant_ses(function, address)
        self._grant_machines(settings, machines, notify)
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=BUDGET_ACTIONS, resources=[store.budget_table.table_arn])
        )
        self._routes(api)
        CfnOutput(self, "SigningKeySecretArn", value=self.signing_key.secret_arn)
        if self.slack_secret is not None:
            CfnOutput(self, "SlackSecretArn", value=self.slack_secret.secret_arn)
            CfnOutput(self, "SlackInteractionsUrl", value=f"{api.url}/slack/interactions")

    def _grant_secrets(self, function: lambda_.Function) -> None:
        secrets = [self.signing_key.secret_arn]
        if self.slack_secret is not None:
            secrets.append(self.slack_secret.secret_arn)
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["secretsmanager:GetSecretValue"], resources=secrets)
        )

    def _grant_ses(self, function: lambda_.Function, address: str) -> None:
        """The sender's identity only: its address, or its domain when the domain is verified."""
        stack = Stack.of(self)
        identity = f"arn:{stack.partition}:ses:{stack.region}:{stack.account}:identity"
        domain = address.rsplit("@", 1)[-1]
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["ses:SendEmail", "ses:SendRawEmail"],
                resources=[f"{identity}/{address}", f"{identity}/{domain}"],
                conditions={"StringEquals": {"ses:FromAddress": address}},
            )
        )

    def _grant_machines(
        self, settings: Settings, machines: Sequence[str], notify: lambda_.Function
    ) -> None:
        """The task-token actions on the workflows' machines, the execution actions on their
        executions: each named, or all by the stack's prefix past `MAX_LISTED_CHARACTERS`.
        approval_notify may answer its own task token with a recorded decision (a reset run's
        gate replays, `switchyard.runtime.replay`): SendTaskSuccess on the machines only."""
        if not machines:
            return
        stack = Stack.of(self)
        base = f"arn:{stack.partition}:states:{stack.region}:{stack.account}"
        names = [machine_name(settings, name) for name in sorted(machines)]
        listed = sum(ARN_CHARACTERS + len(n) for n in names) <= MAX_LISTED_CHARACTERS
        if not listed:
            names = [f"{settings.stack_name}-*"]
            reason = (
                "the workflows' machines, named by their fixed prefix: a list of "
                f"{len(machines)} machines would not fit in one IAM policy"
            )
            for resource in (f"{base}:stateMachine:{names[0]}", f"{base}:execution:{names[0]}:*"):
                acknowledge_resource(self.function.role or self.function, resource, reason)
            acknowledge_resource(notify.role or notify, f"{base}:stateMachine:{names[0]}", reason)
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=TASK_TOKEN_ACTIONS, resources=[f"{base}:stateMachine:{n}" for n in names]
            )
        )
        notify.add_to_role_policy(
            iam.PolicyStatement(
                actions=REPLAY_ACTIONS, resources=[f"{base}:stateMachine:{n}" for n in names]
            )
        )
        executions = [f"{base}:execution:{n}:*" for n in names]
        self.function.add_to_role_policy(
            iam.PolicyStatement(actions=EXECUTION_ACTIONS, resources=executions)
        )
        versions = [f"{base}:stateMachine:{n}:*" for n in names]
        self.function.add_to_role_policy(
            iam.PolicyStatement(
                actions=RESET_ACTIONS,
                resources=[*(f"{base}:stateMachine:{n}" for n in names), *versions],
            )
        )
        for resource in versions:
            acknowledge_resource(
                self.function.role or self.function,
                resource,
                "the versions and aliases of one of the workflows' machines (a reset runs the "
                "version an operator names, through the alias that routes to it)",
            )
        if listed:
            for resource in executions:
                acknowledge_resource(
                    self.function.role or self.function,
                    resource,
                    "the executions of one of the workflows' machines (an operator's cancel "
                    "names a run, whose execution ARN ends in its id)",
                )

    def _routes(self, api: Api) -> None:
        stack = Stack.of(self)
        integration = apigw.CfnIntegration(
            self,
            "Integration",
            api_id=api.http_api.ref,
            integration_type="AWS_PROXY",
            integration_uri=self.function.function_arn,
            payload_format_version="2.0",
        )
        lambda_.CfnPermission(
            self,
            "Invoke",
            action="lambda:InvokeFunction",
            function_name=self.function.function_arn,
            principal="apigateway.amazonaws.com",
            source_arn=(
                f"arn:{stack.partition}:execute-api:{stack.region}:{stack.account}:"
                f"{api.http_api.ref}/*/*/*"
            ),
        )
        self.routes: dict[str, apigw.CfnRoute] = {}
        for index, route_key in enumerate((*PUBLIC_ROUTES, *OPERATOR_ROUTES)):
            public = route_key in PUBLIC_ROUTES
            route = apigw.CfnRoute(
                self,
                f"Route{index}",
                api_id=api.http_api.ref,
                route_key=route_key,
                target=f"integrations/{integration.ref}",
                authorization_type="NONE" if public else "AWS_IAM",
            )
            if public:
                acknowledge(
                    route,
                    "APIG4",
                    "people follow approval links from e-mail and Slack posts clicks: neither can "
                    "sign AWS requests; the function authenticates each request by the link's "
                    "HMAC-SHA256 signature or Slack's v0 signature (404/401 otherwise)",
                )
            self.routes[route_key] = route
