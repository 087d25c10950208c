"""Stacks of the CDK app."""
