//! The enqueued commands of `cl_intel_unified_shared_memory` (seed 000):
//! fill, memcpy, migrate, advise, and the blocking free that waits for them.
//!
//! The CPU device reaches any host memory of the process, so the pointers of
//! fill and memcpy need not be USM allocations (shared system allocations,
//! SVM, another context's memory); that is also why those functions are
//! `unsafe`. Migration and advice are safe: their range must lie inside one
//! allocation of the queue's context, and a migration never acts on an
//! allocation freed before it ran.
//!
//! A fill or a copy of memory the context's heap exported as a dma-buf
//! (`clGetMemAllocDmaBufFdDMABRIDGE`) first waits for the fences other
//! drivers attached to the export
//! ([`Heap::export_fences`](crate::memory::heap::Heap::export_fences)), as
//! buffer commands do for a buffer's exports.

use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::ext::usm;
use crate::memory::heap::{AllocInfo, AllocKind};
use crate::runtime::context::{range_inside, Context};
use crate::runtime::event::{command_type, Event};
use crate::runtime::queue::{self, CommandUse, Queue, UsedRange};
use crate::runtime::{backend, transfer};
use crate::sys::access::Access;
use crate::sys::addr::HostAddr;

/// `cl_mem_migration_flags`.
pub mod migration {
    /// `CL_MIGRATE_MEM_OBJECT_HOST`: migrate to the host.
    pub const HOST: u64 = 1 << 0;
    /// `CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED`: the content need not move.
    pub const CONTENT_UNDEFINED: u64 = 1 << 1;
}

/// `clEnqueueMemFillINTEL`: fills `size` bytes at `dst` with `pattern`
/// repeated. The pattern is copied: the caller's slice may be reused at once.
///
/// Errors: `CL_INVALID_VALUE` if `dst` is NULL or not aligned to the pattern
/// size, if the pattern is empty, its size not a power of two or larger than
/// the largest vector type (128 bytes), or `size` not a multiple of it, or
/// if `[dst, dst + size)` runs past the end of the address space (no valid
/// range does); `CL_INVALID_CONTEXT` for a wait-list event of another
/// context.
///
/// # Safety
/// `dst` must stay valid for writes of `size` bytes until the command's
/// event completes, and nothing else may access those bytes meanwhile.
/// (Arguments the errors above refuse are refused before anything is
/// touched: passing them is safe.)
///
/// ```
/// use dmabridge::ext::{usm, usm_commands};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = usm::host_mem_alloc(&ctx, &[], 256, 0)?;
/// // SAFETY: `p` holds 256 bytes that nothing else touches until the fill completes.
/// let fill = unsafe { usm_commands::enqueue_mem_fill(&queue, p.as_ptr(), &[0xab; 4], 256, &[])? };
/// Event::wait(&[fill])?;
/// // SAFETY: the fill completed: the 256 bytes at `p` are initialised.
/// assert!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 256) }.iter().all(|&b| b == 0xab));
/// usm::mem_free(&ctx, p.as_ptr())?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_mem_fill(
    queue: &Arc<Queue>,
    dst: *mut u8,
    pattern: &[u8],
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { fill_as(queue, command_type::MEMFILL_INTEL, dst, pattern, size, wait_list) }
}

/// A fill command of `command_type` (USM or SVM fill), after the shape checks.
///
/// # Safety
/// As [`enqueue_mem_fill`].
pub(crate) unsafe fn fill_as(
    queue: &Arc<Queue>,
    command_type: u32,
    dst: *mut u8,
    pattern: &[u8],
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    check_fill(dst, pattern, size)?;
    let (dst, pattern) = (dst as usize, pattern.to_vec());
    let ctx = queue.context().clone();
    queue.enqueue_with_use(
        command_type,
        wait_list,
        false,
        CommandUse::range(HostAddr(dst), size),
        Box::new(move || {
            // The memory of a lost device is inert: refused, not filled.
            transfer::io::check_reachable(HostAddr(dst), size).map_err(|e| e.code())?;
            wait_export_fences(&ctx, dst, size, Access::Write)?;
            // SAFETY: the caller keeps `dst..dst + size` valid and unshared
            // until the event completes; the shape was checked above.
            unsafe { transfer::fill(dst as *mut u8, &pattern, size) };
            Ok(())
        }),
    )
}

