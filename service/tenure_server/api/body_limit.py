"""A pure ASGI middleware that refuses request bodies above a size, before anything parses them."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tenure_server.api.problems import PAYLOAD_TOO_LARGE, problem_response


class _TooLarge(Exception):
    pass


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return
        received = 0
        exceeded = False
        refused = False

        async def counted_receive() -> Message:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise _TooLarge
            return message

        async def guarded_send(message: Message) -> None:
            # The framework turns a failed body read into its own error response; once the body
            # went over the limit, the answer is ours instead.
            nonlocal refused
            if not exceeded:
                await send(message)
            elif not refused:
                refused = True
                await self._refuse(scope, receive, send)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except _TooLarge:
            if not refused:
                await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = problem_response(
            PAYLOAD_TOO_LARGE, f"request bodies are limited to {self.max_bytes} bytes"
        )
        await response(scope, receive, send)
