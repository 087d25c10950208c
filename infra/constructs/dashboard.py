"""The dashboard on AWS (docs/dashboard.md, "On AWS"): the web app from S3 behind CloudFront, its
data API as a function reading Aurora, behind a Cognito sign-in.

    https://<distribution>/ui/...             S3 (origin access control), pages routed at the edge
    https://<distribution>/api/dashboard/...  the HTTP API's JWT-authorized routes -> dashboard_api

- The bucket is private (every public access blocked, TLS only, SSE-S3, access logs): only the
  distribution reads it, signed with origin access control (SigV4), by a bucket policy naming
  the distribution. A CloudFront Function routes pages as `switchyard dev` does
  (`dashboard_pages.js`); every answer carries the security headers (`content_security_policy`).
- The data API is the HTTP API's `GET|POST /api/dashboard/{proxy+}`, authorized by a JWT
  authorizer on the dashboard's Cognito user pool, served by `functions/dashboard_api` (the same
  FastAPI routes as `switchyard dev`). The distribution forwards `/api/dashboard/*` to the API
  uncached, so the app calls its own origin: no CORS, `connect-src 'self'`. What the function
  may do besides reading Aurora (answer gates' tokens, read the workflows' execution histories
  and the output bucket's objects) is `dashboard_access.py`.
- People sign in with the user pool's hosted pages (authorization code with PKCE, a public
  client, MFA by authenticator app required); an administrator adds them (no self sign-up).
- The built app (`web/dist`, made by `make setup`) is uploaded at deploy time by CDK's
  BucketDeployment with a `config.json` naming the sign-in; without a built app the synth
  fails and says how to build it, or to leave the dashboard out (`switchyard:dashboard=false`).

Context: `switchyard:dashboard` (default true), `switchyard:dashboardDomain`
(`{"name": "dash.example.com", "certificateArn": "<ACM certificate in us-east-1>"}`: the
distribution's own name, TLS 1.2 or later), `switchyard:dashboardSignInPrefix` (the hosted
sign-in's domain prefix; default `<stack>-<id of the stack>`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_cdk import Aws, CfnOutput, Duration, Fn, Stack
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_certificatemanager as acm
from aws_cdk import aws_cloudfront as cloudfront
from aws_cdk import aws_cloudfront_origins as origins
from aws_cdk import aws_cognito as cognito
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_assets as s3_assets
from aws_cdk import aws_s3_deployment as s3_deployment
from constructs import Construct, Node

from infra.config import CONTEXT_PREFIX, Settings, SettingsError
from infra.constructs.api import Api
from infra.constructs.approvals import ApprovalConfig
from infra.constructs.dashboard_access import data_api_environment, grant_data_api
from infra.constructs.functions import Functions
from infra.constructs.state_store import StateStore
from infra.nag import LOG_STREAMS, acknowledge, acknowledge_resource, token
from switchyard.constants import DASHBOARD_API_FUNCTION, ROLES_ENV

WEB_DIST = Path("web") / "dist"
"""The built app, relative to the repository (`make setup` builds it)."""
PAGES = "ui"
"""The app's key prefix in the bucket and path on the distribution (`/ui/`), as locally."""
DATA_PATH = "/api/dashboard/*"
DATA_ROUTES = ("GET /api/dashboard/{proxy+}", "POST /api/dashboard/{proxy+}")
CALLBACK_PATH = "/ui/auth/callback"
SIGN_OUT_PATH = "/ui/"
SCOPES = (cognito.OAuthScope.OPENID, cognito.OAuthScope.EMAIL, cognito.OAuthScope.PROFILE)
POLL_SECONDS = 1.0
"""How often an open page reads again on AWS, where no stream pushes changes."""
PAGE_ROUTER = Path(__file__).with_name("dashboard_pages.js")
ACCESS_LOG_DAYS = 90
IMMUTABLE = "public, max-age=31536000, immutable"
"""Vite names each asset by its content's hash."""
S3_LOGS_BY_POLICY = "@aws-cdk/aws-s3:serverAccessLogsUseBucketPolicy"
RESERVED_WORDS = ("aws", "amazon", "cognito")
"""Words Cognito refuses in a domain prefix."""
_PREFIX = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")


