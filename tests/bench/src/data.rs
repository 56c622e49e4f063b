//! The spec's data sets: the tarballs (never committed) unpacked at run time into the
//! cache, then read as extended JSON text.

use std::path::Path;
#[cfg(not(target_os = "wasi"))]
use std::path::PathBuf;
#[cfg(not(target_os = "wasi"))]
use std::process::Command;

#[cfg(not(target_os = "wasi"))]
use anymongo_tests::setup;

/// The documents of the BSON, single-document and multi-document tasks, as extended
/// JSON text (each driver parses them with its own bson crate).
pub struct DataSets {
    /// `extended_bson/flat_bson.json`.
    pub flat: String,
    /// `extended_bson/deep_bson.json`.
    pub deep: String,
    /// `extended_bson/full_bson.json`.
    pub full: String,
    /// `single_and_multi_document/tweet.json`.
    pub tweet: String,
    /// `single_and_multi_document/small_doc.json`.
    pub small: String,
    /// `single_and_multi_document/large_doc.json`.
    pub large: String,
}

/// Where the tarballs are unpacked: `bench-data` in the tools' cache.
#[cfg(not(target_os = "wasi"))]
pub fn unpacked_dir() -> PathBuf {
    setup::cache_dir().join("bench-data")
}

/// Where the tarballs are looked for: `--data DIR`, else `$ANYMONGO_BENCH_DATA`, else a
/// `shared/bench-data` folder next to the checkout or one level up.
#[cfg(not(target_os = "wasi"))]
pub fn tarball_dir(given: Option<&Path>) -> Result<PathBuf, String> {
    let root = setup::workspace_root();
    let candidates: Vec<PathBuf> = match given {
        Some(dir) => vec![dir.to_path_buf()],
        None => std::env::var_os("ANYMONGO_BENCH_DATA")
            .filter(|dir| !dir.is_empty())
            .map(|dir| vec![PathBuf::from(dir)])
            .unwrap_or_else(|| {
                vec![
                    root.join("../shared/bench-data"),
                    root.join("../../shared/bench-data"),
                ]
            }),
    };
    candidates
        .iter()
        .find(|dir| dir.join("single_and_multi_document.tgz").is_file())
        .cloned()
        .ok_or_else(|| {
            format!(
                "no benchmark data (single_and_multi_document.tgz) in {}: give --data DIR \
                 or set ANYMONGO_BENCH_DATA",
                candidates
                    .iter()
                    .map(|dir| dir.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        })
}

/// Unpacks `name.tgz` from `tarballs` into the cache (once: a stamp marks it done) and
/// returns the folder it was unpacked into.
#[cfg(not(target_os = "wasi"))]
fn unpack(tarballs: &Path, name: &str) -> Result<PathBuf, String> {
    let into = unpacked_dir();
    let stamp = into.join(format!(".{name}.unpacked"));
    if stamp.exists() {
        return Ok(into);
    }
    std::fs::create_dir_all(&into).map_err(|e| format!("cannot create {}: {e}", into.display()))?;
    let tarball = tarballs.join(format!("{name}.tgz"));
    let status = Command::new("tar")
        .arg("xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&into)
        .status()
        .map_err(|e| format!("cannot run tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar xzf {} failed ({status})", tarball.display()));
    }
    std::fs::write(&stamp, b"").map_err(|e| format!("cannot write {}: {e}", stamp.display()))?;
    Ok(into)
}

fn read(dir: &Path, file: &str) -> Result<String, String> {
    let path = dir.join(file);
    std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

impl DataSets {
    /// Unpacks (if needed) and reads the data sets.
    #[cfg(not(target_os = "wasi"))]
    pub fn load(tarballs: &Path) -> Result<DataSets, String> {
        unpack(tarballs, "extended_bson")?;
        DataSets::read_from(&unpack(tarballs, "single_and_multi_document")?)
    }

    /// Reads the data sets unpacked in `dir`.
    pub fn read_from(dir: &Path) -> Result<DataSets, String> {
        Ok(DataSets {
            flat: read(dir, "extended_bson/flat_bson.json")?,
            deep: read(dir, "extended_bson/deep_bson.json")?,
            full: read(dir, "extended_bson/full_bson.json")?,
            tweet: read(dir, "single_and_multi_document/tweet.json")?,
            small: read(dir, "single_and_multi_document/small_doc.json")?,
            large: read(dir, "single_and_multi_document/large_doc.json")?,
        })
    }
}
