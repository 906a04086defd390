// Event streams through the browser's own EventSource, which cannot send
// an Authorization header: a stream token is minted for the stream's path
// (POST /api/v2/auth/stream-tokens) and passed as `?streamToken=`. The
// browser reconnects by itself (same URL, Last-Event-ID) after a dropped
// connection; when it gives up (the 5-minute token expired, or the server
// ended the stream with an `error` event) a new token is minted and the
// stream reopened from the last cursor.

import { post } from "./api.js";
import { accessToken } from "./auth.js";

/**
 * Opens `path` and calls `handlers[eventName](data, event)` for each named
 * event. Options:
 *  - `query()`: extra query parameters for each (re)connection, e.g. the
 *    `after` cursor;
 *  - `onState(state, detail)`: "connecting", "open", "retrying", "ended";
 *  - `shouldReconnect(errorData)`: after a server `error` event (default:
 *    yes, except NOT_FOUND);
 *  - `endOn`: event names after which the stream is finished for good.
 * Returns `{close()}`.
 */
export function openStream(path, handlers, options = {}) {
  const { query = () => ({}), onState = () => {}, endOn = [] } = options;
  const shouldReconnect =
    options.shouldReconnect || ((err) => !err || (err.code !== "NOT_FOUND" && err.status !== 403));
  let source = null;
  let closed = false;
  let timer = null;
  let failures = 0;
  /** Connections in a row that closed before they opened (a refusal). */
  let refusals = 0;

  const stop = () => {
    if (source) source.close();
    source = null;
  };

  const schedule = () => {
    if (closed) return;
    failures += 1;
    const delay = Math.min(30_000, 500 * 2 ** Math.min(failures, 6)) * (1 + Math.random() * 0.25);
    onState("retrying", { inMs: Math.round(delay) });
    clearTimeout(timer);
    timer = setTimeout(connect, delay);
  };

  async function connect() {
    if (closed) return;
    stop();
    onState("connecting");
    let minted;
    try {
      minted = (await post("/auth/stream-tokens", { stream: path })).data;
    } catch (err) {
      if (err.status === 404 || err.status === 403 || err.status === 400) {
        onState("ended", { error: err });
        closed = true;
        return;
      }
      schedule();
      return;
    }
    if (closed) return;
    const params = new URLSearchParams({ ...query(), streamToken: minted.token });
    const es = new EventSource(`${minted.stream}?${params}`);
    source = es;
    let opened = false;
    es.onopen = () => {
      opened = true;
      failures = 0;
      refusals = 0;
      onState("open");
    };
    for (const [name, fn] of Object.entries(handlers)) {
      if (name === "error") continue;
      es.addEventListener(name, (e) => {
        let data = null;
        try {
          data = JSON.parse(e.data);
        } catch {
          data = e.data;
        }
        fn(data, e);
        if (endOn.includes(name)) {
          closed = true;
          stop();
          onState("ended", {});
        }
      });
    }
    es.addEventListener("error", async (e) => {
      if (source !== es || closed) return;
      if (typeof e.data === "string") {
        // The server's own `error` event: the stream ends after it.
        let err = null;
        try {
          err = JSON.parse(e.data);
        } catch {
          err = { code: "ERROR", message: e.data };
        }
        if (handlers.error) handlers.error(err);
        stop();
        if (!shouldReconnect(err)) {
          closed = true;
          onState("ended", { error: err });
          return;
        }
        if (err.code === "UNAUTHORIZED") {
          // The access token behind the stream expired: a fresh one first.
          try {
            await accessToken();
          } catch {
            closed = true;
            onState("ended", { error: err });
            return;
          }
        }
        schedule();
        return;
      }
      if (es.readyState === EventSource.CLOSED) {
        // The browser gave up (e.g. the stream token expired on a retry).
        stop();
        refusals = opened ? 0 : refusals + 1;
        if (refusals >= 3) {
          // Refused each time before it opened (e.g. no longer active).
          closed = true;
          onState("ended", { error: { code: "STREAM_UNAVAILABLE", message: "the stream cannot be opened" } });
          return;
        }
        schedule();
      } else {
        onState("retrying", {});
      }
    });
  }

  connect();
  return {
    close() {
      closed = true;
      clearTimeout(timer);
      stop();
    },
  };
}
