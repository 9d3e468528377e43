//! `cl_khr_external_memory` + `cl_khr_external_memory_dma_buf`: a dma-buf
//! as a buffer through `clCreateBufferWithProperties`
//! (`CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`, its value the fd), and the
//! acquire/release bracket around OpenCL's use of it.
//!
//! **Import.** The import path of `cl_arm_import_memory`
//! ([`arm_import::import_dma_buf`]): zero copy, the dma-buf's own mapping is
//! the storage, the same reachability rules per device and the same refusal
//! (`CL_INVALID_OPERATION`) where a device could only use a copy. The fd is
//! duplicated (the caller may close it). `size` bytes from the dma-buf's
//! start are the buffer: 0 is `CL_INVALID_BUFFER_SIZE` (the core rule), more
//! than the dma-buf holds `CL_INVALID_VALUE`. A host pointer is
//! `CL_INVALID_HOST_PTR`, a host-pointer flag `CL_INVALID_VALUE`: the memory
//! is the dma-buf's. `CL_MEM_DEVICE_HANDLE_LIST_KHR` names the devices that
//! use it (devices of the context: else `CL_INVALID_DEVICE`); without a
//! handle it is `CL_INVALID_PROPERTY` (nothing to import for them: the text
//! is silent, OpenCL-Docs issue 916 leans this way). Only the listed devices
//! must reach the memory: a device of the context that is not listed is
//! neither asked nor made resident (edu need not pin a dma-buf imported for
//! the CPU device alone), and its queues' commands on the buffer answer
//! `CL_INVALID_COMMAND_QUEUE`.
//!
//! **Acquire and release.** Khronos settled that between acquire and
//! release every access goes through OpenCL (OpenCL-Docs 1308, PR 1335):
//! [`enqueue_acquire`] waits for the fences other drivers attached to the
//! dma-buf (through the queue worker's io_uring, see
//! [`runtime::fence`](crate::runtime::fence)) and begins CPU access
//! (`DMA_BUF_IOCTL_SYNC` start, read-write or read for a read-only dma-buf);
//! [`enqueue_release`] ends it. Use outside the bracket is undefined in the
//! text ("Behavior is undefined if a memory object created from an external
//! memory handle is used by an OpenCL command queued to a command-queue
//! without being acquired"); dmabridge refuses it when the command is
//! enqueued, with `CL_INVALID_OPERATION`: a command that uses the buffer
//! before its acquire or after its release (the store's bracket, which
//! every buffer command asks), acquiring a buffer already acquired, and
//! releasing one not acquired. Errors of both: `CL_INVALID_VALUE` for no
//! buffer, `CL_INVALID_MEM_OBJECT` for a buffer not made from an external
//! handle, `CL_INVALID_CONTEXT` for a buffer or event of another context,
//! `CL_INVALID_COMMAND_QUEUE` for a queue whose device is not in the
//! buffer's device list.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use super::device_list;
use crate::cl_err;
use crate::error::ClResult;
use crate::ext::arm_import;
use crate::runtime::buffer::bracket::Bracket;
use crate::runtime::buffer::{mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::event::Event;
use crate::runtime::queue::{check_wait_list, Queue};
use crate::sys::access::Access;

/// `CL_COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR`.
pub const COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR: u32 = 0x2047;
/// `CL_COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR`.
pub const COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR: u32 = 0x2048;

/// The properties of `clCreateBufferWithProperties` this extension reads.
#[derive(Debug, Default)]
pub struct MemProperties<'a> {
    /// `CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR`: the dma-buf.
    pub dma_buf: Option<BorrowedFd<'a>>,
    /// `CL_MEM_DEVICE_HANDLE_LIST_KHR`: the devices that use it.
    pub devices: Option<Vec<Arc<Device>>>,
}

/// What the extension keeps of one of its buffers (a field of the buffer);
/// the bracket's state and the devices are the store's ([`Bracket`]), which
/// the runtime's commands ask.
#[derive(Debug)]
struct External {
    /// The direction of the CPU access the bracket holds.
    dir: Access,
}

/// True if `buffer` was made from an external memory handle.
///
/// No OpenCL function of its own.
///
/// ```
/// use dmabridge::ext::khr_external::memory;
/// use dmabridge::runtime::{buffer::Buffer, context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// assert!(!memory::is_external(&b));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn is_external(buffer: &Buffer) -> bool {
    buffer.extension::<External>().is_some()
}

