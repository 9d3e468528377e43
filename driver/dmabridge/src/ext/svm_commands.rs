//! The SVM enqueue commands (OpenCL 3.0, used with seed 001's allocations):
//! free with a callback, memcpy, memfill, map, unmap and migrate.
//!
//! On the CPU device SVM is host memory, coherent for coarse and fine grain
//! alike: map and unmap only order the host's access with the queue (their
//! events), and migration faults pages in or drops them as USM's does.

use crate::sys::addr::HostAddr;
use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::ext::svm;
use crate::ext::usm_commands::{self, migration};
use crate::memory::heap::AllocKind;
use crate::runtime::event::{command_type, Event};
use crate::runtime::queue::{CommandUse, Queue, UsedRange};

/// `cl_map_flags`.
pub mod map_flags {
    /// `CL_MAP_READ`.
    pub const READ: u64 = 1 << 0;
    /// `CL_MAP_WRITE`.
    pub const WRITE: u64 = 1 << 1;
    /// `CL_MAP_WRITE_INVALIDATE_REGION`.
    pub const WRITE_INVALIDATE_REGION: u64 = 1 << 2;
}

/// The callback of [`enqueue_svm_free`]: receives the queue and the pointers,
/// and owns freeing them (`pfn_free_func`).
pub type SvmFreeCallback = Box<dyn FnOnce(&Arc<Queue>, &[*mut u8]) + Send>;

/// `clEnqueueSVMFree`: once the wait list is done, hands `pointers` to
/// `callback`, or frees them with `clSVMFree` when there is none.
///
/// An empty list is a valid command that frees nothing (OpenCL 2.1 and later
/// refuse only a count without a list or a list without a count, which is
/// the C face's check); a callback still runs, with no pointer.
///
/// Errors: `CL_INVALID_CONTEXT` for a wait-list event of another context.
///
/// ```
/// use dmabridge::ext::{svm, svm_commands};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = svm::svm_alloc(&ctx, svm::flags::READ_WRITE, 4096, 0)?;
/// // No callback: the pointers are freed with `clSVMFree`.
/// let free = svm_commands::enqueue_svm_free(&queue, &[p.as_ptr()], None, &[])?;
/// Event::wait(&[free])?;
/// assert_eq!(svm::svm_flags(&ctx, p.as_ptr()), None);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_svm_free(
    queue: &Arc<Queue>,
    pointers: &[*mut u8],
    callback: Option<SvmFreeCallback>,
    wait_list: &[Event],
) -> ClResult<Event> {
    let ptrs: Vec<usize> = pointers.iter().map(|&p| p as usize).collect();
    let usage = CommandUse::Ranges(ptrs.iter().map(|&p| UsedRange::new(HostAddr(p), 1)).collect());
    let weak = Arc::downgrade(queue);
    let ctx = queue.context().clone();
    queue.enqueue_with_use(
        command_type::SVM_FREE,
        wait_list,
        false,
        usage,
        Box::new(move || {
            let raw: Vec<*mut u8> = ptrs.iter().map(|&p| p as *mut u8).collect();
            match (callback, weak.upgrade()) {
                (Some(f), Some(q)) => f(&q, &raw),
                _ => {
                    for p in raw {
                        svm::svm_free(&ctx, p);
                    }
                }
            }
            Ok(())
        }),
    )
}

/// `clEnqueueSVMMemcpy`: as [`usm_commands::enqueue_memcpy`], with
/// `CL_COMMAND_SVM_MEMCPY`.
///
/// # Safety
/// As [`usm_commands::enqueue_memcpy`].
///
/// ```
/// use dmabridge::ext::{svm, svm_commands};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = svm::svm_alloc(&ctx, svm::flags::READ_WRITE, 64, 0)?;
/// let src = [7u8; 64];
/// // SAFETY: `p` holds 64 bytes, `src` outlives the blocking copy, and they do not overlap.
/// unsafe { svm_commands::enqueue_svm_memcpy(&queue, true, p.as_ptr(), src.as_ptr(), 64, &[])? };
/// // SAFETY: the copy completed: the 64 bytes at `p` are initialised.
/// assert_eq!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 64) }, &src[..]);
/// svm::svm_free(&ctx, p.as_ptr());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_svm_memcpy(
    queue: &Arc<Queue>,
    blocking: bool,
    dst: *mut u8,
    src: *const u8,
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { usm_commands::memcpy_as(queue, command_type::SVM_MEMCPY, blocking, dst, src, size, wait_list) }
}

