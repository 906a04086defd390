// Notifications: the caller's list (list_notifications), unread only or
// all, acknowledging one or all (acknowledge_notifications), and new ones
// arriving live on the notification stream (with a stream token).

import { h, replace, title, errorBox, when, announce, actionButton } from "../lib/dom.js";
import { get, post } from "../lib/api.js";
import { openStream } from "../lib/stream.js";

export async function render(main, _params) {
  const listBox = h("div", { id: "notification-list", "aria-live": "polite" });
  const state = h("p", { class: "hint", id: "notification-stream-state" }, "Connecting…");
  const unreadOnly = h("input", { type: "checkbox", id: "unread-only", checked: true });
  const problem = h("div");
  let items = [];
  /** The newest sequence shown: the stream resumes after it. */
  let after = null;

  const ackAll = actionButton(
    "Acknowledge all",
    async () => {
      try {
        const { data } = await post("/notifications/acknowledge", { all: true });
        announce(`${data.acknowledged} acknowledged`);
        await load();
      } catch (err) {
        replace(problem, errorBox(err));
      }
    },
    { id: "acknowledge-all" },
  );
  unreadOnly.addEventListener("change", () => load());

  replace(
    main,
    title("Notifications"),
    h(
      "div",
      { class: "actions" },
      h("label", { for: "unread-only" }, unreadOnly, " Unread only"),
      ackAll,
    ),
    state,
    problem,
    listBox,
  );

  function row(n) {
    const ack = n.acknowledgedAt
      ? h("span", { class: "hint" }, "acknowledged")
      : actionButton("Acknowledge", async () => {
          try {
            await post("/notifications/acknowledge", { ids: [n.id] });
            await load();
          } catch (err) {
            replace(problem, errorBox(err));
          }
        });
    return h(
      "li",
      { class: n.readAt ? "notification" : "notification unread", dataset: { id: n.id, topic: n.topic } },
      h("strong", {}, n.title),
      " ",
      h("span", { class: "hint" }, `${n.topic} · ${when(n.createdAt)}`),
      h("p", {}, n.body),
      ack,
    );
  }

  function show() {
    if (items.length === 0) {
      replace(listBox, h("p", { class: "empty" }, unreadOnly.checked ? "Nothing unread." : "No notifications yet."));
      return;
    }
    replace(listBox, h("ul", { class: "rows", id: "notifications" }, items.map(row)));
  }

  async function load() {
    try {
      const query = { take: 50 };
      if (unreadOnly.checked) query.unread = true;
      items = (await get("/notifications", query)).data || [];
    } catch (err) {
      replace(listBox, errorBox(err));
      return;
    }
    for (const n of items) after = Math.max(after ?? 0, n.sequence);
    show();
  }

  await load();
  const stream = openStream(
    "/api/v2/notifications/events",
    {
      "notification.created": (n) => {
        after = Math.max(after ?? 0, n.sequence);
        if (items.some((i) => i.id === n.id)) return;
        items = [n, ...items].slice(0, 50);
        show();
        announce(n.title);
      },
    },
    {
      query: () => (after === null ? {} : { after }),
      onState: (s) => {
        state.textContent = s === "open" ? "Live: new notifications appear here." : s === "ended" ? "Not live." : "Connecting…";
      },
    },
  );
  return () => stream.close();
}
