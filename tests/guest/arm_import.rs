//! `cl_arm_import_memory` (seed 004) on the guest's kernel objects and
//! devices: dma-bufs from udmabuf and the DMA-BUF system heap imported on
//! the CPU device (zero copy, the fd closed after import, read-only
//! dma-bufs), and on edu behind the IOMMU: host memory and dmabridge's own
//! exported dma-bufs zero-copy (resident in edu's domain, data checked both
//! ways, no byte transferred), udmabuf and system-heap dma-bufs refused with
//! a clear error (VFIO cannot pin their PFN-mapped pages), and a context
//! with the BAR device refused (it could only use a copy).
//!
//! As in `buffer.rs`, each test builds the platform in a child process.

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::arm_import::{self, import_dma_buf, import_host};
use dmabridge::runtime::backend::bar::ENV;
use dmabridge::runtime::backend::domain::DmaDomain;
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::store::{CpuSyncs, Location};
use dmabridge::runtime::buffer::{commands, mem_flags, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::info::device_extensions;
use dmabridge::runtime::kernel::{self, Kernel};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::Queue;
use dmabridge::sys::addr::HostAddr;
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::dma_heap::DmaHeap;
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::mmap::Access;
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge_tests::{err_kind, run_in_child, Resources, IVSHMEM};

use super::buffer::{edu, pattern, queue, read};
use rustix::fs::OFlags;

fn in_child(name: &str, bar: Option<&str>) {
    run_in_child(&format!("arm_import::{name}"), &[(ENV, bar)]);
}

/// The CPU device and the edu device in one context, with a queue on each,
/// and edu's DMA domain.
struct EduContext {
    cpu: Arc<Device>,
    edu: Arc<Device>,
    domain: Arc<DmaDomain>,
    ctx: Arc<Context>,
    qc: Arc<Queue>,
    qe: Arc<Queue>,
}

fn edu_context() -> EduContext {
    let p = Platform::get();
    let (cpu, edu) = (p.cpu().clone(), edu(p));
    let domain = edu.dma_domain().expect("edu sits in a DMA domain");
    let ctx = Context::new(&[cpu.clone(), edu.clone()]).unwrap();
    let (qc, qe) = (queue(&ctx, &cpu), queue(&ctx, &edu));
    EduContext { cpu, edu, domain, ctx, qc, qe }
}

/// The CPU device alone in a context, with a queue.
fn cpu_context() -> (Arc<Device>, Arc<Context>, Arc<Queue>) {
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = queue(&ctx, &cpu);
    (cpu, ctx, q)
}

fn write(q: &Arc<Queue>, b: &Arc<Buffer>, offset: usize, data: &[u8]) -> Result<Event, dmabridge::error::ClError> {
    // SAFETY: blocking write from `data`.
    unsafe { commands::enqueue_write_buffer(q, b, true, offset, data.len(), data.as_ptr(), &[]) }
}

/// No byte of the buffer was moved or allocated anywhere.
fn zero_copy(b: &Buffer, devices: &[&Arc<Device>]) {
    let locs = std::iter::once(Location::Host).chain(devices.iter().map(|d| Location::Device(d.index)));
    for loc in locs {
        let s = b.stats(loc);
        assert_eq!((s.bytes_in, s.bytes_out, s.bytes_allocated), (0, 0, 0), "{loc:?}: {s:?}");
    }
}

/// A udmabuf dma-buf over a fresh memfd of `pages` pages holding `data`.
fn udmabuf_with(pages: usize, data: &[u8]) -> (Memfd, DmaBuf) {
    let len = pages * 4096;
    let m = Memfd::create(c"import-test", len as u64).unwrap();
    m.add_seals(Seals::SHRINK).unwrap();
    m.map(0, len, Access::Write).unwrap().write_bytes(0, data);
    let d = Udmabuf::open().unwrap().create(m.as_fd(), 0, len as u64).unwrap();
    (m, d)
}

#[test]
fn cpu_device_imports_a_udmabuf_in_place() {
    in_child("child_cpu_device_imports_a_udmabuf_in_place", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_cpu_device_imports_a_udmabuf_in_place() {
    let (cpu, ctx, q) = cpu_context();
    const N: usize = 3 * 4096;
    let (memfd, dmabuf) = udmabuf_with(3, &pattern(N, 3));
    // Larger than the dma-buf: CL_INVALID_VALUE; smaller is fine.
    assert_eq!(err_kind(import_dma_buf(&ctx, 0, dmabuf.as_fd(), N + 1)), ClErrorKind::InvalidValue);
    let small = import_dma_buf(&ctx, 0, dmabuf.as_fd(), 100).unwrap();
    let whole = import_dma_buf(&ctx, 0, dmabuf.as_fd(), arm_import::IMPORT_MEMORY_WHOLE_ALLOCATION_ARM).unwrap();
    assert_eq!(whole.size(), N, "CL_IMPORT_MEMORY_WHOLE_ALLOCATION_ARM: the whole dma-buf");
    assert_eq!(read(&q, &small), pattern(N, 3)[..100]);
    let b = import_dma_buf(&ctx, mem_flags::READ_WRITE, dmabuf.as_fd(), N).unwrap();
    drop(dmabuf); // the application closes its fd: the buffer has its own
    assert_eq!(b.flags(), mem_flags::READ_WRITE);
    assert_eq!(b.cpu_syncs(), CpuSyncs::default(), "nothing touched yet");
    // Every CPU access is bracketed with DMA_BUF_IOCTL_SYNC start/end in
    // its direction: (read, write, read_write) as (starts, ends).
    let syncs = |r: u64, w: u64, rw: u64| CpuSyncs { read: (r, r), write: (w, w), read_write: (rw, rw) };
    assert_eq!(read(&q, &b), pattern(N, 3));
    assert_eq!(b.cpu_syncs(), syncs(1, 0, 0), "a read");
    // Writes, fills and maps reach the memfd's pages: the dma-buf's own.
    write(&q, &b, 5000, b"through the import").unwrap();
    Event::wait(&[commands::enqueue_fill_buffer(&q, &b, &[9; 4], 8192, 64, &[]).unwrap()]).unwrap();
    assert_eq!(b.cpu_syncs(), syncs(1, 2, 0), "a write and a fill");
    let view = memfd.map(0, N, Access::Read).unwrap();
    let mut got = [0u8; 18];
    view.read_bytes(5000, &mut got);
    assert_eq!(&got, b"through the import");
    assert_eq!(view.read_u32(8192 + 60), u32::from_ne_bytes([9; 4]));
    let (m, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE, 0, 16).unwrap();
    let mapped = b.cpu_syncs();
    assert_eq!((mapped.write.0, mapped.write.1), (3, 2), "a map begins a CPU access...");
    // SAFETY: mapped for writing, 16 bytes, until unmapped.
    unsafe { m.as_ptr().write_bytes(0x77, 16) };
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, m.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(b.cpu_syncs(), syncs(1, 3, 0), "...that its unmap ends");
    assert_eq!(view.read_u32(12), 0x7777_7777);
    // A kernel on the CPU device, from one import into another.
    let (_m2, other) = udmabuf_with(3, &[0; 16]);
    let dst = import_dma_buf(&ctx, 0, other.as_fd(), N).unwrap();
    let k = Kernel::builtin(&ctx, &cpu, "copy_bytes").unwrap();
    k.set_arg_buffer(0, &dst).unwrap();
    k.set_arg_buffer(1, &b).unwrap();
    k.set_arg_scalar(2, &(N as u64).to_ne_bytes()).unwrap();
    // SAFETY: both buffers hold N bytes.
    Event::wait(&[unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap()]).unwrap();
    assert_eq!((b.cpu_syncs(), dst.cpu_syncs()), (syncs(1, 3, 1), syncs(0, 0, 1)), "a kernel");
    // A copy reads one and writes the other; between two places of one
    // buffer it reads and writes.
    Event::wait(&[commands::enqueue_copy_buffer(&q, &b, &dst, 0, 0, 64, &[]).unwrap()]).unwrap();
    assert_eq!((b.cpu_syncs(), dst.cpu_syncs()), (syncs(2, 3, 1), syncs(0, 1, 1)), "a copy");
    Event::wait(&[commands::enqueue_copy_buffer(&q, &dst, &dst, 0, 4096, 64, &[]).unwrap()]).unwrap();
    assert_eq!(dst.cpu_syncs(), syncs(0, 1, 2));
    let (d, src) = (read(&q, &dst), read(&q, &b));
    assert!(d[4096..4160] == src[..64] && d[64..4096] == src[64..4096], "the copies' bytes");
    zero_copy(&b, &[&cpu]);
    zero_copy(&dst, &[&cpu]);
}

#[test]
fn a_map_that_never_ran_is_not_ended_by_its_unmap() {
    in_child("child_a_map_that_never_ran_is_not_ended_by_its_unmap", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_a_map_that_never_ran_is_not_ended_by_its_unmap() {
    if !dmabridge_tests::dma_heaps_or_skip("a_map_that_never_ran_is_not_ended_by_its_unmap") {
        return;
    }
    let (_, ctx, q) = cpu_context();
    // The system heap ends a CPU access whether or not it began (udmabuf
    // refuses an end without a start, which would hide it here).
    let dmabuf = DmaHeap::open("system").unwrap().alloc(4096).unwrap();
    let b = import_dma_buf(&ctx, 0, dmabuf.as_fd(), 4096).unwrap();
    // A map waiting on an event that fails never runs: it begins no CPU
    // access, so its unmap ends none.
    let gate = Event::user(&ctx);
    let (m, ev) =
        map::enqueue_map_buffer_after(&q, &b, false, map_flags::WRITE, 0, 16, std::slice::from_ref(&gate)).unwrap();
    gate.set_user_status(-5).unwrap();
    assert!(Event::wait(&[ev]).is_err());
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, m.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(b.cpu_syncs(), CpuSyncs::default(), "no DMA_BUF_IOCTL_SYNC end without its start");
    // A map that runs is bracketed as ever.
    let (m, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 16).unwrap();
    Event::wait(&[map::enqueue_unmap_mem_object(&q, &b, m.as_ptr(), &[]).unwrap()]).unwrap();
    assert_eq!(b.cpu_syncs(), CpuSyncs { read: (1, 1), ..CpuSyncs::default() });
}

#[test]
fn a_read_only_heap_dma_buf_makes_a_read_only_buffer() {
    in_child("child_a_read_only_heap_dma_buf_makes_a_read_only_buffer", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_a_read_only_heap_dma_buf_makes_a_read_only_buffer() {
    if !dmabridge_tests::dma_heaps_or_skip("a_read_only_heap_dma_buf_makes_a_read_only_buffer") {
        return;
    }
    let (cpu, ctx, q) = cpu_context();
    let heap = DmaHeap::open("system").unwrap();
    let rw = heap.alloc(8192).unwrap();
    rw.map(Access::ReadWrite).unwrap().write_bytes(0, b"frame bytes");
    // The same kind of buffer, opened read-only by its exporter.
    let ro = heap.alloc_with_flags(8192, (OFlags::RDONLY | OFlags::CLOEXEC).bits(), 0).unwrap();
    assert_eq!(ro.access_mode().unwrap(), Access::Read);
    let b = import_dma_buf(&ctx, mem_flags::READ_WRITE, ro.as_fd(), 8192).unwrap();
    assert_eq!(b.flags(), mem_flags::READ_ONLY | mem_flags::HOST_READ_ONLY, "the dma-buf's mode wins");
    assert_eq!(read(&q, &b), vec![0; 8192]);
    assert_eq!(err_kind(write(&q, &b, 0, &[1])), ClErrorKind::InvalidOperation);
    assert_eq!(err_kind(commands::enqueue_fill_buffer(&q, &b, &[1], 0, 8, &[])), ClErrorKind::InvalidOperation);
    let src = import_dma_buf(&ctx, 0, rw.as_fd(), 8192).unwrap();
    assert_eq!(src.flags(), mem_flags::READ_WRITE);
    let copy = commands::enqueue_copy_buffer(&q, &src, &b, 0, 0, 8, &[]);
    assert_eq!(err_kind(copy), ClErrorKind::InvalidOperation);
    assert_eq!(err_kind(map::enqueue_map_buffer(&q, &b, true, map_flags::WRITE, 0, 8)), ClErrorKind::InvalidOperation);
    // Read from the heap buffer into... itself read-write import: fine.
    Event::wait(&[commands::enqueue_copy_buffer(&q, &b, &src, 0, 100, 16, &[]).unwrap()]).unwrap();
    assert_eq!(read(&q, &src)[..11], *b"frame bytes");
    assert_eq!(read(&q, &src)[100..116], [0; 16]);
    let (m, _) = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, 8).unwrap();
    map::enqueue_unmap_mem_object(&q, &b, m.as_ptr(), &[]).unwrap();
    q.finish().unwrap();
    zero_copy(&b, &[&cpu]);
    // A read-only dma-buf is only ever synchronised for reading: a read, a
    // copy from it, a map.
    assert_eq!(b.cpu_syncs(), CpuSyncs { read: (3, 3), ..CpuSyncs::default() });
}

#[test]
fn edu_uses_imported_host_memory_in_place() {
    in_child("child_edu_uses_imported_host_memory_in_place", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_edu_uses_imported_host_memory_in_place() {
    let EduContext { cpu, edu, domain, ctx, qc, qe } = edu_context();
    const N: usize = 4096;
    // An unaligned range of ordinary process memory: the two pages around it.
    let mut mem = pattern(3 * N, 5);
    let p0 = mem.as_mut_ptr().wrapping_add(N / 2);
    // SAFETY: `mem` outlives the buffer and is only read back after it ends.
    let b = unsafe { import_host(&ctx, 0, p0, N) }.unwrap();
    assert_eq!(b.linked(&edu), Some(true));
    assert!(domain.resident_iova(HostAddr(p0 as usize), N).is_some(), "resident in edu's domain at import");
    let before = pattern(3 * N, 5);
    // edu reads by DMA straight from the memory, and writes into it.
    assert_eq!(read(&qe, &b), before[N / 2..N / 2 + N]);
    write(&qe, &b, 0, &pattern(N, 11)).unwrap();
    assert_eq!(read(&qc, &b), pattern(N, 11));
    zero_copy(&b, &[&cpu, &edu]);
    drop(b);
    assert!(domain.resident_iova(HostAddr(p0 as usize), N).is_none(), "released: evicted");
    assert_eq!(mem[N / 2..N / 2 + N], pattern(N, 11)[..], "edu wrote the application's memory");
    assert_eq!(mem[..N / 2], before[..N / 2]);
}

#[test]
fn edu_uses_a_dma_buf_dmabridge_exported_in_place() {
    in_child("child_edu_uses_a_dma_buf_dmabridge_exported_in_place", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_edu_uses_a_dma_buf_dmabridge_exported_in_place() {
    let EduContext { cpu, edu, domain, ctx, qc, qe } = edu_context();
    const N: usize = 4096;
    // The exporter: a buffer of another context (CPU only), as a producer would.
    let producer = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let qp = queue(&producer, &cpu);
    // SAFETY: no host pointer.
    let src = unsafe { Buffer::create(&producer, mem_flags::ALLOC_HOST_PTR, N, null_mut()) }.unwrap();
    write(&qp, &src, 0, &pattern(N, 13)).unwrap();
    let dmabuf = src.export_dmabuf(&Udmabuf::open().unwrap()).unwrap();
    let residents_before = domain.residents().len();
    let b = import_dma_buf(&ctx, 0, dmabuf.as_fd(), N).unwrap();
    drop(dmabuf);
    assert_eq!(domain.residents().len(), residents_before + 1, "resident for edu (the memfd pages pinned)");
    // edu by DMA, both ways, on the exporter's very pages.
    assert_eq!(read(&qe, &b), pattern(N, 13));
    write(&qe, &b, 0, &pattern(N, 17)).unwrap();
    assert_eq!(read(&qp, &src), pattern(N, 17), "the producer sees edu's bytes: the same pages");
    assert_eq!(read(&qc, &b), pattern(N, 17));
    zero_copy(&b, &[&cpu, &edu]);
    drop(b);
    assert_eq!(domain.residents().len(), residents_before, "evicted with the buffer");

    // Once the exporting buffer is gone, its pages are no longer the memfd's
    // (handed back): the dma-buf is an ordinary udmabuf for edu, refused.
    let dmabuf = src.export_dmabuf(&Udmabuf::open().unwrap()).unwrap();
    drop(src);
    let e = import_dma_buf(&ctx, 0, dmabuf.as_fd(), N).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidOperation, "{e}");
    // ... while the CPU device still uses it in place, with its last bytes.
    let cpu_only = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let b = import_dma_buf(&cpu_only, 0, dmabuf.as_fd(), N).unwrap();
    assert_eq!(read(&queue(&cpu_only, &cpu), &b), pattern(N, 17));
}

#[test]
fn a_native_kernel_on_an_edu_queue_brackets_its_cpu_access() {
    in_child("child_a_native_kernel_on_an_edu_queue_brackets_its_cpu_access", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_a_native_kernel_on_an_edu_queue_brackets_its_cpu_access() {
    use dmabridge::runtime::kernel::{ArgKind, KernelArgValue};
    let EduContext { cpu, ctx, qe, .. } = edu_context();
    const N: usize = 4096;
    // A dma-buf edu reaches (dmabridge's own export), imported for both devices.
    let producer = Context::new(std::slice::from_ref(&cpu)).unwrap();
    // SAFETY: no host pointer.
    let src = unsafe { Buffer::create(&producer, mem_flags::ALLOC_HOST_PTR, N, null_mut()) }.unwrap();
    write(&queue(&producer, &cpu), &src, 0, &pattern(N, 23)).unwrap();
    let dmabuf = src.export_dmabuf(&Udmabuf::open().unwrap()).unwrap();
    let b = import_dma_buf(&ctx, 0, dmabuf.as_fd(), N).unwrap();
    // A native kernel is the CPU's code whatever the queue's device: it
    // reads and writes the dma-buf's mapping, so the runtime brackets it.
    let f = Arc::new(|args: &[KernelArgValue]| {
        let p = args[0].as_ptr().expect("the buffer's address").cast_mut();
        // SAFETY: the buffer's N bytes, bracketed for the CPU while the kernel runs.
        unsafe { p.write(p.read().wrapping_add(1)) };
        Ok(())
    });
    let k = Kernel::native(&ctx, f, vec![ArgKind::Pointer]).unwrap();
    k.set_arg_buffer(0, &b).unwrap();
    // SAFETY: the kernel touches the first byte of the buffer only.
    Event::wait(&[unsafe { kernel::enqueue_task(&qe, &k, &[]) }.unwrap()]).unwrap();
    assert_eq!(b.cpu_syncs(), CpuSyncs { read_write: (1, 1), ..CpuSyncs::default() }, "DMA_BUF_IOCTL_SYNC around it");
    assert_eq!(read(&qe, &b)[0], pattern(N, 23)[0].wrapping_add(1));
}

#[test]
fn edu_refuses_dma_bufs_it_cannot_reach_without_a_copy() {
    in_child("child_edu_refuses_dma_bufs_it_cannot_reach_without_a_copy", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_edu_refuses_dma_bufs_it_cannot_reach_without_a_copy() {
    let EduContext { cpu, edu, domain, ctx, .. } = edu_context();
    let (residents, iova) = (domain.residents().len(), domain.iova_allocated_bytes());
    // A udmabuf of someone else's memfd: its mapping is PFN-mapped.
    let (_memfd, foreign) = udmabuf_with(1, b"foreign");
    let e = import_dma_buf(&ctx, 0, foreign.as_fd(), 4096).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidOperation);
    let msg = e.to_string();
    assert!(msg.contains(&edu.name) && msg.contains("udmabuf") && msg.contains("copy"), "{msg}");
    // The system heap's too (where the kernel has heaps).
    if dmabridge_tests::dma_heaps_or_skip("edu_refuses_dma_bufs_it_cannot_reach_without_a_copy (its heap part)") {
        let heap = DmaHeap::open("system").unwrap().alloc(4096).unwrap();
        let e = import_dma_buf(&ctx, 0, heap.as_fd(), 4096).unwrap_err();
        assert_eq!(e.kind, ClErrorKind::InvalidOperation);
        assert!(e.to_string().contains(&edu.name), "{e}");
    }
    // Nothing stays resident or reserved after the refusals.
    assert_eq!((domain.residents().len(), domain.iova_allocated_bytes()), (residents, iova));
    // The same dma-bufs work on the CPU device alone.
    let cpu_only = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let b = import_dma_buf(&cpu_only, 0, foreign.as_fd(), 4096).unwrap();
    assert_eq!(read(&queue(&cpu_only, &cpu), &b)[..7], *b"foreign");
}

#[test]
fn a_context_with_the_bar_device_refuses_imports() {
    in_child("child_a_context_with_the_bar_device_refuses_imports", Some(&format!("{IVSHMEM},bar=2")));
}

#[test]
#[ignore = "run in a child process"]
fn child_a_context_with_the_bar_device_refuses_imports() {
    let p = Platform::get();
    let bar = p.devices().iter().find(|d| d.local_memory().is_some()).cloned().expect("the BAR device");
    let cpu = p.cpu().clone();
    let ctx = Context::new(&[cpu.clone(), bar.clone()]).unwrap();
    let mut mem = vec![0u8; 4096];
    // SAFETY: refused before any use of the memory.
    let e = unsafe { import_host(&ctx, 0, mem.as_mut_ptr(), 4096) }.unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidOperation);
    assert!(e.to_string().contains(&bar.name), "names the device: {e}");
    let (_memfd, d) = udmabuf_with(1, b"x");
    let e = import_dma_buf(&ctx, 0, d.as_fd(), 4096).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidOperation);
    // The BAR device does not report the import extensions; the others do.
    let names = |d: &Device| device_extensions(d).into_iter().map(|e| e.name).collect::<Vec<_>>();
    assert!(!names(&bar).iter().any(|n| n.starts_with("cl_arm_import_memory")), "{:?}", names(&bar));
    for d in p.devices().iter().filter(|d| d.host_unified_memory) {
        assert!(names(d).iter().any(|n| n == arm_import::DMA_BUF_EXTENSION), "{}", d.name);
    }
}

#[test]
fn vgem_prime_exports_import_with_their_access_mode() {
    in_child("child_vgem_prime_exports_import_with_their_access_mode", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_vgem_prime_exports_import_with_their_access_mode() {
    use dmabridge::sys::drm::{DrmDevice, PrimeFlags};
    let (cpu, ctx, q) = cpu_context();
    let dev = DrmDevice::open_vgem().expect("open vgem (boot the guest with --module vgem)");
    // Without DRM_RDWR the first export makes a read-only dma-buf (a GEM
    // object keeps the dma-buf of its first export): so is the buffer.
    let dumb = dev.create_dumb(64, 16, 32).unwrap(); // 4 KiB
    let n = dumb.size() as usize;
    let ro = dev.export(&dumb, PrimeFlags::CLOEXEC).unwrap();
    assert_eq!(ro.access_mode().unwrap(), Access::Read);
    let r = import_dma_buf(&ctx, mem_flags::READ_WRITE, ro.as_fd(), n).unwrap();
    assert_eq!(r.flags(), mem_flags::READ_ONLY | mem_flags::HOST_READ_ONLY);
    assert_eq!(read(&q, &r), vec![0; n]);
    assert_eq!(err_kind(write(&q, &r, 0, &[0])), ClErrorKind::InvalidOperation);
    // A read-write export: the buffer writes vgem's pages, and a second
    // import of the same dma-buf sees them.
    let dumb2 = dev.create_dumb(64, 16, 32).unwrap();
    let rw = dev.export(&dumb2, PrimeFlags::CLOEXEC | PrimeFlags::RDWR).unwrap();
    let b = import_dma_buf(&ctx, 0, rw.as_fd(), n).unwrap();
    assert_eq!(b.flags(), mem_flags::READ_WRITE);
    write(&q, &b, 0, &pattern(n, 19)).unwrap();
    let again = import_dma_buf(&ctx, mem_flags::READ_ONLY, rw.as_fd(), n).unwrap();
    assert_eq!(read(&q, &again), pattern(n, 19));
    let mut out = [0u8; 8];
    rw.map(Access::Read).unwrap().read_bytes(n - 8, &mut out);
    assert_eq!(out, pattern(n, 19)[n - 8..]);
    zero_copy(&b, &[&cpu]);
    zero_copy(&r, &[&cpu]);
}

#[test]
fn imports_and_failed_imports_leave_no_fd_or_mapping_behind() {
    in_child("child_imports_and_failed_imports_leave_no_fd_or_mapping_behind", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_imports_and_failed_imports_leave_no_fd_or_mapping_behind() {
    let EduContext { cpu, edu, domain, ctx: edu_ctx, qe, .. } = edu_context();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = queue(&ctx, &cpu);
    const N: usize = 2 * 4096;
    let (_memfd, foreign) = udmabuf_with(2, &pattern(N, 7));
    // SAFETY: no host pointer.
    let src = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, N, null_mut()) }.unwrap();
    let own = src.export_dmabuf(&Udmabuf::open().unwrap()).unwrap();
    let mut host = pattern(N, 9);
    let round = || {
        // The CPU device: lazily mapped, then used.
        let b = import_dma_buf(&ctx, 0, foreign.as_fd(), N).unwrap();
        assert_eq!(read(&q, &b), pattern(N, 7));
        drop(b);
        // edu: dmabridge's own export, pinned through the memfd pages.
        let b = import_dma_buf(&edu_ctx, 0, own.as_fd(), N).unwrap();
        assert_eq!(read(&qe, &b).len(), N);
        drop(b);
        // Refusals: too large, a foreign udmabuf on edu.
        assert_eq!(err_kind(import_dma_buf(&ctx, 0, foreign.as_fd(), N + 1)), ClErrorKind::InvalidValue);
        assert_eq!(err_kind(import_dma_buf(&edu_ctx, 0, foreign.as_fd(), N)), ClErrorKind::InvalidOperation);
    };
    round(); // the queues' threads and the platform's first uses
    let (before, residents) = (Resources::now(), domain.residents().len());
    for _ in 0..5 {
        round();
        // SAFETY: `host` outlives the buffer, used only through it meanwhile.
        let b = unsafe { import_host(&edu_ctx, 0, host.as_mut_ptr(), N) }.unwrap();
        assert_eq!(read(&qe, &b), pattern(N, 9));
    }
    before.assert_unchanged();
    assert_eq!(domain.residents().len(), residents, "nothing stays resident on {}", edu.name);
}

#[test]
fn exporting_a_buffer_again_and_again_keeps_no_fd_per_export() {
    in_child("child_exporting_a_buffer_again_and_again_keeps_no_fd_per_export", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_exporting_a_buffer_again_and_again_keeps_no_fd_per_export() {
    let (_, ctx, _q) = cpu_context();
    let udmabuf = Udmabuf::open().unwrap();
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, 4096, null_mut()) }.unwrap();
    drop(b.export_dmabuf(&udmabuf).unwrap()); // the heap's and the bookkeeping's first uses
    let before = Resources::now();
    // Each export is recognised by a later import (edu pins its memfd
    // pages), but the bookkeeping holds the memfd once, not once per export.
    for _ in 0..20 {
        drop(b.export_dmabuf(&udmabuf).unwrap());
    }
    before.assert_unchanged();
    // The buffer keeps a duplicate of a live export (for other drivers'
    // fences on it) and lets go of those nobody else holds.
    let live = b.export_dmabuf(&udmabuf).unwrap();
    assert_eq!(live.file_refs(), Some(2), "our fd and the buffer's duplicate");
    drop(live);
    assert!(arm_import::recognised_exports() >= 21);
    drop(b);
    assert_eq!(arm_import::recognised_exports(), 0, "the buffer's pages went: so did their records");
}

#[test]
fn a_failed_lazy_map_never_unmaps_what_another_mapping_took() {
    in_child("child_a_failed_lazy_map_never_unmaps_what_another_mapping_took", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_a_failed_lazy_map_never_unmaps_what_another_mapping_took() {
    use rustix::mm::{mmap_anonymous, munmap, MapFlags, ProtFlags};
    use rustix::process::{getrlimit, setrlimit, Resource};
    let (_memfd, dmabuf) = udmabuf_with(2, b"frame");
    let lazy = dmabuf.map_lazily(8192, Access::ReadWrite).unwrap();
    let at = lazy.as_ptr();
    // What a kernel that unmaps before mapping (MAP_FIXED) leaves when the
    // dma-buf's mapping then fails, while another thread maps meanwhile:
    // the reservation gone, someone else's page in its first page.
    // SAFETY: the lazy map's own reservation, not yet mapped, nothing uses it.
    unsafe { munmap(at.cast(), 8192) }.unwrap();
    // SAFETY: maps only where nothing is (FIXED_NOREPLACE).
    let other = unsafe {
        mmap_anonymous(
            at.cast(),
            4096,
            ProtFlags::READ | ProtFlags::WRITE,
            MapFlags::PRIVATE | MapFlags::FIXED_NOREPLACE,
        )
    }
    .unwrap();
    // SAFETY: our fresh page.
    unsafe { other.cast::<u8>().write(42) };
    // The dma-buf's mapping fails (no address space left to grow into).
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let vm_kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmSize:"))
        .unwrap()
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    let old = getrlimit(Resource::As);
    setrlimit(Resource::As, rustix::process::Rlimit { current: Some(vm_kb * 1024), maximum: old.maximum }).unwrap();
    let r = lazy.ensure();
    setrlimit(Resource::As, old).unwrap();
    assert!(r.is_err(), "the mapping could not be made");
    drop(lazy);
    // The lazy map gave the range up rather than unmap another's page.
    assert!(
        dmabridge::sys::vm::mapped(HostAddr(at as usize), 4096).unwrap().is_some(),
        "the other page is still mapped"
    );
    // SAFETY: our page, still mapped.
    assert_eq!(unsafe { other.cast::<u8>().read() }, 42);
    // SAFETY: our page.
    unsafe { munmap(other, 4096) }.unwrap();
}

#[test]
fn host_memory_over_the_memlock_limit_is_an_allocation_failure() {
    in_child("child_host_memory_over_the_memlock_limit_is_an_allocation_failure", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_host_memory_over_the_memlock_limit_is_an_allocation_failure() {
    use rustix::process::{setrlimit, Resource, Rlimit};
    use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
    let (_, ctx, _q) = cpu_context();
    // Without CAP_IPC_LOCK, RLIMIT_MEMLOCK (64 KiB) bounds what may be locked.
    let mut caps = capabilities(None).unwrap();
    caps.effective.remove(CapabilitySet::IPC_LOCK);
    caps.permitted.remove(CapabilitySet::IPC_LOCK);
    set_capabilities(None, caps).unwrap();
    setrlimit(Resource::Memlock, Rlimit { current: Some(64 << 10), maximum: Some(64 << 10) }).unwrap();
    let mut mem = vec![0u8; 1 << 20];
    // SAFETY: refused before any use of the memory.
    let e = unsafe { import_host(&ctx, 0, mem.as_mut_ptr(), mem.len()) }.unwrap_err();
    assert_eq!(e.kind, ClErrorKind::MemObjectAllocationFailure, "a lack of resources, not bad memory: {e}");
    assert!(e.message.contains("RLIMIT_MEMLOCK"), "names the limit: {e}");
    // Within the limit it works.
    // SAFETY: `mem` outlives the buffer, used only through it meanwhile.
    drop(unsafe { import_host(&ctx, 0, mem.as_mut_ptr(), 8192) }.unwrap());
}

#[test]
fn an_import_beyond_edus_dma_window_is_an_allocation_failure() {
    in_child("child_an_import_beyond_edus_dma_window_is_an_allocation_failure", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_an_import_beyond_edus_dma_window_is_an_allocation_failure() {
    // Only a heap gives a dma-buf larger than the window here (udmabuf is
    // limited to 64 MiB).
    if !dmabridge_tests::dma_heaps_or_skip("an_import_beyond_edus_dma_window_is_an_allocation_failure") {
        return;
    }
    let EduContext { edu, domain, ctx, .. } = edu_context();
    // edu drives 28-bit bus addresses (QEMU's default mask): 256 MiB of IOVA
    // space. A larger dma-buf finds no bus address — a lack of resources,
    // not memory out of reach.
    let window = domain.dma_mask() as usize + 1;
    let big = DmaHeap::open("system").unwrap().alloc((window + (16 << 20)) as u64).unwrap();
    let e = import_dma_buf(&ctx, 0, big.as_fd(), window + (16 << 20)).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::MemObjectAllocationFailure, "{e}");
    assert!(e.to_string().contains(&edu.name), "{e}");
    // A small one of the same heap is out of reach (PFN-mapped).
    let small = DmaHeap::open("system").unwrap().alloc(4096).unwrap();
    assert_eq!(err_kind(import_dma_buf(&ctx, 0, small.as_fd(), 4096)), ClErrorKind::InvalidOperation);
}

#[test]
fn edu_imports_the_same_memory_at_two_lengths() {
    in_child("child_edu_imports_the_same_memory_at_two_lengths", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_edu_imports_the_same_memory_at_two_lengths() {
    let EduContext { domain, ctx, qe, .. } = edu_context();
    let residents = domain.residents().len();
    let mut mem = pattern(3 * 4096, 21);
    let p0 = mem.as_mut_ptr();
    // SAFETY: `mem` outlives both buffers and is only used through them.
    let (short, long) = unsafe { (import_host(&ctx, 0, p0, 100).unwrap(), import_host(&ctx, 0, p0, 9000).unwrap()) };
    // The longer range superseded the shorter one at the same address.
    assert_eq!(domain.residents().len(), residents + 1);
    assert_eq!(read(&qe, &short), pattern(3 * 4096, 21)[..100]);
    assert_eq!(read(&qe, &long), pattern(3 * 4096, 21)[..9000]);
    drop(long);
    assert_eq!(read(&qe, &short), pattern(3 * 4096, 21)[..100], "still resident for the shorter import");
    drop(short);
    assert_eq!((domain.residents().len(), domain.resident_iova(HostAddr(p0 as usize), 1)), (residents, None));
    drop(mem);
}

/// `VmLck` of this process (`mm->locked_vm`: mlocked and VFIO-pinned pages),
/// in bytes.
fn locked_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb = status.lines().find_map(|l| l.strip_prefix("VmLck:")).unwrap();
    kb.trim().trim_end_matches("kB").trim().parse::<u64>().unwrap() * 1024
}

/// Drops `CAP_IPC_LOCK` from the calling thread (effective and permitted
/// sets; the threads it starts inherit that), as an unprivileged process
/// runs: mlock and VFIO's pinning then count against `RLIMIT_MEMLOCK`.
fn drop_cap_ipc_lock() {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    const CAP_IPC_LOCK: u32 = 14;
    let mut header = Header { version: LINUX_CAPABILITY_VERSION_3, pid: 0 };
    let mut data = [Data::default(); 2];
    // SAFETY: capget writes two `__user_cap_data_struct`s (version 3) into
    // `data` and reads `header`; both outlive the call.
    assert_eq!(unsafe { libc::syscall(libc::SYS_capget, &mut header, data.as_mut_ptr()) }, 0, "capget");
    for set in [&mut data[0].effective, &mut data[0].permitted, &mut data[0].inheritable] {
        *set &= !(1 << CAP_IPC_LOCK);
    }
    // SAFETY: capset reads `header` and the two data structs.
    assert_eq!(unsafe { libc::syscall(libc::SYS_capset, &mut header, data.as_ptr()) }, 0, "capset");
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let eff = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap().trim();
    assert_eq!(u64::from_str_radix(eff, 16).unwrap() & (1 << CAP_IPC_LOCK), 0, "CAP_IPC_LOCK dropped");
}

/// Issue 17: host memory imported into a context with edu is charged once
/// against `RLIMIT_MEMLOCK` (VFIO's pinning), not twice (mlock as well): an
/// unprivileged process imports up to its limit, not half of it; an import
/// over the limit fails before anything is pinned, naming the limit, what
/// it needs and how to raise it. Before the fix, the 6 MiB import under an
/// 8 MiB allowance failed (6 MiB locked + 6 MiB pinned).
#[test]
fn host_imports_for_edu_are_charged_once_against_memlock() {
    in_child("child_host_imports_for_edu_are_charged_once_against_memlock", None);
}

#[test]
#[ignore = "run in a child process"]
fn child_host_imports_for_edu_are_charged_once_against_memlock() {
    const MIB: usize = 1 << 20;
    let EduContext { edu, domain, ctx, qe, .. } = edu_context();
    drop_cap_ipc_lock();
    // What the platform holds already, plus 8 MiB.
    let base = locked_bytes();
    let allowance = 8 * MIB as u64;
    let limit = rustix::process::Rlimit { current: Some(base + allowance), maximum: Some(base + allowance) };
    rustix::process::setrlimit(rustix::process::Resource::Memlock, limit).unwrap();
    // 6 MiB: three quarters of the allowance.
    let mut mem = pattern(6 * MIB + 4096, 3);
    let p0 = mem.as_mut_ptr().wrapping_add(4096 - (mem.as_ptr() as usize % 4096));
    // SAFETY: `mem` outlives the buffer and is only read after it is released.
    let b = unsafe { import_host(&ctx, 0, p0, 6 * MIB) }
        .unwrap_or_else(|e| panic!("a 6 MiB import under an 8 MiB RLIMIT_MEMLOCK allowance: {e}"));
    let charged = locked_bytes() - base;
    assert_eq!(charged, 6 * MIB as u64, "charged once, by VFIO's pinning");
    assert!(domain.resident_iova(HostAddr(p0 as usize), 6 * MIB).is_some());
    // edu uses it: a page read by DMA from its end.
    let mut out = vec![0u8; 4096];
    // SAFETY: blocking read into `out`.
    unsafe { commands::enqueue_read_buffer(&qe, &b, true, 6 * MIB - 4096, 4096, out.as_mut_ptr(), &[]) }.unwrap();
    let expected = pattern(6 * MIB + 4096, 3);
    let off = p0 as usize - mem.as_ptr() as usize;
    assert_eq!(out, expected[off + 6 * MIB - 4096..off + 6 * MIB]);
    assert!(edu.dma_domain().is_some());
    // 4 MiB more would need 10 MiB: refused up front, nothing pinned, the
    // message naming the limit, the need and the fix.
    let mut more = vec![0u8; 4 * MIB];
    // SAFETY: refused before the pages are used; `more` outlives the call.
    let e = unsafe { import_host(&ctx, 0, more.as_mut_ptr(), 4 * MIB) }.unwrap_err();
    assert_eq!(e.kind, ClErrorKind::MemObjectAllocationFailure, "{e}");
    for word in [
        format!("RLIMIT_MEMLOCK is {} bytes", base + allowance),
        "ulimit -l".to_owned(),
        "limits.conf".to_owned(),
        "LimitMEMLOCK".to_owned(),
    ] {
        assert!(e.message.contains(&word), "{word:?} not in: {e}");
    }
    let needed = (more.as_ptr() as usize + 4 * MIB).next_multiple_of(4096) - (more.as_ptr() as usize & !4095);
    assert!(e.message.contains(&format!("{needed} more are needed")), "{e}");
    assert_eq!(locked_bytes() - base, charged, "a refused import pins nothing");
    drop(b);
    assert_eq!(locked_bytes(), base, "released: unpinned");
    drop(mem);
}
