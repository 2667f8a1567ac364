"""The evidence viewer as an Airflow 3 plugin (registered under the `airflow.plugins` entry point in
pyproject.toml): `argusic.ops.viewer`'s app served by the Airflow API server under ``/argusic/``, and
an entry in Airflow's navigation ("Browse" → "Argusic cycles") that shows it inside the UI.

Airflow does not authenticate a plugin's FastAPI app (it is mounted, and a mount inherits none of
the core API's dependencies), so every route of the viewer runs `airflow_reader` first: the JWT the
UI holds (its ``_token`` cookie) or a bearer token (``POST /auth/token``), validated by Airflow's own
`get_user` dependency (expiry, revocation, the auth manager's user), then the auth manager asked
whether that user may read task logs of the DAGs (the evidence is what those logs point at). A
browser without a session is sent to Airflow's login page and back; any other caller gets 401.
"""

# no `from __future__ import annotations`: FastAPI reads `reader`'s annotation, a class imported locally

from airflow.plugins_manager import AirflowPlugin

URL_PREFIX = "/argusic"


async def airflow_reader(request) -> None:
    """Airflow's user of the request, by Airflow's own `get_user` (401 without a token, 401/403 for an
    expired or invalid one), allowed to read task logs (403 otherwise)."""
    # deferred: the API server's modules load in the API server, not in every process that loads
    # plugins (scheduler, workers, DAG processor import this module for the class below)
    from airflow.api_fastapi.app import get_auth_manager
    from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user
    from fastapi import HTTPException

    user = await get_user(request, None, await bearer_scheme(request))
    if not get_auth_manager().is_authorized_dag(
        method="GET", access_entity=DagAccessEntity.TASK_LOGS, user=user
    ):
        raise HTTPException(status_code=403, detail="not allowed to read task logs, nor the evidence")


def _not_signed_in(request, err):
    """A browser without a session goes to the login page and comes back; anything else reads why."""
    # deferred: the API server's modules, as in airflow_reader
    from airflow.api_fastapi.app import get_auth_manager
    from fastapi.responses import PlainTextResponse, RedirectResponse

    if err.status_code == 401 and "text/html" in request.headers.get("accept", ""):
        back = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(get_auth_manager().get_url_login(next_url=back), status_code=303)
    return PlainTextResponse(f"{err.detail}\n", status_code=err.status_code, headers=err.headers)


def viewer_app():
    """The viewer with Airflow's authentication before every route."""
    # deferred: built on the first request (LazyViewer), in the API server only
    from fastapi import Depends, HTTPException, Request

    from argusic.ops.viewer import create_app  # deferred: as above (duckdb, the pages' modules)

    async def reader(request: Request) -> None:
        await airflow_reader(request)

    app = create_app(dependencies=[Depends(reader)])
    app.add_exception_handler(HTTPException, _not_signed_in)
    return app


class LazyViewer:
    """The viewer's ASGI app, built on its first request: mounting it costs nothing in the processes
    that load plugins without serving them."""

    def __init__(self) -> None:
        self.app = None

    async def __call__(self, scope, receive, send) -> None:
        if self.app is None:
            self.app = viewer_app()
        await self.app(scope, receive, send)


class ArgusicViewerPlugin(AirflowPlugin):
    name = "argusic_viewer"
    fastapi_apps = [{"app": LazyViewer(), "url_prefix": URL_PREFIX, "name": "Argusic evidence viewer"}]
    external_views = [
        {
            "name": "Argusic cycles",
            "href": URL_PREFIX.lstrip("/") + "/",
            "url_route": "argusic-cycles",
            "destination": "nav",
            "category": "browse",
        }
    ]
