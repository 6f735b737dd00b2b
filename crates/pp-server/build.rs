//! Embeds every file under `assets/` (the web console) into the binary: writes
//! `$OUT_DIR/assets.rs` with one row per file — path, content type, `include_bytes!` of
//! the file, `include_bytes!` of its gzip-compressed copy (when that is smaller) and its
//! strong ETag (from the content's SHA-256) — so the console can add files without
//! touching Rust code, and nothing is hashed or compressed while serving.
#![expect(
    clippy::disallowed_methods,
    reason = "the build script reads this crate's own assets directory, not model paths"
)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let assets = manifest.join("assets");
    println!("cargo:rerun-if-changed=assets");
    let mut files = Vec::new();
    collect(&assets, "", &mut files);
    files.sort();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let mut table = String::from("&[\n");
    for (index, (name, path)) in files.iter().enumerate() {
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(error) => panic!("cannot read {}: {error}", path.display()),
        };
        let etag = etag(&bytes);
        let gzip = gzip(&bytes)
            .filter(|compressed| compressed.len() < bytes.len())
            .map(|compressed| {
                let gz_path = out_dir.join(format!("asset-{index}.gz"));
                if let Err(error) = std::fs::write(&gz_path, compressed) {
                    panic!("cannot write {}: {error}", gz_path.display());
                }
                format!("Some(include_bytes!({:?}))", gz_path.display().to_string())
            })
            .unwrap_or_else(|| "None".to_owned());
        let _ = writeln!(
            table,
            "    Asset {{ name: {name:?}, content_type: {:?}, body: include_bytes!({:?}), gzip: {gzip}, etag: {etag:?} }},",
            content_type(name),
            path.display().to_string()
        );
    }
    table.push(']');
    let out = out_dir.join("assets.rs");
    if let Err(error) = std::fs::write(&out, table) {
        panic!("cannot write {}: {error}", out.display());
    }
}

/// A strong ETag (quotes included) naming exactly these bytes: the first 128 bits of
/// their SHA-256 in hex. The gzip-compressed copy is another representation, so it is
/// served with this tag plus `-gz` (see `console.rs`).
fn etag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(32);
    for byte in &digest[..16] {
        let _ = write!(hex, "{byte:02x}");
    }
    format!("\"{hex}\"")
}

/// `bytes` gzip-compressed at the best level (once per build, so the time is spent here
/// and never per request).
fn gzip(bytes: &[u8]) -> Option<Vec<u8>> {
    let mut encoder = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 3),
        flate2::Compression::best(),
    );
    encoder.write_all(bytes).ok()?;
    encoder.finish().ok()
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
