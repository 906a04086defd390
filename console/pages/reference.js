// The API reference: the server's OpenAPI 3.1 document
// (GET /api/v2/openapi.json, generated from the operation registry),
// rendered here as a browsable page: operations by tag, their parameters,
// bodies, responses and schemas. It needs no sign-in and nothing beyond
// this origin (no CDN, nothing inline), so it works under the console's CSP.

import { h, replace, title, errorBox } from "../lib/dom.js";

let cached = null;

async function documentOnce() {
  if (cached) return cached;
  const res = await fetch("/api/v2/openapi.json", { headers: { Accept: "application/json" } });
  if (!res.ok) throw new Error(`the OpenAPI document could not be read (HTTP ${res.status})`);
  cached = await res.json();
  return cached;
}

const METHODS = ["get", "post", "put", "patch", "delete"];

/** Text with `code` spans, as elements (never parsed as HTML). */
function prose(text, tag = "p") {
  if (!text) return null;
  return String(text)
    .split(/\n{2,}/)
    .map((para) =>
      h(
        tag,
        { class: "prose" },
        para.split("`").map((part, i) => (i % 2 === 1 ? h("code", {}, part) : part)),
      ),
    );
}

function refName(ref) {
  return String(ref).split("/").pop();
}

function typeLabel(schema) {
  if (!schema || typeof schema !== "object") return "any";
  if (schema.$ref) return refName(schema.$ref);
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const variants = schema.oneOf || schema.anyOf;
  if (variants) return variants.map(typeLabel).join(" | ");
  if (schema.allOf) return schema.allOf.map(typeLabel).join(" & ");
  let type = schema.type;
  if (Array.isArray(type)) type = type.join(" | ");
  if (type === "array" || (Array.isArray(schema.type) && schema.type.includes("array"))) {
    return `array of ${typeLabel(schema.items)}`;
  }
  if (schema.format) return `${type || "any"} (${schema.format})`;
  return type || (schema.properties ? "object" : "any");
}

/** A schema as nested lists; `$ref`s open on demand. */
function schemaView(doc, schema, depth = 0) {
  if (!schema || typeof schema !== "object") return h("span", { class: "type" }, "any");
  if (schema.$ref) {
    const name = refName(schema.$ref);
    const target = (doc.components && doc.components.schemas && doc.components.schemas[name]) || null;
    const details = h("details", { class: "schema-ref" }, h("summary", {}, h("code", {}, name)));
    let filled = false;
    details.addEventListener("toggle", () => {
      if (details.open && !filled) {
        filled = true;
        details.append(depth > 12 ? h("p", {}, "…") : schemaView(doc, target, depth + 1));
      }
    });
    return details;
  }
  const parts = [];
  if (schema.description) parts.push(prose(schema.description));
  const variants = schema.oneOf || schema.anyOf;
  if (variants) {
    parts.push(
      h(
        "div",
        { class: "variants" },
        h("span", { class: "type" }, schema.oneOf ? "one of:" : "any of:"),
        h("ul", {}, variants.map((v) => h("li", {}, schemaView(doc, v, depth + 1)))),
      ),
    );
  }
  if (schema.allOf) {
    parts.push(h("ul", { class: "variants" }, schema.allOf.map((v) => h("li", {}, schemaView(doc, v, depth + 1)))));
  }
  if (schema.properties) {
    const required = new Set(schema.required || []);
    parts.push(
      h(
        "ul",
        { class: "props" },
        Object.entries(schema.properties).map(([name, prop]) =>
          h(
            "li",
            {},
            h("code", { class: "prop" }, name),
            " ",
            h("span", { class: "type" }, typeLabel(prop)),
            required.has(name) ? h("span", { class: "required" }, " required") : null,
            prop && (prop.properties || prop.$ref || prop.items || prop.oneOf || prop.anyOf || prop.description)
              ? h("div", { class: "nested" }, nestedView(doc, prop, depth + 1))
              : null,
          ),
        ),
      ),
    );
  } else if (schema.items) {
    parts.push(h("div", { class: "nested" }, h("span", { class: "type" }, "items: "), schemaView(doc, schema.items, depth + 1)));
  } else if (!variants && !schema.allOf) {
    parts.push(h("span", { class: "type" }, typeLabel(schema)));
  }
  const limits = ["minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "pattern", "default", "example"]
    .filter((k) => schema[k] !== undefined)
    .map((k) => `${k}: ${JSON.stringify(schema[k])}`);
  if (limits.length) parts.push(h("p", { class: "limits" }, limits.join(" · ")));
  return h("div", { class: "schema" }, parts);
}

function nestedView(doc, prop, depth) {
  if (prop.$ref) return schemaView(doc, prop, depth);
  if (prop.items && prop.items.$ref && !prop.description) return schemaView(doc, prop.items, depth);
  return schemaView(doc, prop, depth);
}

function operationView(doc, path, method, op) {
  const body = h("div", { class: "op-body" });
  const details = h(
    "details",
    { class: "operation", dataset: { operationId: op.operationId || "" } },
    h(
      "summary",
      {},
      h("span", { class: `method method-${method}` }, method.toUpperCase()),
      " ",
      h("code", { class: "path" }, path),
      op.operationId ? h("span", { class: "op-id" }, ` ${op.operationId}`) : null,
      op.summary ? h("span", { class: "op-summary" }, ` ${op.summary}`) : null,
    ),
    body,
  );
  let filled = false;
  details.addEventListener("toggle", () => {
    if (!details.open || filled) return;
    filled = true;
    const parts = [];
    if (op.description && op.description !== op.summary) parts.push(prose(op.description));
    const params = op.parameters || [];
    if (params.length) {
      parts.push(
        h("h4", {}, "Parameters"),
        h(
          "table",
          { class: "table params" },
          h("thead", {}, h("tr", {}, ["Name", "In", "Type", "Description"].map((c) => h("th", { scope: "col" }, c)))),
          h(
            "tbody",
            {},
            params.map((p) => {
              const param = p.$ref ? doc.components.parameters[refName(p.$ref)] || p : p;
              return h(
                "tr",
                {},
                h("td", {}, h("code", {}, param.name), param.required ? h("span", { class: "required" }, " required") : null),
                h("td", {}, param.in),
                h("td", {}, h("span", { class: "type" }, typeLabel(param.schema))),
                h("td", {}, prose(param.description, "span")),
              );
            }),
          ),
        ),
      );
    }
    if (op.requestBody) {
      const content = op.requestBody.content || {};
      parts.push(h("h4", {}, `Request body${op.requestBody.required ? "" : " (optional)"}`));
      for (const [type, media] of Object.entries(content)) {
        parts.push(h("p", { class: "media-type" }, h("code", {}, type)), schemaView(doc, media.schema));
      }
    }
    const responses = Object.entries(op.responses || {});
    if (responses.length) {
      parts.push(
        h("h4", {}, "Responses"),
        h(
          "ul",
          { class: "responses" },
          responses.map(([status, res]) => {
            const response = res.$ref ? doc.components.responses[refName(res.$ref)] || res : res;
            const media = response.content ? Object.entries(response.content)[0] : null;
            return h(
              "li",
              {},
              h("span", { class: `status status-${String(status)[0]}xx` }, status),
              " ",
              prose(response.description, "span"),
              media && media[1].schema ? h("div", { class: "nested" }, schemaView(doc, media[1].schema)) : null,
            );
          }),
        ),
      );
    }
    if (op.security) {
      const schemes = op.security.flatMap((s) => Object.keys(s));
      parts.push(h("p", { class: "hint" }, `Authentication: ${schemes.length ? schemes.join(" or ") : "none"}.`));
    }
    body.append(...parts.flat());
  });
  return details;
}

function operationsByTag(doc) {
  const tags = new Map();
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const tag = (op.tags && op.tags[0]) || "other";
      if (!tags.has(tag)) tags.set(tag, []);
      tags.get(tag).push({ path, method, op });
    }
  }
  return tags;
}

