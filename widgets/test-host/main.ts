// A minimal MCP Apps host for tests: it puts a widget's HTML in a sandboxed
// iframe (srcdoc, allow-scripts only, as agent hosts do), connects the SDK's
// AppBridge to it, sends the tool input and result once the view is
// initialised, answers the view's tool calls and records them.
//
//   await hostWidget(html, toolResult, toolInput?, hostContext?)
//   window.toolCalls        [{name, arguments}] asked by the widget
//   window.answerToolCall   async (name, args) => CallToolResult (overridable)
//   window.hostErrors       errors seen by the host side
//
// The widget runs under the policy hosts apply to a resource that declares
// no domains (CSP below): no network at all.

import { AppBridge, PostMessageTransport, type McpUiHostContext } from "@modelcontextprotocol/ext-apps/app-bridge";

type ToolResult = Parameters<AppBridge["sendToolResult"]>[0];
type CallResult = Awaited<ReturnType<NonNullable<AppBridge["oncalltool"]>>>;

declare global {
  interface Window {
    hostWidget: (
      html: string,
      toolResult: ToolResult,
      toolInput?: Record<string, unknown>,
      hostContext?: McpUiHostContext,
    ) => Promise<void>;
    toolCalls: { name: string; arguments: Record<string, unknown> }[];
    answerToolCall: (name: string, args: Record<string, unknown>) => Promise<CallResult>;
    hostErrors: string[];
    widgetSize?: { width?: number; height?: number };
  }
}

window.toolCalls = [];
window.hostErrors = [];
window.answerToolCall = async () => ({
  content: [{ type: "text", text: "ok" }],
  structuredContent: { data: {} },
});

function fail(what: string, e: unknown): void {
  window.hostErrors.push(`${what}: ${e instanceof Error ? e.message : String(e)}`);
}

window.addEventListener("error", (e) => fail("host page error", e.message));
window.addEventListener("unhandledrejection", (e) => fail("host unhandled rejection", e.reason));

/**
 * The policy an MCP Apps host applies to a resource that declares no
 * domains (_meta.ui.csp empty): inline script and style only, no network.
 * Hosts send it as a header; a srcdoc frame can only take it as a meta tag,
 * put first in <head> so it governs everything after it.
 */
export const CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; " +
  "img-src data:; font-src data:; media-src data:; connect-src 'none'; frame-src 'none'; " +
  "base-uri 'none'; form-action 'none'";

function withCsp(html: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${CSP}">`;
  const head = /<head[^>]*>/i.exec(html);
  if (!head) throw new Error("the widget's HTML has no <head>");
  const at = head.index + head[0].length;
  return html.slice(0, at) + meta + html.slice(at);
}

let current: { bridge: AppBridge; iframe: HTMLIFrameElement } | undefined;

window.hostWidget = async (html, toolResult, toolInput, hostContext) => {
  if (current) {
    await current.bridge.close().catch(() => {});
    current.iframe.remove();
    current = undefined;
  }
  const iframe = document.createElement("iframe");
  iframe.setAttribute("sandbox", "allow-scripts");
  iframe.id = "widget";
  iframe.title = "widget";
  document.getElementById("frame")!.appendChild(iframe);

  const bridge = new AppBridge(
    null,
    { name: "agentic-api test host", version: "1.0.0" },
    { serverTools: {}, logging: {} },
    {
      hostContext: {
        theme: "light",
        locale: "en-US",
        timeZone: "UTC",
        platform: "web",
        displayMode: "inline",
        availableDisplayModes: ["inline"],
        containerDimensions: { width: 720, maxHeight: 4000 },
        ...hostContext,
      },
    },
  );
  current = { bridge, iframe };
  bridge.oncalltool = async (params) => {
    const args = (params.arguments ?? {}) as Record<string, unknown>;
    window.toolCalls.push({ name: params.name, arguments: args });
    // A throw goes back to the view as the call's error (a test's choice,
    // so not one of hostErrors).
    return await window.answerToolCall(params.name, args);
  };
  bridge.onsizechange = ({ width, height }) => {
    window.widgetSize = { width, height };
    if (height !== undefined) iframe.style.height = `${Math.ceil(height)}px`;
  };
  bridge.onloggingmessage = (p) => {
    if (p.level === "error" || p.level === "critical" || p.level === "alert" || p.level === "emergency")
      fail("widget log", JSON.stringify(p.data));
  };
  bridge.onerror = (e) => fail("bridge", e);

  const initialised = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the view did not initialise within 15 s")), 15_000);
    bridge.oninitialized = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  // Listen before the view loads, so its ui/initialize is not missed.
  await bridge.connect(new PostMessageTransport(iframe.contentWindow!, iframe.contentWindow!));
  iframe.srcdoc = withCsp(html);
  try {
    await initialised;
  } catch (e) {
    fail("hostWidget", e);
    throw e;
  }
  await bridge.sendToolInput({ arguments: toolInput ?? {} });
  await bridge.sendToolResult(toolResult);
};
