//! The BAR device (`DMABRIDGE_BAR_DEVICE`): ivshmem's BAR 2 as device-local
//! memory, with CPU copies or the edu engine peer-to-peer.
//!
//! As in `edu_device.rs`, every test that builds the platform runs its body
//! (an ignored test) in a child process of this executable, here with
//! `DMABRIDGE_BAR_DEVICE` set in the child's environment: the platform keeps
//! its VFIO groups for the life of the process, and the later tests that
//! open ivshmem and edu in their own containers must still find them free.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dmabridge::error::{code, ClErrorKind};
use dmabridge::ext::usm::{self, mem_info, mem_type, MemAllocInfo};
use dmabridge::ext::usm_commands as cmd;
use dmabridge::runtime::backend::bar::{self, BarBackend, ENV};
use dmabridge::runtime::backend::device_copy;
use dmabridge::runtime::backend::domain::DmaDomain;
use dmabridge::runtime::backend::edu_backend::EduBackend;
use dmabridge::runtime::backend::{Backend, LocalMemory};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{svm_caps, usm_caps, Device};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::bytes::Bytes;
use dmabridge::sys::vfio::Container;
use dmabridge_tests::{addr, dmabridge_bin, err_kind, require_guest, run_in_child, Resources, EDU0, EDU1, IVSHMEM};

const MIB4: usize = 4 << 20;

/// Runs the ignored test `name` of this module alone in a child process
/// whose `DMABRIDGE_BAR_DEVICE` is `config` (unset if `None`).
fn in_child(name: &str, config: Option<&str>) {
    run_in_child(&format!("bar_device::{name}"), &[(ENV, config)]);
}

fn cpu_config() -> String {
    format!("{IVSHMEM},bar=2")
}

fn p2p_config() -> String {
    format!("{IVSHMEM},bar=2,engine={EDU0}")
}

/// The platform's one BAR device.
fn bar_device(p: &Platform) -> Arc<Device> {
    let bars: Vec<_> = p.devices().iter().filter(|d| d.local_memory().is_some()).collect();
    assert_eq!(bars.len(), 1, "one BAR device: {:?} (skipped: {:?})", p.devices(), p.skipped());
    bars[0].clone()
}

/// Reads the BAR through the VFIO fd (not the process mapping).
fn read_bar(b: &BarBackend, ptr: *const u8, len: usize) -> Vec<u8> {
    let off = ptr as usize - b.memory().base().as_ptr() as usize;
    let mut v = vec![0u8; len];
    b.read_slice(off as u64, &mut v).unwrap();
    v
}

fn pattern(len: usize, seed: usize) -> Vec<u8> {
    (0..len).map(|i| ((i * 31 + seed * 7) % 253) as u8).collect()
}

#[test]
fn platform_lists_the_configured_bar_device() {
    in_child("child_platform_lists_the_configured_bar_device", Some(&p2p_config()));
}

