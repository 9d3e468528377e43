//! Buffers on the CPU device: random creations, sub-buffers, reads, writes,
//! copies, fills, their rectangular variants, and maps, with offsets,
//! sizes, origins, regions and pitches inside, at the edge of and outside
//! the buffers, near `usize::MAX`, NULL host pointers and buffers of
//! another context.
//!
//! The model's rules are OpenCL's (clCreateBuffer, clCreateSubBuffer,
//! clEnqueue{Read,Write,Copy,Fill}Buffer{,Rect}, clEnqueueMapBuffer,
//! clEnqueueUnmapMemObject):
//! - `CL_INVALID_CONTEXT` for a buffer or a wait-list event of another
//!   context; `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST` for a blocking
//!   call after a failed event (and a non-blocking one does not run).
//! - `CL_INVALID_VALUE` for a range out of bounds, a NULL host pointer, a
//!   pattern whose size is not a power of two up to 128 or an offset or size
//!   not a multiple of it, a map of size 0 or with invalid flags.
//! - Rectangles: `CL_INVALID_VALUE` for a zero region extent, a row pitch
//!   (when not 0) below `region[0]`, a slice pitch (when not 0) below
//!   `region[1]` × the row pitch, a rectangle out of bounds, and, for a copy
//!   within one buffer object, pitches that differ on both counts. A slice
//!   pitch that is not a multiple of the row pitch is refused by the text's
//!   wording only together with the first condition: the model allows both
//!   outcomes. The offset of a side is `origin[2]` × slice pitch +
//!   `origin[1]` × row pitch + `origin[0]`, 0 pitches mean tightly packed.
//! - `CL_MEM_COPY_OVERLAP` when source and destination bytes of one buffer
//!   (or of sub-buffers of one buffer) overlap.
//! - `CL_INVALID_OPERATION` for a host access the host-access flags exclude.
//! - Sub-buffers: `CL_INVALID_MEM_OBJECT` for a sub-buffer's sub-buffer,
//!   `CL_INVALID_VALUE` for bad flags or a region out of the parent,
//!   `CL_INVALID_BUFFER_SIZE` for size 0, `CL_MISALIGNED_SUB_BUFFER_OFFSET`
//!   for an origin that is not a multiple of `CL_DEVICE_MEM_BASE_ADDR_ALIGN`.
//! - Shared USM memory as the host side of a read or write may be refused
//!   with `CL_INVALID_HOST_PTR` (seed 000 issue 22); host and device USM
//!   memory of the queue's device may be used.
//!
//! Every buffer's bytes are observed after each call (copied whole into a
//! scratch buffer and read back) and compared with the model, together with
//! every byte of host memory the test owns.

use std::sync::{Arc, OnceLock};

use dmabridge::error::{ClError, ClErrorKind::*};
use dmabridge::ext::{svm, usm};
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::mem_flags::{self as mf};
use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
use dmabridge::runtime::buffer::{commands, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::queue::Queue;
use proptest::prelude::*;

use crate::{bytes, config, diff, gate, num, other_context, Arena, Expect, Gate, Num};

/// The largest buffer the model creates.
const MAX_BUFFER: usize = 4096;
const MAX_ROOTS: usize = 6;
const ARENA: usize = 16384;
const USM_REGION: usize = 4096;

/// Which buffer a command names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// One of the world's buffers and sub-buffers (modulo their number).
    Buf(u8),
    /// A buffer of another context.
    Foreign,
}

fn pick() -> BoxedStrategy<Pick> {
    prop_oneof![20 => any::<u8>().prop_map(Pick::Buf), 1 => Just(Pick::Foreign)].boxed()
}

/// The host side of a read or write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostAt {
    Null,
    /// Host memory the test owns: 0 is plain memory, 1 a host USM
    /// allocation, 2 a device USM allocation of the CPU device, 3 a shared
    /// USM allocation (modulo 4, plain memory most often).
    Mem(u8, Num),
    NearMax(u8),
}

fn host_at() -> BoxedStrategy<HostAt> {
    prop_oneof![
        1 => Just(HostAt::Null),
        12 => num().prop_map(|n| HostAt::Mem(0, n)),
        3 => (1u8..4, num()).prop_map(|(r, n)| HostAt::Mem(r, n)),
        1 => any::<u8>().prop_map(HostAt::NearMax),
    ]
    .boxed()
}

/// A pitch, relative to what the rectangle needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pitch {
    /// 0: tightly packed.
    Zero,
    /// Exactly the least valid value.
    Tight,
    /// The least valid value plus this many rows (for a slice pitch) or bytes (for a row pitch).
    Plus(u8),
    /// The least valid value plus this many bytes: for a slice pitch, not
    /// always a multiple of the row pitch.
    Bytes(u8),
    /// Below the least valid value.
    Minus(u8),
    /// `usize::MAX - x`.
    Huge(u8),
}

fn pitch() -> BoxedStrategy<Pitch> {
    prop_oneof![
        6 => Just(Pitch::Zero),
        5 => Just(Pitch::Tight),
        6 => (0u8..6).prop_map(Pitch::Plus),
        1 => (1u8..40).prop_map(Pitch::Bytes),
        1 => (1u8..4).prop_map(Pitch::Minus),
        1 => (0u8..8).prop_map(Pitch::Huge),
    ]
    .boxed()
}

/// One side of a rectangle: origin and pitches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side {
    origin: [Num; 3],
    row: Pitch,
    slice: Pitch,
}

fn side() -> BoxedStrategy<Side> {
    ([num(), num(), num()], pitch(), pitch()).prop_map(|(origin, row, slice)| Side { origin, row, slice }).boxed()
}

/// A rectangle's region and its two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RectSpec {
    region: [Num; 3],
    a: Side,
    b: Side,
}

fn rect_spec() -> BoxedStrategy<RectSpec> {
    ([num(), num(), num()], side(), side()).prop_map(|(region, a, b)| RectSpec { region, a, b }).boxed()
}

/// The bounds the numbers of a rectangle are drawn against: small, so that
/// most rectangles fit the buffers.
const REGION_BOUND: [usize; 3] = [16, 4, 3];
const ORIGIN_BOUND: [usize; 3] = [16, 4, 2];

/// A region's extents: from 1 to the bound when drawn inside (0 and huge
/// extents come from the other kinds of [`Num`]).
fn region_of(spec: &RectSpec) -> [usize; 3] {
    [0, 1, 2].map(|i| match spec.region[i] {
        Num::In(x) => 1 + x as usize % REGION_BOUND[i],
        n => n.at(REGION_BOUND[i]),
    })
}

