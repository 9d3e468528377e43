//! Map/unmap of a buffer after a device used it: a linked pair (the CPU
//! device, host-unified: the device allocation is the host pages) next to an
//! unlinked one (the BAR device: device-local memory), at 4 MiB and 64 MiB,
//! in one run. Linked costs no copy, so its time stays flat in size; the
//! unlinked pair moves the buffer both ways on every round.
//!
//! The unlinked side needs the BAR device, which exists in the QEMU guest:
//! `make bench` runs this binary there with `DMABRIDGE_BAR_DEVICE` set (on a
//! machine without one it prints the linked side and says how to get the
//! other).
//!
//! One round: a 4-byte fill at offset 0 on the device's queue (the device
//! uses the buffer: an unlinked pair first transfers it to the device), then
//! a blocking map for reading and writing (unlinked: transfers it back) and
//! an unmap.

use std::ptr::null_mut;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::buffer::{commands, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};

/// Median time of one round on `device` for a buffer of `size` bytes, and
/// the bytes moved per round.
fn round(ctx: &Arc<Context>, device: &Arc<Device>, size: usize, rounds: usize) -> (Duration, u64) {
    let q = Queue::new(ctx, device, QueueProps::default()).unwrap();
    let host = Queue::new(ctx, Platform::get().cpu(), QueueProps::default()).unwrap();
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(ctx, 0, size, null_mut()) }.unwrap();
    let one = |b: &Arc<Buffer>| {
        Event::wait(&[commands::enqueue_fill_buffer(&q, b, &[7; 4], 0, 4, &[]).unwrap()]).unwrap();
        let (p, _) = map::enqueue_map_buffer(&host, b, true, map_flags::READ | map_flags::WRITE, 0, size).unwrap();
        // SAFETY: mapped for writing; one byte.
        unsafe { p.as_ptr().add(size - 1).write(1) };
        Event::wait(&[map::enqueue_unmap_mem_object(&host, b, p.as_ptr(), &[]).unwrap()]).unwrap();
    };
    one(&b); // allocations happen here, outside the timing
    let moved = |b: &Buffer| {
        [Location::Host, Location::Device(device.index), Location::Device(0)]
            .iter()
            .map(|l| b.stats(*l).bytes_in)
            .sum::<u64>()
    };
    let before = moved(&b);
    let mut times: Vec<Duration> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            one(&b);
            t.elapsed()
        })
        .collect();
    times.sort();
    (times[rounds / 2], (moved(&b) - before) / rounds as u64)
}

fn fmt(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        format!("{:.2} ms", d.as_secs_f64() * 1e3)
    }
}

fn main() {
    let p = Platform::get();
    let cpu = p.cpu().clone();
    let bar = p.devices().iter().find(|d| d.local_memory().is_some()).cloned();
    let mut devices = vec![cpu.clone()];
    devices.extend(bar.clone());
    let ctx = Context::new(&devices).unwrap();
    println!("buffer map/unmap after device use (median of rounds; bytes moved per round)");
    println!("{:>8}  {:>26}  {:>30}  {:>8}", "size", "linked (CPU device)", "unlinked (BAR device)", "ratio");
    let sizes = [4usize << 20, 64 << 20];
    let mut linked_times = Vec::new();
    for &size in &sizes {
        let (lt, lm) = round(&ctx, &cpu, size, 15);
        linked_times.push(lt);
        let unlinked = match &bar {
            Some(bar) if bar.local_memory().is_some_and(|m| m.size() - m.allocated() >= size) => {
                let (ut, um) = round(&ctx, bar, size, 5);
                format!("{:>12} ({:>5} MiB)  {:>7.0}x", fmt(ut), um >> 20, ut.as_secs_f64() / lt.as_secs_f64())
            }
            Some(_) => "BAR too small for this size".into(),
            None => "no BAR device".into(),
        };
        println!("{:>5} MiB  {:>12} ({:>5} bytes)  {unlinked}", size >> 20, fmt(lt), lm);
    }
    let flat = linked_times[1].as_secs_f64() / linked_times[0].as_secs_f64();
    println!("linked 64 MiB / 4 MiB time: {flat:.2} (flat in size: no copy)");
    if bar.is_none() {
        println!(
            "the unlinked side needs a BAR device: `make bench` runs this in the QEMU guest with \
             DMABRIDGE_BAR_DEVICE=0000:00:08.0,bar=2 (ivshmem)"
        );
    }
}
