//! `cl_arm_import_memory` (seed 004) on the CPU device: every flag,
//! property and error rule with its code, host memory imported zero-copy
//! (malloc'ed and mmap'ed memory, holes, unpopulated pages, page sharing,
//! read-only pages) through every buffer command and a kernel, with the
//! buffer's counters at 0 bytes moved. dma-bufs need udmabuf, heaps or vgem:
//! the guest tests (`tests/guest/arm_import.rs`) import those.

use std::ffi::c_void;
use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind::{self, *};
use dmabridge::ext::arm_import::{
    self, import_host, import_memory, IMPORT_TYPE_ARM, IMPORT_TYPE_DMA_BUF_ARM, IMPORT_TYPE_HOST_ARM,
};
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::buffer::{commands, mem_flags, mem_info, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::info::{device_extensions, platform_extensions, InfoValue};
use dmabridge::runtime::kernel::{self, Kernel};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::Queue;
use dmabridge_tests::{cpu_context, cpu_context_and_queue, cpu_device, err_kind};
use rustix::mm::{MapFlags, ProtFlags};

/// An anonymous private mapping of `pages` pages (at most 64), unmapped
/// when dropped.
struct Region {
    ptr: *mut u8,
    len: usize,
    /// Pages unmapped by [`Region::unmap_page`], one bit each: no longer
    /// ours, whatever another thread has mapped there since.
    holes: std::cell::Cell<u64>,
}

impl Region {
    fn new(pages: usize, prot: ProtFlags) -> Region {
        assert!(pages <= 64);
        let len = pages * page();
        // SAFETY: a fresh anonymous mapping that only this test uses.
        let ptr = unsafe { rustix::mm::mmap_anonymous(null_mut(), len, prot, MapFlags::PRIVATE) }.unwrap();
        Region { ptr: ptr.cast(), len, holes: Default::default() }
    }

    fn addr(&self, offset: usize) -> *mut u8 {
        assert!(offset <= self.len);
        self.ptr.wrapping_add(offset)
    }

    /// Unmaps page `i` (punching a hole into the region).
    fn unmap_page(&self, i: usize) {
        assert!(i < self.len / page() && self.holes.get() & 1 << i == 0);
        // SAFETY: a page of our own mapping that nothing refers to.
        unsafe { rustix::mm::munmap(self.addr(i * page()).cast(), page()) }.unwrap();
        self.holes.set(self.holes.get() | 1 << i);
    }

    /// Whether every hole is still unmapped. The kernel gives a freshly
    /// unmapped page to the next mmap of any thread of the process (the
    /// tests of this binary run in parallel), so a hole may have been
    /// taken since it was punched.
    fn holes_intact(&self) -> bool {
        (0..self.len / page()).filter(|&i| self.holes.get() & 1 << i != 0).all(|i| {
            let at = dmabridge::sys::addr::HostAddr(self.addr(i * page()) as usize);
            dmabridge::sys::vm::mapped(at, page()).unwrap().is_none()
        })
    }

    /// A `/proc/self/smaps` field (in kB) of the mapping holding `addr`.
    fn smaps_kb(addr: *const u8, field: &str) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ') {
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                        inside = (lo..hi).contains(&(addr as usize));
                        continue;
                    }
                }
            }
            if inside {
                if let Some(v) = line.strip_prefix(&format!("{field}:")) {
                    return v.trim().trim_end_matches(" kB").trim().parse().unwrap();
                }
            }
        }
        panic!("no mapping holds {addr:?}");
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // Page by page, skipping the holes: one may hold another thread's
        // mapping by now (see `holes_intact`).
        for i in (0..self.len / page()).filter(|&i| self.holes.get() & 1 << i == 0) {
            // SAFETY: a page of our own mapping, still ours; nothing refers
            // to it once the region goes.
            let _ = unsafe { rustix::mm::munmap(self.addr(i * page()).cast(), page()) };
        }
    }
}

fn page() -> usize {
    dmabridge::sys::page_size()
}

fn cpu_loc() -> Location {
    Location::Device(cpu_device().index)
}

/// Imports `size` bytes at `ptr` with `flags` (host memory).
fn host(ctx: &Arc<Context>, flags: u64, ptr: *mut u8, size: usize) -> Result<Arc<Buffer>, dmabridge::error::ClError> {
    // SAFETY (these tests): the memory stays mapped while the buffer lives
    // and is only touched through the buffer or while no command runs.
    unsafe { import_host(ctx, flags, ptr, size) }
}

