//! ARCHITECTURE.md's invariants, checked: the driver's modules in the
//! order of its "Layers" block, each importing only modules before it (so
//! data flows one way and there is no cycle), the base ones nothing;
//! outside `gpu/`, no code that asks which target it is; and in no crate
//! two top-level modules that import each other, directly or around.
//!
//! An import is each `crate::<module>` a file of driver/src names outside
//! its `#[cfg(test)] mod tests`, doc links included: an edge from the
//! file's top-level module to that one.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn src() -> PathBuf {
    root().join("driver/src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The library's top-level modules, as lib.rs declares them.
fn modules(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    lib.lines()
        .filter_map(|l| ["pub mod ", "pub(crate) mod ", "mod "].iter().find_map(|p| l.trim().strip_prefix(p)))
        .map(|l| l.trim_end_matches(';').to_string())
        .collect()
}

/// The modules `text` names as `crate::m` or `crate::{m, ...}`.
fn named(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let group = match after.strip_prefix('{') {
            Some(inner) => &inner[..inner.find('}').unwrap_or(inner.len())],
            None => &after[..after.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(after.len())],
        };
        for word in group.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if modules.contains(word) {
                out.insert(word.to_string());
            }
        }
        rest = after;
    }
    out
}

/// Each file's code, less its unit tests, by top-level module.
fn sources() -> Vec<(String, PathBuf, String)> {
    sources_of(&src())
}

/// The same for the crate whose `lib.rs` is in `src`.
fn sources_of(src: &Path) -> Vec<(String, PathBuf, String)> {
    let src = src.to_path_buf();
    let modules = modules(&src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let rel = file.strip_prefix(&src).unwrap();
            let top = rel.iter().next().unwrap().to_string_lossy().trim_end_matches(".rs").to_string();
            // lib.rs, main.rs, bin/
            modules.contains(&top).then(|| {
                let text = std::fs::read_to_string(&file).unwrap();
                let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(&text).to_string();
                (top, file, code)
            })
        })
        .collect()
}

fn graph() -> Graph {
    graph_of(&src())
}