#[test]
#[ignore = "run in a child process by platform_lists_the_configured_bar_device"]
fn child_platform_lists_the_configured_bar_device() {
    let p = Platform::get();
    assert_eq!(p.devices().len(), 3, "CPU, edu, BAR: {:?}", p.devices());
    let d = bar_device(p);
    assert_eq!(d.index, 2, "after the edus");
    assert_eq!(d.name, format!("bar {IVSHMEM}/2"));
    assert_eq!(d.pci_address(), Some(addr(IVSHMEM)));
    assert!(!d.host_unified_memory);
    assert!(p.devices().iter().filter(|x| x.index != 2).all(|x| x.host_unified_memory && x.local_memory().is_none()));
    let m = d.local_memory().unwrap();
    assert_eq!((m.size(), m.allocated()), (MIB4, 0));
    assert_eq!(d.max_mem_alloc_size, MIB4 as u64);
    use dmabridge::runtime::info::{self, device_param, InfoValue};
    assert_eq!(info::device_info(&d, device_param::GLOBAL_MEM_SIZE).unwrap(), InfoValue::U64(MIB4 as u64));
    assert_eq!(info::device_info(&d, device_param::HOST_UNIFIED_MEMORY).unwrap(), InfoValue::Bool(false));
    assert_eq!(info::device_info(&d, device_param::NAME).unwrap(), InfoValue::Str(d.name.clone()));
    let a = usm_caps::ACCESS;
    assert_eq!((d.usm.host, d.usm.device, d.usm.single_device_shared, d.usm.cross_device_shared), (a, a, a, a));
    assert_eq!(d.usm.shared_system, 0);
    assert_eq!(d.svm, svm_caps::COARSE_GRAIN_BUFFER);
    assert_eq!(d.compute_units, 1);
    let b = d.bar_backend().unwrap();
    assert_eq!(b.config().engine, Some(addr(EDU0)));
    assert_eq!(b.engine().unwrap().edu().address(), addr(EDU0));
    assert_eq!(d.backend().unwrap().max_transfer(), 4096);
    // The whole BAR is mapped for the engine, under edu's 28-bit mask.
    let iova = m.bus_address(m.base().as_ptr()).map(|b| b.raw()).unwrap();
    assert!(iova + MIB4 as u64 <= 1 << 28, "IOVA {iova:#x}");
    assert_eq!(m.bus_address(m.base().as_ptr().wrapping_add(100)).map(|b| b.raw()), Some(iova + 100));
    assert_eq!(m.bus_address(m.base().as_ptr().wrapping_add(MIB4)).map(|b| b.raw()), None);
    let domain = p.dma_domain().unwrap();
    let maps = domain.container().mappings();
    assert_eq!(maps.len(), 1, "only the BAR is mapped: {maps:?}");
    assert_eq!((maps[0].iova.0, maps[0].size), (iova, MIB4 as u64));
    assert!(p.skipped().iter().all(|(a, _)| *a != addr(IVSHMEM)), "{:?}", p.skipped());
}

#[test]
fn bad_configuration_is_skipped_with_the_reason() {
    let text = format!(
        "{IVSHMEM},bar=9; rubbish ; {IVSHMEM},bar=2,engine={EDU1}; {IVSHMEM},bar=2,engine=00:1f.0; {EDU0},bar=0"
    );
    in_child("child_bad_configuration_is_skipped_with_the_reason", Some(&text));
}

#[test]
#[ignore = "run in a child process by bad_configuration_is_skipped_with_the_reason"]
fn child_bad_configuration_is_skipped_with_the_reason() {
    let p = Platform::get();
    assert!(p.devices().iter().all(|d| d.local_memory().is_none()), "{:?}", p.devices());
    assert_eq!(p.devices().len(), 2, "CPU and edu only");
    let why: Vec<&String> = p.skipped().iter().filter(|(a, _)| *a == addr(IVSHMEM)).map(|(_, w)| w).collect();
    println!("skipped: {:#?}", p.skipped());
    assert_eq!(why.len(), 3, "{:?}", p.skipped());
    assert!(why[0].contains("0 to 5") && why[0].contains(ENV), "{}", why[0]);
    assert!(why[1].contains(EDU1) && why[1].contains("not an edu device of the platform"), "{}", why[1]);
    assert!(why[2].contains("0000:00:1f.0"), "{}", why[2]);
    // An edu engine's BAR is its registers, not device memory.
    let edu: Vec<&String> = p.skipped().iter().filter(|(a, _)| *a == addr(EDU0)).map(|(_, w)| w).collect();
    assert_eq!(edu.len(), 1, "{:?}", p.skipped());
    assert!(edu[0].contains("DMA engine") && edu[0].contains("registers"), "{}", edu[0]);
    let unparsed: Vec<&String> = p.skipped().iter().filter(|(a, _)| *a == bar::UNPARSED).map(|(_, w)| w).collect();
    assert_eq!(unparsed.len(), 1);
    assert!(unparsed[0].contains("rubbish") && unparsed[0].contains("not a PCI address"), "{}", unparsed[0]);
    // Nothing of the BAR stayed mapped.
    assert!(p.dma_domain().unwrap().container().mappings().is_empty());
}

#[test]
fn no_configuration_no_bar_device() {
    in_child("child_no_configuration_no_bar_device", None);
}

