//! dma-bufs as buffers (`CL_IMPORT_TYPE_DMA_BUF_ARM`); dmabridge's own
//! exports are recognised through the heap's export registry
//! (`memory::exports`), so that importing one of them finds its memfd pages.

use super::*;
use crate::sys::addr::HostAddr;

/// The number of dmabridge's exports an import can recognise.
///
/// No OpenCL function of its own: for tests (records go with their pages).
///
/// ```
/// let n = dmabridge::ext::arm_import::recognised_exports();
/// # let _ = n;
/// ```
pub fn recognised_exports() -> usize {
    exports::count()
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
    let (flags, size, store) = dma_buf_store(ctx, flags, fd, size, ctx.devices())?;
    Ok(Buffer::imported(ctx, flags, size, store))
}

/// The store of a dma-buf import for `devices` (those of the context that
/// will use it: only they must reach the memory, only they are made
/// resident and linked), with the flags and size its buffer reports:
/// [`import_dma_buf`]'s work (for every device of the context), shared with
/// `cl_khr_external_memory_dma_buf`, whose buffers keep more of their own.
pub(crate) fn dma_buf_store(
    ctx: &Arc<Context>,
    flags: u64,
    fd: BorrowedFd<'_>,
    size: usize,
    devices: &[Arc<Device>],
) -> ClResult<(u64, usize, Store)> {
    let flags = check_flags(flags)?;
    if size == 0 {
        return cl_err!(InvalidValue, "size is 0: nothing to import");
    }
    let owned = fd
        .try_clone_to_owned()
        .map_err(|e| ClError::new(ClErrorKind::InvalidValue, format!("the dma-buf fd cannot be duplicated: {e}")))?;
    let dma_buf = DmaBuf::from_fd(owned)
        .map_err(|e| ClError::new(ClErrorKind::InvalidValue, format!("the fd is not a dma-buf ({e})")))?;
    // The exporter's name is for messages, read only when one is made: it
    // takes a read of /proc/self/fdinfo (five system calls, each tens of
    // microseconds under TCG; reading it up front made an import + release
    // in the guest 1.5-2x as slow).
    let exporter = || dma_buf.exporter().unwrap_or_else(|| "unknown".into());
    let total = dma_buf.size().map_err(|e| {
        ClError::new(ClErrorKind::InvalidValue, format!("the size of the dma-buf (exporter {}): {e}", exporter()))
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
            "size {size} is larger than the dma-buf (exporter {}): it holds {total} bytes",
            exporter()
        );
    }
    let mode = dma_buf
        .access_mode()
        .map_err(|e| ClError::new(ClErrorKind::InvalidOperation, format!("the access mode of the dma-buf: {e}")))?;
    if mode == Access::Write {
        return cl_err!(
            InvalidOperation,
            "the dma-buf (exporter {}) was opened write-only (O_WRONLY): it cannot be mapped, so nothing \
             could use it",
            exporter()
        );
    }
    let read_only = mode == Access::Read;
    check_devices(devices)?;
    // The CPU maps the dma-buf on its first access (an exporter's mmap may
    // set up every page at once: the import stays O(1) in the size).
    let map = dma_buf.map_lazily(size, mode).map_err(|e| {
        ClError::new(
            ClErrorKind::InvalidOperation,
            format!("mapping the dma-buf (exporter {}) for the CPU failed: {e}", exporter()),
        )
    })?;
    let base = map.as_ptr() as usize;
    let mut keep: Vec<Mapping> = Vec::new();
    if devices.iter().any(|d| d.dma_domain().is_some()) {
        let what = format!("the dma-buf (exporter {})", exporter());
        // Devices behind an IOMMU pin the pages now: they must be mapped.
        map.ensure().map_err(|e| {
            ClError::new(ClErrorKind::InvalidOperation, format!("mapping {what} for the CPU failed: {e}"))
        })?;
        // Hold the export table while pinning, so that the heap cannot hand
        // the recognised memfd pages back in between.
        let ex = exports::lock();
        let own = ex.find(&dma_buf, size as u64);
        match own {
            Some(r) => {
                let access = if read_only { Access::Read } else { Access::ReadWrite };
                // SAFETY: udmabuf exports only memfds sealed against
                // shrinking (F_SEAL_SHRINK), and the range lies inside the
                // export: the mapping cannot lose its pages.
                let pages = unsafe { Mapping::shared(r.memfd(), r.offset(), size, access) }.map_err(|e| {
                    ClError::new(ClErrorKind::OutOfResources, format!("mapping the memfd pages of {what}: {e}"))
                })?;
                // The record is forgotten before its memfd pages change, and
                // the table is held; the store evicts the residency before
                // the mappings drop, and reaches the bytes by raw pointers.
                // SAFETY: `pages` maps the very pages the dma-buf maps.
                unsafe { make_resident(devices, base, size, pages.as_ptr() as usize, !read_only, &what) }?;
                keep.push(pages);
            }
            None => {
                drop(ex);
                // SAFETY: the pages pinned are the mapping's own; the store
                // evicts the residency before the mapping drops.
                unsafe { make_resident(devices, base, size, base, !read_only, &what) }?;
            }
        }
    }
    drop(dma_buf); // the lazy map keeps its own fd
    let imported = Imported::new(Some(map), Box::new(keep));
    let flags = if read_only { read_only_flags(flags) } else { flags };
    let store = Store::new_imported(ctx, size, HostAddr(base), imported, devices)
        .with_restrictions(Restrictions { no_write: read_only.then_some(READ_ONLY_DMA_BUF), ..Default::default() });
    Ok((flags, size, store))
}