fn read(q: &Arc<Queue>, b: &Arc<Buffer>, offset: usize, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: blocking; `out` holds `len` bytes.
    unsafe { commands::enqueue_read_buffer(q, b, true, offset, len, out.as_mut_ptr(), &[]) }.unwrap();
    out
}

fn write(q: &Arc<Queue>, b: &Arc<Buffer>, offset: usize, data: &[u8]) -> Result<Event, dmabridge::error::ClError> {
    // SAFETY: blocking; `data` holds the bytes.
    unsafe { commands::enqueue_write_buffer(q, b, true, offset, data.len(), data.as_ptr(), &[]) }
}

fn zero_moved(b: &Buffer) {
    for loc in [Location::Host, cpu_loc()] {
        let s = b.stats(loc);
        assert_eq!((s.bytes_in, s.bytes_out, s.bytes_allocated), (0, 0, 0), "{loc:?}: zero copy, nothing allocated");
    }
}

#[test]
fn flags_properties_and_arguments_answer_the_seeds_codes() {
    let ctx = cpu_context();
    let mut data = vec![5u8; 256];
    let p = data.as_mut_ptr();
    let k = |flags: u64, props: &[(u64, u64)], memory: *mut c_void, size: usize| -> ClErrorKind {
        // SAFETY: `data` outlives every buffer made here; refused calls use nothing.
        err_kind(unsafe { import_memory(&ctx, flags, props, memory, size) })
    };
    use mem_flags::*;
    let host_type = [(IMPORT_TYPE_ARM, IMPORT_TYPE_HOST_ARM)];
    // Flags.
    for bad in [
        ALLOC_HOST_PTR,
        COPY_HOST_PTR,
        USE_HOST_PTR | COPY_HOST_PTR,
        READ_WRITE | READ_ONLY,
        WRITE_ONLY | READ_ONLY,
        HOST_READ_ONLY | HOST_NO_ACCESS,
        HOST_WRITE_ONLY | HOST_READ_ONLY,
        1 << 12,
        1 << 63,
    ] {
        assert_eq!(k(bad, &host_type, p.cast(), 256), InvalidValue, "flags {bad:#x}");
    }
    // Properties.
    assert_eq!(k(0, &[(0x4195, 0)], p.cast(), 256), InvalidValue, "unknown property name");
    assert_eq!(k(0, &[(IMPORT_TYPE_ARM, 0x40B5)], p.cast(), 256), InvalidValue, "CL_IMPORT_TYPE_PROTECTED_ARM");
    assert_eq!(k(0, &[(IMPORT_TYPE_ARM, 0)], p.cast(), 256), InvalidValue, "type 0");
    assert_eq!(k(0, &[(IMPORT_TYPE_ARM, IMPORT_TYPE_HOST_ARM); 2], p.cast(), 256), InvalidValue, "given twice");
    // memory and size.
    assert_eq!(k(0, &[], null_mut(), 256), InvalidValue, "memory NULL");
    assert_eq!(k(0, &[(IMPORT_TYPE_ARM, IMPORT_TYPE_DMA_BUF_ARM)], null_mut(), 256), InvalidValue);
    assert_eq!(k(0, &[], p.cast(), 0), InvalidValue, "size 0");
    // A dma-buf fd that is negative, closed, or not a dma-buf.
    let dma = [(IMPORT_TYPE_ARM, IMPORT_TYPE_DMA_BUF_ARM)];
    let mut fd: i32 = -1;
    assert_eq!(k(0, &dma, (&mut fd as *mut i32).cast(), 256), InvalidValue, "negative fd");
    let memfd = dmabridge::sys::memfd::Memfd::create(c"not-a-dmabuf", 4096).unwrap();
    assert_eq!(err_kind(arm_import::import_dma_buf(&ctx, 0, memfd.as_fd(), 4096)), InvalidValue, "a memfd");
    assert_eq!(err_kind(arm_import::import_dma_buf(&ctx, 0, memfd.as_fd(), 0)), InvalidValue, "size 0");
    assert_eq!(err_kind(arm_import::import_dma_buf(&ctx, COPY_HOST_PTR, memfd.as_fd(), 4096)), InvalidValue);

    // Valid: NULL properties (empty), HOST explicitly, and USE_HOST_PTR ignored.
    let import = |flags: u64, props: &[(u64, u64)]| {
        // SAFETY: as above.
        unsafe { import_memory(&ctx, flags, props, p.cast(), 256) }.unwrap()
    };
    let b = import(0, &[]);
    assert_eq!(b.flags(), READ_WRITE, "no access flag: READ_WRITE");
    assert_eq!(b.info(mem_info::SIZE).unwrap(), InfoValue::Usize(256));
    drop(b);
    let b = import(USE_HOST_PTR, &host_type);
    assert_eq!(b.flags(), READ_WRITE, "CL_MEM_USE_HOST_PTR is ignored");
    assert_eq!(b.info(mem_info::HOST_PTR).unwrap(), InfoValue::Usize(0));
    drop(b);
    for ok in [READ_ONLY, WRITE_ONLY | HOST_READ_ONLY, READ_WRITE | HOST_NO_ACCESS, HOST_WRITE_ONLY] {
        let b = import(ok, &host_type);
        assert_eq!(b.flags() & !READ_WRITE, ok & !READ_WRITE, "flags {ok:#x}");
    }
    drop(data);
}

