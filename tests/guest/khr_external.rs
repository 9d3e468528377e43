//! `cl_khr_external_memory_dma_buf` and `cl_khr_external_semaphore_sync_fd`
//! against the kernel: dma-bufs of udmabuf, the DMA-BUF system heap and vgem
//! imported the Khronos way (zero copy, bracketed), and real fences from vgem
//! (`DRM_IOCTL_VGEM_FENCE_ATTACH` / `_SIGNAL`): a command behind an acquire,
//! a semaphore wait, or a CPU access to an ARM-imported dma-buf does not
//! start before the test signals the fence. Each wait is kept well under
//! vgem's own ~10 s expiry.

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::Duration;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::arm_import::{import_dma_buf, recognised_exports};
use dmabridge::ext::khr_external::memory::{self, MemProperties};
use dmabridge::ext::khr_external::semaphore::{self, SemaphoreProperties, SEMAPHORE_TYPE_BINARY_KHR};
use dmabridge::ext::{dma_buf_export, usm, usm_commands};
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::store::Location;
use dmabridge::runtime::buffer::{commands, mem_flags, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::{Event, EventStatus};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::Queue;
use dmabridge::sys::access::Access;
use dmabridge::sys::dma_buf::DmaBuf;
use dmabridge::sys::dma_heap::DmaHeap;
use dmabridge::sys::drm::{DrmDevice, PrimeFlags, VgemFence};
use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::udmabuf::Udmabuf;
use dmabridge_tests::err_kind;

use super::buffer::{edu, pattern, queue, read};

/// How long a command must stay held to show the fence holds it (well
/// under vgem's ~10 s expiry).
const HELD: Duration = Duration::from_millis(300);

fn cpu() -> (Arc<Context>, Arc<Queue>) {
    let cpu = Platform::get().cpu().clone();
    let ctx = Context::new(std::slice::from_ref(&cpu)).unwrap();
    let q = queue(&ctx, &cpu);
    (ctx, q)
}

fn import(ctx: &Arc<Context>, dma_buf: &DmaBuf, size: usize) -> Arc<Buffer> {
    let props = MemProperties { dma_buf: Some(dma_buf.as_fd()), devices: None };
    // SAFETY: no host pointer.
    unsafe { memory::create_buffer_with_properties(ctx, &props, 0, size, null_mut()) }.unwrap()
}

fn fill(q: &Arc<Queue>, b: &Arc<Buffer>, byte: u8) -> Event {
    commands::enqueue_fill_buffer(q, b, &[byte], 0, b.size(), &[]).unwrap()
}

/// `ev` has not completed after [`HELD`]: something holds it.
fn still_held(ev: &Event) {
    std::thread::sleep(HELD);
    assert_ne!(ev.status(), EventStatus::Complete, "the command ran before the fence signalled");
}

/// `io_uring_enter`'s number (x86_64 and the generic table of arm64 alike).
const IO_URING_ENTER: i64 = 426;

/// The system calls the queue's worker threads (`dmabq-N`) are in, from
/// `/proc/self/task/*/syscall` (a thread not in one is left out).
fn worker_syscalls() -> Vec<i64> {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.starts_with("dmabq-")))
        .filter_map(|t| std::fs::read_to_string(t.path().join("syscall")).ok()?.split(' ').next()?.parse().ok())
        .collect()
}

