"""Signed deliveries: the signature covers timestamp, delivery id and body, within a window."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from switchyard.triggers import (
    REPLAY_WINDOW_SECONDS,
    RefusedDelivery,
    VerifiedDelivery,
    sign_delivery,
    verify_delivery,
)

SECRET = b"s3cret"
BODY = b'{"ticket": {"id": "T-1"}}'
NOW = 1_800_000_000


def headers(
    *, delivery: str = "d-1", timestamp: int = NOW, body: bytes = BODY, secret: bytes = SECRET
) -> dict[str, str]:
    return {
        "x-switchyard-delivery": delivery,
        "x-switchyard-timestamp": str(timestamp),
        "x-switchyard-signature": sign_delivery(
            secret, timestamp=timestamp, delivery_id=delivery, body=body
        ),
    }


def verify(given: dict[str, str], body: bytes = BODY, now: float = NOW) -> object:
    return verify_delivery(given, body, SECRET, now=lambda: now)


def test_the_documented_format_is_what_is_signed() -> None:
    mac = hmac.new(SECRET, f"{NOW}.d-1.".encode() + BODY, hashlib.sha256).hexdigest()
    assert headers()["x-switchyard-signature"] == f"sha256={mac}"
    assert verify(headers()) == VerifiedDelivery(delivery_id="d-1", timestamp=NOW)


def test_upper_case_hex_and_prefix_are_accepted() -> None:
    given = headers()
    given["x-switchyard-signature"] = given["x-switchyard-signature"].upper()
    assert isinstance(verify(given), VerifiedDelivery)


def test_a_replay_with_a_new_delivery_id_does_not_verify() -> None:
    captured = headers(delivery="d-1")
    replayed = {**captured, "x-switchyard-delivery": "d-2"}
    refused = verify(replayed)
    assert isinstance(refused, RefusedDelivery) and refused.reason == "mismatch"


def test_a_new_timestamp_on_a_captured_signature_does_not_verify() -> None:
    replayed = {**headers(), "x-switchyard-timestamp": str(NOW + 10)}
    refused = verify(replayed, now=NOW + 10)
    assert isinstance(refused, RefusedDelivery) and refused.reason == "mismatch"


@pytest.mark.parametrize("skew", [REPLAY_WINDOW_SECONDS + 1, -(REPLAY_WINDOW_SECONDS + 1)])
def test_a_timestamp_outside_the_window_is_stale(skew: int) -> None:
    refused = verify(headers(), now=NOW + skew)
    assert isinstance(refused, RefusedDelivery) and refused.reason == "stale"
    assert "300 s" in refused.message


@pytest.mark.parametrize("skew", [REPLAY_WINDOW_SECONDS, -REPLAY_WINDOW_SECONDS])
def test_a_timestamp_at_the_edge_of_the_window_verifies(skew: int) -> None:
    assert isinstance(verify(headers(), now=NOW + skew), VerifiedDelivery)


def test_another_body_or_key_does_not_verify() -> None:
    assert isinstance(verify(headers(), body=BODY + b" "), RefusedDelivery)
    assert isinstance(verify(headers(secret=b"other")), RefusedDelivery)


@pytest.mark.parametrize(
    "header", ["x-switchyard-delivery", "x-switchyard-timestamp", "x-switchyard-signature"]
)
def test_a_missing_header_is_named(header: str) -> None:
    given = headers()
    del given[header]
    refused = verify(given)
    assert isinstance(refused, RefusedDelivery) and refused.reason == "missing"
    assert header.title() in refused.message


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("x-switchyard-delivery", "d 1"),
        ("x-switchyard-delivery", "d" * 129),
        ("x-switchyard-timestamp", "1.5"),
        ("x-switchyard-timestamp", "-3"),
        ("x-switchyard-signature", "sha1=" + "0" * 40),
        ("x-switchyard-signature", "sha256=zz"),
        ("x-switchyard-signature", "ü" * 64),
    ],
)
def test_a_garbled_header_is_malformed(header: str, value: str) -> None:
    refused = verify({**headers(), header: value})
    assert isinstance(refused, RefusedDelivery) and refused.reason == "malformed"
    assert value not in refused.message


def test_a_refusal_never_shows_the_expected_signature() -> None:
    good = headers()["x-switchyard-signature"]
    refused = verify({**headers(), "x-switchyard-signature": "sha256=" + "0" * 64})
    assert isinstance(refused, RefusedDelivery)
    assert good.removeprefix("sha256=") not in refused.message
