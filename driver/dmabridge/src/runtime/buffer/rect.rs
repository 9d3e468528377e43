//! The rectangular buffer commands: `clEnqueueReadBufferRect`,
//! `clEnqueueWriteBufferRect`, `clEnqueueCopyBufferRect`. A rectangle is
//! `region[2]` slices of `region[1]` rows of `region[0]` bytes; each side
//! has its own origin and pitches. They run as row copies on the queue's
//! device, through the same allocation and transfer rules as the linear
//! commands.

use crate::sys::addr::HostAddr;
use std::sync::Arc;

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::runtime::device::DeviceType;
use crate::runtime::event::{command_type, Event};
use crate::runtime::queue::{check_wait_list, CommandUse, Queue};
use crate::runtime::transfer;

use super::commands::{
    check_host_access, check_host_span, check_readable, check_target, check_user_ptr, check_writable, copy_between,
    engine_copy, Target, Undo,
};
use super::Buffer;
use crate::sys::access::Access;

/// The geometry of a read or write rectangle (`buffer_origin`,
/// `host_origin`, `region` and the four pitches of the C call; a pitch of 0
/// means "tightly packed").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HostRect {
    /// `buffer_origin`: (byte, row, slice) in the buffer.
    pub buffer_origin: [usize; 3],
    /// `host_origin`: (byte, row, slice) in the host memory.
    pub host_origin: [usize; 3],
    /// `region`: (bytes per row, rows, slices).
    pub region: [usize; 3],
    /// `buffer_row_pitch`.
    pub buffer_row_pitch: usize,
    /// `buffer_slice_pitch`.
    pub buffer_slice_pitch: usize,
    /// `host_row_pitch`.
    pub host_row_pitch: usize,
    /// `host_slice_pitch`.
    pub host_slice_pitch: usize,
}

/// The geometry of a copy rectangle (`src_origin`, `dst_origin`, `region`
/// and the four pitches of `clEnqueueCopyBufferRect`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CopyRect {
    /// `src_origin`.
    pub src_origin: [usize; 3],
    /// `dst_origin`.
    pub dst_origin: [usize; 3],
    /// `region`.
    pub region: [usize; 3],
    /// `src_row_pitch`.
    pub src_row_pitch: usize,
    /// `src_slice_pitch`.
    pub src_slice_pitch: usize,
    /// `dst_row_pitch`.
    pub dst_row_pitch: usize,
    /// `dst_slice_pitch`.
    pub dst_slice_pitch: usize,
}

/// One side of a rectangle with its pitches resolved.
#[derive(Debug, Clone, Copy)]
struct Side {
    start: usize,
    row_pitch: usize,
    slice_pitch: usize,
}

/// The region rule and the pitch rules of one side: `CL_INVALID_VALUE` for
/// an empty region, a row pitch below the row, a slice pitch below a
/// slice's rows or (`multiple`) not a multiple of the row pitch — a rule of
/// the buffer rectangle commands only: the host slice pitch of
/// `clEnqueueRead/WriteImage` need only be "greater than or equal to
/// row_pitch x height".
fn resolve(
    origin: [usize; 3],
    region: [usize; 3],
    row_pitch: usize,
    slice_pitch: usize,
    name: &str,
    multiple: bool,
) -> ClResult<Side> {
    if region.contains(&0) {
        return cl_err!(InvalidValue, "region {region:?} has a zero extent");
    }
    let row_pitch = if row_pitch == 0 { region[0] } else { row_pitch };
    if row_pitch < region[0] {
        return cl_err!(InvalidValue, "{name}_row_pitch {row_pitch} is smaller than the row ({} bytes)", region[0]);
    }
    let min_slice = region[1].checked_mul(row_pitch);
    let slice_pitch = if slice_pitch == 0 { min_slice.unwrap_or(usize::MAX) } else { slice_pitch };
    if min_slice.is_none_or(|m| slice_pitch < m) || (multiple && slice_pitch % row_pitch != 0) {
        return cl_err!(
            InvalidValue,
            "{name}_slice_pitch {slice_pitch} must be at least region[1] x {name}_row_pitch ({} x {row_pitch}) and a \
             multiple of {name}_row_pitch",
            region[1]
        );
    }
    let start = origin[2]
        .checked_mul(slice_pitch)
        .and_then(|z| origin[1].checked_mul(row_pitch).and_then(|y| z.checked_add(y)))
        .and_then(|s| s.checked_add(origin[0]));
    match start {
        Some(start) => Ok(Side { start, row_pitch, slice_pitch }),
        None => cl_err!(InvalidValue, "{name} origin {origin:?} overflows"),
    }
}

