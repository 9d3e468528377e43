//! System calls interrupted by signals are restarted, not failed: the
//! application installs handlers without `SA_RESTART` (its choice, not
//! dmabridge's), and a blocked ioctl then answers `EINTR`.
//!
//! Deterministic: the dma-buf carries an unsignalled vgem fence, so the
//! `DMA_BUF_IOCTL_SYNC` start sleeps (interruptibly) until another thread
//! signals the fence, and that thread first sends the sleeping thread
//! signals — a start that is not restarted fails with the first one.
//! Needs vgem (`make test-guest` loads it).

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use dmabridge::ext::arm_import::import_dma_buf;
use dmabridge::runtime::buffer::commands;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::{Event, EventStatus};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::access::Access;
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::drm::{DrmDevice, PrimeFlags};
use dmabridge_tests::{require_guest, run_in_child};

/// Signals the handler below has seen.
static SIGNALS: AtomicUsize = AtomicUsize::new(0);

extern "C" fn count_signal(_: libc::c_int) {
    SIGNALS.fetch_add(1, Ordering::Relaxed);
}

/// Installs `count_signal` for SIGUSR1 without `SA_RESTART`: a blocked
/// interruptible system call of the thread it hits answers `EINTR`.
fn install_handler_without_restart() {
    // SAFETY: a zeroed sigaction is a valid value (empty mask, no flags);
    // the handler only touches an atomic, which is async-signal-safe.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = count_signal as *const () as usize;
        act.sa_flags = 0;
        libc::sigemptyset(&mut act.sa_mask);
        assert_eq!(libc::sigaction(libc::SIGUSR1, &act, std::ptr::null_mut()), 0, "sigaction SIGUSR1");
    }
}

/// A 64x64x4 vgem buffer exported as a dma-buf, with an unsignalled vgem
/// write fence attached: `body` gets the dma-buf and a function that
/// signals the fence (vgem signals it itself after 10 s).
fn with_fenced_vgem_buffer(body: impl FnOnce(&DmaBuf, &(dyn Fn() + Sync))) {
    let vgem = DrmDevice::open_vgem().expect("vgem (make test-guest loads it)");
    let bo = vgem.create_dumb(64, 64, 32).expect("vgem dumb buffer");
    let buf = vgem.export(&bo, PrimeFlags::RDWR).expect("export the vgem buffer");
    let fence = std::sync::Mutex::new(Some(vgem.vgem_attach_fence(&bo, true).expect("a write fence on the buffer")));
    let signal_fence = || {
        if let Some(f) = fence.lock().unwrap_or_else(|e| e.into_inner()).take() {
            vgem.vgem_signal(f).expect("DRM_IOCTL_VGEM_FENCE_SIGNAL");
        }
    };
    body(&buf, &signal_fence);
}

/// Sends SIGUSR1 every millisecond to the threads `targets` names (their
/// kernel thread ids), for at least 0.3 s and until 20 signals were
/// handled, or until `done`; then calls `after`.
fn hammer(targets: &dyn Fn() -> Vec<i32>, done: &AtomicBool, after: &dyn Fn()) {
    let started = Instant::now();
    let pid = rustix::process::getpid().as_raw_nonzero().get();
    while !done.load(Ordering::Acquire)
        && (SIGNALS.load(Ordering::Relaxed) < 20 || started.elapsed() < Duration::from_millis(300))
    {
        for tid in targets() {
            // SAFETY: tgkill sends a signal; a thread that has exited
            // meanwhile answers ESRCH, which is ignored.
            unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGUSR1) };
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    after();
}

fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

#[test]
fn dma_buf_sync_is_restarted_when_a_signal_interrupts_its_wait() {
    require_guest();
    install_handler_without_restart();
    with_fenced_vgem_buffer(|buf, signal_fence| {
        let map = buf.map(Access::Read).expect("map the dma-buf");
        SIGNALS.store(0, Ordering::Relaxed);
        let done = AtomicBool::new(false);
        let waiter = gettid();
        let access = std::thread::scope(|s| {
            s.spawn(|| hammer(&|| vec![waiter], &done, signal_fence));
            let access = buf.cpu_access(Access::Read);
            done.store(true, Ordering::Release);
            access
        });
        let signals = SIGNALS.load(Ordering::Relaxed);
        let access = access.unwrap_or_else(|e| {
            panic!("DMA_BUF_IOCTL_SYNC start failed after {signals} signals while waiting for the fence: {e}")
        });
        assert!(signals >= 20, "the start was interrupted by only {signals} signals: the test proves nothing");
        assert_eq!(map.read_u32(0), 0, "a fresh vgem buffer reads zero");
        access.end().expect("DMA_BUF_IOCTL_SYNC end");
    });
}

/// The same through the runtime: a read of an imported dma-buf on the CPU
/// device waits for the dma-buf's fences on the queue's worker thread (in
/// io_uring since issue 21, then DMA_BUF_IOCTL_SYNC start); signals hitting
/// that thread while it waits for the fence must not fail the command
/// (before the fix its event ended with CL_OUT_OF_RESOURCES).
#[test]
fn a_command_on_an_imported_dma_buf_survives_signals_while_it_waits() {
    run_in_child("signals::child_a_command_on_an_imported_dma_buf_survives_signals_while_it_waits", &[]);
}

#[test]
#[ignore = "run in a child process"]
fn child_a_command_on_an_imported_dma_buf_survives_signals_while_it_waits() {
    install_handler_without_restart();
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = Queue::new(&ctx, &cpu, QueueProps::default()).unwrap();
    with_fenced_vgem_buffer(|buf, signal_fence| {
        let b = import_dma_buf(&ctx, 0, buf.as_fd(), 4096).unwrap();
        let mut out = vec![0xffu8; 4096];
        SIGNALS.store(0, Ordering::Relaxed);
        // SAFETY: `out` outlives the command: the event is waited for below.
        let ev = unsafe { commands::enqueue_read_buffer(&q, &b, false, 0, 4096, out.as_mut_ptr(), &[]) }.unwrap();
        // The queue's worker threads (named dmabq-N) are the ones that wait.
        let workers = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .flatten()
                .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("dmabq-")))
                .filter_map(|t| t.file_name().to_str()?.parse().ok())
                .collect()
        };
        let done = AtomicBool::new(false);
        hammer(&workers, &done, signal_fence);
        let signals = SIGNALS.load(Ordering::Relaxed);
        assert!(signals >= 20, "only {signals} signals reached the workers: the test proves nothing");
        let r = Event::wait(std::slice::from_ref(&ev));
        assert!(r.is_ok(), "the read failed after {signals} signals: {r:?} ({:?})", ev.status());
        assert_eq!(ev.status(), EventStatus::Complete);
        assert!(out.iter().all(|&x| x == 0), "a fresh vgem buffer reads zero");
    });
}
