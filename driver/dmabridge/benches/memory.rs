//! Benchmarks of the memory layer and the CPU device's queue, each printed
//! beside its peer from the same run:
//!
//! - 4 KiB host allocation + free: the memfd-backed heap (dma-buf exportable)
//!   against PoCL 3.1's clSVMAlloc + clSVMFree and libc's aligned_alloc + free
//!   (both measured by the C program `bench/icd/icd_bench.c`, built and run
//!   here), and against the same allocation made from C through the ICD
//!   loader and dmabridge's ICD (when `DMABRIDGE_ICD` names its `.icd` file,
//!   as `make bench` does). The Rust and the C side are measured in turns,
//!   three rounds, each after an untimed warm-up run, and the spread of
//!   their runs is printed: a single first run of a fresh process was 40 %
//!   off;
//! - 4 KiB device USM allocation + free from C through the ICD on two
//!   threads at once against one thread (the ICD's handle lookups must not
//!   serialise them: two threads reach >= 1.8x one thread's throughput),
//!   beside the same ratio of the Rust path;
//! - interior-pointer lookup among 100 000 live allocations, one and two
//!   reader threads, against NEO's approach (binary search on a sorted
//!   vector of allocations, behind a reader lock as NEO keeps it);
//! - a blocking 64-byte clEnqueueMemcpyINTEL (enqueue -> complete), and a
//!   64 MiB fill (4-byte pattern) and memcpy through the queue, against
//!   PoCL's SVM equivalents and libc's memset/memcpy.
//!
//! Run: `make bench` (installs PoCL), or `cargo bench -p dmabridge --bench memory`
//! (`-- device-usm`: only the Rust path's device USM scaling rows).

#[path = "common/peer.rs"]
mod peer;

use dmabridge::sys::addr::HostAddr;
use std::hint::black_box;
use std::sync::{Arc, RwLock};
use std::time::Instant;

use dmabridge::ext::{usm, usm_commands as cmd};
use dmabridge::memory::heap::{AllocMeta, Heap};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};

fn ns_per(iters: usize, f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e9 / iters as f64
}

/// Best of `runs` measurements: the machines are shared, the minimum is the
/// least disturbed.
fn best(runs: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..runs).map(|_| f()).fold(f64::INFINITY, f64::min)
}

/// The best and the worst of several timed runs.
#[derive(Debug, Clone, Copy)]
struct Spread {
    best: f64,
    worst: f64,
}

impl Spread {
    const NONE: Spread = Spread { best: f64::INFINITY, worst: 0.0 };

    fn with(self, other: Spread) -> Spread {
        Spread { best: self.best.min(other.best), worst: self.worst.max(other.worst) }
    }
}

/// One untimed warm-up run of `f`, then `runs` timed ones.
fn spread(runs: usize, mut f: impl FnMut() -> f64) -> Spread {
    f();
    (0..runs).map(|_| f()).fold(Spread::NONE, |s, ns| s.with(Spread { best: ns, worst: ns }))
}

/// clHostMemAllocINTEL + clMemFreeINTEL of 4 KiB, through the USM API: runs
/// as long and as many as the C side's (`bench/icd/icd_bench.c`: 20 000
/// pairs, best of 7 after a warm-up), so that on a shared machine both have
/// the same chance of a run that no other process interrupted (with 200 000
/// pairs per run, 10 ms and more, the Rust side read slower than the C side
/// under load).
fn alloc_free_4k(ctx: &Arc<Context>) -> Spread {
    const N: usize = 20_000;
    spread(7, || {
        ns_per(N, || {
            for _ in 0..N {
                let p = usm::host_mem_alloc(ctx, &[], 4096, 0).unwrap();
                // SAFETY: a live 4 KiB allocation; touch it as the peer does.
                unsafe { p.as_ptr().write_volatile(1) };
                usm::mem_free(ctx, p.as_ptr()).unwrap();
            }
        })
    })
}

/// clDeviceMemAllocINTEL + clMemFreeINTEL of 4 KiB through the USM API on
/// `threads` threads at once: ns per pair (see [`on_threads`]).
fn device_alloc_free_4k(ctx: &Arc<Context>, device: &Arc<dmabridge::runtime::device::Device>, threads: usize) -> Run {
    on_threads(threads, &|| {
        let p = usm::device_mem_alloc(ctx, device, &[], 4096, 0).unwrap();
        usm::mem_free(ctx, black_box(p.as_ptr())).unwrap();
    })
}