/// The devices that use an external buffer (`CL_MEM_DEVICE_HANDLE_LIST_KHR`,
/// or every device of its context), `None` for another buffer.
///
/// No OpenCL function of its own: what the C face answers for the
/// property.
pub fn devices(buffer: &Buffer) -> Option<Vec<Arc<Device>>> {
    buffer.extension::<External>()?;
    buffer.store().bracket().map(|b| b.devices().to_vec())
}

/// `clCreateBufferWithProperties` with the properties of
/// `cl_khr_external_memory`: with a dma-buf, its import (see the module);
/// without, [`crate::ext::create_buffer`].
///
/// Errors: see the module; then those of the import
/// ([`arm_import::import_dma_buf`]) or of `ext::create_buffer`.
///
/// # Safety
/// Without a dma-buf, `ext::create_buffer`'s (the host pointer); with one,
/// none (a host pointer is refused).
///
/// ```
/// use dmabridge::ext::khr_external::memory::{self, MemProperties};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::sys::memfd::Memfd;
/// use std::os::fd::AsFd;
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let memfd = Memfd::create(c"not-a-dma-buf", 4096)?;
/// let props = MemProperties { dma_buf: Some(memfd.as_fd()), devices: None };
/// // SAFETY: no host pointer.
/// let err = unsafe { memory::create_buffer_with_properties(&ctx, &props, 0, 4096, std::ptr::null_mut()) }.unwrap_err();
/// assert_eq!(err.code(), dmabridge::error::code::INVALID_VALUE);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub unsafe fn create_buffer_with_properties(
    ctx: &Arc<Context>,
    props: &MemProperties<'_>,
    flags: u64,
    size: usize,
    host_ptr: *mut u8,
) -> ClResult<Arc<Buffer>> {
    let Some(fd) = props.dma_buf else {
        if props.devices.is_some() {
            return cl_err!(
                InvalidProperty,
                "CL_MEM_DEVICE_HANDLE_LIST_KHR is given without CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR: the list names \
                 the devices that use imported memory, and nothing is imported"
            );
        }
        // SAFETY: forwarded to the caller.
        return unsafe { crate::ext::create_buffer(ctx, flags, size, host_ptr) };
    };
    let devices = device_list(ctx, props.devices.as_deref(), "buffer")?;
    if !host_ptr.is_null() {
        return cl_err!(InvalidHostPtr, "host_ptr is not NULL: an imported dma-buf is its own memory");
    }
    if flags & mem_flags::HOST_PTR != 0 {
        return cl_err!(
            InvalidValue,
            "flags {flags:#x} have CL_MEM_USE_HOST_PTR, CL_MEM_ALLOC_HOST_PTR or CL_MEM_COPY_HOST_PTR: an imported \
             dma-buf is its own memory"
        );
    }
    if size == 0 {
        return cl_err!(InvalidBufferSize, "size is 0: give how many bytes of the dma-buf the buffer holds");
    }
    let (flags, size, store) = arm_import::dma_buf_store(ctx, flags, fd, size, &devices)?;
    let dir = if store.read_only() { Access::Read } else { Access::ReadWrite };
    let store = store.with_bracket(Bracket::new(devices));
    Ok(Buffer::around_store(ctx, flags, size, Arc::new(store), Some(Arc::new(External { dir }))))
}