#[test]
#[ignore = "run in a child process by no_configuration_no_bar_device"]
fn child_no_configuration_no_bar_device() {
    let p = Platform::get();
    assert!(p.devices().iter().all(|d| d.local_memory().is_none() && d.bar_backend().is_none()));
    // Not claimed: another container of this process can still open it.
    let c = Container::open().unwrap();
    let dev = c.device(addr(IVSHMEM)).unwrap();
    assert_eq!(dev.region(2).unwrap().size, MIB4 as u64);
}

#[test]
fn local_memory_sub_allocates_and_refuses_bad_frees() {
    in_child("child_local_memory_sub_allocates_and_refuses_bad_frees", Some(&cpu_config()));
}

#[test]
#[ignore = "run in a child process by local_memory_sub_allocates_and_refuses_bad_frees"]
fn child_local_memory_sub_allocates_and_refuses_bad_frees() {
    let p = Platform::get();
    let d = bar_device(p);
    assert!(d.bar_backend().unwrap().engine().is_none());
    assert_eq!(d.backend().unwrap().max_transfer(), usize::MAX);
    let m = d.local_memory().unwrap();
    let base = m.base().as_ptr() as usize;
    assert_eq!(m.bus_address(m.base().as_ptr()).map(|b| b.raw()), None, "no engine: not mapped for DMA");
    let x = m.alloc(100, 0).unwrap().as_ptr();
    let y = m.alloc(5000, 4096).unwrap().as_ptr();
    assert!(m.contains(x) && m.contains(y) && !m.contains((base + MIB4) as *const u8));
    assert_eq!(y as usize % 4096, 0);
    assert_eq!(m.lookup(x.wrapping_add(99)), Some((x as usize, 100)));
    assert_eq!(m.lookup(y.wrapping_add(4999)), Some((y as usize, 5000)));
    assert_eq!(m.lookup(x.wrapping_add(100)), None);
    let before = m.allocated();
    // Interior, foreign and double frees: CL_INVALID_VALUE, nothing changes.
    let e = m.free(x.wrapping_add(1)).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidValue);
    assert!(e.message.contains("inside"), "{e}");
    let v = [0u8; 8];
    assert_eq!(err_kind(m.free(v.as_ptr())), ClErrorKind::InvalidValue);
    assert_eq!(m.allocated(), before);
    assert_eq!(m.free(x).unwrap(), 100);
    assert_eq!(err_kind(m.free(x)), ClErrorKind::InvalidValue);
    assert_eq!(m.lookup(y), Some((y as usize, 5000)), "the neighbour is intact");
    // Too large for the device at all vs. too large for what is left.
    assert_eq!(err_kind(m.alloc(MIB4 + 1, 0)), ClErrorKind::InvalidBufferSize);
    assert_eq!(err_kind(m.alloc(0, 0)), ClErrorKind::InvalidBufferSize);
    assert_eq!(err_kind(m.alloc(64, 3)), ClErrorKind::InvalidValue);
    let e = m.alloc(MIB4, 0).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::OutOfResources, "{e}");
    m.free(y).unwrap();
    let all = m.alloc(MIB4, 0).unwrap();
    assert_eq!(all.as_ptr() as usize, base);
    m.free(all.as_ptr()).unwrap();
    assert_eq!(m.allocated(), 0);
}

#[test]
fn usm_device_allocations_live_in_the_bar() {
    in_child("child_usm_device_allocations_live_in_the_bar", Some(&cpu_config()));
}