/// `clEnqueueSVMMemFill`: the fill rules of [`usm_commands::enqueue_mem_fill`]
/// (pattern a power of two up to 128 bytes, `svm_ptr` aligned to it, `size`
/// a multiple of it), with `CL_COMMAND_SVM_MEMFILL`.
///
/// # Safety
/// As [`usm_commands::enqueue_mem_fill`].
///
/// ```
/// use dmabridge::ext::{svm, svm_commands};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = svm::svm_alloc(&ctx, svm::flags::READ_WRITE, 128, 0)?;
/// // SAFETY: `p` holds 128 bytes that nothing else touches until the fill completes.
/// let fill = unsafe { svm_commands::enqueue_svm_mem_fill(&queue, p.as_ptr(), &[1, 2], 128, &[])? };
/// Event::wait(&[fill])?;
/// // SAFETY: the fill completed: the 128 bytes at `p` are initialised.
/// assert_eq!(unsafe { std::slice::from_raw_parts(p.as_ptr(), 4) }, &[1, 2, 1, 2]);
/// svm::svm_free(&ctx, p.as_ptr());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_svm_mem_fill(
    queue: &Arc<Queue>,
    svm_ptr: *mut u8,
    pattern: &[u8],
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { usm_commands::fill_as(queue, command_type::SVM_MEMFILL, svm_ptr, pattern, size, wait_list) }
}

/// `clEnqueueSVMMap`: after it completes the host may access
/// `[svm_ptr, svm_ptr + size)` as `flags` says.
///
/// Errors: `CL_INVALID_VALUE` if `svm_ptr` is NULL, `size` is 0, or `flags`
/// has bits other than READ/WRITE/WRITE_INVALIDATE_REGION or combines
/// WRITE_INVALIDATE_REGION with READ or WRITE; a blocking map after a failed
/// wait-list event: `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
///
/// ```
/// use dmabridge::ext::svm;
/// use dmabridge::ext::svm_commands::{self, map_flags};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = svm::svm_alloc(&ctx, svm::flags::READ_WRITE, 16, 0)?;
/// svm_commands::enqueue_svm_map(&queue, true, map_flags::WRITE, p.as_ptr(), 16, &[])?;
/// // SAFETY: `p` holds 16 bytes, mapped for writing by the host.
/// unsafe { p.as_ptr().write_bytes(1, 16) };
/// let unmap = svm_commands::enqueue_svm_unmap(&queue, p.as_ptr(), &[])?;
/// Event::wait(&[unmap])?;
/// svm::svm_free(&ctx, p.as_ptr());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_svm_map(
    queue: &Arc<Queue>,
    blocking: bool,
    flags: u64,
    svm_ptr: *mut u8,
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    use map_flags::*;
    if svm_ptr.is_null() || size == 0 {
        return cl_err!(InvalidValue, "{}", if svm_ptr.is_null() { "svm_ptr is NULL" } else { "size is 0" });
    }
    if flags & !(READ | WRITE | WRITE_INVALIDATE_REGION) != 0
        || (flags & WRITE_INVALIDATE_REGION != 0 && flags & (READ | WRITE) != 0)
    {
        return cl_err!(InvalidValue, "map flags {flags:#x}: READ|WRITE, or WRITE_INVALIDATE_REGION alone");
    }
    let usage = CommandUse::range(HostAddr::of(svm_ptr), size);
    queue.enqueue_with_use(command_type::SVM_MAP, wait_list, blocking, usage, Box::new(|| Ok(())))
}

/// `clEnqueueSVMUnmap`: ends the host's access begun by a map.
/// Errors: `CL_INVALID_VALUE` if `svm_ptr` is NULL.
///
/// ```
/// use dmabridge::ext::svm;
/// use dmabridge::ext::svm_commands::{self, map_flags};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = svm::svm_alloc(&ctx, svm::flags::READ_WRITE, 16, 0)?;
/// let map = svm_commands::enqueue_svm_map(&queue, false, map_flags::READ, p.as_ptr(), 16, &[])?;
/// let unmap = svm_commands::enqueue_svm_unmap(&queue, p.as_ptr(), &[map])?;
/// Event::wait(&[unmap])?;
/// svm::svm_free(&ctx, p.as_ptr());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_svm_unmap(queue: &Arc<Queue>, svm_ptr: *mut u8, wait_list: &[Event]) -> ClResult<Event> {
    if svm_ptr.is_null() {
        return cl_err!(InvalidValue, "svm_ptr is NULL");
    }
    let usage = CommandUse::range(HostAddr::of(svm_ptr), 1);
    queue.enqueue_with_use(command_type::SVM_UNMAP, wait_list, false, usage, Box::new(|| Ok(())))
}