/// The import graph of the crate whose `lib.rs` is in `src`.
fn graph_of(src: &Path) -> Graph {
    let modules = modules(src);
    let mut graph = Graph::new();
    for (top, _, code) in sources_of(src) {
        for to in named(&code, &modules) {
            if to != top {
                graph.entry(top.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// The "Layers" block of ARCHITECTURE.md: (layer, its modules), bottom first.
fn layers(doc: &str) -> Vec<(String, Vec<String>)> {
    let section = doc.split("\n## Layers\n").nth(1).expect("ARCHITECTURE.md has a `## Layers` section");
    let block = section.split("```text\n").nth(1).and_then(|b| b.split("```").next()).expect("its first ```text block");
    block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut words = l.split_whitespace();
            let layer = words.next().unwrap().to_string();
            (layer, words.map(String::from).collect())
        })
        .collect()
}

/// Every way `graph` breaks the order of `layers`: an import of a module
/// listed later (or of itself's layer mates listed later), any import by a
/// base module, a module not listed or listed twice.
fn violations(graph: &Graph, layers: &[(String, Vec<String>)], modules: &BTreeSet<String>) -> Vec<String> {
    let order: Vec<&String> = layers.iter().flat_map(|(_, m)| m).collect();
    let position = |m: &str| order.iter().position(|o| *o == m);
    let mut out = Vec::new();
    for m in modules {
        match order.iter().filter(|o| **o == m).count() {
            0 => out.push(format!("`{m}` is in no layer")),
            1 => {}
            _ => out.push(format!("`{m}` is listed twice")),
        }
    }
    for o in &order {
        if !modules.contains(*o) {
            out.push(format!("`{o}` is listed but is no module"));
        }
    }
    let base: &[String] = layers.first().map_or(&[], |(_, m)| m);
    for (from, tos) in graph {
        for to in tos {
            if base.contains(from) {
                out.push(format!("base module `{from}` imports `{to}`"));
            } else if let (Some(f), Some(t)) = (position(from), position(to)) {
                if t > f {
                    out.push(format!("`{from}` imports `{to}`, which is listed after it"));
                }
            }
        }
    }
    out
}

#[test]
fn every_module_imports_only_modules_below_it() {
    let graph = graph();
    assert!(graph.get("tune").is_some_and(|t| t.contains("search")), "the reader finds the edges: {graph:?}");
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let v = violations(&graph, &layers(&doc), &modules(&src()));
    assert!(v.is_empty(), "ARCHITECTURE.md's layers are broken:\n{}", v.join("\n"));
}

#[test]
fn only_gpu_asks_which_target_it_is() {
    for (top, file, code) in sources() {
        if top == "gpu" {
            continue;
        }
        for asks in ["is_nvptx", ".nvidia()", ".gfx()", "Vendor::"] {
            assert!(!code.contains(asks), "{} asks which target it is (`{asks}`): ask gpu::of(arch) instead", file.display());
        }
    }
}

/// Every cycle of `graph` that a depth-first walk finds, as the modules
/// along it (the first again at the end).
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    fn walk(at: &str, graph: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>, out: &mut Vec<Vec<String>>) {
        if let Some(i) = path.iter().position(|p| p == at) {
            out.push(path[i..].iter().cloned().chain([at.to_string()]).collect());
            return;
        }
        if !done.insert(at.to_string()) {
            return;
        }
        path.push(at.to_string());
        for next in graph.get(at).into_iter().flatten() {
            walk(next, graph, path, done, out);
        }
        path.pop();
    }
    let (mut done, mut out) = (BTreeSet::new(), Vec::new());
    for from in graph.keys() {
        walk(from, graph, &mut Vec::new(), &mut done, &mut out);
    }
    out
}

#[test]
fn no_crate_has_a_module_cycle() {
    for krate in ["driver", "passes", "passes/cfg", "runtime", "decisions"] {
        let src = root().join(krate).join("src");
        let graph = graph_of(&src);
        let found = cycles(&graph);
        assert!(found.is_empty(), "{krate}: modules that import each other: {found:?}");
    }
    // The walk finds one.
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a")].iter().map(|(f, t)| (f.to_string(), BTreeSet::from([t.to_string()]))).collect();
    assert_eq!(cycles(&graph), [["a", "b", "c", "a"]]);
}

#[test]
fn violations_are_found() {
    let modules: BTreeSet<String> = ["compile", "gpu", "tune", "job"].map(String::from).into();
    assert_eq!(named("use crate::{compile::Unit, gpu};", &modules), BTreeSet::from(["compile".to_string(), "gpu".to_string()]));
    let layers = layers("\n## Layers\n\n```text\nbase    job\ntargets gpu compile\ncommands tune\n```\n");
    let graph: Graph = [("gpu", "compile"), ("job", "gpu"), ("tune", "gpu")]
        .iter()
        .map(|(f, t)| (f.to_string(), BTreeSet::from([t.to_string()])))
        .collect();
    assert_eq!(
        violations(&graph, &layers, &modules),
        ["`gpu` imports `compile`, which is listed after it", "base module `job` imports `gpu`"]
    );
    let missing: BTreeSet<String> = ["gpu", "job", "tune", "compile", "cost"].map(String::from).into();
    assert_eq!(violations(&Graph::new(), &layers, &missing), ["`cost` is in no layer"]);
}

/// The files ARCHITECTURE.md's "A new transform" names, paths with a
/// directory, `<name>` for the new one's.
fn transform_files(doc: &str) -> Vec<String> {
    let start = doc.find("**A new transform**").unwrap();
    let end = start + doc[start..].find("**A new command**").unwrap();
    doc[start..end].split('`').skip(1).step_by(2).filter(|s| s.contains('/')).map(str::to_string).collect()
}

#[test]
fn the_files_a_new_transform_touches_are_there() {
    let doc = std::fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let files = transform_files(&doc);
    assert!(files.iter().any(|f| f == "driver/src/tune/transforms/<name>.rs"), "{files:?}");
    // Each path is there, the new transform's with an existing one's name.
    for f in &files {
        let name = if f.starts_with("tests/lit/") { "unroll-cap" } else { "unroll_cap" };
        let path = root().join(f.replace("<name>", name));
        assert!(path.exists(), "ARCHITECTURE.md names {f} for a new transform: {} is not there", path.display());
    }
    // Every home in transforms/ is a module, and every module is in ALL.
    let dir = src().join("tune/transforms");
    let homes: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().trim_end_matches(".rs").to_string())
        .filter(|n| n != "mod" && n != "tests")
        .collect();
    let module = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
    let all = &module[module.find("const ALL").unwrap()..];
    let all = &all[all.find("= [").unwrap()..all.find("];").unwrap()];
    for home in &homes {
        assert!(module.contains(&format!("mod {home};")), "transforms/{home}.rs is no module");
        assert!(all.contains(&format!("&{home}::")), "transforms/{home}.rs is not in ALL");
    }
    assert_eq!(all.matches('&').count(), homes.len(), "ALL lists what is no home: {all}");
}
