//! `cl_arm_import_memory` (seed 004), with `cl_arm_import_memory_host` and
//! `cl_arm_import_memory_dma_buf`: `clImportMemoryARM` makes a buffer object
//! whose storage *is* the application's memory — zero copy, never a fallback
//! copy.
//!
//! * **Host memory** ([`import_host`], `CL_IMPORT_TYPE_HOST_ARM`, the
//!   default): the whole pages around `[memory, memory + size)` become the
//!   buffer's pages. They must be mapped in the process (a hole answers
//!   `CL_INVALID_OPERATION`; mapped pages not yet populated are fine); they
//!   are committed and kept resident for the buffer's life: made resident
//!   (pinned by VFIO) in the IOMMU domain of every device behind one (edu),
//!   or, in a context without such a device, locked (`mlock`). Never both:
//!   each charges the same pages against `RLIMIT_MEMLOCK` (`mm->locked_vm`),
//!   so locking pages VFIO pins would halve what a process may import. The
//!   charge is checked before anything is locked or pinned: an import over
//!   the limit fails naming the limit, what is charged already, what it
//!   needs and how to raise it ([`vm::memlock_shortfall`]). Two
//!   imports whose page spans share a page must use the same flags:
//!   otherwise the second answers `CL_INVALID_VALUE` (seed 004, issue 7).
//!   Memory mapped without write permission is imported read-only, as a
//!   read-only dma-buf is.
//! * **dma-buf** ([`import_dma_buf`], `CL_IMPORT_TYPE_DMA_BUF_ARM`; in C
//!   `memory` points to the fd): the buffer's storage is the dma-buf's own
//!   mapping. The fd is duplicated, so the caller may close it after the
//!   import. `size` may be smaller than the dma-buf, not larger
//!   (`CL_INVALID_VALUE`); `CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM`
//!   (`SIZE_MAX`) takes all of it. A dma-buf opened read-only (`O_RDONLY`) makes a
//!   read-only buffer whatever the flags: `CL_MEM_FLAGS` answers
//!   `CL_MEM_READ_ONLY` (and `CL_MEM_HOST_READ_ONLY`, or
//!   `CL_MEM_HOST_NO_ACCESS` for `CL_MEM_HOST_WRITE_ONLY`), and every
//!   command that would write it — writes, copies and fills into it, maps
//!   for writing, built-in kernels writing it — answers
//!   `CL_INVALID_OPERATION`. Every CPU access of the runtime (commands on
//!   the CPU device, maps) is bracketed with `DMA_BUF_IOCTL_SYNC`.
//!
//! **Devices.** The buffer is usable on every device of the context: its
//! pages are linked on each one (see
//! [`store`](crate::runtime::buffer::store)), so commands move no byte but
//! the ones they are asked to ([`LocationStats`] stays at 0 transferred).
//! A device that cannot reach the memory directly makes the import fail
//! with `CL_INVALID_OPERATION`, naming the device and why: a device without
//! host-unified memory (a PCI BAR device), or a device behind an IOMMU
//! (edu) for which VFIO cannot pin the pages — the mappings of udmabuf and
//! DMA-BUF heap dma-bufs are PFN maps, which VFIO refuses. Two kinds of
//! dma-buf do reach edu: those whose mapping holds ordinary pages (e.g.
//! vivid's vmalloc buffers), pinned through that mapping, and the ones
//! dmabridge itself exported from its memfd pages
//! ([`Buffer::export_dmabuf`], `clGetMemAllocDmaBufFd`-style exports),
//! recognised by the dma-buf's inode and pinned through a mapping of the
//! same memfd pages.
//!
//! **Errors** (all of them `Err` of the functions here; the C entry point
//! answers them in `errcode_ret`): `CL_INVALID_VALUE` for flags other than
//! the device and host access flags and `CL_MEM_USE_HOST_PTR` (ignored),
//! two access or two host access flags, an unknown property or import type,
//! a property given twice, `memory` NULL, `size` 0, a dma-buf `size` larger
//! than the dma-buf, an fd that is not a dma-buf, and page-sharing host
//! imports with different flags; `CL_INVALID_OPERATION` for host pages not
//! mapped (or mapped without read access, or mapped but impossible to
//! commit, e.g. a shared file mapping past its file's end), a write-only
//! dma-buf, a dma-buf
//! that cannot be mapped, and a device that cannot reach the memory;
//! `CL_MEM_OBJECT_ALLOCATION_FAILURE` when the pages cannot be locked in
//! memory (`RLIMIT_MEMLOCK`) or made resident for a device for want of
//! resources (no bus address left in its DMA window, the kernel's limits).
//!
//! [`LocationStats`]: crate::runtime::buffer::store::LocationStats
//! [`Buffer::export_dmabuf`]: crate::runtime::buffer::Buffer::export_dmabuf
//!
//! One idea a file: the flags, device checks and `clImportMemoryARM`'s
//! dispatch here; `host` (host-memory imports), `dma_buf` (dma-buf imports
//! and the registry of dmabridge's own exports).