#[test]
fn host_memory_is_used_in_place_by_every_buffer_command() {
    let (ctx, q) = cpu_context_and_queue();
    // Unaligned, spanning pages: 3 pages + change from an odd offset.
    let mut mem: Vec<u8> = (0..4 * page()).map(|i| (i * 7 % 251) as u8).collect();
    let expect = mem.clone();
    let (off, n) = (13, 3 * page() + 100);
    let p = mem.as_mut_ptr().wrapping_add(off);
    let b = host(&ctx, 0, p, n).unwrap();
    assert!(b.is_imported());

    // Read sees the application's bytes.
    assert!(read(&q, &b, 0, n) == expect[off..off + n]);
    // A write through CL lands in the application's memory.
    write(&q, &b, 10, b"imported").unwrap();
    assert_eq!(&mem[off + 10..off + 18], b"imported");
    // Fill.
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[0xAB, 0xCD], 100, 64, &[]).unwrap()]).unwrap();
    assert!(mem[off + 100..off + 164].chunks(2).all(|c| c == [0xAB, 0xCD]));
    // Map returns the application's own address: no copy.
    let (m, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ | map_flags::WRITE, 200, 16).unwrap();
    assert_eq!(m.as_ptr(), p.wrapping_add(200), "the map is the memory itself");
    // SAFETY: mapped for writing, 16 bytes.
    unsafe { m.as_ptr().write_bytes(0x5A, 16) };
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, m.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(read(&q, &b, 200, 16), [0x5A; 16]);
    // Sub-buffer (aligned origin) reads the same memory.
    let align = cpu_device().max_alignment as usize;
    let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, align, 256).unwrap();
    assert!(read(&q, &sub, 0, 256) == mem[off + align..off + align + 256]);
    write(&q, &sub, 0, &[1, 2, 3]).unwrap();
    assert_eq!(&mem[off + align..off + align + 3], &[1, 2, 3]);
    // Copy between two imports, and from an ordinary buffer.
    let mut other = vec![0u8; 1000];
    let b2 = host(&ctx, 0, other.as_mut_ptr(), 1000).unwrap();
    Event::wait(&[commands::enqueue_copy_buffer(&q, &b, &b2, 0, 0, 1000, &[]).unwrap()]).unwrap();
    assert!(other[..] == mem[off..off + 1000]);
    // Rectangles: read a 4x2 block, write one back elsewhere, copy one.
    let r = HostRect { buffer_origin: [1, 1, 0], region: [4, 2, 1], buffer_row_pitch: 16, ..Default::default() };
    let mut block = [0u8; 8];
    // SAFETY: blocking; `block` holds the packed rectangle.
    unsafe { rect::enqueue_read_buffer_rect(&q, &b, true, &r, block.as_mut_ptr(), &[]) }.unwrap();
    assert_eq!(block[..4], mem[off + 17..off + 21]);
    assert_eq!(block[4..], mem[off + 33..off + 37]);
    let w = HostRect { buffer_origin: [0, 20, 0], region: [4, 2, 1], buffer_row_pitch: 16, ..Default::default() };
    // SAFETY: blocking; `block` holds the packed rectangle.
    unsafe { rect::enqueue_write_buffer_rect(&q, &b2, true, &w, block.as_ptr(), &[]) }.unwrap();
    assert_eq!(other[320..324], block[..4]);
    let c = CopyRect {
        src_origin: [0, 0, 0],
        dst_origin: [0, 50, 0],
        region: [8, 2, 1],
        src_row_pitch: 16,
        dst_row_pitch: 16,
        ..Default::default()
    };
    Event::wait(&[rect::enqueue_copy_buffer_rect(&q, &b, &b2, &c, &[]).unwrap()]).unwrap();
    assert_eq!(other[800..808], mem[off..off + 8]);
    // A built-in kernel on the CPU device writes the imported memory.
    let k = Kernel::builtin(&ctx, Platform::get().cpu(), "copy_bytes").unwrap();
    k.set_arg_buffer(0, &b2).unwrap();
    k.set_arg_buffer(1, &b).unwrap();
    k.set_arg_scalar(2, &512u64.to_ne_bytes()).unwrap();
    // SAFETY: both buffers hold 512 bytes.
    Event::wait(&[unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap()]).unwrap();
    assert!(other[..512] == mem[off..off + 512]);
    // Nothing was ever transferred or allocated: the memory is used in place.
    zero_moved(&b);
    zero_moved(&b2);
    drop((sub, b, b2, k));
}