impl Side {
    /// One past the last byte the rectangle touches (`None` on overflow).
    fn end(&self, region: [usize; 3]) -> Option<usize> {
        let last_slice = (region[2] - 1).checked_mul(self.slice_pitch)?;
        let last_row = (region[1] - 1).checked_mul(self.row_pitch)?;
        self.start.checked_add(last_slice)?.checked_add(last_row)?.checked_add(region[0])
    }

    /// The offset of each row, slice by slice.
    fn rows(self, region: [usize; 3]) -> impl Iterator<Item = usize> {
        (0..region[2])
            .flat_map(move |z| (0..region[1]).map(move |y| self.start + z * self.slice_pitch + y * self.row_pitch))
    }

    fn check_inside(&self, region: [usize; 3], size: usize, name: &str) -> ClResult<usize> {
        match self.end(region) {
            Some(end) if end <= size => Ok(end),
            _ => cl_err!(InvalidValue, "the rectangle runs past the end of the {size}-byte {name}"),
        }
    }
}

/// `region` with rows that follow each other on every side merged into one
/// (whole slices, then the whole rectangle): fewer, longer copies — a
/// packed image moves as one `memcpy`. Only for the work, after every
/// check ran on the region as given. No product overflows: the rectangle
/// lies inside each side's memory (checked).
fn merged(region: [usize; 3], sides: &[Side]) -> [usize; 3] {
    let mut r = region;
    if sides.iter().all(|s| s.row_pitch == r[0] || r[1] == 1) {
        r = [r[0] * r[1], 1, r[2]];
        if sides.iter().all(|s| s.slice_pitch == r[0] || r[2] == 1) {
            r = [r[0] * r[2], 1, 1];
        }
    }
    r
}

/// Rows compared one by one at most; past that, the rectangles' whole spans
/// are compared (which may refuse a copy whose rows only interleave).
const MAX_ROWS_COMPARED: usize = 1 << 16;

/// True if any row of `a` overlaps any row of `b` (both `width` bytes).
fn rows_overlap(a: impl Iterator<Item = usize>, b: impl Iterator<Item = usize>, width: usize) -> bool {
    let mut all: Vec<(usize, bool)> = a.map(|s| (s, false)).chain(b.map(|s| (s, true))).collect();
    all.sort_unstable();
    // After sorting by start, a row can only overlap its successors that start
    // before it ends; rows of one side never overlap each other (pitch ≥ width).
    all.windows(2).any(|w| w[0].1 != w[1].1 && w[1].0 < w[0].0 + width)
}

/// The checks of a rectangular read (`read`) or write between `buffer` and
/// the application's memory at `ptr`: both sides resolved, the host
/// rectangle's extent, and the buffer's allocation at the queue's device.
/// `cmd` names the entry point in messages (an image's read or write).
fn host_rect(
    queue: &Queue,
    buffer: &Arc<Buffer>,
    rect: &HostRect,
    ptr: *const u8,
    read: bool,
    wait_list: &[Event],
    cmd: u32,
) -> ClResult<(Side, Side, usize, Target)> {
    check_target(queue, buffer, "buffer")?;
    check_wait_list(queue.context(), wait_list)?;
    let b = resolve(rect.buffer_origin, rect.region, rect.buffer_row_pitch, rect.buffer_slice_pitch, "buffer", true)?;
    let image = matches!(cmd, command_type::READ_IMAGE | command_type::WRITE_IMAGE);
    let h = resolve(rect.host_origin, rect.region, rect.host_row_pitch, rect.host_slice_pitch, "host", !image)?;
    b.check_inside(rect.region, buffer.size(), "buffer")?;
    check_user_ptr(queue, ptr, "ptr")?;
    let what = match cmd {
        command_type::READ_BUFFER_RECT => "clEnqueueReadBufferRect",
        command_type::WRITE_BUFFER_RECT => "clEnqueueWriteBufferRect",
        command_type::READ_IMAGE => "clEnqueueReadImage",
        _ => "clEnqueueWriteImage",
    };
    check_host_access(buffer, read, what)?;
    if !read {
        check_writable(buffer, what)?;
    }
    let host_end =
        h.end(rect.region).ok_or_else(|| ClError::new(ClErrorKind::InvalidValue, "the host rectangle overflows"))?;
    check_host_span(ptr, host_end, "ptr")?;
    Ok((b, h, host_end, Target::new(queue, buffer)?))
}

