// Discovery: start one for an advertiser (discover_products, progressive),
// watch each seller's products land on the session's event stream, choose
// products (add_discovery_products / remove_discovery_products) and save a
// proposal (save_discovery_proposal).

import { h, replace, title, errorBox, announce, field, when } from "../lib/dom.js";
import { get, post, del, all } from "../lib/api.js";
import { openStream } from "../lib/stream.js";

export async function render(main, params, ctx) {
  if (params.discoveryId) return session(main, params.discoveryId, ctx);
  return start(main, ctx);
}

// ------------------------------------------------------------ start

async function start(main, ctx) {
  const problem = h("div", { "aria-live": "polite" });
  const advertiser = h("select", { name: "advertiserId", required: true, id: "advertiser" });
  const brief = h("textarea", { name: "brief", rows: "4", maxlength: "20000", id: "brief" });
  const countries = h("input", { type: "text", name: "countries", id: "countries", autocomplete: "off", placeholder: "US, CA" });
  const submit = h("button", { type: "submit", class: "primary", id: "start-discovery" }, "Start discovery");
  const form = h(
    "form",
    { id: "discovery-form", class: "card" },
    h("h2", {}, "Find products"),
    field("Advertiser", advertiser),
    field("Brief (optional)", brief, "What the campaign wants, in your words. Without a brief, sellers send their catalogue."),
    field("Countries (optional)", countries, "ISO codes, separated by commas."),
    h("div", { class: "actions" }, submit),
    problem,
  );
  const advertiserBox = h("div", { id: "new-advertiser-box" });

  async function loadAdvertisers(selectId) {
    let list = [];
    try {
      list = await all("/buyer/advertisers");
    } catch (err) {
      replace(problem, errorBox(err));
    }
    replace(
      advertiser,
      list.length ? null : h("option", { value: "" }, "No advertiser yet: create one below"),
      list.map((a) => h("option", { value: a.id, selected: a.id === selectId }, `${a.name} (${a.brand})`)),
    );
    submit.disabled = list.length === 0;
  }

  // A small form for a first advertiser, so a discovery can start at once.
  const advName = h("input", { type: "text", id: "adv-name", required: true, maxlength: "255" });
  const advBrand = h("input", { type: "text", id: "adv-brand", required: true, placeholder: "brand.example" });
  const advCurrency = h("input", { type: "text", id: "adv-currency", required: true, value: "USD", maxlength: "3", size: "4" });
  const advProblem = h("div", { "aria-live": "polite" });
  const advForm = h(
    "form",
    { id: "new-advertiser", class: "card" },
    h("h2", {}, "New advertiser"),
    field("Name", advName),
    field("Brand domain", advBrand, "The brand's web domain, e.g. acme.com."),
    field("Currency", advCurrency, "ISO 4217, e.g. USD. Fixed once the advertiser is used."),
    h("div", { class: "actions" }, h("button", { type: "submit" }, "Create advertiser")),
    advProblem,
  );
  advForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(advProblem);
    try {
      const { data } = await post("/buyer/advertisers", {
        name: advName.value.trim(),
        brand: advBrand.value.trim(),
        primaryCurrency: advCurrency.value.trim().toUpperCase(),
      });
      announce(`Advertiser ${data.name} created.`);
      advName.value = "";
      advBrand.value = "";
      await loadAdvertisers(data.id);
      advertiser.focus();
    } catch (err) {
      replace(advProblem, errorBox(err));
    }
  });
  replace(advertiserBox, advForm);

  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    replace(problem);
    const body = { advertiserId: advertiser.value, progressive: true };
    if (brief.value.trim()) body.brief = brief.value;
    const codes = countries.value
      .split(/[\s,]+/)
      .map((c) => c.trim().toUpperCase())
      .filter(Boolean);
    if (codes.length) body.countries = codes;
    submit.disabled = true;
    try {
      const { data } = await post("/buyer/discovery/discover-products", body);
      ctx.navigate(`#/discovery/${encodeURIComponent(data.discoveryId)}`);
    } catch (err) {
      replace(problem, errorBox(err));
      submit.disabled = false;
    }
  });

  replace(
    main,
    title("Discovery"),
    h(
      "p",
      { class: "lede" },
      "Ask every seller storefront for products at once; each seller's answer appears as it lands.",
    ),
    form,
    advertiserBox,
  );
  await loadAdvertisers();
}

// ------------------------------------------------------------ a session

