"""State: the network, Aurora PostgreSQL Serverless v2, DynamoDB tables, the output bucket, one key.

Everything that holds user data at rest is encrypted with one customer-managed KMS key (rotated
yearly): the cluster's storage and its secret, both tables, the bucket, the log groups. Queues use
SQS-managed encryption instead, so that EventBridge, Scheduler and Pipes can deliver to them
without grants on the key (docs/deploy.md).
"""

from __future__ import annotations

import hashlib

from aws_cdk import CustomResource, Duration, RemovalPolicy, Stack
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_rds as rds
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra.config import Settings
from infra.nag import acknowledge
from infra.names import database_cluster_identifier
from switchyard.constants import (
    BUDGET_KEY_ATTRIBUTE,
    BUDGET_TTL_ATTRIBUTE,
    DATABASE_NAME,
    DATABASE_USER,
    IDEMPOTENCY_KEY_ATTRIBUTE,
    IDEMPOTENCY_TTL_ATTRIBUTE,
)

DATABASE_PORT = 5432
OUTPUT_EXPIRY_DAYS = 90
"""Large outputs outlive their run's state only for history views; a paused run is expected to be
resumed (or cancelled) well within this."""


_RETENTION = {
    1: logs.RetentionDays.ONE_DAY,
    3: logs.RetentionDays.THREE_DAYS,
    5: logs.RetentionDays.FIVE_DAYS,
    7: logs.RetentionDays.ONE_WEEK,
    14: logs.RetentionDays.TWO_WEEKS,
    30: logs.RetentionDays.ONE_MONTH,
    60: logs.RetentionDays.TWO_MONTHS,
    90: logs.RetentionDays.THREE_MONTHS,
    180: logs.RetentionDays.SIX_MONTHS,
    365: logs.RetentionDays.ONE_YEAR,
    400: logs.RetentionDays.THIRTEEN_MONTHS,
    545: logs.RetentionDays.EIGHTEEN_MONTHS,
    731: logs.RetentionDays.TWO_YEARS,
}


def retention(days: int) -> logs.RetentionDays:
    if days not in _RETENTION:
        raise ValueError(f"log retention of {days} days: use one of {sorted(_RETENTION)}")
    return _RETENTION[days]