#[test]
#[ignore = "run in a child process by usm_device_allocations_live_in_the_bar"]
fn child_usm_device_allocations_live_in_the_bar() {
    let p = Platform::get();
    let d = bar_device(p);
    let b = d.bar_backend().unwrap();
    let m = d.local_memory().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let cpu = p.cpu().clone();
    let cq = Queue::new(&ctx, &cpu, QueueProps::default()).unwrap();
    let bq = Queue::new(&ctx, &d, QueueProps::default()).unwrap();
    // Warm up the heap and the queues (lazily created state), then count.
    let warm = usm::host_mem_alloc(&ctx, &[], 8192, 0).unwrap().as_ptr();
    let warm2 = usm::shared_mem_alloc(&ctx, Some(&d), &[], 8192, 0).unwrap().as_ptr();
    // SAFETY: both ranges lie in the allocation and are disjoint; every
    // command is waited for.
    unsafe {
        cmd::enqueue_memcpy(&cq, true, warm, warm.add(32), 32, &[]).unwrap();
        cmd::enqueue_memcpy(&bq, true, warm, warm.add(32), 32, &[]).unwrap();
        for q in [&cq, &bq] {
            let ev = cmd::enqueue_mem_fill(q, warm, &[1, 2, 3, 4], 1024, &[]).unwrap();
            dmabridge::runtime::event::Event::wait(&[ev]).unwrap();
        }
    }
    usm::mem_free(&ctx, warm).unwrap();
    usm::mem_free(&ctx, warm2).unwrap();
    let other = Context::new(p.devices()).unwrap();
    drop(other);
    let before = Resources::now();
    let dev = usm::device_mem_alloc(&ctx, &d, &[], 8192, 0).unwrap().as_ptr();
    let host = usm::host_mem_alloc(&ctx, &[], 8192, 0).unwrap().as_ptr();
    let shared = usm::shared_mem_alloc(&ctx, Some(&d), &[], 8192, 0).unwrap().as_ptr();
    assert!(m.contains(dev), "the device allocation is in the BAR");
    assert!(!m.contains(host) && !m.contains(shared), "host and shared ones are not");
    assert_eq!(ctx.local_allocations(), 1);
    assert_eq!(usm::device_address(&d, dev).map(|b| b.raw()), None, "no engine: no bus address");
    // clGetMemAllocInfoINTEL on an interior pointer.
    let inside = dev.wrapping_add(8191);
    let q = |param| usm::get_mem_alloc_info(&ctx, inside, param).unwrap();
    assert_eq!(q(mem_info::ALLOC_TYPE), MemAllocInfo::Type(mem_type::DEVICE));
    assert_eq!(q(mem_info::ALLOC_BASE_PTR), MemAllocInfo::BasePtr(dev as usize));
    assert_eq!(q(mem_info::ALLOC_SIZE), MemAllocInfo::Size(8192));
    assert!(matches!(q(mem_info::ALLOC_DEVICE), MemAllocInfo::Device(Some(x)) if Arc::ptr_eq(&x, &d)));
    let past = usm::get_mem_alloc_info(&ctx, dev.wrapping_add(8192), mem_info::ALLOC_TYPE).unwrap();
    assert_eq!(past, MemAllocInfo::Type(mem_type::UNKNOWN));
    // Too large for the BAR device; and, as seed 000 counts every device
    // that supports host USM, for a host allocation of its context too.
    let e = usm::device_mem_alloc(&ctx, &d, &[], MIB4 + 1, 0).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidBufferSize, "{e}");
    assert_eq!(err_kind(usm::host_mem_alloc(&ctx, &[], MIB4 + 1, 0)), ClErrorKind::InvalidBufferSize);
    let cpu_only = Context::new(std::slice::from_ref(p.cpu())).unwrap();
    let big = usm::host_mem_alloc(&cpu_only, &[], MIB4 + 1, 0).unwrap();
    usm::mem_free(&cpu_only, big.as_ptr()).unwrap();
    drop(cpu_only);

    // A CPU queue reaches the BAR through the mapping.
    let data = pattern(8192, 1);
    // SAFETY: `host` and `dev` are live 8 KiB allocations; every command
    // below is blocking or waited for.
    unsafe {
        std::ptr::copy_nonoverlapping(data.as_ptr(), host, 8192);
        let t = Instant::now();
        cmd::enqueue_memcpy(&cq, true, dev, host, 8192, &[]).unwrap();
        println!("CPU queue, host -> BAR, 8 KiB: {:?}", t.elapsed());
    }
    assert_eq!(read_bar(&b, dev, 8192), data, "the bytes are in ivshmem's memory");
    // SAFETY: as above.
    unsafe {
        let ev = cmd::enqueue_mem_fill(&cq, dev.add(4096), &[0x5a, 0xa5, 0x5a, 0xa5], 1024, &[]).unwrap();
        dmabridge::runtime::event::Event::wait(&[ev]).unwrap();
    }
    let mut expect = data.clone();
    for (i, byte) in expect[4096..5120].iter_mut().enumerate() {
        *byte = if i % 2 == 0 { 0x5a } else { 0xa5 };
    }
    assert_eq!(read_bar(&b, dev, 8192), expect, "fill through the mapping");

    // The BAR device's own queue: CPU copies (no engine), both ways.
    // SAFETY: as above; `shared` is a live 8 KiB allocation.
    unsafe {
        let t = Instant::now();
        cmd::enqueue_memcpy(&bq, true, shared, dev, 8192, &[]).unwrap();
        println!("BAR queue (CPU copy), BAR -> host, 8 KiB: {:?}", t.elapsed());
        assert_eq!(std::slice::from_raw_parts(shared, 8192), &expect[..]);
        // BAR -> BAR, inside the device allocation.
        cmd::enqueue_memcpy(&bq, true, dev, dev.add(4096), 4096, &[]).unwrap();
    }
    assert_eq!(read_bar(&b, dev, 4096), expect[4096..]);
    // Migration hints on BAR memory are accepted and change nothing.
    let (host_flag, undefined) = (cmd::migration::HOST, cmd::migration::CONTENT_UNDEFINED);
    for flags in [host_flag, undefined, host_flag | undefined] {
        let ev = cmd::enqueue_migrate_mem(&bq, dev, 8192, flags, &[]).unwrap();
        dmabridge::runtime::event::Event::wait(&[ev]).unwrap();
    }
    assert_eq!(read_bar(&b, dev, 4096), expect[4096..]);

    // Bad frees leave the allocation alone; a blocking free works.
    assert_eq!(usm::mem_free(&ctx, dev.wrapping_add(1)).unwrap_err().code(), code::INVALID_VALUE);
    let free_bar = m.base().as_ptr().wrapping_add(MIB4 - 64);
    let e = usm::mem_free(&ctx, free_bar).unwrap_err();
    assert!(e.message.contains("not a USM allocation of this context"), "{e}");
    assert_eq!(ctx.local_allocations(), 1);
    // Another context sees neither the allocation nor may it free it.
    let other = Context::new(p.devices()).unwrap();
    assert_eq!(
        usm::get_mem_alloc_info(&other, dev, mem_info::ALLOC_TYPE).unwrap(),
        MemAllocInfo::Type(mem_type::UNKNOWN)
    );
    assert_eq!(usm::mem_free(&other, dev).unwrap_err().code(), code::INVALID_VALUE);
    drop(other);
    cmd::mem_blocking_free(&ctx, dev).unwrap();
    assert_eq!(usm::mem_free(&ctx, dev).unwrap_err().code(), code::INVALID_VALUE, "double free");
    assert_eq!((ctx.local_allocations(), m.allocated()), (0, 0));
    usm::mem_free(&ctx, host).unwrap();
    usm::mem_free(&ctx, shared).unwrap();
    before.assert_unchanged();
    // A context released with device allocations gives them back.
    let leaky = usm::device_mem_alloc(&ctx, &d, &[], 1000, 0).unwrap();
    assert!(m.contains(leaky.as_ptr()) && m.allocated() > 0);
    drop((cq, bq));
    drop(ctx);
    assert_eq!(m.allocated(), 0);
}

