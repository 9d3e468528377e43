//! `clImportMemoryARM` of a dma-buf (seed 004), 4 MiB against 256 MiB in one
//! run: an import is zero copy and O(1) in the size (a dup of the fd, its
//! size and access mode, an address range reserved for the CPU's mapping),
//! so its time must not grow with the size — the target is a ratio of at
//! most 2 for a round of import + release. A second figure adds the CPU's
//! first access (two one-byte reads through the buffer, at both ends): the
//! CPU maps only the chunks of the dma-buf a command touches (the DMA-BUF
//! system heap's `mmap` sets up a page-table entry for every page it maps,
//! so mapping all of it grew with the size: 38.8x before), with the same
//! target, and without a copy
//! (the buffer's counters show 0 bytes moved).
//!
//! The dma-bufs come from the DMA-BUF system heap, which exists in the QEMU
//! guest (the development host has none): `make bench` runs this binary
//! there; elsewhere it says how to.

use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dmabridge::ext::arm_import;
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::buffer::{commands, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::dma_heap::DmaHeap;

const ROUNDS: usize = 200;
const TARGET_RATIO: f64 = 2.0;

/// Median time of one round (import, `reads` one-byte reads at both ends,
/// release) of `dmabuf`, and the bytes the buffers moved in all rounds.
fn median_round(ctx: &Arc<Context>, q: &Arc<Queue>, dmabuf: &DmaBuf, size: usize, reads: bool) -> (Duration, u64) {
    let mut moved = 0;
    let mut times: Vec<Duration> = (0..ROUNDS)
        .map(|_| {
            let t = Instant::now();
            let b = arm_import::import_dma_buf(ctx, 0, dmabuf.as_fd(), size).expect("import");
            let mut byte = [0u8; 1];
            for offset in [0, size - 1].into_iter().filter(|_| reads) {
                // SAFETY: blocking read of one byte into `byte`.
                unsafe { commands::enqueue_read_buffer(q, &b, true, offset, 1, byte.as_mut_ptr(), &[]) }.expect("read");
            }
            moved += moved_bytes(&b);
            drop(b);
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[ROUNDS / 2], moved)
}

fn moved_bytes(b: &Buffer) -> u64 {
    let cpu = Location::Device(Platform::get().cpu().index);
    [Location::Host, cpu].iter().map(|l| b.stats(*l).bytes_in + b.stats(*l).bytes_out).sum()
}

fn main() {
    // `cargo bench` passes `--bench`; there is nothing to filter here, so arguments are ignored.
    let heap = match DmaHeap::open("system") {
        Ok(h) => h,
        Err(e) => {
            println!(
                "arm_import: no DMA-BUF system heap here ({e}): run it in the QEMU guest, e.g. `make bench`, or \
                 qemu/run-in-guest -- $(cargo bench -p dmabridge --bench arm_import --no-run 2>&1 | sed -n \
                 's/.*(\\(.*\\)).*/\\1/p')"
            );
            return;
        }
    };
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).expect("context");
    let q = Queue::new(&ctx, &cpu, QueueProps::default()).expect("queue");
    println!("dma-buf import (clImportMemoryARM, CL_IMPORT_TYPE_DMA_BUF_ARM) on the CPU device, system heap,");
    println!("median of {ROUNDS} rounds:");
    let bufs: Vec<(usize, DmaBuf)> = [4usize << 20, 256 << 20]
        .into_iter()
        .map(|n| (n, heap.alloc(n as u64).expect("a system-heap dma-buf")))
        .collect();
    for (reads, what) in [(false, "import + release"), (true, "import + first CPU access (2 one-byte reads) + release")]
    {
        println!("  {what}:");
        let mut figures = Vec::new();
        for (size, dmabuf) in &bufs {
            let (t, moved) = median_round(&ctx, &q, dmabuf, *size, reads);
            println!("    {:>4} MiB: {:>9.1} µs, {moved} bytes moved", size >> 20, t.as_secs_f64() * 1e6);
            figures.push(t);
        }
        let ratio = figures[1].as_secs_f64() / figures[0].as_secs_f64();
        let verdict = if ratio <= TARGET_RATIO { "ok" } else { "ABOVE TARGET" };
        println!("    256 MiB / 4 MiB: {ratio:.2} (target <= {TARGET_RATIO}: {verdict})");
    }
}
