//! Host memory as a buffer (`CL_IMPORT_TYPE_HOST_ARM`): the live host
//! imports, the pages they pin, and the page-sharing rule between them.

use super::*;
use crate::sys::addr::HostAddr;
use crate::sys::fork;

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

/// [`HOST_IMPORTS`], held in a process-wide section (see `sys::fork`).
fn host_imports() -> fork::Guarded<MutexGuard<'static, BTreeMap<u64, HostSpan>>> {
    fork::guarded(|| sync::lock(&HOST_IMPORTS))
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
    check_devices(ctx.devices())?;
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
    unsafe { make_resident(ctx.devices(), addr, size, addr, !read_only, &what) }?;
    let imported = Imported::new(None, Box::new(pin));
    let flags = if read_only { read_only_flags(flags) } else { flags };
    let store = Store::new_imported(ctx, size, HostAddr(addr), imported, ctx.devices())
        .with_restrictions(Restrictions { no_write: read_only.then_some(READ_ONLY_HOST_MEMORY), ..Default::default() });
    Ok(Buffer::imported(ctx, flags, size, store))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A child forked while another thread held the registry takes it at
    /// once (see `sys::fork`): without the fork handler it waited forever.
    #[test]
    fn a_forked_child_takes_the_registry_another_thread_held() {
        crate::sys::forked::a_child_takes_what_another_thread_held(
            "ext::arm_import::host::tests::a_forked_child_takes_the_registry_another_thread_held",
            &[("host imports", || Box::new(host_imports()))],
        );
    }
}
