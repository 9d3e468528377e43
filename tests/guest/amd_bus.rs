//! `cl_amd_bus_addressable_memory` (seed 002) in the rig: a second edu
//! function of the platform's IOMMU domain (0000:00:12.0) plays the capture
//! card that DMAs frames and markers into bus-addressable buffers, and the
//! ivshmem BAR (0000:00:08.0, BAR 2) is the remote memory of external
//! physical buffers.
//!
//! These tests need `--edu 3` with 00:10.0, 00:12.0 and 00:08.0 bound to
//! vfio-pci, a machine `make test-guest` does not boot: they are ignored
//! there and run by the rig tests (`tests/rig/main.rs`,
//! `amd_bus_*`), which boot that machine.

use std::sync::Arc;

use dmabridge::error::{ClErrorKind, ClResult};
use dmabridge::ext::amd_bus::{self, external, BusAddress, RemoteDma, BUS_ADDRESSABLE, EXTERNAL_PHYSICAL};
use dmabridge::ext::usm;
use dmabridge::runtime::backend::{bar, LocalMemory};
use dmabridge::runtime::buffer::{commands, map, mem_flags, Buffer};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::Device;
use dmabridge::runtime::event::{Event, EventStatus};
use dmabridge::runtime::kernel::{adler32, yuv_to_rgb};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::addr::{BusAddr, HostAddr};
use dmabridge::sys::bytes::Bytes;
use dmabridge_tests::{addr, err_kind, run_in_child, EDU0, IVSHMEM};

/// The rig's third edu, the remote device of these tests.
pub const EDU2: &str = "0000:00:12.0";

fn device(address: &str) -> Arc<Device> {
    let a = addr(address);
    Platform::get()
        .devices()
        .iter()
        .find(|d| d.pci_address() == Some(a))
        .unwrap_or_else(|| panic!("no platform device at {address}: {:?}", Platform::get().skipped()))
        .clone()
}

struct Rig {
    ctx: Arc<Context>,
    cpu_q: Arc<Queue>,
    edu_q: Arc<Queue>,
    remote: RemoteDma,
}

fn rig() -> Rig {
    let p = Platform::get();
    let edu = device(EDU0);
    let ctx = Context::new(&[p.cpu().clone(), edu.clone()]).unwrap();
    let cpu_q = Queue::new(&ctx, p.cpu(), QueueProps::default()).unwrap();
    let edu_q = Queue::new(&ctx, &edu, QueueProps::default()).unwrap();
    let remote = RemoteDma::open(addr(EDU2)).unwrap();
    Rig { ctx, cpu_q, edu_q, remote }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed)).collect()
}

fn bus_buffer(ctx: &Arc<Context>, data: &[u8]) -> Arc<Buffer> {
    // SAFETY: `data` holds `data.len()` bytes.
    unsafe {
        amd_bus::create_buffer(ctx, BUS_ADDRESSABLE | mem_flags::COPY_HOST_PTR, data.len(), data.as_ptr() as *mut u8)
    }
    .unwrap()
}

fn surface_bytes(b: &Buffer) -> Vec<u8> {
    let (surface, _) = amd_bus::cpu_pages(b).unwrap();
    // SAFETY: the buffer's surface, `size` bytes; copied out at once.
    unsafe { std::slice::from_raw_parts(surface, b.size()) }.to_vec()
}

fn signal_value(b: &Buffer) -> u32 {
    // SAFETY: the buffer's signal page, read volatile.
    unsafe { amd_bus::cpu_pages(b).unwrap().1.read_volatile() }
}

fn is_mapped(bus: BusAddr) -> bool {
    let domain = Platform::get().dma_domain().unwrap();
    domain.container().mappings().iter().any(|m| bus.0 >= m.iova.0 && bus.0 < m.iova.0 + m.size)
}

#[test]
#[ignore = "needs --edu 3 with 00:12.0 bound: run by the rig test amd_bus_in_the_rig"]
fn child_resident_buffers_take_remote_dma_by_bus_address() {
    let r = rig();
    let data = pattern(3 * 4096 + 100, 1);
    let b = bus_buffer(&r.ctx, &data);
    // Non-blocking, with an event; then blocking: the same addresses.
    let (at, ev) = amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&b), false, &[]).unwrap();
    Event::wait(std::slice::from_ref(&ev)).unwrap();
    assert_eq!(ev.command_type(), amd_bus::command_type::MAKE_BUFFERS_RESIDENT);
    let (again, _) = amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&b), true, &[]).unwrap();
    assert_eq!(again, at);
    let mask = Platform::get().dma_domain().unwrap().dma_mask();
    assert!(at[0].surface_bus_address.0 + data.len() as u64 - 1 <= mask, "{at:?} under the DMA mask {mask:#x}");
    assert!(is_mapped(at[0].surface_bus_address) && is_mapped(at[0].marker_bus_address));
    assert_eq!(amd_bus::bus_address(&b), Some(at[0]));

    // The remote device reads and writes the surface and the signal page by
    // bus address only.
    assert_eq!(r.remote.read(at[0].surface_bus_address, data.len()).unwrap(), data);
    let frame = pattern(5000, 77);
    // SAFETY: the buffer's surface and signal page (read only volatile).
    unsafe {
        r.remote.write(at[0].surface_bus_address + 1000, &frame).unwrap();
        r.remote.write_u32(at[0].marker_bus_address, 5).unwrap();
    }
    let now = surface_bytes(&b);
    assert_eq!(&now[1000..6000], &frame[..]);
    assert_eq!(&now[..1000], &data[..1000]);
    assert_eq!(&now[6000..], &data[6000..]);
    assert_eq!(signal_value(&b), 5);

    // The pages are memfd pages: exported as a dma-buf, they show what the
    // remote device wrote.
    let dmabuf = b.export_dmabuf(&dmabridge::sys::udmabuf::Udmabuf::open().unwrap()).unwrap();
    let view = dmabuf.map(dmabridge::sys::mmap::Access::Read).unwrap();
    let mut seen = vec![0u8; 5000];
    view.read_bytes(1000, &mut seen);
    assert_eq!(seen, frame);
}

