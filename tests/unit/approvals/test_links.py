"""Signed approval links: what verifies and what does not."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

import pytest

from switchyard.approvals import LinkClaims, LinkExpiredError, LinkInvalidError, LinkSigner

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
KEY = b"k" * 32


def signer(**keys: bytes) -> LinkSigner:
    return LinkSigner(keys or {"k1": KEY})


def claims(expires: int | None = int(NOW.timestamp()) + 60) -> LinkClaims:
    return LinkClaims("gate-1", 0, "dana", expires)


def test_a_signed_link_verifies_to_its_claims() -> None:
    token = signer().sign(claims())
    assert signer().verify(token, NOW) == claims()


def test_the_link_does_not_carry_anything_but_the_claims() -> None:
    token = signer().sign(claims())
    body = token.split(".")[1]
    decoded = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    assert decoded == {"g": "gate-1", "t": 0, "p": "dana", "x": claims().expires}


def test_an_expired_link_is_refused_as_expired_not_invalid() -> None:
    token = signer().sign(claims(int(NOW.timestamp()) - 1))
    with pytest.raises(LinkExpiredError):
        signer().verify(token, NOW)


def test_a_link_without_deadline_does_not_expire() -> None:
    token = signer().sign(claims(None))
    assert signer().verify(token, datetime(2099, 1, 1, tzinfo=UTC)).expires is None


@pytest.mark.parametrize(
    "alter",
    [
        lambda t: t[:-1],  # truncated
        lambda t: t[:-2] + ("A" if t[-2] != "A" else "B") + t[-1],  # signature bit changed
        lambda t: t.replace(".", ".x", 1),  # claims changed
        lambda t: "k2" + t[2:],  # another key id
        lambda t: t + "=",
        lambda t: "",
        lambda t: "a" * 5000,
        lambda t: t.split(".")[0] + "." + t.split(".")[1] + "." + "A" * 43,
    ],
)
def test_an_altered_link_is_invalid(alter: object) -> None:
    token = signer().sign(claims())
    with pytest.raises(LinkInvalidError):
        signer().verify(alter(token), NOW)  # type: ignore[operator]


def test_claims_swapped_from_another_link_do_not_verify() -> None:
    one = signer().sign(claims()).split(".")
    other = signer().sign(LinkClaims("gate-2", 0, "lee", None)).split(".")
    with pytest.raises(LinkInvalidError):
        signer().verify(f"{one[0]}.{other[1]}.{one[2]}", NOW)


def test_keys_rotate_the_old_key_still_verifies_and_the_new_one_signs() -> None:
    old = signer(k1=KEY).sign(claims())
    rotated = signer(k2=b"n" * 32, k1=KEY)
    assert rotated.verify(old, NOW) == claims()
    assert rotated.sign(claims()).startswith("k2.")
    with pytest.raises(LinkInvalidError):  # a retired key verifies nothing
        signer(k2=b"n" * 32).verify(old, NOW)


def test_a_short_key_is_refused() -> None:
    with pytest.raises(ValueError, match="shorter than 32 bytes"):
        LinkSigner({"k1": b"short"})
