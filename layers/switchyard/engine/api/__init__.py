"""The Step Functions API of the local engine (AWS JSON 1.0 protocol), so that
`boto3.client("stepfunctions", endpoint_url=...)` and `aws stepfunctions --endpoint-url ...` work
against it unchanged:

    engine = Engine(conninfo)
    engine.start()
    with sfn_api_in_thread(engine) as server:
        sfn = boto3.client("stepfunctions", endpoint_url=server.endpoint_url, ...)

`switchyard dev` binds it with `serve_sfn_api(engine, host, port)` and runs `serve_forever()`.
"""

from switchyard.engine.api.protocol import OPERATIONS, SfnApi
from switchyard.engine.api.server import (
    DEFAULT_SFN_PORT,
    SfnApiServer,
    serve_sfn_api,
    sfn_api_in_thread,
)

__all__ = [
    "DEFAULT_SFN_PORT",
    "OPERATIONS",
    "SfnApi",
    "SfnApiServer",
    "serve_sfn_api",
    "sfn_api_in_thread",
]
