"""The compiler: a validated workflow becomes an AWS Step Functions state machine."""

from switchyard.compile.compiler import CompileResult, compile_workflow

__all__ = ["CompileResult", "compile_workflow"]
