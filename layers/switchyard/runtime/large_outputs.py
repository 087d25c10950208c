"""Outputs over 32 KB travel as references to an output store, and are resolved when read.

Step Functions carries at most 256 KB of state, and a run's state holds every step's output; so a
step whose output is larger than `LARGE_OUTPUT_BYTES` as JSON stores the largest parts of it in S3
(AWS) or PostgreSQL (one machine) and returns `{"$switchyard_ref": {"store", "key", "bytes"}}` in
their place. Small fields stay inline, so a Choice rule on `steps.classify.output.label` still works
when `steps.classify.output.text` was offloaded. Keys are content hashes: a retried step that
produces the same output writes the same key.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

from psycopg_pool import ConnectionPool

from switchyard.contract import LARGE_OUTPUT_BYTES, OUTPUT_REF_KEY


class OutputStore(Protocol):
    """Where large values go; `name` is written into each reference."""

    name: str

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def get_start(self, key: str, limit: int) -> tuple[bytes, int]:
        """The first `limit` bytes of a value and its full size, without reading the rest (a
        page shows the start of a large value)."""
        ...


class OutputNotFoundError(KeyError):
    """A reference whose value is not in the store (expired, or another store's)."""


class InMemoryOutputStore:
    """For tests and single-process use."""

    name = "memory"

    def __init__(self) -> None:
        self._data: dict[str, bytes] = {}
        self._lock = threading.Lock()

    def put(self, key: str, data: bytes) -> None:
        with self._lock:
            self._data[key] = data

    def get(self, key: str) -> bytes:
        with self._lock:
            try:
                return self._data[key]
            except KeyError:
                raise OutputNotFoundError(key) from None

    def get_start(self, key: str, limit: int) -> tuple[bytes, int]:
        data = self.get(key)
        return data[:limit], len(data)


class S3OutputStore:
    """S3 bucket (AWS); give it a bucket lifecycle rule to expire old run outputs."""

    name = "s3"

    def __init__(self, bucket: str, *, client: Any = None, prefix: str = "") -> None:
        if client is None:
            import boto3  # type: ignore[import-untyped]

            client = boto3.client("s3")
        self.bucket = bucket
        self.prefix = prefix
        self._client = client

    def put(self, key: str, data: bytes) -> None:
        self._client.put_object(
            Bucket=self.bucket, Key=self.prefix + key, Body=data, ContentType="application/json"
        )

    def get(self, key: str) -> bytes:
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self.prefix + key)
        except self._client.exceptions.NoSuchKey:
            raise OutputNotFoundError(key) from None
        body: bytes = response["Body"].read()
        return body

    def get_start(self, key: str, limit: int) -> tuple[bytes, int]:
        """A ranged GET: at most `limit` bytes cross the network; the size is the object's."""
        try:
            response = self._client.get_object(
                Bucket=self.bucket, Key=self.prefix + key, Range=f"bytes=0-{max(limit, 1) - 1}"
            )
        except self._client.exceptions.NoSuchKey:
            raise OutputNotFoundError(key) from None
        except self._client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "InvalidRange":  # an empty object
                return b"", 0
            raise
        body: bytes = response["Body"].read()
        total = str(response.get("ContentRange") or "").rpartition("/")[2]
        return body[:limit], int(total) if total.isdigit() else len(body)


class PostgresOutputStore:
    """Table `output_blobs` (migration 0001)."""

    name = "postgres"

    def __init__(self, pool: ConnectionPool) -> None:
        self._pool = pool

    def put(self, key: str, data: bytes) -> None:
        with self._pool.connection() as conn:
            conn.execute(
                "INSERT INTO output_blobs (key, body) VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                (key, data),
            )

    def get(self, key: str) -> bytes:
        with self._pool.connection() as conn:
            row = conn.execute("SELECT body FROM output_blobs WHERE key = %s", (key,)).fetchone()
        if row is None:
            raise OutputNotFoundError(key)
        return bytes(row[0])

    def get_start(self, key: str, limit: int) -> tuple[bytes, int]:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT substring(body FROM 1 FOR %s), octet_length(body) FROM output_blobs"
                " WHERE key = %s",
                (limit, key),
            ).fetchone()
        if row is None:
            raise OutputNotFoundError(key)
        return bytes(row[0]), int(row[1])


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def json_size(value: Any) -> int:
    """Size of `value` as compact UTF-8 JSON, the measure Step Functions applies."""
    return len(_dumps(value))


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and len(value) == 1 and OUTPUT_REF_KEY in value


