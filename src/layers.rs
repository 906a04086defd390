//! The layering of the crate's top-level modules, checked: no module may
//! import, directly or through others, a module that imports it back
//! (docs/architecture.md, *Layers*). Reads `src/` as text; test code is
//! left out, since tests may reach anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level modules each module's non-test code names (`crate::x`).
fn imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut tops = BTreeSet::new();
    let mut files = Vec::new();
    for entry in std::fs::read_dir(src).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let top = name.trim_end_matches(".rs").to_string();
        if top == "main" || top == "lib" {
            continue;
        }
        tops.insert(top.clone());
        collect(&path, &top, &mut files);
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> =
        tops.iter().map(|t| (t.clone(), BTreeSet::new())).collect();
    for (top, text) in files {
        for used in named_modules(&non_test(&text)) {
            if used != top && tops.contains(&used) {
                graph.entry(top.clone()).or_default().insert(used);
            }
        }
    }
    graph
}

fn collect(path: &Path, top: &str, out: &mut Vec<(String, String)>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).into_iter().flatten().flatten() {
            collect(&entry.path(), top, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs")
        && let Ok(text) = std::fs::read_to_string(path)
    {
        out.push((top.to_string(), text));
    }
}

/// The text without `#[cfg(test)]` items and `//` comments.
fn non_test(text: &str) -> String {
    let mut out = String::new();
    let mut skip_depth: Option<i32> = None;
    let mut pending_test = false;
    for line in text.lines() {
        let code = line.split("//").next().unwrap_or_default();
        if let Some(depth) = skip_depth.as_mut() {
            *depth += code.matches('{').count() as i32 - code.matches('}').count() as i32;
            if *depth <= 0 && code.contains('}') {
                skip_depth = None;
            }
            continue;
        }
        if code.trim() == "#[cfg(test)]" {
            pending_test = true;
            continue;
        }
        if pending_test {
            if code.trim_start().starts_with("#[") {
                continue;
            }
            pending_test = false;
            let depth = code.matches('{').count() as i32 - code.matches('}').count() as i32;
            if depth > 0 {
                skip_depth = Some(depth);
            }
            continue;
        }
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Every `x` of `crate::x` and of `crate::{x, y::z}` in `code`.
fn named_modules(code: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // The top-level items of the group, split at depth 0.
            let mut depth = 0;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.insert(ident(&item));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    item.push(c);
                }
            }
            found.insert(ident(&item));
        } else {
            found.insert(ident(rest));
        }
    }
    found.remove("");
    found
}

/// A cycle through `start`, as a path, if there is one.
fn cycle_through(graph: &BTreeMap<String, BTreeSet<String>>, start: &str) -> Option<Vec<String>> {
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut seen = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in graph.get(&node).into_iter().flatten() {
            if next == start {
                let mut cycle = path.clone();
                cycle.push(start.to_string());
                return Some(cycle);
            }
            if seen.insert(next.clone()) {
                let mut longer = path.clone();
                longer.push(next.clone());
                stack.push((next.clone(), longer));
            }
        }
    }
    None
}

#[test]
fn no_top_level_module_imports_one_that_imports_it_back() {
    let graph = imports(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(graph.len() > 20, "src/ was not read: {graph:?}");
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|m| cycle_through(&graph, m))
        .map(|c| c.join(" -> "))
        .collect();
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn the_reader_finds_plain_and_grouped_imports_and_skips_tests() {
    let code = non_test(
        "use crate::a::X;\nuse crate::{b, c::{D, E}, f::G};\n// crate::h\n\
         #[cfg(test)]\nmod tests {\n    use crate::z;\n}\nfn k() { crate::i::j(); }\n",
    );
    let names: Vec<String> = named_modules(&code).into_iter().collect();
    assert_eq!(names, ["a", "b", "c", "f", "i"]);
}
