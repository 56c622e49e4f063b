//! The driver's layering, checked: every file of `driver/src` is placed in a layer by
//! the table in the crate docs (`driver/src/lib.rs`, "Layers"), and its imports must go
//! down or stay within its layer, without cycles: but the natural one between the
//! client, the database and the collection, the executor's with the session, and none
//! larger within one module.
//!
//! Imports are read from the source text: `use` declarations (with their nested braces)
//! and paths written inline (`crate::a::b`, `super::c`), outside comments, strings and
//! `#[cfg(test)]` modules. A path that names an item re-exported by a module (`pub use`)
//! counts as an import of the file that defines it, so a facade `mod.rs` does not hide
//! where a dependency really goes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Upward imports allowed, as (importing file, imported file), each with its reason.
/// A new one fails the test: move the type or helper down instead.
const ALLOWED_UPWARD: &[(&str, &str)] = &[];

/// The cycles allowed between modules, each no larger than three files, with its reason:
/// - handles that hand out one another (`client.database(..).collection(..).client()`);
/// - the executor runs each command in a session, and a session holds the executor it
///   gives its server session back to (Driver Sessions spec, "Server Session Pool").
///
/// Within one module, files may form a cycle no larger (a `mod.rs` and its children).
const ALLOWED_CYCLES: &[&[&str]] = &[
    &["client", "collection", "database"],
    &["operation", "session"],
];

/// The largest cycle allowed, the natural one.
const LARGEST_CYCLE: usize = 3;

#[test]
fn imports_go_down_the_layers() {
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../driver/src");
    let graph = Graph::read(&crate_root);
    let layers = Layers::from_crate_docs(&graph.sources[""]);

    let mut problems = Vec::new();
    for module in graph.modules() {
        if layers.of(module).is_none() {
            problems.push(format!(
                "{module}: not placed by the layer table of driver/src/lib.rs"
            ));
        }
    }
    for (from, targets) in &graph.edges {
        for to in targets {
            let (Some(from_layer), Some(to_layer)) = (layers.of(from), layers.of(to)) else {
                continue;
            };
            if to_layer < from_layer && !ALLOWED_UPWARD.contains(&(from.as_str(), to.as_str())) {
                problems.push(format!(
                    "{from} ({}) imports {to} ({}): an import that goes up",
                    layers.names[from_layer], layers.names[to_layer]
                ));
            }
        }
    }
    for cycle in graph.cycles() {
        let natural = ALLOWED_CYCLES
            .iter()
            .any(|allowed| cycle.iter().all(|m| allowed.contains(&m.as_str())));
        // A module's files may lean on one another (a `mod.rs` and its children), as long
        // as the knot stays no larger than the natural one.
        let top = |module: &String| module.split("::").next().unwrap_or_default().to_owned();
        let one_module = cycle.iter().all(|m| top(m) == top(&cycle[0]));
        let small_knot = one_module && cycle.len() <= LARGEST_CYCLE;
        if !(natural || small_knot) {
            problems.push(format!(
                "a cycle of {} files: {}",
                cycle.len(),
                cycle.join(", ")
            ));
        }
    }
    assert!(ALLOWED_UPWARD.len() <= 10, "at most 10 upward imports");
    assert!(
        problems.is_empty(),
        "the driver's layering (driver/src/lib.rs, \"Layers\"):\n{}",
        problems.join("\n")
    );
}

