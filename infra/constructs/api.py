"""The HTTP API: run submission (IAM-signed, straight to Step Functions) and webhook routes.

`POST /workflows/<name>/runs` starts a run of the workflow's `live` alias with the request body
as input, through API Gateway's Step Functions integration (no function in between). The
`Idempotency-Key` header becomes the execution name, so a retried submission starts no second run.
Webhook routes (`POST /webhooks/<name>`) go to their verifying function; they carry no AWS
signature, the HMAC of the body is their authentication.

The API and its stage belong to the platform; each workflow's routes, integrations and the role
API Gateway starts its runs with live in the workflow's nested stack (`scope` below), so a
workflow adds nothing to the top-level stack, and one role may start exactly one workflow (one
role for all of them would need a policy naming every alias, past IAM's 10,240 characters at
about a hundred workflows).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from infra.config import Settings
from infra.constructs.state_store import StateStore
from infra.nag import acknowledge
from infra.names import http_api_name

IDEMPOTENCY_HEADER = "Idempotency-Key"
ACCESS_LOG_FORMAT = (
    '{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",'
    '"requestTime":"$context.requestTime","routeKey":"$context.routeKey",'
    '"status":"$context.status","responseLength":"$context.responseLength",'
    '"integrationError":"$context.integrationErrorMessage"}'
)


class Api(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, settings: Settings, store: StateStore
    ) -> None:
        super().__init__(scope, construct_id)
        self.http_api = apigw.CfnApi(
            self,
            "HttpApi",
            name=http_api_name(settings),
            protocol_type="HTTP",
            description="switchyard: run submission and webhooks",
        )
        access_logs = store.log_group("AccessLogs", settings)
        self.stage = apigw.CfnStage(
            self,
            "DefaultStage",
            api_id=self.http_api.ref,
            stage_name="$default",
            auto_deploy=True,
            access_log_settings=apigw.CfnStage.AccessLogSettingsProperty(
                destination_arn=access_logs.log_group_arn, format=ACCESS_LOG_FORMAT
            ),
            default_route_settings=apigw.CfnStage.RouteSettingsProperty(
                throttling_burst_limit=100, throttling_rate_limit=50
            ),
        )
        self.url = self.http_api.attr_api_endpoint
        self.routes: dict[str, apigw.CfnRoute] = {}

    def add_run_submission(
        self, scope: Construct, workflow: str, live_alias_arn: str
    ) -> apigw.CfnRoute:
        """`POST /workflows/<workflow>/runs`, in `scope`, with a role that may start only it."""
        start_role = iam.Role(
            scope,
            "StartExecutionRole",
            assumed_by=iam.ServicePrincipal("apigateway.amazonaws.com"),
            description=f"switchyard API: starts runs of {workflow} on its live alias",
        )
        start_role.add_to_policy(
            iam.PolicyStatement(actions=["states:StartExecution"], resources=[live_alias_arn])
        )
        integration = apigw.CfnIntegration(
            scope,
            f"Start{_pascal(workflow)}",
            api_id=self.http_api.ref,
            integration_type="AWS_PROXY",
            integration_subtype="StepFunctions-StartExecution",
            credentials_arn=start_role.role_arn,
            payload_format_version="1.0",
            request_parameters={
                "StateMachineArn": live_alias_arn,
                "Input": "$request.body",
                "Name": f"$request.header.{IDEMPOTENCY_HEADER}",
            },
        )
        return self._route(
            scope, f"POST /workflows/{workflow}/runs", integration, authorization_type="AWS_IAM"
        )

    def add_webhook(
        self, scope: Construct, path: str, function: lambda_.IFunction
    ) -> apigw.CfnRoute:
        """`POST /<path>` to a webhook's verifying function, in `scope`."""
        stack = Stack.of(scope)
        integration = apigw.CfnIntegration(
            scope,
            f"Webhook{_pascal(path)}",
            api_id=self.http_api.ref,
            integration_type="AWS_PROXY",
            integration_uri=function.function_arn,
            payload_format_version="2.0",
        )
        lambda_.CfnPermission(
            scope,
            f"Webhook{_pascal(path)}Invoke",
            action="lambda:InvokeFunction",
            function_name=function.function_arn,
            principal="apigateway.amazonaws.com",
            source_arn=(
                f"arn:{stack.partition}:execute-api:{stack.region}:{stack.account}:"
                f"{self.http_api.ref}/*/POST/{path}"
            ),
        )
        route = self._route(scope, f"POST /{path}", integration, authorization_type="NONE")
        acknowledge(
            route,
            "APIG4",
            "a webhook's sender cannot sign AWS requests; the function authenticates each "
            "delivery by the HMAC-SHA256 of its raw body (401 otherwise) before starting anything",
        )
        return route

    def _route(
        self,
        scope: Construct,
        route_key: str,
        integration: apigw.CfnIntegration,
        *,
        authorization_type: str,
    ) -> apigw.CfnRoute:
        route = apigw.CfnRoute(
            scope,
            f"Route{_pascal(route_key)}",
            api_id=self.http_api.ref,
            route_key=route_key,
            target=f"integrations/{integration.ref}",
            authorization_type=authorization_type,
        )
        self.routes[route_key] = route
        return route


def _pascal(text: str) -> str:
    words = "".join(c if c.isalnum() else " " for c in text).split()
    return "".join(word[:1].upper() + word[1:] for word in words)
