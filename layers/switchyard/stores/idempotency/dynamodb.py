"""Powertools' own DynamoDB persistence layer, with the table layout switchyard deploys."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

from switchyard.constants import IDEMPOTENCY_KEY_ATTRIBUTE, IDEMPOTENCY_TTL_ATTRIBUTE


def dynamodb_persistence_layer(table_name: str, *, client: Any = None) -> DynamoDBPersistenceLayer:
    """Powertools' layer on `table_name` (key `id`, TTL attribute `expiration`)."""
    return DynamoDBPersistenceLayer(
        table_name=table_name,
        key_attr=IDEMPOTENCY_KEY_ATTRIBUTE,
        expiry_attr=IDEMPOTENCY_TTL_ATTRIBUTE,
        boto3_client=client,
    )


def create_idempotency_table(client: Any, table_name: str) -> None:
    """Create the table (tests and local use; on AWS the CDK stack creates it, TTL on)."""
    client.create_table(
        TableName=table_name,
        KeySchema=[{"AttributeName": IDEMPOTENCY_KEY_ATTRIBUTE, "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": IDEMPOTENCY_KEY_ATTRIBUTE, "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    client.update_time_to_live(
        TableName=table_name,
        TimeToLiveSpecification={"Enabled": True, "AttributeName": IDEMPOTENCY_TTL_ATTRIBUTE},
    )
