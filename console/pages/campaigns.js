// Campaigns and their media buys: list_campaigns, and for each campaign
// get_media_buy_status (the buys at their sellers, with delivery).

import { h, replace, title, errorBox, when } from "../lib/dom.js";
import { get, all } from "../lib/api.js";

function money(budget) {
  if (!budget || typeof budget.total !== "number") return "";
  try {
    return new Intl.NumberFormat(undefined, { style: "currency", currency: budget.currency }).format(budget.total);
  } catch {
    return `${budget.total} ${budget.currency || ""}`;
  }
}

function day(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleDateString();
}

export async function render(main) {
  const statusFilter = h(
    "select",
    { id: "campaign-status" },
    h("option", { value: "" }, "Any status"),
    ["DRAFT", "ACTIVE", "PAUSED", "COMPLETED", "ARCHIVED"].map((s) => h("option", { value: s }, s.toLowerCase())),
  );
  const listBox = h("div", { id: "campaign-list" });
  let advertisers = new Map();

  async function load() {
    replace(listBox, h("p", { class: "loading" }, "Loading…"));
    let campaigns;
    try {
      const [list, advs] = await Promise.all([
        all("/buyer/campaigns", { status: statusFilter.value || undefined }),
        advertisers.size ? null : all("/buyer/advertisers"),
      ]);
      campaigns = list;
      if (advs) advertisers = new Map(advs.map((a) => [a.id, a.name]));
    } catch (err) {
      replace(listBox, errorBox(err));
      return;
    }
    if (campaigns.length === 0) {
      replace(
        listBox,
        h(
          "p",
          { class: "empty" },
          "No campaigns yet. Campaigns are created through the API (create_campaign) or by the assistant; their media buys show here once they exist.",
        ),
      );
      return;
    }
    replace(
      listBox,
      h(
        "table",
        { class: "table", id: "campaigns" },
        h("caption", {}, `${campaigns.length} campaign${campaigns.length === 1 ? "" : "s"}, newest first`),
        h(
          "thead",
          {},
          h("tr", {}, ["Campaign", "Advertiser", "Status", "Budget", "Flight", "Media buys"].map((c) => h("th", { scope: "col" }, c))),
        ),
        h("tbody", {}, campaigns.map(row)),
      ),
    );
  }

  function row(c) {
    const buysCell = h("td", {});
    const show = h("button", { type: "button", "aria-expanded": "false" }, "Show buys");
    show.setAttribute("aria-label", `Show media buys of ${c.name}`);
    const detail = h("tr", { class: "buys-row", hidden: true }, h("td", { colspan: "6" }));
    show.addEventListener("click", async () => {
      const open = show.getAttribute("aria-expanded") === "true";
      if (open) {
        show.setAttribute("aria-expanded", "false");
        show.textContent = "Show buys";
        detail.hidden = true;
        return;
      }
      show.setAttribute("aria-expanded", "true");
      show.textContent = "Hide buys";
      detail.hidden = false;
      await loadBuys(c, detail.firstChild);
    });
    buysCell.append(show);
    return [
      h(
        "tr",
        { dataset: { campaignId: c.campaignId } },
        h("th", { scope: "row" }, c.name, h("br"), h("code", { class: "small" }, c.campaignId)),
        h("td", {}, advertisers.get(c.advertiserId) || c.advertiserId),
        h("td", {}, h("span", { class: `badge status-${String(c.status).toLowerCase()}` }, c.status)),
        h("td", {}, money(c.budget)),
        h("td", {}, c.flightDates ? `${day(c.flightDates.startDate)} – ${day(c.flightDates.endDate)}` : ""),
        buysCell,
      ),
      detail,
    ];
  }

  async function loadBuys(c, cell) {
    replace(cell, h("p", { class: "loading" }, "Loading media buys…"));
    let data;
    try {
      data = (await get(`/buyer/campaigns/${encodeURIComponent(c.campaignId)}/media-buy-status`)).data;
    } catch (err) {
      replace(cell, errorBox(err));
      return;
    }
    const buys = data.media_buys || [];
    const names = new Map((data.agents_queried || []).map((a) => [a.storefront_id, a.storefront_name]));
    const errors = data.errors || [];
    if (buys.length === 0) {
      replace(cell, h("p", { class: "empty" }, "No media buys at a seller yet (buys in the cart are drafts)."));
      return;
    }
    replace(
      cell,
      h(
        "table",
        { class: "table inner" },
        h("caption", {}, `Media buys of ${c.name}`),
        h(
          "thead",
          {},
          h("tr", {}, ["Buy", "Seller", "Status", "Seller's status", "Changed", "Delivery"].map((x) => h("th", { scope: "col" }, x))),
        ),
        h(
          "tbody",
          {},
          buys.map((b) => {
            const d = b.delivery;
            return h(
              "tr",
              { dataset: { mediaBuyId: b.media_buy_id } },
              h("td", {}, h("code", { class: "small" }, b.media_buy_id)),
              h("td", {}, names.get(b.storefront_id) || `#${b.storefront_id}`),
              h("td", {}, h("span", { class: `badge status-${b.internal_status}` }, b.internal_status)),
              h("td", {}, b.adcp_status || "—"),
              h("td", {}, when(b.status_changed_at)),
              h(
                "td",
                {},
                d
                  ? `${(d.impressions ?? 0).toLocaleString()} impressions, ${d.spend ?? 0} ${d.currency || ""} spent`
                  : "No report yet",
              ),
            );
          }),
        ),
      ),
      errors.length
        ? h(
            "ul",
            { class: "errors" },
            errors.map((e) => h("li", {}, `${e.media_buy_id}: ${e.code} ${e.message || ""}`)),
          )
        : null,
      h("p", { class: "hint" }, "Statuses are refreshed from the sellers about every 30 seconds."),
    );
  }

  statusFilter.addEventListener("change", load);
  replace(
    main,
    title("Campaigns"),
    h("div", { class: "toolbar" }, h("label", { for: "campaign-status" }, "Status"), statusFilter),
    listBox,
  );
  await load();
}
