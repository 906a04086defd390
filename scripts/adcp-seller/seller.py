"""A real AdCP 3.1 seller agent for tests and CI, built on the `adcp` seller framework.

Serves MCP Streamable HTTP at http://HOST:PORT/mcp with eight tools:
get_adcp_capabilities, get_products, create_media_buy, get_media_buys,
get_media_buy_delivery, update_media_buy, list_accounts and sync_accounts.
The catalogue is fixed, so tests can assert exact product ids;
get_products honours buying_mode (brief, wholesale, refine) and the filters
channels, countries and delivery_type.

Media buys are kept in memory, one owner account each. create_media_buy checks
every package's product_id and pricing_option_id against the catalogue
(PRODUCT_NOT_FOUND / INVALID_REQUEST otherwise) and answers synchronously: ids
smb_0001, smb_0002, ... in creation order, packages <id>_p1, <id>_p2, ...,
media_buy_status pending_creatives (no creatives can be sent), revision 1.
update_media_buy pauses and resumes (paused: true/false; the revision goes up on
each change) and nothing else. get_media_buys reads buys back by media_buy_ids,
or lists them by status_filter (default ["active"], as the schema says).
get_media_buy_delivery reports nothing delivered (no creatives can be sent), per
package, with each package's pricing model and rate.
The mutating tools go through the SDK's IdempotencyStore, scoped by account: a
repeated idempotency_key with the same payload replays the first answer
(replayed: true) without running the handler again; with a different payload it
is IDEMPOTENCY_CONFLICT. Each buy actually created logs one line on stderr,
"adcp-seller: created media buy <id> key=<idempotency_key>", so a test can count
them (replays log "adcp-seller: replayed <tool> key=<key>").

Accounts are buyer-declared (capabilities: account.require_operator_auth false,
supported_billing operator, agent and advertiser). sync_accounts provisions one
account per (brand, operator, sandbox) in memory, with a deterministic id:
acc_<brand domain>_<operator>, plus "~<brand_id>" after the domain when the brand
has one and "_sandbox" for a sandbox account (acme.example operated by
agency.example is acc_acme.example_agency.example). Every account is active. A
repeated entry is "unchanged" (the same id), a changed billing, billing_entity or
payment_terms "updated"; dry_run: true answers the same but stores nothing; an
entry keyed by `account` (settings update) fails with UNSUPPORTED_PROVISIONING
and delete_missing is UNSUPPORTED_FEATURE. billing_entity.bank is write-only and
never echoed. sync_accounts is idempotent by key like create_media_buy. Each
account created logs "adcp-seller: synced account <id>" on stderr.
list_accounts returns two fixed upstream seats (acc_upstream_1, acc_upstream_2,
the second a sandbox) and then every synced account, filtered by the request's
account, status and sandbox; a bearer token is accepted and not checked. Each
answer logs "adcp-seller: listed accounts <id> <id> ..." on stderr.

    python seller.py --port 0        # prints: adcp-seller listening on http://127.0.0.1:PORT/mcp

The framework validates every request and response against the bundled AdCP 3.1
JSON schemas (strict both ways), so a malformed request never reaches the handlers
and a catalogue drifting from the schema fails loudly instead of shipping.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import sys
from datetime import datetime, timezone
from typing import Any

from adcp.decisioning import AdcpError
from adcp.server import IdempotencyStore, MemoryBackend, ToolContext, adcp_server, serve
from adcp.server.mcp_tools import register_handler_tools
from adcp.server.responses import capabilities_response

ADCP_VERSION = "3.1"
STANDARD_FORMATS = "https://creative.adcontextprotocol.org"


def fmt(format_id: str) -> dict[str, str]:
    return {"agent_url": STANDARD_FORMATS, "id": format_id}


def reporting(metrics: list[str], *, placement_breakdown: bool = False) -> dict[str, Any]:
    return {
        "available_reporting_frequencies": ["daily"],
        "expected_delay_minutes": 240,
        "timezone": "UTC",
        "supports_webhooks": False,
        "available_metrics": metrics,
        "supports_placement_breakdown": placement_breakdown,
        "date_range_support": "date_range",
    }


# Country coverage has no field on a 3.1 product (buyers derive it from the
# publishers' adagents.json), so it lives beside the wire object and drives the
# countries filter; `keywords` drive brief matching. Neither is sent.
CATALOGUE: list[dict[str, Any]] = [
    {
        "countries": ["US", "CA"],
        "keywords": ["news", "display", "banner", "desktop", "mobile", "awareness", "reach"],
        "product": {
            "product_id": "nw_display_ros",
            "name": "Northwind News run-of-site display",
            "description": "Standard IAB display across Northwind News desktop and mobile web, "
            "US and Canada, auction priced.",
            "publisher_properties": [
                {"publisher_domain": "northwind-news.example", "selection_type": "all"}
            ],
            "channels": ["display"],
            "format_ids": [fmt("display_300x250_image"), fmt("display_728x90_image")],
            "placements": [
                {
                    "kind": "publisher_ref",
                    "publisher_domain": "northwind-news.example",
                    "placement_id": "homepage_top",
                    "name": "Homepage leaderboard",
                    "mode": "targetable",
                    "format_ids": [fmt("display_728x90_image")],
                },
                {
                    "kind": "publisher_ref",
                    "publisher_domain": "northwind-news.example",
                    "placement_id": "article_sidebar",
                    "name": "Article sidebar MPU",
                    "mode": "targetable",
                    "format_ids": [fmt("display_300x250_image")],
                },
            ],
            "delivery_type": "non_guaranteed",
            "pricing_options": [
                {
                    "pricing_option_id": "nw_display_cpm_auction",
                    "pricing_model": "cpm",
                    "currency": "USD",
                    "floor_price": 2.5,
                    "price_guidance": {"p25": 2.8, "p50": 3.4, "p75": 4.1, "p90": 5.0},
                }
            ],
            "reporting_capabilities": reporting(
                ["impressions", "spend", "clicks", "ctr"], placement_breakdown=True
            ),
        },
    },
    {
        "countries": ["US", "GB"],
        "keywords": ["video", "olv", "pre-roll", "preroll", "news", "sports", "awareness"],
        "product": {
            "product_id": "nw_olv_preroll",
            "name": "Northwind News pre-roll video",
            "description": "15 and 30 second pre-roll ahead of Northwind News editorial video, "
            "US and UK, guaranteed delivery.",
            "publisher_properties": [
                {"publisher_domain": "northwind-news.example", "selection_type": "all"}
            ],
            "channels": ["olv"],
            "format_ids": [fmt("video_standard_15s"), fmt("video_standard_30s")],
            "placements": [
                {
                    "kind": "publisher_ref",
                    "publisher_domain": "northwind-news.example",
                    "placement_id": "video_player_preroll",
                    "name": "Editorial video player pre-roll",
                    "mode": "included",
                }
            ],
            "delivery_type": "guaranteed",
            "pricing_options": [
                {
                    "pricing_option_id": "nw_olv_cpm_fixed",
                    "pricing_model": "cpm",
                    "currency": "USD",
                    "fixed_price": 18.0,
                    "min_spend_per_package": 5000,
                },
                {
                    "pricing_option_id": "nw_olv_cpcv_fixed",
                    "pricing_model": "cpcv",
                    "currency": "USD",
                    "fixed_price": 0.06,
                },
            ],
            "reporting_capabilities": reporting(
                ["impressions", "spend", "completed_views", "completion_rate"]
            ),
        },
    },
    {
        "countries": ["US"],
        "keywords": ["ctv", "connected", "tv", "streaming", "premium", "entertainment", "video"],
        "product": {
            "product_id": "ss_ctv_premium",
            "name": "Summit Streaming premium CTV",
            "description": "Non-skippable 30 second spots in Summit Streaming's premium "
            "entertainment catalogue on connected TVs, US only, guaranteed.",
            "publisher_properties": [
                {"publisher_domain": "summit-streaming.example", "selection_type": "all"}
            ],
            "channels": ["ctv"],
            "format_ids": [fmt("video_ctv_preroll_30s")],
            "delivery_type": "guaranteed",
            "pricing_options": [
                {
                    "pricing_option_id": "ss_ctv_cpm_fixed",
                    "pricing_model": "cpm",
                    "currency": "USD",
                    "fixed_price": 32.0,
                    "min_spend_per_package": 10000,
                }
            ],
            "reporting_capabilities": reporting(
                ["impressions", "spend", "completed_views", "completion_rate"]
            ),
        },
    },
    {
        "countries": ["US", "CA"],
        "keywords": ["ctv", "connected", "tv", "sports", "live", "streaming", "video"],
        "product": {
            "product_id": "ss_ctv_sports_auction",
            "name": "Summit Streaming live sports CTV",
            "description": "Live sports breaks on Summit Streaming connected-TV apps, US and "
            "Canada, auction priced.",
            "publisher_properties": [
                {"publisher_domain": "summit-streaming.example", "selection_type": "all"}
            ],
            "channels": ["ctv"],
            "format_ids": [fmt("video_standard_15s"), fmt("video_ctv_midroll_30s")],
            "delivery_type": "non_guaranteed",
            "pricing_options": [
                {
                    "pricing_option_id": "ss_sports_cpm_auction",
                    "pricing_model": "cpm",
                    "currency": "USD",
                    "floor_price": 24.0,
                    "price_guidance": {"p25": 25.5, "p50": 28.0, "p75": 31.0},
                }
            ],
            "reporting_capabilities": reporting(["impressions", "spend", "completed_views"]),
        },
    },
    {
        "countries": ["US", "GB", "DE"],
        "keywords": ["audio", "streaming", "music", "radio", "commute", "reach"],
        "product": {
            "product_id": "wave_streaming_audio",
            "name": "Wave Radio streaming audio",
            "description": "Audio spots between tracks on Wave Radio's music streams in the US, "
            "UK and Germany, auction priced in USD or EUR.",
            "publisher_properties": [
                {"publisher_domain": "wave-radio.example", "selection_type": "all"}
            ],
            "channels": ["streaming_audio"],
            "format_ids": [fmt("audio_standard_15s"), fmt("audio_standard_30s")],
            "delivery_type": "non_guaranteed",
            "pricing_options": [
                {
                    "pricing_option_id": "wave_audio_cpm_usd",
                    "pricing_model": "cpm",
                    "currency": "USD",
                    "floor_price": 6.0,
                },
                {
                    "pricing_option_id": "wave_audio_cpm_eur",
                    "pricing_model": "cpm",
                    "currency": "EUR",
                    "floor_price": 5.5,
                },
            ],
            "reporting_capabilities": reporting(["impressions", "spend", "completed_views"]),
        },
    },
    {
        "countries": ["US"],
        "keywords": ["podcast", "audio", "host-read", "sponsorship", "business", "finance"],
        "product": {
            "product_id": "wave_podcast_sponsorship",
            "name": "Wave Radio business podcast sponsorship",
            "description": "Host-read mid-roll sponsorship of the weekly Wave Business podcast, "
            "US audience, one flat fee per episode.",
            "publisher_properties": [
                {"publisher_domain": "wave-radio.example", "selection_type": "all"}
            ],
            "channels": ["podcast"],
            "format_ids": [fmt("audio_standard_60s")],
            "delivery_type": "guaranteed",
            "exclusivity": "category",
            "pricing_options": [
                {
                    "pricing_option_id": "wave_podcast_flat",
                    "pricing_model": "flat_rate",
                    "currency": "USD",
                    "fixed_price": 4500.0,
                }
            ],
            "reporting_capabilities": reporting(["impressions", "spend"]),
        },
    },
    {
        "countries": ["DE", "FR"],
        "keywords": ["display", "viewable", "europe", "news", "germany", "france", "banner"],
        "product": {
            "product_id": "rhein_display_vcpm",
            "name": "Rhein Media viewable display",
            "description": "Viewable display on Rhein Media's German and French news sites, "
            "priced per thousand viewable impressions in EUR.",
            "publisher_properties": [
                {"publisher_domain": "rhein-media.example", "selection_type": "all"}
            ],
            "channels": ["display"],
            "format_ids": [fmt("display_300x250_image"), fmt("display_300x600_image")],
            "delivery_type": "non_guaranteed",
            "pricing_options": [
                {
                    "pricing_option_id": "rhein_vcpm_auction",
                    "pricing_model": "vcpm",
                    "currency": "EUR",
                    "floor_price": 3.2,
                }
            ],
            "reporting_capabilities": reporting(["impressions", "spend", "viewability"]),
        },
    },
]

PRICING_MODELS = sorted(
    {o["pricing_model"] for e in CATALOGUE for o in e["product"]["pricing_options"]}
)

PRODUCTS: dict[str, dict[str, Any]] = {e["product"]["product_id"]: e["product"] for e in CATALOGUE}

TOOLS = {
    "get_adcp_capabilities",
    "get_products",
    "create_media_buy",
    "get_media_buys",
    "get_media_buy_delivery",
    "update_media_buy",
    "list_accounts",
    "sync_accounts",
}

server = adcp_server("agentic-test-seller", adcp_version=ADCP_VERSION)
# The builder's handler class is "DynamicHandler"; declaring its tools keeps
# tools/list to exactly these (the framework warns when it has to guess).
register_handler_tools("DynamicHandler", TOOLS)

# The SDK's replay cache for the mutating tools: a request repeating an
# idempotency_key (in the same scope) gets the first response back verbatim, with
# replayed: true, and the handler does not run again; the same key with a
# different payload is answered IDEMPOTENCY_CONFLICT. It scopes keys by
# ToolContext.caller_identity, which principal_from_account sets below.
idempotency = IdempotencyStore(backend=MemoryBackend(), ttl_seconds=86400)


def as_dict(params: Any) -> dict[str, Any]:
    if isinstance(params, dict):
        return params
    return params.model_dump(mode="json", exclude_none=True)


def passes_filters(entry: dict[str, Any], filters: dict[str, Any]) -> bool:
    product = entry["product"]
    channels = filters.get("channels")
    if channels and not set(channels) & set(product["channels"]):
        return False
    countries = filters.get("countries")
    if countries and not set(countries) & set(entry["countries"]):
        return False
    delivery_type = filters.get("delivery_type")
    if delivery_type and product["delivery_type"] != delivery_type:
        return False
    return True


def brief_matches(entry: dict[str, Any], brief: str) -> list[str]:
    words = set(re.findall(r"[a-z][a-z-]*", brief.lower()))
    return [k for k in entry["keywords"] if k in words]


def invalid(message: str, field: str) -> AdcpError:
    return AdcpError("INVALID_REQUEST", message=message, recovery="correctable", field=field)


@server.get_adcp_capabilities
async def get_adcp_capabilities(params: Any, context: Any = None) -> dict[str, Any]:
    # adcp.idempotency is schema-required; the SDK's own client rejects a seller
    # without it. The replay window is the IdempotencyStore's.
    caps = capabilities_response(
        ["media_buy"], adcp_version=ADCP_VERSION, idempotency=idempotency.capability()
    )
    caps["media_buy"] = {
        "supported_pricing_models": PRICING_MODELS,
        "buying_modes": ["brief", "wholesale", "refine"],
    }
    # Buyer-declared accounts: no operator credentials needed, any billing party,
    # sandbox accounts provisioned by sync_accounts with sandbox: true.
    caps["account"] = {
        "require_operator_auth": False,
        "supported_billing": SUPPORTED_BILLING,
        "sandbox": True,
    }
    return caps


@server.get_products
async def get_products(params: Any, context: Any = None) -> dict[str, Any]:
    req = as_dict(params)
    mode = req.get("buying_mode", "brief")
    brief = req.get("brief")
    refine = req.get("refine") or []
    filters = req.get("filters") or {}

    # The schema types these fields but leaves their combinations to the seller.
    # Raising AdcpError makes the framework answer with its structured error
    # (isError: true, structuredContent.adcp_error and errors[]), the same shape as
    # its own schema-validation errors.
    if mode == "brief" and not brief:
        raise invalid("buying_mode 'brief' requires a brief", "brief")
    if mode != "brief" and brief:
        raise invalid(f"a brief is not allowed with buying_mode '{mode}'", "brief")
    if mode == "refine" and not refine:
        raise invalid("buying_mode 'refine' requires a refine array", "refine")
    if mode != "refine" and refine:
        raise invalid("refine is only valid with buying_mode 'refine'", "refine")

    entries = [e for e in CATALOGUE if passes_filters(e, filters)]

    if mode == "wholesale":
        return {"products": [e["product"] for e in entries]}

    if mode == "brief":
        scored = [(brief_matches(e, brief), e) for e in entries]
        matched = [(m, e) for m, e in scored if m]
        # A brief that names nothing we sell still gets the filtered catalogue, each
        # product saying so, rather than an empty answer.
        chosen = sorted(matched, key=lambda me: -len(me[0])) if matched else scored
        products = []
        for matches, e in chosen:
            why = (
                f"Matches {', '.join(repr(m) for m in matches)} in the brief"
                if matches
                else "No direct match for the brief; offered as general inventory"
            )
            products.append({**e["product"], "brief_relevance": f"{why}: {e['product']['name']}."})
        return {"products": products}

    # refine: product-scoped include/omit/more_like_this narrow or widen the
    # filtered catalogue; request- and proposal-scoped asks are acknowledged as unable
    # (this seller makes no proposals).
    by_id = {e["product"]["product_id"]: e for e in entries}
    included: list[str] = []
    omitted: set[str] = set()
    applied: list[dict[str, Any]] = []
    for change in refine:
        scope = change["scope"]
        if scope == "product":
            pid, action = change["product_id"], change.get("action", "include")
            if pid not in by_id:
                applied.append(
                    {"scope": "product", "product_id": pid, "status": "unable",
                     "notes": "unknown product or excluded by filters"}
                )
                continue
            if action == "omit":
                omitted.add(pid)
            elif action == "more_like_this":
                channels = set(by_id[pid]["product"]["channels"])
                included += [
                    p for p, e in by_id.items() if channels & set(e["product"]["channels"])
                ]
            else:
                included.append(pid)
            applied.append({"scope": "product", "product_id": pid, "status": "applied"})
        elif scope == "proposal":
            applied.append(
                {"scope": "proposal", "proposal_id": change["proposal_id"], "status": "unable",
                 "notes": "this seller makes no proposals"}
            )
        else:
            applied.append(
                {"scope": "request", "status": "unable",
                 "notes": "free-text asks are not supported; use filters"}
            )
    keep = list(dict.fromkeys(included)) if included else list(by_id)
    return {
        "products": [by_id[p]["product"] for p in keep if p not in omitted],
        "refinement_applied": applied,
    }


# --- media buys -------------------------------------------------------------
#
# Buys live in memory for the life of the process. A buy is scoped to the account
# that created it (account_scope), and every package must name a catalogue product
# and one of its pricing options. No creatives can be sent, so a new buy is
# pending_creatives; update_media_buy only pauses and resumes.

BUYS: dict[str, dict[str, Any]] = {}
# Statuses nothing moves a buy out of (this seller never reaches them).
TERMINAL = {"completed", "rejected", "canceled"}
# update_media_buy fields this seller does not implement (pause/resume only).
UNSUPPORTED_UPDATES = (
    "start_time", "end_time", "packages", "new_packages", "invoice_recipient",
    "reporting_webhook",
)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def log(line: str) -> None:
    print(f"adcp-seller: {line}", file=sys.stderr, flush=True)


def account_scope(account: Any) -> str:
    """One string per account: the idempotency scope and the owner of a buy.

    The schema's sandbox default (false) is dropped so that {"sandbox": false}
    and an omitted sandbox name the same account.
    """
    if not account:
        return "no-account"
    if isinstance(account, dict) and account.get("sandbox") is False:
        account = {k: v for k, v in account.items() if k != "sandbox"}
    return json.dumps(account, sort_keys=True, separators=(",", ":"))


async def principal_from_account(
    skill_name: str, params: dict[str, Any], context: ToolContext, call_next: Any
) -> Any:
    """Skill middleware: the request's account is the caller this seller knows.

    The seller has no authentication, and the SDK's IdempotencyStore refuses a
    keyed request without ToolContext.caller_identity. Using the account as the
    identity makes the replay scope (account, idempotency_key), which is what
    create_media_buy's idempotency_key promises.
    """
    context.caller_identity = account_scope(params.get("account"))
    result = await call_next()
    if isinstance(result, dict) and result.get("replayed"):
        log(f"replayed {skill_name} key={params.get('idempotency_key')}")
    return result


def not_found(code: str, message: str, field: str) -> AdcpError:
    return AdcpError(code, message=message, recovery="correctable", field=field)


def media_buy_wire(buy: dict[str, Any]) -> dict[str, Any]:
    """A buy as get_media_buys returns it."""
    wire = {
        "media_buy_id": buy["media_buy_id"],
        "status": buy["status"],
        "status_as_of": buy["updated_at"],
        "currency": buy["currency"],
        "total_budget": buy["total_budget"],
        "start_time": buy["start_time"],
        "end_time": buy["end_time"],
        "confirmed_at": buy["confirmed_at"],
        "revision": buy["revision"],
        "created_at": buy["created_at"],
        "updated_at": buy["updated_at"],
        "packages": [
            {k: v for k, v in p.items() if k != "pricing_option_id"} for p in buy["packages"]
        ],
    }
    if buy["context"] is not None:
        wire["context"] = buy["context"]
    return wire


@server.create_media_buy
async def create_media_buy(params: Any, context: Any = None) -> dict[str, Any]:
    # IdempotencyStore.wrap reads (self, params, context) positionally; the
    # builder calls its functions without a self, so pass by keyword.
    return await create_media_buy_once(params=params, context=context)


@idempotency.wrap
async def create_media_buy_once(params: Any, context: Any) -> dict[str, Any]:
    req = as_dict(params)
    if req.get("proposal_id"):
        raise not_found("PROPOSAL_NOT_FOUND", "this seller makes no proposals", "proposal_id")
    requested = req.get("packages") or []
    if not requested:
        raise invalid("packages is required (this seller makes no proposals)", "packages")

    confirmed_at = now()
    start = confirmed_at if req["start_time"] == "asap" else req["start_time"]
    end = req["end_time"]
    if parse_time(end) <= parse_time(start):
        raise invalid("end_time must be after start_time", "end_time")

    media_buy_id = f"smb_{len(BUYS) + 1:04d}"
    currencies: set[str] = set()
    packages = []
    for i, pkg in enumerate(requested):
        product = PRODUCTS.get(pkg["product_id"])
        if product is None:
            raise not_found(
                "PRODUCT_NOT_FOUND", f"no product {pkg['product_id']!r} in this catalogue",
                f"packages[{i}].product_id",
            )
        options = {o["pricing_option_id"]: o for o in product["pricing_options"]}
        option = options.get(pkg["pricing_option_id"])
        if option is None:
            raise invalid(
                f"product {pkg['product_id']!r} has no pricing option "
                f"{pkg['pricing_option_id']!r} (it offers {', '.join(sorted(options))})",
                f"packages[{i}].pricing_option_id",
            )
        currencies.add(option["currency"])
        package = {
            "package_id": f"{media_buy_id}_p{i + 1}",
            "product_id": pkg["product_id"],
            "pricing_option_id": pkg["pricing_option_id"],
            "budget": pkg["budget"],
            "currency": option["currency"],
            "start_time": pkg.get("start_time") or start,
            "end_time": pkg.get("end_time") or end,
            "paused": bool(pkg.get("paused", False)),
        }
        for echoed in ("pacing", "bid_price", "impressions", "targeting_overlay", "context"):
            if pkg.get(echoed) is not None:
                package[echoed] = pkg[echoed]
        packages.append(package)
    if len(currencies) > 1:
        raise invalid(
            f"one media buy has one currency; these packages are priced in "
            f"{', '.join(sorted(currencies))}",
            "packages",
        )

    # A buy created paused resumes to where it would have started.
    status, resume_status = "pending_creatives", None
    if req.get("paused"):
        status, resume_status = "paused", status
    buy = {
        "media_buy_id": media_buy_id,
        "scope": account_scope(req.get("account")),
        "status": status,
        "resume_status": resume_status,
        "revision": 1,
        "currency": currencies.pop(),
        "total_budget": sum(p["budget"] for p in packages),
        "start_time": start,
        "end_time": end,
        "confirmed_at": confirmed_at,
        "created_at": confirmed_at,
        "updated_at": confirmed_at,
        "packages": packages,
        "context": req.get("context"),
    }
    BUYS[media_buy_id] = buy
    log(f"created media buy {media_buy_id} key={req['idempotency_key']}")
    response = {
        "media_buy_id": media_buy_id,
        "media_buy_status": buy["status"],
        "confirmed_at": confirmed_at,
        "revision": buy["revision"],
        "currency": buy["currency"],
        "total_budget": buy["total_budget"],
        "packages": packages,
    }
    if (req.get("account") or {}).get("sandbox"):
        response["sandbox"] = True
    return response


@server.get_media_buys
async def get_media_buys(params: Any, context: Any = None) -> dict[str, Any]:
    req = as_dict(params)
    scope = account_scope(req["account"]) if req.get("account") else None
    ids = req.get("media_buy_ids")
    status_filter = req.get("status_filter")
    if isinstance(status_filter, str):
        status_filter = [status_filter]
    if ids is None and status_filter is None:
        status_filter = ["active"]  # the schema's default when no ids are given

    errors = []
    if ids is not None:
        buys = []
        for media_buy_id in ids:
            buy = BUYS.get(media_buy_id)
            if buy is None or (scope is not None and buy["scope"] != scope):
                errors.append({"code": "MEDIA_BUY_NOT_FOUND", "field": "media_buy_ids",
                               "message": f"no media buy {media_buy_id!r} for this account"})
            else:
                buys.append(buy)
    else:
        buys = [b for b in BUYS.values() if scope is None or b["scope"] == scope]
    if status_filter is not None:
        buys = [b for b in buys if b["status"] in status_filter]
    response: dict[str, Any] = {"media_buys": [media_buy_wire(b) for b in buys]}
    if errors:
        response["errors"] = errors
    return response


@server.get_media_buy_delivery
async def get_media_buy_delivery(params: Any, context: Any = None) -> dict[str, Any]:
    """Nothing is delivered before creatives: zeros, per buy and per package."""
    req = as_dict(params)
    scope = account_scope(req["account"]) if req.get("account") else None
    ids = req.get("media_buy_ids") or []
    deliveries, errors = [], []
    for media_buy_id in ids:
        buy = BUYS.get(media_buy_id)
        if buy is None or (scope is not None and buy["scope"] != scope):
            errors.append({"code": "MEDIA_BUY_NOT_FOUND", "field": "media_buy_ids",
                           "message": f"no media buy {media_buy_id!r} for this account"})
            continue
        packages = []
        for p in buy["packages"]:
            option = next(o for o in PRODUCTS[p["product_id"]]["pricing_options"]
                          if o["pricing_option_id"] == p["pricing_option_id"])
            rate = option.get("fixed_price") or p.get("bid_price") or option.get("floor_price") or 0.0
            packages.append({
                "package_id": p["package_id"], "impressions": 0.0, "spend": 0.0,
                "pricing_model": option["pricing_model"], "rate": float(rate),
                "currency": p["currency"],
            })
        deliveries.append({
            "media_buy_id": media_buy_id, "status": buy["status"], "currency": buy["currency"],
            "totals": {"impressions": 0.0, "spend": 0.0}, "by_package": packages,
        })
    response: dict[str, Any] = {
        "reporting_period": {"start": min((BUYS[d["media_buy_id"]]["start_time"] for d in deliveries), default=now()),
                             "end": now()},
        # Required by AdCP 3.1 (3.2 moves it into each delivery row).
        "currency": deliveries[0]["currency"] if deliveries else "USD",
        "media_buy_deliveries": deliveries,
    }
    if errors:
        response["errors"] = errors
    return response


@server.update_media_buy
async def update_media_buy(params: Any, context: Any = None) -> dict[str, Any]:
    return await update_media_buy_once(params=params, context=context)


@idempotency.wrap
async def update_media_buy_once(params: Any, context: Any) -> dict[str, Any]:
    req = as_dict(params)
    buy = BUYS.get(req["media_buy_id"])
    if buy is None or buy["scope"] != account_scope(req.get("account")):
        raise not_found(
            "MEDIA_BUY_NOT_FOUND", f"no media buy {req['media_buy_id']!r} for this account",
            "media_buy_id",
        )
    unsupported = [f for f in UNSUPPORTED_UPDATES if req.get(f) is not None]
    if req.get("canceled"):
        unsupported.append("canceled")
    if unsupported:
        raise AdcpError(
            "UNSUPPORTED_FEATURE", message=f"this seller only pauses and resumes; "
            f"{', '.join(unsupported)} cannot be updated", recovery="correctable",
            field=unsupported[0],
        )
    expected = req.get("revision")
    if expected is not None and expected != buy["revision"]:
        raise AdcpError(
            "CONFLICT", message=f"revision {expected} is stale; the buy is at "
            f"revision {buy['revision']}", recovery="correctable", field="revision",
        )

    # A state change bumps the revision; pausing a paused buy changes nothing.
    paused = req.get("paused")
    if paused is True and buy["status"] not in TERMINAL | {"paused"}:
        buy["resume_status"], buy["status"] = buy["status"], "paused"
        buy["revision"] += 1
        buy["updated_at"] = now()
    elif paused is False and buy["status"] == "paused":
        buy["status"], buy["resume_status"] = buy["resume_status"], None
        buy["revision"] += 1
        buy["updated_at"] = now()
    log(f"updated media buy {buy['media_buy_id']} status={buy['status']} "
        f"revision={buy['revision']} key={req['idempotency_key']}")
    return {
        "media_buy_id": buy["media_buy_id"],
        "media_buy_status": buy["status"],
        "revision": buy["revision"],
        "implementation_date": buy["updated_at"],
    }


# --- accounts ---------------------------------------------------------------
#
# Buyer-declared accounts (require_operator_auth: false): sync_accounts
# provisions an account per (brand, operator, sandbox), kept in memory for the
# life of the process; list_accounts returns them after two fixed upstream
# seats. The bearer token a buyer may send is not checked: every caller sees
# every account.

SUPPORTED_BILLING = ["operator", "agent", "advertiser"]

# Seats that exist on the seller's side before any sync (an upstream platform's
# own account namespace), so list_accounts is never empty.
UPSTREAM_ACCOUNTS: list[dict[str, Any]] = [
    {
        "account_id": "acc_upstream_1",
        "name": "Northwind upstream seat",
        "status": "active",
        "billing": "operator",
    },
    {
        "account_id": "acc_upstream_2",
        "name": "Summit Streaming sandbox seat",
        "status": "active",
        "billing": "agent",
        "brand": {"domain": "summit-streaming.example"},
        "operator": "summit-streaming.example",
        "sandbox": True,
    },
]

# Synced accounts by account_id, in creation order.
ACCOUNTS: dict[str, dict[str, Any]] = {}


def account_id_for(brand: dict[str, Any], operator: str, sandbox: bool) -> str:
    """The deterministic id of a buyer-declared account, readable in tests.

    acc_<brand domain>_<operator>, the brand's brand_id (if any) after the
    domain as "~<brand_id>", and "_sandbox" at the end for a sandbox account:
    acme.example operated by agency.example is acc_acme.example_agency.example.
    Domains cannot contain "_" or "~", so different keys give different ids.
    """
    brand_part = brand["domain"]
    if brand.get("brand_id"):
        brand_part += f"~{brand['brand_id']}"
    return f"acc_{brand_part}_{operator}" + ("_sandbox" if sandbox else "")


def account_name(brand: dict[str, Any], operator: str, sandbox: bool) -> str:
    name = brand["domain"] + (f" ({brand['brand_id']})" if brand.get("brand_id") else "")
    if operator != brand["domain"]:
        name += f" via {operator}"
    return name + (" [sandbox]" if sandbox else "")


def without_bank(entity: Any) -> Any:
    """business-entity.json's bank is write-only: it is never sent back."""
    if not isinstance(entity, dict):
        return entity
    return {k: v for k, v in entity.items() if k != "bank"}


