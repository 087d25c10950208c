"""The dashboard on AWS (infra/constructs/dashboard.py), on the synthesized templates of both a
`cdk deploy` (us-east-1) and an environment-agnostic `cdk synth`: a private bucket that only the
distribution reads (origin access control), pages routed at the edge as `switchyard dev` routes
them, security headers, a data API that needs a Cognito JWT, the built app uploaded with its
sign-in configuration. cdk-nag and cfn-lint run on the same apps (test_nag_and_lint.py)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.constructs.dashboard import (
    CALLBACK_PATH,
    DATA_ROUTES,
    PAGE_ROUTER,
    WebAppMissingError,
    content_security_policy,
)
from switchyard.constants import OUTPUT_BUCKET_ENV, RECORDER_FUNCTIONS_ENV, ROLES_ENV
from tests.infra.synth import Synthesized, make_repository, synthesize

BOTH = ["platform", "platform_agnostic"]
CACHING_DISABLED = "4135ea2d-6df8-44a3-9df3-4b5a84be39ad"
ALL_VIEWER_EXCEPT_HOST = "b689b0a8-53d0-40ab-baf2-68738e2966ac"
"""AWS's managed cache and origin request policies (their ids are fixed and documented)."""


def one(synthesized: Synthesized, kind: str, prefix: str = "Dashboard") -> tuple[str, Any]:
    found = {k: v for k, v in synthesized.resources(kind).items() if k.startswith(prefix)}
    assert len(found) == 1, (kind, list(found))
    ((logical_id, resource),) = found.items()
    return logical_id, resource["Properties"]


def distribution(synthesized: Synthesized) -> dict[str, Any]:
    _, properties = one(synthesized, "AWS::CloudFront::Distribution")
    config: dict[str, Any] = properties["DistributionConfig"]
    return config


def data_behaviour(synthesized: Synthesized) -> dict[str, Any]:
    (behaviour,) = distribution(synthesized)["CacheBehaviors"]
    assert behaviour["PathPattern"] == "/api/dashboard/*"
    return dict(behaviour)


@pytest.fixture(params=BOTH)
def app(request: pytest.FixtureRequest) -> Synthesized:
    synthesized: Synthesized = request.getfixturevalue(request.param)
    return synthesized


# --- the bucket and the distribution ---------------------------------------------------------


