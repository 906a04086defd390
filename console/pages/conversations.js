// Conversations: the list (list_conversations), a new one
// (create_conversation) and the sharing switch (set_conversation_sharing).

import { h, replace, title, errorBox, when, announce, field } from "../lib/dom.js";
import { get, post, patch } from "../lib/api.js";

export async function render(main, _params, ctx) {
  const listBox = h("div", { id: "conversation-list" });
  const problem = h("div", { "aria-live": "polite" });
  const sharingOn = ctx.me && ctx.me.account.sharedConversationsEnabled;

  const titleInput = h("input", { type: "text", name: "title", maxlength: "255", autocomplete: "off" });
  const sharing = h(
    "select",
    { name: "sharing", disabled: !sharingOn },
    h("option", { value: "" }, "The account's default"),
    h("option", { value: "true" }, "Shared with teammates"),
    h("option", { value: "false" }, "Private"),
  );
  const submit = h("button", { type: "submit", class: "primary" }, "Create conversation");
  const form = h(
    "form",
    { id: "create-conversation", class: "card" },
    h("h2", {}, "New conversation"),
    field("Title (optional)", titleInput, "Until you name it, the first message names it."),
    field(
      "Sharing",
      sharing,
      sharingOn ? "Teammates in your account can open a shared conversation." : "Shared conversations are off for this account.",
    ),
    h("div", { class: "actions" }, submit),
    problem,
  );

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(problem);
    const body = {};
    if (titleInput.value.trim()) body.title = titleInput.value.trim();
    if (sharing.value) body.sharingEnabled = sharing.value === "true";
    submit.disabled = true;
    try {
      const { data } = await post("/assistant/conversations", body);
      ctx.navigate(`#/conversations/${encodeURIComponent(data.conversation.conversationUid)}`);
    } catch (err) {
      replace(problem, errorBox(err));
      submit.disabled = false;
    }
  });

  async function load() {
    let data;
    try {
      data = (await get("/assistant/conversations", { take: 100 })).data;
    } catch (err) {
      replace(listBox, errorBox(err));
      return;
    }
    const conversations = data.conversations || [];
    if (conversations.length === 0) {
      replace(listBox, h("p", { class: "empty" }, "No conversations yet. Create one above."));
      return;
    }
    const presence = data.presenceByConversationUid || {};
    replace(
      listBox,
      h(
        "ul",
        { class: "rows", id: "conversations" },
        conversations.map((c) => row(c, presence[c.conversationUid] || [])),
      ),
      data.hasMore ? h("p", { class: "hint" }, `Showing the ${conversations.length} most recent of ${data.totalCount}.`) : null,
    );
  }

  function row(c, present) {
    const mine = ctx.me && c.ownerUserId === ctx.me.user.id;
    const toggle = h(
      "button",
      { type: "button", class: "share-toggle", disabled: !sharingOn, "aria-pressed": c.sharingEnabled ? "true" : "false" },
      c.sharingEnabled ? "Shared" : "Private",
    );
    toggle.setAttribute("aria-label", `Sharing of ${c.title}: ${c.sharingEnabled ? "shared" : "private"}. Press to change.`);
    toggle.addEventListener("click", async () => {
      toggle.disabled = true;
      try {
        await patch(`/assistant/conversations/${encodeURIComponent(c.conversationUid)}/sharing`, {
          sharingEnabled: !c.sharingEnabled,
        });
        announce(`${c.title} is now ${c.sharingEnabled ? "private" : "shared"}.`);
        await load();
        const again = document.querySelector(`[data-uid="${CSS.escape(c.conversationUid)}"] .share-toggle`);
        if (again) again.focus();
      } catch (err) {
        toggle.after(errorBox(err));
        toggle.disabled = false;
      }
    });
    return h(
      "li",
      { class: "row", dataset: { uid: c.conversationUid } },
      h(
        "div",
        { class: "row-main" },
        h("a", { href: `#/conversations/${encodeURIComponent(c.conversationUid)}`, class: "row-title" }, c.title),
        h(
          "span",
          { class: "meta" },
          `${mine ? "Yours" : "A teammate's"} · ${c.lastSequence} message${c.lastSequence === 1 ? "" : "s"} · updated ${when(c.updatedAt)}`,
        ),
        present.length
          ? h("span", { class: "meta present" }, `Here now: ${present.map((p) => p.name).join(", ")}`)
          : null,
      ),
      toggle,
    );
  }

  replace(main, title("Conversations"), form, h("h2", {}, "Your conversations"), listBox);
  await load();
  const timer = setInterval(() => {
    if (!document.hidden && !document.activeElement?.closest("#conversation-list")) load();
  }, 20_000);
  return () => clearInterval(timer);
}
