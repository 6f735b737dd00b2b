//! The release link of `pocketpilot`: the functions a start executes go next to each
//! other, the relocations are packed, and the symbol table goes.
//!
//! `startup.order` (made by `scripts/startup-order.sh`) lists the functions a one-shot
//! `run`, an idle `serve`, `tasks list` and `--version` execute. Given to lld as
//! `--symbol-ordering-file`, it packs them into a few megabytes at the start of `.text`:
//! the kernel maps code in 64 KiB windows around each page a process touches, so code
//! spread over a 30 MB section is what made a one-shot run's resident memory. Names the
//! build does not have are skipped (`--no-warn-symbol-ordering`), so a stale list only
//! loses the gain. Symbol names carry a hash of the cargo profile, so a build of another
//! profile (CI's `ci-release`, see `scripts/rss-guard.sh`) names its own list in
//! `PP_ORDER_FILE`. `PP_KEEP_SYMBOLS=1` keeps the symbol table (a list is taken from such
//! a build; link arguments do not change symbol names).
//!
//! `-z pack-relative-relocs` (DT_RELR) stores the 67,000 relative relocations of a
//! position-independent executable in a few kilobytes instead of 1.6 MB the loader reads
//! at every start. The loader must understand it (glibc 2.36 or later), so it is used
//! only when the building machine's glibc is that new: the binary runs where it was built.
//!
//! Only for release-derived builds of x86_64 Linux, where rustc links with its own lld
//! (the default since Rust 1.90), and not when the build picks another linker (a
//! configured `linker`, which cargo passes as `RUSTC_LINKER`, or RUSTFLAGS naming one).
#![expect(
    clippy::disallowed_methods,
    reason = "a build script reads cargo's environment, not the operator's"
)]

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=startup.order");
    println!("cargo:rerun-if-env-changed=PP_KEEP_SYMBOLS");
    println!("cargo:rerun-if-env-changed=PP_ORDER_FILE");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let lld_target =
        std::env::var("TARGET").is_ok_and(|target| target == "x86_64-unknown-linux-gnu");
    let native = std::env::var("HOST").ok() == std::env::var("TARGET").ok();
    let own_linker = std::env::var_os("RUSTC_LINKER").is_some()
        || std::env::var("CARGO_ENCODED_RUSTFLAGS").is_ok_and(|flags| {
            ["linker", "fuse-ld", "link-self-contained"]
                .iter()
                .any(|word| flags.contains(word))
        });
    if !release || !lld_target || own_linker {
        return;
    }
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let order = std::env::var("PP_ORDER_FILE").unwrap_or_else(|_| format!("{dir}/startup.order"));
    if order != format!("{dir}/startup.order") {
        println!("cargo:rerun-if-changed={order}");
    }
    let arg = |value: &str| println!("cargo:rustc-link-arg-bin=pocketpilot={value}");
    arg(&format!("-Wl,--symbol-ordering-file={order}"));
    arg("-Wl,--no-warn-symbol-ordering");
    if native && glibc_at_least(2, 36) {
        arg("-Wl,-z,pack-relative-relocs");
    }
    if std::env::var_os("PP_KEEP_SYMBOLS").is_none() {
        arg("-Wl,--strip-all");
    }
}

/// Whether this machine's C library is glibc `major.minor` or later, from
/// `getconf GNU_LIBC_VERSION` ("glibc 2.36"). Anything else (no getconf, musl) is no.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(output) = Command::new("getconf").arg("GNU_LIBC_VERSION").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&output.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|part| part.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(have_major), Some(have_minor)) => (have_major, have_minor) >= (major, minor),
        _ => false,
    }
}