/// `clEnqueueReadBufferRect`: copies a rectangle of `buffer` into host
/// memory at `ptr`.
///
/// Errors: `CL_INVALID_VALUE` (an empty region, a pitch rule, the rectangle
/// outside the buffer, `ptr` NULL); otherwise as
/// [`enqueue_read_buffer`](super::commands::enqueue_read_buffer).
///
/// # Safety
/// Every byte of the host rectangle at `ptr` must stay valid for writes,
/// and unshared, until the event completes.
///
/// ```
/// use dmabridge::runtime::buffer::rect::{self, HostRect};
/// use dmabridge::runtime::buffer::{mem_flags, Buffer};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// let image: Vec<u8> = (0..16).collect(); // 4 rows of 4 bytes
/// // SAFETY: COPY_HOST_PTR reads `image` now.
/// let b = unsafe { Buffer::create(&ctx, mem_flags::COPY_HOST_PTR, 16, image.as_ptr().cast_mut()) }?;
/// // The 2x2 block at (1, 1).
/// let r = HostRect { buffer_origin: [1, 1, 0], region: [2, 2, 1], buffer_row_pitch: 4, ..Default::default() };
/// let mut out = [0u8; 4];
/// // SAFETY: blocking; `out` holds the packed 2x2 block.
/// unsafe { rect::enqueue_read_buffer_rect(&queue, &b, true, &r, out.as_mut_ptr(), &[])? };
/// assert_eq!(out, [5, 6, 9, 10]);
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_read_buffer_rect(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    rect: &HostRect,
    ptr: *mut u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { read_rect(queue, buffer, blocking, rect, ptr, wait_list, command_type::READ_BUFFER_RECT) }
}

/// [`enqueue_read_buffer_rect`] as the command `cmd` (image reads).
///
/// # Safety
/// As [`enqueue_read_buffer_rect`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn read_rect(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    rect: &HostRect,
    ptr: *mut u8,
    wait_list: &[Event],
    cmd: u32,
) -> ClResult<Event> {
    let (b, h, host_end, t) = host_rect(queue, buffer, rect, ptr, true, wait_list, cmd)?;
    let undo = [t.undo()];
    let (device, base, region) = (queue.device().clone(), ptr as usize, merged(rect.region, &[b, h]));
    let work = Box::new(move || {
        let mut st = t.buffer.store().lock();
        t.buffer.store().make_current(&mut st, t.loc, false)?;
        let _sync = t.cpu_sync_all(Access::Read)?;
        for (bo, ho) in b.rows(region).zip(h.rows(region)) {
            // SAFETY: every row lies in the buffer (checked at enqueue) and
            // in the caller's host rectangle.
            unsafe { engine_copy(&device, HostAddr(base + ho), t.addr(bo), region[0]) }?;
        }
        Ok(())
    });
    let usage = CommandUse::range(HostAddr(base), host_end);
    queue.enqueue_with_use(cmd, wait_list, blocking, usage, work).inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// `clEnqueueWriteBufferRect`: copies a rectangle of host memory at `ptr`
/// into `buffer`.
///
/// Errors as [`enqueue_read_buffer_rect`], with `CL_INVALID_OPERATION` for a
/// `HOST_READ_ONLY` or `HOST_NO_ACCESS` buffer.
///
/// # Safety
/// Every byte of the host rectangle at `ptr` must stay valid for reads
/// until the event completes.
///
/// ```
/// use dmabridge::runtime::buffer::rect::{self, HostRect};
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 16, std::ptr::null_mut()) }?;
/// let block = [1u8, 2, 3, 4];
/// let r = HostRect { buffer_origin: [2, 2, 0], region: [2, 2, 1], buffer_row_pitch: 4, ..Default::default() };
/// // SAFETY: blocking; `block` is the packed 2x2 rectangle.
/// unsafe { rect::enqueue_write_buffer_rect(&queue, &b, true, &r, block.as_ptr(), &[])? };
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub unsafe fn enqueue_write_buffer_rect(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    rect: &HostRect,
    ptr: *const u8,
    wait_list: &[Event],
) -> ClResult<Event> {
    // SAFETY: forwarded to the caller.
    unsafe { write_rect(queue, buffer, blocking, rect, ptr, wait_list, command_type::WRITE_BUFFER_RECT) }
}

