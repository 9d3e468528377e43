//! The Khronos way in (issue 21), each figure beside its peer from the same
//! run:
//!
//! * **Import**: `clCreateBufferWithProperties(CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR)`
//!   of a 256 MiB system-heap dma-buf against `clImportMemoryARM` of the same
//!   dma-buf (import + release, median of 200 rounds; target: within 1.1x).
//! * **First access**: import the Khronos way + acquire + a 16-byte read at
//!   the start + release, of a 256 MiB system-heap dma-buf against the same
//!   of a 4 MiB one (median of 50 rounds; target: within 2x): the CPU maps
//!   only the range a command touches, not the whole dma-buf (the heap's
//!   `mmap` sets up a page-table entry for every page it maps).
//! * **Fence wait**: from `DRM_IOCTL_VGEM_FENCE_SIGNAL` to the start of the
//!   command queued behind `clEnqueueWaitSemaphoresKHR` on the sync_file,
//!   against a thread blocked in `poll()` on the same sync_file (median of
//!   50 rounds; target: within 1.5x), and the CPU time the process spends
//!   over 2 s while a wait is pending (target: under 1 % of a core).
//!
//! Needs the DMA-BUF system heap and vgem, which the QEMU guest has:
//! `make bench` runs it there (`--module vgem`).

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dmabridge::ext::arm_import;
use dmabridge::ext::khr_external::memory::{self, MemProperties};
use dmabridge::ext::khr_external::semaphore::{self, SemaphoreProperties, SEMAPHORE_TYPE_BINARY_KHR};
use dmabridge::runtime::buffer::commands;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::{command_type, Event};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::access::Access;
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::dma_heap::DmaHeap;
use dmabridge::sys::drm::{DrmDevice, PrimeFlags};

const IMPORT_ROUNDS: usize = 200;
const WAIT_ROUNDS: usize = 50;

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn import_figures(ctx: &Arc<Context>, heap: &DmaHeap) {
    const SIZE: usize = 256 << 20;
    let dmabuf: DmaBuf = heap.alloc(SIZE as u64).expect("a 256 MiB system-heap dma-buf");
    let round = |khr: bool| {
        let t = Instant::now();
        let b = if khr {
            let props = MemProperties { dma_buf: Some(dmabuf.as_fd()), devices: None };
            // SAFETY: no host pointer.
            unsafe { memory::create_buffer_with_properties(ctx, &props, 0, SIZE, null_mut()) }.expect("khr import")
        } else {
            arm_import::import_dma_buf(ctx, 0, dmabuf.as_fd(), SIZE).expect("arm import")
        };
        drop(b);
        t.elapsed()
    };
    println!("import + release of a 256 MiB system-heap dma-buf, median of {IMPORT_ROUNDS}:");
    let ours = ("cl_khr_external_memory_dma_buf", || round(true));
    compare(IMPORT_ROUNDS, ours, ("clImportMemoryARM", || round(false)), 1.1);
}

/// Runs `ours` and the `peer` `rounds` times, interleaved so that both see
/// the same machine, and prints both medians, their ratio and the target.
fn compare(
    rounds: usize,
    (label, mut ours): (&str, impl FnMut() -> Duration),
    (peer_label, mut peer): (&str, impl FnMut() -> Duration),
    target: f64,
) {
    let (mut o, mut p) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        o.push(ours());
        p.push(peer());
    }
    let (o, p) = (median(o), median(p));
    let ratio = o.as_secs_f64() / p.as_secs_f64();
    println!("  {:<31} {:>8.1} µs", format!("{label}:"), us(o));
    println!("  {:<31} {:>8.1} µs", format!("{peer_label} (peer):"), us(p));
    let verdict = if ratio <= target { "ok" } else { "ABOVE TARGET" };
    println!("  ratio {ratio:.2} (target <= {target}: {verdict})");
}