/// The command held by a fence sleeps in `io_uring_enter` (the queue's
/// wait path), not in the `DMA_BUF_IOCTL_SYNC` ioctl or a poll of its own.
/// On a loaded machine the worker may still be on its way into the wait, so
/// look again for a while (it never gets there if it waits anywhere else).
fn waits_in_io_uring() {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let calls = worker_syscalls();
        if calls.contains(&IO_URING_ENTER) {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "for 5 s the queue's workers were in system calls {calls:?}, never io_uring_enter"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn no_bytes_moved(b: &Buffer) {
    for loc in [Location::Host, Location::Device(0)] {
        let s = b.stats(loc);
        assert_eq!((s.bytes_in, s.bytes_out, s.bytes_allocated), (0, 0, 0), "{loc:?}: {s:?}");
    }
}

/// udmabuf and system-heap dma-bufs imported the Khronos way: the bracket,
/// bytes both ways through the exporter's own pages, none copied.
#[test]
fn udmabuf_and_heap_dma_bufs_import_zero_copy() {
    let (ctx, q) = cpu();
    const N: usize = 2 * 4096;
    let memfd = Memfd::create(c"khr-import", N as u64).unwrap();
    memfd.add_seals(Seals::SHRINK).unwrap();
    let udma = Udmabuf::open().unwrap().create(memfd.as_fd(), 0, N as u64).unwrap();
    let mut exporters = vec![("udmabuf", udma)];
    // Debian's arm64 kernels have no DMA-BUF heaps: there, udmabuf alone.
    if dmabridge_tests::dma_heaps_or_skip("udmabuf_and_heap_dma_bufs_import_zero_copy (the system heap part)") {
        exporters.push(("system heap", DmaHeap::open("system").unwrap().alloc(N as u64).unwrap()));
    }
    for (name, dma_buf) in &exporters {
        let b = import(&ctx, dma_buf, N);
        assert!(memory::is_external(&b), "{name}");
        // Outside the bracket.
        assert_eq!(err_kind(memory::enqueue_release(&q, std::slice::from_ref(&b), &[])), ClErrorKind::InvalidOperation);
        memory::enqueue_acquire(&q, std::slice::from_ref(&b), &[]).unwrap();
        assert_eq!(err_kind(memory::enqueue_acquire(&q, std::slice::from_ref(&b), &[])), ClErrorKind::InvalidOperation);
        let data = pattern(N, 23);
        // SAFETY: a blocking write from `data`.
        unsafe { commands::enqueue_write_buffer(&q, &b, true, 0, N, data.as_ptr(), &[]) }.unwrap();
        Event::wait(&[memory::enqueue_release(&q, std::slice::from_ref(&b), &[]).unwrap()]).unwrap();
        let mut seen = vec![0u8; N];
        dma_buf.map(Access::Read).unwrap().read_bytes(0, &mut seen);
        assert_eq!(seen, data, "{name}: the dma-buf's own pages hold what the buffer wrote");
        memory::enqueue_acquire(&q, std::slice::from_ref(&b), &[]).unwrap();
        assert_eq!(read(&q, &b), data);
        memory::enqueue_release(&q, std::slice::from_ref(&b), &[]).unwrap();
        no_bytes_moved(&b);
        // The bracket's sync calls: one start and one end, read-write.
        let syncs = b.cpu_syncs();
        assert!(syncs.read_write.0 >= 1 && syncs.read_write.1 >= 1, "{name}: {syncs:?}");
    }
    // The size rules.
    let props = MemProperties { dma_buf: Some(exporters[0].1.as_fd()), devices: None };
    // SAFETY: no host pointer.
    let too_big = unsafe { memory::create_buffer_with_properties(&ctx, &props, 0, N + 1, null_mut()) };
    assert_eq!(err_kind(too_big), ClErrorKind::InvalidValue);
}

/// An acquire waits for another driver's fence on the dma-buf: the fill
/// behind it starts only once the test signals vgem's write fence.
#[test]
fn acquire_waits_for_a_vgem_fence() {
    let (ctx, q) = cpu();
    let dev = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    let dumb = dev.create_dumb(64, 16, 32).unwrap(); // 4 KiB
    let n = dumb.size() as usize;
    let dma_buf = dev.export(&dumb, PrimeFlags::CLOEXEC | PrimeFlags::RDWR).unwrap();
    let b = import(&ctx, &dma_buf, n);
    let fence = dev.vgem_attach_fence(&dumb, true).unwrap();
    let acquired = memory::enqueue_acquire(&q, std::slice::from_ref(&b), &[]).unwrap();
    let filled = fill(&q, &b, 0x5a);
    still_held(&acquired);
    assert_ne!(filled.status(), EventStatus::Complete);
    waits_in_io_uring();
    dev.vgem_signal(fence).unwrap();
    Event::wait(&[filled]).unwrap();
    assert_eq!(read(&q, &b), vec![0x5a; n]);
    memory::enqueue_release(&q, std::slice::from_ref(&b), &[]).unwrap();
}

/// The ARM import path waits the same way: a command's CPU access to the
/// dma-buf waits for the fences of other drivers.
#[test]
fn arm_import_access_waits_for_a_vgem_fence() {
    let (ctx, q) = cpu();
    let dev = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    let dumb = dev.create_dumb(64, 16, 32).unwrap();
    let n = dumb.size() as usize;
    let dma_buf = dev.export(&dumb, PrimeFlags::CLOEXEC | PrimeFlags::RDWR).unwrap();
    let b = import_dma_buf(&ctx, 0, dma_buf.as_fd(), n).unwrap();
    let fence = dev.vgem_attach_fence(&dumb, true).unwrap();
    fill_waits_for(&q, &b, &dev, fence, 0xa5);
    assert_eq!(b.size(), n);
}

/// A semaphore imported from a real sync_file (vgem's fence exported from
/// its dma-buf) holds the queue until the fence signals; the wait consumes
/// the signal.
#[test]
fn semaphore_wait_holds_the_queue_until_a_vgem_fence_signals() {
    let (ctx, q) = cpu();
    let dev = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    let dumb = dev.create_dumb(64, 16, 32).unwrap();
    let dma_buf = dev.export(&dumb, PrimeFlags::CLOEXEC | PrimeFlags::RDWR).unwrap();
    let fence = dev.vgem_attach_fence(&dumb, true).unwrap();
    let sync_file = dma_buf.export_sync_file(Access::Read).unwrap();
    assert!(!sync_file.is_signaled().unwrap());
    let props = SemaphoreProperties {
        ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()),
        sync_fd: Some(sync_file.as_fd()),
        ..Default::default()
    };
    let s = semaphore::create(&ctx, &props).unwrap();
    drop(sync_file); // the semaphore keeps its own
    assert_eq!(s.payload(), 0);
    let waited = semaphore::enqueue_wait(&q, std::slice::from_ref(&s), &[]).unwrap();
    let after = q.enqueue_marker(&[]).unwrap();
    still_held(&after);
    assert_ne!(waited.status(), EventStatus::Complete);
    waits_in_io_uring();
    dev.vgem_signal(fence).unwrap();
    Event::wait(&[after]).unwrap();
    assert_eq!(err_kind(semaphore::enqueue_wait(&q, &[s], &[])), ClErrorKind::InvalidOperation);
}

/// Eight waits pending on one queue cost one sleeping worker, not a thread
/// each: the process has as many threads with eight fences pending as with
/// one.
#[test]
fn pending_waits_add_no_threads() {
    let (ctx, q) = cpu();
    let dev = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    let dumbs: Vec<_> = (0..8).map(|_| dev.create_dumb(64, 16, 32).unwrap()).collect();
    let mut fences = Vec::new();
    let mut sems = Vec::new();
    for d in &dumbs {
        let dma_buf = dev.export(d, PrimeFlags::CLOEXEC | PrimeFlags::RDWR).unwrap();
        fences.push(dev.vgem_attach_fence(d, true).unwrap());
        let sync_file = dma_buf.export_sync_file(Access::Read).unwrap();
        let props = SemaphoreProperties {
            ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()),
            sync_fd: Some(sync_file.as_fd()),
            ..Default::default()
        };
        sems.push(semaphore::create(&ctx, &props).unwrap());
    }
    let threads = || std::fs::read_dir("/proc/self/task").unwrap().count();
    semaphore::enqueue_wait(&q, &sems[..1], &[]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let one = threads();
    for s in &sems[1..] {
        semaphore::enqueue_wait(&q, std::slice::from_ref(s), &[]).unwrap();
    }
    let last = q.enqueue_marker(&[]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(threads(), one, "eight pending fence waits made threads");
    for f in fences {
        dev.vgem_signal(f).unwrap();
    }
    Event::wait(&[last]).unwrap();
}

/// A udmabuf imported the Khronos way: every command that uses it before
/// the acquire or after the release is refused when enqueued
/// (`CL_INVALID_OPERATION`), a map too; inside the bracket it works.
#[test]
fn commands_outside_the_bracket_are_refused() {
    let (ctx, q) = cpu();
    const N: usize = 4096;
    let memfd = Memfd::create(c"khr-bracket", N as u64).unwrap();
    memfd.add_seals(Seals::SHRINK).unwrap();
    let dma_buf = Udmabuf::open().unwrap().create(memfd.as_fd(), 0, N as u64).unwrap();
    let b = import(&ctx, &dma_buf, N);
    let fill_code = |b: &Arc<Buffer>| commands::enqueue_fill_buffer(&q, b, &[1], 0, N, &[]).map(|_| ());
    assert_eq!(err_kind(fill_code(&b)), ClErrorKind::InvalidOperation, "a fill before the acquire");
    let map = map::enqueue_map_buffer(&q, &b, true, map_flags::READ, 0, N);
    assert_eq!(err_kind(map), ClErrorKind::InvalidOperation, "a map before the acquire");
    memory::enqueue_acquire(&q, std::slice::from_ref(&b), &[]).unwrap();
    Event::wait(&[fill(&q, &b, 0x33)]).unwrap();
    assert_eq!(read(&q, &b), vec![0x33; N]);
    Event::wait(&[memory::enqueue_release(&q, std::slice::from_ref(&b), &[]).unwrap()]).unwrap();
    assert_eq!(err_kind(fill_code(&b)), ClErrorKind::InvalidOperation, "a fill after the release");
}

/// `CL_MEM_DEVICE_HANDLE_LIST_KHR` narrows the reachability check to the
/// listed devices: in a context with edu, a udmabuf (whose PFN-mapped pages
/// VFIO cannot pin) is refused for all devices, accepted for the CPU device
/// alone; edu's queue then may not use it (`CL_INVALID_COMMAND_QUEUE`),
/// nothing of it is resident in edu's domain, and the CPU's queue works.
#[test]
fn the_device_list_narrows_reachability() {
    let p = Platform::get();
    let (cpu, edu) = (p.cpu().clone(), edu(p));
    let residents = edu.dma_domain().expect("edu sits in a DMA domain").residents().len();
    let ctx = Context::new(&[cpu.clone(), edu.clone()]).unwrap();
    let (qc, qe) = (queue(&ctx, &cpu), queue(&ctx, &edu));
    const N: usize = 4096;
    let memfd = Memfd::create(c"khr-devices", N as u64).unwrap();
    memfd.add_seals(Seals::SHRINK).unwrap();
    let dma_buf = Udmabuf::open().unwrap().create(memfd.as_fd(), 0, N as u64).unwrap();
    let create = |devices| {
        let props = MemProperties { dma_buf: Some(dma_buf.as_fd()), devices };
        // SAFETY: no host pointer.
        unsafe { memory::create_buffer_with_properties(&ctx, &props, 0, N, null_mut()) }
    };
    assert_eq!(err_kind(create(None)), ClErrorKind::InvalidOperation, "edu cannot reach a udmabuf");
    assert_eq!(err_kind(create(Some(vec![edu.clone()]))), ClErrorKind::InvalidOperation);
    let b = create(Some(vec![cpu.clone()])).expect("listed for the CPU device alone");
    assert_eq!(memory::devices(&b), Some(vec![cpu.clone()]));
    assert_eq!(edu.dma_domain().unwrap().residents().len(), residents, "nothing made resident for edu");
    assert_eq!(err_kind(memory::enqueue_acquire(&qe, std::slice::from_ref(&b), &[])), ClErrorKind::InvalidCommandQueue);
    memory::enqueue_acquire(&qc, std::slice::from_ref(&b), &[]).unwrap();
    let on_edu = commands::enqueue_fill_buffer(&qe, &b, &[1], 0, N, &[]);
    assert_eq!(err_kind(on_edu), ClErrorKind::InvalidCommandQueue);
    Event::wait(&[fill(&qc, &b, 0x44)]).unwrap();
    assert_eq!(read(&qc, &b), vec![0x44; N]);
    Event::wait(&[memory::enqueue_release(&qc, std::slice::from_ref(&b), &[]).unwrap()]).unwrap();
}

/// The CPU maps only the chunks of an imported dma-buf a command touches,
/// at their own offsets (both import paths): a 16-byte read in the second
/// chunk maps that chunk alone and reads the bytes the exporter holds
/// there, not the buffer's start; an acquire maps nothing; a fill of the
/// whole buffer maps the rest.
#[test]
fn a_first_access_maps_only_the_chunks_it_touches() {
    use dmabridge::sys::dma_buf::CHUNK;
    let (ctx, q) = cpu();
    let n = 3 * CHUNK + 4096;
    let memfd = Memfd::create(c"khr-chunks", n as u64).unwrap();
    memfd.add_seals(Seals::SHRINK).unwrap();
    let data = pattern(n, 41);
    memfd.map(0, n, Access::Write).unwrap().write_bytes(0, &data);
    let dma_buf = Udmabuf::open().unwrap().create(memfd.as_fd(), 0, n as u64).unwrap();
    let read_at = |b: &Arc<Buffer>, offset: usize| {
        let mut out = [0u8; 16];
        // SAFETY: a blocking read of 16 bytes into `out`.
        unsafe { commands::enqueue_read_buffer(&q, b, true, offset, 16, out.as_mut_ptr(), &[]) }.unwrap();
        out
    };
    // clImportMemoryARM.
    let arm = import_dma_buf(&ctx, 0, dma_buf.as_fd(), n).unwrap();
    assert_eq!(arm.cpu_mapped_bytes(), 0);
    assert_eq!(read_at(&arm, CHUNK + 5), data[CHUNK + 5..CHUNK + 21], "the bytes at their own offset");
    assert_eq!(arm.cpu_mapped_bytes(), CHUNK, "one chunk mapped for a 16-byte read");
    assert_eq!(read_at(&arm, n - 16), data[n - 16..], "the last bytes");
    assert_eq!(arm.cpu_mapped_bytes(), CHUNK + 4096, "and the short last chunk");
    // The Khronos way: the acquire maps nothing.
    let khr = import(&ctx, &dma_buf, n);
    let one = std::slice::from_ref(&khr);
    Event::wait(&[memory::enqueue_acquire(&q, one, &[]).unwrap()]).unwrap();
    assert_eq!(khr.cpu_mapped_bytes(), 0, "an acquire maps nothing");
    assert_eq!(read_at(&khr, 2 * CHUNK + 7), data[2 * CHUNK + 7..2 * CHUNK + 23]);
    assert_eq!(khr.cpu_mapped_bytes(), CHUNK);
    Event::wait(&[fill(&q, &khr, 0x77)]).unwrap();
    assert_eq!(khr.cpu_mapped_bytes(), n, "a fill of all of it maps all of it");
    memory::enqueue_release(&q, one, &[]).unwrap();
    let mut seen = vec![0u8; n];
    memfd.map(0, n, Access::Read).unwrap().read_bytes(0, &mut seen);
    assert!(seen.iter().all(|b| *b == 0x77), "the fill reached every page of the exporter");
}

/// Another driver's fence on a dma-buf dmabridge exported: vgem imports a
/// buffer's export and attaches a write fence (as a GPU writing it would);
/// a fill of the buffer on the CPU device waits for it, asleep in the
/// queue's io_uring, and runs once the test signals it.
#[test]
fn a_cpu_access_to_an_exported_buffer_waits_for_a_foreign_fence() {
    let (ctx, q) = cpu();
    let dev = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    const N: usize = 4096;
    // SAFETY: no host pointer.
    let b = unsafe { Buffer::create(&ctx, mem_flags::ALLOC_HOST_PTR, N, null_mut()) }.unwrap();
    let dma_buf = b.export_dmabuf(&Udmabuf::open().unwrap()).unwrap();
    let gem = dev.import(&dma_buf).unwrap();
    let fence = dev.vgem_attach_fence_to_import(&gem, true).unwrap();
    fill_waits_for(&q, &b, &dev, fence, 0x21);
}

/// The same for a USM allocation exported by the heap
/// (`clGetMemAllocDmaBufFdDMABRIDGE`): vgem's write fence on the export holds
/// a USM fill of the allocation, and a copy out of it (a read: a write fence
/// holds it too), until the test signals it; exporting it again and again
/// keeps no fd per export.
#[test]
fn a_usm_command_on_an_exported_allocation_waits_for_a_foreign_fence() {
    let (ctx, q) = cpu();
    let dev = DrmDevice::open_vgem().expect("the guest suite loads vgem");
    const N: usize = 4096;
    let p = usm::host_mem_alloc(&ctx, &[], N, 0).unwrap().as_ptr();
    let export = dma_buf_export::export_mem_alloc(&ctx, p, &[]).unwrap();
    let gem = dev.import(&export.dmabuf).unwrap();
    let fence = dev.vgem_attach_fence_to_import(&gem, true).unwrap();
    // SAFETY: `p` holds N bytes that nothing else touches until the fill completes.
    let filled = unsafe { usm_commands::enqueue_mem_fill(&q, p, &[0x5a], N, &[]) }.unwrap();
    still_held(&filled);
    waits_in_io_uring();
    dev.vgem_signal(fence).unwrap();
    Event::wait(&[filled]).unwrap();
    // SAFETY: the fill completed: the N bytes at `p` are initialised.
    assert!(unsafe { std::slice::from_raw_parts(p, N) }.iter().all(|&b| b == 0x5a));

    let fence = dev.vgem_attach_fence_to_import(&gem, true).unwrap();
    let mut out = vec![0u8; N];
    // SAFETY: `out` and `p` outlive the copy, which is waited for below.
    let copied = unsafe { usm_commands::enqueue_memcpy(&q, false, out.as_mut_ptr(), p, N, &[]) }.unwrap();
    still_held(&copied);
    dev.vgem_signal(fence).unwrap();
    Event::wait(&[copied]).unwrap();
    assert_eq!(out, vec![0x5a; N]);

    // The registry's duplicate of an export nobody else holds goes at the
    // next export: exported once per frame, the allocation keeps no fd per
    // export (the live one, the last one).
    let before = recognised_exports();
    for _ in 0..10 {
        drop(dma_buf_export::export_mem_alloc(&ctx, p, &[]).unwrap());
    }
    assert!(recognised_exports() <= before + 1, "{before} records before, {} after", recognised_exports());
    usm::mem_free(&ctx, p).unwrap();
}

/// A fill of all of `b` is held by vgem's `fence` (its worker asleep in
/// io_uring) until the test signals it, and then writes `byte` everywhere.
fn fill_waits_for(q: &Arc<Queue>, b: &Arc<Buffer>, dev: &DrmDevice, fence: VgemFence, byte: u8) {
    let filled = fill(q, b, byte);
    still_held(&filled);
    waits_in_io_uring();
    dev.vgem_signal(fence).unwrap();
    Event::wait(&[filled]).unwrap();
    assert_eq!(read(q, b), vec![byte; b.size()]);
}
