//! The one generic ioctl entry point of the crate, over `rustix::ioctl`, and
//! the one place that restarts interrupted system calls.
//!
//! rustix's ready-made patterns (`Setter`, `Updater`, ...) discard the ioctl's
//! return value, but several kernel objects return a new fd or a count in it
//! (VFIO_GROUP_GET_DEVICE_FD, VFIO_CHECK_EXTENSION). One small `Ioctl`
//! implementation that passes a pointer and returns the integer covers every
//! call the crate makes.
//!
//! **Restarts.** An ioctl that sleeps interruptibly answers `EINTR` when a
//! signal whose handler was installed without `SA_RESTART` arrives (the
//! kernel restarts it itself only with `SA_RESTART`): the call did nothing
//! and must be issued again. The application, not dmabridge, chooses the
//! signal handlers, so every ioctl here is restarted on `EINTR`
//! ([`restart`]): DMA_BUF_IOCTL_SYNC waiting for a dma-buf's fences,
//! VIDIOC_DQBUF on a blocking V4L2 fd, VFIO pinning and unpinning
//! (`VFIO_IOMMU_MAP_DMA`/`UNMAP_DMA`), VFIO_DEVICE_RESET, DRM and udmabuf
//! calls that fault pages in. Some also answer `EAGAIN` for "try again":
//! DMA_BUF_IOCTL_SYNC (the kernel's dma-buf documentation: "the ioctl may
//! return -EAGAIN or -EINTR, in which case it must be restarted") and DRM
//! (libdrm's `drmIoctl` restarts every DRM ioctl on both): those go through
//! [`ioctl_ptr_again`]. Elsewhere `EAGAIN` means something of its own (a
//! non-blocking VIDIOC_DQBUF with no frame ready) and is the caller's.

use std::ffi::c_void;
use std::os::fd::BorrowedFd;

use rustix::io::Errno;
pub(crate) use rustix::ioctl::{opcode, Opcode};

struct PtrIoctl {
    opcode: Opcode,
    arg: *mut c_void,
}

// SAFETY: `as_ptr` returns the caller's pointer unchanged, `IS_MUTATING` is
// true so rustix never assumes the argument is read-only, and the output is
// the plain integer return value, which needs no pointer access.
unsafe impl rustix::ioctl::Ioctl for PtrIoctl {
    type Output = i32;
    const IS_MUTATING: bool = true;

    fn opcode(&self) -> Opcode {
        self.opcode
    }

    fn as_ptr(&mut self) -> *mut c_void {
        self.arg
    }

    unsafe fn output_from_ptr(out: rustix::ioctl::IoctlOutput, _: *mut c_void) -> rustix::io::Result<i32> {
        Ok(out)
    }
}

/// Issues ioctl `opcode` on `fd` with `arg` as its argument and returns the
/// ioctl's non-negative return value.
///
/// # Safety
/// `opcode` must be an ioctl of the object behind `fd` whose argument is a
/// pointer to a `T` (or, for `_IO` ioctls that take an integer, whose kernel
/// side never dereferences it), and `T` must have the layout the kernel
/// expects, including any trailing data the kernel reads or writes (argsz).
///
/// Restarted on `EINTR` (see the module documentation).
pub(crate) unsafe fn ioctl_ptr<T>(fd: BorrowedFd<'_>, opcode: Opcode, arg: *mut T) -> Result<i32, Errno> {
    // SAFETY: forwarded to the caller, see above; each restart passes the
    // same argument again, as the kernel's own restart would.
    restart(Again::Fail, || unsafe { rustix::ioctl::ioctl(fd, PtrIoctl { opcode, arg: arg.cast() }) })
}

/// [`ioctl_ptr`] for ioctls that must also be restarted on `EAGAIN`
/// (DMA_BUF_IOCTL_SYNC, DRM).
///
/// # Safety
/// As [`ioctl_ptr`].
pub(crate) unsafe fn ioctl_ptr_again<T>(fd: BorrowedFd<'_>, opcode: Opcode, arg: *mut T) -> Result<i32, Errno> {
    // SAFETY: forwarded to the caller, as in `ioctl_ptr`.
    restart(Again::Restart, || unsafe { rustix::ioctl::ioctl(fd, PtrIoctl { opcode, arg: arg.cast() }) })
}

/// What `EAGAIN` means to a call given to [`restart`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Again {
    /// "Issue the call again" (DMA_BUF_IOCTL_SYNC, DRM): restarted.
    Restart,
    /// An answer of its own (e.g. "nothing ready" on a non-blocking fd):
    /// returned to the caller.
    Fail,
}

/// Calls `call` until it answers anything but `EINTR` (nor `EAGAIN`, with
/// [`Again::Restart`]): the crate's one retry loop for interrupted system
/// calls. Each `EINTR` needs a signal, so the loop ends once the call is
/// left alone; an `EAGAIN` to restart is the kernel's word that the call
/// will get through (libdrm's `drmIoctl` loops the same way).
pub(crate) fn restart<T>(again: Again, mut call: impl FnMut() -> Result<T, Errno>) -> Result<T, Errno> {
    loop {
        match call() {
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) if again == Again::Restart => std::thread::yield_now(),
            done => return done,
        }
    }
}

/// Issues an ioctl whose argument is a plain integer (passed in the pointer
/// slot, as `_IO` ioctls such as VFIO_CHECK_EXTENSION expect).
///
/// # Safety
/// `opcode` must be an ioctl of the object behind `fd` that takes an integer
/// argument and never dereferences it.
pub(crate) unsafe fn ioctl_int(fd: BorrowedFd<'_>, opcode: Opcode, arg: usize) -> Result<i32, Errno> {
    // SAFETY: forwarded to the caller; the integer is never dereferenced.
    unsafe { ioctl_ptr(fd, opcode, arg as *mut c_void) }
}
