// An advertiser (create/get/update_advertiser): name, brand, status,
// currency, timezone, channels, linked seller accounts, sandbox.

import "../shared/jitless.ts"; // first: see the file
import { App } from "@modelcontextprotocol/ext-apps";
import { h, joined } from "../shared/dom.ts";
import { arr, num, obj, str, strs, type Obj } from "../shared/json.ts";
import { label, moment } from "../shared/format.ts";
import { badge, chips, facts, mount, VERSION } from "../shared/widget.ts";

/** `acc_… (storefront 1, active)`. */
function linkText(l: Obj): string {
  const about = [num(l.storefrontId) !== undefined ? `storefront ${l.storefrontId}` : "", str(l.status) ?? ""].filter(Boolean);
  return (str(l.accountId) ?? "account") + (about.length ? ` (${about.join(", ")})` : "");
}

function card(a: Obj): Node {
  const brand = str(a.brand);
  const brandName = str(obj(a.linkedBrand)?.name);
  const status = str(a.status);
  const channels = strs(a.channels);
  const countries = strs(a.brandCountries);
  const linked = arr(a.linkedAccounts).map(obj).filter((x): x is Obj => !!x);
  const activeLinks = linked.filter((l) => l.status === "active").length;
  const created = str(a.createdAt);
  const updated = str(a.updatedAt);
  return h(
    "div",
    { class: "advertiser" },
    h(
      "div",
      { class: "head" },
      h("h1", { class: "grow" }, str(a.name) ?? "Advertiser"),
      status ? badge(status) : null,
      a.sandbox === true ? h("span", { class: "badge warn", title: "Buys never spend" }, "sandbox") : null,
    ),
    brand || brandName
      ? h("p", { class: "sub" }, joined([brandName && brandName !== str(a.name) ? brandName : null, brand]))
      : null,
    str(a.description) ? h("p", { class: "clamp" }, str(a.description)!) : null,
    facts([
      ["Currency", str(a.primaryCurrency)],
      ["Timezone", str(a.preferredTimezone)],
      ["Channels", channels.length ? chips(channels.map(label)) : undefined],
      ["Countries", countries.length ? chips(countries) : undefined],
      [
        "Linked accounts",
        linked.length === 0
          ? "none"
          : h(
              "span",
              null,
              `${linked.length}` + (activeLinks !== linked.length ? ` (${activeLinks} active)` : ""),
              h("span", { class: "small" }, " — ", joined(linked.map(linkText), "; ")),
            ),
      ],
      ["Optimization", str(a.optimizationApplyMode) ? label(str(a.optimizationApplyMode)!.toLowerCase()) : undefined],
      ["Archived", str(a.archivedAt) ? moment(str(a.archivedAt)!) : undefined],
      ["Created", created ? moment(created) : undefined],
      ["Updated", updated && updated !== created ? moment(updated) : undefined],
    ]),
    str(a.brandWarning) ? h("p", { class: "note" }, str(a.brandWarning)!) : null,
    str(a.id) ? h("p", { class: "small section mono" }, str(a.id)!) : null,
  );
}

const app = new App({ name: "agentic-api advertiser-card", version: VERSION });
mount(app, (data) => {
  const a = obj(data);
  // list_advertisers answers an array: one card each.
  if (Array.isArray(data)) {
    const items = data.map(obj).filter((x): x is Obj => !!x);
    if (items.length === 0) return h("p", { class: "muted" }, "No advertisers.");
    return h("div", { class: "list" }, items.map((x) => h("div", { class: "item" }, card(x))));
  }
  if (!a) return h("p", { class: "muted" }, "No advertiser in this result.");
  return card(a);
});
