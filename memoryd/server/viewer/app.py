"""The viewer's routes: a login that trades a token for a session cookie, then pages per agent.

The cookie holds a random session id, never the token (HttpOnly, SameSite=Strict; Secure behind
TLS); the session remembers which token it was opened with, and every request checks that token
again, so revoking it logs the browser out. Each session has a CSRF token that every form carries
and every POST must return. An agent not bound to the token answers 403 whether it exists or not;
paths come from the URL only as the `memory_get` argument, which refuses anything outside the
agent's roots. Pages render the tools' replies (search, get, status, write) and the index's list of
files; nothing here reads a file itself. Sessions live in memory: a restart logs everyone out.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable
from urllib.parse import parse_qs

import anyio.to_thread
import structlog
from starlette.datastructures import Headers, QueryParams
from starlette.types import Receive, Scope, Send

from memoryd.errors import AccessDeniedError, MemorydError, NotFoundError, WriteRefusedError, first_error
from memoryd.hookruns import recent_runs
from memoryd.server.httpface import respond
from memoryd.server.httplimits import SlowClientError, TokenLimits
from memoryd.server.schemas import ToolSchema, validate_arguments
from memoryd.server.service import Corpus, MemoryService, WriteTarget
from memoryd.server.tokens import TokenRecord, TokenStore
from memoryd.server.viewer import pages

log = structlog.get_logger(__name__)

COOKIE = "memoryd_session"
SESSION_SECONDS = 12 * 3600
MAX_SESSIONS = 1000
STATIC = ("viewer.css",)
LOGIN_BYTES = 4096
"""A login form holds one token: anything larger is refused before it is read (nobody is logged in yet)."""
_AGENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; "
        b"base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make a browser send `Origin: null` on our own forms
]


@runtime_checkable
class Listings(Protocol):
    """What the daemon's service adds for the viewer: an agent's indexed files and its latest saves."""

    async def list_files(self, agent: str) -> list[dict[str, object]]: ...

    def recent_writes(self, agent: str) -> list[dict[str, object]]: ...


@dataclass(slots=True)
class _Session:
    token_id: str
    csrf: str
    expires: float


class HttpError(MemorydError):
    """A page that answers with an error status (never escapes the viewer)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Viewer:
    def __init__(
        self,
        service: MemoryService,
        store: TokenStore,
        limits: TokenLimits,
        tools: Sequence[ToolSchema],
        *,
        max_body_bytes: int,
        state_dir: Path | None = None,
    ) -> None:
        self.service = service
        self.state_dir = state_dir
        """Where the hooks note what they injected (memoryd.hookruns); None shows no hooks section."""
        self.max_body_bytes = max_body_bytes
        self.tools = {tool.name: tool for tool in tools}
        self.store = store
        self.limits = limits
        self._sessions: dict[str, _Session] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope.get("path", "/")
        method: str = scope.get("method", "GET")
        headers = Headers(scope=scope)
        if path.startswith("/static/"):
            await self._static(send, path.removeprefix("/static/"))
            return
        if path == "/login":
            await (self._login(scope, receive, send) if method == "POST" else self._page(send, 200, pages.login()))
            return
        try:
            found = self._session(headers)
        except MemorydError as exc:  # the token file is damaged: nobody gets in until it is fixed
            log.error("viewer_token_file_unreadable", error=str(exc))  # noqa: TRY400
            await self._page(send, 503, pages.error(503, "the daemon cannot read its token file; see its log"))
            return
        if found is None:
            await self._redirect(send, "/login")
            return
        session_id, session, token = found
        refused = self.limits.admit(token.id)
        if refused is not None:
            await self._page(send, 429, pages.error(429, refused, session.csrf))
            return
        try:
            await self._route(
                scope=scope,
                receive=receive,
                send=send,
                path=path,
                method=method,
                session_id=session_id,
                session=session,
                token=token,
            )
        except HttpError as exc:
            await self._page(send, exc.status, pages.error(exc.status, str(exc), session.csrf))
        finally:
            self.limits.release(token.id)

    async def _route(
        self,
        *,
        scope: Scope,
        receive: Receive,
        send: Send,
        path: str,
        method: str,
        session_id: str,
        session: _Session,
        token: TokenRecord,
    ) -> None:
        csrf = session.csrf
        if path == "/logout" and method == "POST":
            self._check_csrf(await _form(receive, scope, self.max_body_bytes), session)
            self._sessions.pop(session_id, None)
            await self._redirect(send, "/login", cookie=f"{COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict")
            return
        if path == "/" and method == "GET":
            served = self._agents(token)
            if len(served) == 1:
                await self._redirect(send, f"/a/{served[0]}")
            else:
                await self._page(send, 200, pages.agents(served, csrf))
            return
        parts = path.split("/")
        if len(parts) < 3 or parts[1] != "a" or len(parts) > 4:
            raise HttpError(404, "no such page")
        agent = parts[2]
        if not _AGENT.match(agent) or agent not in self._agents(token):
            raise HttpError(403, "this token does not grant access to that agent")
        action = parts[3] if len(parts) == 4 else ""
        query = QueryParams(scope.get("query_string", b""))
        try:
            page = await self._action(
                scope=scope,
                receive=receive,
                agent=agent,
                action=action,
                method=method,
                query=query,
                session=session,
                token=token,
            )
        except (HttpError, SlowClientError):
            raise
        except MemorydError as exc:
            raise _status_of(exc) from None
        except Exception as exc:
            inner = first_error(exc)
            if isinstance(inner, MemorydError):
                raise _status_of(inner) from None
            log.exception("viewer_failed", path=path)
            raise HttpError(500, "internal error") from None
        await self._page(send, 200, page)

    async def _action(
        self,
        *,
        scope: Scope,
        receive: Receive,
        agent: str,
        action: str,
        method: str,
        query: QueryParams,
        session: _Session,
        token: TokenRecord,
    ) -> str:
        csrf = session.csrf
        writable = not token.read_only and self.service.write_enabled(agent)
        if action == "" and method == "GET":
            status = await self.service.status(agent, deep=False)
            listings = self.service if isinstance(self.service, Listings) else None
            files = await listings.list_files(agent) if listings else []
            writes = listings.recent_writes(agent) if listings else []
            hooks = await anyio.to_thread.run_sync(recent_runs, self.state_dir) if self.state_dir else {}
            return pages.agent_home(agent, status, files, writes, csrf, writable=writable, hooks=hooks)
        if action == "search" and method == "GET":
            text = query.get("q", "").strip()
            if not text:
                raise HttpError(400, "type something to search for")
            args = self._arguments("memory_search", {"query": text[:2000], "corpus": query.get("corpus", "all")})
            corpus = cast(Corpus, args["corpus"])
            reply = await self.service.search(
                agent, args["query"], max_results=None, min_score=None, corpus=corpus, wait_fresh_ms=None
            )
            return pages.results(agent, text, corpus, reply, csrf)
        if action == "file" and method == "GET":
            at = _int(query.get("at"))
            raw = {"path": query.get("path", ""), "from": _int(query.get("from")), "lines": _int(query.get("lines"))}
            args = self._arguments("memory_get", {k: v for k, v in raw.items() if v is not None})
            reply = await self.service.get(agent, args["path"], from_line=args.get("from"), lines=args.get("lines"))
            return pages.file_view(agent, reply, query.get("q", ""), at, csrf)
        if action == "write" and method == "POST":
            form = await _form(receive, scope, self.max_body_bytes)
            self._check_csrf(form, session)
            if not writable:
                raise HttpError(403, "this token is read-only (or the agent has memory_write turned off)")
            raw = {"text": form.get("text", ""), "target": form.get("target", "daily"), "heading": form.get("heading")}
            args = self._arguments("memory_write", {k: v for k, v in raw.items() if v})
            target = cast(WriteTarget, args["target"])
            reply = await self.service.write(agent, args["text"], target=target, heading=args.get("heading"))
            log.info("viewer_write", agent=agent, token=token.id, path=reply.get("path"))
            return pages.saved(agent, reply, csrf)
        raise HttpError(405 if action in ("", "search", "file", "write") else 404, "no such page")

    def _arguments(self, tool: str, raw: dict[str, object]) -> dict[str, Any]:
        """The form's values checked by the tool's own input schema, as a tool call's are (defaults filled)."""
        return validate_arguments(self.tools[tool], raw)

    # ------------------------------------------------------------------ sessions

    def _agents(self, token: TokenRecord) -> list[str]:
        served = set(self.service.agent_ids())
        return [a for a in token.agents if a in served]

    def _session(self, headers: Headers) -> tuple[str, _Session, TokenRecord] | None:
        session_id = _cookie(headers.get("cookie", ""), COOKIE)
        session = self._sessions.get(session_id) if session_id else None
        if session is None or session_id is None:
            return None
        token = next((r for r in self.store.records() if r.id == session.token_id), None)
        if token is None or token.expired() or time.monotonic() > session.expires:
            self._sessions.pop(session_id, None)
            return None
        return session_id, session, token

    async def _login(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            form = await _form(receive, scope, LOGIN_BYTES)
            token = self.store.verify(form.get("token", "").strip())
        except HttpError as exc:
            await self._page(send, exc.status, pages.login(str(exc)))
            return
        except MemorydError as exc:
            log.error("viewer_token_file_unreadable", error=str(exc))  # noqa: TRY400
            await self._page(send, 503, pages.error(503, "the daemon cannot read its token file; see its log"))
            return
        if token is None:
            log.info("viewer_login_refused")
            await self._page(send, 401, pages.login("That token is not valid (wrong, expired or revoked)."))
            return
        if len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        session_id = secrets.token_urlsafe(32)
        self._sessions[session_id] = _Session(token.id, secrets.token_urlsafe(32), time.monotonic() + SESSION_SECONDS)
        secure = "; Secure" if _behind_tls(scope) else ""
        cookie = f"{COOKIE}={session_id}; Max-Age={SESSION_SECONDS}; Path=/; HttpOnly; SameSite=Strict{secure}"
        log.info("viewer_login", token=token.id)
        await self._redirect(send, "/", cookie=cookie)

    @staticmethod
    def _check_csrf(form: dict[str, str], session: _Session) -> None:
        if not secrets.compare_digest(form.get("csrf", "").encode(), session.csrf.encode()):
            raise HttpError(403, "the form's CSRF token is missing or wrong; reload the page and try again")

    # ------------------------------------------------------------------ answers

    async def _page(self, send: Send, status: int, body: str) -> None:
        await respond(send, status, body.encode(), content_type="text/html; charset=utf-8", headers=_SECURITY_HEADERS)

    async def _redirect(self, send: Send, location: str, *, cookie: str | None = None) -> None:
        headers = [(b"location", location.encode()), *_SECURITY_HEADERS]
        if cookie:
            headers.append((b"set-cookie", cookie.encode()))
        await respond(send, 303, b"", content_type="text/plain", headers=headers)

    async def _static(self, send: Send, name: str) -> None:
        if name not in STATIC:
            await self._page(send, 404, pages.error(404, "no such file"))
            return
        data = (resources.files("memoryd.server.viewer") / "static" / name).read_bytes()
        await respond(send, 200, data, content_type="text/css; charset=utf-8", headers=_SECURITY_HEADERS)


async def _form(receive: Receive, scope: Scope, limit: int) -> dict[str, str]:
    """A urlencoded form body of at most `limit` bytes (413 past it, before reading what is declared)."""
    headers = Headers(scope=scope)
    if not headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        raise HttpError(415, "forms are sent as application/x-www-form-urlencoded")
    declared = headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise HttpError(413, f"the form is larger than {limit} bytes")
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        body.extend(message.get("body", b""))
        if len(body) > limit:
            raise HttpError(413, f"the form is larger than {limit} bytes")
        if not message.get("more_body", False):
            break
    try:
        parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=16)
    except (UnicodeDecodeError, ValueError) as exc:
        raise HttpError(400, "the form could not be read") from exc
    return {k: v[0] for k, v in parsed.items() if v}


def _cookie(header: str, name: str) -> str | None:
    for part in header.split(";"):
        key, _, value = part.strip().partition("=")
        if key == name and value:
            return value
    return None


def _behind_tls(scope: Scope) -> bool:
    forwarded = Headers(scope=scope).get("x-forwarded-proto", "")
    return scope.get("scheme") == "https" or forwarded.lower() == "https"


def _int(value: str | None) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise HttpError(400, f"{value[:20]!r} is not a number") from None
    return number


def _status_of(exc: MemorydError) -> HttpError:
    if isinstance(exc, AccessDeniedError):
        return HttpError(403, str(exc))
    if isinstance(exc, NotFoundError):
        return HttpError(404, str(exc))
    if isinstance(exc, WriteRefusedError):
        return HttpError(400, str(exc))
    return HttpError(400, str(exc))