_Path = tuple[str | int, ...]


def _nodes(value: Any, path: _Path = ()) -> Iterator[tuple[_Path, Any]]:
    """Every node below the root (containers before their children); refs are leaves."""
    if is_ref(value):
        return
    children: Iterator[tuple[str | int, Any]]
    if isinstance(value, dict):
        children = iter(value.items())
    elif isinstance(value, list):
        children = iter(enumerate(value))
    else:
        return
    for key, child in children:
        yield (*path, key), child
        yield from _nodes(child, (*path, key))


def _replace(root: Any, path: _Path, new: Any) -> Any:
    if not path:
        return new
    parent = root
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = new
    return root


def offload(
    output: Any,
    store: OutputStore,
    key_prefix: str,
    *,
    limit: int = LARGE_OUTPUT_BYTES,
) -> Any:
    """`output` with its largest parts moved to `store` until it is at most `limit` bytes as JSON.

    Each round replaces the smallest single value whose removal alone brings the output under the
    limit (so neighbouring small fields stay inline); when no single value is enough, it replaces
    the largest top-most value and tries again. A scalar output that is too large is replaced whole.
    """
    total = json_size(output)
    if total <= limit:
        return output
    result: Any = json.loads(_dumps(output))  # a private copy we may edit in place
    while total > limit:
        excess = total - limit
        best: tuple[_Path, int] | None = None
        largest: tuple[_Path, int] | None = None
        for path, node in _nodes(result):
            size = json_size(node)
            saving = size - _REF_OVERHEAD
            if saving <= 0:
                continue
            if saving >= excess and (best is None or size < best[1]):
                best = (path, size)
            if largest is None or size > largest[1]:
                largest = (path, size)
        chosen = best or largest
        path = chosen[0] if chosen is not None else ()
        node = result
        for part in path:
            node = node[part]
        result = _replace(result, path, _store(node, store, key_prefix))
        if not path:
            break
        total = json_size(result)
    return result


_REF_OVERHEAD = 140
"""Roughly the JSON size of a reference; offloading anything smaller gains nothing."""


def _store(value: Any, store: OutputStore, key_prefix: str) -> dict[str, Any]:
    data = _dumps(value)
    digest = hashlib.sha256(data).hexdigest()[:32]
    key = f"{key_prefix.rstrip('/')}/{digest}.json" if key_prefix else f"{digest}.json"
    store.put(key, data)
    return {OUTPUT_REF_KEY: {"store": store.name, "key": key, "bytes": len(data)}}


def resolve(value: Any, store: OutputStore) -> Any:
    """`value` with every reference replaced by what it points to, recursively."""
    return resolve_in({store.name: store}, value)


def resolve_in(stores: Mapping[str, OutputStore], value: Any) -> Any:
    """`value` with every reference replaced by what it points to, each read from the store its
    reference names (`s3`, `postgres`)."""
    if is_ref(value):
        ref = value[OUTPUT_REF_KEY]
        store = stores.get(str(ref.get("store")))
        if store is None:
            readable = ", ".join(repr(name) for name in stores) or "none"
            raise OutputNotFoundError(
                f"reference to store {ref.get('store')!r} cannot be read here (stores: {readable})"
            )
        return resolve_in(stores, json.loads(store.get(str(ref["key"]))))
    if isinstance(value, dict):
        return {key: resolve_in(stores, item) for key, item in value.items()}
    if isinstance(value, list):
        return [resolve_in(stores, item) for item in value]
    return value


def lazy_resolver(stores: Callable[[], Mapping[str, OutputStore]]) -> Callable[[Any], Any]:
    """A resolver that asks for the stores only when a value holds a reference: a function
    whose context holds none (most renders and gates) reaches no store and no network."""

    def resolver(value: Any) -> Any:
        return resolve_in(stores(), value) if contains_ref(value) else value

    return resolver


def contains_ref(value: Any) -> bool:
    if is_ref(value):
        return True
    if isinstance(value, dict):
        return any(contains_ref(v) for v in value.values())
    if isinstance(value, list):
        return any(contains_ref(v) for v in value)
    return False
