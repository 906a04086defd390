// API keys: the user's own keys (list_api_keys), a new one (create_api_key,
// shown once), and revocation (revoke_api_key).

import { h, replace, title, errorBox, when, announce, field } from "../lib/dom.js";
import { post, del, all } from "../lib/api.js";

function accessOf(key) {
  const p = key.permissions || [];
  if (p.includes("platform:write")) return "Read and write";
  if (p.includes("platform:read")) return "Read only";
  return "As the user";
}

export async function render(main) {
  const secretBox = h("div", { id: "new-key" });
  const listBox = h("div", { id: "keys-list" });
  const formProblem = h("div", { "aria-live": "polite" });

  const name = h("input", { type: "text", name: "name", maxlength: "100", autocomplete: "off" });
  const choice = (value, label, hint, checked) =>
    h(
      "div",
      { class: "choice" },
      h("input", { type: "radio", name: "access", value, id: `access-${value}`, checked }),
      h("label", { for: `access-${value}` }, label),
      h("span", { class: "hint" }, hint),
    );
  const submit = h("button", { type: "submit", class: "primary" }, "Create key");
  const form = h(
    "form",
    { id: "create-key", class: "card" },
    h("h2", {}, "Create a key"),
    field("Name (optional)", name, "A label to tell your keys apart, e.g. “reporting script”."),
    h(
      "fieldset",
      {},
      h("legend", {}, "Access"),
      choice("read", "Read only", "platform:read: reads everything the user can, changes nothing.", true),
      choice("write", "Read and write", "platform:write: everything the user can do, phone lines included."),
    ),
    h("div", { class: "actions" }, submit),
    formProblem,
  );

  async function load() {
    let keys;
    try {
      keys = await all("/api-keys");
    } catch (err) {
      replace(listBox, errorBox(err));
      return;
    }
    if (keys.length === 0) {
      replace(listBox, h("p", { class: "empty" }, "You have no API keys yet."));
      return;
    }
    const rows = keys.map((k) => keyRow(k));
    replace(
      listBox,
      h(
        "table",
        { class: "table", id: "keys-table" },
        h("caption", {}, `${keys.length} key${keys.length === 1 ? "" : "s"}, newest first`),
        h(
          "thead",
          {},
          h(
            "tr",
            {},
            ["Name", "Key", "Access", "Created", "Status", ""].map((c) => h("th", { scope: "col" }, c)),
          ),
        ),
        h("tbody", {}, rows),
      ),
    );
  }

  function keyRow(k) {
    const label = k.name || "(no name)";
    const actions = h("td", { class: "row-actions" });
    const tr = h(
      "tr",
      { dataset: { keyId: String(k.id), prefix: k.prefix }, class: k.revokedAt ? "revoked" : "" },
      h("td", {}, label),
      h("td", {}, h("code", {}, `agk_${k.prefix}_…`)),
      h("td", {}, accessOf(k)),
      h("td", {}, when(k.createdAt)),
      h("td", {}, k.revokedAt ? `Revoked ${when(k.revokedAt)}` : "Live"),
      actions,
    );
    if (!k.revokedAt) showRevoke(actions, k, label);
    return tr;
  }

  function showRevoke(cell, k, label) {
    const button = h("button", { type: "button", class: "danger", "aria-label": `Revoke ${label}` }, "Revoke");
    button.addEventListener("click", () => confirmRevoke(cell, k, label));
    replace(cell, button);
  }

  function confirmRevoke(cell, k, label) {
    const yes = h("button", { type: "button", class: "danger confirm" }, "Confirm revoke");
    const no = h("button", { type: "button" }, "Cancel");
    no.addEventListener("click", () => {
      showRevoke(cell, k, label);
      cell.querySelector("button").focus();
    });
    yes.addEventListener("click", async () => {
      yes.disabled = true;
      no.disabled = true;
      try {
        await del(`/api-keys/${encodeURIComponent(k.id)}`);
        announce(`Key ${label} revoked.`);
        await load();
        const heading = document.getElementById("keys-heading");
        if (heading) heading.focus();
      } catch (err) {
        cell.append(errorBox(err));
        yes.disabled = false;
        no.disabled = false;
      }
    });
    replace(cell, h("span", { class: "confirm-text" }, `Revoke ${label}? Programs using it stop working at once.`), yes, no);
    yes.focus();
  }

  function showSecret(created) {
    const value = h("input", {
      type: "text",
      id: "new-key-value",
      class: "mono",
      readonly: true,
      value: created.key,
      "aria-describedby": "new-key-warning",
    });
    const copy = h("button", { type: "button" }, "Copy");
    copy.addEventListener("click", async () => {
      value.select();
      try {
        await navigator.clipboard.writeText(created.key);
        announce("Key copied.");
      } catch {
        announce("Select the key and copy it yourself.");
      }
    });
    const done = h("button", { type: "button" }, "Done");
    done.addEventListener("click", () => {
      replace(secretBox);
      name.focus();
    });
    replace(
      secretBox,
      h(
        "section",
        { class: "card secret", "aria-labelledby": "new-key-title" },
        h("h2", { id: "new-key-title" }, `New key${created.apiKey.name ? `: ${created.apiKey.name}` : ""}`),
        h(
          "p",
          { id: "new-key-warning", class: "warning" },
          "Copy it now. It is shown this once: only its hash is kept, so it cannot be shown again.",
        ),
        h("div", { class: "secret-row" }, h("label", { for: "new-key-value", class: "visually-hidden" }, "New API key"), value, copy),
        h("div", { class: "actions" }, done),
      ),
    );
    value.focus();
    value.select();
  }

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(formProblem);
    const access = form.querySelector("input[name=access]:checked").value;
    const body = { access };
    if (name.value.trim()) body.name = name.value.trim();
    submit.disabled = true;
    try {
      const { data } = await post("/api-keys", body);
      name.value = "";
      showSecret(data);
      announce("Key created. Copy it now: it is shown once.");
      await load();
    } catch (err) {
      replace(formProblem, errorBox(err));
    } finally {
      submit.disabled = false;
    }
  });

  replace(
    main,
    title("API keys"),
    h(
      "p",
      { class: "lede" },
      "Keys let programs use the API as you (",
      h("code", {}, "Authorization: Bearer agk_…"),
      "). Create one per program, so each can be revoked on its own.",
    ),
    secretBox,
    form,
    h("h2", { id: "keys-heading", tabindex: "-1" }, "Your keys"),
    listBox,
  );
  await load();
}
