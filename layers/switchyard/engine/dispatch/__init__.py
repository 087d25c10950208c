"""Running tasks: the function registry, a Lambda-like context, and the worker pool."""

from switchyard.engine.dispatch.lambda_context import LambdaContext
from switchyard.engine.dispatch.registry import FunctionRegistry, FunctionSpec
from switchyard.engine.dispatch.workers import Dispatcher, TaskOutcome

__all__ = ["Dispatcher", "FunctionRegistry", "FunctionSpec", "LambdaContext", "TaskOutcome"]