/// Waits, through the thread's io_uring, for the fences other drivers
/// attached to the dma-bufs `ctx`'s heap exported of `[addr, addr + len)`
/// (a GPU or an encoder that imported one and still writes or reads it),
/// before a CPU access of `dir`. Nothing to wait for when that memory was
/// never exported. The error is a command status.
fn wait_export_fences(ctx: &Context, addr: usize, len: usize, dir: Access) -> Result<(), i32> {
    for fence in ctx.heap().export_fences(HostAddr(addr), len, dir) {
        crate::runtime::fence::wait_sync_file(&fence, || false)?;
    }
    Ok(())
}

/// The shape rules shared by `clEnqueueMemFillINTEL` and `clEnqueueSVMMemFill`.
pub(crate) fn check_fill(dst: *const u8, pattern: &[u8], size: usize) -> ClResult<()> {
    let p = pattern.len();
    if dst.is_null() {
        return cl_err!(InvalidValue, "dst_ptr is NULL");
    }
    if p == 0 {
        return cl_err!(InvalidValue, "pattern is NULL or empty");
    }
    if !p.is_power_of_two() || p > transfer::MAX_PATTERN {
        return cl_err!(
            InvalidValue,
            "pattern_size {p} is not a power of two up to {} (the largest vector type)",
            transfer::MAX_PATTERN
        );
    }
    if dst as usize % p != 0 {
        return cl_err!(InvalidValue, "dst_ptr {dst:?} is not aligned to pattern_size {p}");
    }
    if size % p != 0 {
        return cl_err!(InvalidValue, "size {size} is not a multiple of pattern_size {p}");
    }
    if (dst as usize).checked_add(size).is_none() {
        return cl_err!(InvalidValue, "dst_ptr {dst:?} + size {size} runs past the end of the address space");
    }
    Ok(())
}

/// `clEnqueueMemcpyINTEL`: copies `size` bytes from `src` to `dst`.
/// A blocking copy returns once the bytes are there; it runs on the calling
/// thread when the queue is idle.
///
/// Errors: `CL_INVALID_VALUE` if either pointer is NULL, or a range runs
/// past the end of the address space (no valid range does);
/// `CL_MEM_COPY_OVERLAP` if the ranges overlap; `CL_INVALID_CONTEXT` for a wait-list event of
/// another context; for a blocking copy whose wait list holds a failed event,
/// `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
///
/// # Safety
/// `dst` must stay valid for writes and `src` for reads of `size` bytes
/// until the command's event completes. (Arguments the errors above refuse
/// are refused before anything is touched: passing them is safe.)
///
/// ```
/// use dmabridge::ext::usm_commands;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let src = [1u8, 2, 3, 4];
/// let mut dst = [0u8; 4];
/// // SAFETY: both arrays outlive the blocking copy and do not overlap.
/// unsafe { usm_commands::enqueue_memcpy(&queue, true, dst.as_mut_ptr(), src.as_ptr(), 4, &[])? };
/// assert_eq!(dst, src);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_memcpy(
    queue: &Arc<Queue>,
    blocking: bool,
    dst: *mut u8,
    src: *const u8,
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { memcpy_as(queue, command_type::MEMCPY_INTEL, blocking, dst, src, size, wait_list) }
}