/// The checker itself: it must see the imports that matter, or a passing test would
/// prove nothing.
#[test]
fn the_reader_finds_imports_in_every_form() {
    let source = r#"
        use crate::a::{b::{C, D}, e as f};
        use super::g;
        pub(crate) use self::h::*;
        // use crate::in_a_comment;
        /* use crate::in_a_block /* nested */ comment; */
        const S: &str = "use crate::in_a_string;";
        const C: char = '"';
        fn x<'a>(y: &'a str) { crate::inline::call(); }
        #[cfg(test)]
        mod tests { use crate::only_in_tests; }
    "#;
    let code = code_only(source);
    let mut paths = use_paths(&code);
    paths.extend(inline_paths(&code));
    paths.extend(serde_paths(
        r#"#[serde(deserialize_with = "crate::serde_helpers::f")]"#,
    ));
    let paths: BTreeSet<String> = paths.into_iter().collect();
    let expected: BTreeSet<String> = [
        "crate::a::b::C",
        "crate::a::b::D",
        "crate::a::e",
        "super::g",
        "self::h::*",
        "crate::inline::call",
        "crate::serde_helpers::f",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(paths, expected);

    let mut graph = Graph::default();
    for module in ["", "a", "a::b", "c"] {
        graph.sources.insert(module.into(), String::new());
    }
    graph
        .reexports
        .entry("a".into())
        .or_default()
        .insert("X".into(), vec!["a".into(), "b".into(), "X".into()]);
    assert_eq!(
        graph.resolve(&["a".into(), "X".into()]),
        Some("a::b".into())
    );
    assert_eq!(graph.resolve(&["c".into(), "f".into()]), Some("c".into()));
    graph.edges.insert("a".into(), ["c".into()].into());
    graph.edges.insert("c".into(), ["a::b".into()].into());
    graph.edges.insert("a::b".into(), ["a".into()].into());
    assert_eq!(
        graph.cycles(),
        vec![vec!["a".to_owned(), "a::b".to_owned(), "c".to_owned()]]
    );
}

/// The layer table of the crate docs: rows `//! | name | `module`, `module::file` | … |`,
/// top to bottom.
struct Layers {
    names: Vec<String>,
    /// Module or file path → layer index (0 is the top).
    placed: BTreeMap<String, usize>,
}

impl Layers {
    fn from_crate_docs(lib_rs: &str) -> Layers {
        let mut layers = Layers {
            names: Vec::new(),
            placed: BTreeMap::new(),
        };
        let mut in_section = false;
        for line in lib_rs.lines() {
            let Some(doc) = line.strip_prefix("//!") else {
                continue;
            };
            let doc = doc.trim();
            if doc.starts_with('#') {
                in_section = doc == "# Layers";
                continue;
            }
            let cells: Vec<&str> = doc.split('|').map(str::trim).collect();
            if !in_section || cells.len() < 4 || cells[1] == "layer" || cells[1].starts_with("--") {
                continue;
            }
            let index = layers.names.len();
            layers.names.push(cells[1].to_owned());
            for module in cells[2].split(',') {
                let module = module.trim().trim_matches('`');
                assert!(
                    layers.placed.insert(module.to_owned(), index).is_none(),
                    "{module} is placed twice"
                );
            }
        }
        assert!(
            layers.names.len() >= 3,
            "no layer table under \"# Layers\" in driver/src/lib.rs"
        );
        // The crate root declares the modules and re-exports the API: it is above all.
        layers.placed.insert(String::new(), 0);
        layers.names[0] = format!("{} (and the crate root)", layers.names[0]);
        layers
    }

    /// The layer of a file: that of the longest placed path it falls under (`a::b::c`
    /// under `a::b`, else `a`). A larger index is a lower layer.
    fn of(&self, module: &str) -> Option<usize> {
        let mut path = module;
        loop {
            if let Some(&layer) = self.placed.get(path) {
                return Some(layer);
            }
            path = path.rsplit_once("::")?.0;
        }
    }
}

/// The files of the crate as modules (`a::b` for `a/b.rs` or `a/b/mod.rs`, `""` for
/// `lib.rs`), their re-exports, and which file imports which.
#[derive(Default)]
struct Graph {
    sources: BTreeMap<String, String>,
    /// Files that are `#[cfg(test)] mod x;`: not part of the driver's structure.
    test_modules: BTreeSet<String>,
    /// Module → re-exported name → the absolute path it stands for.
    reexports: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    edges: BTreeMap<String, BTreeSet<String>>,
}

