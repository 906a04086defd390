// Builds each widget (src/<slug>/index.html) into one self-contained file,
// dist/<slug>.html, and the test host page into dist-test/host.html:
// everything inlined (vite-plugin-singlefile), nothing loaded at run time.
//
//   node build.mjs [OUT]   writes OUT/dist and OUT/dist-test (OUT defaults to here)

import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "vite";
import { viteSingleFile } from "vite-plugin-singlefile";

const here = dirname(fileURLToPath(import.meta.url));
const out = resolve(process.argv[2] ?? here);

const slugs = readdirSync(join(here, "src"), { withFileTypes: true })
  .filter((d) => d.isDirectory() && d.name !== "shared")
  .map((d) => d.name)
  .sort();
for (const slug of slugs) {
  if (!/^[a-z0-9]+(-[a-z0-9]+)*$/.test(slug)) throw new Error(`widget slug ${slug}: lowercase letters, digits and hyphens only`);
  if (!existsSync(join(here, "src", slug, "index.html"))) throw new Error(`src/${slug}/index.html is missing`);
}

/** Builds the page at root/index.html and returns its single HTML file. */
async function page(root) {
  const result = await build({
    root,
    configFile: false,
    logLevel: "warn",
    plugins: [viteSingleFile({ removeViteModuleLoader: true })],
    build: {
      write: false,
      target: "es2022",
      modulePreload: { polyfill: false },
      reportCompressedSize: false,
      rollupOptions: {
        input: join(root, "index.html"),
        onwarn(warning, warn) {
          // zod's comments that rollup cannot place (harmless, and noisy).
          if (warning.code === "INVALID_ANNOTATION" && /node_modules/.test(warning.id ?? "")) return;
          warn(warning);
        },
      },
    },
  });
  const files = (Array.isArray(result) ? result : [result]).flatMap((r) => r.output);
  const html = files.filter((f) => f.fileName.endsWith(".html"));
  const rest = files.filter((f) => !f.fileName.endsWith(".html"));
  if (html.length !== 1 || rest.length > 0)
    throw new Error(`${root}: expected one inlined HTML file, got ${files.map((f) => f.fileName).join(", ")}`);
  const source = html[0].source;
  return typeof source === "string" ? source : Buffer.from(source).toString("utf8");
}

function write(file, text) {
  if (/<script[^>]+src=|<link[^>]+href=/i.test(text)) throw new Error(`${file}: an external script or stylesheet is left`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  console.log(`${file.slice(out.length + 1)}  ${Buffer.byteLength(text)} bytes`);
}

// Only the files this build makes: a widget whose source was removed goes too.
rmSync(join(out, "dist"), { recursive: true, force: true });
rmSync(join(out, "dist-test"), { recursive: true, force: true });
for (const slug of slugs) write(join(out, "dist", `${slug}.html`), await page(join(here, "src", slug)));
write(join(out, "dist-test", "host.html"), await page(join(here, "test-host")));