mod dma_buf;
mod host;

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::exports;
use crate::runtime::backend::domain::DmaDomain;
use crate::runtime::buffer::restrictions::Restrictions;
use crate::runtime::buffer::store::{Imported, Store};
use crate::runtime::buffer::{check_exclusive, mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::info::{Extension, Requires, EXTENSIONS};
use crate::sync;
use crate::sys::addr::HostAddr;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::mmap::{Access, Mapping};
use crate::sys::{page_size, vm};
pub(crate) use dma_buf::dma_buf_store;
pub use dma_buf::{import_dma_buf, recognised_exports};
pub use host::{import_host, live_host_imports};

/// `CL_IMPORT_TYPE_ARM`: the property naming the kind of memory imported.
pub const IMPORT_TYPE_ARM: u64 = 0x40B2;
/// `CL_IMPORT_TYPE_HOST_ARM`: process memory (`malloc`, `mmap`), the default.
pub const IMPORT_TYPE_HOST_ARM: u64 = 0x40B3;
/// `CL_IMPORT_TYPE_DMA_BUF_ARM`: a dma-buf; `memory` points to its fd.
pub const IMPORT_TYPE_DMA_BUF_ARM: u64 = 0x40B4;

/// `CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM` (`SIZE_MAX`): as a dma-buf
/// import's `size`, the whole dma-buf (Khronos `CL/cl_ext.h`; host memory
/// has no "whole allocation": `CL_INVALID_VALUE` there).
pub const IMPORT_MEMORY_WHOLE_ALLOCATION_ARM: usize = usize::MAX;

/// The extension string of `clImportMemoryARM` itself.
pub const EXTENSION: &str = "cl_arm_import_memory";
/// The extension string of host memory import.
pub const HOST_EXTENSION: &str = "cl_arm_import_memory_host";
/// The extension string of dma-buf import.
pub const DMA_BUF_EXTENSION: &str = "cl_arm_import_memory_dma_buf";

/// The three strings need a device that reaches host memory directly
/// ([`extensions`]); listed last, in this order.
#[linkme::distributed_slice(EXTENSIONS)]
static EXTENSION_ROW: Extension = Extension::new(EXTENSION, Requires::HostUnifiedMemory, 500);
#[linkme::distributed_slice(EXTENSIONS)]
static HOST_EXTENSION_ROW: Extension = Extension::new(HOST_EXTENSION, Requires::HostUnifiedMemory, 501);
#[linkme::distributed_slice(EXTENSIONS)]
static DMA_BUF_EXTENSION_ROW: Extension = Extension::new(DMA_BUF_EXTENSION, Requires::HostUnifiedMemory, 502);

/// The import extension strings `device` reports: all three for a device
/// with host-unified memory (the CPU device, edu), none for a device that
/// only reaches its own memory (a BAR device: an import of a context with it
/// fails, it never copies).
///
/// No OpenCL function of its own: the strings `CL_DEVICE_EXTENSIONS` lists
/// for the device (their rows of `runtime::info::EXTENSIONS` say they need
/// host-unified memory).
///
/// ```
/// use dmabridge::ext::arm_import;
/// use dmabridge::runtime::{info::device_extensions, platform::Platform};
/// let cpu = Platform::get().cpu();
/// assert_eq!(arm_import::extensions(cpu), [arm_import::EXTENSION, arm_import::HOST_EXTENSION, arm_import::DMA_BUF_EXTENSION]);
/// assert!(arm_import::extensions(cpu).iter().all(|x| device_extensions(cpu).iter().any(|e| e.name == *x)));
/// ```
pub fn extensions(device: &Device) -> &'static [&'static str] {
    if device.host_unified_memory {
        &[EXTENSION, HOST_EXTENSION, DMA_BUF_EXTENSION]
    } else {
        &[]
    }
}

