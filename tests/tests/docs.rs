//! The documentation's links and JavaScript: every relative link in README.md,
//! CHANGELOG.md and docs/**/*.md names an existing file, and every `#anchor` a heading
//! of its file (GitHub's rules for heading ids); every `js` code block of the guide
//! parses (`node --check`). External links are not fetched: tests have no network. The
//! guide's Rust code blocks are compiled as doc tests (`anymongo_tests::guide`).

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anymongo_tests::setup::workspace_root;

/// The Markdown files whose links are checked, relative to `root`.
fn documents(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for name in ["README.md", "CHANGELOG.md"] {
        if root.join(name).is_file() {
            files.push(PathBuf::from(name));
        }
    }
    let mut dirs = vec![PathBuf::from("docs")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(root.join(&dir)) else {
            continue;
        };
        for entry in entries {
            let entry = entry.expect("a readable docs/ folder");
            let path = dir.join(entry.file_name());
            if entry.file_type().expect("a file type").is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "md") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// A Markdown text's lines outside fenced code blocks, with their line numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fence: Option<&str> = None;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match fence {
            Some(marker) if trimmed.starts_with(marker) => fence = None,
            Some(_) => {}
            None if trimmed.starts_with("```") => fence = Some("```"),
            None if trimmed.starts_with("~~~") => fence = Some("~~~"),
            None => lines.push((index + 1, line)),
        }
    }
    lines
}

/// `line` without its code spans (`` `…` ``), which hold no links.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].chars().take_while(|&c| c == '`').count();
        let after = &rest[start + ticks..];
        match after.find(&"`".repeat(ticks)) {
            Some(end) => rest = &after[end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the inline links and images (`[text](target)`) of a line.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    let mut targets = Vec::new();
    let mut rest = line.as_str();
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        let mut depth = 0;
        let end = after.char_indices().find(|&(_, c)| match c {
            '(' => {
                depth += 1;
                false
            }
            ')' if depth == 0 => true,
            ')' => {
                depth -= 1;
                false
            }
            _ => false,
        });
        let Some((end, _)) = end else { break };
        // `[text](target "title")`: the title is not part of the target.
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_matches(['<', '>']).to_owned());
        rest = &after[end..];
    }
    targets
}

/// The id GitHub gives a heading: its text as rendered (links to their text, code
/// spans and emphasis to their content), lower-cased, with every character but
/// letters, digits, `_`, `-` and spaces removed, and spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // A link's text stays, its target goes.
    while let Some(at) = rest.find("](") {
        text.push_str(&rest[..at]);
        rest = rest[at..].find(')').map_or("", |end| &rest[at + end + 1..]);
    }
    text.push_str(rest);
    text.chars()
        .flat_map(char::to_lowercase)
        .filter(|&c| c.is_alphanumeric() || c == '_' || c == '-' || c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The ids of a Markdown text's headings (ATX `#` headings outside code blocks), a
/// repeated one suffixed `-1`, `-2`… as GitHub does.
fn anchors(text: &str) -> HashSet<String> {
    let mut ids = HashSet::new();
    for (_, line) in prose_lines(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(line[hashes..].trim().trim_end_matches('#').trim());
        let mut id = base.clone();
        let mut n = 0;
        while ids.contains(&id) {
            n += 1;
            id = format!("{base}-{n}");
        }
        ids.insert(id);
    }
    ids
}

/// `path` with its `.` and `..` components resolved, without touching the disk.
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

/// Every broken relative link of `files` (relative to `root`), one line each:
/// `file:line: target: why`.
fn broken_links(root: &Path, files: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(root.join(file)).expect("a readable document");
        for (number, line) in prose_lines(&text) {
            for target in link_targets(line) {
                if target.is_empty()
                    || target.contains("://")
                    || target.starts_with("mailto:")
                    || target.starts_with("//")
                {
                    continue;
                }
                let (path, anchor) = match target.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let mut report = |why: &str| {
                    broken.push(format!("{}:{number}: {target}: {why}", file.display()))
                };
                let resolved = if path.is_empty() {
                    Some(file.clone())
                } else if let Some(absolute) = path.strip_prefix('/') {
                    normalize(Path::new(absolute))
                } else {
                    normalize(&file.parent().unwrap_or(Path::new("")).join(path))
                };
                let Some(resolved) = resolved.filter(|p| root.join(p).exists()) else {
                    report("no such file");
                    continue;
                };
                let Some(anchor) = anchor else { continue };
                if resolved.extension().is_none_or(|ext| ext != "md") {
                    continue;
                }
                let Ok(linked) = std::fs::read_to_string(root.join(&resolved)) else {
                    report("a folder has no headings");
                    continue;
                };
                if !anchors(&linked).contains(anchor) {
                    report("no such heading");
                }
            }
        }
    }
    broken
}

