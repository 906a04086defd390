"""Drives a real headless Chromium through the widgets' test host
(widgets/dist-test/host.html): a widget's HTML in a sandboxed iframe,
connected by the MCP Apps SDK's AppBridge, handed a tool result.

Usage: python widget_driver.py  (commands on stdin, one JSON object per
line; one JSON reply per command on stdout, {"ok": true, ...} or
{"ok": false, "error": ...}; the first line out is {"ok": true, "browser": V})

  {"cmd": "host", "hostPage": PATH, "html": WIDGET_HTML, "result": TOOL_RESULT,
   "input": ARGS?, "hostContext": CTX?, "timeoutMs": N?}
        loads the host page (a file path or URL; reloaded for each widget),
        calls hostWidget(html, result, input, hostContext), then waits until the
        widget has shown the result (<html data-state> rendered, error or
        cancelled) -> {"ok": true, "state": S}
  {"cmd": "text"}                      -> {"value": the widget's document.body.innerText}
  {"cmd": "click", "text": T}          click in the widget: T as a CSS selector when it
                                       matches, else the first button, else the first
                                       element, whose text is exactly T
  {"cmd": "waitText", "text": T, "timeoutMs": N}
                                       until the widget's innerText contains T
  {"cmd": "toolCalls"}                 -> {"value": window.toolCalls} ([{name, arguments}])
  {"cmd": "answer", "js": FUNCTION}    sets window.answerToolCall to the async function
                                       FUNCTION (source text, e.g. "async (name, args) => ({...})")
  {"cmd": "eval", "js": EXPR, "frame": "widget"?}
                                       -> {"value": ...} in the host page, or the widget
  {"cmd": "screenshot", "path": P}     a PNG of the host page at P (the widget as framed)
  {"cmd": "errors"}                    -> {"value": [...]}: console errors and uncaught
                                       errors of the host page and the widget frame,
                                       CSP violations, window.hostErrors, and any
                                       network request (a widget makes none), since the
                                       driver started; "clear": true empties the list after
  {"cmd": "quit"}

Chromium is Debian's (AGENTIC_CHROMIUM, default /usr/lib/chromium/chromium);
Playwright never downloads a browser here. Host resolution is pinned to
loopback so pages can reach nothing else.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

from playwright.async_api import async_playwright

CHROMIUM = os.environ.get("AGENTIC_CHROMIUM", "/usr/lib/chromium/chromium")

# Every frame reports a policy violation as a console error.
CSP_REPORTER = (
    "window.__cspReporter = (window.__cspReporter || 0) + 1;"
    "document.addEventListener('securitypolicyviolation', e =>"
    " console.error('CSP violation: ' + e.violatedDirective + ' ' + e.blockedURI"
    " + ' at ' + e.sourceFile + ':' + e.lineNumber + ':' + e.columnNumber));"
)


def reply(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def page_url(host_page):
    if "://" in host_page:
        return host_page
    return Path(host_page).resolve().as_uri()


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
        context = await browser.new_context(viewport={"width": 760, "height": 900})
        page = await context.new_page()
        problems = []
        host_url = {"url": None}

        def on_console(m):
            if m.type != "debug":  # the SDK logs every message at debug level
                print("console:", m.type, m.text, file=sys.stderr)
            if m.type == "error":
                problems.append(m.text)

        def on_request(r):
            # The host page itself, and the widget's srcdoc document, are no requests.
            if r.url == host_url["url"] or r.url.startswith(("about:", "data:")):
                return
            problems.append("network request: " + r.method + " " + r.url)

        page.on("console", on_console)
        page.on("pageerror", lambda e: problems.append("page error: " + str(e)))
        page.on("request", on_request)
        await page.add_init_script(CSP_REPORTER)

        def widget():
            frame = page.frame_locator("iframe#widget")
            return frame

        async def widget_frame():
            el = await page.query_selector("iframe#widget")
            if el is None:
                raise RuntimeError("no widget: send host first")
            frame = await el.content_frame()
            if frame is None:
                raise RuntimeError("the widget frame has no document")
            return frame

        reply({"ok": True, "browser": browser.version})
        loop = asyncio.get_running_loop()
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            if not line:
                break
            cmd = json.loads(line)
            c = cmd.get("cmd")
            timeout = cmd.get("timeoutMs", 20000)
            try:
                if c == "host":
                    host_url["url"] = page_url(cmd["hostPage"])
                    await page.goto(host_url["url"])
                    await page.evaluate(
                        "([html, result, input, ctx]) => hostWidget(html, result, input ?? undefined, ctx ?? undefined)",
                        [cmd["html"], cmd["result"], cmd.get("input"), cmd.get("hostContext")],
                    )
                    frame = await widget_frame()
                    deadline = loop.time() + timeout / 1000
                    while True:
                        state = await frame.evaluate("document.documentElement.dataset.state || ''")
                        if state in ("rendered", "error", "cancelled"):
                            break
                        if loop.time() > deadline:
                            raise TimeoutError("the widget did not show the result (state: %r)" % state)
                        await asyncio.sleep(0.05)
                    reply({"ok": True, "state": state})
                elif c == "text":
                    frame = await widget_frame()
                    reply({"ok": True, "value": await frame.evaluate("document.body.innerText")})
                elif c == "click":
                    text = cmd["text"]
                    frame = widget()
                    target = None
                    try:
                        if await frame.locator(text).count() > 0:
                            target = frame.locator(text).first
                    except Exception:
                        target = None  # not a selector
                    if target is None:
                        button = frame.get_by_role("button").filter(has_text=text)
                        exact = frame.get_by_text(text, exact=True)
                        if await button.count() > 0:
                            target = button.first
                        elif await exact.count() > 0:
                            target = exact.first
                        else:
                            raise RuntimeError("nothing to click for " + repr(text))
                    await target.click(timeout=timeout)
                    reply({"ok": True})
                elif c == "waitText":
                    frame = await widget_frame()
                    deadline = loop.time() + timeout / 1000
                    while True:
                        body = await frame.evaluate("document.body.innerText")
                        if cmd["text"] in body:
                            break
                        if loop.time() > deadline:
                            raise TimeoutError("timed out waiting for %r in the widget" % cmd["text"])
                        await asyncio.sleep(0.05)
                    reply({"ok": True})
                elif c == "toolCalls":
                    reply({"ok": True, "value": await page.evaluate("window.toolCalls")})
                elif c == "answer":
                    await page.evaluate("src => { window.answerToolCall = (0, eval)('(' + src + ')'); }", cmd["js"])
                    reply({"ok": True})
                elif c == "eval":
                    target = await widget_frame() if cmd.get("frame") == "widget" else page
                    reply({"ok": True, "value": await target.evaluate(cmd["js"])})
                elif c == "screenshot":
                    path = cmd["path"]
                    if os.path.dirname(path):
                        os.makedirs(os.path.dirname(path), exist_ok=True)
                    # A frame in another process is painted only inside the
                    # viewport: grow the viewport to the page first.
                    height = await page.evaluate("document.documentElement.scrollHeight")
                    size = page.viewport_size
                    await page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
                    await page.wait_for_timeout(100)
                    await page.screenshot(path=path, full_page=True)
                    await page.set_viewport_size(size)
                    reply({"ok": True})
                elif c == "errors":
                    host_errors = []
                    try:
                        host_errors = await page.evaluate("window.hostErrors || []")
                    except Exception:
                        pass
                    reply({"ok": True, "value": problems + ["host: " + e for e in host_errors]})
                    if cmd.get("clear"):
                        problems.clear()
                        await page.evaluate("window.hostErrors && (window.hostErrors.length = 0)")
                elif c == "quit":
                    reply({"ok": True})
                    break
                else:
                    reply({"ok": False, "error": "unknown command " + str(c)})
            except Exception as e:  # reported to the test, which fails with it
                extra = ""
                try:
                    frame = await widget_frame()
                    extra = " | widget text: " + (await frame.evaluate("document.body.innerText"))[:1500]
                except Exception:
                    pass
                reply({"ok": False, "error": repr(e) + extra})
        await browser.close()


asyncio.run(main())