#[test]
#[ignore = "needs --edu 3 with 00:12.0 bound: run by the rig test amd_bus_in_the_rig"]
fn child_the_iommu_confines_remote_dma_to_resident_ranges() {
    let r = rig();
    let data = pattern(4096, 3);
    let (a, neighbour) = (bus_buffer(&r.ctx, &data), bus_buffer(&r.ctx, &data));
    let (at, _) = amd_bus::make_buffers_resident(&r.cpu_q, &[a.clone(), neighbour.clone()], true, &[]).unwrap();
    // Just outside a resident range: the first unmapped page after the
    // surface's mapping.
    let mut outside = at[0].surface_bus_address + 4096;
    while is_mapped(outside) {
        outside += 4096;
    }
    // SAFETY: in no mapping of the domain (checked above; nothing else
    // maps meanwhile): the IOMMU faults the DMA.
    unsafe {
        r.remote.write(outside, &[0xee; 4096]).unwrap();
        r.remote.write_u32(outside, 0xeeee_eeee).unwrap();
    }
    for b in [&a, &neighbour] {
        assert_eq!(surface_bytes(b), data, "a faulted DMA changed nothing");
        assert_eq!(signal_value(b), 0);
    }

    // Released: the bus addresses stop working, and stay so when new
    // buffers (on the pages the heap gives back) are made resident: they
    // get other bus addresses, and the old ones reach none of them.
    let old = at[0];
    drop(a);
    assert!(!is_mapped(old.surface_bus_address));
    assert!(!is_mapped(old.marker_bus_address));
    let fresh: Vec<Arc<Buffer>> = (0..4).map(|_| bus_buffer(&r.ctx, &data)).collect();
    let (now, _) = amd_bus::make_buffers_resident(&r.cpu_q, &fresh, true, &[]).unwrap();
    for at in &now {
        for bus in [at.surface_bus_address, at.marker_bus_address] {
            for stale in [old.surface_bus_address, old.marker_bus_address] {
                assert!(
                    bus.0.abs_diff(stale.0) >= 4096,
                    "a new buffer got the released bus address {stale:#x}: {now:x?}"
                );
            }
        }
    }
    assert!(!is_mapped(old.surface_bus_address + 4095) && !is_mapped(old.marker_bus_address));
    // SAFETY: no longer in any mapping of the domain (checked just above).
    unsafe {
        r.remote.write(old.surface_bus_address, &[0xdd; 4096]).unwrap();
        r.remote.write_u32(old.marker_bus_address, 9).unwrap();
    }
    for b in &fresh {
        assert_eq!(surface_bytes(b), data);
        assert_eq!(signal_value(b), 0);
    }
    assert_eq!(surface_bytes(&neighbour), data);
}

