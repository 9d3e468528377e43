//! `clEnqueueMapBuffer` and `clEnqueueUnmapMemObject`: the host's access
//! to a buffer, and the switch between the two sides of a linked pair.
//!
//! Mapping makes the host allocation (at enqueue: the host's first use; for
//! a buffer whose linked device allocation came first, the host allocation
//! is obtained by mapping those pages, not allocated) and makes the data
//! current in the host pages when the command runs: no byte moves when the
//! data is already there — always, for a buffer used only by host-unified
//! devices — and a transfer from the device's memory otherwise, unless the
//! map invalidates the whole buffer. Unmapping after a write makes the host
//! pages the only current copy.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::event::{command_type, Event};
use crate::runtime::queue::{check_wait_list, CommandUse, Queue};
use crate::sync;
use crate::sys::access::Access;
use crate::sys::addr::HostAddr;

use super::commands::{check_host_access, check_range, check_readable, check_target, check_writable};
use super::store::Location;
use super::Buffer;

/// `cl_map_flags`.
pub mod map_flags {
    /// `CL_MAP_READ`.
    pub const READ: u64 = 1 << 0;
    /// `CL_MAP_WRITE`.
    pub const WRITE: u64 = 1 << 1;
    /// `CL_MAP_WRITE_INVALIDATE_REGION`: the mapped bytes will be
    /// overwritten; their old contents need not be there.
    pub const WRITE_INVALIDATE_REGION: u64 = 1 << 2;
}

/// The bytes a map covers: `rows` x `slices` rows of `width` bytes from
/// `offset`, at `row_pitch` and `slice_pitch` (a buffer map is one row; an
/// image map the rows of its region).
#[derive(Debug, Clone, Copy)]
pub(crate) struct MapArea {
    pub offset: usize,
    pub width: usize,
    pub rows: usize,
    pub slices: usize,
    pub row_pitch: usize,
    pub slice_pitch: usize,
}

impl MapArea {
    /// `size` bytes at `offset`.
    pub(crate) fn bytes(offset: usize, size: usize) -> MapArea {
        MapArea { offset, width: size, rows: 1, slices: 1, row_pitch: size, slice_pitch: size }
    }

    /// From the first byte to one past the last (the caller checked that
    /// the area lies in the buffer: nothing overflows).
    fn span(&self) -> usize {
        (self.slices - 1) * self.slice_pitch + (self.rows - 1) * self.row_pitch + self.width
    }

    /// Each row as (start, end), with the area's first byte at `base`.
    fn row_ranges(self, base: usize) -> impl Iterator<Item = (usize, usize)> {
        (0..self.slices).flat_map(move |z| {
            (0..self.rows).map(move |y| {
                let s = base + z * self.slice_pitch + y * self.row_pitch;
                (s, s + self.width)
            })
        })
    }
}

/// Rows compared one by one at most; past that, whole spans are compared
/// (which may refuse maps whose rows only interleave).
const MAX_ROWS_COMPARED: usize = 1 << 16;

/// True if a row of `a` (first byte at `pa`) overlaps a row of `b` (at `pb`).
fn areas_overlap(a: MapArea, pa: usize, b: MapArea, pb: usize) -> bool {
    let (ea, eb) = (pa + a.span(), pb + b.span());
    if pa >= eb || pb >= ea {
        return false;
    }
    if a.rows * a.slices + b.rows * b.slices > MAX_ROWS_COMPARED {
        return true;
    }
    let mut all: Vec<(usize, usize, bool)> =
        a.row_ranges(pa).map(|(s, e)| (s, e, false)).chain(b.row_ranges(pb).map(|(s, e)| (s, e, true))).collect();
    all.sort_unstable();
    // Sorted by start: a row overlaps an earlier row of the other side iff
    // it starts before the furthest end that side reached.
    let mut reach = [0usize; 2];
    all.iter().any(|&(s, e, side)| {
        let hit = s < reach[usize::from(!side)];
        reach[usize::from(side)] = reach[usize::from(side)].max(e);
        hit
    })
}

