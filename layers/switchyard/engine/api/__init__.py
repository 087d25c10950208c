"""The Step Functions API of the local engine (AWS JSON 1.0 protocol), so that
`boto3.client("stepfunctions", endpoint_url=...)` and `aws stepfunctions --endpoint-url ...` work
against it unchanged:

    engine = Engine(conninfo)
    engine.start()
    with sfn_api_in_thread(engine) as server:
        sfn = boto3.client("stepfunctions", endpoint_url=server.endpoint_url, ...)

`switchyard dev` binds it with `serve_sfn_api(engine, host, port)` and runs `serve_forever()`;
with SWITCHYARD_SFN_ACCESS_KEY_ID and SWITCHYARD_SFN_SECRET_ACCESS_KEY set, calls must be
SigV4-signed with those credentials (docs/engine.md).
"""

from switchyard.engine.api.protocol import OPERATIONS, SfnApi
from switchyard.engine.api.server import (
    DEFAULT_SFN_PORT,
    SfnApiServer,
    create_sfn_app,
    serve_sfn_api,
    sfn_api_in_thread,
)
from switchyard.engine.api.sigv4 import SigV4Credentials

__all__ = [
    "DEFAULT_SFN_PORT",
    "OPERATIONS",
    "SfnApi",
    "SfnApiServer",
    "SigV4Credentials",
    "create_sfn_app",
    "serve_sfn_api",
    "sfn_api_in_thread",
]