#[test]
#[ignore = "needs --edu 3 with 00:12.0 bound: run by the rig test amd_bus_in_the_rig"]
fn child_wait_signal_holds_the_queue_until_the_remote_marker() {
    let r = rig();
    let b = bus_buffer(&r.ctx, &[0u8; 4096]);
    let (at, _) = amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&b), true, &[]).unwrap();
    let wait = amd_bus::enqueue_wait_signal(&r.cpu_q, &b, 2, &[]).unwrap();
    assert_eq!(wait.command_type(), amd_bus::command_type::WAIT_SIGNAL);
    // The next command of the queue reads the frame; one on another queue
    // waits for the signal's event.
    let mut out = vec![0u8; 4096];
    // SAFETY: `out` holds 4096 bytes and outlives the command (waited below).
    let read = unsafe { commands::enqueue_read_buffer(&r.cpu_q, &b, false, 0, 4096, out.as_mut_ptr(), &[]) }.unwrap();
    let other = r.edu_q.enqueue_marker(std::slice::from_ref(&wait)).unwrap();
    // A marker below the value does not release it.
    // SAFETY (this and the writes below): the buffer's surface and signal
    // page, resident, read only through raw pointers.
    unsafe { r.remote.write_u32(at[0].marker_bus_address, 1) }.unwrap();
    r.remote.raise_irq().unwrap();
    assert_ne!(read.status(), EventStatus::Complete, "the queue is held while the marker is below the value");
    assert_ne!(other.status(), EventStatus::Complete);
    let frame = pattern(4096, 9);
    // SAFETY: as above.
    unsafe {
        r.remote.write(at[0].surface_bus_address, &frame).unwrap();
        r.remote.write_u32(at[0].marker_bus_address, 2).unwrap();
    }
    Event::wait(&[read.clone(), other]).unwrap();
    assert_eq!(wait.status(), EventStatus::Complete);
    assert_eq!(out, frame, "the command after the wait saw the frame written before the marker");

    // Reached with wrap-around: marker 7 satisfies a wait for 5 at once.
    // SAFETY: as above.
    unsafe { r.remote.write_u32(at[0].marker_bus_address, 7) }.unwrap();
    Event::wait(&[amd_bus::enqueue_wait_signal(&r.cpu_q, &b, 5, &[]).unwrap()]).unwrap();

    // A fresh signal page holds 0, which has reached no value above it (not
    // 0x8000_0001 either: markers never wrap): the wait holds until the
    // value is written.
    let fresh = bus_buffer(&r.ctx, &[0u8; 4096]);
    let (fat, _) = amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&fresh), true, &[]).unwrap();
    let q3 = Queue::new(&r.ctx, Platform::get().cpu(), QueueProps::default()).unwrap();
    let high = amd_bus::enqueue_wait_signal(&q3, &fresh, 0x8000_0001, &[]).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_ne!(high.status(), EventStatus::Complete, "marker 0 ended the wait for 0x8000_0001");
    // SAFETY: as above, for `fresh`.
    unsafe { r.remote.write_u32(fat[0].marker_bus_address, 0x8000_0001) }.unwrap();
    Event::wait(&[high]).unwrap();

    // clMemBlockingFreeINTEL of memory used behind a wait-signal waits for
    // the signal.
    let usm = dmabridge::ext::usm::host_mem_alloc(&r.ctx, &[], 64, 0).unwrap();
    let wait = amd_bus::enqueue_wait_signal(&r.cpu_q, &b, 8, &[]).unwrap();
    // SAFETY: `usm` is a live 64-byte allocation of the context.
    let fill =
        unsafe { dmabridge::ext::usm_commands::enqueue_mem_fill(&r.cpu_q, usm.as_ptr(), &[1u8], 64, &[]) }.unwrap();
    let remote = std::thread::spawn({
        let (bus, e2) = (at[0].marker_bus_address, addr(EDU2));
        // SAFETY: as above (the buffer outlives the thread: joined below).
        move || unsafe { RemoteDma::open(e2).unwrap().write_u32(bus, 8) }.unwrap()
    });
    dmabridge::ext::usm_commands::mem_blocking_free(&r.ctx, usm.as_ptr()).unwrap();
    assert_eq!(fill.status(), EventStatus::Complete, "the free waited for the fill behind the signal");
    assert_eq!(wait.status(), EventStatus::Complete);
    remote.join().unwrap();

    // A marker that never comes: releasing the queue ends the wait (the
    // release returns) with CL_INVALID_COMMAND_QUEUE.
    let q2 = Queue::new(&r.ctx, Platform::get().cpu(), QueueProps::default()).unwrap();
    let never = amd_bus::enqueue_wait_signal(&q2, &b, 1000, &[]).unwrap();
    drop(q2);
    assert_eq!(never.status(), EventStatus::Error(dmabridge::error::code::INVALID_COMMAND_QUEUE));
}

/// The ivshmem BAR 2's bus range, from sysfs.
fn ivshmem_bar2() -> (u64, u64) {
    bar_range(IVSHMEM, 2)
}

/// The bus range of `bar` of the PCI function `address`, from sysfs.
fn bar_range(address: &str, bar: usize) -> (u64, u64) {
    let text = std::fs::read_to_string(format!("/sys/bus/pci/devices/{address}/resource")).unwrap();
    let line = text.lines().nth(bar).unwrap();
    let f: Vec<u64> =
        line.split_whitespace().map(|s| u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()).collect();
    (f[0], f[1] - f[0] + 1)
}

/// Reads `len` bytes of the ivshmem BAR 2 at `offset` through a second
/// open of the VFIO device (region reads: `pread` on the device fd, not
/// the mapping the buffer uses).
fn bar2_bytes(offset: u64, len: usize) -> Vec<u8> {
    let domain = Platform::get().dma_domain().unwrap();
    let dev = domain.container().device(addr(IVSHMEM)).unwrap();
    let mut out = vec![0u8; len];
    dev.read_region(2, offset, &mut out).unwrap();
    out
}

fn bar2_u32(offset: u64) -> u32 {
    u32::from_le_bytes(bar2_bytes(offset, 4).try_into().unwrap())
}