/// A side's numbers as passed to the library (`origin`, row and slice
/// pitch), from the spec of the side and the region.
fn side_args(s: &Side, region: [usize; 3]) -> ([usize; 3], usize, usize) {
    let origin = [0, 1, 2].map(|i| s.origin[i].at(ORIGIN_BOUND[i]));
    let row_min = region[0];
    let row = match s.row {
        Pitch::Zero => 0,
        Pitch::Tight => row_min,
        Pitch::Plus(x) | Pitch::Bytes(x) => row_min.saturating_add(x as usize),
        Pitch::Minus(x) => row_min.saturating_sub(x as usize),
        Pitch::Huge(x) => usize::MAX - x as usize,
    };
    let row_eff = if row == 0 { row_min } else { row };
    let slice_min = region[1].saturating_mul(row_eff);
    let slice = match s.slice {
        Pitch::Zero => 0,
        Pitch::Tight => slice_min,
        Pitch::Plus(x) => slice_min.saturating_add((x as usize).saturating_mul(row_eff)),
        Pitch::Bytes(x) => slice_min.saturating_add(x as usize),
        Pitch::Minus(x) => slice_min.saturating_sub(x as usize),
        Pitch::Huge(x) => usize::MAX - x as usize,
    };
    (origin, row, slice)
}

/// A side resolved by the model: OpenCL's pitch rules applied, in `u128`
/// so that nothing wraps.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    start: u128,
    row: u128,
    slice: u128,
    /// One past the last byte.
    end: u128,
}

/// Applies the pitch rules of one side to `e`; `None` if the region has a
/// zero extent (no geometry then).
fn geometry(origin: [usize; 3], region: [usize; 3], row: usize, slice: usize, e: &mut Expect) -> Option<Geometry> {
    if region.contains(&0) {
        e.fail(InvalidValue);
        return None;
    }
    let r = region.map(|x| x as u128);
    let (row, slice) = (row as u128, slice as u128);
    if row != 0 && row < r[0] {
        e.fail(InvalidValue);
    }
    let row = if row == 0 { r[0] } else { row };
    if slice != 0 && slice < r[1] * row {
        e.fail(InvalidValue);
    } else if slice != 0 && slice % row != 0 {
        e.may_fail(InvalidValue);
    }
    let slice = if slice == 0 { r[1] * row } else { slice };
    let o = origin.map(|x| x as u128);
    // Saturating: a saturated value is far past any buffer either way.
    let start = o[2].saturating_mul(slice).saturating_add(o[1] * row).saturating_add(o[0]);
    let end =
        start.saturating_add((r[2] - 1).saturating_mul(slice)).saturating_add((r[1] - 1) * row).saturating_add(r[0]);
    Some(Geometry { start, row, slice, end })
}

impl Geometry {
    /// The start of every row (only for rectangles inside a buffer or the
    /// host memory, so they fit `usize`).
    fn rows(&self, region: [usize; 3]) -> Vec<usize> {
        let mut v = Vec::with_capacity(region[1] * region[2]);
        for z in 0..region[2] as u128 {
            for y in 0..region[1] as u128 {
                v.push((self.start + z * self.slice + y * self.row) as usize);
            }
        }
        v
    }
}

/// The `host_ptr` of clCreateBuffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPtr {
    /// What the flags ask for: [`HostPtr::Own`] if they name a host
    /// pointer, NULL otherwise.
    Auto,
    Null,
    /// The test's plain host memory (region 0).
    Arena,
    /// Fresh memory of its own, as large as the buffer.
    Own,
    /// A fresh `clSVMAlloc` allocation of the context, as large as the
    /// buffer, or (`true`) one byte smaller.
    Svm(bool),
    NearMax(u8),
}

fn host_ptr() -> BoxedStrategy<HostPtr> {
    prop_oneof![
        8 => Just(HostPtr::Auto),
        2 => Just(HostPtr::Null),
        2 => Just(HostPtr::Arena),
        3 => Just(HostPtr::Own),
        2 => prop::bool::weighted(0.2).prop_map(HostPtr::Svm),
        1 => any::<u8>().prop_map(HostPtr::NearMax),
    ]
    .boxed()
}

/// Creation flags: [`mem_flags`], and often `CL_MEM_USE_HOST_PTR` or
/// `CL_MEM_COPY_HOST_PTR` with an access flag.
fn create_flags() -> BoxedStrategy<u64> {
    (mem_flags(), prop::sample::select(vec![0, 0, mf::USE_HOST_PTR, mf::COPY_HOST_PTR]))
        .prop_map(|(f, h)| if f & (mf::HOST_PTR | !mf::ALL) == 0 { f | h } else { f })
        .boxed()
}

/// One call.
#[derive(Debug, Clone)]
pub enum Op {
    Create { flags: u64, size: Num, host: HostPtr },
    Sub { parent: u8, flags: u64, origin: Num, size: Num },
    Write { buf: Pick, offset: Num, size: Num, host: HostAt, blocking: bool, gate: Gate },
    Read { buf: Pick, offset: Num, size: Num, host: HostAt, blocking: bool, gate: Gate },
    Copy { src: Pick, dst: Pick, src_offset: Num, dst_offset: Num, size: Num, gate: Gate },
    Fill { buf: Pick, pattern: usize, offset: Num, size: Num, seed: u64, gate: Gate },
    WriteRect { buf: Pick, rect: RectSpec, host: HostAt, blocking: bool, gate: Gate },
    ReadRect { buf: Pick, rect: RectSpec, host: HostAt, blocking: bool, gate: Gate },
    CopyRect { src: Pick, dst: Pick, rect: RectSpec, gate: Gate },
    Map { buf: Pick, flags: u64, offset: Num, size: Num, blocking: bool, seed: u64, bad_unmap: bool, gate: Gate },
}

fn mem_flags() -> BoxedStrategy<u64> {
    use mf::*;
    prop_oneof![
        4 => Just(0u64),
        4 => prop::sample::select(vec![
            READ_WRITE,
            READ_ONLY,
            WRITE_ONLY,
            HOST_READ_ONLY,
            HOST_WRITE_ONLY,
            HOST_NO_ACCESS,
            READ_ONLY | HOST_WRITE_ONLY,
            WRITE_ONLY | HOST_READ_ONLY,
            ALLOC_HOST_PTR,
        ]),
        1 => prop::sample::select(vec![
            COPY_HOST_PTR,
            USE_HOST_PTR,
            USE_HOST_PTR | COPY_HOST_PTR,
            READ_WRITE | READ_ONLY,
            HOST_READ_ONLY | HOST_NO_ACCESS,
            1 << 6,
        ]),
        1 => any::<u64>(),
    ]
    .boxed()
}