/// CPU copies and fills into, out of and within the BAR at every alignment
/// and odd lengths. On arm64 the BAR mapping is Device memory, where an
/// unaligned access faults: `memcpy`/`memset` there killed the process with
/// SIGBUS (the copy and fill engines now reach it with aligned volatile
/// accesses).
#[test]
fn cpu_copies_and_fills_reach_the_bar_at_any_alignment() {
    in_child("child_cpu_copies_and_fills_reach_the_bar_at_any_alignment", Some(&cpu_config()));
}

#[test]
#[ignore = "run in a child process by cpu_copies_and_fills_reach_the_bar_at_any_alignment"]
fn child_cpu_copies_and_fills_reach_the_bar_at_any_alignment() {
    let p = Platform::get();
    let d = bar_device(p);
    let b = d.bar_backend().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let cq = Queue::new(&ctx, p.cpu(), QueueProps::default()).unwrap();
    let bq = Queue::new(&ctx, &d, QueueProps::default()).unwrap();
    let dev = usm::device_mem_alloc(&ctx, &d, &[], 8192, 0).unwrap().as_ptr();
    let host = usm::host_mem_alloc(&ctx, &[], 8192, 0).unwrap().as_ptr();
    let data = pattern(8192, 3);
    for (off, len) in [(1usize, 13usize), (3, 29), (5, 1000), (7, 4093), (0, 31), (6, 2)] {
        // SAFETY: every range lies in the 8 KiB allocations `dev` and `host`
        // (off + len < 4096 + 4096 for the BAR -> BAR copy's two halves);
        // every command is blocking or waited for.
        unsafe {
            std::ptr::copy_nonoverlapping(data.as_ptr(), host, 8192);
            // host -> BAR on the CPU queue, at an odd BAR offset.
            cmd::enqueue_memcpy(&cq, true, dev.add(off), host.add(1), len, &[]).unwrap();
            assert_eq!(read_bar(&b, dev.add(off), len), data[1..1 + len], "host -> BAR at +{off}, {len} bytes");
            // BAR -> host on the BAR queue, out of phase with the host side.
            std::ptr::write_bytes(host, 0, 8192);
            cmd::enqueue_memcpy(&bq, true, host.add(3), dev.add(off), len, &[]).unwrap();
            assert_eq!(std::slice::from_raw_parts(host.add(3), len), &data[1..1 + len], "BAR -> host at +{off}");
            // BAR -> BAR, source and destination out of phase.
            cmd::enqueue_memcpy(&bq, true, dev.add(4096 + off + 1), dev.add(off), len.min(4000), &[]).unwrap();
            let n = len.min(4000);
            assert_eq!(read_bar(&b, dev.add(4096 + off + 1), n), data[1..1 + n], "BAR -> BAR at +{off}");
            // A fill of a 2-byte pattern at an even but not 8-byte aligned offset.
            let at = (off & !1) + 2;
            let ev = cmd::enqueue_mem_fill(&cq, dev.add(at), &[0x5a, 0xa5], 2 * (len / 2 + 1), &[]).unwrap();
            dmabridge::runtime::event::Event::wait(&[ev]).unwrap();
            let filled = read_bar(&b, dev.add(at), 2 * (len / 2 + 1));
            assert!(filled.chunks(2).all(|c| c == [0x5a, 0xa5]), "fill at +{at}");
        }
    }
    // Zero fills: memset zeroes whole cache lines with `DC ZVA` on arm64,
    // which Device memory refuses whatever the alignment.
    for (at, len) in [(0usize, 8192usize), (64, 4096), (1, 4000)] {
        // SAFETY: `at + len <= 8192`, inside `dev`; the command is waited for.
        unsafe {
            let ev = cmd::enqueue_mem_fill(&cq, dev.add(at), &[0], len, &[]).unwrap();
            dmabridge::runtime::event::Event::wait(&[ev]).unwrap();
        }
        assert!(read_bar(&b, dev.wrapping_add(at), len).iter().all(|&x| x == 0), "zero fill at +{at}, {len} bytes");
    }
    usm::mem_free(&ctx, dev).unwrap();
    usm::mem_free(&ctx, host).unwrap();
}