#[test]
#[ignore = "needs --edu 3 with 00:12.0 and 00:08.0 bound: run by the rig test amd_bus_in_the_rig"]
fn child_external_physical_buffers_are_written_peer_to_peer_and_signalled() {
    let r = rig();
    let (bar, len) = ivshmem_bar2();
    let at = BusAddress { surface_bus_address: BusAddr(bar + 0x10_0000), marker_bus_address: BusAddr(bar + 0x20_0000) };
    let create = |at: BusAddress, size: usize| {
        let mut at = at;
        // SAFETY: a whole BusAddress.
        unsafe { amd_bus::create_buffer(&r.ctx, EXTERNAL_PHYSICAL, size, &mut at as *mut BusAddress as *mut u8) }
    };
    assert_eq!(external::find_bar(BusAddr(bar + 5)).map(|s| (s.address, s.bar)), Some((addr(IVSHMEM), 2)));
    let x = create(at, 8192).unwrap();
    assert_eq!(err_kind(create(at, 4096)), ClErrorKind::OutOfResources, "a second buffer on the same surface");
    let unaligned = BusAddress { surface_bus_address: BusAddr(bar + 0x30_0010), ..at };
    assert_eq!(err_kind(create(unaligned, 4096)), ClErrorKind::InvalidHostPtr);
    let past =
        BusAddress { surface_bus_address: BusAddr(bar + len - 4096), marker_bus_address: BusAddr(bar + 0x20_0000) };
    assert_eq!(err_kind(create(past, 8192)), ClErrorKind::MemObjectAllocationFailure, "runs past the BAR");

    // Write-only: reads, maps and copies from it are refused.
    let mut out = [0u8; 16];
    // SAFETY: `out` holds 16 bytes (the call is refused before using it).
    let read = unsafe { commands::enqueue_read_buffer(&r.cpu_q, &x, true, 0, 16, out.as_mut_ptr(), &[]) };
    assert_eq!(err_kind(read), ClErrorKind::InvalidOperation);
    assert_eq!(err_kind(map::enqueue_map_buffer(&r.cpu_q, &x, true, 2, 0, 16)), ClErrorKind::InvalidOperation);
    let plain = bus_buffer(&r.ctx, &[0u8; 8192]);
    assert_eq!(
        err_kind(commands::enqueue_copy_buffer(&r.cpu_q, &x, &plain, 0, 0, 16, &[])),
        ClErrorKind::InvalidOperation
    );

    // Built-in kernels may write it, not read it.
    let cpu = Platform::get().cpu();
    let copy_bytes = |dst: &Arc<Buffer>, src: &Arc<Buffer>| {
        let k = dmabridge::runtime::kernel::Kernel::builtin(&r.ctx, cpu, "copy_bytes").unwrap();
        k.set_arg_buffer(0, dst).unwrap();
        k.set_arg_buffer(1, src).unwrap();
        k.set_arg_scalar(2, &16u64.to_ne_bytes()).unwrap();
        // SAFETY: the arguments are two buffers of at least 16 bytes, held by the launch.
        unsafe { dmabridge::runtime::kernel::enqueue_task(&r.cpu_q, &k, &[]) }
    };
    assert_eq!(err_kind(copy_bytes(&plain, &x)), ClErrorKind::InvalidOperation, "a kernel reading it");
    let head = bus_buffer(&r.ctx, &pattern(16, 99));
    Event::wait(&[copy_bytes(&x, &head).unwrap()]).unwrap();
    assert_eq!(bar2_bytes(0x10_0000, 16), pattern(16, 99), "a kernel writing it");

    // A frame copied peer-to-peer by the edu device's queue, then the
    // marker: both in the BAR.
    let frame = pattern(8192, 41);
    let src = bus_buffer(&r.ctx, &frame);
    let copy = commands::enqueue_copy_buffer(&r.edu_q, &src, &x, 0, 0, 8192, &[]).unwrap();
    let sig = amd_bus::enqueue_write_signal(&r.edu_q, &x, 1, 0, &[copy]).unwrap();
    Event::wait(std::slice::from_ref(&sig)).unwrap();
    assert_eq!(sig.command_type(), amd_bus::command_type::WRITE_SIGNAL);
    assert_eq!(bar2_bytes(0x10_0000, 8192), frame);
    assert_eq!(bar2_u32(0x20_0000), 1);
    // Markers keep increasing; offsets stay inside the buffer.
    assert_eq!(err_kind(amd_bus::enqueue_write_signal(&r.cpu_q, &x, 1, 0, &[])), ClErrorKind::InvalidValue);
    assert_eq!(err_kind(amd_bus::enqueue_write_signal(&r.cpu_q, &x, 9, 8190, &[])), ClErrorKind::InvalidBufferSize);
    for offset in [8192, u64::MAX - 3, u64::MAX] {
        let e = amd_bus::enqueue_write_signal(&r.cpu_q, &x, 9, offset, &[]);
        assert_eq!(err_kind(e), ClErrorKind::InvalidBufferSize, "offset {offset:#x}");
    }
    Event::wait(&[amd_bus::enqueue_write_signal(&r.cpu_q, &x, 2, 8188, &[]).unwrap()]).unwrap();
    assert_eq!(bar2_u32(0x20_0000 + 8188), 2);

    // Threads enqueueing markers from one counter: the accepted ones run
    // (in the in-order queue, by their profiled start) in increasing order.
    use std::sync::atomic::{AtomicU32, Ordering::SeqCst};
    let profiled =
        Queue::new(&r.ctx, Platform::get().cpu(), QueueProps { profiling: true, ..Default::default() }).unwrap();
    let next = AtomicU32::new(3);
    let mut accepted: Vec<(u64, u32)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    for _ in 0..200 {
                        let v = next.fetch_add(1, SeqCst);
                        match amd_bus::enqueue_write_signal(&profiled, &x, v, 4, &[]) {
                            Ok(ev) => mine.push((ev, v)),
                            Err(e) => assert_eq!(e.kind, ClErrorKind::InvalidValue, "{e}"),
                        }
                    }
                    mine
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect::<Vec<_>>()
    })
    .into_iter()
    .map(|(ev, v)| {
        Event::wait(std::slice::from_ref(&ev)).unwrap();
        (ev.profiling_times().unwrap().start, v)
    })
    .collect();
    accepted.sort();
    assert!(accepted.len() > 1);
    for pair in accepted.windows(2) {
        assert!(pair[0].1 < pair[1].1, "marker {} written after {}", pair[1].1, pair[0].1);
    }
    assert_eq!(bar2_u32(0x20_0000 + 4), accepted.last().unwrap().1);

    // Released, the surface address can be used again.
    drop(x);
    drop(create(at, 4096).unwrap());
}

fn create_external(ctx: &Arc<Context>, surface: u64, marker: u64, size: usize) -> ClResult<Arc<Buffer>> {
    let mut at = BusAddress { surface_bus_address: BusAddr(surface), marker_bus_address: BusAddr(marker) };
    // SAFETY: a whole BusAddress.
    unsafe { amd_bus::create_buffer(ctx, EXTERNAL_PHYSICAL, size, &mut at as *mut BusAddress as *mut u8) }
}

