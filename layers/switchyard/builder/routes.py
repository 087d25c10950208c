"""The builder's endpoints on the REST app (`create_app(context, routers=[builder_router(dir)])`):

- `GET /workflows/{name}/source`: the file's bytes (`application/yaml`), its `ETag`;
- `PUT /workflows/{name}/source`: writes the body as the file; `If-Match: <ETag>` when it exists
  (409 `source_changed` when the file changed since it was loaded);
- `POST /workflows/{name}/install`: installs the saved file into the engine (the version rules);
- `POST /validate`: the body (the YAML source) through the validator: `ok`, `diagnostics`,
  `outputs` (each step's output schema);
- `POST /compile`: the same, and the compiled `definition` and the compiler's `notes`;
- `POST /builder/apply`: `{"source", "document"}`: the source edited to hold the document.

Every route needs the API token when the server has one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import Response
from pydantic import BaseModel

from switchyard.api.catalog import CatalogEntry
from switchyard.api.errors import ApiError, BadRequestError, ConflictError
from switchyard.api.messages import json_response
from switchyard.api.routing import Context, errors
from switchyard.builder.checks import MAX_VALUES, compile_source, expands_too_far, validate_source
from switchyard.builder.files import MAX_SOURCE_BYTES, SourceError, WorkflowFiles
from switchyard.builder.roundtrip import RoundTripError, apply_document
from switchyard.local.workflows import WorkflowFileError, install
from switchyard.validate import validate_file
from switchyard.validate.catalog import WorkflowCatalog

YAML_TYPE = "application/yaml"
_STATUS = {
    "bad_workflow_name": 400,
    "source_not_found": 404,
    "too_large": 413,
    "source_changed": 409,
    "if_match_required": 428,
}


_EXPANDS = (
    f"the source expands to more than {MAX_VALUES} values through its YAML aliases;"
    " write the values out or use fewer aliases"
)


class ApplyRequest(BaseModel):
    source: str = ""
    document: Any


def _error(exc: SourceError) -> ApiError:
    error = ApiError(str(exc), code=exc.code)
    error.status = _STATUS.get(exc.code, 400)
    return error


async def _source_body(request: Request) -> bytes:
    """The YAML source a request carries: its body, or `source` of a JSON body."""
    data = await request.body()
    if len(data) > MAX_SOURCE_BYTES:
        raise _error(
            SourceError(f"the source is larger than {MAX_SOURCE_BYTES} bytes", "too_large")
        )
    if request.headers.get("content-type", "").split(";")[0].strip() == "application/json":
        try:
            value = json.loads(data)
        except ValueError:
            raise BadRequestError("the body is not JSON; send the YAML source as text") from None
        if not isinstance(value, dict) or not isinstance(value.get("source"), str):
            raise BadRequestError('a JSON body is {"source": "<the YAML text>"}')
        return str(value["source"]).encode()
    return data


def builder_router(workflows_dir: Path) -> APIRouter:
    files = WorkflowFiles(workflows_dir)
    router = APIRouter(tags=["builder"])

    def catalog() -> WorkflowCatalog:
        return WorkflowCatalog.of_directory(files.directory)

    @router.get("/workflows/{name}/source", responses=errors(400, 401, 404))
    def get_source(name: str) -> Response:
        """The workflow file's bytes, with the ETag a PUT names in If-Match."""
        try:
            source = files.read(name)
        except SourceError as exc:
            raise _error(exc) from None
        headers = {"ETag": source.etag, "Cache-Control": "no-store"}
        return Response(source.data, media_type=YAML_TYPE, headers=headers)

    @router.put("/workflows/{name}/source", responses=errors(400, 401, 409, 413))
    async def put_source(
        name: str,
        request: Request,
        if_match: Annotated[str | None, Header()] = None,
    ) -> Response:
        """Write the body as the workflow file; the answer says whether it validates."""
        data = await _source_body(request)
        if expands_too_far(data):
            raise BadRequestError(_EXPANDS, code="source_expands")
        try:
            source = files.write(name, data, if_match)
        except SourceError as exc:
            raise _error(exc) from None
        checked = validate_source(data, catalog())
        answer = {"file": source.path.name, "etag": source.etag, **checked}
        return json_response(200, answer, {"ETag": source.etag})

    @router.post("/workflows/{name}/install", responses=errors(400, 401, 404, 409))
    def install_source(name: str, api: Context) -> Response:
        """Install the saved file into the engine: a new version is published; the same
        version with the same definition is already there; the same version with another
        definition, or an older one, is refused (a changed definition gets a higher version)."""
        try:
            path = files.read(name).path
        except SourceError as exc:
            raise _error(exc) from None
        if expands_too_far(path.read_bytes()):
            raise BadRequestError(_EXPANDS, code="source_expands")
        result = validate_file(path)
        if result.workflow is None:
            raise ApiError(
                f"{path.name} does not validate ({len(result.errors)} errors); fix them first",
                code="invalid_workflow",
                details={"diagnostics": [d.as_json() for d in result.errors]},
            )
        workflow = result.workflow
        existing = api.catalog.find(workflow.name, workflow.version)
        if existing is not None:
            if existing.installed.workflow == workflow:
                return json_response(
                    200, {**existing.describe(), "installed": False, "already_installed": True}
                )
            raise ConflictError(
                f"{workflow.name} v{workflow.version} is installed with another definition:"
                " raise `version` to install the change",
                code="version_exists",
            )
        latest = api.catalog.find(workflow.name)
        if latest is not None and latest.version > workflow.version:
            raise ConflictError(
                f"{workflow.name} v{latest.version} is installed: a change needs a version"
                f" above {latest.version}",
                code="version_older",
            )
        try:
            with api.engine.read() as store:
                installed = install(store, api.engine.arns, path)
        except WorkflowFileError as exc:
            raise ApiError(str(exc).split("\n")[0], code="invalid_workflow") from None
        entry = CatalogEntry(installed, path)
        api.catalog.add(entry)
        return json_response(201, {**entry.describe(), "installed": True})

    @router.post("/validate", responses=errors(400, 401, 413))
    async def validate(request: Request) -> Response:
        """The validator's diagnostics for the YAML source in the body."""
        return json_response(200, validate_source(await _source_body(request), catalog()))

    @router.post("/compile", responses=errors(400, 401, 413))
    async def compile_(request: Request) -> Response:
        """The compiled definition and notes for the YAML source in the body."""
        return json_response(200, compile_source(await _source_body(request), catalog()))

    @router.post("/builder/apply", responses=errors(400, 401, 413))
    def apply(body: ApplyRequest) -> Response:
        """The source edited to hold the document: unchanged parts keep their bytes."""
        try:
            text = apply_document(body.source, body.document)
        except RoundTripError as exc:
            raise BadRequestError(str(exc), code="bad_source") from None
        if len(text.encode()) > MAX_SOURCE_BYTES:
            raise _error(SourceError("the result is larger than 1 MiB", "too_large"))
        return json_response(200, {"source": text})

    return router