/// An outstanding map of a buffer object.
#[derive(Debug, Clone)]
pub(crate) struct MapRecord {
    ptr: usize,
    /// The bytes mapped, from `ptr`, and whether for writing (the map
    /// flags said so), for the overlap rule.
    area: MapArea,
    for_writing: bool,
    writes: bool,
    /// The host's access, for an imported dma-buf's `DMA_BUF_IOCTL_SYNC`
    /// (begun when the map runs, ended when the unmap runs).
    dir: Access,
    /// The map's command began that access (it did not fail first): only
    /// then does the unmap end it.
    begun: Arc<AtomicBool>,
}

impl Buffer {
    /// `CL_MEM_MAP_COUNT`: maps not yet unmapped (enqueued).
    ///
    /// ```
    /// use dmabridge::runtime::buffer::map::{self, map_flags};
    /// use dmabridge::runtime::buffer::Buffer;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// use dmabridge::runtime::queue::{Queue, QueueProps};
    /// let cpu = Platform::get().cpu();
    /// let ctx = Context::new(std::slice::from_ref(cpu))?;
    /// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
    /// // SAFETY: no host pointer.
    /// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
    /// let (p, _) = map::enqueue_map_buffer(&queue, &b, true, map_flags::READ, 0, 64)?;
    /// assert_eq!(b.map_count(), 1);
    /// map::enqueue_unmap_mem_object(&queue, &b, p.as_ptr(), &[])?;
    /// assert_eq!(b.map_count(), 0);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn map_count(&self) -> usize {
        sync::lock(&self.maps).len()
    }
}

/// `clEnqueueMapBuffer`: maps `size` bytes of `buffer` at `offset` for the
/// host and returns the host address of the first byte (at once, also for a
/// non-blocking map: the bytes are there when the event completes) and the
/// command's event. `map_flags` 0 is accepted (no host-access rule applies)
/// and treated as reading and writing.
///
/// Errors: `CL_INVALID_CONTEXT`; `CL_INVALID_VALUE` (range outside the
/// buffer, size 0, unknown map flags, or `CL_MAP_WRITE_INVALIDATE_REGION`
/// with `CL_MAP_READ` or `CL_MAP_WRITE`); `CL_INVALID_OPERATION` (reading a
/// `HOST_WRITE_ONLY`/`HOST_NO_ACCESS` buffer, writing a
/// `HOST_READ_ONLY`/`HOST_NO_ACCESS` one); `CL_MISALIGNED_SUB_BUFFER_OFFSET`;
/// `CL_MEM_OBJECT_ALLOCATION_FAILURE` (the host allocation); for a blocking
/// map after a failed event, `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
///
/// ```
/// use dmabridge::runtime::buffer::map::{self, map_flags};
/// use dmabridge::runtime::buffer::{mem_flags, Buffer};
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, 4096, std::ptr::null_mut()) }?;
/// let (p, _) = map::enqueue_map_buffer(&queue, &b, true, map_flags::WRITE, 0, 4096)?;
/// // SAFETY: mapped for writing, 4096 bytes, until unmapped.
/// unsafe { p.as_ptr().write_bytes(0x5a, 4096) };
/// assert_eq!(b.map_count(), 1);
/// Event::wait(&[map::enqueue_unmap_mem_object(&queue, &b, p.as_ptr(), &[])?])?;
/// assert_eq!(b.map_count(), 0);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_map_buffer(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    map_flags: u64,
    offset: usize,
    size: usize,
) -> ClResult<(NonNull<u8>, Event)> {
    enqueue_map_buffer_after(queue, buffer, blocking, map_flags, offset, size, &[])
}