def account_wire(account: dict[str, Any]) -> dict[str, Any]:
    """A synced account as list_accounts returns it."""
    wire = {
        "account_id": account["account_id"],
        "name": account["name"],
        "status": account["status"],
        "brand": account["brand"],
        "operator": account["operator"],
        "billing": account["billing"],
    }
    for optional in ("billing_entity", "payment_terms"):
        if account.get(optional) is not None:
            wire[optional] = account[optional]
    if account["sandbox"]:
        wire["sandbox"] = True
    return wire


def matches_ref(account: dict[str, Any], ref: dict[str, Any]) -> bool:
    """Whether an account is the one an AccountRef names (by id or natural key)."""
    if ref.get("account_id"):
        return account["account_id"] == ref["account_id"]
    brand = account.get("brand") or {}
    want = ref.get("brand") or {}
    return (
        brand.get("domain") == want.get("domain")
        and brand.get("brand_id") == want.get("brand_id")
        and account.get("operator") == ref.get("operator")
        and bool(account.get("sandbox")) == bool(ref.get("sandbox"))
    )


@server.list_accounts
async def list_accounts(params: Any, context: Any = None) -> dict[str, Any]:
    req = as_dict(params)
    accounts = UPSTREAM_ACCOUNTS + [account_wire(a) for a in ACCOUNTS.values()]
    if req.get("account"):
        accounts = [a for a in accounts if matches_ref(a, req["account"])]
    if req.get("status"):
        accounts = [a for a in accounts if a["status"] == req["status"]]
    if req.get("sandbox") is not None:
        accounts = [a for a in accounts if bool(a.get("sandbox")) == req["sandbox"]]
    log(f"listed accounts {' '.join(a['account_id'] for a in accounts)}")
    return {"accounts": accounts}


