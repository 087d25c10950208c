"""switchyard's local engine: a durable interpreter of Amazon States Language (JSONPath mode).

`switchyard.engine.asl` holds the pure, in-memory evaluation primitives the interpreter builds on.
"""