/// The process's CPU time so far.
fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn wait_figures(ctx: &Arc<Context>, q: &Arc<Queue>, vgem: &DrmDevice) {
    let dumb = vgem.create_dumb(64, 16, 32).expect("a vgem buffer");
    let dmabuf = vgem.export(&dumb, PrimeFlags::CLOEXEC | PrimeFlags::RDWR).expect("export");
    let (mut queued, mut peer) = (Vec::new(), Vec::new());
    let mut busy = Duration::ZERO;
    let mut idle = Duration::ZERO;
    for i in 0..WAIT_ROUNDS {
        // The queue: a semaphore on the fence, a command behind it that
        // notes when it starts.
        let fence = vgem.vgem_attach_fence(&dumb, true).expect("attach");
        let sync_file = dmabuf.export_sync_file(Access::Read).expect("export a sync_file");
        let props = SemaphoreProperties {
            ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()),
            sync_fd: Some(sync_file.as_fd()),
            ..Default::default()
        };
        let s = semaphore::create(ctx, &props).expect("semaphore");
        semaphore::enqueue_wait(q, &[s], &[]).expect("wait");
        let started = Arc::new(Mutex::new(None));
        let note = started.clone();
        let work = Box::new(move || {
            *note.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
            Ok(())
        });
        let ev = q.enqueue(command_type::NATIVE_KERNEL, &[], false, work).expect("command");
        std::thread::sleep(Duration::from_millis(20));
        if i == 0 {
            // CPU time while the wait is pending (the worker asleep in io_uring).
            let (c0, t0) = (cpu_time(), Instant::now());
            std::thread::sleep(Duration::from_secs(2));
            busy = cpu_time() - c0;
            idle = t0.elapsed();
        }
        let t0 = Instant::now();
        vgem.vgem_signal(fence).expect("signal");
        Event::wait(&[ev]).expect("the command");
        let at = started.lock().unwrap_or_else(|e| e.into_inner()).expect("it ran");
        queued.push(at.saturating_duration_since(t0));

        // The peer: a thread blocked in poll() on the same kind of sync_file.
        let fence = vgem.vgem_attach_fence(&dumb, true).expect("attach");
        let sync_file = dmabuf.export_sync_file(Access::Read).expect("export a sync_file");
        let waiter = std::thread::spawn(move || {
            assert!(sync_file.wait(Duration::from_secs(5)).expect("poll"));
            Instant::now()
        });
        std::thread::sleep(Duration::from_millis(20));
        let t0 = Instant::now();
        vgem.vgem_signal(fence).expect("signal");
        let at = waiter.join().expect("the poll thread");
        peer.push(at.saturating_duration_since(t0));
    }
    let (qd, pd) = (median(queued), median(peer));
    let ratio = qd.as_secs_f64() / pd.as_secs_f64();
    println!("fence signalled (vgem) -> next command starts, median of {WAIT_ROUNDS}:");
    println!("  clEnqueueWaitSemaphoresKHR (queue's io_uring): {:>8.1} µs", us(qd));
    println!("  thread blocked in poll() (peer):               {:>8.1} µs", us(pd));
    let verdict = if ratio <= 1.5 { "ok" } else { "ABOVE TARGET" };
    println!("  ratio {ratio:.2} (target <= 1.5: {verdict})");
    let share = busy.as_secs_f64() / idle.as_secs_f64() * 100.0;
    let verdict = if share <= 1.0 { "ok" } else { "ABOVE TARGET" };
    println!("  CPU while a wait is pending: {share:.2} % of a core (target <= 1 %: {verdict})");
}

const ACCESS_ROUNDS: usize = 50;

/// Import + acquire + a 16-byte read + release, 256 MiB against 4 MiB.
fn first_access_figures(ctx: &Arc<Context>, q: &Arc<Queue>, heap: &DmaHeap) {
    let round = |dmabuf: &DmaBuf, size: usize| {
        let t = Instant::now();
        let props = MemProperties { dma_buf: Some(dmabuf.as_fd()), devices: None };
        // SAFETY: no host pointer.
        let b = unsafe { memory::create_buffer_with_properties(ctx, &props, 0, size, null_mut()) }.expect("khr import");
        let one = std::slice::from_ref(&b);
        memory::enqueue_acquire(q, one, &[]).expect("acquire");
        let mut bytes = [0u8; 16];
        // SAFETY: a blocking read of 16 bytes into `bytes`.
        unsafe { commands::enqueue_read_buffer(q, &b, true, 0, bytes.len(), bytes.as_mut_ptr(), &[]) }.expect("read");
        Event::wait(&[memory::enqueue_release(q, one, &[]).expect("release")]).expect("released");
        drop(b);
        t.elapsed()
    };
    let (small, large) = (4usize << 20, 256usize << 20);
    let a: DmaBuf = heap.alloc(small as u64).expect("a 4 MiB system-heap dma-buf");
    let b: DmaBuf = heap.alloc(large as u64).expect("a 256 MiB system-heap dma-buf");
    println!("import + acquire + first CPU access (16 bytes) + release, median of {ACCESS_ROUNDS}:");
    compare(ACCESS_ROUNDS, ("256 MiB", || round(&b, large)), ("4 MiB", || round(&a, small)), 2.0);
}

fn main() {
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).expect("context");
    let q = Queue::new(&ctx, &cpu, QueueProps::default()).expect("queue");
    match DmaHeap::open("system") {
        Ok(heap) => {
            import_figures(&ctx, &heap);
            first_access_figures(&ctx, &q, &heap);
        }
        Err(e) => println!("khr_external: no DMA-BUF system heap here ({e}): run it in the QEMU guest (make bench)"),
    }
    match DrmDevice::open_vgem() {
        Ok(vgem) => wait_figures(&ctx, &q, &vgem),
        Err(e) => println!("khr_external: {e}"),
    }
}
