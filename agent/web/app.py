"""The memory dashboard as an ASGI app (Starlette): :func:`create_app`.

Each request acts for one principal, the one ``principal_of(request)`` names (``analyst
dashboard``: the command line's; the LangGraph server: the signed-in user,
:mod:`agent.web.server`), and runs one operation of :mod:`agent.web.work` on
:class:`~agent.app.AnalystApp` for it: the memory API ``analyst memory`` calls. Nothing here
decides what is remembered or deleted: a correction is
:meth:`~agent.app.memory.MemoryControls.remember` (a new stated fact under the ledger's
rules, citing the episode it was said in), a deletion is
:meth:`~agent.app.memory.MemoryControls.forget` (planned first, then confirmed, with its
receipt), and account deletion :meth:`~agent.app.memory.MemoryControls.forget_account`.

Safe by construction:

- every POST carries a CSRF token bound to the principal and to a random per-browser cookie
  (``SameSite=Strict``, ``HttpOnly``; double submit): a POST without it, or with another
  one, or sent from another origin, is refused with 403 before the application is called;
- every stored text is escaped (:mod:`agent.web.html`); every response forbids scripts
  (``Content-Security-Policy: default-src 'none'``; the one style element allowed by its
  hash), framing and content sniffing;
- nothing secret is in a URL (ids of one's own memories, attribute names), and reading needs
  no script.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, quote, urlsplit

from starlette.applications import Starlette
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from agent.web import pages, work
from agent.web.html import Html

if TYPE_CHECKING:
    from starlette.requests import Request

    from memory.identity import Principal

__all__ = ["CSRF_COOKIE", "HEADERS", "PrincipalOf", "Runner", "create_app", "csrf_token"]

#: Who a request acts for; raises :class:`PermissionError` when nobody is signed in.
PrincipalOf = Callable[["Request"], "Principal"]
#: A page's work: (request, principal, CSRF token for its forms) -> a response, or the
#: page's title and body.
Handler = Callable[["Request", "Principal", str], Awaitable["Response | tuple[str, Any]"]]

CSRF_COOKIE = "analyst_csrf"
#: Sent with every response: no script at all, no framing, no sniffing, no referrer to
#: other sites (same-origin: a form POST then carries its true Origin, which is checked).
HEADERS = {
    "Content-Security-Policy": (
        f"default-src 'none'; style-src '{pages.STYLE_HASH}'; img-src 'self'; "
        "form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def csrf_token(cookie: str, principal: Principal) -> str:
    """The form token for the browser holding ``cookie``, acting as ``principal``."""
    who = f"{principal.tenant_id}/{principal.user_id}".encode()
    return hmac.new(cookie.encode(), who, hashlib.sha256).hexdigest()


def _who(principal: Principal) -> str:
    return f"{principal.user_id} (tenant {principal.tenant_id})"


def _back(path: str, notice: str | None = None) -> Response:
    """After a change, back to the page it was made on (a reload does not repeat it)."""
    where = pages.url(path) + (f"?notice={quote(notice)}" if notice else "")
    return RedirectResponse(where, status_code=303)


#: The largest form accepted (the dashboard's forms hold a sentence and a few ids).
MAX_FORM_BYTES = 64 * 1024


async def _field(request: Request, name: str) -> str:
    """A field of the POST's form (``application/x-www-form-urlencoded``, what the pages
    send; read once, at most :data:`MAX_FORM_BYTES`), stripped; missing: empty."""
    form = getattr(request.state, "form", None)
    if form is None:
        body = await request.body()
        form = parse_qs(body[:MAX_FORM_BYTES].decode("utf-8", "replace"))
        request.state.form = form
    values = form.get(name) or [""]
    return values[0].strip()


async def _refusal(request: Request, principal: Principal) -> str | None:
    """Why a POST is refused (``None``: it may go ahead): an ``Origin`` other than the
    page's own, or no CSRF cookie, or a token that does not match it."""
    origin = request.headers.get("origin")
    if origin is not None and urlsplit(origin).netloc != request.headers.get("host", ""):
        return "Refused: this form was sent from another site. Nothing was changed."
    cookie = request.cookies.get(CSRF_COOKIE)
    sent = await _field(request, "csrf")
    if not cookie or not hmac.compare_digest(sent, csrf_token(cookie, principal)):
        return (
            "Refused: the form's security token is missing or out of date (reload the page and "
            "try again). Nothing was changed."
        )
    return None