/// [`enqueue_write_buffer_rect`] as the command `cmd` (image writes).
///
/// # Safety
/// As [`enqueue_write_buffer_rect`].
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn write_rect(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    blocking: bool,
    rect: &HostRect,
    ptr: *const u8,
    wait_list: &[Event],
    cmd: u32,
) -> ClResult<Event> {
    let (b, h, host_end, t) = host_rect(queue, buffer, rect, ptr, false, wait_list, cmd)?;
    let undo = [t.undo()];
    let (device, base, region) = (queue.device().clone(), ptr as usize, merged(rect.region, &[b, h]));
    let work = Box::new(move || {
        let mut st = t.buffer.store().lock();
        t.buffer.store().make_current(&mut st, t.loc, false)?;
        let _sync = t.cpu_sync_all(Access::Write)?;
        let r = b.rows(region).zip(h.rows(region)).try_for_each(|(bo, ho)| {
            // SAFETY: as in `enqueue_read_buffer_rect`, the other way.
            unsafe { engine_copy(&device, t.addr(bo), HostAddr(base + ho), region[0]) }
        });
        // Rows may have landed before a failure: this location alone is current.
        t.buffer.store().wrote(&mut st, t.loc);
        r
    });
    let usage = CommandUse::range(HostAddr(base), host_end);
    queue.enqueue_with_use(cmd, wait_list, blocking, usage, work).inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// `clEnqueueCopyBufferRect`: copies a rectangle of `src` into `dst`.
///
/// Errors: `CL_INVALID_VALUE` (an empty region, a pitch rule, a rectangle
/// outside its buffer, or — for the same buffer — different source and
/// destination pitches); `CL_MEM_COPY_OVERLAP` (the same buffer, or
/// sub-buffers of one, with overlapping rows); `CL_INVALID_CONTEXT`;
/// `CL_MISALIGNED_SUB_BUFFER_OFFSET`; `CL_MEM_OBJECT_ALLOCATION_FAILURE`.
///
/// ```
/// use dmabridge::runtime::buffer::rect::{self, CopyRect};
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::event::Event;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// use dmabridge::runtime::queue::{Queue, QueueProps};
/// let cpu = Platform::get().cpu();
/// let ctx = Context::new(std::slice::from_ref(cpu))?;
/// let queue = Queue::new(&ctx, cpu, QueueProps::default())?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 16, std::ptr::null_mut()) }?;
/// // Left half of a 4x4 grid to its right half: rows interleave but never overlap.
/// let r = CopyRect { src_origin: [0, 0, 0], dst_origin: [2, 0, 0], region: [2, 4, 1],
///                    src_row_pitch: 4, dst_row_pitch: 4, ..Default::default() };
/// Event::wait(&[rect::enqueue_copy_buffer_rect(&queue, &b, &b, &r, &[])?])?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn enqueue_copy_buffer_rect(
    queue: &Arc<Queue>,
    src: &Arc<Buffer>,
    dst: &Arc<Buffer>,
    rect: &CopyRect,
    wait_list: &[Event],
) -> ClResult<Event> {
    copy_rect(queue, src, dst, rect, wait_list, command_type::COPY_BUFFER_RECT)
}