/// [`enqueue_map_buffer`] with a wait list (`event_wait_list`).
///
/// `clEnqueueMapBuffer` with its `event_wait_list`.
///
/// ```
/// use dmabridge::runtime::buffer::map::{self, map_flags};
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// let gate = Event::user(&ctx);
/// let (p, ev) = map::enqueue_map_buffer_after(&queue, &b, false, map_flags::READ, 0, 64, &[gate.clone()])?;
/// gate.set_user_status(0)?;
/// Event::wait(&[ev])?;
/// Event::wait(&[map::enqueue_unmap_mem_object(&queue, &b, p.as_ptr(), &[])?])?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
#[allow(clippy::too_many_arguments)]
pub fn enqueue_map_buffer_after(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    map_flags: u64,
    offset: usize,
    size: usize,
    wait_list: &[Event],
) -> ClResult<(NonNull<u8>, Event)> {
    map_as(queue, buffer, blocking, map_flags, MapArea::bytes(offset, size), wait_list, command_type::MAP_BUFFER)
}

/// [`enqueue_map_buffer_after`] as the command `cmd` (image maps).
pub(crate) fn map_as(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    map_flags: u64,
    area: MapArea,
    wait_list: &[Event],
    cmd: u32,
) -> ClResult<(NonNull<u8>, Event)> {
    use map_flags::*;
    let (offset, size) = (area.offset, area.span());
    check_target(queue, buffer, "buffer")?;
    check_readable(buffer, "clEnqueueMapBuffer")?;
    check_wait_list(queue.context(), wait_list)?;
    check_range(buffer, offset, size, "buffer")?;
    if map_flags & !(READ | WRITE | WRITE_INVALIDATE_REGION) != 0 {
        return cl_err!(InvalidValue, "map_flags {map_flags:#x} has unknown bits");
    }
    let invalidate = map_flags & WRITE_INVALIDATE_REGION != 0;
    if invalidate && map_flags & (READ | WRITE) != 0 {
        return cl_err!(
            InvalidValue,
            "map_flags {map_flags:#x}: CL_MAP_WRITE_INVALIDATE_REGION excludes CL_MAP_READ and CL_MAP_WRITE"
        );
    }
    if map_flags & READ != 0 {
        check_host_access(buffer, true, "clEnqueueMapBuffer with CL_MAP_READ")?;
    }
    if map_flags & (WRITE | WRITE_INVALIDATE_REGION) != 0 {
        check_host_access(buffer, false, "clEnqueueMapBuffer with CL_MAP_WRITE")?;
        check_writable(buffer, "clEnqueueMapBuffer with CL_MAP_WRITE")?;
    }
    // Flags 0 name no access (no host-access rule applies); the unmap still
    // counts it as a write, the safe assumption for whatever the host did.
    let writes = map_flags & (WRITE | WRITE_INVALIDATE_REGION) != 0 || map_flags == 0;
    // The host reads and writes the mapped bytes with the CPU, whatever the
    // queue's device: an imported dma-buf is synchronised for it.
    let dir = match (map_flags & READ != 0 || map_flags == 0, writes) {
        (true, true) => Access::ReadWrite,
        (false, true) => Access::Write,
        _ => Access::Read,
    };
    let for_writing = map_flags & (WRITE | WRITE_INVALIDATE_REGION) != 0;
    let store = buffer.store().clone();
    let store_for_undo = store.clone();
    let (base, fresh) = store.host_alloc()?;
    let ptr = base + buffer.origin() + offset;
    // "CL_INVALID_OPERATION if mapping would lead to overlapping regions
    // being mapped for writing".
    let clash = sync::lock(&buffer.maps)
        .iter()
        .any(|m| for_writing && m.for_writing && areas_overlap(area, ptr, m.area, m.ptr));
    if clash {
        store.undo_host_alloc(fresh);
        return cl_err!(
            InvalidOperation,
            "this map for writing overlaps a region already mapped for writing: unmap that first"
        );
    }
    let discard = invalidate && buffer.origin() + offset == 0 && size == store.size();
    let keep = buffer.clone();
    let begun = Arc::new(AtomicBool::new(false));
    let began = begun.clone();
    let work = Box::new(move || {
        let _alive = &keep;
        let mut st = store.lock();
        store.make_current(&mut st, Location::Host, discard)?;
        store.begin_cpu(dir, Some((ptr - base, size)))?;
        began.store(true, Ordering::Release);
        Ok(())
    });
    let usage = CommandUse::range(HostAddr(ptr), size);
    let undo = store_for_undo.clone();
    let event =
        queue.enqueue_with_use(cmd, wait_list, blocking, usage, work).inspect_err(|_| undo.undo_host_alloc(fresh))?;
    sync::lock(&buffer.maps).push(MapRecord { ptr, area, for_writing, writes, dir, begun });
    Ok((NonNull::new(ptr as *mut u8).expect("host pages are not at address 0"), event))
}

