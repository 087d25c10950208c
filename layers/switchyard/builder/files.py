"""The workflow files the builder reads and writes: only `<name>.yaml` / `<name>.yml` directly in
the server's workflows folder, a name the format allows (so never a path), at most
`MAX_SOURCE_BYTES`. A write names the version it was made from (its ETag, the SHA-256 of the
bytes read) and is refused when the file changed on disk since; the file is replaced atomically
(a temporary file beside it, renamed over it), so a reader never sees half a file."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

MAX_SOURCE_BYTES = 1024 * 1024
"""A workflow file is at most 1 MiB (Step Functions' own limit is on the compiled definition)."""
NAME = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
"""A workflow name, as `schema/workflow.schema.json` allows it."""
SUFFIXES = (".yaml", ".yml")


class SourceError(ValueError):
    """Why a file cannot be read or written; `code` is the API's error code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


def etag_of(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest() + '"'


@dataclass(frozen=True)
class Source:
    path: Path
    data: bytes

    @property
    def etag(self) -> str:
        return etag_of(self.data)


class WorkflowFiles:
    def __init__(self, directory: Path) -> None:
        self.directory = directory.resolve()
        self._lock = threading.Lock()

    def path_for(self, name: str) -> Path:
        """The file of workflow `name` (an existing `.yml` one, else `<name>.yaml`)."""
        if not NAME.fullmatch(name):
            raise SourceError(
                f"{name[:80]!r} is not a workflow name: lower-case letters, digits and '-',"
                " starting with a letter, at most 63 characters",
                "bad_workflow_name",
            )
        for suffix in SUFFIXES:
            candidate = self.directory / f"{name}{suffix}"
            if candidate.is_file():
                return candidate
        return self.directory / f"{name}.yaml"

    def read(self, name: str) -> Source:
        path = self.path_for(name)
        if not path.is_file():
            raise SourceError(
                f"there is no file {path.name} in the workflows folder; PUT creates it",
                "source_not_found",
            )
        if path.stat().st_size > MAX_SOURCE_BYTES:
            raise SourceError(f"{path.name} is larger than {MAX_SOURCE_BYTES} bytes", "too_large")
        return Source(path, path.read_bytes())

    def write(self, name: str, data: bytes, if_match: str | None) -> Source:
        """Write `data` as the file of `name`. `if_match`: the ETag it was loaded with (required
        when the file exists; `*` accepts any version); None creates a new file only."""
        if len(data) > MAX_SOURCE_BYTES:
            raise SourceError(f"the source is larger than {MAX_SOURCE_BYTES} bytes", "too_large")
        path = self.path_for(name)
        with self._lock:
            current = path.read_bytes() if path.is_file() else None
            if current is None and if_match not in (None, "*"):
                raise SourceError(
                    f"{path.name} was deleted since it was loaded; load it again", "source_changed"
                )
            if current is not None:
                if if_match is None:
                    raise SourceError(
                        f"{path.name} exists: send the ETag it was loaded with as If-Match",
                        "if_match_required",
                    )
                if if_match != "*" and if_match != etag_of(current):
                    raise SourceError(
                        f"{path.name} changed on disk since it was loaded; load it again and"
                        " redo the change",
                        "source_changed",
                    )
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=f".{name}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                if current is not None:
                    Path(temporary).chmod(path.stat().st_mode & 0o777)
                Path(temporary).replace(path)
            except BaseException:
                Path(temporary).unlink(missing_ok=True)
                raise
        return Source(path, data)
