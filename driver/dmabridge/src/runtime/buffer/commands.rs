//! Buffer commands that move bytes: `clEnqueueReadBuffer`,
//! `clEnqueueWriteBuffer`, `clEnqueueCopyBuffer`, `clEnqueueFillBuffer`
//! (the rectangular variants are in [`rect`](super::rect)).
//!
//! A command runs at its queue's device: the buffer's allocation there is
//! made at enqueue (its first use there, see [`store`](super::store)), the
//! data is made current there when the command runs (a transfer, unless the
//! command overwrites the whole buffer or the data is already there), and
//! the bytes move by the device's engine: memcpy on the CPU device, DMA on
//! a device with a backend ([`device_copy`]).

use crate::sys::addr::HostAddr;
use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::memory::heap::AllocKind;
use crate::runtime::backend::device_copy;
use crate::runtime::device::{Device, DeviceType};
use crate::runtime::event::{command_type, Event};
use crate::runtime::queue::{check_wait_list, CommandUse, Queue};
use crate::runtime::transfer;
use crate::sys::access::Access;

use super::store::{CpuSync, Location, Placed, Store};
use super::{mem_flags, Buffer};

/// The checks every buffer command makes of its queue and buffer:
/// `CL_INVALID_CONTEXT` if they belong to different contexts,
/// `CL_MISALIGNED_SUB_BUFFER_OFFSET` if a sub-buffer's origin is not aligned
/// to the queue's device's `CL_DEVICE_MEM_BASE_ADDR_ALIGN`; for memory
/// imported from an external handle, `CL_INVALID_COMMAND_QUEUE` on a device
/// it was not made for and `CL_INVALID_OPERATION` outside the
/// acquire/release bracket ([`Bracket`](super::bracket::Bracket)).
pub(crate) fn check_target(queue: &Queue, buffer: &Buffer, name: &str) -> ClResult<()> {
    if !Arc::ptr_eq(queue.context(), buffer.context()) {
        return cl_err!(InvalidContext, "{name} and the command queue belong to different contexts");
    }
    if let Some(bracket) = buffer.store().bracket() {
        bracket.check_use(queue.device(), name)?;
    }
    let align = queue.device().max_alignment;
    if buffer.origin() as u64 % align != 0 {
        return cl_err!(
            MisalignedSubBufferOffset,
            "{name} is a sub-buffer at origin {}, not a multiple of {:?}'s CL_DEVICE_MEM_BASE_ADDR_ALIGN ({align} \
             bytes)",
            buffer.origin(),
            queue.device().name
        );
    }
    Ok(())
}

/// `CL_INVALID_VALUE` unless `[offset, offset + size)` is a non-empty range
/// inside `buffer`.
pub(crate) fn check_range(buffer: &Buffer, offset: usize, size: usize, name: &str) -> ClResult<()> {
    if size == 0 {
        return cl_err!(InvalidValue, "size is 0");
    }
    if offset.checked_add(size).is_none_or(|end| end > buffer.size()) {
        return cl_err!(InvalidValue, "{offset}+{size} runs past the end of the {}-byte {name}", buffer.size());
    }
    Ok(())
}

/// `CL_INVALID_OPERATION` if the host may not read (`read`) or write the
/// buffer (`CL_MEM_HOST_*` flags).
pub(crate) fn check_host_access(buffer: &Buffer, read: bool, what: &str) -> ClResult<()> {
    use mem_flags::*;
    let f = buffer.flags();
    let refused = if read { f & (HOST_WRITE_ONLY | HOST_NO_ACCESS) } else { f & (HOST_READ_ONLY | HOST_NO_ACCESS) };
    if refused != 0 {
        let flag = match refused {
            HOST_WRITE_ONLY => "CL_MEM_HOST_WRITE_ONLY",
            HOST_READ_ONLY => "CL_MEM_HOST_READ_ONLY",
            _ => "CL_MEM_HOST_NO_ACCESS",
        };
        return cl_err!(InvalidOperation, "{what}: the buffer was created with {flag}");
    }
    Ok(())
}