/// `clEnqueueUnmapMemObject`: ends a map of `buffer` made by
/// [`enqueue_map_buffer`]. After a map for writing, the host pages become the
/// only current copy (a device without host-unified memory gets the data
/// back by a transfer on its next use).
///
/// Errors: `CL_INVALID_VALUE` if `mapped_ptr` is not a pointer a map of this
/// buffer object returned and that is still mapped; `CL_INVALID_CONTEXT`.
///
/// ```
/// use dmabridge::runtime::buffer::map::{self, map_flags};
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 64, std::ptr::null_mut()) }?;
/// let (p, _) = map::enqueue_map_buffer(&queue, &b, true, map_flags::READ, 0, 64)?;
/// map::enqueue_unmap_mem_object(&queue, &b, p.as_ptr(), &[])?;
/// assert!(map::enqueue_unmap_mem_object(&queue, &b, p.as_ptr(), &[]).is_err()); // not mapped any more
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_unmap_mem_object(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    mapped_ptr: *mut u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    if !Arc::ptr_eq(queue.context(), buffer.context()) {
        return cl_err!(InvalidContext, "memobj and the command queue belong to different contexts");
    }
    check_readable(buffer, "clEnqueueUnmapMemObject")?;
    check_wait_list(queue.context(), wait_list)?;
    let record = {
        let mut maps = sync::lock(&buffer.maps);
        match maps.iter().position(|m| m.ptr == mapped_ptr as usize) {
            Some(i) => maps.remove(i),
            None => {
                return cl_err!(
                    InvalidValue,
                    "mapped_ptr {mapped_ptr:?} is not a pointer a map of this buffer returned (or it was unmapped)"
                )
            }
        }
    };
    let store = buffer.store().clone();
    let keep = buffer.clone();
    let ran = record.clone();
    let work = Box::new(move || {
        let _alive = &keep;
        let record = ran;
        if record.begun.load(Ordering::Acquire) {
            store.end_cpu(record.dir);
        }
        if record.writes {
            let mut st = store.lock();
            store.wrote(&mut st, Location::Host);
        }
        Ok(())
    });
    match queue.enqueue_with_use(command_type::UNMAP_MEM_OBJECT, wait_list, false, CommandUse::Nothing, work) {
        Ok(e) => Ok(e),
        Err(e) => {
            // The map is still outstanding: the failed call changes nothing.
            sync::lock(&buffer.maps).push(record);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(offset: usize, width: usize, rows: usize) -> MapArea {
        MapArea { offset, width, rows, slices: 1, row_pitch: 28, slice_pitch: 28 * 5 }
    }

    #[test]
    fn image_areas_overlap_by_rows_not_spans() {
        // 3x3 pixels of 4 bytes at (0, 0) and 3x2 at (4, 3) in a 7-pixel row:
        // their spans cross, their rows do not.
        let a = rect(0, 12, 3);
        let b = rect(3 * 28 + 16, 12, 2);
        assert!(!areas_overlap(a, 1000, b, 1000 + b.offset));
        // 3x3 at (2, 2) shares pixel (2, 2).
        let c = rect(2 * 28 + 8, 12, 3);
        assert!(areas_overlap(a, 1000, c, 1000 + c.offset));
        assert!(areas_overlap(MapArea::bytes(0, 8), 0, MapArea::bytes(0, 8), 7));
        assert!(!areas_overlap(MapArea::bytes(0, 8), 0, MapArea::bytes(0, 8), 8));
    }
}
