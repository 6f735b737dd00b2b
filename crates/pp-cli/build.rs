//! The release link of `pocketpilot`: the functions a start executes go next to each
//! other, and the symbol table goes.
//!
//! `startup.order` (made by `scripts/startup-order.sh`) lists the functions a one-shot
//! `run`, an idle `serve`, `tasks list` and `--version` execute. Given to lld as
//! `--symbol-ordering-file`, it packs them into a few megabytes at the start of `.text`:
//! the kernel maps code in 64 KiB windows around each page a process touches, so code
//! spread over a 30 MB section is what made a one-shot run's resident memory. Names the
//! build does not have are skipped (`--no-warn-symbol-ordering`), so a stale list only
//! loses the gain. `PP_KEEP_SYMBOLS=1` keeps the symbol table (the list is taken from
//! such a build; link arguments do not change symbol names).
//!
//! Only for release builds of x86_64 Linux, where rustc links with its own lld (the
//! default since Rust 1.90), and not when the build picks another linker (a configured
//! `linker`, which cargo passes as `RUSTC_LINKER`, or RUSTFLAGS naming one).
#![expect(
    clippy::disallowed_methods,
    reason = "a build script reads cargo's environment, not the operator's"
)]

fn main() {
    println!("cargo:rerun-if-changed=startup.order");
    println!("cargo:rerun-if-env-changed=PP_KEEP_SYMBOLS");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let release = std::env::var("PROFILE").is_ok_and(|profile| profile == "release");
    let lld_target =
        std::env::var("TARGET").is_ok_and(|target| target == "x86_64-unknown-linux-gnu");
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
    let arg = |value: &str| println!("cargo:rustc-link-arg-bin=pocketpilot={value}");
    arg(&format!("-Wl,--symbol-ordering-file={dir}/startup.order"));
    arg("-Wl,--no-warn-symbol-ordering");
    if std::env::var_os("PP_KEEP_SYMBOLS").is_none() {
        arg("-Wl,--strip-all");
    }
}
