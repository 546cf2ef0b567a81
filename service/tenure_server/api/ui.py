"""GET /ui: the operator's page (jobs, alerts, leases, recent events), refreshing itself."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from tenure_server.api import dashboard
from tenure_server.api.dependencies import CallerDep, HistoryDep
from tenure_server.api.history import visible

router = APIRouter()


@router.get("/ui", include_in_schema=False, response_class=HTMLResponse)
async def ui(caller: CallerDep, history: HistoryDep) -> HTMLResponse:
    caller.require("reader", "read the overview")
    page = dashboard.render(visible(await history.overview(), caller))
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})