impl Graph {
    fn read(root: &Path) -> Graph {
        let mut graph = Graph::default();
        for file in rust_files(root) {
            let relative = file.strip_prefix(root).unwrap().with_extension("");
            let mut segments: Vec<String> = relative
                .iter()
                .map(|segment| segment.to_string_lossy().into_owned())
                .collect();
            if segments
                .last()
                .is_some_and(|last| last == "mod" || last == "lib")
            {
                segments.pop();
            }
            let source = std::fs::read_to_string(&file).unwrap();
            graph.sources.insert(segments.join("::"), source);
        }
        let code: BTreeMap<String, String> = graph
            .sources
            .iter()
            .map(|(module, source)| (module.clone(), code_only(source)))
            .collect();
        for (module, source) in &graph.sources {
            for test_module in cfg_test_module_names(&strip_comments_and_strings(source)) {
                graph.test_modules.insert(join(module, &test_module));
            }
        }
        for (module, code) in &code {
            for path in reexport_paths(code) {
                if let Some(absolute) = graph.absolute(module, &path) {
                    let name = absolute.last().unwrap().clone();
                    graph
                        .reexports
                        .entry(module.clone())
                        .or_default()
                        .insert(name, absolute);
                }
            }
        }
        for (module, code) in &code {
            if graph.test_modules.contains(module) {
                continue;
            }
            let mut paths = use_paths(code);
            paths.extend(inline_paths(code));
            paths.extend(serde_paths(&graph.sources[module]));
            for path in paths {
                let Some(mut absolute) = graph.absolute(module, &path) else {
                    continue;
                };
                if absolute.last().is_some_and(|last| last == "*") {
                    absolute.pop();
                }
                if let Some(target) = graph.resolve(&absolute) {
                    if target != *module
                        && !target.is_empty()
                        && !graph.test_modules.contains(&target)
                    {
                        graph
                            .edges
                            .entry(module.clone())
                            .or_default()
                            .insert(target);
                    }
                }
            }
        }
        graph
    }

    fn modules(&self) -> impl Iterator<Item = &str> {
        self.sources
            .keys()
            .filter(|module| !self.test_modules.contains(*module))
            .map(String::as_str)
    }

    /// `path` as written in `module`, made absolute (without `crate`); `None` for a path
    /// into another crate.
    fn absolute(&self, module: &str, path: &str) -> Option<Vec<String>> {
        let mut segments: Vec<&str> = path.split("::").collect();
        let mut base: Vec<&str> = if module.is_empty() {
            Vec::new()
        } else {
            module.split("::").collect()
        };
        match segments[0] {
            "crate" => {
                base.clear();
                segments.remove(0);
            }
            "self" | "super" => {
                while let Some(&first) = segments.first() {
                    match first {
                        "super" => {
                            base.pop();
                        }
                        "self" => {}
                        _ => break,
                    }
                    segments.remove(0);
                }
            }
            // A child module named without `self::` (`pub use child::Item`).
            first if self.sources.contains_key(&join(module, first)) => {}
            _ => return None,
        }
        Some(base.into_iter().chain(segments).map(String::from).collect())
    }

    /// The file that defines what `path` names: the longest module prefix, followed
    /// through that module's re-exports.
    fn resolve(&self, path: &[String]) -> Option<String> {
        self.resolve_within(path, 0)
    }

    fn resolve_within(&self, path: &[String], depth: usize) -> Option<String> {
        for length in (0..=path.len()).rev() {
            let module = path[..length].join("::");
            if !self.sources.contains_key(&module) {
                continue;
            }
            if let Some(target) = path
                .get(length)
                .and_then(|name| self.reexports.get(&module)?.get(name))
            {
                if depth < 16 {
                    let mut followed = target.clone();
                    followed.extend_from_slice(&path[length + 1..]);
                    return self.resolve_within(&followed, depth + 1);
                }
            }
            return Some(module);
        }
        None
    }

