"""Drives a real headless Chromium through the web console, for
tests/api/console_browser.rs: several pages at once, each in its own
browser context (its own cookies and sessionStorage, so its own person).

Usage: python console_driver.py  (commands on stdin, one JSON object per
line; one JSON reply per command on stdout, {"ok": true, ...} or
{"ok": false, "error": ...})

  {"cmd": "open", "page": P}                       a new context and page named P
  {"cmd": "goto", "page": P, "url": U}
  {"cmd": "reload", "page": P}                     a full reload (sessionStorage stays)
  {"cmd": "click", "page": P, "selector": S}        click (no navigation wait)
  {"cmd": "fill", "page": P, "selector": S, "value": V}
  {"cmd": "check", "page": P, "selector": S}        tick a radio or checkbox
  {"cmd": "select", "page": P, "selector": S, "value": V}
  {"cmd": "press", "page": P, "key": K, "selector": S?}  a key, on S or where focus is
  {"cmd": "focus", "page": P, "selector": S}
  {"cmd": "waitFor", "page": P, "selector": S, "text": T?, "timeoutMs": N}
                                                   S visible (and containing T)
  {"cmd": "wait", "page": P, "js": EXPR, "timeoutMs": N}   EXPR truthy
  {"cmd": "eval", "page": P, "js": EXPR}           -> {"value": ...}
  {"cmd": "url", "page": P}                        -> {"value": url}
  {"cmd": "screenshot", "page": P, "path": F, "full": B}  a PNG at F (the whole page
                                                   unless full is false)
  {"cmd": "init", "page": P, "js": SCRIPT}          run SCRIPT in the page before its own
                                                   scripts, on every load from now on
  {"cmd": "route", "page": P, "pattern": GLOB, "method": M, "status": N, "body": JSON}
                                                   answer M requests to GLOB with JSON
                                                   (other methods go to the server)
  {"cmd": "routed", "page": P}                     -> [{"method", "url", "body"}] answered so far
  {"cmd": "problems", "page": P}                   -> console errors (not the network's
                                                      "Failed to load resource" reports),
                                                      page errors and CSP violations
  {"cmd": "quit"}

Chromium is Debian's (AGENTIC_CHROMIUM, default /usr/lib/chromium/chromium);
Playwright never downloads a browser here. Host resolution is pinned to
loopback so pages can reach nothing else.
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
        pages = {}
        problems = {}
        routed = {}

        async def open_page(name):
            context = await browser.new_context(viewport={"width": 1280, "height": 860})
            page = await context.new_page()
            seen = problems.setdefault(name, [])

            def on_console(m):
                print(f"console[{name}]:", m.type, m.text, file=sys.stderr)
                # A response's status (a 404 the page expects, the login
                # page's favicon) is the network's report, not the page's.
                if m.type == "error" and not m.text.startswith("Failed to load resource"):
                    seen.append(m.text)

            page.on("console", on_console)
            page.on("pageerror", lambda e: seen.append("page error: " + str(e)))
            # Every policy violation is reported to the test, not only logged.
            await page.add_init_script(
                "document.addEventListener('securitypolicyviolation', e =>"
                " console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI));"
            )
            pages[name] = page

        reply({"ok": True, "browser": browser.version})
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            cmd = json.loads(line)
            name = cmd.get("page")
            try:
                c = cmd["cmd"]
                if c == "open":
                    await open_page(name)
                    reply({"ok": True})
                    continue
                if c == "quit":
                    reply({"ok": True})
                    break
                page = pages[name]
                timeout = cmd.get("timeoutMs", 20000)
                if c == "goto":
                    await page.goto(cmd["url"])
                    reply({"ok": True})
                elif c == "reload":
                    await page.reload()
                    reply({"ok": True})
                elif c == "click":
                    await page.click(cmd["selector"], timeout=timeout)
                    reply({"ok": True})
                elif c == "fill":
                    await page.fill(cmd["selector"], cmd["value"], timeout=timeout)
                    reply({"ok": True})
                elif c == "check":
                    await page.check(cmd["selector"], timeout=timeout)
                    reply({"ok": True})
                elif c == "select":
                    await page.select_option(cmd["selector"], cmd["value"], timeout=timeout)
                    reply({"ok": True})
                elif c == "press":
                    if cmd.get("selector"):
                        await page.press(cmd["selector"], cmd["key"], timeout=timeout)
                    else:
                        await page.keyboard.press(cmd["key"])
                    reply({"ok": True})
                elif c == "focus":
                    await page.focus(cmd["selector"], timeout=timeout)
                    reply({"ok": True})
                elif c == "waitFor":
                    locator = page.locator(cmd["selector"])
                    if cmd.get("text") is not None:
                        locator = locator.filter(has_text=cmd["text"])
                    await locator.first.wait_for(state="visible", timeout=timeout)
                    reply({"ok": True})
                elif c == "wait":
                    # Polled from here: Playwright's own wait_for_function
                    # evaluates strings inside the page, which the console's
                    # CSP (no 'unsafe-eval') rightly refuses.
                    deadline = loop.time() + timeout / 1000
                    while True:
                        try:
                            if await page.evaluate(cmd["js"]):
                                break
                        except Exception as e:
                            if "context was destroyed" not in str(e) and "navigat" not in str(e):
                                raise
                        if loop.time() > deadline:
                            raise TimeoutError("timed out waiting for " + cmd["js"])
                        await asyncio.sleep(0.05)
                    reply({"ok": True})
                elif c == "eval":
                    reply({"ok": True, "value": await page.evaluate(cmd["js"])})
                elif c == "url":
                    reply({"ok": True, "value": page.url})
                elif c == "screenshot":
                    os.makedirs(os.path.dirname(cmd["path"]), exist_ok=True)
                    await page.screenshot(path=cmd["path"], full_page=cmd.get("full", True))
                    reply({"ok": True})
                elif c == "init":
                    await page.add_init_script(cmd["js"])
                    reply({"ok": True})
                elif c == "route":
                    log = routed.setdefault(name, [])
                    method, status, body = cmd["method"], cmd["status"], cmd["body"]

                    async def answer(route, request, method=method, status=status, body=body, log=log):
                        if request.method != method:
                            await route.continue_()
                            return
                        log.append({"method": request.method, "url": request.url, "body": request.post_data})
                        await route.fulfill(
                            status=status,
                            content_type="application/json",
                            body=json.dumps(body),
                        )

                    await page.route(cmd["pattern"], answer)
                    reply({"ok": True})
                elif c == "routed":
                    reply({"ok": True, "value": routed.get(name, [])})
                elif c == "problems":
                    reply({"ok": True, "value": problems.get(name, [])})
                else:
                    reply({"ok": False, "error": "unknown command " + c})
            except Exception as e:  # reported to the test, which fails with it
                extra = ""
                if name in pages:
                    try:
                        extra = " | url: " + pages[name].url
                        text = await pages[name].evaluate("document.body ? document.body.innerText : ''")
                        extra += " | page text: " + text[:1500]
                    except Exception:
                        pass
                reply({"ok": False, "error": repr(e) + extra})
        await browser.close()


asyncio.run(main())
