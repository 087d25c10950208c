"""Signed approval links: `<public base>/approvals/<token>`.

A token is `<key id>.<claims>.<signature>`: the claims (base64url JSON: gate id, tier, person,
expiry) signed with HMAC-SHA256 under the key the id names, so keys rotate (every configured key
verifies, the first signs). It names the gate by its id and never holds the task token. It is
single-use because the gate is: the first decision closes the gate row (a conditional UPDATE), and
every later use of any link to it answers who decided.

Verification reads nothing but the token and the keys: a length and alphabet check, the key id,
the signature (constant-time), then the claims. Any failure is the same `LinkInvalidError`, so a
forger learns nothing from the answer.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

MAX_TOKEN_LENGTH = 600
_KEY_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
_TOKEN = re.compile(r"^([A-Za-z0-9_-]{1,32})\.([A-Za-z0-9_-]{8,500})\.([A-Za-z0-9_-]{43})$")


class LinkInvalidError(ValueError):
    """Not a link this server signed (forged, truncated, altered, or of a retired key)."""


class LinkExpiredError(ValueError):
    """A genuine link whose tier's time is over."""


@dataclass(frozen=True, slots=True)
class LinkClaims:
    gate_id: str
    tier: int
    person: str
    expires: int | None
    """Seconds since the epoch; None: the gate has no deadline."""

    def expired(self, now: datetime) -> bool:
        return self.expires is not None and now.timestamp() >= self.expires


class LinkSigner:
    def __init__(self, keys: Mapping[str, bytes]) -> None:
        if not keys:
            raise ValueError("approval links need at least one signing key")
        for key_id, key in keys.items():
            if not _KEY_ID.match(key_id):
                raise ValueError(f"signing key id {key_id!r}: letters, digits, - and _ only")
            if len(key) < 32:
                raise ValueError(f"signing key {key_id!r} is shorter than 32 bytes")
        self._keys = dict(keys)
        self.current = next(iter(self._keys))

    @classmethod
    def from_json(cls, text: str) -> LinkSigner:
        """`{"<key id>": "<secret>", ...}`, the signing key first."""
        try:
            data = json.loads(text)
        except ValueError:
            raise ValueError("the approval signing keys are not JSON") from None
        if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
            raise ValueError('the approval signing keys must be {"<key id>": "<secret>", ...}')
        return cls({key_id: secret.encode() for key_id, secret in data.items()})

    def sign(self, claims: LinkClaims) -> str:
        body = {"g": claims.gate_id, "t": claims.tier, "p": claims.person}
        if claims.expires is not None:
            body["x"] = claims.expires
        encoded = _b64(json.dumps(body, separators=(",", ":")).encode())
        signed = f"{self.current}.{encoded}"
        return f"{signed}.{_b64(self._mac(self.current, signed))}"

    def verify(self, token: str, now: datetime | None = None) -> LinkClaims:
        """The claims of a genuine, unexpired token; else LinkInvalidError or LinkExpiredError."""
        claims = self.claims(token)
        if claims.expired(now or datetime.now(UTC)):
            raise LinkExpiredError("this link's time is over")
        return claims

    def claims(self, token: str) -> LinkClaims:
        """The claims of a genuine token, expired or not."""
        if len(token) > MAX_TOKEN_LENGTH:
            raise LinkInvalidError("not a link")
        match = _TOKEN.match(token)
        if match is None:
            raise LinkInvalidError("not a link")
        key_id, encoded, signature = match.groups()
        if key_id not in self._keys:
            raise LinkInvalidError("not a link")
        expected = _b64(self._mac(key_id, f"{key_id}.{encoded}"))
        if not hmac.compare_digest(expected.encode(), signature.encode()):
            raise LinkInvalidError("not a link")
        try:  # signed by us: well formed, unless a key leaked
            body = json.loads(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
            expires = body.get("x")
            return LinkClaims(
                gate_id=_text(body["g"]),
                tier=_integer(body["t"]),
                person=_text(body["p"]),
                expires=None if expires is None else _integer(expires),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            raise LinkInvalidError("not a link") from None

    def _mac(self, key_id: str, message: str) -> bytes:
        return hmac.new(self._keys[key_id], message.encode(), hashlib.sha256).digest()


def new_key() -> str:
    """A fresh signing secret (256 bits)."""
    return secrets.token_urlsafe(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not text")
    return value


def _integer(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError("not an integer")
    return value