    /// The strongly connected components of more than one file, each sorted (Tarjan).
    fn cycles(&self) -> Vec<Vec<String>> {
        struct Tarjan<'g> {
            graph: &'g Graph,
            index: BTreeMap<&'g str, usize>,
            low: BTreeMap<&'g str, usize>,
            stack: Vec<&'g str>,
            on_stack: BTreeSet<&'g str>,
            components: Vec<Vec<String>>,
        }
        impl<'g> Tarjan<'g> {
            fn visit(&mut self, node: &'g str) {
                let index = self.index.len();
                self.index.insert(node, index);
                self.low.insert(node, index);
                self.stack.push(node);
                self.on_stack.insert(node);
                for next in self.graph.edges.get(node).into_iter().flatten() {
                    let next = next.as_str();
                    if !self.index.contains_key(next) {
                        self.visit(next);
                        let low = self.low[node].min(self.low[next]);
                        self.low.insert(node, low);
                    } else if self.on_stack.contains(next) {
                        let low = self.low[node].min(self.index[next]);
                        self.low.insert(node, low);
                    }
                }
                if self.low[node] == self.index[node] {
                    let mut component = Vec::new();
                    loop {
                        let member = self.stack.pop().unwrap();
                        self.on_stack.remove(member);
                        component.push(member.to_owned());
                        if member == node {
                            break;
                        }
                    }
                    if component.len() > 1 {
                        component.sort();
                        self.components.push(component);
                    }
                }
            }
        }
        let mut tarjan = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            components: Vec::new(),
        };
        for module in self.sources.keys() {
            if !tarjan.index.contains_key(module.as_str()) {
                tarjan.visit(module);
            }
        }
        tarjan.components.sort();
        tarjan.components
    }
}

