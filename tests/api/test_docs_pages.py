"""/docs and /redoc need no network: every asset their HTML names is served by the app itself."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from tests.support.lifespan import Running

# src=, href= and ReDoc's spec-url= attributes, and the url: '…' Swagger UI is given.
URL = re.compile(r"""(?:src|href|spec-url)\s*=\s*["']([^"']+)["']|\burl\s*:\s*["']([^"']+)["']""")
CONTENT_TYPES = {".js": "javascript", ".css": "text/css", ".png": "image/png", ".json": "json"}


def referenced(html: str, base: str) -> list[str]:
    """Every URL the page loads, absolute (http://tenure.test/…) as the browser resolves it."""
    found = [one or two for one, two in URL.findall(html)]
    assert found, html
    return [urljoin(base, url) for url in found]


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_docs_pages_load_only_assets_the_service_serves(
    api: httpx.AsyncClient, page: str
) -> None:
    """Each script, stylesheet, icon and the OpenAPI document the page names is on the service's
    own origin and answered 200 with its content type: no CDN, no web fonts."""
    answer = await api.get(page)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/html")
    # Not even ReDoc's own logo is fetched from its CDN (the browser test sees every request).
    assert answer.headers["content-security-policy"] == "img-src 'self' data:"
    urls = referenced(answer.text, str(answer.url))
    assert {urlsplit(url).netloc for url in urls} == {"tenure.test"}, urls
    assert "/openapi.json" in {urlsplit(url).path for url in urls}
    assert sum(urlsplit(url).path.endswith(".js") for url in urls) >= 1
    for url in urls:
        asset = await api.get(url)
        assert asset.status_code == 200, url
        suffix = urlsplit(url).path[urlsplit(url).path.rfind(".") :]
        assert CONTENT_TYPES[suffix] in asset.headers["content-type"], url


async def test_docs_assets_follow_a_proxy_prefix(app: Running) -> None:
    """Behind a proxy serving the app under a prefix (uvicorn --root-path), the page names its
    assets under that prefix."""
    transport = httpx.ASGITransport(app=app, root_path="/tenure")
    async with httpx.AsyncClient(transport=transport, base_url="http://tenure.test") as proxied:
        html = (await proxied.get("/docs")).text
    assert "/tenure/docs-assets/swagger-ui-bundle.js" in html
    assert "/tenure/openapi.json" in html
