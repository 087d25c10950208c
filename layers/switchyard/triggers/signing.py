"""Signed webhook deliveries: one verification for every route that accepts them.

A sender signs each delivery with the webhook's secret over its timestamp, its delivery id and its
raw body, and sends three headers:

    X-Switchyard-Delivery:  <id unique per event: 1-128 letters, digits, . _ : ->
    X-Switchyard-Timestamp: <Unix time in whole seconds when it was signed>
    X-Switchyard-Signature: sha256=<hex of HMAC-SHA256(secret, "<timestamp>.<delivery>.<body>")>

A delivery is accepted only when the signature matches and the timestamp is within
`REPLAY_WINDOW_SECONDS` of the receiver's clock. The delivery id names the run it starts, and it is
signed: a captured request replayed within the window has the same id and starts nothing more; a
replay with another id does not match its signature; and a replay after the window is refused.

`verify_delivery` is the only check (the AWS webhook function and the local server's webhook
route call it); `sign_delivery` is what a sender computes.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

DELIVERY_HEADER = "x-switchyard-delivery"
TIMESTAMP_HEADER = "x-switchyard-timestamp"
SIGNATURE_HEADER = "x-switchyard-signature"
"""The three headers a delivery carries (HTTP header names are case-insensitive)."""

SIGNATURE_PREFIX = "sha256="
REPLAY_WINDOW_SECONDS = 300
"""How far a delivery's timestamp may be from the receiver's clock, either way."""

_DELIVERY_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_HEX_DIGEST = re.compile(r"[0-9a-f]{64}")

RefusalReason = Literal["missing", "malformed", "stale", "mismatch"]


@dataclass(frozen=True, slots=True)
class VerifiedDelivery:
    """A delivery whose signature matched within the window."""

    delivery_id: str
    timestamp: int


@dataclass(frozen=True, slots=True)
class RefusedDelivery:
    """Why a delivery was refused, in words a sender can act on (never the expected MAC)."""

    reason: RefusalReason
    message: str


def signed_payload(timestamp: int | str, delivery_id: str, body: bytes) -> bytes:
    """The bytes that are signed: `<timestamp>.<delivery>.<body>`."""
    return f"{timestamp}.{delivery_id}.".encode() + body


def sign_delivery(secret: bytes, *, timestamp: int, delivery_id: str, body: bytes) -> str:
    """The `X-Switchyard-Signature` value a sender sends: `sha256=<hex>`."""
    digest = hmac.new(secret, signed_payload(timestamp, delivery_id, body), hashlib.sha256)
    return SIGNATURE_PREFIX + digest.hexdigest()


def verify_delivery(
    headers: Mapping[str, str],
    body: bytes,
    secret: bytes,
    *,
    now: Callable[[], float] = time.time,
    window_seconds: int = REPLAY_WINDOW_SECONDS,
) -> VerifiedDelivery | RefusedDelivery:
    """Check a delivery's three headers (`headers` keyed by lower-case name) against `body`."""
    delivery = headers.get(DELIVERY_HEADER, "").strip()
    stamp = headers.get(TIMESTAMP_HEADER, "").strip()
    signature = headers.get(SIGNATURE_HEADER, "").strip()
    missing = [
        name
        for name, value in (
            ("X-Switchyard-Delivery", delivery),
            ("X-Switchyard-Timestamp", stamp),
            ("X-Switchyard-Signature", signature),
        )
        if not value
    ]
    if missing:
        return RefusedDelivery("missing", f"missing header {', '.join(missing)}")
    if not _DELIVERY_ID.fullmatch(delivery):
        return RefusedDelivery(
            "malformed",
            "X-Switchyard-Delivery must be 1-128 letters, digits or . _ : -",
        )
    if not _TIMESTAMP.fullmatch(stamp):
        return RefusedDelivery(
            "malformed", "X-Switchyard-Timestamp must be Unix time in whole seconds"
        )
    scheme, _, hex_digest = signature.lower().partition("=")
    if f"{scheme}=" != SIGNATURE_PREFIX or not _HEX_DIGEST.fullmatch(hex_digest):
        return RefusedDelivery("malformed", "X-Switchyard-Signature must be sha256=<64 hex digits>")
    timestamp = int(stamp)
    if abs(now() - timestamp) > window_seconds:
        return RefusedDelivery(
            "stale",
            f"X-Switchyard-Timestamp is more than {window_seconds} s from the receiver's clock: "
            "sign each delivery when sending it",
        )
    expected = hmac.new(secret, signed_payload(stamp, delivery, body), hashlib.sha256)
    if not hmac.compare_digest(hex_digest.encode("ascii"), expected.hexdigest().encode("ascii")):
        return RefusedDelivery(
            "mismatch",
            'signature does not match HMAC-SHA256(secret, "<timestamp>.<delivery>.<body>")',
        )
    return VerifiedDelivery(delivery_id=delivery, timestamp=timestamp)