#[test]
fn unmapped_pages_are_refused_and_unpopulated_ones_committed_and_locked() {
    let ctx = cpu_context();
    // Holes of our own at pages 2 and 5 (what lies past a mapping's end is
    // some other mapping as often as not: the kernel packs them). A round
    // whose hole another thread's mmap took before the imports ran proves
    // nothing and is run again on a fresh region.
    let mut round = 0;
    let region = loop {
        let region = Region::new(6, ProtFlags::READ | ProtFlags::WRITE);
        region.unmap_page(2);
        region.unmap_page(5);
        // Any byte in the hole, or a range across it: CL_INVALID_OPERATION.
        let kinds = [
            host(&ctx, 0, region.addr(2 * page()), 10).map(drop),
            host(&ctx, 0, region.addr(page()), 2 * page()).map(drop),
            host(&ctx, 0, region.addr(2 * page() - 1), 2).map(drop), // one byte into the hole
            host(&ctx, 0, region.addr(4 * page()), 2 * page()).map(drop), // past the end
        ]
        .map(|r| r.err().map(|e| e.kind));
        if region.holes_intact() {
            assert_eq!(kinds, [Some(InvalidOperation); 4], "in the hole, across it, one byte into it, past the end");
            break region;
        }
        round += 1;
        assert!(round < 20, "another thread's mmap took a hole 20 times in a row");
    };
    // Page 0 and the top of the address space are never mapped.
    assert_eq!(err_kind(host(&ctx, 0, 16 as *mut u8, 16)), InvalidOperation);
    assert_eq!(err_kind(host(&ctx, 0, usize::MAX as *mut u8, 16)), InvalidOperation, "wraps");
    assert_eq!(err_kind(host(&ctx, 0, (usize::MAX - page()) as *mut u8, usize::MAX - 1)), InvalidOperation);
    // CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM is for dma-bufs only.
    let whole = arm_import::IMPORT_MEMORY_WHOLE_ALLOCATION_ARM;
    assert_eq!(err_kind(host(&ctx, 0, region.addr(0), whole)), InvalidValue);

    // Mapped but never touched: fine; the import commits and locks the pages.
    let fresh = Region::new(8, ProtFlags::READ | ProtFlags::WRITE);
    assert_eq!(Region::smaps_kb(fresh.ptr, "Rss"), 0, "not populated yet");
    let b = host(&ctx, 0, fresh.addr(100), 5 * page()).unwrap();
    let span_kb = 6 * page() / 1024; // pages 0..6 hold bytes 100..100+5 pages
    assert_eq!(Region::smaps_kb(fresh.ptr, "Locked"), span_kb, "the whole pages around the range are locked");
    assert!(Region::smaps_kb(fresh.ptr, "Rss") >= span_kb, "and committed");
    let (_, q) = cpu_context_and_queue();
    drop(q);
    drop(b);
    assert_eq!(Region::smaps_kb(fresh.ptr, "Locked"), 0, "released with the buffer");
}

