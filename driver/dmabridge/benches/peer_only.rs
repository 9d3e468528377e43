//! Smoke bench for the peer harness alone: builds and runs the peer program
//! (`bench/icd/icd_bench.c`: OpenCL SVM on PoCL, and libc) and lists its figures.
//! `bench/peer-deps && cargo bench -p dmabridge --bench peer_only`

#[path = "common/peer.rs"]
mod peer;

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter here, so arguments are ignored.
    let start = std::time::Instant::now();
    match peer::run_peer() {
        Ok(figures) => {
            println!("peer: bench/icd/icd_bench.c, {:.1} s", start.elapsed().as_secs_f64());
            for line in &figures.about {
                println!("  {line}");
            }
            for (name, value, unit) in figures.rows() {
                println!("  {:<28} {:>14}", name, peer::fmt_value(value, unit));
            }
        }
        Err(e) => {
            eprintln!("peer_only: {e}");
            std::process::exit(1);
        }
    }
}