#[test]
fn edu_engine_copies_peer_to_peer() {
    in_child("child_edu_engine_copies_peer_to_peer", Some(&p2p_config()));
}

#[test]
#[ignore = "run in a child process by edu_engine_copies_peer_to_peer"]
fn child_edu_engine_copies_peer_to_peer() {
    let p = Platform::get();
    let d = bar_device(p);
    let b = d.bar_backend().unwrap();
    let m = d.local_memory().unwrap();
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let q = Queue::new(&ctx, &d, QueueProps::default()).unwrap();
    let warm = usm::host_mem_alloc(&ctx, &[], 64, 0).unwrap().as_ptr();
    usm::mem_free(&ctx, warm).unwrap();
    let before = Resources::now();
    let iova_before = domain.iova_allocated_bytes();
    const LEN: usize = 5000;
    let dev = usm::device_mem_alloc(&ctx, &d, &[], 8192, 0).unwrap().as_ptr();
    let host = usm::host_mem_alloc(&ctx, &[], 8192, 0).unwrap().as_ptr();
    let data = pattern(LEN, 2);
    assert_eq!(
        usm::device_address(&d, dev.wrapping_add(5)).map(|b| b.raw()),
        m.bus_address(dev.wrapping_add(5)).map(|b| b.raw())
    );
    assert!(usm::device_address(&d, dev).map(|b| b.raw()).is_some());
    // SAFETY: live 8 KiB allocations; nothing else touches them.
    unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), host.add(3), LEN) };

    // host -> BAR by edu DMA, peer-to-peer into the BAR.
    let t = Instant::now();
    // SAFETY: both ranges lie inside their allocations.
    assert_eq!(unsafe { device_copy(&d, dev.add(100), host.add(3), LEN) }, Ok(()));
    let p2p_in = t.elapsed();
    assert_eq!(read_bar(&b, dev.wrapping_add(100), LEN), data, "DMA wrote the BAR");
    // BAR -> host.
    // SAFETY: as above.
    unsafe { std::ptr::write_bytes(host, 0xee, 8192) };
    let t = Instant::now();
    // SAFETY: as above.
    assert_eq!(unsafe { device_copy(&d, host.add(1000), dev.add(100), 3000) }, Ok(()));
    let p2p_out = t.elapsed();
    // SAFETY: the copy completed; nothing else writes `host`.
    let h = unsafe { std::slice::from_raw_parts(host, 8192) };
    assert_eq!(&h[1000..4000], &data[..3000], "DMA read the BAR");
    assert!(h[..1000].iter().chain(&h[4000..]).all(|&x| x == 0xee), "nothing around it changed");
    // BAR -> BAR (both sides resident: nothing is mapped for it).
    // SAFETY: disjoint ranges inside `dev`.
    assert_eq!(unsafe { device_copy(&d, dev.add(6000), dev.add(100), 1000) }, Ok(()));
    assert_eq!(read_bar(&b, dev.wrapping_add(6000), 1000), data[..1000]);
    // A range straddling the BAR's edge is refused.
    let last = m.base().as_ptr().wrapping_add(MIB4 - 10);
    // SAFETY: refused before any access.
    assert_eq!(unsafe { device_copy(&d, last, host, 100) }, Err(code::INVALID_VALUE));

    // The same by a USM memcpy on the BAR device's queue.
    // SAFETY: ranges inside live allocations; the copy is blocking.
    unsafe { cmd::enqueue_memcpy(&q, true, host, dev.add(100), 256, &[]).unwrap() };
    // SAFETY: as above.
    assert_eq!(unsafe { std::slice::from_raw_parts(host, 256) }, &data[..256]);

    // The CPU through the mapping, for comparison.
    let t = Instant::now();
    // SAFETY: inside the allocations; disjoint.
    unsafe { dmabridge::runtime::transfer::copy(dev.add(100), host.add(3), LEN) };
    let cpu_in = t.elapsed();
    let t = Instant::now();
    // SAFETY: as above.
    unsafe { dmabridge::runtime::transfer::copy(host.add(1000), dev.add(100), 3000) };
    let cpu_out = t.elapsed();
    let t = Instant::now();
    // SAFETY: disjoint ranges inside `host`.
    unsafe { dmabridge::runtime::transfer::copy(host.add(4096), host, LEN.min(4096)) };
    let cpu_host = t.elapsed();
    let rate = |n: usize, t: Duration| n as f64 / t.as_secs_f64() / 1e6;
    println!(
        "host -> BAR {LEN} B: edu P2P {p2p_in:?} ({:.3} MB/s), CPU {cpu_in:?} ({:.1} MB/s); \
         BAR -> host 3000 B: edu P2P {p2p_out:?}, CPU {cpu_out:?} ({:.1} MB/s); host -> host 4096 B by CPU: {cpu_host:?}",
        rate(LEN, p2p_in),
        rate(LEN, cpu_in),
        rate(3000, cpu_out)
    );

    // Only the BAR stays mapped; no IOVA, fd or mapping leaked.
    let maps = domain.container().mappings();
    assert_eq!(maps.len(), 1, "{maps:?}");
    assert_eq!(domain.iova_allocated_bytes(), iova_before);
    usm::mem_free(&ctx, dev).unwrap();
    usm::mem_free(&ctx, host).unwrap();
    assert_eq!(m.allocated(), 0);
    before.assert_unchanged();
    drop(q);
}