#: What runs the application's operations for a request (on a thread or in a process).
Runner = work.InThreads | work.InProcesses
_H = TypeVar("_H", bound=Handler)


def _respond(request: Request, content: Html, status: int = 200) -> Response:
    """A page with :data:`HEADERS`, setting the browser's CSRF cookie when it has none."""
    response = HTMLResponse(content, status_code=status, headers=HEADERS)
    if CSRF_COOKIE not in request.cookies:
        response.set_cookie(
            CSRF_COOKIE,
            request.state.csrf_cookie,
            path=pages.PREFIX,
            httponly=True,
            samesite="strict",
        )
    return response


def _endpoint(
    principal_of: PrincipalOf, handler: Handler, *, active: str, post: bool
) -> Callable[[Request], Awaitable[Response]]:
    """A route: who acts, the CSRF check of a POST, the layout around the handler's
    ``(title, body)``, and the application's refusals as an error page."""

    async def endpoint(request: Request) -> Response:
        try:
            principal = principal_of(request)
        except PermissionError as e:
            return HTMLResponse(pages.error(str(e)), status_code=401, headers=HEADERS)
        who = _who(principal)
        cookie = request.cookies.get(CSRF_COOKIE) or secrets.token_urlsafe(32)
        request.state.csrf_cookie = cookie
        if post and (refused := await _refusal(request, principal)) is not None:
            return _respond(request, pages.layout("Refused", who, pages.error(refused)), 403)
        try:
            done = await handler(request, principal, csrf_token(cookie, principal))
        except work.Refused as refused_:
            body = pages.error(str(refused_))
            status = 404 if refused_.missing else 400
            return _respond(request, pages.layout("Not done", who, body), status)
        if isinstance(done, Response):
            done.headers.update(HEADERS)
            return done
        title, body = done
        return _respond(request, pages.layout(title, who, body, active=active))

    return endpoint


@dataclass
class _Routes:
    """The dashboard's routes, registered by decorating their handlers: each acts for
    whoever ``principal_of`` names and runs the application through ``call``."""

    principal_of: PrincipalOf
    call: Runner
    table: list[Route] = field(default_factory=list)

    def get(self, path: str, active: str = "") -> Callable[[_H], _H]:
        """A page to read (its navigation entry ``active``, default ``path``)."""
        return self._add(path, "GET", active=active or path, post=False)

    def post(self, path: str) -> Callable[[_H], _H]:
        """A change: a form's POST with the CSRF token."""
        return self._add(path, "POST", active="", post=True)

    def _add(self, path: str, method: str, *, active: str, post: bool) -> Callable[[_H], _H]:
        def register(handler: _H) -> _H:
            endpoint = _endpoint(self.principal_of, handler, active=active, post=post)
            self.table.append(Route(pages.url(path), endpoint, methods=[method]))
            return handler

        return register