/// Launches the CPU device's built-in `name` with `args` (buffers and
/// scalars) over `global` work-items on `q`, and waits for it.
fn run_builtin(ctx: &Arc<Context>, q: &Arc<Queue>, name: &str, global: usize, args: &[Arg]) {
    let k = dmabridge::runtime::kernel::Kernel::builtin(ctx, Platform::get().cpu(), name).unwrap();
    for (i, a) in args.iter().enumerate() {
        match a {
            Arg::Buf(b) => k.set_arg_buffer(i as u32, b).unwrap(),
            Arg::U32(v) => k.set_arg_scalar(i as u32, &v.to_ne_bytes()).unwrap(),
            Arg::U64(v) => k.set_arg_scalar(i as u32, &v.to_ne_bytes()).unwrap(),
        }
    }
    // SAFETY: every pointer argument is a buffer the launch holds.
    Event::wait(&[unsafe { dmabridge::runtime::kernel::enqueue_nd_range(q, &k, global, &[]) }.unwrap()]).unwrap();
}

enum Arg<'a> {
    Buf(&'a Arc<Buffer>),
    U32(u32),
    U64(u64),
}

/// An external physical buffer's own mapping of the BAR (no BAR device
/// here) is I/O memory: the CPU's writes, copies, rectangle writes, fills
/// (zero fills too) and built-in kernels reach it with aligned volatile
/// accesses, at every offset and length. The mapping was not registered:
/// `memcpy`/`memset` (unaligned, paired and `DC ZVA` accesses) went to it,
/// which Device memory on arm64 answers with SIGBUS.
#[test]
#[ignore = "needs --edu 3 with 00:12.0 and 00:08.0 bound: run by the rig test amd_bus_in_the_rig"]
fn child_external_buffers_take_the_cpus_writes_at_any_alignment() {
    use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
    use dmabridge::runtime::transfer::io::is_io;
    const SIZE: usize = 16384;
    const AT: u64 = 0x30_0000;
    let r = rig();
    let q = &r.cpu_q;
    let (bar, _) = ivshmem_bar2();
    let x = create_external(&r.ctx, bar + AT, bar + 0x38_0000, SIZE).unwrap();
    let (surface, signal) = amd_bus::cpu_pages(&x).unwrap();
    assert!(is_io(HostAddr::of(surface), SIZE), "the surface's BAR mapping is not registered as I/O memory");
    assert!(is_io(HostAddr::of(signal), SIZE), "the signal surface's BAR mapping is not registered as I/O memory");
    let data = pattern(SIZE, 5);
    let src = bus_buffer(&r.ctx, &data);
    let seen = |off: usize, len: usize| bar2_bytes(AT + off as u64, len);
    for (off, len) in [(1usize, 13usize), (3, 29), (5, 1000), (7, 4093), (0, 31), (6, 2)] {
        // SAFETY: blocking; `data` holds `1 + len` bytes.
        unsafe { commands::enqueue_write_buffer(q, &x, true, off, len, data.as_ptr().add(1), &[]) }.unwrap();
        assert_eq!(seen(off, len), data[1..1 + len], "write at +{off}, {len} bytes");
        let copy = commands::enqueue_copy_buffer(q, &src, &x, 3, 8192 + off, len, &[]).unwrap();
        Event::wait(&[copy]).unwrap();
        assert_eq!(seen(8192 + off, len), data[3..3 + len], "copy to +{}, {len} bytes", 8192 + off);
        // Two rows of `len / 2 + 1` bytes at column `off`, 4096 apart.
        let w = len / 2 + 1;
        let hr =
            HostRect { buffer_origin: [off, 0, 0], region: [w, 2, 1], buffer_row_pitch: 4096, ..Default::default() };
        // SAFETY: blocking; the packed host rectangle is `2 * w` bytes of `data`.
        unsafe { rect::enqueue_write_buffer_rect(q, &x, true, &hr, data.as_ptr().add(7), &[]) }.unwrap();
        assert_eq!(seen(off, w), data[7..7 + w], "rectangle row 0 at +{off}");
        assert_eq!(seen(4096 + off, w), data[7 + w..7 + 2 * w], "rectangle row 1 at +{}", 4096 + off);
        let cr = CopyRect {
            src_origin: [off + 1, 0, 0],
            dst_origin: [off, 1, 0],
            region: [w, 1, 1],
            src_row_pitch: 4096,
            dst_row_pitch: 8192,
            ..Default::default()
        };
        Event::wait(&[rect::enqueue_copy_buffer_rect(q, &src, &x, &cr, &[]).unwrap()]).unwrap();
        assert_eq!(seen(8192 + off, w), data[off + 1..off + 1 + w], "copied rectangle at +{}", 8192 + off);
    }
    for (p, off, len) in [(1usize, 1usize, 4001usize), (2, 2, 998), (4, 4, 1004), (8, 8, 4096), (16, 48, 160)] {
        let pat: Vec<u8> = (0..p as u8).map(|i| i.wrapping_mul(37).wrapping_add(p as u8)).collect();
        Event::wait(&[commands::enqueue_fill_buffer(q, &x, &pat, off, len, &[]).unwrap()]).unwrap();
        let filled = seen(off, len);
        assert!(filled.chunks(p).all(|c| c == pat), "fill of a {p}-byte pattern at +{off}, {len} bytes");
    }
    // Zero fills: memset zeroes whole cache lines with `DC ZVA` on arm64.
    for (off, len) in [(0usize, SIZE), (1, 4000), (64, 4096)] {
        Event::wait(&[commands::enqueue_fill_buffer(q, &x, &[0], off, len, &[]).unwrap()]).unwrap();
        assert!(seen(off, len).iter().all(|&b| b == 0), "zero fill at +{off}, {len} bytes");
    }

    // Built-in kernels writing it; NDRanges split the work at odd offsets.
    for global in [1usize, 3, 7] {
        run_builtin(&r.ctx, q, "copy_bytes", global, &[Arg::Buf(&x), Arg::Buf(&src), Arg::U64(4093)]);
        assert_eq!(seen(0, 4093), data[..4093], "copy_bytes over {global} work-items");
        run_builtin(&r.ctx, q, "fill_pattern_u32", global, &[Arg::Buf(&x), Arg::U64(1001), Arg::U32(0x0403_0201)]);
        assert!(seen(0, 4004).chunks(4).all(|c| c == [1, 2, 3, 4]), "fill_pattern_u32 over {global} work-items");
    }
    let (w, h) = (6usize, 3usize);
    let yuyv = bus_buffer(&r.ctx, &data[..w * h * 2]);
    run_builtin(&r.ctx, q, "yuyv_to_rgba", 3, &[Arg::Buf(&yuyv), Arg::Buf(&x), Arg::U32(w as u32), Arg::U32(h as u32)]);
    let rgba: Vec<u8> = data[..w * h * 2]
        .chunks(4)
        .flat_map(|c| {
            let ([r0, g0, b0], [r1, g1, b1]) = (yuv_to_rgb(c[0], c[1], c[3]), yuv_to_rgb(c[2], c[1], c[3]));
            [r0, g0, b0, 255, r1, g1, b1, 255]
        })
        .collect();
    assert_eq!(seen(0, w * h * 4), rgba, "yuyv_to_rgba");
    run_builtin(&r.ctx, q, "checksum_adler32", 1, &[Arg::Buf(&src), Arg::U64(1001), Arg::Buf(&x)]);
    assert_eq!(seen(0, 4), adler32(&data[..1001]).to_ne_bytes(), "checksum_adler32");
}