/// The flag rules of the seed: the device access flags, the host access
/// flags (hints) and `CL_MEM_USE_HOST_PTR` (ignored), at most one of each
/// group. Returns the flags the buffer reports (`CL_MEM_READ_WRITE` when no
/// access flag is given, without `CL_MEM_USE_HOST_PTR`).
fn check_flags(flags: u64) -> ClResult<u64> {
    use mem_flags::*;
    let valid = ACCESS | HOST_ACCESS | USE_HOST_PTR;
    if flags & !valid != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x} has bits clImportMemoryARM does not take: {:#x} (only CL_MEM_READ_WRITE, \
             CL_MEM_WRITE_ONLY, CL_MEM_READ_ONLY, the CL_MEM_HOST_* flags and CL_MEM_USE_HOST_PTR)",
            flags & !valid
        );
    }
    check_exclusive(flags)?;
    let flags = flags & !USE_HOST_PTR;
    Ok(if flags & ACCESS == 0 { flags | READ_WRITE } else { flags })
}

/// Why nothing may write an import of host memory mapped without write
/// permission, or of a dma-buf opened read-only: set on the buffer's store
/// at import ([`Restrictions`]), which the runtime's commands ask.
const READ_ONLY_HOST_MEMORY: &str =
    "the buffer is imported host memory mapped without write permission: nothing may write it";
const READ_ONLY_DMA_BUF: &str = "the buffer is an imported dma-buf opened read-only (O_RDONLY): nothing may write it";

/// The flags of a buffer over memory nothing may write: `CL_MEM_READ_ONLY`,
/// and a host access that excludes writing.
fn read_only_flags(flags: u64) -> u64 {
    use mem_flags::*;
    let host = match flags & HOST_ACCESS {
        HOST_NO_ACCESS | HOST_WRITE_ONLY => HOST_NO_ACCESS,
        _ => HOST_READ_ONLY,
    };
    (flags & !(ACCESS | HOST_ACCESS)) | READ_ONLY | host
}

/// `CL_INVALID_OPERATION` naming the first of `devices` (those of the
/// context that will use the import) that has no host-unified memory: it
/// could only use the memory through a copy.
fn check_devices(devices: &[Arc<Device>]) -> ClResult<()> {
    if let Some(d) = devices.iter().find(|d| !d.host_unified_memory) {
        return cl_err!(
            InvalidOperation,
            "device {:?} of the context has no host-unified memory: it reaches imported memory only through a \
             copy, and clImportMemoryARM never copies (cl_arm_import_memory); import in a context without it",
            d.name
        );
    }
    Ok(())
}

/// Makes `[addr, addr + len)` resident for every one of `devices` (those of
/// the context that will use the import) behind an IOMMU, pinning the pages through `pin` (the same pages); on
/// failure undoes what it did and names the device. `what` says what the
/// memory is, for the message.
///
/// # Safety
/// As [`DmaDomain::make_resident_via`](crate::runtime::backend::domain::DmaDomain::make_resident_via).
unsafe fn make_resident(
    devices: &[Arc<Device>],
    addr: usize,
    len: usize,
    pin: usize,
    write: bool,
    what: &str,
) -> ClResult<()> {
    let (addr, pin) = (HostAddr(addr), HostAddr(pin));
    let access = if write { Access::ReadWrite } else { Access::Read };
    let mut done = Vec::new();
    for d in devices {
        let Some(domain) = d.dma_domain() else { continue };
        // SAFETY: forwarded to the caller.
        match unsafe { domain.make_resident_via(addr, len, pin, access) } {
            Ok(_) => done.push(domain),
            Err(e) => {
                for domain in done {
                    if let Err(e) = domain.evict(addr) {
                        log::error!("undoing an import's residency: {e}");
                    }
                }
                // Pages VFIO cannot pin (CL_INVALID_VALUE from the domain)
                // are out of the device's reach; anything else (no bus
                // address left, the memlock limit) is a lack of resources.
                if e.kind != ClErrorKind::InvalidValue {
                    return cl_err!(MemObjectAllocationFailure, "making {what} resident for device {:?}: {e}", d.name);
                }
                return cl_err!(
                    InvalidOperation,
                    "device {:?} cannot reach {what} directly: {e}. clImportMemoryARM never falls back to a copy \
                     (cl_arm_import_memory); memory that reaches it zero-copy: host memory, dma-bufs dmabridge \
                     exported from its memfd pages, and dma-bufs whose mapping holds ordinary pages (e.g. vivid's \
                     vmalloc buffers) — not PFN-mapped ones such as udmabuf or DMA-BUF heap buffers",
                    d.name
                );
            }
        }
    }
    Ok(())
}