def _memory_pages(routes: _Routes) -> None:
    """Reading what is remembered: one page per kind of memory, and what a thread used."""
    call = routes.call

    @routes.get("profile")
    async def profile(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        shown, histories = await call(who, work.profile)
        notice = request.query_params.get("notice")
        return "Profile", pages.profile(shown, histories, datetime.now(UTC), csrf, notice)

    @routes.get("preferences")
    async def preferences(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        shown, procedures = await call(who, work.preferences)
        return "Preferences & procedures", pages.preferences(shown, procedures, csrf)

    @routes.get("candidates")
    async def candidates(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        from agent.learning.learner import CONFIRMABLE

        rows = await call(who, work.candidates)
        return "To review", pages.candidates(rows, csrf, tuple(CONFIRMABLE))

    @routes.get("sessions")
    async def sessions(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        return "Sessions", pages.sessions(await call(who, work.sessions))

    @routes.get("events")
    async def events(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        return "Events", pages.events(await call(who, work.events))

    @routes.get("audit")
    async def audit(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        return "Audit", pages.audit(await call(who, work.audit))

    @routes.get("threads")
    async def threads(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        rows, used = await call(who, work.threads, request.query_params.get("why"))
        return "Threads & why", pages.threads(rows, used)


def _document_pages(routes: _Routes) -> None:
    """The documents the principal may read, one document, and a research note's chart."""
    call = routes.call

    @routes.get("documents")
    async def documents(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        return "Documents", pages.documents(await call(who, work.documents))

    @routes.get("document", active="documents")
    async def document(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        path = request.query_params.get("path", "")
        doc = await call(who, work.document, path)
        return path, pages.document(doc)

    @routes.get("chart", active="documents")
    async def chart(request: Request, who: Principal, csrf: str) -> Response:
        """A research note's chart (``<img>`` on its document page), as the PNG it is."""
        png = await call(who, work.chart, request.query_params.get("path", ""))
        return Response(png, media_type="image/png")


def _corrections(routes: _Routes) -> None:
    """Changing what is remembered (each a POST with the CSRF token): telling the analyst
    something, stating a fact, retiring a procedure, confirming or rejecting a candidate."""
    call = routes.call

    @routes.post("remember")
    async def remember(request: Request, who: Principal, csrf: str) -> Response:
        text, as_ = await _field(request, "text"), await _field(request, "as")
        done = await call(who, work.remember, text, as_ or "preference")
        ids = ", ".join(str(s["id"]) for s in done["stored"])
        return _back(
            "profile", f"Remembered as a {done['as']}: {ids} (episode {done['episode_id']})."
        )

    @routes.post("profile/state")
    async def state_fact(request: Request, who: Principal, csrf: str) -> Response:
        done = await call(who, work.remember, await _field(request, "text"), "fact")
        # Attribute names and ids only in the address: the value stays out of URLs and logs.
        changed = ", ".join(s["attribute"] for s in done["stored"])
        return _back("profile", f"Recorded {changed} (episode {done['episode_id']}).")

    @routes.post("procedures/retire")
    async def retire(request: Request, who: Principal, csrf: str) -> Response:
        await call(who, work.retire, await _field(request, "id"))
        return _back("preferences")

    @routes.post("candidates/confirm")
    async def confirm(request: Request, who: Principal, csrf: str) -> Response:
        await call(who, work.confirm, await _field(request, "id"))
        return _back("candidates")

    @routes.post("candidates/reject")
    async def reject(request: Request, who: Principal, csrf: str) -> Response:
        reason = await _field(request, "reason") or "rejected in the dashboard"
        await call(who, work.reject, await _field(request, "id"), reason)
        return _back("candidates")


def _forgetting(routes: _Routes) -> None:
    """Deleting: a plan first (a GET that deletes nothing), then the POST that deletes, with
    its receipt; for one memory and for the whole account."""
    call = routes.call

    @routes.get("forget", active="profile")
    async def forget_plan(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        item_id = request.query_params.get("id", "").strip()
        if not item_id:
            return "Forget", pages.error("Say what to forget: follow a Delete link.")
        plan = await call(who, work.forget, item_id, False)
        return "Forget: the plan", pages.forget_plan(item_id, plan, csrf)

    @routes.post("forget")
    async def forget(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        item_id = await _field(request, "id")
        done = await call(who, work.forget, item_id, True)
        return "Forgotten: the receipt", pages.receipt(done, f"forgot {item_id}")

    @routes.get("account")
    async def account_plan(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        plan = await call(who, work.forget_account, False)
        return "Forget everything: the plan", pages.account_plan(plan, csrf)

    @routes.post("account/forget")
    async def account_forget(request: Request, who: Principal, csrf: str) -> tuple[str, Any]:
        if await _field(request, "sure") != "yes":
            message = "Tick the box to say you understand; nothing was deleted."
            return "Forget everything", pages.error(message)
        done = await call(who, work.forget_account, True)
        return "Everything forgotten: the receipt", pages.receipt(done, "deleted everything")


async def _home(request: Request) -> Response:
    return RedirectResponse(pages.url("profile"), status_code=303, headers=HEADERS)


def create_app(principal_of: PrincipalOf, runner: Runner | None = None) -> Starlette:
    """The dashboard's routes under :data:`agent.web.pages.PREFIX`, for whoever
    ``principal_of`` says a request acts for; the application runs through ``runner``
    (default: worker threads)."""
    routes = _Routes(principal_of, runner or work.InThreads())
    for register in (_memory_pages, _document_pages, _corrections, _forgetting):
        register(routes)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            routes.call.close()

    home = [Route(path, _home, methods=["GET"]) for path in (pages.PREFIX, pages.PREFIX + "/")]
    return Starlette(routes=[*home, *routes.table], lifespan=lifespan)