/// The BARs of a function the platform drives are not remote memory: an
/// edu engine's BAR 0 holds its DMA registers (a write there, or a marker,
/// would reprogram it). External buffers there are refused, naming the
/// device; they were accepted.
#[test]
#[ignore = "needs --edu 3 with 00:12.0 and 00:08.0 bound: run by the rig test amd_bus_in_the_rig"]
fn child_external_buffers_refuse_the_functions_the_platform_drives() {
    let r = rig();
    for edu in [EDU0, EDU2] {
        let (bar0, len) = bar_range(edu, 0);
        assert!(len >= 0x2000, "edu's BAR 0 is 1 MiB: {len:#x}");
        let e = create_external(&r.ctx, bar0, bar0 + 0x1000, 4096).expect_err("an edu engine's register BAR");
        assert_eq!(e.kind, ClErrorKind::MemObjectAllocationFailure, "{e}");
        assert!(e.message.contains(&format!("\"edu {edu}\"")) && e.message.contains("registers"), "{e}");
    }
    // Memory of a function the platform does not drive is taken.
    let (bar, _) = ivshmem_bar2();
    drop(create_external(&r.ctx, bar + 0x10_0000, bar + 0x20_0000, 4096).unwrap());
}

/// On the BAR device's queue an external physical buffer on its BAR is
/// written through, by every command kind, and the marker follows: no
/// allocation in the device's memory, no byte read from the remote memory
/// (they went into a fresh local allocation, and a partial write first read
/// the surface). Then a BAR of its function other than its memory is
/// refused.
#[test]
#[ignore = "run by bar_device_writes_external_buffers_through"]
fn bar_child_external_buffers_are_written_through() {
    use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
    use dmabridge::runtime::buffer::store::Location;
    const SIZE: usize = 16384;
    let p = Platform::get();
    let dev = p.devices().iter().find(|d| d.bar_backend().is_some()).expect("the BAR device").clone();
    let backend = dev.bar_backend().unwrap();
    let memory = backend.memory().clone();
    let ctx = Context::new(&[p.cpu().clone(), device(EDU0), dev.clone()]).unwrap();
    let bq = Queue::new(&ctx, &dev, QueueProps::default()).unwrap();
    let (bar, len) = ivshmem_bar2();
    let (surface, marker) = (len / 2, len / 2 + 0x10_0000);
    let before = memory.allocated();
    let x = create_external(&ctx, bar + surface, bar + marker, SIZE).unwrap();
    let claimed = memory.allocated();
    let seen = |off: usize, n: usize| {
        let mut v = vec![0u8; n];
        backend.read_slice(surface + off as u64, &mut v).unwrap();
        v
    };
    let data = pattern(SIZE, 23);
    let src = bus_buffer(&ctx, &data);
    let mut events = Vec::new();
    // SAFETY (writes): `data` outlives the commands (waited for below).
    unsafe {
        // A partial write, then a whole one: neither reads the surface.
        events.push(commands::enqueue_write_buffer(&bq, &x, false, 5, 100, data.as_ptr(), &[]).unwrap());
    }
    Event::wait(&events).unwrap();
    assert_eq!(seen(5, 100), data[..100], "a partial write on the BAR device's queue");
    events.clear();
    let fill = [0xa1u8, 0xb2, 0xc3, 0xd4];
    events.push(commands::enqueue_fill_buffer(&bq, &x, &fill, 256, 1024, &[]).unwrap());
    events.push(commands::enqueue_copy_buffer(&bq, &src, &x, 11, 2000, 999, &[]).unwrap());
    let hr = HostRect { buffer_origin: [16, 1, 0], region: [48, 2, 1], buffer_row_pitch: 4096, ..Default::default() };
    // SAFETY: `data` holds the packed 96-byte rectangle and outlives the command.
    events.push(unsafe { rect::enqueue_write_buffer_rect(&bq, &x, false, &hr, data.as_ptr(), &[]) }.unwrap());
    let cr = CopyRect {
        src_origin: [3, 0, 0],
        dst_origin: [100, 3, 0],
        region: [64, 1, 1],
        src_row_pitch: 4096,
        dst_row_pitch: 4096,
        ..Default::default()
    };
    events.push(rect::enqueue_copy_buffer_rect(&bq, &src, &x, &cr, &[]).unwrap());
    let k = dmabridge::runtime::kernel::Kernel::builtin(&ctx, &dev, "dma_copy").unwrap();
    let head = bus_buffer(&ctx, &pattern(64, 77));
    k.set_arg_buffer(0, &x).unwrap();
    k.set_arg_buffer(1, &head).unwrap();
    k.set_arg_scalar(2, &64u64.to_ne_bytes()).unwrap();
    // SAFETY: both pointer arguments are buffers the launch holds.
    events.push(unsafe { dmabridge::runtime::kernel::enqueue_task(&bq, &k, &[]) }.unwrap());
    let sig = amd_bus::enqueue_write_signal(&bq, &x, 1, 0, &events).unwrap();
    Event::wait(std::slice::from_ref(&sig)).unwrap();
    let mut m = [0u8; 4];
    backend.read_slice(marker, &mut m).unwrap();
    assert_eq!(u32::from_le_bytes(m), 1, "the marker");
    assert_eq!(seen(0, 64), pattern(64, 77), "dma_copy");
    assert!(seen(256, 1024).chunks(4).all(|c| c == fill), "fill");
    assert_eq!(seen(2000, 999), data[11..1010], "copy");
    assert_eq!(seen(4096 + 16, 48), data[..48], "rectangle row 0");
    assert_eq!(seen(8192 + 16, 48), data[48..96], "rectangle row 1");
    assert_eq!(seen(3 * 4096 + 100, 64), data[3..67], "copied rectangle");

    // No copy: the device's allocation is the remote memory itself.
    assert_eq!(x.linked(&dev), Some(true));
    // The sources' own (unlinked) copies are the only allocations made.
    let sources: u64 = [&src, &head].iter().map(|b| b.stats(Location::Device(dev.index)).bytes_allocated).sum();
    assert_eq!(memory.allocated() as u64, claimed as u64 + sources, "an allocation in the device's memory");
    let on_dev = x.stats(Location::Device(dev.index));
    assert_eq!((on_dev.bytes_allocated, on_dev.bytes_in), (0, 0), "{on_dev:?}");
    assert_eq!(x.stats(Location::Host).bytes_out, 0, "the remote memory was read");
    drop((k, events, sig, x, src, head));
    assert_eq!(memory.allocated(), before, "the claim went with the buffer");

    // ivshmem's BAR 0 (its registers) is not the device's memory.
    let (bar0, _) = bar_range(IVSHMEM, 0);
    let e = create_external(&ctx, bar0, bar0, 256).expect_err("the BAR device's register BAR");
    assert_eq!(e.kind, ClErrorKind::MemObjectAllocationFailure, "{e}");
    assert!(e.message.contains(&format!("\"{}\"", dev.name)) && e.message.contains("BAR 0"), "{e}");
}