/// `clImportMemoryARM` as C calls it: `properties` are the `(name, value)`
/// pairs of the zero-terminated list (empty for NULL or a lone 0: the
/// defaults); `memory` is the host memory, or for
/// `CL_IMPORT_TYPE_DMA_BUF_ARM` a pointer to the dma-buf's `int` fd.
///
/// Errors: `CL_INVALID_VALUE` for a property other than
/// `CL_IMPORT_TYPE_ARM`, a type other than `CL_IMPORT_TYPE_HOST_ARM` and
/// `CL_IMPORT_TYPE_DMA_BUF_ARM` (e.g. `CL_IMPORT_TYPE_PROTECTED_ARM`), the
/// property given twice, `memory` NULL, a negative fd; then those of
/// [`import_host`] or [`import_dma_buf`].
///
/// # Safety
/// For host memory, as [`import_host`]. For a dma-buf, `memory` points to a
/// readable `int` holding an fd that stays open during the call (or a
/// negative number).
///
/// ```
/// use dmabridge::ext::arm_import::{self, IMPORT_TYPE_ARM, IMPORT_TYPE_DMA_BUF_ARM};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let mut data = vec![1u8; 64];
/// // SAFETY: `data` stays mapped, and is only used through the buffer, while it lives.
/// let b = unsafe { arm_import::import_memory(&ctx, 0, &[], data.as_mut_ptr().cast(), 64) }?;
/// assert_eq!(b.size(), 64);
/// let fd: i32 = -1;
/// // SAFETY: `memory` points to an int; a negative fd is refused.
/// let r = unsafe {
///     arm_import::import_memory(&ctx, 0, &[(IMPORT_TYPE_ARM, IMPORT_TYPE_DMA_BUF_ARM)], (&fd as *const i32).cast_mut().cast(), 64)
/// };
/// assert!(r.is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn import_memory(
    ctx: &Arc<Context>,
    flags: u64,
    properties: &[(u64, u64)],
    memory: *mut c_void,
    size: usize,
) -> ClResult<Arc<Buffer>> {
    check_flags(flags)?;
    let mut ty = None;
    for &(name, value) in properties {
        if name != IMPORT_TYPE_ARM {
            return cl_err!(
                InvalidValue,
                "property {name:#x} is not an import property (only CL_IMPORT_TYPE_ARM, {IMPORT_TYPE_ARM:#x})"
            );
        }
        if ty.replace(value).is_some() {
            return cl_err!(InvalidValue, "CL_IMPORT_TYPE_ARM is given more than once");
        }
        if value != IMPORT_TYPE_HOST_ARM && value != IMPORT_TYPE_DMA_BUF_ARM {
            return cl_err!(
                InvalidValue,
                "CL_IMPORT_TYPE_ARM {value:#x} is not an import type dmabridge supports (CL_IMPORT_TYPE_HOST_ARM \
                 {IMPORT_TYPE_HOST_ARM:#x}, CL_IMPORT_TYPE_DMA_BUF_ARM {IMPORT_TYPE_DMA_BUF_ARM:#x})"
            );
        }
    }
    if memory.is_null() {
        return cl_err!(InvalidValue, "memory is NULL");
    }
    match ty.unwrap_or(IMPORT_TYPE_HOST_ARM) {
        IMPORT_TYPE_DMA_BUF_ARM => {
            // SAFETY: the caller: `memory` points to a readable int.
            let raw = unsafe { memory.cast::<i32>().read_unaligned() };
            if raw < 0 {
                return cl_err!(InvalidValue, "the dma-buf fd *memory is {raw}: not a file descriptor");
            }
            // SAFETY: the caller keeps the fd open during the call; the
            // import duplicates it before returning.
            let fd = unsafe { BorrowedFd::borrow_raw(raw) };
            import_dma_buf(ctx, flags, fd, size)
        }
        // SAFETY: forwarded to the caller.
        _ => unsafe { import_host(ctx, flags, memory.cast(), size) },
    }
}