/// `clEnqueueSVMMigrateMem`: migrates each `(pointer, size)` range (a size of
/// 0, or no `sizes` at all, means the whole allocation the pointer is in).
///
/// Errors: `CL_INVALID_VALUE` if the list is empty, a pointer is NULL, a
/// range is not inside one SVM allocation of the context (a USM allocation,
/// another context's SVM allocation, or a range running past the end of its
/// allocation or of the address space), `sizes` has another length than
/// `pointers`, or `flags` has bits other than HOST and CONTENT_UNDEFINED.
/// Nothing outside the ranges' allocations is touched, and an allocation
/// freed before the command runs is left alone.
///
/// ```
/// use dmabridge::ext::{svm, svm_commands, usm_commands::migration};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let p = svm::svm_alloc(&ctx, svm::flags::READ_WRITE, 8192, 0)?;
/// // A size of 0 (here: no sizes at all) migrates the whole allocation.
/// let ev = svm_commands::enqueue_svm_migrate_mem(&queue, &[p.as_ptr().cast_const()], None, migration::HOST, &[])?;
/// Event::wait(&[ev])?;
/// svm::svm_free(&ctx, p.as_ptr());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_svm_migrate_mem(
    queue: &Arc<Queue>,
    pointers: &[*const u8],
    sizes: Option<&[usize]>,
    flags: u64,
    wait_list: &[Event],
) -> ClResult<Event> {
    if pointers.is_empty() {
        return cl_err!(InvalidValue, "num_svm_pointers is 0");
    }
    if sizes.is_some_and(|s| s.len() != pointers.len()) {
        return cl_err!(InvalidValue, "sizes has another length than svm_pointers");
    }
    if flags & !(migration::HOST | migration::CONTENT_UNDEFINED) != 0 {
        return cl_err!(InvalidValue, "migration flags {flags:#x}: only HOST (1) and CONTENT_UNDEFINED (2)");
    }
    let ctx = queue.context().clone();
    let mut claims = Vec::with_capacity(pointers.len());
    for (i, &p) in pointers.iter().enumerate() {
        if p.is_null() {
            return cl_err!(InvalidValue, "svm_pointers[{i}] is NULL");
        }
        let info = ctx.heap().lookup(HostAddr::of(p)).filter(|a| a.meta.kind == AllocKind::Svm);
        let Some(info) = info else {
            return cl_err!(InvalidValue, "svm_pointers[{i}] ({p:?}) is not inside an SVM allocation of the context");
        };
        let size = sizes.map_or(0, |s| s[i]);
        let (start, len) = if size == 0 { (info.base, info.size) } else { (HostAddr::of(p), size) };
        // Claimed (checked again under the claim lock), so that a free
        // before the command runs keeps it off the pages.
        let claim = ctx.claim_range(start, len).filter(|c| c.info.meta.kind == AllocKind::Svm && c.in_heap);
        let Some(claim) = claim else {
            return cl_err!(
                InvalidValue,
                "svm_pointers[{i}] ({p:?}) + sizes[{i}] ({size}) runs past the end of its {}-byte SVM allocation at {:#x}",
                info.size,
                info.base
            );
        };
        claims.push((claim, start, len));
    }
    let usage = CommandUse::Ranges(claims.iter().map(|&(_, start, len)| UsedRange::new(start, len)).collect());
    queue.enqueue_with_use(
        command_type::MIGRATE_SVM_MEM_OBJECTS,
        wait_list,
        false,
        usage,
        Box::new(move || {
            for (claim, start, len) in claims {
                // Freed before the command ran: left alone.
                claim.run(|info| usm_commands::migrate(info, start, len, flags & migration::CONTENT_UNDEFINED != 0));
            }
            Ok(())
        }),
    )
}