/// [`enqueue_copy_buffer_rect`] as the command `cmd` (image copies).
pub(crate) fn copy_rect(
    queue: &Arc<Queue>,
    src: &Arc<Buffer>,
    dst: &Arc<Buffer>,
    rect: &CopyRect,
    wait_list: &[Event],
    cmd: u32,
) -> ClResult<Event> {
    check_target(queue, src, "src_buffer")?;
    check_target(queue, dst, "dst_buffer")?;
    check_readable(src, "clEnqueueCopyBufferRect from src_buffer")?;
    check_wait_list(queue.context(), wait_list)?;
    let s = resolve(rect.src_origin, rect.region, rect.src_row_pitch, rect.src_slice_pitch, "src", true)?;
    let d = resolve(rect.dst_origin, rect.region, rect.dst_row_pitch, rect.dst_slice_pitch, "dst", true)?;
    s.check_inside(rect.region, src.size(), "src_buffer")?;
    d.check_inside(rect.region, dst.size(), "dst_buffer")?;
    check_writable(dst, "clEnqueueCopyBufferRect into dst_buffer")?;
    let region = rect.region;
    let same = Arc::ptr_eq(src.store(), dst.store());
    if Arc::ptr_eq(src, dst) && s.row_pitch != d.row_pitch && s.slice_pitch != d.slice_pitch {
        return cl_err!(InvalidValue, "src_buffer and dst_buffer are the same buffer but both their pitches differ");
    }
    if same {
        let (so, dof) = (src.origin(), dst.origin());
        let overlap = if region[1].saturating_mul(region[2]) <= MAX_ROWS_COMPARED {
            rows_overlap(s.rows(region).map(|r| r + so), d.rows(region).map(|r| r + dof), region[0])
        } else {
            let (s_end, d_end) = (s.end(region).unwrap_or(usize::MAX), d.end(region).unwrap_or(usize::MAX));
            s.start + so < d_end + dof && d.start + dof < s_end + so
        };
        if overlap {
            return cl_err!(MemCopyOverlap, "the source and destination rectangles overlap in the same buffer");
        }
    }
    let (ts, td) = Target::pair(queue, src, dst)?;
    let undo = [ts.undo(), td.undo()];
    let device = queue.device().clone();
    let region = merged(region, &[s, d]);
    let work = Box::new(move || {
        copy_between(&ts, &td, false, || {
            s.rows(region).zip(d.rows(region)).try_for_each(|(so, dof)| {
                // SAFETY: rows inside both buffers (checked at enqueue), not
                // overlapping each other; the stores' locks are held.
                unsafe { engine_copy(&device, td.addr(dof), ts.addr(so), region[0]) }
            })
        })
    });

    queue
        .enqueue_with_use(cmd, wait_list, false, CommandUse::Nothing, work)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}

