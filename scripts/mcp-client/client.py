"""Drives /mcp/buyer end to end with the reference MCP SDK's client (PyPI `mcp`):
initialize, list the tools, list and read the widget resources, create an advertiser, run a waiting discovery with a
progress callback (one report per seller), browse it. Exits non-zero on any failure.

    BASE=http://127.0.0.1:PORT KEY=<api key> SELLERS=<n> python client.py
"""

import asyncio
import os
import sys

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def check(cond, what):
    if not cond:
        print(f"mcp-client: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


async def main():
    base, key, sellers = os.environ["BASE"], os.environ["KEY"], int(os.environ["SELLERS"])
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {key}"}, timeout=httpx2.Timeout(60.0)
    )
    async with http, streamable_http_client(f"{base}/mcp/buyer", http_client=http) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.server_info.name == "agentic-api-buyer", f"server info {init.server_info}")
            await session.send_ping()

            tools = {t.name: t for t in (await session.list_tools()).tools}
            for name in ("create_advertiser", "discover_products", "browse_discovery"):
                check(name in tools, f"tool {name} listed (got {sorted(tools)})")
            check(
                set(tools["browse_discovery"].input_schema["properties"]) >= {"pathParams"},
                "browse_discovery takes pathParams",
            )

            # The widgets (MCP Apps): resources, and the tools that show them.
            resources = (await session.list_resources()).resources
            uris = [str(r.uri) for r in resources]
            check(
                "ui://agentic-api/advertiser-card/mcp-app.html" in uris,
                f"the advertiser widget is a resource (got {uris})",
            )
            for r in resources:
                check(r.mime_type == "text/html;profile=mcp-app", f"{r.uri}: {r.mime_type}")
            read = await session.read_resource("ui://agentic-api/advertiser-card/mcp-app.html")
            html = read.contents[0]
            check(html.mime_type == "text/html;profile=mcp-app", f"read: {html.mime_type}")
            check(html.text.lstrip().lower().startswith("<!doctype html"), "read: an HTML document")
            check(
                (tools["get_advertiser"].meta or {}).get("ui", {}).get("resourceUri")
                == "ui://agentic-api/advertiser-card/mcp-app.html",
                f"get_advertiser declares its widget: {tools['get_advertiser'].meta}",
            )

            created = await session.call_tool(
                "create_advertiser",
                {"body": {"name": "SDK Buyer", "brand": "acme.example", "primaryCurrency": "USD"}},
            )
            check(not created.is_error, f"create_advertiser: {created}")
            advertiser = created.structured_content["data"]["id"]
            check(
                (created.meta or {}).get("ui", {}).get("resourceUri")
                == "ui://agentic-api/advertiser-card/mcp-app.html",
                f"the result names its widget: {created.meta}",
            )
            print(f"mcp-client: advertiser {advertiser}")

            bad = await session.call_tool("create_advertiser", {"body": {"name": ""}})
            check(bad.is_error, "a bad body is an error result")
            check(bad.structured_content["code"] == "VALIDATION_ERROR", f"{bad.structured_content}")

            reports = []

            async def on_progress(progress, total, message):
                reports.append((progress, total))
                print(f"mcp-client: progress {progress}/{total} {message or ''}")

            found = await session.call_tool(
                "discover_products",
                {"body": {"advertiserId": advertiser, "brief": "CTV and news", "waitSeconds": 30}},
                progress_callback=on_progress,
            )
            check(not found.is_error, f"discover_products: {found}")
            data = found.structured_content["data"]
            check(data["resultsComplete"] is True, f"complete: {data.get('summary')}")
            check(
                reports == [(float(i), float(sellers)) for i in range(1, sellers + 1)],
                f"one progress report per seller, in order: {reports}",
            )
            discovery = data["discoveryId"]

            page = await session.call_tool(
                "browse_discovery",
                {"pathParams": {"discoveryId": discovery}, "params": {"groupLimit": 2}},
            )
            check(not page.is_error, f"browse_discovery: {page}")
            groups = page.structured_content["data"]["productGroups"]
            check(0 < len(groups) <= 2, f"two groups at most: {len(groups)}")
            print(
                f"mcp-client: ok: {len(tools)} tools, discovery {discovery} with "
                f"{data['totalGroups']} groups, {len(reports)} progress reports"
            )


asyncio.run(main())