async function session(main, id, ctx) {
  const base = `/buyer/discovery/${encodeURIComponent(id)}`;
  const groups = new Map(); // groupId -> group
  const results = new Map(); // agentId -> storefront result
  const chosen = new Map(); // productId -> chosen entry
  let pending = [];
  let complete = false;
  let revision = 0;

  const status = h("p", { id: "discovery-status", class: "status", "aria-live": "polite" }, "Connecting…");
  const pendingBox = h("ul", { id: "pending", class: "chips", "aria-label": "Still answering" });
  const groupsBox = h("div", { id: "groups" });
  const selectionBox = h("div", { id: "selection" });
  const proposalBox = h("div", { id: "proposal", "aria-live": "polite" });

  function renderStatus() {
    const count = [...groups.values()].reduce((n, g) => n + g.products.length, 0);
    status.dataset.state = complete ? "complete" : "collecting";
    status.textContent = complete
      ? `Complete: ${count} product${count === 1 ? "" : "s"} from ${groups.size} seller${groups.size === 1 ? "" : "s"} (revision ${revision}).`
      : `Collecting: ${groups.size} seller${groups.size === 1 ? "" : "s"} answered so far, ${pending.length} still answering…`;
    replace(
      pendingBox,
      complete ? null : pending.map((a) => h("li", { dataset: { agentId: String(a.agentId) } }, a.agentName)),
    );
  }

  function setChoice(button, p) {
    const isChosen = chosen.has(p.productId);
    button.classList.toggle("chosen", isChosen);
    button.setAttribute("aria-pressed", isChosen ? "true" : "false");
    button.setAttribute("aria-label", `${isChosen ? "Remove" : "Choose"} ${p.name}`);
    button.textContent = isChosen ? "Chosen" : "Choose";
  }

  function productCard(p) {
    const choose = h("button", { type: "button", class: "choose", dataset: { productId: p.productId } });
    setChoice(choose, p);
    choose.addEventListener("click", () => toggle(p, choose));
    return h(
      "li",
      { class: "product", dataset: { productId: p.productId } },
      h("h4", {}, p.name),
      h("p", { class: "description" }, p.description),
      p.briefRelevance ? h("p", { class: "relevance" }, p.briefRelevance) : null,
      h(
        "p",
        { class: "meta" },
        `${(p.deliveryType || "").replace("_", "-")} · ${(p.pricingModels || []).join(", ") || "no pricing"}`,
      ),
      choose,
    );
  }

  /** Each group's section, kept while its revision and message stay, so a
   * landing seller never redraws (or takes the focus from) the others. */
  const sections = new Map(); // groupId -> {key, el}
  const tail = h("div", { class: "group-tail" });

  function groupSection(g, message, fresh) {
    return h(
      "section",
      {
        class: `group ${fresh ? "landed" : ""}`,
        dataset: { groupId: g.groupId, revision: String(g.revision) },
        "aria-labelledby": `g-${g.groupId}`,
      },
      h(
        "h3",
        { id: `g-${g.groupId}` },
        g.groupName,
        h("span", { class: "count" }, ` ${g.products.length} product${g.products.length === 1 ? "" : "s"}`),
      ),
      message ? h("p", { class: "seller-message" }, message) : null,
      g.products.length ? h("ul", { class: "products" }, g.products.map(productCard)) : null,
    );
  }

  function renderGroups() {
    const ordered = [...groups.values()].sort((a, b) => a.revision - b.revision || a.groupName.localeCompare(b.groupName));
    ordered.forEach((g, i) => {
      const result = results.get(Number(String(g.groupId).replace(/^sf_/, "")));
      const message = result && result.message ? result.message : "";
      const key = `${g.revision}|${message}`;
      const known = sections.get(g.groupId);
      if (!known || known.key !== key) {
        const el = groupSection(g, message, !known);
        if (known) known.el.replaceWith(el);
        sections.set(g.groupId, { key, el });
      }
      const el = sections.get(g.groupId).el;
      if (groupsBox.children[i] !== el) groupsBox.insertBefore(el, groupsBox.children[i] || null);
    });
    if (tail.parentNode !== groupsBox) groupsBox.append(tail);
    replace(
      tail,
      complete
        ? [...results.values()]
            .filter((r) => r.status !== "answered" && !groups.has(`sf_${r.agentId}`))
            .map((r) =>
              h(
                "section",
                { class: "group failed" },
                h("h3", {}, r.agentName),
                h("p", { class: "seller-message" }, `${r.status.replace("_", " ")}${r.message ? `: ${r.message}` : ""}`),
              ),
            )
        : null,
      groups.size === 0 && complete ? h("p", { class: "empty" }, "No products: no seller had anything for this brief.") : null,
    );
  }

  /** Every Choose button says whether its product is chosen. */
  function refreshChoices() {
    for (const g of groups.values()) {
      for (const p of g.products) {
        const button = groupsBox.querySelector(`button.choose[data-product-id="${CSS.escape(p.productId)}"]`);
        if (button) setChoice(button, p);
      }
    }
  }

  function absorb(snapshot) {
    revision = Math.max(revision, snapshot.revision || 0);
    for (const g of snapshot.productGroups || []) {
      const current = groups.get(g.groupId);
      if (!current || current.revision <= g.revision) groups.set(g.groupId, g);
    }
    if (snapshot.pendingAgents) pending = snapshot.pendingAgents;
    for (const r of snapshot.storefrontResults || []) results.set(r.agentId, r);
    if (snapshot.resultsComplete) complete = true;
    renderGroups();
    renderStatus();
  }

  async function browse() {
    const { data } = await get(`${base}/discover-products`, { groupLimit: 100, productsPerGroup: 100 });
    absorb(data);
  }

  // ------------------------------------------------ selection, proposal

  async function loadChosen(data) {
    const list = data || (await get(`${base}/products`)).data;
    chosen.clear();
    for (const c of list.products || []) chosen.set(c.productId, c);
    renderSelection();
    refreshChoices();
  }

  async function toggle(p, button) {
    button.disabled = true;
    try {
      const { data } = chosen.has(p.productId)
        ? await del(`${base}/products`, { productIds: [p.productId] })
        : await post(`${base}/products`, { productIds: [p.productId] });
      await loadChosen(data);
      announce(chosen.has(p.productId) ? `${p.name} added to the selection.` : `${p.name} removed from the selection.`);
    } catch (err) {
      button.after(errorBox(err));
    } finally {
      button.disabled = false;
    }
  }

  function renderSelection() {
    const items = [...chosen.values()];
    const save = h("button", { type: "button", class: "primary", id: "save-proposal", disabled: items.length === 0 }, "Save proposal");
    save.addEventListener("click", async () => {
      save.disabled = true;
      try {
        const { data } = await post(`${base}/proposals`);
        replace(
          proposalBox,
          h(
            "p",
            { class: "saved" },
            "Saved as proposal ",
            h("strong", { id: "proposal-code" }, data.proposalCode),
            ` (revision ${data.revision}, ${when(data.createdAt)}). Anyone in your account can reopen it with this code.`,
          ),
        );
        announce(`Proposal ${data.proposalCode} saved.`);
      } catch (err) {
        replace(proposalBox, errorBox(err));
      } finally {
        save.disabled = false;
      }
    });
    replace(
      selectionBox,
      items.length
        ? h(
            "ul",
            { class: "selection", id: "chosen" },
            items.map((c) =>
              h(
                "li",
                { dataset: { productId: c.productId } },
                c.product ? `${c.product.name} · ${c.product.storefrontName}` : c.productId,
              ),
            ),
          )
        : h("p", { class: "empty" }, "Nothing chosen yet."),
      h("div", { class: "actions" }, save),
      proposalBox,
    );
  }

  replace(
    main,
    h("p", { class: "crumbs" }, h("a", { href: "#/discovery" }, "Discovery")),
    title(`Discovery ${id}`),
    status,
    pendingBox,
    h(
      "div",
      { class: "discovery" },
      h("section", { class: "discovery-main", "aria-label": "Products by seller" }, groupsBox),
      h("aside", { class: "discovery-side", "aria-labelledby": "selection-title" }, h("h2", { id: "selection-title" }, "Selection"), selectionBox),
    ),
  );
  renderSelection();
  await Promise.all([browse(), loadChosen()]);
  if (complete) return null;

  const stream = openStream(
    `/api/v2${base}/events`,
    {
      revision: (d) => absorb(d),
      complete: (d) => {
        complete = true;
        revision = Math.max(revision, d.revision || 0);
        renderStatus();
        // The final word on each seller (messages, failures).
        browse().catch(() => {});
        announce("Discovery complete.");
      },
      error: () => {},
    },
    {
      endOn: ["complete"],
      shouldReconnect: (err) => !err || ["STREAM_MAX_DURATION", "SERVICE_UNAVAILABLE", "UNAUTHORIZED"].includes(err.code),
      onState: (state) => {
        if (state === "ended" && !complete) browse().catch(() => {});
      },
    },
  );
  return () => stream.close();
}
