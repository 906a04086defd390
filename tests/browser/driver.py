"""Drives a real headless Chromium for tests/api/browser.rs.

Usage: python driver.py  (commands on stdin, one JSON object per line;
one JSON reply per command on stdout)

  {"cmd": "goto", "url": U}                  open the page
  {"cmd": "eval", "js": EXPR}               -> {"ok": true, "value": ...}
  {"cmd": "wait", "js": EXPR, "timeoutMs": N} wait until EXPR is truthy
                                             -> {"ok": true} or {"ok": false, "error": ...}
  {"cmd": "requests"}                        -> every EventSource request the page
                                                made: [{"url", "headers"}]
  {"cmd": "fill", "selector": S, "value": V}  type into a field, as a user would
  {"cmd": "click", "selector": S}            click, and wait for the navigation it starts
  {"cmd": "page"}                            -> {"url": ..., "html": ...} (needs no script)
  {"cmd": "quit"}

AGENTIC_BROWSER_JAVASCRIPT=off opens the page with JavaScript disabled (the
OAuth pages must work so; eval and wait need it on).

Chromium is Debian's (AGENTIC_CHROMIUM, default /usr/lib/chromium/chromium);
Playwright never downloads a browser here. Host resolution is pinned to
loopback so the page can reach nothing else.
"""

import asyncio
import json
import os
import sys

from playwright.async_api import async_playwright

CHROMIUM = os.environ.get("AGENTIC_CHROMIUM", "/usr/lib/chromium/chromium")


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost , EXCLUDE 127.0.0.1",
                "--no-sandbox",
            ],
        )
        page = await browser.new_page(
            java_script_enabled=os.environ.get("AGENTIC_BROWSER_JAVASCRIPT") != "off"
        )
        requests = []
        pending = []

        def on_request(request):
            if request.resource_type == "eventsource":
                entry = {"url": request.url, "headers": {}}
                requests.append(entry)

                async def fill():
                    entry["headers"] = await request.all_headers()

                pending.append(asyncio.ensure_future(fill()))

        page.on("request", on_request)
        page.on("console", lambda m: print("console:", m.text, file=sys.stderr))
        reply({"ok": True, "browser": browser.version})
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            cmd = json.loads(line)
            try:
                if cmd["cmd"] == "goto":
                    await page.goto(cmd["url"])
                    reply({"ok": True})
                elif cmd["cmd"] == "eval":
                    reply({"ok": True, "value": await page.evaluate(cmd["js"])})
                elif cmd["cmd"] == "wait":
                    await page.wait_for_function(cmd["js"], timeout=cmd.get("timeoutMs", 20000))
                    reply({"ok": True})
                elif cmd["cmd"] == "requests":
                    await asyncio.gather(*pending, return_exceptions=True)
                    reply({"ok": True, "value": requests})
                elif cmd["cmd"] == "fill":
                    await page.fill(cmd["selector"], cmd["value"])
                    reply({"ok": True})
                elif cmd["cmd"] == "click":
                    async with page.expect_navigation():
                        await page.click(cmd["selector"])
                    reply({"ok": True})
                elif cmd["cmd"] == "page":
                    reply({"ok": True, "url": page.url, "html": await page.content()})
                elif cmd["cmd"] == "quit":
                    reply({"ok": True})
                    break
                else:
                    reply({"ok": False, "error": "unknown command " + cmd["cmd"]})
            except Exception as e:  # reported to the test, which fails with it
                reply({"ok": False, "error": repr(e)})
        await browser.close()


asyncio.run(main())