/// The rules for the application's pointer of a read or write: not NULL
/// (`CL_INVALID_VALUE`); not a shared USM allocation of the context, nor a
/// device USM allocation of another device (`CL_INVALID_HOST_PTR`, seed 000
/// issue 22).
pub(crate) fn check_user_ptr(queue: &Queue, ptr: *const u8, name: &str) -> ClResult<()> {
    if ptr.is_null() {
        return cl_err!(InvalidValue, "{name} is NULL");
    }
    if let Some(a) = queue.context().lookup(HostAddr::of(ptr)) {
        match a.meta.kind {
            AllocKind::Shared => {
                return cl_err!(
                    InvalidHostPtr,
                    "{name} {ptr:?} is a shared USM allocation: buffer reads and writes take host or device USM \
                     memory (cl_intel_unified_shared_memory, issue 22); use clEnqueueMemcpyINTEL"
                )
            }
            AllocKind::Device if a.meta.device != Some(queue.device().index) => {
                return cl_err!(
                    InvalidHostPtr,
                    "{name} {ptr:?} is a device USM allocation of another device than the queue's {:?}",
                    queue.device().name
                )
            }
            _ => {}
        }
    }
    Ok(())
}

/// `CL_INVALID_OPERATION` if nothing may write the buffer's memory, as
/// its creator set ([`Restrictions`](super::restrictions::Restrictions)):
/// e.g. an imported dma-buf that its exporter opened read-only (seed 004:
/// the dma-buf's access mode wins over the flags). `what` names the command.
pub(crate) fn check_writable(buffer: &Buffer, what: &str) -> ClResult<()> {
    buffer.store().restrictions().check_write(what)
}

/// `CL_INVALID_OPERATION` if nothing may read or map the buffer's memory,
/// as its creator set ([`Restrictions`](super::restrictions::Restrictions)):
/// e.g. an external physical buffer (seed 002: remote memory is write-only
/// and never mapped). `what` names the command.
pub(crate) fn check_readable(buffer: &Buffer, what: &str) -> ClResult<()> {
    buffer.store().restrictions().check_read(what)
}

/// `CL_INVALID_VALUE` if the `len` bytes of the application's memory at
/// `ptr` wrap around the end of the address space (no memory is like that).
pub(crate) fn check_host_span(ptr: *const u8, len: usize, name: &str) -> ClResult<()> {
    if (ptr as usize).checked_add(len).is_none() {
        return cl_err!(InvalidValue, "{name} {ptr:?} + {len} bytes runs past the end of the address space");
    }
    Ok(())
}

/// A buffer's allocation at a queue's device, made at enqueue.
pub(crate) struct Target {
    pub buffer: Arc<Buffer>,
    pub placed: Placed,
    pub loc: Location,
    undo: Undo,
}

/// What undoes the allocation a [`Target`] made, if the call fails later.
#[derive(Clone)]
pub(crate) struct Undo {
    store: Arc<Store>,
    device: Arc<Device>,
    fresh: bool,
}

impl Undo {
    /// Gives back the allocation if this call made it.
    pub(crate) fn run(&self) {
        self.store.undo_device_alloc(&self.device, self.fresh);
    }
}

impl Target {
    pub(crate) fn new(queue: &Queue, buffer: &Arc<Buffer>) -> ClResult<Target> {
        let (placed, fresh) = buffer.store().device_alloc(queue.device())?;
        let undo = Undo { store: buffer.store().clone(), device: queue.device().clone(), fresh };
        Ok(Target { buffer: buffer.clone(), placed, loc: Location::Device(queue.device().index), undo })
    }

    /// Both sides of a copy: if the second allocation fails, the first is
    /// undone.
    pub(crate) fn pair(queue: &Queue, src: &Arc<Buffer>, dst: &Arc<Buffer>) -> ClResult<(Target, Target)> {
        let s = Target::new(queue, src)?;
        match Target::new(queue, dst) {
            Ok(d) => Ok((s, d)),
            Err(e) => {
                s.undo.run();
                Err(e)
            }
        }
    }

    /// The undo of this target's allocation (kept when the target moves into
    /// the command).
    pub(crate) fn undo(&self) -> Undo {
        self.undo.clone()
    }