/// The reference of the two-thread rows: a 64-byte `Box` made, written and
/// dropped (the allocator's per-thread cache: threads that share nothing),
/// on `threads` threads at once, ns each.
fn reference_pair(threads: usize) -> Run {
    on_threads(threads, &|| drop(black_box(Box::new([1u8; 64]))))
}

/// One run of [`on_threads`]: ns per call, and whether every thread had a
/// core of its own for it (it ran for at least 95 % of the run's span by its
/// own CPU time; on a shared machine a thread often waits for a CPU, and two
/// threads that take turns on one core show no scaling whatever the code).
#[derive(Debug, Clone, Copy)]
struct Run {
    ns: f64,
    own_core: bool,
}

/// The calling thread's CPU time, in seconds.
fn thread_cpu() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// `f` 20 000 times on each of `threads` threads at once: ns per call, from
/// the first thread's start to the last one's end (as the C program measures
/// it). The threads start when all of them are running (a spin, not a
/// `Barrier`: a thread woken from a barrier can wait a few hundred
/// microseconds for a CPU, and the other one ran alone meanwhile, which read
/// as a poor two-thread ratio).
fn on_threads(threads: usize, f: &(dyn Fn() + Sync)) -> Run {
    const N: usize = 20_000;
    let arrived = std::sync::atomic::AtomicUsize::new(0);
    let spans: Vec<(Instant, Instant, f64)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    arrived.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
                    while arrived.load(std::sync::atomic::Ordering::Acquire) < threads {
                        std::hint::spin_loop();
                    }
                    let t0 = Instant::now();
                    let c0 = thread_cpu();
                    for _ in 0..N {
                        f();
                    }
                    let cpu = thread_cpu() - c0;
                    (t0, Instant::now(), cpu)
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let first = spans.iter().map(|s| s.0).min().unwrap();
    let last = spans.iter().map(|s| s.1).max().unwrap();
    let span = (last - first).as_secs_f64();
    Run { ns: span * 1e9 / (N * threads) as f64, own_core: spans.iter().all(|s| s.2 >= 0.95 * span) }
}

/// Two threads against one, [`TWO_ROUNDS`] rounds of `run(1)` then
/// `run(2)` (after one untimed): the best ns of each, and the two-thread /
/// one-thread throughput of each round in which every thread had a core in
/// both runs, sorted (as `icd_bench.c` measures the C path).
fn scaling(run: impl Fn(usize) -> Run) -> (f64, f64, Vec<f64>) {
    let (mut one, mut two, mut both) = (f64::INFINITY, f64::INFINITY, Vec::new());
    run(1);
    run(2);
    for _ in 0..TWO_ROUNDS {
        let (r1, r2) = (run(1), run(2));
        one = one.min(r1.ns);
        two = two.min(r2.ns);
        if r1.own_core && r2.own_core {
            both.push(r1.ns / r2.ns);
        }
    }
    both.sort_by(f64::total_cmp);
    (one, two, both)
}

/// Rounds of [`scaling`], as many as the C side's.
const TWO_ROUNDS: usize = 31;

/// "k of n rounds had both cores: median m (a-b)".
fn both_cores_text(both: usize, rounds: usize, sorted: &[f64]) -> String {
    match sorted {
        [] => format!("none of {rounds} rounds had both cores"),
        _ => format!(
            "{both} of {rounds} rounds had both cores: {:.2}x median ({:.2}-{:.2}x)",
            sorted[sorted.len() / 2],
            sorted[0],
            sorted[sorted.len() - 1]
        ),
    }
}

/// Pseudo-random sequence (xorshift) so lookups hit allocations in no order.
fn xorshift(mut x: u64) -> impl Iterator<Item = u64> {
    std::iter::from_fn(move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        Some(x)
    })
}

/// NEO's allocation table: a vector of (base, size) sorted by base, searched
/// by binary search under a reader lock.
struct SortedTable(RwLock<Vec<(usize, usize)>>);

impl SortedTable {
    fn lookup(&self, ptr: usize) -> Option<(usize, usize)> {
        let v = self.0.read().unwrap();
        let i = v.partition_point(|&(b, _)| b <= ptr);
        let (b, s) = *v.get(i.checked_sub(1)?)?;
        (ptr < b + s).then_some((b, s))
    }
}

