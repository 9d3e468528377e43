//! The stress test of seed 000 / seed 001 on the CPU device: several threads
//! allocate (host, device, shared, SVM), look up interior pointers, enqueue
//! copies and fills on shared queues, and free (some with the blocking free)
//! at once. Afterwards nothing is left: no allocation, no resident page, and
//! once the context is gone, no fd, no mapping and no worker thread.
//!
//! Its own test binary, so that nothing else runs in the process while the
//! fds, mappings and threads are counted.

use dmabridge::sys::addr::HostAddr;
use std::sync::Arc;

use dmabridge::ext::usm::{self, mem_info, MemAllocInfo};
use dmabridge::ext::usm_commands as cmd;
use dmabridge::ext::{svm, svm_commands};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge_tests::Resources;

/// Threads of the process, less the CPU device's transfer helpers
/// (`dmab-xfer-N`): those are started once, by the first large copy or fill,
/// and serve every queue for the life of the process.
fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| !name.starts_with("dmab-xfer-"))
        .count()
}

/// The first round creates what libc keeps for the life of the process
/// (malloc arenas of new threads, cached thread stacks); the second must
/// leave everything exactly as the first did.
#[test]
fn threads_allocate_look_up_enqueue_and_free_and_nothing_is_left() {
    let threads0 = threads();
    round(threads0);
    let before = Resources::now();
    round(threads0);
    before.assert_unchanged();
}

fn round(threads0: usize) {
    let cpu = Platform::get().cpu().clone();
    {
        let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
        let in_order = Queue::new(&ctx, &cpu, QueueProps::default()).unwrap();
        let ooo = Queue::new(&ctx, &cpu, QueueProps { out_of_order: true, profiling: true }).unwrap();
        std::thread::scope(|s| {
            for t in 0..4usize {
                let (ctx, in_order, ooo) = (&ctx, &in_order, &ooo);
                let cpu = &cpu;
                s.spawn(move || worker(t, ctx, cpu, in_order, ooo));
            }
        });
        in_order.finish().unwrap();
        ooo.finish().unwrap();
        let stats = ctx.heap().stats();
        assert_eq!((stats.live, stats.large), (0, 0), "every allocation was freed");
        ctx.heap().trim();
        assert_eq!(ctx.heap().stats().resident_bytes, 0, "every page went back");
    }
    // Queue workers exit on their own once their queue is gone.
    for _ in 0..200 {
        if threads() == threads0 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(threads(), threads0, "queue worker threads were left behind");
}

fn worker(
    t: usize,
    ctx: &Arc<Context>,
    cpu: &Arc<dmabridge::runtime::device::Device>,
    q1: &Arc<Queue>,
    q2: &Arc<Queue>,
) {
    let sizes = [8usize, 100, 4096, 70_000, 3 << 20];
    let mut live: Vec<(*mut u8, usize)> = Vec::new();
    for i in 0..400usize {
        let size = sizes[(i + t) % sizes.len()];
        let p = match i % 4 {
            0 => usm::host_mem_alloc(ctx, &[], size, 0),
            1 => usm::device_mem_alloc(ctx, cpu, &[], size, 0),
            2 => usm::shared_mem_alloc(ctx, None, &[], size, 0),
            _ => svm::svm_alloc(ctx, svm::flags::READ_WRITE, size, 0),
        }
        .unwrap()
        .as_ptr();
        // An interior pointer finds its allocation.
        let mid = p.wrapping_add(size / 2);
        assert_eq!(
            usm::get_mem_alloc_info(ctx, mid, mem_info::ALLOC_BASE_PTR).unwrap(),
            MemAllocInfo::BasePtr(p as usize)
        );
        let q = if i % 2 == 0 { q1 } else { q2 };
        // SAFETY: p is live until freed below, and every command that uses it
        // completes before (blocking commands, or the blocking free).
        unsafe {
            let pattern = [(t as u8).wrapping_add(1); 8];
            let fill =
                cmd::enqueue_mem_fill(q, p, &pattern[..size.min(8)], size / size.min(8) * size.min(8), &[]).unwrap();
            if let Some(&(prev, prev_size)) = live.last() {
                let n = size.min(prev_size);
                cmd::enqueue_memcpy(q, false, prev, p as *const u8, n, std::slice::from_ref(&fill)).unwrap();
            }
        }
        live.push((p, size));
        if i % 3 == 0 {
            let (old, old_size) = live.remove(0);
            // Blocking free waits for the copies and fills that touch it.
            if svm::svm_flags(ctx, old).is_some() {
                // clEnqueueSVMFree orders only with its own (possibly
                // out-of-order) queue: wait first, as an application must,
                // for the commands on any queue that still use the memory.
                dmabridge::runtime::queue::wait_for_context_commands_using(ctx, |u| {
                    u.touches(HostAddr::of(old), old_size)
                });
                let e = svm_commands::enqueue_svm_free(q, &[old], None, &[]).unwrap();
                Event::wait(&[e]).unwrap();
            } else {
                cmd::mem_blocking_free(ctx, old).unwrap();
            }
        }
    }
    q1.finish().unwrap();
    q2.finish().unwrap();
    for (p, _) in live {
        if !svm::svm_free(ctx, p) {
            usm::mem_free(ctx, p).unwrap();
        }
    }
}