fn op() -> BoxedStrategy<Op> {
    let pattern = prop_oneof![
        8 => (0usize..=7).prop_map(|s| 1 << s),
        1 => Just(0usize),
        1 => Just(3usize),
        1 => Just(256usize),
    ];
    let map = prop_oneof![6 => prop::sample::select(vec![1u64, 2, 3, 4]), 2 => 0u64..8, 1 => any::<u64>()];
    prop_oneof![
        2 => (create_flags(), num(), host_ptr()).prop_map(|(flags, size, host)| Op::Create { flags, size, host }).boxed(),
        2 => (any::<u8>(), mem_flags(), num(), num())
            .prop_map(|(parent, flags, origin, size)| Op::Sub { parent, flags, origin, size })
            .boxed(),
        3 => (pick(), num(), num(), host_at(), any::<bool>(), gate())
            .prop_map(|(buf, offset, size, host, blocking, gate)| Op::Write { buf, offset, size, host, blocking, gate })
            .boxed(),
        3 => (pick(), num(), num(), host_at(), any::<bool>(), gate())
            .prop_map(|(buf, offset, size, host, blocking, gate)| Op::Read { buf, offset, size, host, blocking, gate })
            .boxed(),
        3 => (pick(), pick(), num(), num(), num(), gate())
            .prop_map(|(src, dst, src_offset, dst_offset, size, gate)| Op::Copy {
                src,
                dst,
                src_offset,
                dst_offset,
                size,
                gate
            })
            .boxed(),
        3 => (pick(), pattern, num(), num(), any::<u64>(), gate())
            .prop_map(|(buf, pattern, offset, size, seed, gate)| Op::Fill { buf, pattern, offset, size, seed, gate })
            .boxed(),
        3 => (pick(), rect_spec(), host_at(), any::<bool>(), gate())
            .prop_map(|(buf, rect, host, blocking, gate)| Op::WriteRect { buf, rect, host, blocking, gate })
            .boxed(),
        3 => (pick(), rect_spec(), host_at(), any::<bool>(), gate())
            .prop_map(|(buf, rect, host, blocking, gate)| Op::ReadRect { buf, rect, host, blocking, gate })
            .boxed(),
        3 => (pick(), pick(), rect_spec(), gate())
            .prop_map(|(src, dst, rect, gate)| Op::CopyRect { src, dst, rect, gate })
            .boxed(),
        2 => (pick(), map, num(), num(), any::<bool>(), any::<u64>(), prop::bool::weighted(0.2), gate())
            .prop_map(|(buf, flags, offset, size, blocking, seed, bad_unmap, gate)| Op::Map {
                buf,
                flags,
                offset,
                size,
                blocking,
                seed,
                bad_unmap,
                gate
            })
            .boxed(),
    ]
    .boxed()
}

/// A buffer or sub-buffer of the world.
struct View {
    buf: Arc<Buffer>,
    /// Index of the buffer whose bytes it shows (itself for a buffer).
    root: usize,
    origin: usize,
    size: usize,
    flags: u64,
    sub: bool,
}

/// A buffer's bytes, as the model has them.
struct Root {
    buf: Arc<Buffer>,
    data: Vec<u8>,
    /// The `host_ptr` of a `CL_MEM_USE_HOST_PTR` buffer: maps return
    /// pointers derived from it.
    use_host_ptr: Option<usize>,
}

/// Host memory the test owns and its model.
struct Region {
    base: usize,
    data: Vec<u8>,
    /// A shared USM allocation (reads and writes may refuse it).
    shared: bool,
}

/// What a command names: a view of the world, or the foreign buffer.
#[derive(Clone)]
struct Target {
    buf: Arc<Buffer>,
    /// `None` for the foreign buffer.
    root: Option<usize>,
    origin: usize,
    size: usize,
    flags: u64,
    /// The view's index (same buffer object = same index).
    id: Option<usize>,
}

fn foreign_buffer() -> &'static Arc<Buffer> {
    static FOREIGN: OnceLock<Arc<Buffer>> = OnceLock::new();
    FOREIGN.get_or_init(|| {
        // SAFETY: no host pointer.
        unsafe { Buffer::create(other_context(), 0, MAX_BUFFER, std::ptr::null_mut()) }.unwrap()
    })
}

struct World {
    ctx: Arc<Context>,
    q: Arc<Queue>,
    roots: Vec<Root>,
    views: Vec<View>,
    scratch: Arc<Buffer>,
    regions: Vec<Region>,
    /// Keeps the plain host memory (region 0) alive.
    _arena: Arena,
    align: usize,
    max_alloc: u64,
    /// Non-blocking commands are not waited for one by one (see the USM
    /// model); observations go through the same in-order queue.
    lazy: bool,
    /// The host memory of `CL_MEM_USE_HOST_PTR` buffers (last: dropped
    /// after the buffers).
    owned: Vec<Arena>,
}

impl World {
    fn new(roots: &[(u64, Num)], subs: &[(u8, u8, Num)], lazy: bool) -> World {
        let (ctx, q) = dmabridge_tests::cpu_context_and_queue();
        // SAFETY: no host pointer.
        let scratch = unsafe { Buffer::create(&ctx, 0, MAX_BUFFER, std::ptr::null_mut()) }.unwrap();
        let arena = Arena::new(ARENA);
        let mut regions = vec![Region { base: arena.base(), data: vec![0; ARENA], shared: false }];
        let cpu = q.device().clone();
        let usm_regions = [
            usm::host_mem_alloc(&ctx, &[], USM_REGION, 0),
            usm::device_mem_alloc(&ctx, &cpu, &[], USM_REGION, 0),
            usm::shared_mem_alloc(&ctx, None, &[], USM_REGION, 0),
        ];
        for (i, r) in usm_regions.into_iter().enumerate() {
            regions.push(Region { base: r.unwrap().as_ptr() as usize, data: vec![0; USM_REGION], shared: i == 2 });
        }
        let mut w = World {
            ctx,
            q,
            roots: vec![],
            views: vec![],
            scratch,
            regions,
            _arena: arena,
            align: cpu.max_alignment as usize,
            max_alloc: cpu.max_mem_alloc_size,
            lazy,
            owned: vec![],
        };
        for (i, r) in w.regions.iter_mut().enumerate() {
            r.data = bytes(0x5eed + i as u64, r.data.len());
            // SAFETY: the region is the test's own memory, `data.len()` bytes.
            unsafe { std::ptr::copy_nonoverlapping(r.data.as_ptr(), r.base as *mut u8, r.data.len()) };
        }
        for (i, &(flags, size)) in roots.iter().enumerate() {
            let size = 1 + size.at(MAX_BUFFER - 1).min(MAX_BUFFER - 1);
            w.create_root(flags, size, i % 2 == 0).unwrap();
        }
        for &(parent, units, size) in subs {
            let p = parent as usize % w.roots.len();
            let origin = units as usize * w.align;
            let room = w.views[p].size.saturating_sub(origin);
            let size = size.at(room);
            if origin < w.views[p].size && size > 0 && size <= room {
                w.create_sub(p, 0, origin, size).unwrap();
            }
        }
        w
    }