#[test]
fn relative_links_resolve() {
    let root = workspace_root();
    let files = documents(&root);
    assert!(
        files.iter().any(|f| f.ends_with("guide/README.md")),
        "{files:?}"
    );
    let broken = broken_links(&root, &files);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The checker finds what it is for: a missing file, a missing heading in another
/// file and in the same one; and takes GitHub's ids of headings with code, links,
/// punctuation and repeats.
#[test]
fn the_link_check_finds_broken_links() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(
        dir.path().join("docs/a.md"),
        "# A page\n\n## `timeoutMS` (CSOT), and [links](b.md)!\n\n## Again\n\n## Again\n\n\
         ```sh\n# not a heading\n```\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("docs/b.md"), "# B\n").unwrap();
    std::fs::write(
        dir.path().join("README.md"),
        "[ok](docs/a.md#timeoutms-csot-and-links) [ok](docs/a.md#again-1) \
         [ok](./docs/a.md) [ok](https://example.com/x.md) `[code](nowhere.md)`\n\
         [bad](docs/missing.md) [bad](docs/a.md#not-a-heading) [bad](#nowhere) \
         [bad](docs/a.md#again-2)\n",
    )
    .unwrap();
    let files = documents(dir.path());
    assert_eq!(
        files,
        ["README.md", "docs/a.md", "docs/b.md"].map(PathBuf::from)
    );
    assert_eq!(
        broken_links(dir.path(), &files),
        [
            "README.md:2: docs/missing.md: no such file",
            "README.md:2: docs/a.md#not-a-heading: no such heading",
            "README.md:2: #nowhere: no such heading",
            "README.md:2: docs/a.md#again-2: no such heading",
        ]
    );
}

/// The `js` code blocks of a Markdown text, each with the line its fence opens on.
fn javascript_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    // Inside a block: whether it is JavaScript, and its code so far.
    let mut open: Option<(bool, usize, String)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            Some(_) if trimmed.starts_with("```") => {
                if let Some((true, start, code)) = open.take() {
                    blocks.push((start, code));
                }
            }
            Some((_, _, code)) => {
                code.push_str(line);
                code.push('\n');
            }
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let js = matches!(info.trim(), "js" | "javascript" | "mjs");
                    open = Some((js, index + 1, String::new()));
                }
            }
        }
    }
    blocks
}

/// Every `js` code block of the guide parses as an ES module (`node --check`).
#[test]
fn guide_javascript_parses() {
    let root = workspace_root();
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut checked = 0;
    for file in documents(&root) {
        if !file.starts_with("docs/guide") {
            continue;
        }
        let text = std::fs::read_to_string(root.join(&file)).unwrap();
        for (start, code) in javascript_blocks(&text) {
            let path = dir.path().join(format!("block{checked}.mjs"));
            std::fs::write(&path, code).unwrap();
            let output = Command::new("node")
                .arg("--check")
                .arg(&path)
                .output()
                .expect("node on PATH (Node.js 20.19 or later)");
            assert!(
                output.status.success(),
                "{}:{start}: the js block does not parse:\n{}",
                file.display(),
                String::from_utf8_lossy(&output.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "no js block found in docs/guide");
}
