//! Which files of a crate import which, read from the sources: the check behind each
//! binary's `tests/boundary.rs`, that no import cycle joins a crate's files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Crate and module roots: every crate has them, they name no job.
const ROOT_FILES: [&str; 3] = ["lib.rs", "main.rs", "mod.rs"];

/// Every `.rs` file below `dir`, by its path relative to `dir` (with `/`).
pub fn read_sources(dir: &Path) -> BTreeMap<String, String> {
    let mut sources = BTreeMap::new();
    for path in rust_files(dir) {
        let relative = path.strip_prefix(dir).expect("below dir");
        let name = relative.to_string_lossy().replace('\\', "/");
        let source = std::fs::read_to_string(&path).expect("readable source");
        sources.insert(name, source);
    }
    sources
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The names of the files below `dir`, crate and module roots aside.
pub fn file_names(dir: &Path) -> BTreeSet<String> {
    rust_files(dir)
        .iter()
        .filter_map(|path| path.file_name()?.to_str().map(str::to_string))
        .filter(|name| !ROOT_FILES.contains(&name.as_str()))
        .collect()
}

/// The module path a file defines (`wit_host/keyvalue.rs`: `["wit_host", "keyvalue"]`).
fn module_of(file: &str) -> Vec<String> {
    let mut segments: Vec<String> = file
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if segments
        .last()
        .is_some_and(|last| ["lib", "main", "mod"].contains(&last.as_str()))
    {
        segments.pop();
    }
    segments
}

/// Which files each file imports: every path through `crate::`, `super::` or `self::`,
/// and a parent's paths through its own child modules, resolved to the file of the
/// longest module that path names. Comments and `#[cfg(test)] mod tests` are left out.
pub fn imports(sources: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<Vec<String>, &String> = sources
        .keys()
        .filter(|file| file.as_str() != "main.rs")
        .map(|file| (module_of(file), file))
        .collect();
    let mut graph = BTreeMap::new();
    for (file, source) in sources {
        let here = module_of(file);
        let children: Vec<&str> = modules
            .keys()
            .filter(|module| module.len() == here.len() + 1 && module.starts_with(&here))
            .filter_map(|module| module.last().map(String::as_str))
            .collect();
        let code = code_of(source);
        let mut targets = BTreeSet::new();
        for path in paths_in(&code) {
            let absolute = match path.first().map(String::as_str) {
                Some("crate") => path[1..].to_vec(),
                Some("self") => [here.clone(), path[1..].to_vec()].concat(),
                Some("super") => {
                    let ups = path.iter().take_while(|s| *s == "super").count();
                    let base = &here[..here.len().saturating_sub(ups)];
                    [base.to_vec(), path[ups..].to_vec()].concat()
                }
                Some(first) if children.contains(&first) => [here.clone(), path].concat(),
                _ => continue,
            };
            let target = (0..=absolute.len())
                .rev()
                .find_map(|len| modules.get(&absolute[..len]));
            if let Some(target) = target.filter(|target| **target != file) {
                targets.insert((*target).clone());
            }
        }
        graph.insert(file.clone(), targets);
    }
    graph
}

/// `source` without comments and without its `#[cfg(test)] mod tests` (a unit test may
/// reach anywhere).
fn code_of(source: &str) -> String {
    let source = match source.find("#[cfg(test)]\nmod tests") {
        Some(tests) => &source[..tests],
        None => source,
    };
    source
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path in `code` (`a::b::c`, with each `a::{b, c::d}` group spread into one path
/// per member), as its segments.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let starts_path = is_ident_start(bytes[at])
            && (at == 0 || !is_ident(bytes[at - 1]) && !code[..at].ends_with("::"));
        if !starts_path {
            at += 1;
            continue;
        }
        let (found, end) = path_at(code, at, &[]);
        paths.extend(found.into_iter().filter(|path| path.len() > 1));
        at = end.max(at + 1);
    }
    paths
}

/// The paths of the path starting at `at` (after `prefix`), and where it ends.
fn path_at(code: &str, mut at: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let bytes = code.as_bytes();
    let mut segments = prefix.to_vec();
    loop {
        let start = at;
        while at < bytes.len() && is_ident(bytes[at]) {
            at += 1;
        }
        if at == start {
            return (vec![segments], at);
        }
        segments.push(code[start..at].to_string());
        if !code[at..].starts_with("::") {
            return (vec![segments], at);
        }
        at += 2;
        if code[at..].starts_with('{') {
            return group_at(code, at + 1, &segments);
        }
    }
}

/// The paths of a `{...}` group opened before `at`, each under `prefix`.
fn group_at(code: &str, mut at: usize, prefix: &[String]) -> (Vec<Vec<String>>, usize) {
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    while at < bytes.len() {
        match bytes[at] {
            b'}' => return (paths, at + 1),
            byte if is_ident_start(byte) => {
                let (found, end) = path_at(code, at, prefix);
                paths.extend(found);
                at = end;
                // `x as y`: skip the alias.
                while at < bytes.len() && !matches!(bytes[at], b',' | b'}' | b'{') {
                    at += 1;
                }
            }
            _ => at += 1,
        }
    }
    (paths, at)
}

fn is_ident_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_'
}

fn is_ident(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// A cycle of the graph, as the files along it (the first again at the end), if any.
pub fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    let mut done = BTreeSet::new();
    for start in graph.keys() {
        let mut trail = Vec::new();
        if let Some(cycle) = walk(graph, start, &mut trail, &mut done) {
            return Some(cycle);
        }
    }
    None
}

/// Depth-first from `file` with `trail` the files on the way there.
fn walk(
    graph: &BTreeMap<String, BTreeSet<String>>,
    file: &String,
    trail: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(index) = trail.iter().position(|seen| seen == file) {
        let mut cycle = trail[index..].to_vec();
        cycle.push(file.clone());
        return Some(cycle);
    }
    if done.contains(file) {
        return None;
    }
    trail.push(file.clone());
    for next in graph.get(file).into_iter().flatten() {
        if let Some(cycle) = walk(graph, next, trail, done) {
            return Some(cycle);
        }
    }
    trail.pop();
    done.insert(file.clone());
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_check_finds_cycles_through_crate_super_and_child_paths() {
        let sources = |files: &[(&str, &str)]| -> BTreeMap<String, String> {
            files
                .iter()
                .map(|(path, source)| (path.to_string(), source.to_string()))
                .collect()
        };
        // `a` uses `b` whose child `b/c` uses `a` through `super::super`: a cycle.
        let cyclic = sources(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a.rs", "use crate::b::{x, c::Y};"),
            ("b.rs", "pub mod c; pub fn x() {}"),
            ("b/c.rs", "use super::super::a::Thing;"),
        ]);
        let cycle = find_cycle(&imports(&cyclic)).expect("a cycle");
        assert!(cycle.contains(&"a.rs".to_string()) && cycle.contains(&"b/c.rs".to_string()));
        // A parent using its child's items, which use their sibling's: no cycle. Paths in
        // comments and tests do not count.
        let layered = sources(&[
            ("lib.rs", "pub mod a; pub mod b;"),
            ("a.rs", "use crate::b::X; // see crate::a::y\nfn y() {}"),
            (
                "b.rs",
                "mod c;\nmod d;\npub use c::X;\n/// [`crate::a`]\nfn z() {}",
            ),
            ("b/c.rs", "use super::d::Z;\npub struct X;"),
            (
                "b/d.rs",
                "pub struct Z;\n#[cfg(test)]\nmod tests { use crate::a::y; }",
            ),
        ]);
        assert_eq!(find_cycle(&imports(&layered)), None);
    }
}
