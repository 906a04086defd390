// Signing in: the console is the server's built-in public OAuth client
// (`agentic-console`), using the authorization code grant with PKCE S256
// through the server's own login page. Tokens live in sessionStorage: they
// end with the tab, are never written to disk by the browser for later
// sessions, and are not shared with other tabs (each tab signs in once).
// A duplicated tab (whose sessionStorage is a copy) stays in step through a
// BroadcastChannel, and refreshes are serialised across tabs with a Web
// Lock, because a refresh token is single use: presenting a spent one
// revokes the whole grant.

const SESSION = "agentic.console.session";
const PENDING = "agentic.console.pending";
/** Refresh this long before the access token expires. */
const EARLY_MS = 60_000;

let config = null;
let refreshing = null;
const channel = "BroadcastChannel" in window ? new BroadcastChannel("agentic-console") : null;
const listeners = new Set();

export class SignInError extends Error {}

/** `/console/config.json`: the client id, scope, issuer and redirect URIs. */
export async function loadConfig() {
  if (config) return config;
  const res = await fetch("/console/config.json", { headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`could not load the console's settings (HTTP ${res.status})`);
  config = await res.json();
  return config;
}

export function redirectUri() {
  return `${location.origin}/console/callback`;
}

/** Can this page sign in from its own address? (Else: where it can.) */
export function signInAddress() {
  if (!config || config.redirectUris.includes(redirectUri())) return null;
  return config.issuer;
}

function base64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function randomString(bytes = 32) {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

/** Can this page sign in? The PKCE challenge needs the browser's SHA-256
 * (crypto.subtle), which only a secure context has: https, or a loopback
 * address such as localhost. */
export function secureEnough() {
  return Boolean(window.isSecureContext && window.crypto && crypto.subtle);
}

async function challengeOf(verifier) {
  if (!secureEnough()) {
    throw new SignInError(
      "signing in needs a secure address: https (set AGENTIC_PUBLIC_URL to one), or this machine's own, such as localhost",
    );
  }
  const data = new TextEncoder().encode(verifier);
  return base64url(new Uint8Array(await crypto.subtle.digest("SHA-256", data)));
}

/** Goes to the login page; comes back to `returnTo` (a `#/...` route). */
export async function signIn(returnTo = "#/") {
  const cfg = await loadConfig();
  const verifier = randomString(48);
  const state = randomString(24);
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, returnTo }));
  const params = new URLSearchParams({
    response_type: "code",
    client_id: cfg.clientId,
    redirect_uri: redirectUri(),
    scope: cfg.scope,
    state,
    code_challenge: await challengeOf(verifier),
    code_challenge_method: "S256",
  });
  location.assign(`/authorize?${params}`);
}

async function tokenRequest(fields) {
  const res = await fetch("/auth/token", {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: new URLSearchParams(fields),
  });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) {
    const reason = (body && (body.error_description || body.error)) || `HTTP ${res.status}`;
    const err = new SignInError(reason);
    err.status = res.status;
    err.oauthError = body && body.error;
    throw err;
  }
  return body;
}

function store(session) {
  sessionStorage.setItem(SESSION, JSON.stringify(session));
  for (const fn of listeners) fn(session);
}

function fromTokens(id, tokens) {
  return {
    id,
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    expiresAt: Date.now() + tokens.expires_in * 1000,
    scope: tokens.scope,
  };
}

/**
 * At `/console/callback`: checks `state` and `iss`, exchanges the code
 * (with the PKCE verifier) and returns the route to go back to.
 */
export async function completeSignIn() {
  const cfg = await loadConfig();
  const query = new URLSearchParams(location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || "null");
  sessionStorage.removeItem(PENDING);
  if (!pending || query.get("state") !== pending.state) {
    throw new SignInError("this sign-in was not started from this tab; start again");
  }
  if (query.get("iss") && query.get("iss") !== cfg.issuer) {
    throw new SignInError("the answer came from another server than this one");
  }
  if (query.get("error")) {
    throw new SignInError(query.get("error_description") || query.get("error"));
  }
  const tokens = await tokenRequest({
    grant_type: "authorization_code",
    code: query.get("code") || "",
    redirect_uri: redirectUri(),
    client_id: cfg.clientId,
    code_verifier: pending.verifier,
  });
  store(fromTokens(randomString(12), tokens));
  return pending.returnTo || "#/";
}

export function session() {
  try {
    return JSON.parse(sessionStorage.getItem(SESSION) || "null");
  } catch {
    return null;
  }
}

export function signedIn() {
  return session() !== null;
}

/** Called with the new session (or null) whenever it changes. */
export function onSessionChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function forget() {
  sessionStorage.removeItem(SESSION);
  for (const fn of listeners) fn(null);
}

/**
 * A fresh access token: refreshed first when it expires within a minute,
 * or when `stale` (a token the server just refused) is still the current one.
 */
export async function accessToken(stale = null) {
  const s = session();
  if (!s) throw new SignInError("not signed in");
  if (s.accessToken !== stale && s.expiresAt - Date.now() > EARLY_MS) return s.accessToken;
  return (await refresh(s.accessToken)).accessToken;
}

function refresh(stale) {
  if (refreshing) return refreshing;
  const run = async () => {
    // Another tab holding a copy of this session may have just refreshed:
    // its broadcast lands before the lock is ours in practice; give it a beat.
    await new Promise((r) => setTimeout(r, 50));
    const s = session();
    if (!s) throw new SignInError("not signed in");
    if (s.accessToken !== stale && s.expiresAt - Date.now() > EARLY_MS) return s;
    const cfg = await loadConfig();
    try {
      const tokens = await tokenRequest({
        grant_type: "refresh_token",
        refresh_token: s.refreshToken,
        client_id: cfg.clientId,
      });
      const next = fromTokens(s.id, tokens);
      store(next);
      if (channel) channel.postMessage({ type: "session", session: next });
      return next;
    } catch (err) {
      if (err instanceof SignInError && err.status === 400) {
        // The grant is gone (revoked, expired, signed out elsewhere).
        forget();
      }
      throw err;
    }
  };
  const s = session();
  const locked =
    navigator.locks && s
      ? navigator.locks.request(`agentic-console-refresh-${s.id}`, run)
      : run();
  refreshing = locked.finally(() => {
    refreshing = null;
  });
  return refreshing;
}

/** Ends the grant at the server (every tab of it), then forgets it here. */
export async function signOut() {
  const s = session();
  forget();
  if (!s) return;
  if (channel) channel.postMessage({ type: "signed-out", id: s.id });
  try {
    const cfg = await loadConfig();
    await fetch("/auth/revoke", {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: s.refreshToken, client_id: cfg.clientId }),
    });
  } catch {
    // Signed out here either way; the grant ends with its refresh token.
  }
}

if (channel) {
  channel.addEventListener("message", (e) => {
    const mine = session();
    const msg = e.data || {};
    if (!mine) return;
    if (msg.type === "session" && msg.session && msg.session.id === mine.id) store(msg.session);
    if (msg.type === "signed-out" && msg.id === mine.id) forget();
  });
}