/// A copy command of `command_type` (USM or SVM memcpy).
///
/// # Safety
/// As [`enqueue_memcpy`].
pub(crate) unsafe fn memcpy_as(
    queue: &Arc<Queue>,
    command_type: u32,
    blocking: bool,
    dst: *mut u8,
    src: *const u8,
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    if dst.is_null() || src.is_null() {
        return cl_err!(InvalidValue, "{} is NULL", if dst.is_null() { "dst_ptr" } else { "src_ptr" });
    }
    if (dst as usize).checked_add(size).is_none() || (src as usize).checked_add(size).is_none() {
        return cl_err!(
            InvalidValue,
            "copying {size} bytes from {src:?} to {dst:?}: a range runs past the end of the address space"
        );
    }
    if transfer::overlaps(dst as usize, src as usize, size) {
        return cl_err!(MemCopyOverlap, "copying {size} bytes from {src:?} to {dst:?}: the ranges overlap");
    }
    let (d, s) = (dst as usize, src as usize);
    let device = queue.device().clone();
    let ctx = queue.context().clone();
    queue.enqueue_with_use(
        command_type,
        wait_list,
        blocking,
        CommandUse::Pair([UsedRange::new(HostAddr(d), size), UsedRange::new(HostAddr(s), size)]),
        Box::new(move || {
            wait_export_fences(&ctx, s, size, Access::Read)?;
            wait_export_fences(&ctx, d, size, Access::Write)?;
            // SAFETY: the caller keeps both ranges valid until the event
            // completes; they do not overlap (checked above). The queue's
            // device copies: memcpy on the CPU, DMA on a device with an engine.
            unsafe { backend::device_copy(&device, d as *mut u8, s as *const u8, size) }
        }),
    )
}

/// `clEnqueueMigrateMemINTEL`: a hint. On the CPU device, migrating to the
/// device or the host faults the pages in now (`MADV_POPULATE_WRITE`);
/// with `CONTENT_UNDEFINED` the whole pages inside the range are dropped
/// instead (they read as zeros). The range must lie inside one allocation
/// of the queue's context (a USM allocation, or an SVM one: SVM allocations
/// are shared allocations here, as `clGetMemAllocInfoINTEL` reports), and
/// nothing outside that allocation's pages is touched: populating expands
/// the range to whole pages (the granularity seed 000 allows), dropping
/// shrinks it to them, so that neighbours sharing a page never lose data.
/// A size of 0 migrates nothing (the pointer must still point into an
/// allocation). If the allocation is freed before the command runs
/// (`clMemFreeINTEL` does not wait), the command does nothing: it never
/// acts on memory that changed hands. On a device with an IOMMU domain
/// (edu), migrating to the device (no `HOST` flag) also makes the whole USM
/// allocation resident there (pinned and mapped, as [`usm::device_address`]
/// then reports); it stays resident until it is freed (`clMemFreeINTEL`,
/// `clMemBlockingFreeINTEL`) or its context is released, and migrating it
/// to the host does not evict it. Resident pages are never dropped
/// (`CONTENT_UNDEFINED` then only populates). SVM allocations and
/// allocations in a device's local memory are not made resident (the
/// latter are not migrated at all). If making it resident fails, the event
/// ends with `CL_OUT_OF_RESOURCES` (or `CL_INVALID_VALUE` for memory VFIO
/// cannot pin).
///
/// Errors: `CL_INVALID_VALUE` if `flags` is zero or has bits other than
/// `HOST` and `CONTENT_UNDEFINED`, if `ptr` is NULL, or if `[ptr, ptr + size)`
/// is not inside one allocation of the context (another context's
/// allocations and plain host memory included; the seed leaves which `ptr`
/// and `size` are invalid open, and a hint that may drop content must not
/// reach memory the application did not allocate here);
/// `CL_INVALID_CONTEXT` for a wait-list event of another context.
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::{usm, usm_commands::{self, migration}};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = usm::shared_mem_alloc(&ctx, Some(cpu), &[], 8192, 0)?;
/// let ev = usm_commands::enqueue_migrate_mem(&queue, p.as_ptr(), 8192, migration::HOST, &[])?;
/// Event::wait(&[ev])?;
/// // One byte too many: the range leaves the allocation.
/// let err = usm_commands::enqueue_migrate_mem(&queue, p.as_ptr(), 8193, migration::HOST, &[]).unwrap_err();
/// assert_eq!(err.kind, ClErrorKind::InvalidValue);
/// usm::mem_free(&ctx, p.as_ptr())?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_migrate_mem(
    queue: &Arc<Queue>,
    ptr: *const u8,
    size: usize,
    flags: u64,
    wait_list: &[Event],
) -> ClResult<Event> {
    let all = migration::HOST | migration::CONTENT_UNDEFINED;
    if flags == 0 || flags & !all != 0 {
        return cl_err!(
            InvalidValue,
            "migration flags {flags:#x}: must be a non-zero combination of HOST (1) and CONTENT_UNDEFINED (2)"
        );
    }
    if ptr.is_null() {
        return cl_err!(InvalidValue, "ptr is NULL");
    }
    let ctx = queue.context().clone();
    let p = ptr as usize;
    let Some(claim) = ctx.claim_range(HostAddr(p), size) else {
        return not_inside("clEnqueueMigrateMemINTEL", ptr, size);
    };
    let drop_content = flags & migration::CONTENT_UNDEFINED != 0;
    // To a device with an IOMMU domain (edu): the allocation becomes resident.
    let domain = queue.device().dma_domain().filter(|_| flags & migration::HOST == 0);
    queue.enqueue_with_use(
        command_type::MIGRATEMEM_INTEL,
        wait_list,
        false,
        CommandUse::range(HostAddr(p), size),
        Box::new(move || {
            if !claim.in_heap {
                // A device's local memory (a BAR device): already there.
                return Ok(());
            }
            let ran = claim.run(|info| {
                migrate(info, HostAddr(p), size, drop_content);
                match domain {
                    Some(domain) => backend::residency::keep_resident(&ctx, &domain, info).map(drop).map_err(|e| {
                        log::warn!("clEnqueueMigrateMemINTEL of {p:#x}: {e}");
                        e.code()
                    }),
                    None => Ok(()),
                }
            });
            // Freed before the command ran: nothing to migrate.
            ran.unwrap_or(Ok(()))
        }),
    )
}