/// [`bar_child_external_buffers_are_written_through`] with the BAR device's
/// copies by the CPU and by its edu engine (peer-to-peer).
#[test]
#[ignore = "needs --edu 3 with 00:12.0 and 00:08.0 bound, in a process without the platform: run by the rig test \
            amd_bus_in_the_rig"]
fn bar_device_writes_external_buffers_through() {
    for config in [format!("{IVSHMEM},bar=2"), format!("{IVSHMEM},bar=2,engine={EDU0}")] {
        run_in_child("amd_bus::bar_child_external_buffers_are_written_through", &[(bar::ENV, Some(&config))]);
    }
}

/// In a child process without `CAP_IPC_LOCK` (root pins without limit)
/// and with `RLIMIT_MEMLOCK` at 64 KiB: making 1 MiB resident fails with
/// the seed's code, naming the limit.
#[test]
#[ignore = "run by limits_are_named"]
fn limits_child_memlock() {
    use rustix::process::{setrlimit, Resource, Rlimit};
    use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
    let mut caps = capabilities(None).unwrap();
    caps.effective.remove(CapabilitySet::IPC_LOCK);
    caps.permitted.remove(CapabilitySet::IPC_LOCK);
    set_capabilities(None, caps).unwrap();
    setrlimit(Resource::Memlock, Rlimit { current: Some(64 << 10), maximum: Some(64 << 10) }).unwrap();
    let r = rig();
    let b = bus_buffer(&r.ctx, &vec![1u8; 1 << 20]);
    let e = amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&b), true, &[]).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::OutOfHostMemory, "{e}");
    assert!(e.message.contains("RLIMIT_MEMLOCK"), "{e}");
    assert_eq!(amd_bus::bus_address(&b), None, "nothing stays resident");
}

