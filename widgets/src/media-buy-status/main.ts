// The buys of a campaign: get_media_buy_status (each buy's status and latest
// delivery report, storefront names from agents_queried), or the cart that
// create_media_buys / execute_campaign answer (mediaBuys with budgets).

import "../shared/jitless.ts"; // first: see the file
import { App } from "@modelcontextprotocol/ext-apps";
import { h, joined } from "../shared/dom.ts";
import { arr, num, obj, str, type Obj } from "../shared/json.ts";
import { label } from "../shared/format.ts";
import { mount, VERSION } from "../shared/widget.ts";
import { cartBuy, statusBuy } from "../shared/buys.ts";

function byStatus(statuses: string[]): string {
  const counts = new Map<string, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([s, n]) => `${n} ${label(s)}`).join(", ");
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function statusView(data: Obj): Node {
  const buys = arr(data.media_buys).map(obj).filter((b): b is Obj => !!b);
  const agents = arr(data.agents_queried).map(obj).filter((a): a is Obj => !!a);
  const errors = arr(data.errors).map(obj).filter((e): e is Obj => !!e);
  const names = new Map<number, string>();
  for (const a of agents) {
    const id = num(a.storefront_id);
    const name = str(a.storefront_name);
    if (id !== undefined && name) names.set(id, name);
  }
  const statuses = buys.map((b) => str(b.internal_status)).filter((s): s is string => !!s);
  return h(
    "div",
    null,
    h("div", { class: "head" }, h("h1", { class: "grow" }, "Media buys")),
    h(
      "p",
      { class: "sub" },
      joined([plural(buys.length, "buy"), plural(agents.length, "storefront"), statuses.length ? byStatus(statuses) : null]),
    ),
    buys.length === 0
      ? h("p", { class: "muted" }, "No buy has reached a seller yet.")
      : h(
          "div",
          { class: "list" },
          buys.map((b) =>
            statusBuy(
              b,
              names.get(num(b.storefront_id) ?? NaN),
              errors.filter((e) => e.media_buy_id === b.media_buy_id),
            ),
          ),
        ),
  );
}

function cartView(data: Obj): Node {
  const buys = arr(data.mediaBuys).map(obj).filter((b): b is Obj => !!b);
  const campaign = obj(data.campaign);
  const campaignId = str(data.campaignId) ?? str(campaign?.campaignId);
  const mode = str(data.mode);
  const statuses = buys.map((b) => str(b.status)).filter((s): s is string => !!s);
  return h(
    "div",
    null,
    h("div", { class: "head" }, h("h1", { class: "grow" }, str(campaign?.name) ?? "Media buys")),
    h(
      "p",
      { class: "sub" },
      joined([
        plural(buys.length, "buy"),
        statuses.length ? byStatus(statuses) : null,
        mode === "stage" ? "staged (not sent)" : mode === "execute" ? "sent to the sellers" : null,
        data.campaignCreated === true ? "new campaign" : null,
      ]),
    ),
    buys.length === 0
      ? h("p", { class: "muted" }, "The cart is empty.")
      : h("div", { class: "list" }, buys.map((b) => cartBuy(b))),
    campaignId ? h("p", { class: "small section" }, "Campaign ", h("span", { class: "mono" }, campaignId)) : null,
  );
}

const app = new App({ name: "agentic-api media-buy-status", version: VERSION });
mount(app, (data) => {
  const d = obj(data);
  if (d && Array.isArray(d.media_buys)) return statusView(d);
  if (d && Array.isArray(d.mediaBuys)) return cartView(d);
  return h("p", { class: "muted" }, "No media buys in this result.");
});