export async function render(main, params) {
  let doc;
  try {
    doc = await documentOnce();
  } catch (err) {
    replace(main, title("API reference"), errorBox(err));
    return null;
  }
  const tags = operationsByTag(doc);
  const described = new Map((doc.tags || []).map((t) => [t.name, t.description]));
  const chosen = params.tag && tags.has(params.tag) ? params.tag : null;
  const filter = h("input", { type: "search", id: "reference-filter", placeholder: "path, operation or word" });
  const results = h("div", { id: "reference-operations" });

  function show() {
    const q = filter.value.trim().toLowerCase();
    const sections = [];
    for (const [tag, ops] of tags) {
      if (chosen && tag !== chosen) continue;
      const shown = ops.filter(
        ({ path, op }) =>
          !q ||
          path.toLowerCase().includes(q) ||
          (op.operationId || "").toLowerCase().includes(q) ||
          (op.summary || "").toLowerCase().includes(q) ||
          (op.description || "").toLowerCase().includes(q),
      );
      if (shown.length === 0) continue;
      sections.push(
        h(
          "section",
          { class: "ref-group", "aria-labelledby": `tag-${tag}` },
          h("h2", { id: `tag-${tag}` }, tag),
          prose(described.get(tag)),
          shown.map(({ path, method, op }) => operationView(doc, path, method, op)),
        ),
      );
    }
    replace(results, sections.length ? sections : h("p", { class: "empty" }, "No operation matches."));
  }
  filter.addEventListener("input", show);

  const info = doc.info || {};
  replace(
    main,
    title("API reference"),
    h(
      "p",
      { class: "lede" },
      `${info.title || "API"} ${info.version || ""}. Every operation is also an MCP tool of the same name. The document itself: `,
      h("a", { href: "/api/v2/openapi.json" }, "/api/v2/openapi.json"),
      ".",
    ),
    prose(info.description),
    h(
      "div",
      { class: "reference" },
      h(
        "nav",
        { class: "reference-tags", "aria-label": "Tags" },
        h(
          "ul",
          {},
          h("li", {}, h("a", { href: "#/reference", "aria-current": chosen ? null : "page" }, "All operations")),
          [...tags.keys()].map((tag) =>
            h(
              "li",
              {},
              h(
                "a",
                { href: `#/reference/${encodeURIComponent(tag)}`, "aria-current": tag === chosen ? "page" : null },
                `${tag} (${tags.get(tag).length})`,
              ),
            ),
          ),
        ),
      ),
      h(
        "div",
        { class: "reference-main" },
        h("div", { class: "field" }, h("label", { for: "reference-filter" }, "Filter"), filter),
        results,
      ),
    ),
  );
  show();
  return null;
}
