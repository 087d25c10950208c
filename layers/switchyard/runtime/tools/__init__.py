"""Tools: built-ins, declared http/python/lambda tools, and the gateway all calls go through."""

from switchyard.runtime.tools.base import CallInfo, SecretResolver, Tool, ToolEnvironment
from switchyard.runtime.tools.gateway import (
    LOOP_LIMIT,
    CallScope,
    GatewayStores,
    ToolGateway,
    ToolRequest,
    call_id_for,
)
from switchyard.runtime.tools.registry import BUILTINS, ToolRegistry

__all__ = [
    "BUILTINS",
    "LOOP_LIMIT",
    "CallInfo",
    "CallScope",
    "GatewayStores",
    "SecretResolver",
    "Tool",
    "ToolEnvironment",
    "ToolGateway",
    "ToolRegistry",
    "ToolRequest",
    "call_id_for",
]