fn join(module: &str, child: &str) -> String {
    if module.is_empty() {
        child.to_owned()
    } else {
        format!("{module}::{child}")
    }
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The source without comments, string and character literals (each literal left as
/// an empty `""`), nor `#[cfg(test)]` inline modules.
fn code_only(source: &str) -> String {
    let code = strip_comments_and_strings(source);
    let mut kept = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        match inline_module_body(after) {
            Some(end) => rest = &after[end..],
            None => {
                kept.push_str("#[cfg(test)]");
                rest = after;
            }
        }
    }
    kept.push_str(rest);
    kept
}

/// After a `#[cfg(test)]`: the length of `[pub(..)] mod name { … }`, if that follows.
fn inline_module_body(after: &str) -> Option<usize> {
    let (_, body_start) = module_declaration(after)?;
    if !after[body_start..].starts_with('{') {
        return None;
    }
    let mut depth = 0;
    for (offset, c) in after[body_start..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(body_start + offset + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// `[pub(..)] mod name` at the start of `text` (after white space): the name, and the
/// offset of what follows it (white space skipped).
fn module_declaration(text: &str) -> Option<(String, usize)> {
    let mut rest = text.trim_start();
    if let Some(after_pub) = rest.strip_prefix("pub") {
        rest = after_pub.trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
    }
    let rest = rest.strip_prefix("mod")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let rest = rest.trim_start();
    let name_len = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let after_name = rest[name_len..].trim_start();
    Some((rest[..name_len].to_owned(), text.len() - after_name.len()))
}

/// The names of `#[cfg(test)] mod name;` declarations (test modules in files of their
/// own).
fn cfg_test_module_names(code: &str) -> Vec<String> {
    code.match_indices("#[cfg(test)]")
        .filter_map(|(at, attribute)| {
            let after = &code[at + attribute.len()..];
            let (name, next) = module_declaration(after)?;
            after[next..].starts_with(';').then_some(name)
        })
        .collect()
}

fn strip_comments_and_strings(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            // (not the end of an identifier, but `br"…"` is a raw byte string)
            && !chars[..i]
                .last()
                .is_some_and(|p| (p.is_alphanumeric() || *p == '_') && *p != 'b')
        {
            // A raw string: r"…", r#"…"#, ...
            let mut hashes = 0;
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            'raw: while j < chars.len() {
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break 'raw;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\''), or a lifetime ('a), left as is.
            if next == Some('\\') {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
                out.push_str("' '");
            } else if chars.get(i + 2) == Some(&'\'') {
                i += 3;
                out.push_str("' '");
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The bodies of `use …;` declarations, with their visibility.
fn use_declarations(code: &str) -> Vec<(bool, &str)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find("use").map(|at| from + at) {
        from = at + 3;
        let before_ok =
            at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let after_ok = bytes.get(at + 3).is_some_and(|b| b.is_ascii_whitespace());
        if !(before_ok && after_ok) {
            continue;
        }
        let Some(end) = code[at..].find(';') else {
            break;
        };
        let body = &code[at + 3..at + end];
        let line_start = code[..at].rfind(['\n', ';', '{', '}']).map_or(0, |p| p + 1);
        let public = code[line_start..at].trim_start().starts_with("pub");
        found.push((public, body));
        from = at + end;
    }
    found
}

/// Every path a `use` declaration names, braces expanded, `as` renames dropped.
fn use_paths(code: &str) -> Vec<String> {
    use_declarations(code)
        .into_iter()
        .flat_map(|(_, body)| expand_use_tree("", body))
        .collect()
}

/// The paths `pub use` (of any visibility) re-exports.
fn reexport_paths(code: &str) -> Vec<String> {
    use_declarations(code)
        .into_iter()
        .filter(|(public, _)| *public)
        .flat_map(|(_, body)| expand_use_tree("", body))
        .collect()
}

fn expand_use_tree(prefix: &str, tree: &str) -> Vec<String> {
    let tree = tree.trim();
    if let (Some(open), true) = (tree.find('{'), tree.ends_with('}')) {
        let base = format!("{prefix}{}", &tree[..open]);
        let inner = &tree[open + 1..tree.len() - 1];
        let mut parts = Vec::new();
        let (mut depth, mut start) = (0, 0);
        for (offset, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(&inner[start..offset]);
                    start = offset + 1;
                }
                _ => {}
            }
        }
        parts.push(&inner[start..]);
        return parts
            .into_iter()
            .filter(|part| !part.trim().is_empty())
            .flat_map(|part| expand_use_tree(&base, part))
            .collect();
    }
    let path = match tree.split_once(" as ") {
        Some((path, _)) => path,
        None => tree,
    };
    let path: String = format!("{prefix}{path}")
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    // `self` inside braces names the module itself: `a::{self, b}`.
    vec![path
        .strip_suffix("::self")
        .map_or(path.clone(), str::to_owned)]
}

/// Paths written inline, outside `use` declarations: `crate::…` and `super::…`.
fn inline_paths(code: &str) -> Vec<String> {
    let mut without_uses = code.to_owned();
    for (_, body) in use_declarations(code) {
        without_uses = without_uses.replacen(body, " ", 1);
    }
    let mut paths = Vec::new();
    for start_word in ["crate::", "super::"] {
        let bytes = without_uses.as_bytes();
        for (at, _) in without_uses.match_indices(start_word) {
            if at > 0
                && (bytes[at - 1].is_ascii_alphanumeric()
                    || bytes[at - 1] == b'_'
                    || bytes[at - 1] == b':')
            {
                continue;
            }
            let length = without_uses[at..]
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(without_uses.len() - at);
            let path = without_uses[at..at + length].trim_end_matches(':');
            paths.push(path.to_owned());
        }
    }
    paths
}

/// Functions named in serde attributes (`deserialize_with = "crate::a::f"`): imports
/// written as strings.
fn serde_paths(source: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for attribute in ["deserialize_with = \"", "serialize_with = \"", "with = \""] {
        for (at, _) in source.match_indices(attribute) {
            let value = &source[at + attribute.len()..];
            let path = &value[..value.find('"').unwrap_or(0)];
            if path.starts_with("crate::") || path.starts_with("super::") {
                paths.push(path.to_owned());
            }
        }
    }
    paths
}