/// The `CL_INVALID_VALUE` of a range that is not inside one allocation of
/// the context.
fn not_inside<T>(what: &str, ptr: *const u8, size: usize) -> ClResult<T> {
    cl_err!(InvalidValue, "{what}: [{ptr:?}, +{size}) is not inside one allocation of the command queue's context")
}

/// Migrates `[p, p + size)`, which lies inside the heap allocation `info`
/// (the caller checked, and holds a claim on it): populates the pages the
/// range touches, or, with `drop_content`, drops the whole pages inside it.
pub(crate) fn migrate(info: &AllocInfo, p: HostAddr, size: usize, drop_content: bool) {
    debug_assert!(crate::runtime::context::range_inside(info, p, size));
    if size == 0 {
        return;
    }
    let page = crate::sys::page_size();
    // Inside the allocation, so no overflow: its end is a heap address.
    let (p, end) = (p.0, (p + size).0);
    // Pages pinned in an IOMMU domain must keep their backing: dropping them
    // would leave the device on the old pages and the CPU on new ones.
    let resident = || {
        crate::runtime::platform::Platform::get()
            .dma_domain()
            .is_some_and(|d| d.resident_iova(HostAddr(p), size).is_some())
    };
    if drop_content && !resident() {
        // Only whole pages inside the range: the rest of a page the range
        // shares may hold other data.
        let (start, end) = (p.next_multiple_of(page), end / page * page);
        if end > start {
            // MADV_REMOVE on the heap's shared memfd mapping hands the pages
            // back (they read as zeros); the claim keeps the allocation alive.
            // SAFETY: the pages lie inside a live heap allocation whose
            // content the caller declared undefined.
            let _ = unsafe { rustix::mm::madvise(start as *mut _, end - start, rustix::mm::Advice::LinuxRemove) };
        }
    } else {
        // The pages the range touches: they belong to the heap mapping (an
        // allocation's pages never leave its granules).
        let (start, end) = (p / page * page, end.next_multiple_of(page));
        // SAFETY: populating only faults pages in (writes nothing); on
        // memory that is not mapped writable the kernel refuses with an
        // error, which a hint may ignore.
        let _ = unsafe { rustix::mm::madvise(start as *mut _, end - start, rustix::mm::Advice::LinuxPopulateWrite) };
    }
}