/// The checks of both commands, and the buffers' bracket state moved to
/// `acquire` (refused if one is already there).
fn checked(
    queue: &Queue,
    buffers: &[Arc<Buffer>],
    wait_list: &[Event],
    acquire: bool,
) -> ClResult<Vec<(Arc<Buffer>, Arc<External>)>> {
    let name = if acquire { "clEnqueueAcquireExternalMemObjectsKHR" } else { "clEnqueueReleaseExternalMemObjectsKHR" };
    if buffers.is_empty() {
        return cl_err!(InvalidValue, "{name}: no memory object given");
    }
    let mut out = Vec::with_capacity(buffers.len());
    for (i, b) in buffers.iter().enumerate() {
        let Some(ext) = b.extension::<External>() else {
            return cl_err!(
                InvalidMemObject,
                "{name}: memory object {i} was not created from an external memory handle \
                 (clCreateBufferWithProperties with CL_EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR)"
            );
        };
        if !Arc::ptr_eq(b.context(), queue.context()) {
            return cl_err!(
                InvalidContext,
                "{name}: memory object {i} and the command queue belong to different contexts"
            );
        }
        let Some(bracket) = b.store().bracket() else {
            return cl_err!(InvalidMemObject, "{name}: memory object {i} has no acquire/release bracket");
        };
        if !bracket.allows(queue.device()) {
            return cl_err!(
                InvalidCommandQueue,
                "{name}: the queue's device {:?} is not in memory object {i}'s CL_MEM_DEVICE_HANDLE_LIST_KHR",
                queue.device().name
            );
        }
        out.push((b.clone(), ext));
    }
    check_wait_list(queue.context(), wait_list)?;
    // All or nothing: check every state before changing any. A buffer
    // named twice (or a sub-buffer beside its parent: one store) is locked
    // once.
    let mut brackets: Vec<(usize, &Bracket)> = Vec::with_capacity(out.len());
    for (i, bracket) in out.iter().enumerate().filter_map(|(i, (b, _))| Some((i, b.store().bracket()?))) {
        if !brackets.iter().any(|(_, seen)| std::ptr::eq(*seen, bracket)) {
            brackets.push((i, bracket));
        }
    }
    let mut states: Vec<_> = brackets.iter().map(|(i, b)| (*i, b.state())).collect();
    if let Some(&(i, _)) = states.iter().find(|(_, s)| **s == acquire) {
        return match acquire {
            true => cl_err!(
                InvalidOperation,
                "{name}: memory object {i} is acquired already: release it (clEnqueueReleaseExternalMemObjectsKHR) \
                 before acquiring it again"
            ),
            false => cl_err!(
                InvalidOperation,
                "{name}: memory object {i} is not acquired: acquire it (clEnqueueAcquireExternalMemObjectsKHR) \
                 before the commands that use it, and release it after them"
            ),
        };
    }
    for (_, s) in &mut states {
        **s = acquire;
    }
    drop(states);
    Ok(out)
}

/// Undoes the bracket state `checked` set, when the enqueue failed.
fn undo(buffers: &[(Arc<Buffer>, Arc<External>)], acquire: bool) {
    for bracket in buffers.iter().filter_map(|(b, _)| b.store().bracket()) {
        *bracket.state() = !acquire;
    }
}

/// `clEnqueueAcquireExternalMemObjectsKHR`: the command waits for the
/// fences other drivers attached to each dma-buf (the commands after it in
/// the queue start only once they signalled), then begins CPU access
/// (`DMA_BUF_IOCTL_SYNC` start). Errors: see the module.
///
/// ```
/// use dmabridge::ext::khr_external::memory;
/// use dmabridge::runtime::{buffer::Buffer, context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let plain = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// let err = memory::enqueue_acquire(&queue, &[plain], &[]).unwrap_err();
/// assert_eq!(err.code(), dmabridge::error::code::INVALID_MEM_OBJECT);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_acquire(queue: &Arc<Queue>, buffers: &[Arc<Buffer>], wait_list: &[Event]) -> ClResult<Event> {
    let held = checked(queue, buffers, wait_list, true)?;
    let work = held.clone();
    let r = queue.enqueue(
        COMMAND_ACQUIRE_EXTERNAL_MEM_OBJECTS_KHR,
        wait_list,
        false,
        Box::new(move || {
            for (i, (b, e)) in work.iter().enumerate() {
                // A bracket only: each command maps what it touches.
                if let Err(code) = b.store().begin_cpu(e.dir, None) {
                    // Keep the bracket whole: end what began.
                    for (b, e) in &work[..i] {
                        b.store().end_cpu(e.dir);
                    }
                    return Err(code);
                }
            }
            Ok(())
        }),
    );
    if r.is_err() {
        undo(&held, true);
    }
    r
}

/// `clEnqueueReleaseExternalMemObjectsKHR`: the command ends the CPU access
/// its acquire began (`DMA_BUF_IOCTL_SYNC` end), once the commands before
/// it finished. Errors: see the module.
///
/// ```
/// use dmabridge::ext::khr_external::memory;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let err = memory::enqueue_release(&queue, &[], &[]).unwrap_err();
/// assert_eq!(err.code(), dmabridge::error::code::INVALID_VALUE);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_release(queue: &Arc<Queue>, buffers: &[Arc<Buffer>], wait_list: &[Event]) -> ClResult<Event> {
    let held = checked(queue, buffers, wait_list, false)?;
    let work = held.clone();
    let r = queue.enqueue(
        COMMAND_RELEASE_EXTERNAL_MEM_OBJECTS_KHR,
        wait_list,
        false,
        Box::new(move || {
            for (b, e) in &work {
                b.store().end_cpu(e.dir);
            }
            Ok(())
        }),
    );
    if r.is_err() {
        undo(&held, false);
    }
    r
}