def test_the_site_bucket_is_private_encrypted_tls_only_and_logged(app: Synthesized) -> None:
    site_id, site = one(app, "AWS::S3::Bucket", "DashboardSite")
    logs_id, logs = one(app, "AWS::S3::Bucket", "DashboardAccessLogs")
    for bucket in (site, logs):
        assert bucket["PublicAccessBlockConfiguration"] == {
            "BlockPublicAcls": True,
            "BlockPublicPolicy": True,
            "IgnorePublicAcls": True,
            "RestrictPublicBuckets": True,
        }
        (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "AES256"
    assert site["LoggingConfiguration"]["DestinationBucketName"] == {"Ref": logs_id}
    assert "AccessControl" not in logs  # S3 delivers the site's logs by the bucket's policy
    _, logs_policy = one(app, "AWS::S3::BucketPolicy", "DashboardAccessLogsPolicy")
    (delivery,) = [s for s in logs_policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    assert delivery["Principal"] == {"Service": "logging.s3.amazonaws.com"}
    assert delivery["Condition"]["ArnLike"] == {"aws:SourceArn": {"Fn::GetAtt": [site_id, "Arn"]}}
    assert distribution(app)["Logging"]["Bucket"] == {"Fn::GetAtt": [logs_id, "RegionalDomainName"]}
    _, policy = one(app, "AWS::S3::BucketPolicy", "DashboardSitePolicy")
    assert policy["Bucket"] == {"Ref": site_id}
    statements = policy["PolicyDocument"]["Statement"]
    denied = [s for s in statements if s["Effect"] == "Deny"]
    assert {json.dumps(s["Condition"], sort_keys=True) for s in denied} == {
        '{"Bool": {"aws:SecureTransport": "false"}}',
        '{"NumericLessThan": {"s3:TlsVersion": 1.2}}',
    }
    (allowed,) = [s for s in statements if s["Effect"] == "Allow"]
    # the only reader: CloudFront, for this distribution, objects only
    assert allowed["Principal"] == {"Service": "cloudfront.amazonaws.com"}
    assert allowed["Action"] == "s3:GetObject"
    distribution_id, _ = one(app, "AWS::CloudFront::Distribution")
    source = json.dumps(allowed["Condition"]["StringEquals"]["AWS:SourceArn"])
    assert json.dumps({"Ref": distribution_id}) in source and ":distribution/" in source


def test_cloudfront_reads_the_bucket_with_origin_access_control(app: Synthesized) -> None:
    site_id, _ = one(app, "AWS::S3::Bucket", "DashboardSite")
    control_id, control = one(app, "AWS::CloudFront::OriginAccessControl")
    assert control["OriginAccessControlConfig"] | {"Name": None} == {
        "Name": None,
        "OriginAccessControlOriginType": "s3",
        "SigningBehavior": "always",
        "SigningProtocol": "sigv4",
    }
    (origin,) = [
        o
        for o in distribution(app)["Origins"]
        if o["DomainName"] == {"Fn::GetAtt": [site_id, "RegionalDomainName"]}
    ]
    assert origin["OriginAccessControlId"] == {"Fn::GetAtt": [control_id, "Id"]}
    assert origin["S3OriginConfig"] == {"OriginAccessIdentity": ""}  # no identity (OAI)
    assert app.resources("AWS::CloudFront::CloudFrontOriginAccessIdentity") == {}


def test_pages_are_routed_at_the_edge_and_the_data_api_is_neither_cached_nor_plain_http(
    app: Synthesized,
) -> None:
    config = distribution(app)
    default = config["DefaultCacheBehavior"]
    function_id, function = one(app, "AWS::CloudFront::Function")
    assert function["FunctionConfig"]["Runtime"] == "cloudfront-js-2.0"
    assert function["FunctionCode"] == PAGE_ROUTER.read_text()
    assert default["FunctionAssociations"] == [
        {"EventType": "viewer-request", "FunctionARN": {"Fn::GetAtt": [function_id, "FunctionARN"]}}
    ]
    assert default["ViewerProtocolPolicy"] == "redirect-to-https"
    assert default["AllowedMethods"] == ["GET", "HEAD"]
    data = data_behaviour(app)
    assert data["CachePolicyId"] == CACHING_DISABLED
    assert data["OriginRequestPolicyId"] == ALL_VIEWER_EXCEPT_HOST
    assert data["ViewerProtocolPolicy"] == "https-only"
    (origin,) = [o for o in config["Origins"] if o["Id"] == data["TargetOriginId"]]
    assert origin["CustomOriginConfig"] == {
        "OriginProtocolPolicy": "https-only",
        "OriginSSLProtocols": ["TLSv1.2"],
    }
    api_id = next(iter(k for k in app.resources("AWS::ApiGatewayV2::Api")))
    assert origin["DomainName"] == {
        "Fn::Select": [2, {"Fn::Split": ["/", {"Fn::GetAtt": [api_id, "ApiEndpoint"]}]}]
    }


def test_every_answer_carries_the_security_headers(app: Synthesized) -> None:
    policy_id, policy = one(app, "AWS::CloudFront::ResponseHeadersPolicy")
    headers = policy["ResponseHeadersPolicyConfig"]["SecurityHeadersConfig"]
    csp = headers["ContentSecurityPolicy"]["ContentSecurityPolicy"]
    text = "".join(part if isinstance(part, str) else "<token>" for part in csp["Fn::Join"][1])
    directives = dict(d.split(" ", 1) for d in text.split("; "))
    assert directives["script-src"] == "'self'"
    assert "unsafe" not in text
    assert directives["frame-ancestors"] == "'none'"
    assert directives["object-src"] == "'none'"
    region = app.region or "<token>"
    assert directives["connect-src"] == f"'self' https://<token>.auth.{region}.amazoncognito.com"
    assert headers["StrictTransportSecurity"]["AccessControlMaxAgeSec"] >= 31536000
    assert headers["FrameOptions"]["FrameOption"] == "DENY"
    assert headers["ContentTypeOptions"] == {"Override": True}
    assert headers["ReferrerPolicy"]["ReferrerPolicy"] == "no-referrer"
    config = distribution(app)
    for behaviour in (config["DefaultCacheBehavior"], *config["CacheBehaviors"]):
        assert behaviour["ResponseHeadersPolicyId"] == {"Ref": policy_id}


# --- who may read ----------------------------------------------------------------------------


def test_the_data_api_routes_need_a_jwt_of_the_dashboards_user_pool(app: Synthesized) -> None:
    pool_id, _ = one(app, "AWS::Cognito::UserPool")
    client_id, _ = one(app, "AWS::Cognito::UserPoolClient")
    authorizer_id, authorizer = one(app, "AWS::ApiGatewayV2::Authorizer")
    assert authorizer["AuthorizerType"] == "JWT"
    assert authorizer["IdentitySource"] == ["$request.header.Authorization"]
    assert authorizer["JwtConfiguration"] == {
        "Audience": [{"Ref": client_id}],
        "Issuer": {"Fn::GetAtt": [pool_id, "ProviderURL"]},
    }
    routes = {
        r["Properties"]["RouteKey"]: r["Properties"]
        for r in app.resources("AWS::ApiGatewayV2::Route").values()
        if "/api/" in r["Properties"]["RouteKey"]
    }
    assert set(routes) == set(DATA_ROUTES)
    for route in routes.values():
        assert route["AuthorizationType"] == "JWT"
        assert route["AuthorizerId"] == {"Ref": authorizer_id}
    _, permission = one(app, "AWS::Lambda::Permission")
    assert json.dumps(permission["SourceArn"]).endswith('"/*/*/api/dashboard/*"]]}')


def test_the_stack_says_where_the_dashboard_is_and_whom_to_add_people_to(
    app: Synthesized,
) -> None:
    outputs = app.template["Outputs"]
    distribution_id, _ = one(app, "AWS::CloudFront::Distribution")
    pool_id, _ = one(app, "AWS::Cognito::UserPool")
    assert outputs["DashboardUrl"]["Value"] == {
        "Fn::Join": ["", ["https://", {"Fn::GetAtt": [distribution_id, "DomainName"]}, "/ui/"]]
    }
    assert outputs["DashboardUserPoolId"]["Value"] == {"Ref": pool_id}


def test_people_sign_in_with_mfa_through_a_public_pkce_client(app: Synthesized) -> None:
    _, pool = one(app, "AWS::Cognito::UserPool")
    assert pool["AdminCreateUserConfig"]["AllowAdminCreateUserOnly"] is True
    assert pool["MfaConfiguration"] == "ON"
    assert pool["EnabledMfas"] == ["SOFTWARE_TOKEN_MFA"]
    assert pool["UserPoolTier"] == "PLUS"
    assert pool["Policies"]["PasswordPolicy"]["MinimumLength"] >= 12
    _, client = one(app, "AWS::Cognito::UserPoolClient")
    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    # an open page trades its refresh token (12 hours) for a new ID token (1 hour)
    assert "ALLOW_REFRESH_TOKEN_AUTH" in client["ExplicitAuthFlows"]
    assert (client["RefreshTokenValidity"], client["IdTokenValidity"]) == (720, 60)
    distribution_id, _ = one(app, "AWS::CloudFront::Distribution")
    assert client["CallbackURLs"] == [
        {
            "Fn::Join": [
                "",
                ["https://", {"Fn::GetAtt": [distribution_id, "DomainName"]}, CALLBACK_PATH],
            ]
        }
    ]


# --- the data API function -------------------------------------------------------------------


def test_dashboard_api_reads_aurora_and_histories_and_outputs_and_answers_gates_only(
    app: Synthesized,
) -> None:
    _, function = one(app, "AWS::Lambda::Function", "DashboardDashboardApi")
    assert {"Key": "switchyard:function", "Value": "dashboard_api"} in function["Tags"]
    assert function["VpcConfig"]["SubnetIds"]
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in app.resources("AWS::IAM::Policy").values()
        if {"Ref": function["Role"]["Fn::GetAtt"][0]} in p["Properties"]["Roles"]
    ]
    actions = {
        action
        for statements in policies
        for statement in statements
        for action in (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
    }
    data = {a for a in actions if not a.startswith(("logs:", "ec2:", "xray:"))}
    assert data == {
        "secretsmanager:GetSecretValue",
        "secretsmanager:DescribeSecret",
        "kms:Decrypt",
        "states:SendTaskSuccess",
        "states:SendTaskFailure",
        "states:GetExecutionHistory",  # a running run, caught up when a page reads it
        "s3:GetObject",  # large values a page loads
    }
    (history,) = [s for p in policies for s in p if s["Action"] == "states:GetExecutionHistory"]
    executions = {json.dumps(r).rsplit(":execution:", 1)[1] for r in history["Resource"]}
    assert 'Switchyard-customer-support:*"]]}' in executions
    assert len(executions) == 6
    bucket_id, _ = one(app, "AWS::S3::Bucket", "StateOutputBucket")
    (reads,) = [s for p in policies for s in p if s["Action"] == "s3:GetObject"]
    assert reads["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/*"]]}
    variables = function["Environment"]["Variables"]
    assert variables[OUTPUT_BUCKET_ENV] == {"Ref": bucket_id}
    assert "agent_step" in json.dumps(variables[RECORDER_FUNCTIONS_ENV])
    (states,) = [s for p in policies for s in p if "states:SendTaskSuccess" in s["Action"]]
    machines = {json.dumps(r).rsplit(":stateMachine:", 1)[1] for r in states["Resource"]}
    assert machines == {
        'Switchyard-content-moderation"]]}',
        'Switchyard-continue-showcase"]]}',
        'Switchyard-customer-support"]]}',
        'Switchyard-document-processing"]]}',
        'Switchyard-summarize-document"]]}',
        'Switchyard-trigger-showcase"]]}',
    }