    fn create_root(&mut self, flags: u64, size: usize, copy: bool) -> Result<(), ClError> {
        let host =
            if flags & mf::COPY_HOST_PTR != 0 || copy { self.regions[0].base as *mut u8 } else { std::ptr::null_mut() };
        let flags = if copy { flags | mf::COPY_HOST_PTR } else { flags };
        // SAFETY: `host` is NULL or the arena, which holds more than `size`
        // bytes (or the call fails on its size first).
        let buf = unsafe { Buffer::create(&self.ctx, flags, size, host) }?;
        let data = if flags & mf::COPY_HOST_PTR != 0 { self.regions[0].data[..size].to_vec() } else { vec![0; size] };
        let root = self.roots.len();
        self.roots.push(Root { buf: buf.clone(), data, use_host_ptr: None });
        let stored = buf.flags();
        self.views.push(View { buf, root, origin: 0, size, flags: stored, sub: false });
        if flags & mf::COPY_HOST_PTR == 0 {
            // Not initialised: the model takes what the buffer holds.
            self.roots[root].data = self.observe(root);
        }
        Ok(())
    }

    fn create_sub(&mut self, parent: usize, flags: u64, origin: usize, size: usize) -> Result<(), ClError> {
        let p = &self.views[parent];
        let buf = Buffer::create_sub_buffer(&p.buf, flags, BUFFER_CREATE_TYPE_REGION, origin, size)?;
        let view = View { flags: buf.flags(), buf, root: p.root, origin: p.origin + origin, size, sub: true };
        self.views.push(view);
        Ok(())
    }

    /// A buffer's bytes, copied whole to the scratch buffer and read.
    fn observe(&self, root: usize) -> Vec<u8> {
        let r = &self.roots[root];
        let size = r.data.len();
        let e = commands::enqueue_copy_buffer(&self.q, &r.buf, &self.scratch, 0, 0, size, &[]).unwrap();
        Event::wait(&[e]).unwrap();
        let mut out = vec![0u8; size];
        // SAFETY: `out` holds `size` bytes; the read is blocking.
        unsafe { commands::enqueue_read_buffer(&self.q, &self.scratch, true, 0, size, out.as_mut_ptr(), &[]) }.unwrap();
        out
    }

    fn target(&self, p: Pick) -> Target {
        match p {
            Pick::Foreign => Target {
                buf: foreign_buffer().clone(),
                root: None,
                origin: 0,
                size: MAX_BUFFER,
                flags: mf::READ_WRITE,
                id: None,
            },
            Pick::Buf(i) => {
                let id = i as usize % self.views.len();
                let v = &self.views[id];
                Target {
                    buf: v.buf.clone(),
                    root: Some(v.root),
                    origin: v.origin,
                    size: v.size,
                    flags: v.flags,
                    id: Some(id),
                }
            }
        }
    }

    /// The host address and the region of the model's memory it lies in
    /// (by address: an offset past one region may land in the next).
    fn host(&self, h: HostAt) -> (usize, Option<usize>) {
        let p = match h {
            HostAt::Null => 0,
            HostAt::NearMax(x) => usize::MAX - x as usize,
            HostAt::Mem(r, off) => {
                let reg = &self.regions[r as usize % self.regions.len()];
                reg.base.wrapping_add(off.at(reg.data.len()))
            }
        };
        (p, self.regions.iter().position(|r| p >= r.base && p - r.base < r.data.len()))
    }

    /// The region byte offset of `[p, p + len)` if it lies inside region `r`.
    fn inside(&self, r: Option<usize>, p: usize, len: u128) -> Option<usize> {
        let reg = &self.regions[r?];
        let off = p.checked_sub(reg.base)?;
        ((off as u128).saturating_add(len) <= reg.data.len() as u128).then_some(off)
    }

