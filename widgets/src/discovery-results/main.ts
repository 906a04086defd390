// A discovery: the snapshot of discover_products / browse_discovery
// (productGroups, one per storefront) or the AdCP-shaped get_products answer
// (products with ext.platform). Products show their channels and pricing;
// "Choose" adds one to the session's chosen products through the host
// (tool add_discovery_products), the only call a widget makes.

import "../shared/jitless.ts"; // first: see the file
import { App } from "@modelcontextprotocol/ext-apps";
import { h, joined } from "../shared/dom.ts";
import { arr, num, obj, str, strs, type Obj } from "../shared/json.ts";
import { label, model, money, price } from "../shared/format.ts";
import { badge, chips, contentText, errorView, mount, VERSION, type Context } from "../shared/widget.ts";

interface Product {
  productId: string;
  name?: string;
  description?: string;
  briefRelevance?: string;
  deliveryType?: string;
  channels: string[];
  /** The seller's AdCP pricing options. */
  pricing: Obj[];
}

interface Group {
  name: string;
  total?: number;
  products: Product[];
  proposals: number;
}

interface Discovery {
  discoveryId?: string;
  complete?: boolean;
  groups: Group[];
  summary: string[];
  /** Storefronts still answering, failed or silent, with what they said. */
  notes: string[];
}

function fromAdcp(p: Obj): Product | undefined {
  const productId = str(p.product_id);
  if (!productId) return undefined;
  return {
    productId,
    name: str(p.name),
    description: str(p.description),
    briefRelevance: str(p.brief_relevance),
    deliveryType: str(p.delivery_type),
    channels: strs(p.channels),
    pricing: arr(p.pricing_options).map(obj).filter((o): o is Obj => !!o),
  };
}

function fromSnapshot(p: Obj): Product | undefined {
  const productId = str(p.productId);
  if (!productId) return undefined;
  const adcp = obj(p.adcp) ?? {};
  return {
    productId,
    name: str(p.name) ?? str(adcp.name),
    description: str(p.description) ?? str(adcp.description),
    briefRelevance: str(p.briefRelevance),
    deliveryType: str(p.deliveryType),
    channels: strs(adcp.channels),
    pricing: arr(adcp.pricing_options).map(obj).filter((o): o is Obj => !!o),
  };
}

/** Storefronts that did not answer (pending, failed, timed out…) or said something. */
function notesOf(results: unknown, nameKey: string): string[] {
  return arr(results)
    .map(obj)
    .filter((r): r is Obj => !!r && ((!!str(r.status) && r.status !== "answered") || !!str(r.message)))
    .map((r) =>
      joined([str(r[nameKey]), r.status !== "answered" && str(r.status) ? label(str(r.status)!) : null, str(r.message)], ": ").join(""),
    );
}

/** discover_products / browse_discovery. */
function snapshot(d: Obj): Discovery {
  const s = obj(d.summary);
  const pending = arr(d.pendingAgents).length;
  const groups = arr(d.productGroups)
    .map(obj)
    .filter((g): g is Obj => !!g)
    .map((g) => ({
      name: str(g.groupName) ?? str(g.groupId) ?? "Storefront",
      total: num(g.totalProducts),
      products: arr(g.products).map(obj).filter((p): p is Obj => !!p).map(fromSnapshot).filter((p): p is Product => !!p),
      proposals: arr(g.proposals).length,
    }));
  const incomplete = arr(d.incompleteAgents)
    .map(obj)
    .filter((a): a is Obj => !!a)
    .map((a) => joined([str(a.agentName), str(a.reason) ? label(str(a.reason)!) : null, str(a.message)], ": ").join(""));
  return {
    discoveryId: str(d.discoveryId),
    complete: typeof d.resultsComplete === "boolean" ? d.resultsComplete : undefined,
    groups,
    summary: [
      num(s?.totalProducts) !== undefined ? `${s?.totalProducts} products` : "",
      num(s?.storefrontsAnswered) !== undefined && num(s?.storefrontsQueried) !== undefined
        ? `${s?.storefrontsAnswered} of ${s?.storefrontsQueried} storefronts answered`
        : "",
      pending ? `${pending} still answering` : "",
    ].filter(Boolean),
    notes: [...incomplete, ...notesOf(d.storefrontResults, "agentName")],
  };
}

/** get_products (AdCP-shaped, products carry ext.platform). */
function adcpAnswer(d: Obj): Discovery {
  const groups = new Map<string, Group>();
  for (const raw of arr(d.products)) {
    const p = obj(raw);
    const product = p && fromAdcp(p);
    if (!p || !product) continue;
    const platform = obj(obj(p.ext)?.platform);
    const key = str(platform?.group_id) ?? String(num(platform?.storefront_id) ?? "");
    const name = str(platform?.storefront_name) ?? (key ? `Storefront ${key}` : "Products");
    const g = groups.get(key) ?? { name, products: [], proposals: 0 };
    g.products.push(product);
    groups.set(key, g);
  }
  const total = [...groups.values()].reduce((n, g) => n + g.products.length, 0);
  const pending = arr(d.pending_agents).length;
  return {
    discoveryId: str(obj(obj(d.ext)?.platform)?.execution_id),
    complete: typeof d.results_complete === "boolean" ? d.results_complete : undefined,
    groups: [...groups.values()],
    summary: [
      `${total} products`,
      `${groups.size} storefront${groups.size === 1 ? "" : "s"}`,
      pending ? `${pending} still answering` : "",
      obj(d.pagination)?.has_more === true ? "more on the next page" : "",
    ].filter(Boolean),
    notes: notesOf(d.storefront_results, "agent_name"),
  };
}

