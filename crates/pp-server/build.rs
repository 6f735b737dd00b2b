//! Embeds every file under `assets/` (the web console) into the binary: writes
//! `$OUT_DIR/assets.rs` with one `(path, content type, include_bytes!)` row per file, so
//! the console can add files without touching Rust code.
#![expect(
    clippy::disallowed_methods,
    reason = "the build script reads this crate's own assets directory, not model paths"
)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let assets = manifest.join("assets");
    println!("cargo:rerun-if-changed=assets");
    let mut files = Vec::new();
    collect(&assets, "", &mut files);
    files.sort();
    let mut table = String::from("&[\n");
    for (name, path) in &files {
        let _ = writeln!(
            table,
            "    ({name:?}, {:?}, include_bytes!({:?})),",
            content_type(name),
            path.display().to_string()
        );
    }
    table.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("assets.rs");
    if let Err(error) = std::fs::write(&out, table) {
        panic!("cannot write {}: {error}", out.display());
    }
}

/// Adds every regular file under `dir` whose name is safe in a URL path (hidden files,
/// editor backups and odd names are skipped).
fn collect(dir: &Path, prefix: &str, files: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let safe = !name.starts_with('.')
            && !name.ends_with('~')
            && name
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || b"._-".contains(&byte));
        if !safe {
            continue;
        }
        let path = entry.path();
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let relative = format!("{prefix}{name}");
        if file_type.is_dir() {
            collect(&path, &format!("{relative}/"), files);
        } else if file_type.is_file() {
            files.push((relative, path));
        }
    }
}

fn content_type(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map_or("", |(_, extension)| extension);
    match extension {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "ico" => "image/x-icon",
        "webp" => "image/webp",
        "woff2" => "font/woff2",
        "txt" | "md" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
