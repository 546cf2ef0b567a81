"""GET /docs (Swagger UI) and /redoc (ReDoc) with no network: their scripts, stylesheet and icon
are served from the `fastapi-offline` wheel under /docs-assets, not from FastAPI's default CDN
(a blank page in an air-gapped cluster).

FastAPI's own page builders are used, as FastAPI's "self-hosting the docs assets" recipe does;
only the asset URLs change. The app is created with `docs_url=None, redoc_url=None` and these
routes are added after the API's, so that the hot routes stay first (server/app.py).
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS", "DOCS", "REDOC", "install"]

DOCS = "/docs"
REDOC = "/redoc"
ASSETS = "/docs-assets"

# Swagger UI's validator badge would fetch validator.swagger.io for a spec not on localhost.
_SWAGGER_PARAMETERS: dict[str, Any] = {"validatorUrl": None}
# ReDoc's sidebar shows its maker's logo from cdn.redoc.ly (hidden when it fails to load): images
# only from the service, so that no visit to the docs reaches outside, even for a logo.
_LOCAL_IMAGES = {"Content-Security-Policy": "img-src 'self' data:"}


def install(app: FastAPI) -> None:
    """Serve the docs pages and their assets on `app` (created without its own docs routes)."""
    app.mount(ASSETS, StaticFiles(packages=[("fastapi_offline", "static")]), name="docs-assets")

    @app.get(DOCS, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = _root(request)
        page = get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{root}{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS}/favicon.png",
            swagger_ui_parameters=_SWAGGER_PARAMETERS,
        )
        page.headers.update(_LOCAL_IMAGES)
        return page

    @app.get(REDOC, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = _root(request)
        page = get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS}/favicon.png",
            with_google_fonts=False,
        )
        page.headers.update(_LOCAL_IMAGES)
        return page


def _root(request: Request) -> str:
    """The prefix a proxy serves the app under (uvicorn's --root-path), so links resolve there."""
    return str(request.scope.get("root_path", ""))