    /// The address of byte `offset` of the buffer object at this location.
    pub(crate) fn addr(&self, offset: usize) -> HostAddr {
        self.placed.base + self.buffer.origin() + offset
    }

    /// True if `[offset, offset + size)` of the buffer object is the whole
    /// store (so the old data need not be moved here first).
    pub(crate) fn covers_store(&self, offset: usize, size: usize) -> bool {
        self.buffer.origin() + offset == 0 && size == self.buffer.store().size()
    }

    pub(crate) fn store(&self) -> &Arc<Store> {
        self.buffer.store()
    }

    /// True if the queue's device accesses this allocation with the CPU
    /// (no DMA engine).
    pub(crate) fn on_cpu(&self) -> bool {
        self.undo.device.backend().is_none()
    }

    /// Begins the CPU access of `dir` that an imported dma-buf needs
    /// (its mapping of the bytes touched, `DMA_BUF_IOCTL_SYNC`) if the CPU
    /// accesses `[offset, offset + len)` of the buffer object; ended when
    /// the guard drops. The error is a command status.
    pub(crate) fn cpu_sync(&self, dir: Access, offset: usize, len: usize) -> Result<Option<CpuSync<'_>>, i32> {
        if self.on_cpu() {
            self.store().cpu_sync(dir, Some((self.buffer.origin() + offset, len)))
        } else {
            Ok(None)
        }
    }

    /// [`cpu_sync`](Self::cpu_sync) of the whole buffer object, for commands
    /// whose bytes are not one range (copies, rectangles).
    pub(crate) fn cpu_sync_all(&self, dir: Access) -> Result<Option<CpuSync<'_>>, i32> {
        self.cpu_sync(dir, 0, self.buffer.size())
    }
}

/// Runs `copy` from `s` to `d` (two views on one device): makes the source
/// current there (and the destination, unless `discard`), copies, and records
/// the destination as written. One lock when both are views of one buffer;
/// else both, taken in address order so that two copies in opposite
/// directions cannot deadlock.
pub(crate) fn copy_between(
    s: &Target,
    d: &Target,
    discard: bool,
    copy: impl FnOnce() -> Result<(), i32>,
) -> Result<(), i32> {
    let (ss, ds) = (s.store(), d.store());
    if Arc::ptr_eq(ss, ds) {
        let mut st = ss.lock();
        ss.make_current(&mut st, s.loc, false)?;
        let _sync = d.cpu_sync_all(Access::ReadWrite)?;
        let r = copy();
        ss.wrote(&mut st, d.loc);
        return r;
    }
    let (mut gs, mut gd) = if Arc::as_ptr(ss) < Arc::as_ptr(ds) {
        let gs = ss.lock();
        (gs, ds.lock())
    } else {
        let gd = ds.lock();
        (ss.lock(), gd)
    };
    ss.make_current(&mut gs, s.loc, false)?;
    ds.make_current(&mut gd, d.loc, discard)?;
    let _read = s.cpu_sync_all(Access::Read)?;
    let _write = d.cpu_sync_all(Access::Write)?;
    // Even a failed copy may have landed bytes: the destination alone is
    // current, so every device sees the same (undefined) contents.
    let r = copy();
    ds.wrote(&mut gd, d.loc);
    r
}

/// The checks of a read (`read`) or write between `buffer` and the
/// application's memory at `ptr`, then the buffer's allocation at the
/// queue's device (its first use there).
fn host_transfer(
    queue: &Queue,
    buffer: &Arc<Buffer>,
    offset: usize,
    size: usize,
    ptr: *const u8,
    read: bool,
    wait_list: &[Event],
) -> ClResult<Target> {
    check_target(queue, buffer, "buffer")?;
    check_wait_list(queue.context(), wait_list)?;
    check_range(buffer, offset, size, "buffer")?;
    check_user_ptr(queue, ptr, "ptr")?;
    check_host_span(ptr, size, "ptr")?;
    check_host_access(buffer, read, if read { "clEnqueueReadBuffer" } else { "clEnqueueWriteBuffer" })?;
    if !read {
        check_writable(buffer, "clEnqueueWriteBuffer")?;
    }
    Target::new(queue, buffer)
}

