// What every widget does around its own rendering: registers the App's
// handlers before connecting, follows the host's theme, renders the tool
// result's structuredContent ({data, meta?}) or its error ({code, message,
// recovery, field?, details?}), and marks <html data-state> so a test knows
// when the result is on screen.

import {
  App,
  applyDocumentTheme,
  applyHostStyleVariables,
  type McpUiHostContext,
} from "@modelcontextprotocol/ext-apps";
import { h, joined } from "./dom.ts";
import { obj, str, type Obj } from "./json.ts";
import { setLocale, label } from "./format.ts";
import "./styles.css";

export const VERSION = "1.0.0";

export interface Context {
  app: App;
  /** The tool call's arguments, when the host sent them. */
  input?: Obj;
}

export type Render = (data: unknown, meta: Obj | undefined, ctx: Context) => Node;

type State = "waiting" | "rendered" | "error" | "cancelled";

function setState(state: State): void {
  document.documentElement.dataset.state = state;
}

function root(): HTMLElement {
  return document.getElementById("root") ?? document.body;
}

function applyContext(hc: McpUiHostContext | undefined): void {
  if (!hc) return;
  if (hc.theme) applyDocumentTheme(hc.theme);
  if (hc.styles?.variables) applyHostStyleVariables(hc.styles.variables);
  setLocale(hc.locale, hc.timeZone);
  // Host fonts are left out on purpose: their CSS may load font files,
  // and a widget makes no network request.
}

/** One line for a failed call: the code, the message, and what to do. */
export function errorView(sc: Obj | undefined, fallback?: string): HTMLElement {
  const code = str(sc?.code);
  const message = str(sc?.message) ?? fallback ?? "The call failed.";
  const field = str(sc?.field);
  const recovery = str(sc?.recovery);
  return h(
    "div",
    { class: "error", attrs: { role: "alert" } },
    h("strong", null, code ?? "Error"),
    " ",
    message,
    field || recovery
      ? h(
          "div",
          { class: "small" },
          joined([field && `field ${field}`, recovery && `recovery: ${label(recovery)}`]),
        )
      : null,
  );
}

/** The text of a result's first text content, if any. */
export function contentText(result: { content?: unknown }): string | undefined {
  const first = (Array.isArray(result.content) ? result.content : []).find(
    (c) => obj(c)?.type === "text",
  );
  return str(obj(first)?.text);
}

/** Sets the App's handlers, then connects it to the host. */
export function mount(app: App, render: Render): void {
  const ctx: Context = { app };
  setState("waiting");

  app.ontoolinput = (params) => {
    ctx.input = obj(params.arguments);
  };

  app.ontoolresult = (result) => {
    applyContext(app.getHostContext());
    const sc = obj(result.structuredContent);
    if (result.isError) {
      root().replaceChildren(errorView(sc, contentText(result)));
      setState("error");
      return;
    }
    if (!sc || !("data" in sc)) {
      root().replaceChildren(
        h("p", { class: "muted" }, contentText(result) ?? "This result has no data to show."),
      );
      setState("rendered");
      return;
    }
    try {
      root().replaceChildren(render(sc.data, obj(sc.meta), ctx));
      setState("rendered");
    } catch (e) {
      console.error("widget render failed", e);
      root().replaceChildren(
        errorView({ code: "RENDER_FAILED", message: `This result could not be shown: ${e}` }),
      );
      setState("error");
    }
  };

  app.ontoolcancelled = (params) => {
    root().replaceChildren(
      h("p", { class: "muted" }, "The call was cancelled", params.reason ? `: ${params.reason}` : "."),
    );
    setState("cancelled");
  };

  app.onhostcontextchanged = (hc) => applyContext(hc);

  app
    .connect()
    .then(() => applyContext(app.getHostContext()))
    .catch((e: unknown) => {
      console.error("could not connect to the host", e);
      root().replaceChildren(errorView({ code: "NOT_CONNECTED", message: `No host answered: ${e}` }));
      setState("error");
    });
}

/** A status as a coloured badge. */
export function badge(status: string, title?: string): HTMLElement {
  return h("span", { class: `badge ${tone(status)}`, title }, label(status));
}

function tone(status: string): string {
  switch (status.toLowerCase()) {
    case "active":
    case "completed":
      return "good";
    case "draft":
    case "dispatching":
    case "submitted":
    case "pending_creatives":
    case "pending_start":
      return "info";
    case "paused":
    case "archived":
      return "warn";
    case "failed":
    case "rejected":
    case "canceled":
    case "cancelled":
      return "bad";
    default:
      return "neutral";
  }
}

/** A definition list of label / value pairs; pairs without a value are left out. */
export function facts(pairs: [string, Node | string | undefined | null][]): HTMLElement {
  const dl = h("dl", { class: "facts" });
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(h("dt", null, k), h("dd", null, v));
  }
  return dl;
}

/** Values as small chips. */
export function chips(values: string[]): HTMLElement {
  return h("span", { class: "chips" }, values.map((v) => h("span", { class: "chip" }, v)));
}