/// Fills a rectangle of `buffer` (`origin` in (byte, row, slice),
/// `region` in (bytes, rows, slices), the buffer's pitches) with `pattern`
/// repeated — `clEnqueueFillImage`'s work, as the command `cmd`. Each row
/// starts with the pattern's first byte, so `region[0]` and the row
/// starts must be multiples of the pattern's size (the caller's pixels).
#[allow(clippy::too_many_arguments)]
pub(crate) fn fill_rect(
    queue: &Arc<Queue>,
    buffer: &Arc<Buffer>,
    pattern: &[u8],
    origin: [usize; 3],
    region: [usize; 3],
    pitches: (usize, usize),
    wait_list: &[Event],
    cmd: u32,
) -> ClResult<Event> {
    check_target(queue, buffer, "image")?;
    check_wait_list(queue.context(), wait_list)?;
    let b = resolve(origin, region, pitches.0, pitches.1, "image", true)?;
    b.check_inside(region, buffer.size(), "image")?;
    check_writable(buffer, "clEnqueueFillImage")?;
    let t = Target::new(queue, buffer)?;
    let undo = [t.undo()];
    let (device, pattern) = (queue.device().clone(), pattern.to_vec());
    let region = merged(region, &[b]);
    let p = pattern.len();
    let work = Box::new(move || {
        let mut st = t.store().lock();
        t.store().make_current(&mut st, t.loc, false)?;
        let _sync = t.cpu_sync_all(Access::Write)?;
        // The CPU fills aligned rows in place (as `clEnqueueFillBuffer`);
        // an engine copies a row of the pattern, staged once, to each row.
        let in_place = device.device_type == DeviceType::Cpu
            && t.placed.local_device.is_none()
            && p.is_power_of_two()
            && p <= transfer::MAX_PATTERN
            && region[0] % p == 0;
        let mut row = Vec::new();
        let r = b.rows(region).try_for_each(|ro| {
            let dst = t.addr(ro);
            if in_place && dst.0 % p == 0 {
                // SAFETY: the row lies in the host pages (checked at
                // enqueue), aligned to the pattern, a multiple of it long;
                // the store's lock keeps other commands out.
                unsafe { transfer::fill(dst.as_ptr(), &pattern, region[0]) };
                return Ok(());
            }
            if row.is_empty() {
                row = pattern.iter().copied().cycle().take(region[0]).collect();
            }
            // SAFETY: every row lies in the buffer (checked at enqueue);
            // `row` is ours; the store's lock keeps other commands out.
            unsafe { engine_copy(&device, dst, HostAddr::of(row.as_ptr()), region[0]) }
        });
        t.store().wrote(&mut st, t.loc);
        r
    });
    queue
        .enqueue_with_use(cmd, wait_list, false, CommandUse::Nothing, work)
        .inspect_err(|_| undo.iter().for_each(Undo::run))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pitches_default_to_packed_and_are_checked() {
        let s = resolve([1, 2, 3], [4, 5, 6], 0, 0, "buffer", true).unwrap();
        assert_eq!((s.row_pitch, s.slice_pitch), (4, 20));
        assert_eq!(s.start, 3 * 20 + 2 * 4 + 1);
        assert_eq!(s.end([4, 5, 6]), Some(s.start + 5 * 20 + 4 * 4 + 4));
        assert!(resolve([0; 3], [4, 1, 1], 3, 0, "b", true).is_err(), "row pitch below the row");
        assert!(resolve([0; 3], [4, 2, 1], 4, 6, "b", true).is_err(), "slice pitch below two rows");
        assert!(resolve([0; 3], [4, 2, 1], 4, 10, "b", true).is_err(), "slice pitch not a multiple of the row pitch");
        assert!(resolve([0; 3], [4, 2, 1], 4, 10, "b", false).is_ok(), "images: any slice pitch of at least two rows");
        assert!(resolve([0; 3], [0, 1, 1], 0, 0, "b", true).is_err(), "empty region");
    }

    #[test]
    fn contiguous_rows_merge_and_padded_ones_do_not() {
        let packed = Side { start: 0, row_pitch: 8, slice_pitch: 32 };
        let padded = Side { start: 0, row_pitch: 16, slice_pitch: 64 };
        assert_eq!(merged([8, 4, 2], &[packed]), [64, 1, 1]);
        assert_eq!(merged([8, 4, 2], &[packed, padded]), [8, 4, 2]);
        assert_eq!(merged([8, 4, 2], &[Side { slice_pitch: 40, ..packed }]), [32, 1, 2]);
        assert_eq!(merged([4, 1, 1], &[padded]), [4, 1, 1]);
    }

    #[test]
    fn interleaved_rows_do_not_overlap_but_shifted_ones_do() {
        let a = Side { start: 0, row_pitch: 8, slice_pitch: 32 };
        let b = Side { start: 4, row_pitch: 8, slice_pitch: 32 };
        assert!(!rows_overlap(a.rows([4, 4, 1]), b.rows([4, 4, 1]), 4));
        let c = Side { start: 2, row_pitch: 8, slice_pitch: 32 };
        assert!(rows_overlap(a.rows([4, 4, 1]), c.rows([4, 4, 1]), 4));
    }
}