@server.sync_accounts
async def sync_accounts(params: Any, context: Any = None) -> dict[str, Any]:
    return await sync_accounts_once(params=params, context=context)


@idempotency.wrap
async def sync_accounts_once(params: Any, context: Any) -> dict[str, Any]:
    req = as_dict(params)
    if req.get("delete_missing"):
        raise AdcpError(
            "UNSUPPORTED_FEATURE", message="this seller does not deactivate accounts "
            "(delete_missing)", recovery="correctable", field="delete_missing",
        )
    dry_run = bool(req.get("dry_run"))
    results = [sync_one(entry, dry_run) for entry in req["accounts"]]
    return {"dry_run": dry_run, "accounts": results}


def sync_one(entry: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """One sync_accounts entry: provision (upsert by natural key) or refuse."""
    if entry.get("account") is not None:
        # Settings-update mode (an AccountRef): not implemented, as the spec asks
        # such sellers to say per entry. The ref's natural key, or the account
        # it names, fills the required brand/operator of the result.
        ref = entry["account"]
        known = next(
            (a for a in [*UPSTREAM_ACCOUNTS, *ACCOUNTS.values()] if matches_ref(a, ref)), None
        )
        source = known or ref
        return {
            "brand": source.get("brand") or {"domain": "unknown.invalid"},
            "operator": source.get("operator") or "unknown.invalid",
            "action": "failed",
            "status": known["status"] if known else "rejected",
            "errors": [{"code": "UNSUPPORTED_PROVISIONING",
                        "message": "this seller only provisions accounts by brand, "
                        "operator and billing; settings updates are not supported"}],
        }

    brand, operator, billing = entry["brand"], entry["operator"], entry["billing"]
    sandbox = bool(entry.get("sandbox"))
    account_id = account_id_for(brand, operator, sandbox)
    echo: dict[str, Any] = {"brand": brand, "operator": operator}
    if sandbox:
        echo["sandbox"] = True
    if billing not in SUPPORTED_BILLING:
        return {
            **echo, "action": "failed", "status": "rejected",
            "errors": [{"code": "BILLING_NOT_SUPPORTED", "field": "billing",
                        "message": f"billing {billing!r} is not supported; this seller "
                        f"supports {', '.join(SUPPORTED_BILLING)}"}],
        }

    wanted = {
        "billing": billing,
        "billing_entity": without_bank(entry.get("billing_entity")),
        "payment_terms": entry.get("payment_terms"),
    }
    existing = ACCOUNTS.get(account_id)
    if existing is None:
        action = "created"
        account = {
            "account_id": account_id,
            "name": account_name(brand, operator, sandbox),
            "status": "active",
            "brand": brand,
            "operator": operator,
            "sandbox": sandbox,
            **wanted,
        }
    else:
        changed = any(existing.get(k) != v for k, v in wanted.items())
        action = "updated" if changed else "unchanged"
        account = {**existing, **wanted}
    if not dry_run and action != "unchanged":
        ACCOUNTS[account_id] = account
        if action == "created":
            log(f"synced account {account_id}")
    result = {
        **echo,
        "account_id": account_id,
        "name": account["name"],
        "action": action,
        "status": account["status"],
        "billing": account["billing"],
    }
    for optional in ("billing_entity", "payment_terms"):
        if account.get(optional) is not None:
            result[optional] = account[optional]
    return result


def announce_when_started(app: Any, url: str) -> Any:
    """ASGI wrapper that prints the ready line once the app's lifespan startup completes."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await app(scope, receive, send)
            return

        async def send_and_announce(message: dict[str, Any]) -> None:
            await send(message)
            if message["type"] == "lifespan.startup.complete":
                print(f"adcp-seller listening on {url}", flush=True)

        await app(scope, receive, send_and_announce)

    return wrapped


def reserve_port(host: str) -> socket.socket:
    """Binds (without listening) a free port the framework can then bind again.

    serve() treats port 0 as "use the default 3001", so the free port is chosen
    here. Both sockets set SO_REUSEADDR and this one never listens, so Linux lets
    serve() bind the same port while nobody else can take it in between.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, 0))
    return sock


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    args = parser.parse_args()

    reserved = reserve_port(args.host) if args.port == 0 else None
    port = reserved.getsockname()[1] if reserved else args.port
    url = f"http://{args.host}:{port}/mcp"
    print(f"adcp-seller starting on {url}", file=sys.stderr, flush=True)
    serve(
        server,
        name="agentic-test-seller",
        host=args.host,
        port=port,
        # A ToolContext per call (not the framework's None) so that the
        # middleware's caller_identity reaches the handlers.
        context_factory=lambda meta: ToolContext(),
        middleware=[principal_from_account],
        asgi_middleware=[lambda app: announce_when_started(app, url)],
    )


if __name__ == "__main__":
    main()