def test_the_people_of_the_roles_decide_on_the_dashboard_too(configured: Synthesized) -> None:
    _, function = one(configured, "AWS::Lambda::Function", "DashboardDashboardApi")
    people = json.loads(function["Environment"]["Variables"][ROLES_ENV])
    assert people["lead"][0]["email"] == "dana@example.com"


# --- the built app ---------------------------------------------------------------------------


def test_the_built_app_and_its_sign_in_are_deployed_into_ui(app: Synthesized) -> None:
    deployments = {
        k: v["Properties"] for k, v in app.resources("Custom::CDKBucketDeployment").items()
    }
    assert len(deployments) == 2
    site_id, _ = one(app, "AWS::S3::Bucket", "DashboardSite")
    by_rule = {json.dumps(d["Exclude"]): d for d in deployments.values()}
    assets, pages = by_rule['["*"]'], by_rule['["assets/*"]']
    for deployment in (assets, pages):
        assert deployment["DestinationBucketName"] == {"Ref": site_id}
        assert deployment["DestinationBucketKeyPrefix"] == "ui/"
    assert assets["Include"] == ["assets/*"] and assets["Prune"] is False
    assert assets["SystemMetadata"] == {"cache-control": "public, max-age=31536000, immutable"}
    assert pages["Prune"] is True
    assert pages["SystemMetadata"] == {"cache-control": "no-cache"}
    # the same built app for both, and config.json with the deploy-time sign-in values
    assert assets["SourceObjectKeys"][0] == pages["SourceObjectKeys"][0]
    markers = json.dumps(pages["SourceMarkers"][1])
    assert ".amazoncognito.com" in markers and "DashboardUsersWebApp" in markers
    # the copy's role: exactly what `aws s3 cp` and `aws s3 sync --delete` into ui/ do
    role_ids = {k for k in app.resources("AWS::IAM::Role") if k.startswith("DashboardDeployRole")}
    (statements,) = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in app.resources("AWS::IAM::Policy").values()
        if {r["Ref"] for r in p["Properties"]["Roles"]} & role_ids
    ]
    granted = {
        json.dumps(sorted(s["Action"]) if isinstance(s["Action"], list) else [s["Action"]])
        for s in statements
    }
    assert granted == {
        '["logs:CreateLogStream", "logs:PutLogEvents"]',
        '["s3:GetObject"]',
        '["s3:ListBucket"]',
        '["s3:DeleteObject", "s3:PutObject"]',
    }
    (writes,) = [s for s in statements if "s3:PutObject" in s["Action"]]
    assert writes["Resource"] == {"Fn::Join": ["", [{"Fn::GetAtt": [site_id, "Arn"]}, "/ui/*"]]}