class StateStore(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, settings: Settings) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.removal = RemovalPolicy.RETAIN if settings.retain_data else RemovalPolicy.DESTROY

        self.key = kms.Key(
            self,
            "DataKey",
            description="switchyard: data at rest (Aurora, secrets, tables, outputs, logs)",
            enable_key_rotation=True,
            removal_policy=self.removal,
        )
        # CloudWatch Logs encrypts log groups with the key on its own behalf.
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
                actions=[
                    "kms:Encrypt",
                    "kms:Decrypt",
                    "kms:ReEncryptFrom",
                    "kms:ReEncryptTo",
                    "kms:GenerateDataKey",
                    "kms:GenerateDataKeyWithoutPlaintext",
                    "kms:DescribeKey",
                ],
                resources=["*"],  # in a key policy, "*" is this key
                conditions={
                    "ArnLike": {
                        "kms:EncryptionContext:aws:logs:arn": (
                            f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:*"
                        )
                    }
                },
            )
        )

        flow_logs = self.log_group("VpcFlowLogs", settings)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=settings.nat_gateways,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC),
                ec2.SubnetConfiguration(
                    name="functions",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=22,
                ),
                ec2.SubnetConfiguration(
                    name="database", subnet_type=ec2.SubnetType.PRIVATE_ISOLATED
                ),
            ],
            gateway_endpoints={
                # Free: S3 and DynamoDB traffic of VPC functions skips the NAT's per-GB charge.
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3),
                "DynamoDB": ec2.GatewayVpcEndpointOptions(
                    service=ec2.GatewayVpcEndpointAwsService.DYNAMODB
                ),
            },
            flow_logs={
                "all": ec2.FlowLogOptions(
                    destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
                    traffic_type=ec2.FlowLogTrafficType.REJECT,
                )
            },
        )
        self.function_security_group = ec2.SecurityGroup(
            self,
            "FunctionSecurityGroup",
            vpc=self.vpc,
            description="switchyard functions in the VPC (database clients)",
            allow_all_outbound=True,
        )
        database_security_group = ec2.SecurityGroup(
            self,
            "DatabaseSecurityGroup",
            vpc=self.vpc,
            description="switchyard Aurora cluster: PostgreSQL from the functions only",
            allow_all_outbound=False,
        )
        database_security_group.add_ingress_rule(
            self.function_security_group,
            ec2.Port.tcp(DATABASE_PORT),
            "PostgreSQL from switchyard functions",
        )

        # The cluster's PostgreSQL log group, made here with retention and the key (CDK's own
        # retention setting would add a custom-resource function just to set it).
        cluster_identifier = database_cluster_identifier(settings)
        cluster_logs = self.log_group(
            "DatabaseLogs", settings, name=f"/aws/rds/cluster/{cluster_identifier}/postgresql"
        )
        self.cluster = rds.DatabaseCluster(
            self,
            "Database",
            engine=rds.DatabaseClusterEngine.aurora_postgres(
                version=rds.AuroraPostgresEngineVersion.VER_17_5
            ),
            writer=rds.ClusterInstance.serverless_v2(
                "writer", publicly_accessible=False, auto_minor_version_upgrade=True
            ),
            serverless_v2_min_capacity=settings.db_min_capacity,
            serverless_v2_max_capacity=settings.db_max_capacity,
            serverless_v2_auto_pause_duration=(
                Duration.minutes(settings.db_auto_pause_minutes)
                if settings.db_min_capacity == 0
                else None
            ),
            credentials=rds.Credentials.from_generated_secret(
                DATABASE_USER, encryption_key=self.key
            ),
            default_database_name=DATABASE_NAME,
            port=DATABASE_PORT,
            storage_encrypted=True,
            storage_encryption_key=self.key,
            iam_authentication=True,
            vpc=self.vpc,
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_ISOLATED),
            security_groups=[database_security_group],
            backup=rds.BackupProps(retention=Duration.days(7)),
            cluster_identifier=cluster_identifier,
            cloudwatch_logs_exports=["postgresql"],
            deletion_protection=settings.retain_data,
            removal_policy=RemovalPolicy.SNAPSHOT
            if settings.retain_data
            else RemovalPolicy.DESTROY,
        )
        self.cluster.node.add_dependency(cluster_logs)
        assert self.cluster.secret is not None
        self.database_secret = self.cluster.secret
        self.cluster.add_rotation_single_user(
            automatically_after=Duration.days(30),
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
        )

        self.idempotency_table = self._table(
            "IdempotencyTable", IDEMPOTENCY_KEY_ATTRIBUTE, ttl=IDEMPOTENCY_TTL_ATTRIBUTE
        )
        # Budget items expire BUDGET_RETENTION_DAYS after their last write (the ledger sets it).
        self.budget_table = self._table(
            "BudgetTable", BUDGET_KEY_ATTRIBUTE, ttl=BUDGET_TTL_ATTRIBUTE
        )
        self.output_bucket = s3.Bucket(
            self,
            "OutputBucket",
            encryption=s3.BucketEncryption.KMS,
            encryption_key=self.key,
            bucket_key_enabled=True,
            enforce_ssl=True,
            minimum_tls_version=1.2,
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-step-outputs",
                    expiration=Duration.days(OUTPUT_EXPIRY_DAYS),
                    abort_incomplete_multipart_upload_after=Duration.days(1),
                )
            ],
            removal_policy=self.removal,
        )
        acknowledge(
            self.output_bucket,
            "S1",
            "only the platform's functions read and write this bucket, through IAM roles scoped "
            "to GetObject/PutObject; object-level access is auditable with CloudTrail data events, "
            "and an access-log bucket would itself need this exemption",
        )

    def _table(self, table_id: str, key: str, *, ttl: str | None = None) -> dynamodb.Table:
        """A DynamoDB table keyed by `key`: on demand, encrypted with the key, PITR on."""
        return dynamodb.Table(
            self,
            table_id,
            partition_key=dynamodb.Attribute(name=key, type=dynamodb.AttributeType.STRING),
            time_to_live_attribute=ttl,
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            encryption=dynamodb.TableEncryption.CUSTOMER_MANAGED,
            encryption_key=self.key,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            removal_policy=self.removal,
        )

    def log_group(
        self,
        construct_id: str,
        settings: Settings,
        name: str | None = None,
        *,
        scope: Construct | None = None,
    ) -> logs.LogGroup:
        """A log group encrypted with the data key, kept for the configured number of days; in
        `scope` (a workflow's nested stack), else beside the platform's state."""
        return logs.LogGroup(
            scope or self,
            construct_id,
            log_group_name=name,
            retention=retention(settings.log_retention_days),
            encryption_key=self.key,
            removal_policy=self.removal,
        )


def migrations_hash(settings: Settings) -> str:
    """Content hash of the migration files: a deploy that changes it re-runs the migrations."""
    digest = hashlib.sha256()
    folder = settings.root / "layers" / "switchyard" / "stores" / "migrations"
    for path in sorted(folder.glob("*.sql")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def schema_migrations(
    scope: Construct, *, settings: Settings, function: lambda_.IFunction, store: StateStore
) -> CustomResource:
    """Apply the library's migrations on deploy (functions/migrate, a custom resource)."""
    resource = CustomResource(
        scope,
        "SchemaMigrations",
        service_token=function.function_arn,
        resource_type="Custom::SwitchyardSchemaMigrations",
        properties={"MigrationsHash": migrations_hash(settings)},
    )
    resource.node.add_dependency(store.cluster)
    return resource