#[test]
fn a_bar_backend_releases_everything_when_dropped() {
    in_child("child_a_bar_backend_releases_everything_when_dropped", None);
}

#[test]
#[ignore = "run in a child process by a_bar_backend_releases_everything_when_dropped"]
fn child_a_bar_backend_releases_everything_when_dropped() {
    let cfg = p2p_config().parse().unwrap();
    // Warm up once (first use loads lazily created state), then count.
    for round in 0..2 {
        let before = Resources::now();
        {
            let domain = DmaDomain::new(Container::open().unwrap(), (1 << 28) - 1);
            let edu = EduBackend::open(&domain, addr(EDU0)).unwrap();
            // The engine must be the configured one, in the same domain.
            let e = BarBackend::open(&domain, &cpu_config().parse().unwrap(), Some(edu.clone())).unwrap_err();
            assert_eq!(e.kind, ClErrorKind::DeviceNotAvailable, "{e}");
            let b = BarBackend::open(&domain, &cfg, Some(edu)).unwrap();
            assert_eq!(domain.container().mappings().len(), 1);
            let m = b.local_memory().unwrap();
            let x = m.alloc(64, 0).unwrap();
            let data = [7u8; 64];
            // SAFETY: `x` is a 64-byte allocation in the BAR.
            unsafe { b.copy(x.as_ptr(), data.as_ptr(), 64) }.unwrap();
            let mut back = [0u8; 64];
            b.read_slice((x.as_ptr() as usize - m.base().as_ptr() as usize) as u64, &mut back).unwrap();
            assert_eq!(back, data);
            drop(m);
            let dom = domain.clone();
            drop(b);
            assert!(dom.container().mappings().is_empty(), "the BAR was evicted");
            assert_eq!(dom.iova_allocated_bytes(), 0);
        }
        if round == 1 {
            before.assert_unchanged();
        }
    }
}

