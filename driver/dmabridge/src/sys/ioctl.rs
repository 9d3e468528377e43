//! The one generic ioctl entry point of the crate, over `rustix::ioctl`.
//!
//! rustix's ready-made patterns (`Setter`, `Updater`, ...) discard the ioctl's
//! return value, but several kernel objects return a new fd or a count in it
//! (VFIO_GROUP_GET_DEVICE_FD, VFIO_CHECK_EXTENSION). One small `Ioctl`
//! implementation that passes a pointer and returns the integer covers every
//! call the crate makes.

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
pub(crate) unsafe fn ioctl_ptr<T>(fd: BorrowedFd<'_>, opcode: Opcode, arg: *mut T) -> Result<i32, Errno> {
    // SAFETY: forwarded to the caller, see above.
    unsafe { rustix::ioctl::ioctl(fd, PtrIoctl { opcode, arg: arg.cast() }) }
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