class WebAppMissingError(SettingsError):
    """The stack deploys the dashboard, and its web app is not built."""


def content_security_policy(sign_in_origin: str) -> str:
    """Scripts, styles, workers and data from the app's own origin only (no inline script, no
    eval); tokens from the hosted sign-in's origin; nothing may frame the app."""
    return "; ".join(
        (
            "default-src 'self'",
            "script-src 'self'",
            "style-src 'self'",
            "img-src 'self' data:",
            "font-src 'self'",
            f"connect-src 'self' {sign_in_origin}",
            "worker-src 'self'",
            "object-src 'none'",
            "base-uri 'self'",
            "form-action 'self'",
            "frame-ancestors 'none'",
        )
    )


@dataclass(frozen=True)
class DashboardConfig:
    enabled: bool = True
    domain_name: str | None = None
    certificate_arn: str | None = None
    sign_in_prefix: str | None = None

    @classmethod
    def from_node(cls, node: Node) -> DashboardConfig:
        enabled = node.try_get_context(CONTEXT_PREFIX + "dashboard")
        domain = node.try_get_context(CONTEXT_PREFIX + "dashboardDomain")
        prefix = node.try_get_context(CONTEXT_PREFIX + "dashboardSignInPrefix")
        name = certificate = None
        if domain is not None:
            if isinstance(domain, str):
                try:
                    domain = json.loads(domain)
                except ValueError:
                    domain = None
            if (
                not isinstance(domain, dict)
                or not isinstance(domain.get("name"), str)
                or not str(domain.get("certificateArn", "")).startswith("arn:")
            ):
                raise SettingsError(
                    f"{CONTEXT_PREFIX}dashboardDomain: expected "
                    '{"name": "dash.example.com", "certificateArn": "arn:aws:acm:us-east-1:..."}'
                    " (CloudFront takes certificates from us-east-1 only)"
                )
            name, certificate = domain["name"], str(domain["certificateArn"])
        if prefix is not None and (not _PREFIX.match(str(prefix)) or _reserved(str(prefix))):
            raise SettingsError(
                f"{CONTEXT_PREFIX}dashboardSignInPrefix: {prefix!r} is not a domain prefix "
                "Cognito takes (lowercase letters, digits and hyphens, at most 63, without "
                f"{', '.join(RESERVED_WORDS)})"
            )
        return cls(
            enabled=enabled is None or enabled is True or str(enabled).lower() == "true",
            domain_name=name,
            certificate_arn=certificate,
            sign_in_prefix=str(prefix) if prefix is not None else None,
        )


def built_web_app(settings: Settings) -> Path:
    dist = settings.root / WEB_DIST
    if not (dist / "index.html").is_file():
        raise WebAppMissingError(
            f"the dashboard's web app is not built ({dist / 'index.html'} is missing): run "
            "`make setup` (or `npm ci && npm run build` in web/), or deploy without the "
            f"dashboard: `-c {CONTEXT_PREFIX}dashboard=false`"
        )
    return dist