#[test]
fn pages_that_cannot_be_committed_are_refused_and_left_unlocked() {
    let ctx = cpu_context();
    // A shared mapping of a one-page file, three pages long: the last two
    // are mapped but have no page behind them (touching them is SIGBUS).
    let memfd = rustix::fs::memfd_create(c"short-file", rustix::fs::MemfdFlags::CLOEXEC).unwrap();
    rustix::fs::ftruncate(&memfd, page() as u64).unwrap();
    // SAFETY: a fresh shared mapping of our own memfd; only its first page
    // is touched (by the kernel, through mlock).
    let ptr = unsafe {
        rustix::mm::mmap(null_mut(), 3 * page(), ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &memfd, 0)
    }
    .unwrap()
    .cast::<u8>();
    let region = Region { ptr, len: 3 * page(), holes: Default::default() };
    let e = host(&ctx, 0, region.addr(8), 3 * page() - 8).unwrap_err();
    assert_eq!(e.kind, InvalidOperation, "pages that cannot be committed are no memory to import: {e}");
    assert_eq!(Region::smaps_kb(ptr, "Locked"), 0, "the failed import left no page locked");
    // With another import holding the first page, the failure leaves it locked.
    let first = host(&ctx, 0, region.addr(0), 16).unwrap();
    assert_eq!(err_kind(host(&ctx, 0, region.addr(8), 3 * page() - 8)), InvalidOperation);
    assert_eq!(Region::smaps_kb(ptr, "Locked"), page() / 1024, "the other import's page stays locked");
    drop(first);
    assert_eq!(Region::smaps_kb(ptr, "Locked"), 0);
    // The committable page alone imports fine.
    let b = host(&ctx, 0, region.addr(0), page()).unwrap();
    drop(b);
    assert_eq!(Region::smaps_kb(ptr, "Locked"), 0);
}

#[test]
fn unaligned_imports_sharing_a_page_need_the_same_flags() {
    let ctx = cpu_context();
    let region = Region::new(2, ProtFlags::READ | ProtFlags::WRITE);
    use mem_flags::*;
    let a = host(&ctx, READ_WRITE, region.addr(0), 100).unwrap();
    // Another import in the same page with other flags: refused.
    assert_eq!(err_kind(host(&ctx, READ_ONLY, region.addr(200), 100)), InvalidValue);
    assert_eq!(err_kind(host(&ctx, READ_WRITE | HOST_READ_ONLY, region.addr(200), 100)), InvalidValue);
    assert_eq!(err_kind(host(&ctx, READ_ONLY, region.addr(page() - 1), 2)), InvalidValue, "straddles into it");
    // The same flags (READ_WRITE given or implied, USE_HOST_PTR ignored) work.
    let b = host(&ctx, 0, region.addr(200), 100).unwrap();
    let c = host(&ctx, READ_WRITE | USE_HOST_PTR, region.addr(0), 100).unwrap();
    // The next page is free for any flags.
    let d = host(&ctx, READ_ONLY, region.addr(page() + 8), 16).unwrap();
    // Still shared with `b` and `c` after `a` goes...
    drop(a);
    assert_eq!(err_kind(host(&ctx, READ_ONLY, region.addr(300), 10)), InvalidValue);
    assert_eq!(Region::smaps_kb(region.ptr, "Locked"), 2 * page() / 1024, "pages other imports span stay locked");
    // ...and free once every import of the page is released.
    drop((b, c));
    let e = host(&ctx, READ_ONLY, region.addr(300), 10).unwrap();
    assert_eq!(e.flags(), READ_ONLY);
    drop((d, e));
    assert_eq!(Region::smaps_kb(region.ptr, "Locked"), 0);
}

#[test]
fn concurrent_imports_sharing_a_page_keep_it_locked_until_the_last_goes() {
    let ctx = cpu_context();
    let region = Region::new(1, ProtFlags::READ | ProtFlags::WRITE);
    let base = region.ptr as usize;
    // Threads import and release ranges of one page over and over: whoever
    // holds an import sees the page locked, whatever the others release
    // (mlock does not nest: a release must not unlock a page another import
    // spans), and the flags rule refuses other flags while any import lives.
    std::thread::scope(|s| {
        for t in 0..4 {
            let ctx = ctx.clone();
            s.spawn(move || {
                for i in 0..40 {
                    let b = host(&ctx, 0, (base + t * 64 + i) as *mut u8, 16).unwrap();
                    assert_eq!(Region::smaps_kb(base as *const u8, "Locked"), page() / 1024, "locked while imported");
                    let other = host(&ctx, mem_flags::READ_ONLY, (base + 1024) as *mut u8, 8);
                    assert_eq!(err_kind(other), InvalidValue, "other flags while the page is shared");
                    drop(b);
                }
            });
        }
    });
    assert_eq!(Region::smaps_kb(region.ptr, "Locked"), 0, "unlocked with the last import");
}

