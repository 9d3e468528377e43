//! Smoke bench for the peer harness alone: builds and runs the PoCL SVM baseline and lists its figures.
//! `bench/peer-deps && cargo bench -p dmabridge --bench peer_only`

#[path = "common/peer.rs"]
mod peer;

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter here, so arguments are ignored.
    let start = std::time::Instant::now();
    match peer::run_peer() {
        Ok(figures) => {
            println!(
                "peer: PoCL CPU OpenCL SVM (shared/peers/pocl_svm_bench.c), {:.1} s",
                start.elapsed().as_secs_f64()
            );
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