class Dashboard(Construct):
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
        config: DashboardConfig | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # The site bucket's access logs are delivered by a bucket policy, not the legacy
        # `LogDeliveryWrite` ACL: the log bucket keeps ACLs only for CloudFront's logs.
        self.node.set_context(S3_LOGS_BY_POLICY, True)
        config = config or DashboardConfig.from_node(self.node)
        dist = built_web_app(settings)
        self.logs = self._log_bucket(store)
        self.bucket = self._site_bucket(store)
        self.users, self.sign_in = self._user_pool(settings, store, config)
        self.distribution = self._distribution(api, config)
        site = config.domain_name or self.distribution.distribution_domain_name
        self.url = f"https://{site}"
        self.client = self._client(site)
        self.function = self._data_api(settings, store, functions, api, machines)
        self._deploy(dist, settings, store)
        stack = Stack.of(self)
        CfnOutput(stack, "DashboardUrl", value=f"{self.url}/ui/")
        CfnOutput(stack, "DashboardUserPoolId", value=self.users.user_pool_id)

    # --- where the pages are ---------------------------------------------------------------

    def _log_bucket(self, store: StateStore) -> s3.Bucket:
        """The site bucket's access logs and the distribution's (CloudFront's standard logs need
        ACLs on the bucket they write to)."""
        logs = s3.Bucket(
            self,
            "AccessLogs",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_PREFERRED,
            lifecycle_rules=[s3.LifecycleRule(expiration=Duration.days(ACCESS_LOG_DAYS))],
            removal_policy=store.removal,
        )
        acknowledge(
            logs,
            "S1",
            "this bucket receives the dashboard's access logs (the site bucket's and "
            "CloudFront's); logging its own accesses would log into itself",
        )
        return logs

    def _site_bucket(self, store: StateStore) -> s3.Bucket:
        return s3.Bucket(
            self,
            "Site",
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            server_access_logs_bucket=self.logs,
            server_access_logs_prefix="site/",
            removal_policy=store.removal,
        )

    def _distribution(self, api: Api, config: DashboardConfig) -> cloudfront.Distribution:
        headers = cloudfront.ResponseHeadersPolicy(
            self,
            "SecurityHeaders",
            comment="switchyard dashboard: CSP, HSTS, no framing, no sniffing, no referrer",
            security_headers_behavior=cloudfront.ResponseSecurityHeadersBehavior(
                content_security_policy=cloudfront.ResponseHeadersContentSecurityPolicy(
                    content_security_policy=content_security_policy(self.sign_in.base_url()),
                    override=True,
                ),
                strict_transport_security=cloudfront.ResponseHeadersStrictTransportSecurity(
                    access_control_max_age=Duration.days(365),
                    include_subdomains=True,
                    override=True,
                ),
                content_type_options=cloudfront.ResponseHeadersContentTypeOptions(override=True),
                frame_options=cloudfront.ResponseHeadersFrameOptions(
                    frame_option=cloudfront.HeadersFrameOption.DENY, override=True
                ),
                referrer_policy=cloudfront.ResponseHeadersReferrerPolicy(
                    referrer_policy=cloudfront.HeadersReferrerPolicy.NO_REFERRER, override=True
                ),
            ),
        )
        pages = cloudfront.Function(
            self,
            "PageRouter",
            code=cloudfront.FunctionCode.from_file(file_path=str(PAGE_ROUTER)),
            runtime=cloudfront.FunctionRuntime.JS_2_0,
            comment="switchyard dashboard: / to /ui/, app paths to index.html",
        )
        # https://<api id>.execute-api.<region>.amazonaws.com -> its host name
        api_host = Fn.select(2, Fn.split("/", api.url))
        custom_domain: dict[str, Any] = {}
        if config.domain_name and config.certificate_arn:
            custom_domain = {
                "domain_names": [config.domain_name],
                "certificate": acm.Certificate.from_certificate_arn(
                    self, "Certificate", config.certificate_arn
                ),
                "minimum_protocol_version": cloudfront.SecurityPolicyProtocol.TLS_V1_2_2021,
            }
        distribution = cloudfront.Distribution(
            self,
            "Distribution",
            comment="switchyard dashboard",
            default_behavior=cloudfront.BehaviorOptions(
                origin=origins.S3BucketOrigin.with_origin_access_control(
                    self.bucket, origin_access_levels=[cloudfront.AccessLevel.READ]
                ),
                viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.REDIRECT_TO_HTTPS,
                allowed_methods=cloudfront.AllowedMethods.ALLOW_GET_HEAD,
                cache_policy=cloudfront.CachePolicy.CACHING_OPTIMIZED,
                response_headers_policy=headers,
                function_associations=[
                    cloudfront.FunctionAssociation(
                        function=pages, event_type=cloudfront.FunctionEventType.VIEWER_REQUEST
                    )
                ],
            ),
            additional_behaviors={
                DATA_PATH: cloudfront.BehaviorOptions(
                    origin=origins.HttpOrigin(
                        api_host,
                        protocol_policy=cloudfront.OriginProtocolPolicy.HTTPS_ONLY,
                        origin_ssl_protocols=[cloudfront.OriginSslPolicy.TLS_V1_2],
                    ),
                    viewer_protocol_policy=cloudfront.ViewerProtocolPolicy.HTTPS_ONLY,
                    allowed_methods=cloudfront.AllowedMethods.ALLOW_ALL,
                    # uncached, so that the Authorization header may go to the API
                    cache_policy=cloudfront.CachePolicy.CACHING_DISABLED,
                    origin_request_policy=(
                        cloudfront.OriginRequestPolicy.ALL_VIEWER_EXCEPT_HOST_HEADER
                    ),
                    response_headers_policy=headers,
                )
            },
            price_class=cloudfront.PriceClass.PRICE_CLASS_100,
            http_version=cloudfront.HttpVersion.HTTP2_AND_3,
            enable_logging=True,
            log_bucket=self.logs,
            log_file_prefix="cloudfront/",
            **custom_domain,
        )
        acknowledge(
            distribution,
            "CFR1",
            "the dashboard serves its operators wherever they are; every data request needs "
            "a signed-in person of the user pool, and the pages hold no data",
        )
        acknowledge(
            distribution,
            "CFR2",
            "no WAF web ACL by default (about $6 a month before requests): the pages are "
            "static and every data request is authorized by the JWT authorizer and throttled "
            "by the HTTP API stage; attach a web ACL to the distribution where one is required",
        )
        if not custom_domain:
            acknowledge(
                distribution,
                "CFR4",
                "the distribution's own *.cloudfront.net name and certificate, whose security "
                "policy CloudFront fixes; with switchyard:dashboardDomain (a name and an ACM "
                "certificate) the distribution requires TLS 1.2 or later (TLSv1.2_2021)",
            )
        return distribution

    # --- who may read --------------------------------------------------------------------

    def _user_pool(
        self, settings: Settings, store: StateStore, config: DashboardConfig
    ) -> tuple[cognito.UserPool, cognito.UserPoolDomain]:
        users = cognito.UserPool(
            self,
            "Users",
            user_pool_name=f"{settings.stack_name}-dashboard",
            self_sign_up_enabled=False,
            sign_in_aliases=cognito.SignInAliases(email=True),
            auto_verify=cognito.AutoVerifiedAttrs(email=True),
            standard_attributes=cognito.StandardAttributes(
                email=cognito.StandardAttribute(required=True, mutable=True)
            ),
            password_policy=cognito.PasswordPolicy(
                min_length=12,
                require_lowercase=True,
                require_uppercase=True,
                require_digits=True,
                require_symbols=True,
                temp_password_validity=Duration.days(3),
            ),
            mfa=cognito.Mfa.REQUIRED,
            mfa_second_factor=cognito.MfaSecondFactor(sms=False, otp=True),
            account_recovery=cognito.AccountRecovery.EMAIL_ONLY,
            feature_plan=cognito.FeaturePlan.PLUS,
            standard_threat_protection_mode=cognito.StandardThreatProtectionMode.FULL_FUNCTION,
            deletion_protection=settings.retain_data,
            removal_policy=store.removal,
        )
        stack_part = _slug(settings.stack_name)[:24]
        if config.sign_in_prefix is None and _reserved(stack_part):
            raise SettingsError(
                f"the stack's name {settings.stack_name!r} makes a sign-in domain Cognito "
                f"refuses (no {', '.join(RESERVED_WORDS)} in it): set "
                f"{CONTEXT_PREFIX}dashboardSignInPrefix"
            )
        # a domain prefix is unique per region across all accounts: the stack's own id makes it so
        prefix = config.sign_in_prefix or Fn.join(
            "-",
            [
                stack_part,
                Fn.select(2, Fn.split("/", Aws.STACK_ID)),
            ],
        )
        sign_in = users.add_domain(
            "SignIn",
            cognito_domain=cognito.CognitoDomainOptions(domain_prefix=prefix),
            managed_login_version=cognito.ManagedLoginVersion.CLASSIC_HOSTED_UI,
        )
        return users, sign_in

    def _client(self, site: str) -> cognito.UserPoolClient:
        """The web app: a public client (no secret: a browser could not keep one) that gets
        tokens with the authorization code and PKCE, back at the app's callback page."""
        return self.users.add_client(
            "WebApp",
            generate_secret=False,
            auth_flows=cognito.AuthFlow(user_srp=True),
            o_auth=cognito.OAuthSettings(
                flows=cognito.OAuthFlows(authorization_code_grant=True),
                scopes=list(SCOPES),
                callback_urls=[f"https://{site}{CALLBACK_PATH}"],
                logout_urls=[f"https://{site}{SIGN_OUT_PATH}"],
            ),
            supported_identity_providers=[cognito.UserPoolClientIdentityProvider.COGNITO],
            prevent_user_existence_errors=True,
            enable_token_revocation=True,
            id_token_validity=Duration.hours(1),
            access_token_validity=Duration.hours(1),
            refresh_token_validity=Duration.hours(12),
        )

    # --- the data API ----------------------------------------------------------------------

    def _data_api(
        self,
        settings: Settings,
        store: StateStore,
        functions: Functions,
        api: Api,
        machines: Sequence[str],
    ) -> lambda_.Function:
        stack = Stack.of(self)
        roles = ApprovalConfig.from_node(self.node, settings).roles_json
        environment = data_api_environment(stack, store, functions)
        function = functions.function(
            DASHBOARD_API_FUNCTION,
            environment={**environment, ROLES_ENV: roles} if roles else environment,
            scope=self,
        )
        grant_data_api(
            function, settings=settings, store=store, functions=functions, machines=machines
        )
        authorizer = apigw.CfnAuthorizer(
            self,
            "Authorizer",
            api_id=api.http_api.ref,
            name="dashboard-users",
            authorizer_type="JWT",
            identity_source=["$request.header.Authorization"],
            jwt_configuration=apigw.CfnAuthorizer.JWTConfigurationProperty(
                # ID tokens of the web app's client: `aud` is the client's id
                audience=[self.client.user_pool_client_id],
                issuer=self.users.user_pool_provider_url,
            ),
        )
        integration = apigw.CfnIntegration(
            self,
            "Integration",
            api_id=api.http_api.ref,
            integration_type="AWS_PROXY",
            integration_uri=function.function_arn,
            payload_format_version="2.0",
        )
        lambda_.CfnPermission(
            self,
            "Invoke",
            action="lambda:InvokeFunction",
            function_name=function.function_arn,
            principal="apigateway.amazonaws.com",
            source_arn=(
                f"arn:{stack.partition}:execute-api:{stack.region}:{stack.account}:"
                f"{api.http_api.ref}/*/*/api/dashboard/*"
            ),
        )
        self.routes: dict[str, apigw.CfnRoute] = {}
        for index, route_key in enumerate(DATA_ROUTES):
            self.routes[route_key] = apigw.CfnRoute(
                self,
                f"Route{index}",
                api_id=api.http_api.ref,
                route_key=route_key,
                target=f"integrations/{integration.ref}",
                authorization_type="JWT",
                authorizer_id=authorizer.ref,
            )
        return function

    # --- the built app -----------------------------------------------------------------------

    def _deploy(self, dist: Path, settings: Settings, store: StateStore) -> None:
        """Hashed assets kept for good (a page still open on the last version loads its lazy
        chunks after a deploy); the pages and `config.json` replaced, revalidated on each load.

        CDK's BucketDeployment copies them with a function of its own; its role here is ours,
        with exactly what the copy does (`aws s3 cp` of the staged zips, `aws s3 sync` into
        `ui/`), and closed to the wider grants BucketDeployment would add."""
        role = iam.Role(
            self,
            "DeployRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="switchyard dashboard: copies the built web app into its bucket",
        )
        log_group = store.log_group("DeployLogs", settings, scope=self)
        web_app = s3_assets.Asset(self, "WebApp", path=str(dist))
        staged = web_app.bucket.arn_for_objects("*")
        pages = self.bucket.arn_for_objects(f"{PAGES}/*")
        for actions, resources in (
            (["logs:CreateLogStream", "logs:PutLogEvents"], [f"{log_group.log_group_arn}:*"]),
            (["s3:GetObject"], [staged]),
            (["s3:ListBucket"], [self.bucket.bucket_arn]),
            (["s3:PutObject", "s3:DeleteObject"], [pages]),
        ):
            role.add_to_policy(iam.PolicyStatement(actions=actions, resources=resources))
        acknowledge(role, f"IAM5[Resource::{token(log_group)}:*]", LOG_STREAMS)
        acknowledge_resource(
            role,
            staged,
            "GetObject only, on CDK's staged assets of this account and region: the built app's "
            "zip and config.json's are named by hashes known at deploy time",
        )
        acknowledge_resource(
            role,
            pages,
            "PutObject and DeleteObject on the app's own prefix of the dashboard's site bucket: "
            "the built app's files, replaced on each deploy",
        )
        source = s3_deployment.Source.bucket(web_app.bucket, web_app.s3_object_key)
        config = s3_deployment.Source.json_data(
            "config.json",
            {
                "auth": {
                    "kind": "cognito",
                    "domain": self.sign_in.base_url(),
                    "clientId": self.client.user_pool_client_id,
                    "scopes": " ".join(scope.scope_name for scope in SCOPES),
                    "callbackPath": CALLBACK_PATH,
                    "signOutPath": SIGN_OUT_PATH,
                },
                "live": {"mode": "poll", "everySeconds": POLL_SECONDS},
                # the builder edits workflow files through `switchyard dev`'s REST API
                "builder": False,
            },
        )
        common: dict[str, Any] = {
            "destination_bucket": self.bucket,
            "destination_key_prefix": f"{PAGES}/",
            "role": role.without_policy_updates(),
            "log_group": log_group,
            "memory_limit": 256,
        }
        assets = s3_deployment.BucketDeployment(
            self,
            "DeployAssets",
            sources=[source],
            exclude=["*"],
            include=["assets/*"],
            prune=False,
            cache_control=[s3_deployment.CacheControl.from_string(IMMUTABLE)],
            **common,
        )
        s3_deployment.BucketDeployment(
            self,
            "DeployPages",
            sources=[source, config],
            exclude=["assets/*"],
            prune=True,
            cache_control=[s3_deployment.CacheControl.no_cache()],
            **common,
        ).node.add_dependency(assets)
        for child in Stack.of(self).node.children:
            if child.node.id.startswith("Custom::CDKBucketDeployment"):
                acknowledge(
                    child,
                    "L1",
                    "CDK's BucketDeployment function: aws-cdk-lib chooses its Python runtime "
                    "with the awscli layer it bundles; it runs only during deploys",
                )


def add_dashboard(
    scope: Construct,
    *,
    settings: Settings,
    store: StateStore,
    functions: Functions,
    api: Api,
    machines: Sequence[str],
) -> Dashboard | None:
    """The dashboard, unless the context leaves it out (`switchyard:dashboard=false`)."""
    config = DashboardConfig.from_node(scope.node)
    if not config.enabled:
        return None
    return Dashboard(
        scope, "Dashboard", settings=settings, store=store, functions=functions, api=api,
        machines=machines, config=config,
    )  # fmt: skip


def _reserved(prefix: str) -> bool:
    return any(word in prefix for word in RESERVED_WORDS)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "switchyard"