#[test]
fn read_only_pages_make_a_read_only_buffer_that_nothing_writes() {
    let (ctx, q) = cpu_context_and_queue();
    let region = Region::new(1, ProtFlags::READ);
    let b = host(&ctx, mem_flags::READ_WRITE, region.addr(0), 256).unwrap();
    assert_eq!(b.flags(), mem_flags::READ_ONLY | mem_flags::HOST_READ_ONLY, "the memory's protection wins");
    assert_eq!(read(&q, &b, 0, 16), [0; 16]);
    assert_eq!(err_kind(write(&q, &b, 0, &[1])), InvalidOperation);
    assert_eq!(err_kind(commands::enqueue_fill_buffer(&q, &b, &[1], 0, 16, &[])), InvalidOperation);
    let mut other = vec![1u8; 256];
    let src = host(&ctx, 0, other.as_mut_ptr(), 256).unwrap();
    assert_eq!(err_kind(commands::enqueue_copy_buffer(&q, &src, &b, 0, 0, 16, &[])), InvalidOperation);
    let c = CopyRect { region: [4, 1, 1], ..Default::default() };
    assert_eq!(err_kind(rect::enqueue_copy_buffer_rect(&q, &src, &b, &c, &[])), InvalidOperation);
    assert_eq!(err_kind(map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE, 0, 16)), InvalidOperation);
    let k = Kernel::builtin(&ctx, Platform::get().cpu(), "copy_bytes").unwrap();
    k.set_arg_buffer(0, &b).unwrap();
    k.set_arg_buffer(1, &src).unwrap();
    k.set_arg_scalar(2, &16u64.to_ne_bytes()).unwrap();
    // SAFETY: refused at enqueue.
    assert_eq!(err_kind(unsafe { kernel::enqueue_task(&q, &k, &[]) }), InvalidOperation);
    // Reading it (copy out, kernel source, map for reading) works.
    Event::wait(&[commands::enqueue_copy_buffer(&q, &b, &src, 0, 0, 16, &[]).unwrap()]).unwrap();
    assert_eq!(other[..16], [0; 16]);
    k.set_arg_buffer(0, &src).unwrap();
    k.set_arg_buffer(1, &b).unwrap();
    // SAFETY: both hold 16 bytes.
    Event::wait(&[unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap()]).unwrap();
    let (m, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 16).unwrap();
    map::enqueue_unmap_mem_object(&q, &b, m.as_ptr(), &[]).unwrap();
    // A mapping without any access cannot be used at all.
    let none = Region::new(1, ProtFlags::empty());
    assert_eq!(err_kind(host(&ctx, 0, none.addr(0), 16)), InvalidOperation);
    q.finish().unwrap();
}

#[test]
fn a_context_with_a_device_that_cannot_reach_host_memory_refuses_the_import() {
    // A device without host-unified memory could only use a copy.
    let cpu = cpu_device();
    let dev = Arc::new(dmabridge::runtime::device::Device {
        index: 77,
        name: "no-unified".into(),
        device_type: dmabridge::runtime::device::DeviceType::Accelerator,
        max_mem_alloc_size: 1 << 20,
        max_alignment: cpu.max_alignment,
        host_unified_memory: false,
        usm: cpu.usm,
        svm: 0,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    });
    let ctx = Context::new(&[cpu, dev]).unwrap();
    let mut data = vec![0u8; 64];
    let e = host(&ctx, 0, data.as_mut_ptr(), 64).unwrap_err();
    assert_eq!(e.kind, InvalidOperation);
    assert!(e.to_string().contains("no-unified"), "names the device: {e}");
}

#[test]
fn the_cpu_device_and_platform_report_the_import_extensions() {
    let cpu = cpu_device();
    let names: Vec<String> = device_extensions(&cpu).into_iter().map(|e| e.name).collect();
    for ext in ["cl_arm_import_memory", "cl_arm_import_memory_host", "cl_arm_import_memory_dma_buf"] {
        assert!(names.iter().any(|n| n == ext), "{ext} in {names:?}");
        assert!(platform_extensions().iter().any(|e| e.name == ext));
    }
}