#[test]
fn info_suggests_the_variable_for_an_unconfigured_ivshmem() {
    require_guest();
    let hint = format!("set {ENV}={IVSHMEM},bar=2 to use its BAR as device memory");
    let run = |config: Option<&str>| {
        let mut c = Command::new(dmabridge_bin());
        c.arg("info");
        match config {
            Some(v) => c.env(ENV, v),
            None => c.env_remove(ENV),
        };
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let text = run(None);
    let line = text.lines().find(|l| l.contains(&hint)).unwrap_or_else(|| panic!("no hint in:\n{text}"));
    assert!(line.trim_start().starts_with("note:"), "{line}");
    assert!(!run(Some(&cpu_config())).contains(&hint), "no hint once it is configured");
}

/// Issue 17: the three device kinds of a real platform (CPU, edu, the BAR
/// device) each answer every device query as OpenCL 3.0 requires for the
/// profile they report (tests/common/cl30.rs).
#[test]
fn every_device_kind_follows_the_opencl_3_0_device_rules() {
    in_child("child_every_device_kind_follows_the_opencl_3_0_device_rules", Some(&p2p_config()));
}

#[test]
#[ignore = "run in a child process by every_device_kind_follows_the_opencl_3_0_device_rules"]
fn child_every_device_kind_follows_the_opencl_3_0_device_rules() {
    let p = Platform::get();
    assert_eq!(p.devices().len(), 3, "CPU, edu, BAR: {:?} (skipped: {:?})", p.devices(), p.skipped());
    let bad: Vec<String> = p.devices().iter().flat_map(|d| dmabridge_tests::cl30::violations(d)).collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
