"""OAuth end to end with the MCP SDK's own OAuth client (PyPI `mcp`), as an agent
host would use it against /mcp/buyer:

- `mcp.client.auth.OAuthClientProvider` starts from nothing but the MCP URL: the
  first request gets a 401 whose WWW-Authenticate names `resource_metadata`; the SDK
  reads that RFC 9728 document, then the RFC 8414 metadata of the server it names,
  registers a client (RFC 7591), sends the user to /authorize with PKCE S256 and
  `state`, checks `state` and `iss` on the way back and exchanges the code.
- Its redirect handler is a browser without JavaScript: plain HTTP with a cookie
  jar. It opens the authorization URL, reads the login form (action, hidden
  `request` and `csrf`), signs in as the user `admin create-user --password` made,
  allows on the consent page and follows the 303 to the redirect URI, where a real
  loopback listener (the callback handler) receives `code`, `state` and `iss`.
- Tools are then called through the SDK's streamable HTTP client with the access
  token; the token is made to look expired (as it does an hour later), so the SDK
  refreshes it, and tools are called again with the new token.
- The rotated-out refresh token is refused (`invalid_grant`), and since presenting a
  spent refresh token revokes the grant (RFC 9700 section 4.14.2), the new access
  token is refused too.

Every request the SDK makes is recorded and the sequence is checked. Environment:
BASE (server URL), EMAIL and PASSWORD of a user who may sign in. Exits non-zero with
a message on the first mismatch.
"""

import asyncio
import os
import sys
import time
from html.parser import HTMLParser
from urllib.parse import parse_qs, urljoin, urlsplit

import httpx2
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

BASE = os.environ["BASE"]
EMAIL = os.environ["EMAIL"]
PASSWORD = os.environ["PASSWORD"]
MCP_URL = f"{BASE}/mcp/buyer"
NAME = "mcp-oauth-check"
passed = 0


def fail(message):
    sys.exit(f"{NAME}: FAIL: {message}")


def check(cond, message):
    if not cond:
        fail(message)


def ok(what):
    global passed
    passed += 1
    print(f"{NAME}: ok: {what}")


class MemoryStorage:
    """The SDK's TokenStorage protocol, in memory; keeps every token set it is given."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client_info: OAuthClientInformationFull | None = None
        self.history: list[OAuthToken] = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        self.history.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info):
        self.client_info = client_info


class Callback:
    """The redirect URI: a real HTTP listener on loopback that takes one redirect."""

    async def start(self):
        self.result: asyncio.Future = asyncio.get_running_loop().create_future()
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.uri = f"http://127.0.0.1:{port}/callback"

    async def _serve(self, reader, writer):
        line = (await reader.readline()).decode("latin-1").split()
        while (await reader.readline()) not in (b"\r\n", b"\n", b""):
            pass
        query = {}
        if len(line) >= 2 and line[0] == "GET" and urlsplit(line[1]).path == "/callback":
            query = {k: v[0] for k, v in parse_qs(urlsplit(line[1]).query).items()}
        body = b"Signed in; you may close this window."
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: %d\r\n"
            b"connection: close\r\n\r\n%s" % (len(body), body)
        )
        await writer.drain()
        writer.close()
        if query and not self.result.done():
            self.result.set_result(query)

    async def wait(self):
        return await asyncio.wait_for(self.result, 60)


class Form(HTMLParser):
    """The page's first form: its action, method and hidden fields."""

    def __init__(self, html):
        super().__init__()
        self.action = None
        self.method = None
        self.hidden = {}
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and self.action is None:
            self.action, self.method = a.get("action"), (a.get("method") or "get").lower()
        if tag == "input" and a.get("type") == "hidden":
            self.hidden[a["name"]] = a.get("value", "")