def test_a_name_of_its_own_gets_tls_1_2_and_the_sign_in_returns_there(
    configured: Synthesized,
) -> None:
    config = distribution(configured)
    assert config["Aliases"] == ["dash.example.com"]
    assert config["ViewerCertificate"]["MinimumProtocolVersion"] == "TLSv1.2_2021"
    assert config["ViewerCertificate"]["SslSupportMethod"] == "sni-only"
    _, client = one(configured, "AWS::Cognito::UserPoolClient")
    assert client["CallbackURLs"] == [f"https://dash.example.com{CALLBACK_PATH}"]


# --- without a built app ---------------------------------------------------------------------


def test_without_a_built_app_the_synth_says_to_build_it_or_leave_the_dashboard_out(
    tmp_path: Path,
) -> None:
    from infra.app import build_app

    root, _ = make_repository(tmp_path, {}, {})
    shutil.rmtree(root / "web")
    with pytest.raises(WebAppMissingError, match=r"run `make setup`.*switchyard:dashboard=false"):
        build_app(
            context={"switchyard:root": str(root), "aws:cdk:bundling-stacks": []},
            outdir=str(tmp_path / "cdk.out"),
        )


@pytest.mark.slow
def test_the_dashboard_can_be_left_out(tmp_path: Path) -> None:
    root, _ = make_repository(tmp_path, {}, {})
    shutil.rmtree(root / "web")
    synthesized = synthesize(root, **{"switchyard:dashboard": "false"})
    assert synthesized.resources("AWS::CloudFront::Distribution") == {}
    assert synthesized.resources("AWS::Cognito::UserPool") == {}