    fn check(&self, after: &str) -> Result<(), TestCaseError> {
        let _ = self.q.finish();
        for (i, r) in self.roots.iter().enumerate() {
            diff(&format!("after {after}: buffer {i} ({} bytes)", r.data.len()), &self.observe(i), &r.data)?;
        }
        for (i, reg) in self.regions.iter().enumerate() {
            // SAFETY: the test's own memory; no command is running.
            let now = unsafe { std::slice::from_raw_parts(reg.base as *const u8, reg.data.len()) };
            diff(&format!("after {after}: host memory {i}"), now, &reg.data)?;
        }
        for (i, v) in self.views.iter().enumerate() {
            prop_assert_eq!(v.buf.map_count(), 0, "after {}: view {} is still mapped", after, i);
        }
        Ok(())
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Create { flags, size, host } => self.op_create(flags, size, host),
            Op::Sub { parent, flags, origin, size } => self.op_sub(parent, flags, origin, size),
            Op::Write { buf, offset, size, host, blocking, gate } => {
                self.op_host(false, buf, offset, size, host, blocking, gate)
            }
            Op::Read { buf, offset, size, host, blocking, gate } => {
                self.op_host(true, buf, offset, size, host, blocking, gate)
            }
            Op::Copy { src, dst, src_offset, dst_offset, size, gate } => {
                self.op_copy(src, dst, src_offset, dst_offset, size, gate)
            }
            Op::Fill { buf, pattern, offset, size, seed, gate } => self.op_fill(buf, pattern, offset, size, seed, gate),
            Op::WriteRect { buf, rect, host, blocking, gate } => {
                self.op_host_rect(false, buf, &rect, host, blocking, gate)
            }
            Op::ReadRect { buf, rect, host, blocking, gate } => {
                self.op_host_rect(true, buf, &rect, host, blocking, gate)
            }
            Op::CopyRect { src, dst, rect, gate } => self.op_copy_rect(src, dst, &rect, gate),
            Op::Map { buf, flags, offset, size, blocking, seed, bad_unmap, gate } => {
                self.op_map(buf, flags, offset, size, blocking, seed, bad_unmap, gate)
            }
        }
    }

    /// The flag rules shared by clCreateBuffer and clCreateSubBuffer.
    fn flag_rules(flags: u64, e: &mut Expect) {
        use mf::*;
        let known = ACCESS | HOST_ACCESS | HOST_PTR;
        if flags & !known != 0 || (flags & ACCESS).count_ones() > 1 || (flags & HOST_ACCESS).count_ones() > 1 {
            e.fail(InvalidValue);
        }
    }

    fn op_create(&mut self, flags: u64, size: Num, host: HostPtr) -> Result<(), TestCaseError> {
        use mf::*;
        let size = size.at(MAX_BUFFER);
        let mut e = Expect::new();
        World::flag_rules(flags, &mut e);
        if flags & USE_HOST_PTR != 0 && flags & (ALLOC_HOST_PTR | COPY_HOST_PTR) != 0 {
            e.fail(InvalidValue);
        }
        if size == 0 || size as u64 > self.max_alloc {
            e.fail(InvalidBufferSize);
        }
        let wants = flags & (USE_HOST_PTR | COPY_HOST_PTR) != 0;
        let host = match host {
            HostPtr::Auto if wants => HostPtr::Own,
            HostPtr::Auto => HostPtr::Null,
            h => h,
        };
        if wants != (host != HostPtr::Null) {
            e.fail(InvalidHostPtr);
        }
        let fits = size <= MAX_BUFFER && self.roots.len() < MAX_ROOTS;
        let seed = self.roots.len() as u64 + 0xc0ffee;
        // The host memory, and the model's view of its bytes.
        let (p, init): (usize, Option<Vec<u8>>) = match host {
            HostPtr::Null | HostPtr::Auto => (0, None),
            HostPtr::Arena => (self.regions[0].base, Some(self.regions[0].data.clone())),
            HostPtr::Own if fits => {
                let a = Arena::new(MAX_BUFFER);
                let init = bytes(seed, MAX_BUFFER);
                // SAFETY: fresh memory of MAX_BUFFER bytes, the test's own.
                unsafe { std::ptr::copy_nonoverlapping(init.as_ptr(), a.base() as *mut u8, MAX_BUFFER) };
                let p = a.base();
                self.owned.push(a);
                (p, Some(init))
            }
            HostPtr::Svm(smaller) if fits && size > 1 => {
                let n = size - usize::from(smaller);
                let svm = svm::svm_alloc(&self.ctx, svm::flags::READ_WRITE, n, 0).unwrap().as_ptr();
                let init = bytes(seed, n);
                // SAFETY: a fresh n-byte SVM allocation, host-accessible on the CPU device.
                unsafe { std::ptr::copy_nonoverlapping(init.as_ptr(), svm, n) };
                if smaller && flags & USE_HOST_PTR != 0 {
                    // Seed 001: a buffer over an SVM allocation succeeds as
                    // long as it is no larger than the allocation.
                    e.fail(InvalidBufferSize);
                }
                (svm as usize, Some(init))
            }
            HostPtr::Own | HostPtr::Svm(_) => return Ok(()),
            HostPtr::NearMax(x) => (usize::MAX - x as usize, None),
        };
        if wants && p != 0 && p.checked_add(size).is_none() {
            // Host memory that runs past the end of the address space.
            e.fail(InvalidHostPtr);
            e.fail(InvalidValue);
        }
        let known = init.as_ref().is_some_and(|i| i.len() >= size);
        let use_arena = flags & USE_HOST_PTR != 0 && host == HostPtr::Arena;
        if !e.must_fail() && (!fits || (wants && !known) || use_arena) {
            // Enough buffers, larger than the scratch buffer, host memory
            // the caller does not own, or a buffer over the memory the
            // model compares as host memory: not made.
            return Ok(());
        }
        // SAFETY: `p` is NULL, or memory the test owns that holds `size`
        // bytes (checked above), or the call must fail before reading it.
        let r = unsafe { Buffer::create(&self.ctx, flags, size, p as *mut u8) };
        let what = format!("clCreateBuffer(flags {flags:#x}, size {size}, host_ptr {p:#x} ({host:?}))");
        if e.check(&what, &r)? {
            let buf = r.unwrap();
            let data = match init.filter(|_| wants) {
                Some(init) => init[..size].to_vec(),
                None => vec![0; size],
            };
            let root = self.roots.len();
            let use_host_ptr = (flags & USE_HOST_PTR != 0).then_some(p);
            self.roots.push(Root { buf: buf.clone(), data, use_host_ptr });
            self.views.push(View { flags: buf.flags(), buf, root, origin: 0, size, sub: false });
            if !wants {
                // Not initialised: the model takes what the buffer holds.
                self.roots[root].data = self.observe(root);
            }
        }
        Ok(())
    }

    fn op_sub(&mut self, parent: u8, flags: u64, origin: Num, size: Num) -> Result<(), TestCaseError> {
        use mf::*;
        let pi = parent as usize % self.views.len();
        let p = &self.views[pi];
        // Origins are drawn in units of the alignment most of the time.
        let origin = match origin {
            Num::In(x) => (x as usize % (p.size / self.align + 2)) * self.align + usize::from(x % 7 == 6),
            n => n.at(p.size),
        };
        let size = size.at(p.size.saturating_sub(origin));
        let mut e = Expect::new();
        if p.sub {
            e.fail(InvalidMemObject);
        }
        World::flag_rules(flags, &mut e);
        if flags & HOST_PTR != 0 {
            e.fail(InvalidValue);
        }
        let pf = p.flags;
        let device_conflict = (pf & WRITE_ONLY != 0 && flags & (READ_WRITE | READ_ONLY) != 0)
            || (pf & READ_ONLY != 0 && flags & (READ_WRITE | WRITE_ONLY) != 0);
        let host_conflict = (pf & HOST_WRITE_ONLY != 0 && flags & HOST_READ_ONLY != 0)
            || (pf & HOST_READ_ONLY != 0 && flags & HOST_WRITE_ONLY != 0)
            || (pf & HOST_NO_ACCESS != 0 && flags & (HOST_READ_ONLY | HOST_WRITE_ONLY) != 0);
        if device_conflict || host_conflict {
            e.fail(InvalidValue);
        }
        if size == 0 {
            e.fail(InvalidBufferSize);
        }
        if origin as u128 + size as u128 > p.size as u128 {
            e.fail(InvalidValue);
        }
        if origin % self.align != 0 {
            e.fail(MisalignedSubBufferOffset);
        }
        let what = format!("clCreateSubBuffer(parent {pi}, flags {flags:#x}, origin {origin}, size {size})");
        let r = Buffer::create_sub_buffer(&p.buf, flags, BUFFER_CREATE_TYPE_REGION, origin, size);
        if e.check(&what, &r)? {
            let buf = r.unwrap();
            // Flags not given are inherited.
            let mut want = flags;
            if flags & ACCESS == 0 {
                want |= pf & ACCESS;
            }
            if flags & HOST_ACCESS == 0 {
                want |= pf & HOST_ACCESS;
            }
            prop_assert_eq!(buf.flags() & (ACCESS | HOST_ACCESS), want & (ACCESS | HOST_ACCESS), "{}", what);
            prop_assert_eq!((buf.size(), buf.origin()), (size, origin), "{}", what);
            let view = View { flags: buf.flags(), buf, root: p.root, origin: p.origin + origin, size, sub: true };
            self.views.push(view);
        }
        Ok(())
    }

    /// The rules of a host access (`read`: the host reads the buffer).
    fn host_access(flags: u64, read: bool, write: bool, e: &mut Expect) {
        use mf::*;
        if read && flags & (HOST_WRITE_ONLY | HOST_NO_ACCESS) != 0
            || write && flags & (HOST_READ_ONLY | HOST_NO_ACCESS) != 0
        {
            e.fail(InvalidOperation);
        }
    }

    fn start(t: &Target, g: Gate, blocking: bool) -> Expect {
        let mut e = g.expect(blocking);
        if t.root.is_none() {
            e.fail(InvalidContext);
        }
        e
    }

    /// The host side's rules: NULL, shared USM memory; a host range of
    /// `len` bytes that runs past the end of the address space is no more
    /// valid than NULL, and is refused the same way (nothing else could
    /// follow but a crash).
    fn host_rules(&self, p: usize, len: u128, region: Option<usize>, e: &mut Expect) {
        if p == 0 {
            e.fail(InvalidValue);
        }
        if (p as u128).saturating_add(len) > usize::MAX as u128 {
            e.fail(InvalidValue);
        }
        if region.is_some_and(|r| self.regions[r].shared) {
            e.may_fail(InvalidHostPtr);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn op_host(
        &mut self,
        read: bool,
        buf: Pick,
        offset: Num,
        size: Num,
        host: HostAt,
        blocking: bool,
        g: Gate,
    ) -> Result<(), TestCaseError> {
        let t = self.target(buf);
        let offset = offset.at(t.size);
        let size = size.at(t.size.saturating_sub(offset));
        let (p, region) = self.host(host);
        let mut e = World::start(&t, g, blocking);
        if size == 0 {
            e.may_fail(InvalidValue);
        }
        if offset as u128 + size as u128 > t.size as u128 {
            e.fail(InvalidValue);
        }
        self.host_rules(p, size as u128, region, &mut e);
        World::host_access(t.flags, read, !read, &mut e);
        let host_off = self.inside(region, p, size as u128);
        if !e.must_fail() && size != 0 && host_off.is_none() {
            // The host range is not memory the caller owns: the contract.
            return Ok(());
        }
        let wl = g.wait_list(&self.ctx);
        // SAFETY: the host range is the test's own memory (checked above),
        // or the call must fail before touching it; the command is waited
        // for below.
        let r = unsafe {
            if read {
                commands::enqueue_read_buffer(&self.q, &t.buf, blocking, offset, size, p as *mut u8, &wl)
            } else {
                commands::enqueue_write_buffer(&self.q, &t.buf, blocking, offset, size, p as *const u8, &wl)
            }
        };
        let what = format!(
            "{} {size} bytes at offset {offset} of a {}-byte buffer (flags {:#x}), host {p:#x}",
            if read { "reading" } else { "writing" },
            t.size,
            t.flags
        );
        if !e.check(&what, &r)? || !g.finish(&what, r.as_ref().unwrap(), self.lazy)? || size == 0 {
            return Ok(());
        }
        let (root, at, h, hr) = (t.root.unwrap(), t.origin + offset, host_off.unwrap(), region.unwrap());
        if read {
            let from = self.roots[root].data[at..at + size].to_vec();
            self.regions[hr].data[h..h + size].copy_from_slice(&from);
        } else {
            let from = self.regions[hr].data[h..h + size].to_vec();
            self.roots[root].data[at..at + size].copy_from_slice(&from);
        }
        Ok(())
    }

    fn op_copy(
        &mut self,
        src: Pick,
        dst: Pick,
        src_offset: Num,
        dst_offset: Num,
        size: Num,
        g: Gate,
    ) -> Result<(), TestCaseError> {
        let (s, d) = (self.target(src), self.target(dst));
        let (so, dof) = (src_offset.at(s.size), dst_offset.at(d.size));
        let size = size.at(s.size.saturating_sub(so).min(d.size.saturating_sub(dof)));
        let mut e = World::start(&s, g, false);
        if d.root.is_none() {
            e.fail(InvalidContext);
        }
        if size == 0 {
            e.may_fail(InvalidValue);
        }
        let n = size as u128;
        if so as u128 + n > s.size as u128 || dof as u128 + n > d.size as u128 {
            e.fail(InvalidValue);
        }
        let (sa, da) = (s.origin as u128 + so as u128, d.origin as u128 + dof as u128);
        if s.root.is_some() && s.root == d.root && size != 0 && sa < da + n && da < sa + n {
            e.fail(MemCopyOverlap);
        }
        let wl = g.wait_list(&self.ctx);
        let r = commands::enqueue_copy_buffer(&self.q, &s.buf, &d.buf, so, dof, size, &wl);
        let what = format!(
            "copying {size} bytes from offset {so} of a {}-byte buffer to offset {dof} of a {}-byte one",
            s.size, d.size
        );
        if !e.check(&what, &r)? || !g.finish(&what, r.as_ref().unwrap(), self.lazy)? {
            return Ok(());
        }
        let (sr, dr) = (s.root.unwrap(), d.root.unwrap());
        let from = self.roots[sr].data[sa as usize..][..size].to_vec();
        self.roots[dr].data[da as usize..][..size].copy_from_slice(&from);
        Ok(())
    }

    fn op_fill(
        &mut self,
        buf: Pick,
        pl: usize,
        offset: Num,
        size: Num,
        seed: u64,
        g: Gate,
    ) -> Result<(), TestCaseError> {
        let t = self.target(buf);
        let mut offset = offset.at(t.size);
        let mut size = size.at(t.size.saturating_sub(offset));
        if seed % 8 != 0 && pl.is_power_of_two() && pl <= 128 {
            // Mostly the shape the rules ask for, so that fills run.
            offset -= offset % pl;
            size -= size % pl;
        }
        let pattern = bytes(seed, pl);
        let mut e = World::start(&t, g, false);
        if pl == 0 || !pl.is_power_of_two() || pl > 128 || offset % pl.max(1) != 0 || size % pl.max(1) != 0 {
            e.fail(InvalidValue);
        }
        if size == 0 {
            e.may_fail(InvalidValue);
        }
        if offset as u128 + size as u128 > t.size as u128 {
            e.fail(InvalidValue);
        }
        let wl = g.wait_list(&self.ctx);
        let r = commands::enqueue_fill_buffer(&self.q, &t.buf, &pattern, offset, size, &wl);
        let what =
            format!("filling {size} bytes at offset {offset} of a {}-byte buffer with a {pl}-byte pattern", t.size);
        if !e.check(&what, &r)? || !g.finish(&what, r.as_ref().unwrap(), self.lazy)? {
            return Ok(());
        }
        let at = t.origin + offset;
        for (i, b) in self.roots[t.root.unwrap()].data[at..at + size].iter_mut().enumerate() {
            *b = pattern[i % pl];
        }
        Ok(())
    }

    fn op_host_rect(
        &mut self,
        read: bool,
        buf: Pick,
        spec: &RectSpec,
        host: HostAt,
        blocking: bool,
        g: Gate,
    ) -> Result<(), TestCaseError> {
        let t = self.target(buf);
        let region = region_of(spec);
        let (bo, brow, bslice) = side_args(&spec.a, region);
        let (ho, hrow, hslice) = side_args(&spec.b, region);
        let (p, hreg) = self.host(host);
        let mut e = World::start(&t, g, blocking);
        let bg = geometry(bo, region, brow, bslice, &mut e);
        let hg = geometry(ho, region, hrow, hslice, &mut e);
        if bg.is_some_and(|b| b.end > t.size as u128) {
            e.fail(InvalidValue);
        }
        self.host_rules(p, hg.map_or(0, |h| h.end), hreg, &mut e);
        World::host_access(t.flags, read, !read, &mut e);
        let host_base = hg.and_then(|h| self.inside(hreg, p, h.end));
        if !e.must_fail() && host_base.is_none() {
            return Ok(());
        }
        let rect = HostRect {
            buffer_origin: bo,
            host_origin: ho,
            region,
            buffer_row_pitch: brow,
            buffer_slice_pitch: bslice,
            host_row_pitch: hrow,
            host_slice_pitch: hslice,
        };
        let wl = g.wait_list(&self.ctx);
        // SAFETY: the host rectangle lies in the test's own memory (checked
        // above), or the call must fail before touching it; waited for below.
        let r = unsafe {
            if read {
                rect::enqueue_read_buffer_rect(&self.q, &t.buf, blocking, &rect, p as *mut u8, &wl)
            } else {
                rect::enqueue_write_buffer_rect(&self.q, &t.buf, blocking, &rect, p as *const u8, &wl)
            }
        };
        let what = format!(
            "{} rectangle {rect:?} of a {}-byte buffer (flags {:#x}), host {p:#x}",
            if read { "reading" } else { "writing" },
            t.size,
            t.flags
        );
        if !e.check(&what, &r)? || !g.finish(&what, r.as_ref().unwrap(), self.lazy)? {
            return Ok(());
        }
        let (bg, hg, h0, hr, root) = (bg.unwrap(), hg.unwrap(), host_base.unwrap(), hreg.unwrap(), t.root.unwrap());
        let w = region[0];
        for (b, h) in bg.rows(region).into_iter().zip(hg.rows(region)) {
            let (b, h) = (t.origin + b, h0 + h);
            if read {
                let from = self.roots[root].data[b..b + w].to_vec();
                self.regions[hr].data[h..h + w].copy_from_slice(&from);
            } else {
                let from = self.regions[hr].data[h..h + w].to_vec();
                self.roots[root].data[b..b + w].copy_from_slice(&from);
            }
        }
        Ok(())
    }

    fn op_copy_rect(&mut self, src: Pick, dst: Pick, spec: &RectSpec, g: Gate) -> Result<(), TestCaseError> {
        let (s, d) = (self.target(src), self.target(dst));
        let region = region_of(spec);
        let (so, srow, sslice) = side_args(&spec.a, region);
        let (dof, drow, dslice) = side_args(&spec.b, region);
        let mut e = World::start(&s, g, false);
        if d.root.is_none() {
            e.fail(InvalidContext);
        }
        let sg = geometry(so, region, srow, sslice, &mut e);
        let dg = geometry(dof, region, drow, dslice, &mut e);
        if sg.is_some_and(|g| g.end > s.size as u128) || dg.is_some_and(|g| g.end > d.size as u128) {
            e.fail(InvalidValue);
        }
        if let (Some(a), Some(b)) = (sg, dg) {
            if s.id.is_some() && s.id == d.id && a.row != b.row && a.slice != b.slice {
                e.fail(InvalidValue);
            }
        }
        let inside = !e.must_fail();
        if let (true, Some(a), Some(b)) = (inside && s.root.is_some() && s.root == d.root, sg, dg) {
            // Bytes of one buffer on both sides: exact overlap must be
            // refused; bounding spans that meet may be (OpenCL's appendix
            // checks spans, not bytes).
            let (sa, da) = (a.rows(region), b.rows(region));
            let mut src_bytes = vec![false; self.roots[s.root.unwrap()].data.len()];
            for r in &sa {
                src_bytes[s.origin + r..s.origin + r + region[0]].iter_mut().for_each(|x| *x = true);
            }
            if db_overlaps(&src_bytes, &da, d.origin, region[0]) {
                e.fail(MemCopyOverlap);
            } else {
                let (s0, s1) = (s.origin as u128 + a.start, s.origin as u128 + a.end);
                let (d0, d1) = (d.origin as u128 + b.start, d.origin as u128 + b.end);
                if s0 < d1 && d0 < s1 {
                    e.may_fail(MemCopyOverlap);
                }
            }
        }
        let rect = CopyRect {
            src_origin: so,
            dst_origin: dof,
            region,
            src_row_pitch: srow,
            src_slice_pitch: sslice,
            dst_row_pitch: drow,
            dst_slice_pitch: dslice,
        };
        let wl = g.wait_list(&self.ctx);
        let r = rect::enqueue_copy_buffer_rect(&self.q, &s.buf, &d.buf, &rect, &wl);
        let what = format!("copying rectangle {rect:?} from a {}-byte buffer to a {}-byte one", s.size, d.size);
        if !e.check(&what, &r)? || !g.finish(&what, r.as_ref().unwrap(), self.lazy)? {
            return Ok(());
        }
        let (sg, dg, sr, dr, w) = (sg.unwrap(), dg.unwrap(), s.root.unwrap(), d.root.unwrap(), region[0]);
        let before = self.roots[sr].data.clone();
        for (a, b) in sg.rows(region).into_iter().zip(dg.rows(region)) {
            let (a, b) = (s.origin + a, d.origin + b);
            self.roots[dr].data[b..b + w].copy_from_slice(&before[a..a + w]);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn op_map(
        &mut self,
        buf: Pick,
        flags: u64,
        offset: Num,
        size: Num,
        blocking: bool,
        seed: u64,
        bad_unmap: bool,
        g: Gate,
    ) -> Result<(), TestCaseError> {
        use map_flags::*;
        let t = self.target(buf);
        let offset = offset.at(t.size);
        let size = size.at(t.size.saturating_sub(offset));
        let mut e = World::start(&t, g, blocking);
        if size == 0 || offset as u128 + size as u128 > t.size as u128 {
            e.fail(InvalidValue);
        }
        if flags & !(READ | WRITE | WRITE_INVALIDATE_REGION) != 0
            || flags & WRITE_INVALIDATE_REGION != 0 && flags & (READ | WRITE) != 0
        {
            e.fail(InvalidValue);
        }
        if flags == 0 {
            e.may_fail(InvalidValue);
        }
        World::host_access(t.flags, flags & READ != 0, flags & (WRITE | WRITE_INVALIDATE_REGION) != 0, &mut e);
        let wl = g.wait_list(&self.ctx);
        let r = map::enqueue_map_buffer_after(&self.q, &t.buf, blocking, flags, offset, size, &wl);
        let what = format!("mapping {size} bytes at offset {offset} of a {}-byte buffer, flags {flags:#x}", t.size);
        if !e.check(&what, &r)? {
            return Ok(());
        }
        let (ptr, ev) = r.unwrap();
        let ran = g.finish(&what, &ev, false)?;
        let (root, at) = (t.root.unwrap(), t.origin + offset);
        if let Some(h) = self.roots[root].use_host_ptr {
            // "derived from the host_ptr specified when the buffer object
            // is created".
            prop_assert_eq!(ptr.as_ptr() as usize, h + at, "{}: not host_ptr + offset", what);
        }
        if ran && flags & READ != 0 {
            // SAFETY: the map completed: `size` bytes at `ptr` are the host's.
            let seen = unsafe { std::slice::from_raw_parts(ptr.as_ptr(), size) };
            diff(&format!("{what}: the mapped bytes"), seen, &self.roots[root].data[at..at + size])?;
        }
        if ran && flags & (WRITE | WRITE_INVALIDATE_REGION) != 0 {
            let new = bytes(seed, size);
            // SAFETY: mapped for writing, `size` bytes, until the unmap.
            unsafe { std::ptr::copy_nonoverlapping(new.as_ptr(), ptr.as_ptr(), size) };
            self.roots[root].data[at..at + size].copy_from_slice(&new);
        }
        prop_assert_eq!(t.buf.map_count(), 1, "{}: one map outstanding", what);
        if bad_unmap {
            let wrong = ptr.as_ptr().wrapping_add(1);
            let r = map::enqueue_unmap_mem_object(&self.q, &t.buf, wrong, &[]);
            let mut e = Expect::new();
            e.fail(InvalidValue);
            e.check("unmapping a pointer no map returned", &r)?;
            prop_assert_eq!(t.buf.map_count(), 1, "{}: a refused unmap changes nothing", what);
        }
        let r = map::enqueue_unmap_mem_object(&self.q, &t.buf, ptr.as_ptr(), &[]);
        Expect::ok().check("unmapping", &r)?;
        Gate::None.finish("unmapping", &r.unwrap(), false)?;
        Ok(())
    }
}

/// Whether any destination row (`rows` + `origin`, `width` bytes each)
/// touches a source byte.
fn db_overlaps(src: &[bool], rows: &[usize], origin: usize, width: usize) -> bool {
    rows.iter().any(|&r| src[origin + r..origin + r + width].iter().any(|&x| x))
}

impl Drop for World {
    fn drop(&mut self) {
        // Nothing may run on the test's memory after it is gone.
        let _ = self.q.finish();
    }
}

fn roots() -> BoxedStrategy<Vec<(u64, Num)>> {
    let flags = prop::sample::select(vec![
        0,
        mf::READ_WRITE,
        mf::READ_ONLY,
        mf::WRITE_ONLY,
        mf::HOST_READ_ONLY,
        mf::HOST_WRITE_ONLY,
        mf::HOST_NO_ACCESS,
        mf::ALLOC_HOST_PTR,
    ]);
    let size = prop_oneof![
        1 => (0u16..256).prop_map(Num::In),
        4 => (256u16..4096).prop_map(Num::In),
    ];
    prop::collection::vec((flags, size), 1..4).boxed()
}

fn subs() -> BoxedStrategy<Vec<(u8, u8, Num)>> {
    prop::collection::vec((any::<u8>(), 0u8..8, num()), 0..3).boxed()
}

fn run(roots: &[(u64, Num)], subs: &[(u8, u8, Num)], ops: &[Op], lazy: bool) -> Result<(), TestCaseError> {
    let mut w = World::new(roots, subs, lazy);
    w.check("creating the buffers")?;
    for (i, op) in ops.iter().enumerate() {
        crate::counted(op, || w.apply(op))?;
        w.check(&format!("op {i} ({op:?})"))?;
    }
    crate::print_tally("so far");
    Ok(())
}

proptest! {
    #![proptest_config(config(256))]

    /// One call on fresh buffers.
    #[test]
    fn buffer_single_calls_match_the_model(roots in roots(), subs in subs(), op in op()) {
        run(&roots, &subs, std::slice::from_ref(&op), false)?;
    }
}

proptest! {
    #![proptest_config(config(96))]

    /// Sequences of calls on the same buffers; `lazy`: without waiting for
    /// each command.
    #[test]
    fn buffer_sequences_match_the_model(
        roots in roots(),
        subs in subs(),
        ops in prop::collection::vec(op(), 1..20),
        lazy in any::<bool>(),
    ) {
        run(&roots, &subs, &ops, lazy)?;
    }
}