class Browser:
    """What a browser with JavaScript off does with the authorization URL."""

    def __init__(self, callback):
        self.callback = callback
        self.opened: list[str] = []

    async def redirect_handler(self, url):
        self.opened.append(url)
        async with httpx2.AsyncClient(timeout=60) as http:
            page = await http.get(url)
            check(page.status_code == 200, f"the login page: {page.status_code} {page.text[:500]}")
            check("text/html" in page.headers.get("content-type", ""), "the login page is HTML")
            login = Form(page.text)
            check(login.method == "post" and login.action, f"a login form: {page.text[:500]}")
            check({"request", "csrf"} <= login.hidden.keys(), "the login form's hidden fields")
            consent_page = await http.post(
                urljoin(str(page.url), login.action),
                data={**login.hidden, "email": EMAIL, "password": PASSWORD},
            )
            check(
                consent_page.status_code == 200 and "Allow" in consent_page.text,
                f"signing in shows the consent page: {consent_page.status_code} {consent_page.text[:500]}",
            )
            consent = Form(consent_page.text)
            check(consent.method == "post" and consent.action, "a consent form")
            back = await http.post(
                urljoin(str(consent_page.url), consent.action),
                data={**consent.hidden, "decision": "allow"},
            )
            location = back.headers.get("location", "")
            check(
                back.status_code == 303 and location.startswith(self.callback.uri + "?"),
                f"Allow sends the browser to the redirect URI: {back.status_code} {location}",
            )
            # The browser follows the redirect to the client's listener.
            landed = await http.get(location)
            check(landed.status_code == 200, f"the callback answered {landed.status_code}")

    async def callback_handler(self):
        q = await self.callback.wait()
        check("code" in q and "state" in q, f"the callback got code and state: {sorted(q)}")
        return AuthorizationCodeResult(code=q["code"], state=q["state"], iss=q.get("iss"))


class Traffic:
    """Every request the SDK's HTTP client sends, with the answer's status."""

    def __init__(self):
        self.log: list[tuple[str, str, int, str, str]] = []

    async def on_response(self, response):
        request = response.request
        body = request.content.decode("utf-8", "replace") if request.content else ""
        self.log.append(
            (
                request.method,
                request.url.path,
                response.status_code,
                response.headers.get("www-authenticate", ""),
                body,
            )
        )

    def since(self, mark):
        return self.log[mark:]


def structured(result, what):
    check(not result.is_error, f"{what}: {result}")
    return result.structured_content


async def call_tools(client, label, names):
    """One MCP session: initialize, create an advertiser, list them; returns the names listed."""
    async with streamable_http_client(MCP_URL, http_client=client) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            check(init.server_info.name == "agentic-api-buyer", f"server info {init.server_info}")
            tools = {t.name for t in (await session.list_tools()).tools}
            check({"create_advertiser", "list_advertisers"} <= tools, f"tools listed: {sorted(tools)}")
            created = structured(
                await session.call_tool(
                    "create_advertiser",
                    {"body": {"name": label, "brand": "mcp-oauth.example", "primaryCurrency": "USD"}},
                ),
                "create_advertiser",
            )
            check(created["data"]["name"] == label, f"created {created}")
            listed = structured(
                await session.call_tool("list_advertisers", {"params": {"take": 100}}), "list_advertisers"
            )
            found = [a["name"] for a in listed["data"]]
            for name in names + [label]:
                check(name in found, f"{name} listed: {found}")
            return found


def steps(entries):
    return [(m, p, s) for m, p, s, _, _ in entries]