# --- the edge's page routing, run -------------------------------------------------------------

ROUTED = {
    "/": (307, "/ui/"),
    "/ui": (307, "/ui/"),
    "/ui/": (None, "/ui/index.html"),
    "/ui/runs/run-1a2b": (None, "/ui/index.html"),
    "/ui/runs/v1.2.3": (None, "/ui/index.html"),
    "/ui/workflows/customer-support": (None, "/ui/index.html"),
    "/ui/costs": (None, "/ui/index.html"),
    "/ui/auth/callback": (None, "/ui/index.html"),
    "/ui/assets/index-g51tfZQw.js": (None, "/ui/assets/index-g51tfZQw.js"),
    "/ui/assets/": (None, "/ui/index.html"),
    "/ui/config.json": (None, "/ui/config.json"),
    "/ui/favicon.svg": (None, "/ui/favicon.svg"),
    "/ui/.hidden": (None, "/ui/index.html"),
    "/index.html": (404, None),
    "/cdk-assets/x.zip": (404, None),
}


def test_the_edge_routes_pages_as_switchyard_dev_does() -> None:
    node = shutil.which("node")
    assert node is not None, "node is part of `make setup` (the web app's build)"
    harness = (
        PAGE_ROUTER.read_text()
        + "\nconst uris = JSON.parse(process.argv[1]);\n"
        + "console.log(JSON.stringify(uris.map((uri) => {\n"
        + "  const out = handler({request: {uri, method: 'GET', headers: {}, querystring: {}}});\n"
        + "  return out.statusCode ? [out.statusCode, out.headers ? out.headers.location.value"
        + " : null] : [null, out.uri];\n"
        + "})));\n"
    )
    answer = subprocess.run(
        [node, "-e", harness, json.dumps(list(ROUTED))],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert dict(zip(ROUTED, map(tuple, json.loads(answer.stdout)), strict=True)) == ROUTED


def test_the_policy_allows_the_sign_in_origin_and_nothing_inline() -> None:
    policy = content_security_policy("https://x.auth.us-east-1.amazoncognito.com")
    assert re.search(r"connect-src 'self' https://x\.auth\.us-east-1\.amazoncognito\.com;", policy)
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy


@pytest.mark.parametrize(
    ("context", "refusal"),
    [
        ({"switchyard:dashboardDomain": "dash.example.com"}, "dashboardDomain: expected"),
        (
            {"switchyard:dashboardDomain": {"name": "d.example.com", "certificateArn": "x"}},
            "us-east-1 only",
        ),
        ({"switchyard:dashboardSignInPrefix": "My_Prefix"}, "not a domain prefix"),
        ({"switchyard:dashboardSignInPrefix": "acme-aws-dash"}, "without aws, amazon, cognito"),
    ],
)
def test_dashboard_settings_that_cannot_deploy_are_refused(
    context: dict[str, Any], refusal: str
) -> None:
    from aws_cdk import App

    from infra.config import SettingsError
    from infra.constructs.dashboard import DashboardConfig

    with pytest.raises(SettingsError, match=refusal):
        DashboardConfig.from_node(App(context=context).node)


def test_dashboard_settings_from_the_command_line() -> None:
    from aws_cdk import App

    from infra.constructs.dashboard import DashboardConfig

    domain = '{"name": "d.example.com", "certificateArn": "arn:aws:acm:us-east-1:1:certificate/x"}'
    config = DashboardConfig.from_node(
        App(context={"switchyard:dashboard": "false", "switchyard:dashboardDomain": domain}).node
    )
    assert (config.enabled, config.domain_name) == (False, "d.example.com")
    assert DashboardConfig.from_node(App().node).enabled
