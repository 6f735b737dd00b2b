#![allow(
    clippy::print_stdout,
    clippy::unwrap_used,
    clippy::disallowed_methods,
    missing_docs
)]
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let options = pp_docs::extract::ExtractOptions {
        pages: None,
        max_chars: usize::MAX,
    };
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let document = pp_docs::extract::extract(&bytes, pp_docs::Format::Pdf, &options).unwrap();
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{} pages in {secs:.3}s: {:.0} pages/s ({} chars)",
            document.pages,
            document.pages as f64 / secs,
            document.text.len()
        );
    }
}
