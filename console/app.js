// The console's shell: sign-in, the header, and hash routes to the pages.
// Each page module exports `render(main, params, ctx)`, which may return a
// function that undoes what it started (closing its event streams).

import { h, replace, title, errorBox } from "./lib/dom.js";
import * as auth from "./lib/auth.js";
import { get } from "./lib/api.js";

const PAGES = {
  keys: () => import("./pages/keys.js"),
  conversations: () => import("./pages/conversations.js"),
  room: () => import("./pages/room.js"),
  discovery: () => import("./pages/discovery.js"),
  campaigns: () => import("./pages/campaigns.js"),
  notifications: () => import("./pages/notifications.js"),
  reference: () => import("./pages/reference.js"),
};

/** Route patterns: segments after `#/`; `:name` captures one. */
const ROUTES = [
  { pattern: [], page: "conversations", nav: "conversations" },
  { pattern: ["conversations"], page: "conversations", nav: "conversations" },
  { pattern: ["conversations", ":uid"], page: "room", nav: "conversations" },
  { pattern: ["discovery"], page: "discovery", nav: "discovery" },
  { pattern: ["discovery", ":discoveryId"], page: "discovery", nav: "discovery" },
  { pattern: ["campaigns"], page: "campaigns", nav: "campaigns" },
  { pattern: ["notifications"], page: "notifications", nav: "notifications" },
  { pattern: ["keys"], page: "keys", nav: "keys" },
  { pattern: ["reference"], page: "reference", nav: "reference", public: true },
  { pattern: ["reference", ":tag"], page: "reference", nav: "reference", public: true },
];

const NAV = [
  ["conversations", "#/conversations", "Conversations"],
  ["discovery", "#/discovery", "Discovery"],
  ["campaigns", "#/campaigns", "Campaigns"],
  ["notifications", "#/notifications", "Notifications"],
  ["keys", "#/keys", "API keys"],
  ["reference", "#/reference", "API reference"],
];

let dispose = null;
let me = null;
let rendering = 0;

function match(hash) {
  const segments = hash
    .replace(/^#\/?/, "")
    .split("/")
    .filter(Boolean)
    .map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  for (const route of ROUTES) {
    if (route.pattern.length !== segments.length) continue;
    const params = {};
    const ok = route.pattern.every((p, i) => {
      if (p.startsWith(":")) {
        params[p.slice(1)] = segments[i];
        return true;
      }
      return p === segments[i];
    });
    if (ok) return { route, params };
  }
  return null;
}

async function whoAmI() {
  if (me) return me;
  me = (await get("/me")).data;
  return me;
}

function renderHeader(active) {
  const nav = document.getElementById("nav");
  replace(
    nav,
    h(
      "ul",
      {},
      NAV.map(([key, href, label]) =>
        h("li", {}, h("a", { href, "aria-current": key === active ? "page" : null }, label)),
      ),
    ),
  );
  const who = document.getElementById("who");
  if (!auth.signedIn()) {
    replace(who);
    return;
  }
  const signOut = h("button", { type: "button", class: "link" }, "Sign out");
  signOut.addEventListener("click", async () => {
    await auth.signOut();
    me = null;
    location.hash = "#/";
    route();
  });
  replace(who, h("span", { class: "who", id: "who-name" }, me ? `${me.user.name} · ${me.account.name}` : ""), signOut);
  if (!me) {
    whoAmI()
      .then((m) => {
        const name = document.getElementById("who-name");
        if (name) name.textContent = `${m.user.name} · ${m.account.name}`;
      })
      .catch(() => {});
  }
}

function signInView(main, returnTo, problem) {
  const elsewhere = auth.signInAddress();
  const button = h("button", { type: "button", class: "primary", id: "sign-in" }, "Sign in");
  button.addEventListener("click", () => auth.signIn(returnTo).catch((e) => main.append(errorBox(e))));
  const insecure = !auth.secureEnough();
  replace(
    main,
    title("Sign in"),
    problem ? errorBox(problem) : null,
    h(
      "p",
      {},
      "Sign in with your email and password to manage your API keys, conversations, discoveries and campaigns.",
    ),
    elsewhere
      ? h(
          "p",
          { class: "notice" },
          "This server signs people in at its public address. Open the console at ",
          h("a", { href: `${elsewhere}/` }, `${elsewhere}/`),
          " to sign in.",
        )
      : insecure
        ? h(
            "p",
            { class: "notice" },
            "Signing in needs a secure address: https, or this machine's own (localhost). Ask the operator to serve the console over https (AGENTIC_PUBLIC_URL).",
          )
        : h("p", {}, button),
    h("p", {}, "The ", h("a", { href: "#/reference" }, "API reference"), " needs no sign-in."),
  );
  main.querySelector("h1").focus();
}

async function route() {
  const ticket = ++rendering;
  if (dispose) {
    try {
      dispose();
    } catch {
      // A page's cleanup never stops the next page.
    }
    dispose = null;
  }
  const main = document.getElementById("main");
  const hash = location.hash || "#/";
  if (!hash.startsWith("#/")) return; // an in-page anchor, not a route
  const found = match(hash);
  renderHeader(found ? found.route.nav : null);
  if (!found) {
    replace(main, title("Not found"), h("p", {}, "No page here. "), h("a", { href: "#/" }, "Back to the console"));
    main.querySelector("h1").focus();
    return;
  }
  if (!found.route.public && !auth.signedIn()) {
    signInView(main, hash);
    return;
  }
  replace(main, h("p", { class: "loading" }, "Loading…"));
  try {
    const mod = await PAGES[found.route.page]();
    if (ticket !== rendering) return;
    const ctx = { me: auth.signedIn() ? await whoAmI() : null, navigate: (to) => (location.hash = to) };
    if (ticket !== rendering) return;
    replace(main);
    dispose = (await mod.render(main, found.params, ctx)) || null;
    const heading = main.querySelector("h1");
    if (heading && ticket === rendering) heading.focus();
  } catch (err) {
    if (ticket !== rendering) return;
    if (err instanceof auth.SignInError) {
      signInView(main, hash, err);
      return;
    }
    replace(main, title("Something went wrong"), errorBox(err));
    main.querySelector("h1").focus();
  }
}

async function start() {
  const main = document.getElementById("main");
  const skip = document.querySelector(".skip");
  if (skip) {
    skip.addEventListener("click", (e) => {
      e.preventDefault();
      main.focus();
    });
  }
  try {
    await auth.loadConfig();
  } catch (err) {
    replace(main, title("The console cannot start"), errorBox(err));
    return;
  }
  if (location.pathname === "/console/callback") {
    replace(main, h("p", { class: "loading" }, "Signing in…"));
    try {
      const back = await auth.completeSignIn();
      history.replaceState(null, "", `/${back}`);
    } catch (err) {
      history.replaceState(null, "", "/#/");
      signInView(main, "#/", err);
      return;
    }
  }
  auth.onSessionChange((s) => {
    if (!s) {
      me = null;
      route();
    }
  });
  window.addEventListener("hashchange", route);
  document.getElementById("nav").hidden = false;
  route();
}

start();
