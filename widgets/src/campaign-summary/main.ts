// A campaign (get/create/update_campaign answer {campaign}, execute_campaign
// {campaign, mediaBuys}, list_campaigns an array): name, status, budget,
// flight dates, targeting summary, and its buys when the answer has them.

import "../shared/jitless.ts"; // first: see the file
import { App } from "@modelcontextprotocol/ext-apps";
import { h, joined, type Child } from "../shared/dom.ts";
import { arr, num, obj, str, strs, type Obj } from "../shared/json.ts";
import { day, days, label, money } from "../shared/format.ts";
import { badge, chips, facts, mount, VERSION } from "../shared/widget.ts";
import { cartBuy } from "../shared/buys.ts";

/** Metro codes with their names when the answer carries them (fields=geo_metro_names). */
function metros(areas: unknown, names: unknown): string[] {
  const known = new Map<string, string>();
  for (const n of arr(names).map(obj)) {
    const code = str(n?.code);
    const name = str(n?.name);
    if (code && name) known.set(`${str(n?.system)}:${code}`, name);
  }
  return arr(areas).flatMap((a) => {
    const area = obj(a);
    const system = str(area?.system) ?? "";
    return strs(area?.values).map((v) => known.get(`${system}:${v}`) ?? `${system === "nielsen_dma" ? "DMA" : system} ${v}`);
  });
}

function postal(areas: unknown): string[] {
  return arr(areas).flatMap((a) => {
    const area = obj(a);
    const values = strs(area?.values);
    if (values.length === 0) return [];
    const where = joined([str(area?.country), str(area?.system) ? label(str(area?.system)!) : null], " ").join("");
    return values.length > 3 ? [`${values.length} ${where} codes`] : values.map((v) => `${v}`);
  });
}

/** The targeting rows: includes, then what is excluded, from effectiveTargeting (or constraints). */
function targeting(c: Obj): [string, Node | string | undefined][] {
  const t = obj(c.effectiveTargeting) ?? obj(c.constraints);
  if (!t) return [];
  const list = (values: string[], fmt: (s: string) => string = (s) => s) =>
    values.length ? chips(values.map(fmt)) : undefined;
  const excluded: Child[] = [
    ...strs(t.geo_countries_exclude),
    ...strs(t.geo_regions_exclude),
    ...metros(t.geo_metros_exclude, c.geo_metro_names_exclude),
    ...postal(t.geo_postal_areas_exclude),
    ...strs(t.device_type_exclude).map(label),
  ];
  const unsatisfiable = strs(t.unsatisfiable);
  return [
    ["Channels", list(strs(t.channels), label)],
    ["Countries", list(strs(t.geo_countries))],
    ["Regions", list(strs(t.geo_regions))],
    ["Metros", list(metros(t.geo_metros, c.geo_metro_names))],
    ["Postal areas", list(postal(t.geo_postal_areas))],
    ["Languages", list(strs(t.language))],
    ["Devices", list(strs(t.device_type), label)],
    ["Platforms", list(strs(t.device_platform), label)],
    ["Excluded", excluded.length ? chips(excluded.map(String)) : undefined],
    ["Matches nothing", unsatisfiable.length ? unsatisfiable.map(label).join(", ") : undefined],
  ];
}

/** Buys that spend (all but failed, rejected, canceled): their budgets added, in the campaign's currency. */
function committedText(buys: Obj[], currency: string | undefined): Node | null {
  let total = 0;
  let counted = 0;
  for (const b of buys) {
    if (["failed", "rejected", "canceled"].includes(str(b.status) ?? "")) continue;
    const budget = obj(b.budget);
    const amount = num(budget?.amount);
    if (amount === undefined || str(budget?.currency) !== currency) return null;
    total += amount;
    counted++;
  }
  return counted ? h("span", { class: "small" }, ` · ${money(total, currency)} committed`) : null;
}

function campaign(c: Obj, buys: Obj[] | undefined): Node {
  const budget = obj(c.budget);
  const currency = str(budget?.currency);
  const total = num(budget?.total);
  const cap = num(budget?.dailyCap);
  const flight = obj(c.flightDates);
  const start = str(flight?.startDate);
  const end = str(flight?.endDate);
  const length = start && end ? days(start, end) : undefined;
  const status = str(c.status);
  const storefronts = arr(c.storefrontIds).length;
  const rows = targeting(c).filter(([, v]) => v !== undefined);
  return h(
    "div",
    { class: "campaign" },
    h("div", { class: "head" }, h("h1", { class: "grow" }, str(c.name) ?? "Campaign"), status ? badge(status) : null),
    facts([
      [
        "Budget",
        total !== undefined
          ? joined([
              money(total, currency),
              cap !== undefined ? `${money(cap, currency)} a day at most` : null,
              str(budget?.pacing) ? `${label(str(budget?.pacing)!)} pacing` : null,
            ]).join("")
          : undefined,
      ],
      [
        "Flight",
        start && end
          ? `${day(start)} – ${day(end)}` + (length !== undefined ? ` (${length} days)` : "")
          : undefined,
      ],
      ["Inventory", str(obj(c.autonomy)?.inventorySelection) ? `${label(str(obj(c.autonomy)?.inventorySelection)!)} selection` : undefined],
      ["Storefronts", storefronts ? `${storefronts} chosen` : undefined],
      ["Optimization", arr(obj(c.performanceConfig)?.optimizationGoals).length ? `${arr(obj(c.performanceConfig)?.optimizationGoals).length} goal(s)` : undefined],
    ]),
    str(c.brief) ? h("div", { class: "section" }, h("h2", null, "Brief"), h("p", { class: "clamp" }, str(c.brief)!)) : null,
    h(
      "div",
      { class: "section" },
      h("h2", null, "Targeting"),
      rows.length ? facts(rows) : h("p", { class: "muted" }, "No restriction: every audience the sellers offer."),
    ),
    buys
      ? h(
          "div",
          { class: "section" },
          h("h2", null, `Media buys (${buys.length})`, committedText(buys, currency)),
          buys.length ? h("div", { class: "list" }, buys.map((b) => cartBuy(b))) : h("p", { class: "muted" }, "No buys yet."),
        )
      : null,
    str(c.campaignId) ? h("p", { class: "small section mono" }, str(c.campaignId)!) : null,
  );
}

const app = new App({ name: "agentic-api campaign-summary", version: VERSION });
mount(app, (data) => {
  if (Array.isArray(data)) {
    const items = data.map(obj).filter((x): x is Obj => !!x);
    if (items.length === 0) return h("p", { class: "muted" }, "No campaigns.");
    return h("div", { class: "list" }, items.map((c) => h("div", { class: "item" }, campaign(c, undefined))));
  }
  const d = obj(data);
  const c = obj(d?.campaign) ?? (str(d?.campaignId) && d?.flightDates ? d : undefined);
  if (!c) return h("p", { class: "muted" }, "No campaign in this result.");
  const buys = Array.isArray(d?.mediaBuys) ? arr(d?.mediaBuys).map(obj).filter((b): b is Obj => !!b) : undefined;
  return campaign(c, buys);
});