/// `clEnqueueMemAdviseINTEL`. `advice` is a bit-field of hints;
/// `CL/cl_ext.h` defines no hint values and the devices support none, so
/// any non-zero advice is `CL_INVALID_VALUE`. An empty set of hints (0, "allow zero memory advice" in
/// seed 000's revision Q) is accepted: the command does nothing, and its
/// event completes as any other.
///
/// Errors: `CL_INVALID_CONTEXT` for a wait-list event of another context;
/// `CL_INVALID_VALUE` if `[ptr, ptr + size)` is not inside one allocation
/// of the context (as [`enqueue_migrate_mem`]), or for non-zero advice.
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::{usm, usm_commands};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = usm::shared_mem_alloc(&ctx, Some(cpu), &[], 4096, 0)?;
/// // No hints: nothing to do.
/// let ev = usm_commands::enqueue_mem_advise(&queue, p.as_ptr(), 4096, 0, &[])?;
/// Event::wait(&[ev])?;
/// let err = usm_commands::enqueue_mem_advise(&queue, p.as_ptr(), 4096, 1, &[]).unwrap_err();
/// assert_eq!(err.kind, ClErrorKind::InvalidValue);
/// usm::mem_free(&ctx, p.as_ptr())?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_mem_advise(
    queue: &Arc<Queue>,
    ptr: *const u8,
    size: usize,
    advice: u32,
    wait_list: &[Event],
) -> ClResult<Event> {
    queue::check_wait_list(queue.context(), wait_list)?;
    let p = ptr as usize;
    if !queue.context().lookup(HostAddr(p)).is_some_and(|info| range_inside(&info, HostAddr(p), size)) {
        return not_inside("clEnqueueMemAdviseINTEL", ptr, size);
    }
    if advice != 0 {
        return cl_err!(
            InvalidValue,
            "memory advice {advice:#x} is not supported by device {:?} (no advice values are defined)",
            queue.device().name
        );
    }
    queue.enqueue_with_use(
        command_type::MEMADVISE_INTEL,
        wait_list,
        false,
        CommandUse::range(HostAddr(p), size),
        Box::new(|| Ok(())),
    )
}

/// `clMemBlockingFreeINTEL`: waits for every enqueued command, on every
/// queue of the context, that may use the allocation (a kernel with
/// indirect access counts as using every allocation of the flagged types;
/// SVM allocations count as shared), then frees it, evicting it from any
/// IOMMU domain it is resident in. Errors as [`usm::mem_free`], found
/// before waiting: an SVM allocation, an interior or unknown pointer is
/// refused at once.
///
/// ```
/// use dmabridge::ext::{usm, usm_commands};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = usm::host_mem_alloc(&ctx, &[], 1024, 0)?;
/// // SAFETY: `p` holds 1024 bytes that only the fill touches until it is freed below.
/// unsafe { usm_commands::enqueue_mem_fill(&queue, p.as_ptr(), &[0u8; 8], 1024, &[])? };
/// // Waits for the fill, then frees.
/// usm_commands::mem_blocking_free(&ctx, p.as_ptr())?;
/// assert_eq!(queue.pending_commands(), 0);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn mem_blocking_free(ctx: &Arc<Context>, ptr: *mut u8) -> ClResult<()> {
    if ptr.is_null() {
        return Ok(());
    }
    let usm = ctx.lookup(HostAddr::of(ptr)).filter(|i| i.base == HostAddr::of(ptr) && i.meta.kind != AllocKind::Svm);
    let Some(info) = usm else {
        // Not a USM allocation of the context: refused, without waiting.
        return usm::mem_free(ctx, ptr);
    };
    queue::wait_for_context_commands_using(ctx, |u| u.touches_alloc(info.base, info.size, info.meta.kind));
    usm::mem_free(ctx, ptr)
}
