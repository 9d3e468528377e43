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

use dmabridge::sys::dma_buf::SyncDir;
use dmabridge::sys::drm::{DrmDevice, PrimeFlags};
use dmabridge::sys::mmap::Access;
use dmabridge_tests::require_guest;
use rustix::ioctl::{opcode, Setter, Updater};

/// `struct drm_vgem_fence_attach` (`<uapi/drm/vgem_drm.h>`).
#[repr(C)]
#[derive(Default)]
struct VgemFenceAttach {
    handle: u32,
    flags: u32,
    out_fence: u32,
    pad: u32,
}

/// `struct drm_vgem_fence_signal`.
#[repr(C)]
#[derive(Default)]
struct VgemFenceSignal {
    fence: u32,
    flags: u32,
}

/// `VGEM_FENCE_WRITE`: an exclusive (write) fence, which readers wait for.
const VGEM_FENCE_WRITE: u32 = 1;
/// `DRM_IOCTL_VGEM_FENCE_ATTACH`: `DRM_IOWR(DRM_COMMAND_BASE + 1, ...)`.
const VGEM_FENCE_ATTACH: u32 = opcode::read_write::<VgemFenceAttach>(b'd', 0x41);
/// `DRM_IOCTL_VGEM_FENCE_SIGNAL`: `DRM_IOW(DRM_COMMAND_BASE + 2, ...)`.
const VGEM_FENCE_SIGNAL: u32 = opcode::write::<VgemFenceSignal>(b'd', 0x42);

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

#[test]
fn dma_buf_sync_is_restarted_when_a_signal_interrupts_its_wait() {
    require_guest();
    install_handler_without_restart();
    {
        let vgem = DrmDevice::open_vgem().expect("vgem (make test-guest loads it)");
        let bo = vgem.create_dumb(64, 64, 32).expect("vgem dumb buffer");
        let buf = vgem.export(&bo, PrimeFlags::RDWR).expect("export the vgem buffer");
        let map = buf.map(Access::Read).expect("map the dma-buf");
        let mut attach = VgemFenceAttach { handle: bo.handle(), flags: VGEM_FENCE_WRITE, ..Default::default() };
        // SAFETY: VGEM_FENCE_ATTACH reads and writes one
        // `drm_vgem_fence_attach`, which `VgemFenceAttach` mirrors.
        unsafe { rustix::ioctl::ioctl(vgem.as_fd(), Updater::<VGEM_FENCE_ATTACH, _>::new(&mut attach)) }
            .expect("VGEM_FENCE_ATTACH (a write fence on the buffer)");
        let fence = attach.out_fence;

        SIGNALS.store(0, Ordering::Relaxed);
        let done = AtomicBool::new(false);
        // SAFETY: pthread_self has no preconditions.
        let waiter = unsafe { libc::pthread_self() };
        let started = Instant::now();
        let access = std::thread::scope(|s| {
            s.spawn(|| {
                // Signals every millisecond while the start waits, for at
                // least 0.3 s and 20 delivered signals; then the fence.
                while !done.load(Ordering::Acquire)
                    && (SIGNALS.load(Ordering::Relaxed) < 20 || started.elapsed() < Duration::from_millis(300))
                {
                    // SAFETY: `waiter` is alive: it joins this thread before it returns.
                    unsafe { libc::pthread_kill(waiter, libc::SIGUSR1) };
                    std::thread::sleep(Duration::from_millis(1));
                }
                let signal = VgemFenceSignal { fence, flags: 0 };
                // SAFETY: VGEM_FENCE_SIGNAL reads one `drm_vgem_fence_signal`.
                unsafe { rustix::ioctl::ioctl(vgem.as_fd(), Setter::<VGEM_FENCE_SIGNAL, _>::new(signal)) }
                    .expect("VGEM_FENCE_SIGNAL");
            });
            let access = buf.cpu_access(SyncDir::Read);
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
    }
}
