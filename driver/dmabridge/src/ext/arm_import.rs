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

use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::runtime::backend::domain::DmaDomain;
use crate::runtime::buffer::store::{Imported, Store};
use crate::runtime::buffer::{check_exclusive, mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::info::{Extension, Requires, EXTENSIONS};
use crate::sys::addr::HostAddr;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::mmap::{Access, Mapping};
use crate::sys::{page_size, vm};

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

/// `CL_INVALID_OPERATION` naming the first device of the context that has
/// no host-unified memory: it could only use the memory through a copy.
fn check_devices(ctx: &Context) -> ClResult<()> {
    if let Some(d) = ctx.devices().iter().find(|d| !d.host_unified_memory) {
        return cl_err!(
            InvalidOperation,
            "device {:?} of the context has no host-unified memory: it reaches imported memory only through a \
             copy, and clImportMemoryARM never copies (cl_arm_import_memory); import in a context without it",
            d.name
        );
    }
    Ok(())
}

/// Makes `[addr, addr + len)` resident for every device of the context
/// behind an IOMMU, pinning the pages through `pin` (the same pages); on
/// failure undoes what it did and names the device. `what` says what the
/// memory is, for the message.
///
/// # Safety
/// As [`DmaDomain::make_resident_via`](crate::runtime::backend::domain::DmaDomain::make_resident_via).
unsafe fn make_resident(ctx: &Context, addr: usize, len: usize, pin: usize, write: bool, what: &str) -> ClResult<()> {
    let (addr, pin) = (HostAddr(addr), HostAddr(pin));
    let access = if write { Access::ReadWrite } else { Access::Read };
    let mut done = Vec::new();
    for d in ctx.devices() {
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

// ---------------------------------------------------------------------------
// Host memory: page-sharing bookkeeping.

/// A live host import's page span and flags.
#[derive(Debug, Clone, Copy)]
struct HostSpan {
    start: usize,
    end: usize,
    flags: u64,
    /// Its pages were locked (`mlock`): no device of its context pins them.
    locked: bool,
}

/// Every live host import of the process, by id.
static HOST_IMPORTS: Mutex<BTreeMap<u64, HostSpan>> = Mutex::new(BTreeMap::new());
static NEXT_HOST_IMPORT: AtomicU64 = AtomicU64::new(1);

fn host_imports() -> MutexGuard<'static, BTreeMap<u64, HostSpan>> {
    HOST_IMPORTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A host import's locked pages and its entry in [`HOST_IMPORTS`]: dropped
/// with the buffer, it unlocks the pages no other locked host import spans
/// (an import whose pages VFIO pins locked none).
#[derive(Debug)]
struct HostPin {
    id: u64,
    span: HostSpan,
}

impl Drop for HostPin {
    fn drop(&mut self) {
        let mut imports = host_imports();
        imports.remove(&self.id);
        if !self.span.locked {
            return;
        }
        for (lo, hi) in unshared(&imports, self.span) {
            if let Err(e) = vm::unlock(HostAddr(lo), hi - lo) {
                log::warn!("unlocking the pages of a released host import: {e}");
            }
        }
    }
}

/// The parts of `span` that no locked import in `imports` spans: the pages
/// to unlock when `span`'s import goes (mlock does not nest, so pages
/// another import locked stay locked), and the pages a new lock charges.
fn unshared(imports: &BTreeMap<u64, HostSpan>, span: HostSpan) -> Vec<(usize, usize)> {
    let mut others: Vec<(usize, usize)> = imports
        .values()
        .filter(|o| o.locked && o.start < span.end && span.start < o.end)
        .map(|o| (o.start, o.end))
        .collect();
    others.sort_unstable();
    let mut gaps = Vec::new();
    let mut cursor = span.start;
    for (lo, hi) in others.into_iter().chain(std::iter::once((span.end, span.end))) {
        if lo > cursor {
            gaps.push((cursor, lo.min(span.end)));
        }
        cursor = cursor.max(hi);
        if cursor >= span.end {
            break;
        }
    }
    gaps
}

/// The number of live host imports (the page-sharing bookkeeping holds one
/// entry per import, released with its buffer).
///
/// No OpenCL function of its own: shows that releasing an imported buffer
/// releases its bookkeeping (tests).
///
/// ```
/// use dmabridge::ext::arm_import;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let mut data = vec![0u8; 4096];
/// // SAFETY: `data` stays mapped, and is only used through the buffer, while it lives.
/// let b = unsafe { arm_import::import_host(&ctx, 0, data.as_mut_ptr(), data.len()) }?;
/// assert!(arm_import::live_host_imports() >= 1);
/// drop(b);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn live_host_imports() -> usize {
    host_imports().len()
}

/// Imports host memory `[ptr, ptr + size)` as a buffer: its storage is the
/// whole pages around the range (committed and pinned with `mlock` for the
/// buffer's life, and resident in the IOMMU domain of every device behind
/// one). `CL_MEM_FLAGS` answers `flags` (with `CL_MEM_READ_WRITE` if no
/// access flag is given); memory mapped without write permission makes a
/// read-only buffer, as a read-only dma-buf does (see the module).
///
/// `clImportMemoryARM` with `CL_IMPORT_TYPE_HOST_ARM` (seed 004).
///
/// Errors: `CL_INVALID_VALUE` for bad flags, `ptr` NULL, `size` 0 or
/// [`IMPORT_MEMORY_WHOLE_ALLOCATION_ARM`], or pages shared with another
/// live host import made with other flags;
/// `CL_INVALID_OPERATION` if a page of the range is not mapped (or not
/// readable, or cannot be committed: a shared file mapping past the end of
/// its file), or a device of the context cannot reach the pages (no
/// host-unified memory; VFIO cannot pin them); and
/// `CL_MEM_OBJECT_ALLOCATION_FAILURE` when the pages cannot be locked, or
/// made resident for a device for want of resources (see the module).
/// A failed import leaves nothing locked, resident or recorded.
///
/// # Safety
/// The whole pages around the range stay mapped (not unmapped or remapped)
/// and backed (a file they map is not truncated under them: a touch past
/// its end is SIGBUS) while the buffer lives; like `CL_MEM_USE_HOST_PTR` memory, the
/// application touches them only while the buffer is mapped (or no command
/// uses it), and holds no Rust reference into them that a device write
/// could invalidate. `mlock`/`munlock` apply to whole pages: pages the
/// application locked itself are unlocked when the last import spanning them
/// is released.
///
/// ```
/// use dmabridge::ext::arm_import;
/// use dmabridge::runtime::buffer::{commands, mem_flags, store::Location};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let mut frame = vec![7u8; 1000];
/// // SAFETY: `frame` stays mapped, and is only used through the buffer, while it lives.
/// let b = unsafe { arm_import::import_host(&ctx, mem_flags::READ_WRITE, frame.as_mut_ptr(), frame.len()) }?;
/// let mut out = [0u8; 4];
/// // SAFETY: blocking: `out` is written before the call returns.
/// unsafe { commands::enqueue_read_buffer(&queue, &b, true, 996, 4, out.as_mut_ptr(), &[])? };
/// assert_eq!(out, [7; 4]);
/// assert_eq!(b.stats(Location::Device(cpu.index)).bytes_in, 0, "zero copy");
/// // SAFETY: refused before any use of the pointer.
/// assert!(unsafe { arm_import::import_host(&ctx, 0, std::ptr::null_mut(), 4) }.is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn import_host(ctx: &Arc<Context>, flags: u64, ptr: *mut u8, size: usize) -> ClResult<Arc<Buffer>> {
    let flags = check_flags(flags)?;
    if ptr.is_null() {
        return cl_err!(InvalidValue, "memory is NULL");
    }
    if size == 0 {
        return cl_err!(InvalidValue, "size is 0: nothing to import");
    }
    if size == IMPORT_MEMORY_WHOLE_ALLOCATION_ARM {
        return cl_err!(
            InvalidValue,
            "size CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM (SIZE_MAX) is for dma-bufs: host memory has no whole \
             allocation to take"
        );
    }
    let page = page_size();
    let addr = ptr as usize;
    let Some(end) = addr.checked_add(size).and_then(|e| e.checked_next_multiple_of(page)) else {
        return cl_err!(
            InvalidOperation,
            "memory {ptr:?} + {size} bytes runs past the end of the address space: those pages are not mapped"
        );
    };
    let start = addr & !(page - 1);
    check_devices(ctx)?;
    let not_mapped = || {
        ClError::new(
            ClErrorKind::InvalidOperation,
            format!(
                "pages of {ptr:?} + {size} bytes (the pages {start:#x}..{end:#x}) are not mapped in the process \
                 (cl_arm_import_memory: the whole pages around the range must be mapped)"
            ),
        )
    };
    let access = vm::mapped(HostAddr(start), end - start)
        .map_err(|e| ClError::new(ClErrorKind::OutOfResources, format!("reading the process's mappings: {e}")))?
        .ok_or_else(not_mapped)?;
    if !access.read {
        return cl_err!(
            InvalidOperation,
            "pages of {ptr:?} + {size} bytes are mapped without read permission: nothing could use them"
        );
    }
    let read_only = !access.write;
    // The IOMMU domains the pages are made resident in: VFIO pins them there
    // (committing them), so they are not locked as well.
    let mut domains: Vec<Arc<DmaDomain>> = Vec::new();
    for d in ctx.devices().iter().filter_map(|d| d.dma_domain()) {
        if !domains.iter().any(|o| Arc::ptr_eq(o, &d)) {
            domains.push(d);
        }
    }
    let span = HostSpan { start, end, flags, locked: domains.is_empty() };
    let pin = {
        let mut imports = host_imports();
        if let Some(o) = imports.values().find(|o| o.start < end && start < o.end && o.flags != flags) {
            return cl_err!(
                InvalidValue,
                "memory {ptr:?} + {size} bytes shares pages ({:#x}..{:#x}) with another live host import made with \
                 flags {:#x}, not {flags:#x}: imports sharing a page must use the same flags \
                 (cl_arm_import_memory, issue 7)",
                o.start.max(start),
                o.end.min(end),
                o.flags
            );
        }
        // What the import charges against RLIMIT_MEMLOCK, checked before
        // anything is locked or pinned: the pages no other import locked
        // (mlock), or the span once per domain that pins it anew.
        let charge = if span.locked {
            unshared(&imports, span).iter().map(|(lo, hi)| (hi - lo) as u64).sum()
        } else {
            domains.iter().filter(|d| d.would_pin(HostAddr(addr), size)).count() as u64 * (end - start) as u64
        };
        if let Some(short) = vm::memlock_shortfall(charge) {
            return cl_err!(
                MemObjectAllocationFailure,
                "importing {ptr:?} + {size} bytes would {} {charge} bytes of pages: {short}",
                if span.locked { "lock" } else { "pin (for the context's devices behind an IOMMU)" }
            );
        }
        let locking = if span.locked { vm::lock(HostAddr(start), end - start) } else { Ok(()) };
        if let Err(e) = locking {
            // A failed mlock may have locked part of the range (the kernel
            // marks the mappings locked before it commits their pages):
            // unlock what no other import holds.
            let gaps = unshared(&imports, span);
            for &(lo, hi) in &gaps {
                if let Err(e) = vm::unlock(HostAddr(lo), hi - lo) {
                    log::warn!("unlocking the pages of a failed host import: {e}");
                }
            }
            // Unmapped meanwhile (another thread), the memlock limit, or
            // pages that cannot be committed (a shared file mapping past
            // the end of its file, where a touch is SIGBUS): all ENOMEM.
            // Else (EAGAIN: no memory to commit them; EPERM) a lack of
            // resources.
            if vm::mapped(HostAddr(start), end - start).ok().flatten().is_none() {
                return Err(not_mapped());
            }
            let shortfall = vm::memlock_shortfall(gaps.iter().map(|(lo, hi)| (hi - lo) as u64).sum());
            if e.errno == rustix::io::Errno::NOMEM && shortfall.is_none() {
                return cl_err!(
                    InvalidOperation,
                    "pages of {ptr:?} + {size} bytes (the pages {start:#x}..{end:#x}) are mapped but cannot be \
                     committed ({e}): e.g. a shared file mapping reaching past the end of its file"
                );
            }
            let hint = shortfall.map_or_else(String::new, |s| format!(" ({s})"));
            return cl_err!(
                MemObjectAllocationFailure,
                "committing and pinning the {} bytes of pages around {ptr:?} + {size}: {e}{hint}",
                end - start
            );
        }
        let id = NEXT_HOST_IMPORT.fetch_add(1, Ordering::Relaxed);
        imports.insert(id, span);
        HostPin { id, span }
    };
    let what = format!("host memory {ptr:?} + {size} bytes");
    // SAFETY: the caller keeps the pages mapped and free of Rust references
    // while the buffer lives (its store evicts the residency when dropped,
    // before `pin` unlocks the pages); the pages pinned are the range's own.
    unsafe { make_resident(ctx, addr, size, addr, !read_only, &what) }?;
    let imported = Imported::new(None, read_only, Box::new(pin));
    let flags = if read_only { read_only_flags(flags) } else { flags };
    let store = Store::new_imported(ctx, size, addr, imported, ctx.devices());
    Ok(Buffer::imported(ctx, flags, size, store))
}

// ---------------------------------------------------------------------------
// dma-bufs: dmabridge's own exports.

/// A dma-buf dmabridge exported from memfd pages: the memfd (a dup, one
/// for every record of that memfd) and the range of it the dma-buf maps.
#[derive(Debug)]
struct ExportRecord {
    memfd: Arc<OwnedFd>,
    memfd_inode: u64,
    offset: u64,
    len: u64,
}

/// dmabridge's live exports of memfd pages, by the dma-buf's inode (unique
/// among live dma-bufs, and never reused while the record lives: records go
/// when their memfd pages are handed back or the memfd is dropped).
static EXPORTS: Mutex<Option<HashMap<u64, ExportRecord>>> = Mutex::new(None);
/// The number of records, read without the lock on the heap's hot paths.
static EXPORT_COUNT: AtomicUsize = AtomicUsize::new(0);

fn exports() -> MutexGuard<'static, Option<HashMap<u64, ExportRecord>>> {
    EXPORTS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Records that `dma_buf` maps the pages `[offset, offset + len)` of
/// `memfd` (a udmabuf export of the heap's pages), so that an import of it
/// on a device behind an IOMMU pins the memfd's pages (which VFIO can)
/// instead of the dma-buf's PFN mapping (which it cannot). Failures only
/// lose the zero-copy path on such devices (logged).
pub(crate) fn note_export(dma_buf: &DmaBuf, memfd: BorrowedFd<'_>, offset: u64, len: u64) {
    let mut ex = exports();
    let map = ex.get_or_insert_with(HashMap::new);
    let record = (|| -> Result<(u64, ExportRecord), String> {
        let inode = dma_buf.inode().map_err(|e| e.to_string())?;
        let memfd_inode = rustix::fs::fstat(memfd).map_err(|e| e.to_string())?.st_ino;
        // Records of one memfd share one dup of it: exporting the same pages
        // again and again costs no fd each time.
        let memfd = match map.values().find(|r| r.memfd_inode == memfd_inode) {
            Some(r) => r.memfd.clone(),
            None => Arc::new(memfd.try_clone_to_owned().map_err(|e| e.to_string())?),
        };
        Ok((inode, ExportRecord { memfd, memfd_inode, offset, len }))
    })();
    match record {
        Ok((inode, record)) => {
            map.insert(inode, record);
            EXPORT_COUNT.store(map.len(), Ordering::Release);
        }
        Err(e) => log::warn!("recording a dma-buf export for later imports: {e}"),
    }
}

/// Forgets the exports of `memfd`'s pages that overlap `[offset, offset +
/// len)`: the heap is handing them back (a hole is punched, so the memfd
/// gets fresh pages there while the dma-bufs keep the old ones), or the
/// memfd itself goes. Call it before the pages change.
pub(crate) fn forget_exports(memfd: BorrowedFd<'_>, offset: u64, len: u64) {
    if EXPORT_COUNT.load(Ordering::Acquire) == 0 {
        return;
    }
    let Ok(st) = rustix::fs::fstat(memfd) else { return };
    let end = offset.saturating_add(len);
    let mut ex = exports();
    if let Some(map) = ex.as_mut() {
        map.retain(|_, r| !(r.memfd_inode == st.st_ino && r.offset < end && offset < r.offset + r.len));
        EXPORT_COUNT.store(map.len(), Ordering::Release);
    }
}

/// The number of dmabridge's exports an import can recognise.
///
/// No OpenCL function of its own: for tests (records go with their pages).
///
/// ```
/// let n = dmabridge::ext::arm_import::recognised_exports();
/// # let _ = n;
/// ```
pub fn recognised_exports() -> usize {
    EXPORT_COUNT.load(Ordering::Acquire)
}

/// Imports a dma-buf as a buffer: its storage is the dma-buf's mapping
/// (zero copy). `fd` is borrowed: the import keeps a duplicate, so the
/// caller may close it afterwards. `size` bytes from the dma-buf's start
/// are the buffer ([`IMPORT_MEMORY_WHOLE_ALLOCATION_ARM`]: all of it).
///
/// `clImportMemoryARM` with `CL_IMPORT_TYPE_DMA_BUF_ARM` (seed 004).
///
/// Errors: `CL_INVALID_VALUE` for bad flags, `size` 0 or larger than the
/// dma-buf, or an fd that is not a dma-buf; `CL_INVALID_OPERATION` for a
/// write-only dma-buf, one that cannot be mapped, or a device of the context
/// that cannot reach it directly; `CL_MEM_OBJECT_ALLOCATION_FAILURE` when it
/// cannot be made resident for a device for want of resources (see the
/// module). A read-only dma-buf makes a read-only buffer (see the module).
/// A failed import keeps nothing.
///
/// ```
/// use std::os::fd::AsFd;
/// use dmabridge::ext::arm_import;
/// use dmabridge::runtime::buffer::mem_flags;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::sys::memfd::{Memfd, Seals};
/// use dmabridge::sys::udmabuf::Udmabuf;
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // Not a dma-buf.
/// let memfd = Memfd::create(c"frame", 8192)?;
/// let err = arm_import::import_dma_buf(&ctx, 0, memfd.as_fd(), 8192).unwrap_err();
/// assert_eq!(err.code(), dmabridge::error::code::INVALID_VALUE);
/// // A dma-buf of memfd pages through udmabuf, where this machine has it.
/// memfd.add_seals(Seals::SHRINK)?;
/// if let Ok(udmabuf) = Udmabuf::open() {
///     let dmabuf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
///     // Larger than the dma-buf.
///     assert!(arm_import::import_dma_buf(&ctx, 0, dmabuf.as_fd(), 8193).is_err());
///     let b = arm_import::import_dma_buf(&ctx, mem_flags::READ_WRITE, dmabuf.as_fd(), 8192)?;
///     let whole = arm_import::IMPORT_MEMORY_WHOLE_ALLOCATION_ARM;
///     assert_eq!(arm_import::import_dma_buf(&ctx, 0, dmabuf.as_fd(), whole)?.size(), 8192);
///     drop(dmabuf); // the buffer keeps its own fd
///     assert_eq!(b.size(), 8192);
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn import_dma_buf(ctx: &Arc<Context>, flags: u64, fd: BorrowedFd<'_>, size: usize) -> ClResult<Arc<Buffer>> {
    let flags = check_flags(flags)?;
    if size == 0 {
        return cl_err!(InvalidValue, "size is 0: nothing to import");
    }
    let owned = fd
        .try_clone_to_owned()
        .map_err(|e| ClError::new(ClErrorKind::InvalidValue, format!("the dma-buf fd cannot be duplicated: {e}")))?;
    let dma_buf = DmaBuf::from_fd(owned)
        .map_err(|e| ClError::new(ClErrorKind::InvalidValue, format!("the fd is not a dma-buf ({e})")))?;
    let exporter = dma_buf.exporter().unwrap_or_else(|| "unknown".into());
    let total = dma_buf.size().map_err(|e| {
        ClError::new(ClErrorKind::InvalidValue, format!("the size of the dma-buf (exporter {exporter}): {e}"))
    })?;
    let size = if size == IMPORT_MEMORY_WHOLE_ALLOCATION_ARM {
        usize::try_from(total).map_err(|_| {
            ClError::new(ClErrorKind::InvalidValue, format!("the {total}-byte dma-buf does not fit the address space"))
        })?
    } else {
        size
    };
    if size == 0 || size as u64 > total {
        return cl_err!(
            InvalidValue,
            "size {size} is larger than the dma-buf (exporter {exporter}): it holds {total} bytes"
        );
    }
    let mode = dma_buf
        .access_mode()
        .map_err(|e| ClError::new(ClErrorKind::InvalidOperation, format!("the access mode of the dma-buf: {e}")))?;
    if mode == Access::Write {
        return cl_err!(
            InvalidOperation,
            "the dma-buf (exporter {exporter}) was opened write-only (O_WRONLY): it cannot be mapped, so nothing \
             could use it"
        );
    }
    let read_only = mode == Access::Read;
    check_devices(ctx)?;
    // The CPU maps the dma-buf on its first access (an exporter's mmap may
    // set up every page at once: the import stays O(1) in the size).
    let map = dma_buf.map_lazily(size, mode).map_err(|e| {
        ClError::new(
            ClErrorKind::InvalidOperation,
            format!("mapping the dma-buf (exporter {exporter}) for the CPU failed: {e}"),
        )
    })?;
    let base = map.as_ptr() as usize;
    let mut keep: Vec<Mapping> = Vec::new();
    if ctx.devices().iter().any(|d| d.dma_domain().is_some()) {
        let what = format!("the dma-buf (exporter {exporter})");
        // Devices behind an IOMMU pin the pages now: they must be mapped.
        map.ensure().map_err(|e| {
            ClError::new(ClErrorKind::InvalidOperation, format!("mapping {what} for the CPU failed: {e}"))
        })?;
        // Hold the export table while pinning, so that the heap cannot hand
        // the recognised memfd pages back in between.
        let ex = exports();
        let own = match dma_buf.inode() {
            Ok(inode) => ex.as_ref().and_then(|m| m.get(&inode)).filter(|r| r.len >= size as u64),
            Err(_) => None,
        };
        match own {
            Some(r) => {
                let access = if read_only { Access::Read } else { Access::ReadWrite };
                // SAFETY: udmabuf exports only memfds sealed against
                // shrinking (F_SEAL_SHRINK), and the range lies inside the
                // export: the mapping cannot lose its pages.
                let pages = unsafe { Mapping::shared(r.memfd.as_fd(), r.offset, size, access) }.map_err(|e| {
                    ClError::new(ClErrorKind::OutOfResources, format!("mapping the memfd pages of {what}: {e}"))
                })?;
                // The record is forgotten before its memfd pages change, and
                // the table is held; the store evicts the residency before
                // the mappings drop, and reaches the bytes by raw pointers.
                // SAFETY: `pages` maps the very pages the dma-buf maps.
                unsafe { make_resident(ctx, base, size, pages.as_ptr() as usize, !read_only, &what) }?;
                keep.push(pages);
            }
            None => {
                drop(ex);
                // SAFETY: the pages pinned are the mapping's own; the store
                // evicts the residency before the mapping drops.
                unsafe { make_resident(ctx, base, size, base, !read_only, &what) }?;
            }
        }
    }
    drop(dma_buf); // the lazy map keeps its own fd
    let imported = Imported::new(Some(map), read_only, Box::new(keep));
    let flags = if read_only { read_only_flags(flags) } else { flags };
    let store = Store::new_imported(ctx, size, base, imported, ctx.devices());
    Ok(Buffer::imported(ctx, flags, size, store))
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
