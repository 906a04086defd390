// Media buys as rows: the cart's shape (create_media_buys, execute_campaign:
// camelCase `mediaBuys`) and the status shape (get_media_buy_status:
// snake_case `media_buys` with each buy's latest delivery report).

import { h, joined, type Child } from "./dom.ts";
import { arr, num, obj, str, type Obj } from "./json.ts";
import { count, model, moment, money, price, label } from "./format.ts";
import { badge } from "./widget.ts";

function errorsLine(errors: unknown[]): HTMLElement | null {
  const lines = errors
    .map((e) => obj(e))
    .filter((e): e is Obj => !!e)
    .map((e) => joined([str(e.code), str(e.message)], ": "));
  if (lines.length === 0) return null;
  return h("div", { class: "bad-text" }, joined(lines, "; "));
}

/** A buy of the cart (MediaBuyOut). */
export function cartBuy(b: Obj, storefrontName?: string): HTMLElement {
  const budget = obj(b.budget);
  const amount = num(budget?.amount);
  const currency = str(budget?.currency);
  const what = str(b.productId) ?? (str(b.proposalId) ? `proposal ${b.proposalId}` : undefined);
  const storefront = storefrontName ?? (num(b.storefrontId) !== undefined ? `Storefront ${b.storefrontId}` : undefined);
  const pricing = str(b.pricingModel);
  const bid = num(b.bidPrice);
  const adcp = str(b.adcpStatus);
  const status = str(b.status);
  return h(
    "div",
    { class: "item buy", attrs: { "data-media-buy-id": str(b.mediaBuyId) ?? "" } },
    h(
      "div",
      { class: "line" },
      h("span", { class: "grow" }, h("strong", null, storefront ?? "Storefront"), what ? [" — ", what] : null),
      status ? badge(status, adcp && adcp !== status ? `seller: ${label(adcp)}` : undefined) : null,
    ),
    h(
      "div",
      { class: "small" },
      joined([
        amount !== undefined ? `Budget ${money(amount, currency)}` : null,
        pricing ? model(pricing) : null,
        bid !== undefined ? `bid ${price(bid, currency)}` : null,
        str(b.adcpMediaBuyId) ? `seller id ${b.adcpMediaBuyId}` : null,
        b.sandbox === true ? "sandbox" : null,
      ]),
    ),
    errorsLine(arr(b.errors)),
  );
}

/** Statuses of a buy its seller has made (so a report may come). */
const LIVE = new Set(["pending_creatives", "pending_start", "active", "paused", "completed", "canceled"]);

/** The delivery figures of a report, or a line saying there is none yet. */
function deliveryLine(d: Obj | undefined): HTMLElement {
  if (!d) return h("div", { class: "small" }, "No delivery report yet");
  const currency = str(d.currency);
  const pkg = obj(arr(d.by_package)[0]);
  const period = obj(d.reporting_period);
  const figures: Child[] = [
    num(d.impressions) !== undefined ? `${count(num(d.impressions)!)} impressions` : null,
    num(d.spend) !== undefined ? `${money(num(d.spend)!, currency)} spent` : null,
    num(d.clicks) !== undefined ? `${count(num(d.clicks)!)} clicks` : null,
    num(d.video_completions) !== undefined ? `${count(num(d.video_completions)!)} completed views` : null,
    num(pkg?.pacing_index) !== undefined ? `pacing ${count(num(pkg?.pacing_index)!)}` : null,
  ];
  const when: Child[] = [
    str(period?.start) && str(period?.end) ? `period ${moment(str(period?.start)!)} to ${moment(str(period?.end)!)}` : null,
    str(d.pulled_at) ? `reported ${moment(str(d.pulled_at)!)}` : null,
  ];
  return h(
    "div",
    { class: "delivery" },
    h("div", null, joined(figures)),
    h("div", { class: "small" }, joined(when)),
  );
}

/** A buy of get_media_buy_status (StatusRow), with its errors. */
export function statusBuy(b: Obj, storefrontName: string | undefined, errors: Obj[]): HTMLElement {
  const status = str(b.internal_status);
  const adcp = str(b.adcp_status);
  const changed = str(b.status_changed_at);
  const next = str(b.next_check_at);
  const storefront =
    storefrontName ?? (num(b.storefront_id) !== undefined ? `Storefront ${b.storefront_id}` : "Storefront");
  return h(
    "div",
    { class: "item buy", attrs: { "data-media-buy-id": str(b.media_buy_id) ?? "" } },
    h(
      "div",
      { class: "line" },
      h("span", { class: "grow" }, h("strong", null, storefront), " — ", h("span", { class: "mono" }, str(b.media_buy_id) ?? "")),
      status ? badge(status, adcp && adcp !== status ? `seller: ${label(adcp)}` : undefined) : null,
    ),
    h(
      "div",
      { class: "small" },
      joined([
        str(b.adcp_media_buy_id) ? `seller id ${b.adcp_media_buy_id}` : null,
        adcp && adcp !== status ? `seller status ${label(adcp)}` : null,
        changed ? `since ${moment(changed)}` : null,
        next ? `next check ${moment(next)}` : null,
      ]),
    ),
    obj(b.delivery) || LIVE.has(status ?? "") ? deliveryLine(obj(b.delivery)) : null,
    errorsLine(errors),
  );
}