/// Copies by `device`'s engine, as a command status.
///
/// # Safety
/// As [`device_copy`], except that the ranges may be the same or overlap.
pub(crate) unsafe fn engine_copy(device: &Device, dst: HostAddr, src: HostAddr, size: usize) -> Result<(), i32> {
    let (dst, src) = (dst.0, src.0);
    // OpenCL lets a read or write name the buffer's own memory (a
    // USE_HOST_PTR buffer's `host_ptr + offset` on a host-unified device):
    // nothing to move. Overlapping ranges (buffers over overlapping host
    // memory) have undefined contents in OpenCL; on the CPU they are moved
    // as memmove does, never with a non-overlapping copy.
    if dst == src || size == 0 {
        return Ok(());
    }
    if transfer::overlaps(dst, src, size) && device.backend().is_none() {
        // SAFETY: both ranges are valid for `size` bytes (the caller);
        // `ptr::copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
        return Ok(());
    }
    // SAFETY: forwarded to the caller.
    unsafe { device_copy(device, dst as *mut u8, src as *const u8, size) }
}

/// `clEnqueueReadBuffer`: copies `size` bytes of `buffer` at `offset` to
/// `ptr`. A blocking read returns once the bytes are there.
///
/// Errors: `CL_INVALID_CONTEXT` (queue, buffer or wait list of different
/// contexts); `CL_INVALID_VALUE` (range outside the buffer, size 0, `ptr`
/// NULL); `CL_INVALID_HOST_PTR` (`ptr` in a shared USM allocation, or a
/// device USM allocation of another device); `CL_INVALID_OPERATION` (a
/// `HOST_WRITE_ONLY` or `HOST_NO_ACCESS` buffer);
/// `CL_MISALIGNED_SUB_BUFFER_OFFSET`; `CL_MEM_OBJECT_ALLOCATION_FAILURE`
/// (the buffer's first use on the device); for a blocking read after a
/// failed event, `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
///
/// # Safety
/// `ptr` must stay valid for writes of `size` bytes until the command's
/// event completes, and nothing else may access them meanwhile.
///
/// ```
/// use dmabridge::runtime::buffer::{commands, mem_flags, Buffer};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let data = *b"linked allocations";
/// // SAFETY: COPY_HOST_PTR reads `data` now.
/// let b = unsafe { Buffer::create(&ctx, mem_flags::COPY_HOST_PTR, data.len(), data.as_ptr().cast_mut()) }?;
/// let mut out = [0u8; 18];
/// // SAFETY: blocking: `out` is written before the call returns.
/// unsafe { commands::enqueue_read_buffer(&queue, &b, true, 0, out.len(), out.as_mut_ptr(), &[])? };
/// assert_eq!(out, data);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub unsafe fn enqueue_read_buffer(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    offset: usize,
    size: usize,
    ptr: *mut u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    let t = host_transfer(queue, buffer, offset, size, ptr, true, wait_list)?;
    let undo = [t.undo()];
    let (device, dst) = (queue.device().clone(), ptr as usize);
    let work = Box::new(move || {
        let mut st = t.store().lock();
        t.store().make_current(&mut st, t.loc, false)?;
        let _sync = t.cpu_sync(Access::Read, offset, size)?;
        // SAFETY: the allocation holds the buffer's `size` bytes at
        // `offset` (checked at enqueue); the caller keeps `dst` valid and
        // unshared; the store's lock keeps other commands of the buffer out.
        unsafe { engine_copy(&device, HostAddr(dst), t.addr(offset), size) }
    });
    queue
        .enqueue_with_use(command_type::READ_BUFFER, wait_list, blocking, CommandUse::range(HostAddr(dst), size), work)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// `clEnqueueWriteBuffer`: copies `size` bytes from `ptr` into `buffer` at
