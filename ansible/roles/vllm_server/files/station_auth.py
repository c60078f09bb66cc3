"""The engine's API key on every route, not only /v1/*.

vLLM's own key check (VLLM_API_KEY) guards paths under /v1 only, so
/invocations (which reaches chat and completions), /tokenize, /detokenize,
/pooling, /score, /rerank, /metrics and /version answer anyone who can reach
the port. This ASGI middleware, loaded with `--middleware
station_auth.KeyOnEveryRoute` from a read-only mount, asks for the same key on
every path except a bare health check. CORS preflights (OPTIONS) pass through
to vLLM's CORS handling, which allows no origin unless the recipe names some
(--allowed-origins).
"""

import hashlib
import hmac
import json
import os

OPEN_PATHS = frozenset({"/health"})


class KeyOnEveryRoute:
    def __init__(self, app):
        self.app = app
        self.key_digest = hashlib.sha256(os.environ["VLLM_API_KEY"].encode()).digest()

    def authorised(self, scope) -> bool:
        headers = dict(scope.get("headers") or [])
        scheme, _, token = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        presented = hashlib.sha256(token.encode()).digest()
        return scheme.lower() == "bearer" and hmac.compare_digest(presented, self.key_digest)

    async def __call__(self, scope, receive, send):
        if (
            scope["type"] not in ("http", "websocket")
            or scope.get("method") == "OPTIONS"
            or scope["path"].removeprefix(scope.get("root_path", "")) in OPEN_PATHS
            or self.authorised(scope)
        ):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = json.dumps({"error": "Unauthorized"}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 401,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
