//! The driver's module graph has no cycles: data flows one way through the
//! stages (ARCHITECTURE.md). Each `crate::<module>` a file of driver/src
//! names (outside its `#[cfg(test)] mod tests`) is an edge from its
//! top-level module to that one; the graph of those edges must be acyclic.
//!
//! `KNOWN` lists the edges that still close a cycle, each to be removed by
//! turning the dependency around; the test fails when one of them is gone
//! (so the list only shrinks) and when any other cycle appears.

// A test fails by panicking; `unwrap` says where.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Edges (from, to) that still close a cycle in the driver.
const KNOWN: &[(&str, &str)] = &[];

type Graph = BTreeMap<String, BTreeSet<String>>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
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

fn graph() -> Graph {
    let src = src();
    let modules = modules(&src);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap();
        let top = rel.iter().next().unwrap().to_string_lossy().trim_end_matches(".rs").to_string();
        if !modules.contains(&top) {
            continue; // lib.rs, main.rs, bin/
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(&text);
        for to in named(code, &modules) {
            if to != top {
                graph.entry(top.clone()).or_default().insert(to);
            }
        }
    }
    graph
}

/// A cycle through the graph, if there is one.
fn cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(n: &str, g: &Graph, done: &mut BTreeSet<String>, path: &mut Vec<String>) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut c = path[i..].to_vec();
            c.push(n.to_string());
            return Some(c);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(m, g, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph.keys().find_map(|n| visit(n, graph, &mut done, &mut Vec::new()))
}

#[test]
fn the_driver_has_no_module_cycles_but_the_known_ones() {
    let mut graph = graph();
    assert!(graph.get("tune").is_some_and(|t| t.contains("search")), "the reader finds the edges: {graph:?}");
    for (from, to) in KNOWN {
        let present = graph.get_mut(*from).is_some_and(|t| t.remove(*to));
        assert!(present, "{from} no longer uses {to}: remove the edge from KNOWN");
    }
    if let Some(c) = cycle(&graph) {
        panic!("module cycle in driver/src: {}", c.join(" → "));
    }
}

#[test]
fn cycles_are_found() {
    let g: Graph = [("a", "b"), ("b", "c"), ("c", "a")].iter().map(|(f, t)| (f.to_string(), BTreeSet::from([t.to_string()]))).collect();
    assert_eq!(cycle(&g).unwrap(), ["a", "b", "c", "a"]);
    let modules: BTreeSet<String> = ["compile", "gpu"].map(String::from).into();
    assert_eq!(named("use crate::{compile::Unit, gpu};", &modules), modules);
}
