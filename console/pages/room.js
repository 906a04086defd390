// A live room: its history and new messages, presence, room messages, and
// turns directed at the assistant with the answer streamed as it is
// produced, tool calls and results, and proposed actions to confirm.
//
// Everything arrives on the room's event stream (GET …/events, opened with
// a stream token, replayed from `after=0`): `message.created`,
// `presence.changed`, and for the assistant `message.delta` (partial text
// of an answer, per run) and `run.updated`. A server without the assistant
// answers the turn endpoint with 404: the console says so and keeps the
// room working.

import { h, replace, title, errorBox, when, announce, jsonDetails } from "../lib/dom.js";
import { get, post, patch } from "../lib/api.js";
import { openStream } from "../lib/stream.js";

const ACTIVE = new Set(["queued", "running", "awaiting_confirmation"]);
const STATUS_TEXT = {
  queued: "Waiting for its turn",
  running: "Working",
  awaiting_confirmation: "Waiting for a confirmation",
  completed: "Done",
  failed: "Failed",
  canceled: "Canceled",
  interrupted: "Interrupted",
};

export async function render(main, params, ctx) {
  const uid = params.uid;
  const base = `/assistant/conversations/${encodeURIComponent(uid)}`;
  const me = ctx.me;

  const seen = new Set(); // message sequences shown
  let lastSequence = 0;
  const typing = new Map(); // runId -> {el, text, index}
  const runs = new Map(); // runId -> run
  const actionCards = new Map(); // actionId -> {runId, settle(text)}
  let assistantAvailable = true;

  const heading = title("Conversation");
  const status = h("p", { id: "room-status", class: "status", "aria-live": "polite" }, "Connecting…");
  const presence = h("ul", { id: "presence", class: "chips", "aria-label": "Here now" });
  const messages = h("ol", { id: "messages", class: "messages", "aria-label": "Messages" });
  const runsBox = h("div", { id: "runs", "aria-live": "polite" });
  const sharingBox = h("span", { class: "sharing" });
  const problem = h("div", { "aria-live": "assertive" });

  const text = h("textarea", {
    id: "message",
    name: "content",
    rows: "3",
    maxlength: "32000",
    required: true,
    "aria-describedby": "composer-hint",
  });
  const toRoom = h("button", { type: "submit", value: "room", class: "primary", id: "send-room" }, "Send to room");
  const toAssistant = h("button", { type: "submit", value: "assistant", id: "ask-assistant" }, "Ask the assistant");
  const composer = h(
    "form",
    { id: "composer", class: "composer" },
    h("label", { for: "message" }, "Message"),
    text,
    h(
      "p",
      { id: "composer-hint", class: "hint" },
      "Ctrl+Enter sends to the room. The assistant answers here for everyone in the room.",
    ),
    h("div", { class: "actions" }, toRoom, toAssistant),
    problem,
  );

  // ---------------------------------------------------------- messages

  const atBottom = () => messages.scrollHeight - messages.scrollTop - messages.clientHeight < 40;
  /** Adds a message in sequence order (typing bubbles stay last). */
  function add(el) {
    const stick = atBottom();
    const seq = Number(el.dataset.sequence);
    let before = null;
    if (!Number.isNaN(seq)) {
      for (const child of messages.children) {
        const other = Number(child.dataset.sequence);
        if (child.classList.contains("typing") || (!Number.isNaN(other) && other > seq)) {
          before = child;
          break;
        }
      }
    }
    messages.insertBefore(el, before);
    if (stick) messages.scrollTop = messages.scrollHeight;
  }

  function authorOf(m) {
    if (!m.author) return "Assistant";
    if (me && m.author.userId === me.user.id) return `${m.author.name} (you)`;
    return m.author.name;
  }

  function bubble(m, body, extraClass = "") {
    const kind = m.kind || (m.audience === "assistant" && !m.author ? "answer" : "message");
    return h(
      "li",
      {
        class: `message ${m.author ? "from-person" : "from-assistant"} ${m.author && m.audience === "assistant" ? "to-assistant" : ""} ${extraClass}`,
        dataset: { sequence: String(m.sequence), kind, runId: m.runId || "" },
      },
      h(
        "div",
        { class: "message-head" },
        h("span", { class: "author" }, authorOf(m)),
        m.author && m.audience === "assistant" ? h("span", { class: "tag" }, "to the assistant") : null,
        h("time", { datetime: m.createdAt || "" }, when(m.createdAt)),
      ),
      body,
    );
  }

  function actionCard(m) {
    const data = m.data || {};
    const result = h("p", { class: "action-result" });
    const confirm = h("button", { type: "button", class: "primary" }, "Confirm");
    const decline = h("button", { type: "button" }, "Decline");
    const settle = (textValue) => {
      confirm.disabled = true;
      decline.disabled = true;
      result.textContent = textValue;
    };
    const decide = async (decision) => {
      confirm.disabled = true;
      decline.disabled = true;
      try {
        await post(
          `${base}/runs/${encodeURIComponent(m.runId)}/actions/${encodeURIComponent(data.actionId)}`,
          { decision },
        );
        settle(decision === "confirm" ? "Confirmed." : "Declined.");
        announce(decision === "confirm" ? "Action confirmed." : "Action declined.");
      } catch (err) {
        result.replaceChildren(errorBox(err));
        confirm.disabled = false;
        decline.disabled = false;
      }
    };
    confirm.addEventListener("click", () => decide("confirm"));
    decline.addEventListener("click", () => decide("decline"));
    if (data.actionId) actionCards.set(data.actionId, { runId: m.runId, settle });
    const run = runs.get(m.runId);
    if (run && !ACTIVE.has(run.status)) settle(`No longer pending (${STATUS_TEXT[run.status] || run.status}).`);
    return h(
      "div",
      { class: "action-card", role: "group", "aria-label": `Proposed action ${data.operation || ""}` },
      h("p", {}, m.content || "The assistant proposes an action:"),
      h("p", {}, h("strong", {}, "Operation: "), h("code", {}, data.operation || "(unnamed)")),
      jsonDetails("Arguments", data.arguments ?? {}, true),
      h("div", { class: "actions" }, confirm, decline),
      result,
    );
  }

  function show(m) {
    if (seen.has(m.sequence)) return;
    seen.add(m.sequence);
    lastSequence = Math.max(lastSequence, m.sequence);
    const kind = m.kind;
    const data = m.data || {};
    let el;
    if (m.author || m.audience === "room" || !kind || kind === "answer") {
      el = bubble(m, h("p", { class: "content" }, m.content));
    } else if (kind === "tool_call") {
      el = bubble(
        m,
        jsonDetails(`Tool call: ${data.operation || data.name || data.tool || "tool"}`, data),
        "compact",
      );
      if (data.actionId && actionCards.has(data.actionId)) actionCards.get(data.actionId).settle("Confirmed.");
    } else if (kind === "tool_result") {
      el = bubble(
        m,
        jsonDetails(`Tool result${data.operation || data.name ? `: ${data.operation || data.name}` : ""}`, data),
        "compact",
      );
    } else if (kind === "action_proposed") {
      el = bubble(m, actionCard(m), "action");
    } else if (kind === "action_declined") {
      el = bubble(m, h("p", { class: "content" }, m.content || "The action was declined."), "compact");
      if (data.actionId && actionCards.has(data.actionId)) actionCards.get(data.actionId).settle("Declined.");
    } else {
      el = bubble(m, h("p", { class: "content" }, m.content), "notice");
    }
    add(el);
    if (m.audience === "assistant" && !m.author && kind === "answer" && m.runId) dropTyping(m.runId);
  }

  // ------------------------------------------------- assistant streaming

  function dropTyping(runId) {
    const t = typing.get(runId);
    if (t) t.el.remove();
    typing.delete(runId);
  }

  function delta(d) {
    if (!d || !d.runId) return;
    let t = typing.get(d.runId);
    if (!t) {
      const textEl = h("p", { class: "content" });
      const el = h(
        "li",
        { class: "message from-assistant typing", dataset: { runId: d.runId }, "aria-busy": "true" },
        h("div", { class: "message-head" }, h("span", { class: "author" }, "Assistant"), h("span", { class: "tag" }, "writing…")),
        textEl,
      );
      t = { el, textEl, text: "", index: -1 };
      typing.set(d.runId, t);
      add(el);
    }
    if (typeof d.index === "number") {
      if (d.index <= t.index) return; // already shown (a replay)
      t.index = d.index;
    }
    t.text += d.delta || "";
    t.textEl.textContent = t.text;
    if (atBottom()) messages.scrollTop = messages.scrollHeight;
  }

  function runUpdated(run) {
    if (!run || !run.runId) return;
    runs.set(run.runId, run);
    if (!ACTIVE.has(run.status)) {
      dropTyping(run.runId);
      for (const card of actionCards.values()) {
        if (card.runId === run.runId) card.settle(`No longer pending (${STATUS_TEXT[run.status] || run.status}).`);
      }
    }
    renderRuns();
  }

  function renderRuns() {
    const active = [...runs.values()].filter((r) => ACTIVE.has(r.status));
    replace(
      runsBox,
      active.map((r) => {
        const cancel = h("button", { type: "button", class: "danger" }, "Cancel");
        cancel.addEventListener("click", async () => {
          cancel.disabled = true;
          try {
            const { data } = await post(`${base}/runs/${encodeURIComponent(r.runId)}/cancel`);
            if (data && data.run) runUpdated(data.run);
            announce("Run canceled.");
          } catch (err) {
            cancel.after(errorBox(err));
            cancel.disabled = false;
          }
        });
        return h(
          "div",
          { class: "run", dataset: { runId: r.runId, runStatus: r.status } },
          h("span", {}, `Assistant: ${STATUS_TEXT[r.status] || r.status}`),
          r.status === "queued" || r.status === "running" ? cancel : null,
        );
      }),
    );
  }

  // ---------------------------------------------------------- composer

  async function send(audience) {
    const content = text.value;
    if (!content.trim()) {
      text.focus();
      return;
    }
    replace(problem);
    toRoom.disabled = true;
    toAssistant.disabled = true;
    try {
      if (audience === "assistant") {
        const { data } = await post(`${base}/turns`, { content });
        if (data && data.message) show(data.message);
        if (data && data.run) runUpdated(data.run);
      } else {
        const { data } = await post(`${base}/messages`, { audience: "room", content });
        if (data && data.message) show(data.message);
      }
      text.value = "";
    } catch (err) {
      if (audience === "assistant" && (err.status === 404 || err.status === 405 || err.status === 501)) {
        if (/no route/i.test(err.message) || err.status !== 404) {
          assistantAvailable = false;
          replace(
            problem,
            h(
              "p",
              { class: "notice", role: "status" },
              "The assistant is not available on this server. Your message was not sent; send it to the room instead.",
            ),
          );
        } else {
          replace(problem, errorBox(err));
        }
      } else {
        replace(problem, errorBox(err));
      }
    } finally {
      toRoom.disabled = false;
      toAssistant.disabled = !assistantAvailable || !(me && me.account.assistantEnabled);
      text.focus();
    }
  }

  composer.addEventListener("submit", (e) => {
    e.preventDefault();
    send(e.submitter && e.submitter.value === "assistant" ? "assistant" : "room");
  });
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      send("room");
    }
  });
  if (me && !me.account.assistantEnabled) {
    toAssistant.disabled = true;
    toAssistant.title = "The assistant is off for this account";
  }

  // ------------------------------------------------------ header, stream

  async function loadHeader() {
    try {
      const { data } = await get("/assistant/conversations", { take: 100 });
      const c = (data.conversations || []).find((x) => x.conversationUid === uid);
      if (!c) return;
      heading.textContent = c.title;
      document.title = `${c.title} · Agentic console`;
      const toggle = h(
        "button",
        { type: "button", id: "room-sharing", "aria-pressed": c.sharingEnabled ? "true" : "false" },
        c.sharingEnabled ? "Shared with teammates" : "Private",
      );
      toggle.addEventListener("click", async () => {
        toggle.disabled = true;
        try {
          await patch(`${base}/sharing`, { sharingEnabled: !c.sharingEnabled });
          await loadHeader();
          const again = document.getElementById("room-sharing");
          if (again) again.focus();
        } catch (err) {
          toggle.after(errorBox(err));
          toggle.disabled = false;
        }
      });
      replace(sharingBox, toggle);
    } catch {
      // The title is a nicety; the stream says whether the room opens.
    }
  }

  replace(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/conversations" }, "Conversations")),
    heading,
    h("div", { class: "room-bar" }, status, sharingBox),
    h(
      "div",
      { class: "room" },
      h(
        "section",
        { class: "room-main", "aria-label": "Room" },
        messages,
        runsBox,
        composer,
      ),
      h("aside", { class: "room-side" }, h("h2", {}, "Here now"), presence),
    ),
  );
  loadHeader();

  const stream = openStream(
    `/api/v2${base}/events`,
    {
      ready: () => {
        status.textContent = "Live";
        status.dataset.state = "live";
      },
      "message.created": (d) => d && d.message && show(d.message),
      "presence.changed": (d) =>
        replace(
          presence,
          (d.participants || []).map((p) =>
            h("li", { dataset: { userId: String(p.userId) } }, me && p.userId === me.user.id ? `${p.name} (you)` : p.name),
          ),
        ),
      "message.delta": delta,
      "run.updated": (d) => d && runUpdated(d.run),
      error: (err) => {
        status.textContent = `Stream interrupted: ${err.message || err.code}`;
      },
    },
    {
      query: () => ({ after: lastSequence }),
      onState: (state, detail) => {
        if (state === "connecting" || state === "retrying") {
          status.dataset.state = state;
          if (state === "retrying") status.textContent = "Reconnecting…";
        }
        if (state === "ended") {
          status.dataset.state = "ended";
          replace(status, "This room is closed to you. ");
          if (detail && detail.error) status.append(errorBox(detail.error));
        }
      },
    },
  );
  return () => stream.close();
}
