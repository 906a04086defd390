// Small DOM helpers. Every value reaches the page as text (textContent,
// attributes), never as HTML: nothing from the API is ever parsed as markup.

/** An element: h("button", {class: "x", onclick: fn}, "Label", child, ...). */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "text") {
      el.textContent = value;
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (name === "value" && "value" in el) {
      el.value = value;
    } else if (name === "checked" || name === "disabled" || name === "hidden" || name === "selected") {
      el[name] = Boolean(value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

/** Appends children: nodes, strings (as text), arrays; skips null/false. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

/** Replaces an element's children. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A date-time as the reader's locale shows it. */
export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

/** Says `message` to screen readers and shows it briefly. */
export function announce(message) {
  const toast = document.getElementById("toast");
  if (!toast) return;
  toast.textContent = message;
  clearTimeout(announce.timer);
  announce.timer = setTimeout(() => {
    toast.textContent = "";
  }, 6000);
}

/** An error as a page shows it (an API envelope's code and message). */
export function errorBox(err) {
  const code = err && err.code ? `${err.code}: ` : "";
  const message = (err && err.message) || String(err);
  return h("p", { class: "error", role: "alert" }, code + message);
}

/** A page heading that takes focus when the page changes (keyboard users). */
export function title(text) {
  return h("h1", { tabindex: "-1", class: "page-title" }, text);
}

/** A labelled form field: label + control (+ hint). */
export function field(labelText, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 10)}`;
  control.id = id;
  const hintEl = hint ? h("span", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: id }, labelText), control, hintEl);
}

/** A JSON value, pretty-printed, in a collapsible block. */
export function jsonDetails(summary, value, open = false) {
  return h(
    "details",
    { class: "json", open },
    h("summary", {}, summary),
    h("pre", {}, JSON.stringify(value, null, 2)),
  );
}

/** A button that runs `action` and is disabled while it runs. */
export function actionButton(label, action, props = {}) {
  const button = h("button", { type: "button", ...props }, label);
  button.addEventListener("click", async () => {
    if (button.disabled) return;
    button.disabled = true;
    try {
      await action(button);
    } finally {
      if (button.isConnected) button.disabled = false;
    }
  });
  return button;
}