async def main():
    callback = Callback()
    await callback.start()
    browser = Browser(callback)
    storage = MemoryStorage()
    provider = OAuthClientProvider(
        server_url=MCP_URL,
        client_metadata=OAuthClientMetadata(
            client_name="MCP SDK oauth check",
            redirect_uris=[callback.uri],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage=storage,
        redirect_handler=browser.redirect_handler,
        callback_handler=browser.callback_handler,
    )
    traffic = Traffic()
    client = httpx2.AsyncClient(
        auth=provider,
        timeout=httpx2.Timeout(60.0),
        event_hooks={"response": [traffic.on_response]},
    )
    async with client:
        # 1. From nothing: discovery, registration, the pages, the code exchange.
        await call_tools(client, "MCP OAuth first", [])
        flow = steps(traffic.log[:6])
        expected = [
            ("POST", "/mcp/buyer", 401),
            ("GET", "/.well-known/oauth-protected-resource/mcp/buyer", 200),
            ("GET", "/.well-known/oauth-authorization-server", 200),
            ("POST", "/auth/register", 201),
            ("POST", "/auth/token", 200),
            ("POST", "/mcp/buyer", 200),
        ]
        check(flow == expected, f"the SDK's OAuth flow:\n  got      {flow}\n  expected {expected}")
        challenge = traffic.log[0][3]
        check(
            f'resource_metadata="{BASE}/.well-known/oauth-protected-resource/mcp/buyer"' in challenge,
            f"the 401 names the resource metadata: {challenge!r}",
        )
        ok("401 WWW-Authenticate resource_metadata -> RFC 9728 -> RFC 8414 -> registration")
        check(len(browser.opened) == 1, f"the user was sent to sign in once: {browser.opened}")
        auth_query = parse_qs(urlsplit(browser.opened[0]).query)
        check(auth_query.get("code_challenge_method") == ["S256"], f"PKCE S256: {auth_query}")
        check(auth_query.get("resource") == [MCP_URL], f"resource is the MCP URL: {auth_query}")
        check(auth_query.get("scope") == ["openid profile email"], f"scope from the metadata: {auth_query}")
        info = storage.client_info
        check(info is not None and info.client_id.startswith("cli_"), f"client registered: {info}")
        check(info.token_endpoint_auth_method == "none", f"a public client: {info}")
        exchange = parse_qs(traffic.log[4][4])
        check(exchange.get("grant_type") == ["authorization_code"], f"code exchange: {exchange}")
        check(len(exchange.get("code_verifier", [""])[0]) >= 43, "the code verifier was sent")
        first = storage.tokens
        check(first is not None and first.access_token.startswith("oat_"), f"access token: {first}")
        check(first.refresh_token and first.refresh_token.startswith("ort_"), "a refresh token")
        check(first.scope == "openid profile email", f"granted scope {first.scope!r}")
        ok(f"login and consent pages driven over HTTP; code exchanged with PKCE (client {info.client_id})")
        ok("tools called with the access token (initialize, tools/list, create_advertiser, list_advertisers)")

        # 2. An hour later the access token has expired: the SDK refreshes before its next request.
        provider.context.token_expiry_time = time.time() - 1
        mark = len(traffic.log)
        await call_tools(client, "MCP OAuth refreshed", ["MCP OAuth first"])
        after = traffic.since(mark)
        check(
            steps(after[:2]) == [("POST", "/auth/token", 200), ("POST", "/mcp/buyer", 200)],
            f"a refresh, then the call: {steps(after[:3])}",
        )
        refresh = parse_qs(after[0][4])
        check(refresh.get("grant_type") == ["refresh_token"], f"refresh request: {refresh}")
        check(refresh.get("refresh_token") == [first.refresh_token], "the SDK sent the refresh token it had")
        check(all(s != 401 for _, _, s, _, _ in after), f"no 401 after the refresh: {steps(after)}")
        check(len(browser.opened) == 1, "no second sign-in")
        second = storage.tokens
        check(
            second.access_token != first.access_token and second.refresh_token != first.refresh_token,
            "refresh rotated both tokens",
        )
        ok("expired access token refreshed by the SDK (both tokens rotated); tools called again")
        ended = [s for m, p, s, _, _ in traffic.log if m == "DELETE"]
        check(ended == [204, 204], f"each session ended with DELETE, 204: {ended}")

    # 3. The rotated-out refresh token is refused, and its reuse revokes the grant.
    async with httpx2.AsyncClient(timeout=30) as http:
        meta = (await http.get(f"{BASE}/.well-known/oauth-authorization-server")).json()
        again = await http.post(
            meta["token_endpoint"],
            data={
                "grant_type": "refresh_token",
                "refresh_token": first.refresh_token,
                "client_id": info.client_id,
            },
        )
        check(
            again.status_code == 400 and again.json().get("error") == "invalid_grant",
            f"the rotated-out refresh token: {again.status_code} {again.text}",
        )
        probe = await http.post(
            MCP_URL,
            headers={
                "Authorization": f"Bearer {second.access_token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
        )
        check(
            probe.status_code == 401 and 'error="invalid_token"' in probe.headers.get("www-authenticate", ""),
            f"the grant is revoked after the reuse: {probe.status_code} {probe.headers}",
        )
        ok("rotated-out refresh token refused (invalid_grant); its reuse revoked the grant")

    callback.server.close()
    print(f"{NAME}: {passed} passed, 0 failed")


asyncio.run(main())
