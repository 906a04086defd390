"""OAuth end to end against the real server, as an agent host would do it,
with Authlib's OAuth2Session doing the OAuth parts (PKCE S256, the code
exchange with its state check, refresh, revocation, bearer calls).

The login and consent pages are driven with plain HTTP (requests, a cookie
jar, the hidden CSRF field read with the standard HTML parser), the way a
browser without JavaScript would submit them.

Environment: BASE (server URL), EMAIL and PASSWORD of a user who may sign
in. Exits non-zero with a message on the first failure.
"""

import os
import sys
from html.parser import HTMLParser

import requests
from authlib.common.security import generate_token
from authlib.integrations.requests_client import OAuth2Session
from authlib.oauth2 import rfc9207
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata

BASE = os.environ["BASE"]
EMAIL = os.environ["EMAIL"]
PASSWORD = os.environ["PASSWORD"]
# Never contacted: the redirect is read from the Location header.
REDIRECT = "http://127.0.0.1:9/oauth-check/callback"
passed = 0


def fail(message, response=None):
    if response is not None:
        message += f"\n  {response.status_code} {response.headers.get('content-type')}\n  {response.text[:1500]}"
    sys.exit(f"oauth-check: FAIL: {message}")


def ok(what):
    global passed
    passed += 1
    print(f"oauth-check: ok: {what}")


class Fields(HTMLParser):
    """The form's hidden fields and the page's text."""

    def __init__(self, html):
        super().__init__()
        self.hidden = {}
        self.text = []
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "input" and a.get("type") == "hidden":
            self.hidden[a["name"]] = a.get("value", "")

    def handle_data(self, data):
        self.text.append(data)


# Discovery: RFC 8414 metadata, validated by Authlib's own model.
meta = requests.get(f"{BASE}/.well-known/oauth-authorization-server", timeout=30)
if meta.status_code != 200:
    fail("authorization server metadata", meta)
meta = meta.json()
try:
    AuthorizationServerMetadata(meta).validate(
        metadata_classes=[rfc9207.AuthorizationServerMetadata]
    )
except Exception as e:  # the validator's message says which field
    fail(f"metadata does not validate as RFC 8414: {e!r}")
if meta["code_challenge_methods_supported"] != ["S256"]:
    fail(f"code_challenge_methods_supported: {meta['code_challenge_methods_supported']}")
prm = requests.get(f"{BASE}/.well-known/oauth-protected-resource/mcp/buyer", timeout=30).json()
if prm.get("authorization_servers") != [meta["issuer"]]:
    fail(f"protected resource metadata names another server: {prm}")
ok("discovery (RFC 8414 validated by Authlib, RFC 9728)")

# Dynamic client registration (RFC 7591); Authlib has no client for it.
reg = requests.post(
    meta["registration_endpoint"],
    json={
        "client_name": "Authlib oauth-check",
        "redirect_uris": [REDIRECT],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    },
    timeout=30,
)
if reg.status_code != 201:
    fail("registration", reg)
client_id = reg.json()["client_id"]
ok(f"registered {client_id}")

session = OAuth2Session(
    client_id,
    redirect_uri=REDIRECT,
    scope="openid profile email",
    code_challenge_method="S256",
    token_endpoint_auth_method="none",
    revocation_endpoint_auth_method="none",
)
verifier = generate_token(64)
url, state = session.create_authorization_url(
    meta["authorization_endpoint"], code_verifier=verifier, resource=prm["resource"]
)

# The pages, as a browser submits them.
browser = requests.Session()
page = browser.get(url, allow_redirects=False, timeout=30)
if page.status_code != 200 or "text/html" not in page.headers.get("content-type", ""):
    fail("the login page", page)
if page.headers.get("x-frame-options") != "DENY":
    fail("the login page may be framed", page)
form = Fields(page.text).hidden
if not {"request", "csrf"} <= form.keys():
    fail("the login form has no request or csrf field", page)
wrong = browser.post(
    f"{BASE}/auth/login",
    data={**form, "email": EMAIL, "password": PASSWORD + "x"},
    allow_redirects=False,
    timeout=60,
)
if "incorrect" not in wrong.text:
    fail("a wrong password was not refused", wrong)
no_csrf = browser.post(
    f"{BASE}/auth/login",
    data={"request": form["request"], "email": EMAIL, "password": PASSWORD},
    allow_redirects=False,
    timeout=60,
)
if no_csrf.status_code != 403:
    fail("a form without its CSRF token was accepted", no_csrf)
consent = browser.post(
    f"{BASE}/auth/login",
    data={**form, "email": EMAIL, "password": PASSWORD},
    allow_redirects=False,
    timeout=60,
)
if consent.status_code != 200 or "Allow" not in consent.text:
    fail("signing in did not show the consent page", consent)