/** One pricing option: `CPM $45.00`, `CPM floor $28.00`, `Flat rate $25,000`. */
function pricingText(o: Obj): string {
  const m = str(o.pricing_model);
  const currency = str(o.currency);
  const fixed = num(o.fixed_price);
  const floor = num(o.floor_price);
  const amount =
    fixed !== undefined
      ? m === "flat_rate"
        ? money(fixed, currency)
        : price(fixed, currency)
      : floor !== undefined
        ? `floor ${price(floor, currency)}`
        : currency;
  return joined([m ? model(m) : null, amount], " ").join("");
}

/** The discovery id to choose into: the answer's, else the call's. */
function discoveryIdOf(d: Discovery, ctx: Context): string | undefined {
  const input = ctx.input;
  return (
    d.discoveryId ??
    str(obj(input?.pathParams)?.discoveryId) ??
    str(obj(input?.body)?.discoveryId) ??
    str(obj(obj(obj(input?.body)?.ext)?.platform)?.execution_id)
  );
}

function view(d: Discovery, ctx: Context): Node {
  const discoveryId = discoveryIdOf(d, ctx);
  // Every Choose button of a product id (the same id may sit in two groups).
  const buttons = new Map<string, HTMLButtonElement[]>();

  const markChosen = (ids: string[]) => {
    for (const id of ids)
      for (const b of buttons.get(id) ?? []) {
        b.textContent = "Chosen";
        b.className = "chosen";
        b.disabled = true;
      }
  };

  const choose = async (p: Product, button: HTMLButtonElement, outcome: HTMLElement) => {
    if (!discoveryId) return;
    button.disabled = true;
    button.textContent = "Choosing…";
    outcome.replaceChildren();
    try {
      const result = await ctx.app.callServerTool({
        name: "add_discovery_products",
        arguments: { pathParams: { discoveryId }, body: { productIds: [p.productId] } },
      });
      const sc = obj(result.structuredContent);
      if (result.isError) {
        button.disabled = false;
        button.textContent = "Choose";
        outcome.replaceChildren(errorView(sc, contentText(result)));
        return;
      }
      const chosen = arr(obj(sc?.data)?.products)
        .map((c) => str(obj(c)?.productId))
        .filter((x): x is string => !!x);
      markChosen(chosen.includes(p.productId) ? chosen : [...chosen, p.productId]);
    } catch (e) {
      button.disabled = false;
      button.textContent = "Choose";
      outcome.replaceChildren(errorView({ code: "NOT_SENT", message: `The host did not pass the call on: ${e instanceof Error ? e.message : e}` }));
    }
  };

  const productRow = (p: Product): Node => {
    const outcome = h("div", { class: "outcome" });
    const button = h("button", {
      attrs: { type: "button", "data-product-id": p.productId, "aria-label": `Choose ${p.name ?? p.productId}` },
      title: discoveryId ? undefined : "No discovery id in this result",
    }, "Choose");
    button.disabled = !discoveryId;
    button.addEventListener("click", () => void choose(p, button, outcome));
    buttons.set(p.productId, [...(buttons.get(p.productId) ?? []), button]);
    return h(
      "div",
      { class: "item product", attrs: { "data-product-id": p.productId } },
      h("div", { class: "line" }, h("strong", { class: "grow" }, p.name ?? p.productId), button),
      h(
        "div",
        { class: "small" },
        joined([
          p.channels.length ? chips(p.channels.map(label)) : null,
          p.pricing.length ? h("span", { class: "pricing" }, joined(p.pricing.map(pricingText), ", ")) : null,
          p.deliveryType ? label(p.deliveryType) : null,
          h("span", { class: "mono" }, p.productId),
        ]),
      ),
      p.briefRelevance || p.description ? h("div", { class: "small clamp2" }, p.briefRelevance ?? p.description ?? "") : null,
      outcome,
    );
  };

  const total = d.groups.reduce((n, g) => n + g.products.length, 0);
  return h(
    "div",
    null,
    h(
      "div",
      { class: "head" },
      h("h1", { class: "grow" }, "Products"),
      d.complete === true ? badge("complete") : d.complete === false ? badge("collecting", "Sellers are still answering") : null,
    ),
    h("p", { class: "sub" }, joined(d.summary)),
    d.notes.length ? h("div", { class: "note" }, d.notes.map((n) => h("div", null, n))) : null,
    total === 0
      ? h("p", { class: "muted section" }, "No products yet.")
      : h(
          "div",
          { class: "groups" },
          d.groups
            .filter((g) => g.products.length > 0)
            .map((g) =>
              h(
                "details",
                { class: "section group", attrs: { open: "" } },
                h(
                  "summary",
                  null,
                  h("h2", { class: "inline" }, g.name),
                  " ",
                  h(
                    "span",
                    { class: "small" },
                    joined([
                      g.total !== undefined && g.total > g.products.length
                        ? `${g.products.length} of ${g.total} products`
                        : `${g.products.length} product${g.products.length === 1 ? "" : "s"}`,
                      g.proposals ? `${g.proposals} proposal${g.proposals === 1 ? "" : "s"}` : null,
                    ]),
                  ),
                ),
                h("div", { class: "list" }, g.products.map(productRow)),
              ),
            ),
        ),
    discoveryId ? h("p", { class: "small section mono" }, discoveryId) : null,
  );
}

const app = new App({ name: "agentic-api discovery-results", version: VERSION });
mount(app, (data, _meta, ctx) => {
  const d = obj(data);
  if (d && Array.isArray(d.productGroups)) return view(snapshot(d), ctx);
  if (d && Array.isArray(d.products) && ("results_complete" in d || "pending_agents" in d)) return view(adcpAnswer(d), ctx);
  return h("p", { class: "muted" }, "No products in this result.");
});