/// In a child process whose domain is narrowed to 16 MiB of bus addresses
/// (`DMABRIDGE_EDU_DMA_MASK`): 12 MiB fit, 8 MiB more do not.
#[test]
#[ignore = "run by limits_are_named"]
fn limits_child_iova() {
    let r = rig();
    let a = bus_buffer(&r.ctx, &vec![1u8; 12 << 20]);
    let b = bus_buffer(&r.ctx, &vec![2u8; 8 << 20]);
    amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&a), true, &[]).unwrap();
    let e = amd_bus::make_buffers_resident(&r.cpu_q, std::slice::from_ref(&b), true, &[]).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::OutOfHostMemory, "{e}");
    assert!(e.message.contains("IOVA space is exhausted"), "{e}");
    // A list that fails part-way leaves the earlier buffers as they were.
    let c = bus_buffer(&r.ctx, &[3u8; 4096]);
    assert!(amd_bus::make_buffers_resident(&r.cpu_q, &[c.clone(), b.clone()], true, &[]).is_err());
    assert_eq!(amd_bus::bus_address(&c), None);
    assert!(amd_bus::bus_address(&a).is_some());
}

/// In a child process whose platform has ivshmem's BAR 2 as a BAR device
/// (`DMABRIDGE_BAR_DEVICE`): an external physical buffer and the device's
/// allocations never share bytes of that memory.
#[test]
#[ignore = "run by limits_are_named"]
fn limits_child_bar_device_memory_is_not_shared() {
    let p = Platform::get();
    let dev = p.devices().iter().find(|d| d.bar_backend().is_some()).expect("the BAR device").clone();
    let memory = dev.bar_backend().unwrap().memory().clone();
    let ctx = Context::new(&[p.cpu().clone(), dev.clone()]).unwrap();
    let (bar, len) = ivshmem_bar2();
    let base = memory.base().as_ptr() as usize;
    let bus_of = |ptr: *mut u8| bar + (ptr as usize - base) as u64;
    let create = |surface: u64, marker: u64, size: usize| {
        let mut at = BusAddress { surface_bus_address: BusAddr(surface), marker_bus_address: BusAddr(marker) };
        // SAFETY: a whole BusAddress.
        unsafe { amd_bus::create_buffer(&ctx, EXTERNAL_PHYSICAL, size, &mut at as *mut BusAddress as *mut u8) }
    };
    // A device allocation's bytes are not taken by an external buffer's
    // surface or signal surface.
    let before = memory.allocated();
    let taken = usm::device_mem_alloc(&ctx, &dev, &[], 8192, 0).unwrap().as_ptr();
    // Pages that overlap its bytes.
    let (page1, page2) = (bus_of(taken) & !0xfff, (bus_of(taken) + 4096) & !0xfff);
    let (free1, free2) = (bar + len / 2, bar + len / 2 + 0x10_0000);
    assert_eq!(err_kind(create(page1, free1, 4096)), ClErrorKind::OutOfResources);
    assert_eq!(err_kind(create(free1, page2, 4096)), ClErrorKind::OutOfResources);
    // The device's allocations stay out of a live external buffer.
    let x = create(free1, free2, 0x10_0000).unwrap();
    let claimed = |q: u64| (free1..free2 + 0x10_0000).contains(&q);
    let mut allocs = vec![taken];
    while let Ok(a) = usm::device_mem_alloc(&ctx, &dev, &[], 0x4_0000, 0) {
        let a = a.as_ptr();
        assert!(!claimed(bus_of(a)) && !claimed(bus_of(a) + 0x3_ffff), "device allocation at {:#x}", bus_of(a));
        allocs.push(a);
    }
    assert!(allocs.len() > 4, "the device memory filled up around the buffer: {} allocations", allocs.len());
    allocs.into_iter().for_each(|a| usm::mem_free(&ctx, a).unwrap());
    drop(x);
    assert_eq!(memory.allocated(), before, "the buffer's claim went with it");
}

#[test]
#[ignore = "needs --edu 3 with 00:12.0 bound, in a process without the platform: run by the rig test amd_bus_in_the_rig"]
fn limits_are_named() {
    run_in_child("amd_bus::limits_child_memlock", &[]);
    run_in_child("amd_bus::limits_child_iova", &[("DMABRIDGE_EDU_DMA_MASK", Some("0xffffff"))]);
    run_in_child(
        "amd_bus::limits_child_bar_device_memory_is_not_shared",
        &[("DMABRIDGE_BAR_DEVICE", Some("0000:00:08.0,bar=2,engine=0000:00:10.0"))],
    );
}

/// With edu's DMA mask raised to 64 bits (and dmabridge told so), the bus
/// addresses of a resident buffer are its CPU addresses.
#[test]
#[ignore = "needs --edu-dma-mask 0xffffffffffffffff: run by the rig test amd_bus_identity_bus_addresses"]
fn identity_child_bus_addresses_are_cpu_addresses_with_a_wide_mask() {
    let p = Platform::get();
    let ctx = Context::new(std::slice::from_ref(p.cpu())).unwrap();
    let q = Queue::new(&ctx, p.cpu(), QueueProps::default()).unwrap();
    let b = bus_buffer(&ctx, &pattern(10_000, 5));
    let (at, _) = amd_bus::make_buffers_resident(&q, std::slice::from_ref(&b), true, &[]).unwrap();
    let (surface, signal) = amd_bus::cpu_pages(&b).unwrap();
    assert_eq!(at[0].surface_bus_address, BusAddr(surface as u64));
    assert_eq!(at[0].marker_bus_address, BusAddr(signal as u64));
}