ok("login page (wrong password and missing CSRF token refused)")
back = browser.post(
    f"{BASE}/auth/consent",
    data={**Fields(consent.text).hidden, "decision": "allow"},
    allow_redirects=False,
    timeout=30,
)
location = back.headers.get("location", "")
if back.status_code != 303 or not location.startswith(REDIRECT + "?"):
    fail("Allow did not send the browser back to the client", back)
if f"iss={requests.utils.quote(meta['issuer'], safe='')}" not in location:
    fail(f"the redirect does not name the issuer (RFC 9207): {location}")
ok("consent redirected with a code")

# Authlib exchanges the code: it checks `state` and sends the verifier.
token = session.fetch_token(
    meta["token_endpoint"], authorization_response=location, code_verifier=verifier
)
if token.get("token_type") != "Bearer" or not token.get("refresh_token"):
    fail(f"token response: {dict(token)}")
ok(f"code exchanged (expires_in {token['expires_in']}, scope {token['scope']!r})")

me = session.get(f"{BASE}/api/v2/me", timeout=30)
if me.status_code != 200 or me.json()["data"]["user"]["email"] != EMAIL:
    fail("GET /api/v2/me with the access token", me)
created = session.post(
    f"{BASE}/api/v2/buyer/advertisers",
    json={"name": "OAuth Check", "brand": "oauth-check.example", "primaryCurrency": "USD"},
    timeout=30,
)
if created.status_code != 201:
    fail("POST /api/v2/buyer/advertisers with the access token", created)
ok("the API answers the access token as the user")

old = dict(token)
new = session.refresh_token(meta["token_endpoint"])
if new["refresh_token"] == old["refresh_token"] or new["access_token"] == old["access_token"]:
    fail("refresh did not rotate the tokens")
me = session.get(f"{BASE}/api/v2/me", timeout=30)
if me.status_code != 200:
    fail("the refreshed access token", me)
ok("refresh rotated both tokens")

revoked = session.revoke_token(
    meta["revocation_endpoint"], token=new["access_token"], token_type_hint="access_token"
)
if revoked.status_code != 200:
    fail("revocation", revoked)
me = session.get(f"{BASE}/api/v2/me", timeout=30)
if me.status_code != 401:
    fail("a revoked access token still works", me)
again = requests.post(
    meta["token_endpoint"],
    data={"grant_type": "refresh_token", "refresh_token": old["refresh_token"], "client_id": client_id},
    timeout=30,
)
if again.status_code != 400 or again.json().get("error") != "invalid_grant":
    fail("the rotated refresh token was accepted", again)
ok("revoked token refused; rotated refresh token refused")

# A second authorization where the user picks "Allow read only": Authlib takes a token
# whose scope is wider in name and narrower in power than it asked (platform:read added).
session = OAuth2Session(
    client_id,
    redirect_uri=REDIRECT,
    scope="openid profile email",
    code_challenge_method="S256",
    token_endpoint_auth_method="none",
)
verifier = generate_token(64)
url, state = session.create_authorization_url(meta["authorization_endpoint"], code_verifier=verifier)
browser = requests.Session()
form = Fields(browser.get(url, allow_redirects=False, timeout=30).text).hidden
consent = browser.post(
    f"{BASE}/auth/login",
    data={**form, "email": EMAIL, "password": PASSWORD},
    allow_redirects=False,
    timeout=60,
)
if 'value="read"' not in consent.text:
    fail("the consent page offers no read-only choice", consent)
back = browser.post(
    f"{BASE}/auth/consent",
    data={**Fields(consent.text).hidden, "decision": "read"},
    allow_redirects=False,
    timeout=30,
)
token = session.fetch_token(
    meta["token_endpoint"], authorization_response=back.headers["location"], code_verifier=verifier
)
if token.get("scope") != "openid profile email platform:read":
    fail(f"read-only token scope: {dict(token)}")
if session.get(f"{BASE}/api/v2/me", timeout=30).status_code != 200:
    fail("a read with the read-only token")
denied = session.post(
    f"{BASE}/api/v2/buyer/advertisers",
    json={"name": "Read Only", "brand": "oauth-check.example", "primaryCurrency": "USD"},
    timeout=30,
)
if denied.status_code != 403:
    fail("a write with the read-only token", denied)
new = session.refresh_token(meta["token_endpoint"])
if new.get("scope") != "openid profile email platform:read":
    fail(f"the refreshed read-only token's scope: {dict(new)}")
if session.post(f"{BASE}/api/v2/buyer/advertisers", json={}, timeout=30).status_code != 403:
    fail("a write with the refreshed read-only token")
ok("read-only consent: token scope says platform:read, reads 200, writes 403, refresh keeps it")

print(f"oauth-check: {passed} passed, 0 failed")