/// `offset`. A blocking write returns once `ptr` may be reused.
///
/// Errors as [`enqueue_read_buffer`], with `CL_INVALID_OPERATION` for a
/// `HOST_READ_ONLY` or `HOST_NO_ACCESS` buffer.
///
/// # Safety
/// `ptr` must stay valid for reads of `size` bytes until the command's
/// event completes.
///
/// ```
/// use dmabridge::runtime::buffer::{commands, Buffer};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 8, std::ptr::null_mut()) }?;
/// let data = [1u8, 2, 3, 4, 5, 6, 7, 8];
/// // SAFETY: blocking: `data` is read before the call returns.
/// unsafe { commands::enqueue_write_buffer(&queue, &b, true, 0, 8, data.as_ptr(), &[])? };
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub unsafe fn enqueue_write_buffer(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    offset: usize,
    size: usize,
    ptr: *const u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    let t = host_transfer(queue, buffer, offset, size, ptr, false, wait_list)?;
    let undo = [t.undo()];
    let (device, src) = (queue.device().clone(), ptr as usize);
    let work = Box::new(move || {
        let mut st = t.store().lock();
        t.store().make_current(&mut st, t.loc, t.covers_store(offset, size))?;
        let _sync = t.cpu_sync(Access::Write, offset, size)?;
        // SAFETY: as in `enqueue_read_buffer`, the other way.
        let r = unsafe { engine_copy(&device, t.addr(offset), HostAddr(src), size) };
        // Even a failed copy may have landed bytes: this location alone is
        // current, so every device sees the same (undefined) contents.
        t.store().wrote(&mut st, t.loc);
        r
    });
    queue
        .enqueue_with_use(command_type::WRITE_BUFFER, wait_list, blocking, CommandUse::range(HostAddr(src), size), work)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// `clEnqueueCopyBuffer`: copies `size` bytes of `src` at `src_offset` to
/// `dst` at `dst_offset`, on the queue's device.
///
/// Errors: `CL_INVALID_CONTEXT`; `CL_INVALID_VALUE` (a range outside its
/// buffer, size 0); `CL_MEM_COPY_OVERLAP` (the same buffer, or sub-buffers
/// of one buffer, with overlapping ranges); `CL_MISALIGNED_SUB_BUFFER_OFFSET`;
/// `CL_MEM_OBJECT_ALLOCATION_FAILURE`; `CL_INVALID_OPERATION` if `dst` is an
/// imported read-only dma-buf.
///
/// ```
/// use dmabridge::runtime::buffer::{commands, mem_flags, Buffer};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointers.
/// let (a, b) = unsafe {
///     (Buffer::create(&ctx, 0, 64, std::ptr::null_mut())?, Buffer::create(&ctx, 0, 64, std::ptr::null_mut())?)
/// };
/// let ev = commands::enqueue_copy_buffer(&queue, &a, &b, 0, 0, 64, &[])?;
/// Event::wait(&[ev])?;
/// assert!(commands::enqueue_copy_buffer(&queue, &a, &a, 0, 8, 16, &[]).is_err()); // overlap
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn enqueue_copy_buffer(
    queue: &Arc<Queue>,
    src: &Arc<Buffer>,
    dst: &Arc<Buffer>,
    src_offset: usize,
    dst_offset: usize,
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    check_target(queue, src, "src_buffer")?;
    check_target(queue, dst, "dst_buffer")?;
    check_readable(src, "clEnqueueCopyBuffer from src_buffer")?;
    check_wait_list(queue.context(), wait_list)?;
    check_range(src, src_offset, size, "src_buffer")?;
    check_range(dst, dst_offset, size, "dst_buffer")?;
    check_writable(dst, "clEnqueueCopyBuffer into dst_buffer")?;
    let same = Arc::ptr_eq(src.store(), dst.store());
    if same && transfer::overlaps(src.origin() + src_offset, dst.origin() + dst_offset, size) {
        return cl_err!(
            MemCopyOverlap,
            "source {}+{size} and destination {}+{size} overlap in the same buffer",
            src.origin() + src_offset,
            dst.origin() + dst_offset
        );
    }
    let (s, d) = Target::pair(queue, src, dst)?;
    let undo = [s.undo(), d.undo()];
    let device = queue.device().clone();
    let work = Box::new(move || {
        copy_between(&s, &d, d.covers_store(dst_offset, size), || {
            // SAFETY: both ranges lie in their allocations (checked at
            // enqueue) and do not overlap (checked for one buffer; distinct
            // allocations otherwise); the stores' locks are held.
            unsafe { engine_copy(&device, d.addr(dst_offset), s.addr(src_offset), size) }
        })
    });
    queue
        .enqueue_with_use(command_type::COPY_BUFFER, wait_list, false, CommandUse::Nothing, work)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// `clEnqueueFillBuffer`: fills `size` bytes of `buffer` at `offset` with
/// `pattern` repeated (the pattern is copied at enqueue).
///
/// Errors: `CL_INVALID_VALUE` (empty pattern, a pattern size that is not a
/// power of two up to 128, `offset` or `size` not a multiple of it, a range
/// outside the buffer); `CL_INVALID_HOST_PTR` for a pattern in a device or
/// shared USM allocation (seed 000, issue 23); `CL_INVALID_CONTEXT`;
/// `CL_MISALIGNED_SUB_BUFFER_OFFSET`; `CL_MEM_OBJECT_ALLOCATION_FAILURE`;
/// `CL_INVALID_OPERATION` for an imported read-only dma-buf.
///
/// ```
/// use dmabridge::runtime::buffer::{commands, Buffer};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 256, std::ptr::null_mut()) }?;
/// Event::wait(&[commands::enqueue_fill_buffer(&queue, &b, &[1, 2, 3, 4], 0, 256, &[])?])?;
/// assert!(commands::enqueue_fill_buffer(&queue, &b, &[1, 2, 3], 0, 255, &[]).is_err());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_fill_buffer(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    pattern: &[u8],
    offset: usize,
    size: usize,
    wait_list: &[Event],
) -> ClResult<Event> {
    check_target(queue, buffer, "buffer")?;
    check_wait_list(queue.context(), wait_list)?;
    let p = pattern.len();
    if p == 0 || !p.is_power_of_two() || p > transfer::MAX_PATTERN {
        return cl_err!(
            InvalidValue,
            "pattern_size {p} is not a power of two up to {} (the largest vector type)",
            transfer::MAX_PATTERN
        );
    }
    if let Some(a) = queue.context().lookup(HostAddr::of(pattern.as_ptr())) {
        if matches!(a.meta.kind, AllocKind::Device | AllocKind::Shared) {
            return cl_err!(
                InvalidHostPtr,
                "the pattern lies in a {:?} USM allocation: fill patterns come from host memory \
                 (cl_intel_unified_shared_memory, issue 23)",
                a.meta.kind
            );
        }
    }
    if offset % p != 0 || size % p != 0 {
        return cl_err!(InvalidValue, "offset {offset} and size {size} must be multiples of pattern_size {p}");
    }
    check_range(buffer, offset, size, "buffer")?;
    check_writable(buffer, "clEnqueueFillBuffer")?;
    let t = Target::new(queue, buffer)?;
    let undo = [t.undo()];
    let (device, pattern) = (queue.device().clone(), pattern.to_vec());
    let work = Box::new(move || {
        let mut st = t.store().lock();
        t.store().make_current(&mut st, t.loc, t.covers_store(offset, size))?;
        let _sync = t.cpu_sync(Access::Write, offset, size)?;
        let dst = t.addr(offset);
        let r = if device.device_type == DeviceType::Cpu && t.placed.local_device.is_none() && dst.0 % p == 0 {
            // SAFETY: the range lies in the host pages (checked at enqueue),
            // aligned to the pattern; the lock keeps other commands out.
            unsafe { transfer::fill(dst.as_ptr(), &pattern, size) };
            Ok(())
        } else {
            // A device engine copies: stage the pattern in host memory.
            let staged: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
            // SAFETY: `staged` is ours; the destination as above.
            unsafe { engine_copy(&device, dst, HostAddr::of(staged.as_ptr()), size) }
        };
        t.store().wrote(&mut st, t.loc);
        r
    });
    queue
        .enqueue_with_use(command_type::FILL_BUFFER, wait_list, false, CommandUse::Nothing, work)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}