fn lookup_rate(threads: usize, targets: &[usize], lookup: &(dyn Fn(usize) -> bool + Sync)) -> f64 {
    const N: usize = 2_000_000;
    best(3, || {
        let t = Instant::now();
        std::thread::scope(|s| {
            for k in 0..threads {
                s.spawn(move || {
                    let mut hits = 0usize;
                    for r in xorshift(0x9e37_79b9 + k as u64).take(N) {
                        hits += lookup(black_box(targets[r as usize % targets.len()])) as usize;
                    }
                    assert_eq!(hits, N, "every target is inside a live allocation");
                });
            }
        });
        // Aggregate ns per lookup across all threads (lower is better).
        t.elapsed().as_secs_f64() * 1e9 / (N * threads) as f64
    })
}

/// The C path rows (through the loader and the ICD at `icd`), beside the
/// Rust path: `rust` is the first round's Rust spread, widened by the
/// others.
fn c_path(ctx: &Arc<Context>, cpu: &Arc<dmabridge::runtime::device::Device>, icd: &std::path::Path, rust: &mut Spread) {
    const ROUNDS: usize = 3;
    let (mut c, mut c_dev, mut c_dev2) = (Spread::NONE, f64::INFINITY, f64::INFINITY);
    let (mut c_ref, mut c_ref2) = (f64::INFINITY, f64::INFINITY);
    // The two-thread rounds with both cores: per C child ("k of n: median"), and over all.
    let (mut c_both, mut c_ref_both) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        if round > 0 {
            *rust = rust.with(alloc_free_4k(ctx));
        }
        let figures = match peer::run_icd(icd) {
            Ok(f) => f,
            Err(e) => return println!("C path through {}: unavailable: {e}", icd.display()),
        };
        let Some(best) = figures.usm_host_alloc_free_4k_ns else {
            return println!("C path through {}: the platform reported no USM", icd.display());
        };
        let (b, w) = figures.spread(peer::USM_ALLOC_NAME).unwrap_or((best, best));
        c = c.with(Spread { best: b, worst: w });
        if let (Some(one), Some(two)) = (figures.usm_device_alloc_free_4k_ns, figures.usm_device_alloc_free_4k_2t_ns) {
            c_dev = c_dev.min(one);
            c_dev2 = c_dev2.min(two);
        }
        if let (Some(one), Some(two)) = (figures.libc_malloc_free_64_ns, figures.libc_malloc_free_64_2t_ns) {
            c_ref = c_ref.min(one);
            c_ref2 = c_ref2.min(two);
        }
        c_both.extend(figures.both_cores("cl_usm_device_alloc_free_4k").cloned());
        c_ref_both.extend(figures.both_cores("libc_malloc_free_64").cloned());
    }
    let (rust_dev, rust_dev2, rust_both) = scaling(|n| device_alloc_free_4k(ctx, cpu, n));
    let (rust_ref, rust_ref2, rust_ref_both) = scaling(reference_pair);
    peer::print_row("4 KiB USM host alloc+free, C path (ICD)", c.best, rust.best, "ns", true, "<= 1.5x Rust");
    println!(
        "  spread over {ROUNDS} rounds of warm-up + timed runs: C {:.0}-{:.0} ns, Rust {:.0}-{:.0} ns \
         (best-to-best ratio above; worst-to-worst {:.2})",
        c.best,
        c.worst,
        rust.best,
        rust.worst,
        c.worst / rust.worst
    );
    if c_dev.is_finite() {
        println!(
            "  device USM alloc+free 4 KiB: C path {c_dev:.0} ns on 1 thread, {c_dev2:.0} ns per pair on 2; \
             Rust path {rust_dev:.0} / {rust_dev2:.0} ns (best of all runs)"
        );
        peer::print_row(
            "device USM, C path: 2 threads / 1",
            c_dev / c_dev2,
            rust_dev / rust_dev2,
            "x",
            false,
            ">= 1.8x (peer: the Rust path)",
        );
        // What counts: the rounds in which both threads had a core.
        let per_child = |b: &[peer::BothCores]| {
            b.iter()
                .map(|b| match b.both {
                    0 => format!("none of {}", b.rounds),
                    k => format!("{k} of {}: {:.2}x median ({:.2}-{:.2}x)", b.rounds, b.median, b.min, b.max),
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        println!("  device USM 2 threads / 1, rounds with both cores (target >= 1.8x):");
        println!("    C path, per child: {}", per_child(&c_both));
        println!("    Rust path: {}", both_cores_text(rust_both.len(), TWO_ROUNDS, &rust_both));
        println!(
            "  reference, threads that share nothing (malloc(64)+free; Box of 64 bytes), 2 threads / 1, best of all \
             runs: C child {:.2}x, this process {:.2}x; rounds with both cores: C {}; Rust {}",
            c_ref / c_ref2,
            rust_ref / rust_ref2,
            per_child(&c_ref_both),
            both_cores_text(rust_ref_both.len(), TWO_ROUNDS, &rust_ref_both)
        );
    } else {
        println!("  device USM rows: the ICD's CPU device reported no device USM");
    }
}

/// The Rust path's device USM rows alone: 1 and 2 threads
/// ([`scaling`]), with the load average beside them (the machine is shared).
fn device_rows(ctx: &Arc<Context>, cpu: &Arc<dmabridge::runtime::device::Device>) {
    let (one, two, both) = scaling(|n| device_alloc_free_4k(ctx, cpu, n));
    let (ref1, ref2, ref_both) = scaling(reference_pair);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "device USM alloc+free 4 KiB, Rust path: {one:.0} ns on 1 thread, {two:.0} ns per pair on 2 (best of \
         {TWO_ROUNDS}): 2 threads / 1 = {:.2}x; {} (target >= 1.8x); reference, threads that share nothing: \
         {:.2}x, {}; load average {}",
        one / two,
        both_cores_text(both.len(), TWO_ROUNDS, &both),
        ref1 / ref2,
        both_cores_text(ref_both.len(), TWO_ROUNDS, &ref_both),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
}

fn main() {
    // `-- device-usm`: only the Rust path's two-thread scaling rows (for
    // profiling them, e.g. under `perf stat -e syscalls:sys_enter_futex`).
    if std::env::args().any(|a| a == "device-usm") {
        let cpu = Platform::get().cpu().clone();
        let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
        return device_rows(&ctx, &cpu);
    }
    let peer = peer::run_peer();
    if let Err(e) = &peer {
        eprintln!("peer figures unavailable: {e}");
    }
    println!("dmabridge benchmarks (debug assertions {})", if cfg!(debug_assertions) { "ON" } else { "off" });
    if let Ok(p) = &peer {
        println!("peer (bench/icd/icd_bench.c): {}", p.about.join("; "));
    }
    peer::print_header();

    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let mut rust = alloc_free_4k(&ctx);
    let ours = rust.best;
    let heap = Heap::new().unwrap();
    if let Ok(p) = &peer {
        peer::print_row("4 KiB USM host alloc+free vs PoCL", ours, p.svm_alloc_free_4k_ns, "ns", true, "<= PoCL");
        peer::print_row("4 KiB USM host alloc+free vs libc", ours, p.libc_alloc_free_4k_ns, "ns", true, "<= 3x libc");
    } else {
        println!("4 KiB host alloc+free: {ours:.0} ns (no peer)");
    }
    // The same allocation from C, through the loader and dmabridge's ICD:
    // three rounds, each the Rust side then the C side, so that the load of
    // a shared machine hits both alike.
    match std::env::var_os("DMABRIDGE_ICD").map(std::path::PathBuf::from) {
        Some(icd) => c_path(&ctx, &cpu, &icd, &mut rust),
        None => {
            println!("C path (ICD): set DMABRIDGE_ICD to dmabridge's .icd file (`make icd` writes one)");
            device_rows(&ctx, &cpu);
        }
    }

    // 100k live allocations of mixed sizes; targets are interior pointers.
    let sizes = [64usize, 200, 4096, 10_000, 100_000];
    let allocs: Vec<(usize, usize)> = (0..100_000)
        .map(|i| {
            let s = sizes[i % sizes.len()];
            (heap.alloc(s, 0, AllocMeta::HOST).unwrap().as_ptr() as usize, s)
        })
        .collect();
    let targets: Vec<usize> = allocs.iter().map(|&(b, s)| b + s / 2).collect();
    let mut sorted = allocs.clone();
    sorted.sort();
    let neo = SortedTable(RwLock::new(sorted));

    let ours1 = lookup_rate(1, &targets, &|p| heap.lookup(HostAddr(p)).is_some());
    let ours2 = lookup_rate(2, &targets, &|p| heap.lookup(HostAddr(p)).is_some());
    let neo1 = lookup_rate(1, &targets, &|p| neo.lookup(p).is_some());
    let neo2 = lookup_rate(2, &targets, &|p| neo.lookup(p).is_some());
    peer::print_row("lookup, 100k live, 1 reader", ours1, neo1, "ns", true, "<= 100 ns");
    peer::print_row("lookup, 100k live, 2 readers (sum)", ours2, neo2, "ns", true, "2 readers >= 1.8x one");
    println!(
        "reader scaling (1-reader ns / 2-reader aggregate ns): ours {:.2}x, NEO-style {:.2}x (target >= 1.8x)",
        ours1 / ours2,
        neo1 / neo2
    );
    for (b, _) in allocs {
        heap.free(HostAddr(b)).unwrap();
    }

    // Through the USM API and a command queue of the CPU device, as the
    // peer measures clEnqueueSVMMemcpy / clEnqueueSVMMemFill.
    let q = Queue::new(&ctx, &cpu, QueueProps::default()).unwrap();
    const BIG: usize = 64 << 20;
    let a = usm::host_mem_alloc(&ctx, &[], BIG, 0).unwrap().as_ptr();
    let b = usm::host_mem_alloc(&ctx, &[], BIG, 0).unwrap().as_ptr();
    // SAFETY: both are live 64 MiB allocations of this benchmark.
    unsafe {
        std::ptr::write_bytes(a, 1, BIG);
        std::ptr::write_bytes(b, 2, BIG);
    }
    const RT: usize = 20_000;
    let round_trip = best(5, || {
        ns_per(RT, || {
            for _ in 0..RT {
                // SAFETY: a and b are live and distinct; the copy is blocking.
                unsafe { cmd::enqueue_memcpy(&q, true, b, a, 64, &[]) }.unwrap();
            }
        })
    });
    if let Ok(p) = &peer {
        peer::print_row(
            "blocking 64 B memcpy, enqueue->complete",
            round_trip,
            p.svm_memcpy64_roundtrip_ns,
            "ns",
            true,
            "<= 1 us",
        );
    } else {
        println!("blocking 64 B memcpy round trip: {round_trip:.0} ns (no peer)");
    }
    let gbps = |ns: f64| BIG as f64 / ns;
    let pattern = 0x5a5a_5a5bu32.to_ne_bytes();
    let ours_fill = gbps(best(10, || {
        ns_per(1, || {
            // SAFETY: b is live; the fill is waited for just below.
            let e = unsafe { cmd::enqueue_mem_fill(&q, b, &pattern, BIG, &[]) }.unwrap();
            Event::wait(&[e]).unwrap();
        })
    }));
    // SAFETY: b is a live 64 MiB allocation.
    let memset = gbps(best(10, || ns_per(1, || unsafe { std::ptr::write_bytes(black_box(b), 0x5a, BIG) })));
    // SAFETY: a and b are live and distinct; the copy is blocking.
    let blocking_copy = || drop(unsafe { cmd::enqueue_memcpy(&q, true, b, a, BIG, &[]) }.unwrap());
    let ours_copy = gbps(best(10, || ns_per(1, blocking_copy)));
    // SAFETY: a and b are live, distinct 64 MiB allocations.
    let memcpy = gbps(best(10, || ns_per(1, || unsafe { std::ptr::copy_nonoverlapping(black_box(a), b, BIG) })));
    peer::print_row("queue fill 64 MiB, 4 B pattern vs memset", ours_fill, memset, "GB/s", false, ">= 1.0x memset");
    peer::print_row("queue memcpy 64 MiB vs memcpy", ours_copy, memcpy, "GB/s", false, ">= 1.4x memcpy");
    if let Ok(p) = &peer {
        println!(
            "PoCL in its run: fill {:.2}x memset, memcpy {:.2}x memcpy",
            p.svm_fill_64mib_gbps / p.libc_memset_64mib_gbps,
            p.svm_memcpy_64mib_gbps / p.libc_memcpy_64mib_gbps
        );
    }
    usm::mem_free(&ctx, a).unwrap();
    usm::mem_free(&ctx, b).unwrap();
}
