"""One moto Step Functions context per test module (see moto_sfn.py)."""

from tests.unit.engine.asl.moto_sfn import moto_sfn

__all__ = ["moto_sfn"]
