// The public REST API (`/api/v2`), as any client calls it: a bearer access
// token, JSON bodies, and the `{data, error, meta}` envelope.

import { accessToken } from "./auth.js";

export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `HTTP ${status}`);
    this.status = status;
    this.code = error.code || `HTTP_${status}`;
    this.field = error.field;
    this.details = error.details;
  }
}

/**
 * `method path` under `/api/v2` with an optional JSON `body` and `query`
 * object; resolves to `{data, meta, status}` or rejects with an ApiError.
 * A 401 is retried once with a refreshed token.
 */
export async function api(method, path, { body, query } = {}) {
  const qs = query ? `?${new URLSearchParams(clean(query))}` : "";
  let token = await accessToken();
  for (let attempt = 0; ; attempt++) {
    const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(`/api/v2${path}${qs}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401 && attempt === 0) {
      token = await accessToken(token);
      continue;
    }
    let parsed = null;
    try {
      parsed = await res.json();
    } catch {
      parsed = null;
    }
    if (!res.ok) {
      const err = new ApiError(res.status, parsed);
      if (res.status === 429) {
        err.message = `${err.message} (try again in ${res.headers.get("retry-after") || "a few"} s)`;
      }
      throw err;
    }
    return { data: parsed ? parsed.data : null, meta: parsed ? parsed.meta : null, status: res.status };
  }
}

function clean(query) {
  const out = {};
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== "") out[k] = String(v);
  }
  return out;
}

export const get = (path, query) => api("GET", path, { query });
export const post = (path, body) => api("POST", path, { body });
export const patch = (path, body) => api("PATCH", path, { body });
export const del = (path, body) => api("DELETE", path, { body });

/** Every page of a list (`take`/`skip`), up to `limit` items. */
export async function all(path, query = {}, limit = 500) {
  const items = [];
  for (let skip = 0; items.length < limit; ) {
    const { data, meta } = await get(path, { ...query, take: 100, skip });
    const page = Array.isArray(data) ? data : [];
    items.push(...page);
    const more = meta && meta.pagination && meta.pagination.hasMore;
    if (!more || page.length === 0) break;
    skip += page.length;
  }
  return items;
}
