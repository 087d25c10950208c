"""Step Functions' `StringMatches`, the one implementation: the condition language's `matches`
(evaluated by `conditions.evaluate`) and the engine's Choice rule must agree on every pattern.

`*` matches any run of characters (newlines included); `\\*` is a literal star and `\\\\` a
literal backslash; every other character stands for itself.
"""

from __future__ import annotations

import re
from functools import lru_cache


def string_matches(pattern: str, text: str) -> bool:
    return _compiled(pattern).fullmatch(text) is not None


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> re.Pattern[str]:
    parts: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "*\\":
            parts.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        parts.append(".*" if char == "*" else re.escape(char))
        i += 1
    return re.compile("".join(parts), re.DOTALL)
