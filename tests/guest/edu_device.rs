//! The platform's edu device: discovery, capabilities, copies by DMA through
//! its backend, and the error path.
//!
//! The platform holds its VFIO groups for the life of the process, which
//! would make the later tests that open edu in their own container fail
//! with EBUSY. So each test here runs its body (an ignored test) in a child
//! process of this same executable.

use std::process::Command;
use std::time::Instant;

use dmabridge::error::code;
use dmabridge::ext::usm;
use dmabridge::runtime::backend::device_copy;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{svm_caps, usm_caps, Device, DeviceType};
use dmabridge::runtime::platform::Platform;
use dmabridge_tests::{addr, require_guest, Resources, EDU0, EDU1};

/// Runs the ignored test `name` of this module alone in a child process.
fn in_child(name: &str) {
    require_guest();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", &format!("edu_device::{name}"), "--ignored", "--test-threads=1", "--nocapture"])
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(out.status.success() && text.contains("1 passed"), "child test {name} failed:\n{text}");
}

fn edu(p: &Platform) -> std::sync::Arc<Device> {
    let edus: Vec<_> = p.devices().iter().filter(|d| d.device_type == DeviceType::Accelerator).collect();
    assert_eq!(edus.len(), 1, "one edu device: {:?}", p.devices());
    edus[0].clone()
}

#[test]
fn platform_lists_the_bound_edu() {
    in_child("child_platform_lists_the_bound_edu");
}

#[test]
#[ignore = "run in a child process by platform_lists_the_bound_edu"]
fn child_platform_lists_the_bound_edu() {
    let p = Platform::get();
    assert_eq!(p.cpu().device_type, DeviceType::Cpu);
    assert_eq!(p.cpu().index, 0);
    assert!(p.cpu().backend().is_none() && p.cpu().pci_address().is_none());
    assert_eq!(p.devices().len(), 2, "{:?}", p.devices());
    let e = edu(p);
    assert_eq!(e.index, 1);
    assert_eq!(e.name, format!("edu {EDU0}"));
    assert_eq!(e.pci_address(), Some(addr(EDU0)));
    assert_eq!(e.backend().unwrap().max_transfer(), 4096);
    assert!(e.host_unified_memory);
    let a = usm_caps::ACCESS;
    assert_eq!((e.usm.host, e.usm.device, e.usm.single_device_shared, e.usm.cross_device_shared), (a, a, a, a));
    assert_eq!(e.usm.shared_system, 0);
    assert_eq!(e.svm, svm_caps::COARSE_GRAIN_BUFFER);
    assert_eq!(e.max_alignment, 128);
    assert_eq!(e.compute_units, 1);
    assert!(e.max_mem_alloc_size <= (1 << 28) - 4096 && e.max_mem_alloc_size <= p.cpu().max_mem_alloc_size);
    // The unbound edu is not a device; the platform says why.
    assert!(p.devices().iter().all(|d| d.pci_address() != Some(addr(EDU1))));
    let why = p.skipped().iter().find(|(a, _)| *a == addr(EDU1)).map(|(_, w)| w.clone());
    assert!(why.as_deref().is_some_and(|w| w.contains("not vfio-pci")), "{:?}", p.skipped());
    let domain = p.dma_domain().unwrap();
    assert!(domain.container().mappings().is_empty());
}

#[test]
fn device_copy_moves_bytes_by_dma() {
    in_child("child_device_copy_moves_bytes_by_dma");
}

#[test]
#[ignore = "run in a child process by device_copy_moves_bytes_by_dma"]
fn child_device_copy_moves_bytes_by_dma() {
    let p = Platform::get();
    let e = edu(p);
    let ctx = Context::new(p.devices()).unwrap();
    const LEN: usize = 3 * 4096;
    let src = usm::host_mem_alloc(&ctx, &[], LEN, 0).unwrap().as_ptr();
    let dst = usm::host_mem_alloc(&ctx, &[], LEN, 0).unwrap().as_ptr();
    for (size, soff, doff) in [(100usize, 3usize, 77usize), (4096, 1, 4095), (5000, 100, 5)] {
        // SAFETY: both allocations are LEN bytes, and no reference into them
        // outlives these statements.
        unsafe {
            for i in 0..LEN {
                *src.add(i) = (i * 7 + size) as u8;
                *dst.add(i) = 0xee;
            }
        }
        let t = Instant::now();
        // SAFETY: both ranges lie inside their allocations; distinct ones.
        let r = unsafe { device_copy(&e, dst.add(doff), src.add(soff), size) };
        let took = t.elapsed();
        assert_eq!(r, Ok(()), "{size} bytes");
        println!("edu copy of {size} bytes ({} chunks): {took:?}", size.div_ceil(4096));
        // SAFETY: the copy is done; nothing else writes these bytes.
        let (s, d) = unsafe { (std::slice::from_raw_parts(src, LEN), std::slice::from_raw_parts(dst, LEN)) };
        assert_eq!(&d[doff..doff + size], &s[soff..soff + size], "{size} bytes arrived");
        assert!(d[..doff].iter().chain(&d[doff + size..]).all(|&b| b == 0xee), "nothing around it changed");
    }
    // Source and destination in the same pages of one allocation.
    // SAFETY: both ranges lie in `src` and do not overlap.
    unsafe {
        assert_eq!(device_copy(&e, src.add(2000), src.add(10), 1000), Ok(()));
        let s = std::slice::from_raw_parts(src, LEN);
        let expect: Vec<u8> = (10..1010).map(|i| (i * 7 + 5000) as u8).collect();
        assert_eq!(&s[2000..3000], &expect[..]);
    }
    let domain = p.dma_domain().unwrap();
    assert!(domain.container().mappings().is_empty());
    assert_eq!(domain.iova_allocated_bytes(), 0);
    usm::mem_free(&ctx, src).unwrap();
    usm::mem_free(&ctx, dst).unwrap();
}

#[test]
fn device_copy_errors_leak_nothing() {
    in_child("child_device_copy_errors_leak_nothing");
}

#[test]
#[ignore = "run in a child process by device_copy_errors_leak_nothing"]
fn child_device_copy_errors_leak_nothing() {
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let buf = usm::host_mem_alloc(&ctx, &[], 8192, 0).unwrap().as_ptr();
    // An address range that is certainly not mapped: map two pages, unmap.
    // SAFETY: a fresh anonymous mapping, unmapped at once; only its address
    // is kept.
    let hole = unsafe {
        let p = rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            8192,
            rustix::mm::ProtFlags::READ,
            rustix::mm::MapFlags::PRIVATE,
        )
        .unwrap();
        rustix::mm::munmap(p, 8192).unwrap();
        p.cast::<u8>()
    };
    let before = Resources::now();
    for _ in 0..3 {
        // SAFETY: the device refuses the unmapped range before any transfer;
        // `buf` is a valid allocation.
        unsafe {
            // Unmapped source: the first mapping fails.
            assert_eq!(device_copy(&e, buf, hole.add(5), 100), Err(code::INVALID_VALUE));
            // Unmapped destination: the source was mapped first and must be
            // unmapped again.
            assert_eq!(device_copy(&e, hole.add(5), buf, 100), Err(code::INVALID_VALUE));
        }
        assert!(domain.container().mappings().is_empty(), "{:?}", domain.container().mappings());
        assert_eq!(domain.iova_allocated_bytes(), 0);
    }
    before.assert_unchanged();
    // The device still works.
    // SAFETY: both ranges lie inside `buf` and do not overlap.
    unsafe {
        *buf = 42;
        assert_eq!(device_copy(&e, buf.add(4096), buf, 1), Ok(()));
        assert_eq!(*buf.add(4096), 42);
    }
    assert!(domain.container().mappings().is_empty());
    before.assert_unchanged();
    usm::mem_free(&ctx, buf).unwrap();
}

#[test]
fn usm_memcpy_on_an_edu_queue_runs_by_dma() {
    in_child("child_usm_memcpy_on_an_edu_queue_runs_by_dma");
}

#[test]
#[ignore = "run in a child process by usm_memcpy_on_an_edu_queue_runs_by_dma"]
fn child_usm_memcpy_on_an_edu_queue_runs_by_dma() {
    use dmabridge::ext::usm_commands as cmd;
    use dmabridge::runtime::event::{Event, EventStatus};
    use dmabridge::runtime::queue::{Queue, QueueProps};
    use std::os::fd::AsFd;

    let p = Platform::get();
    let e = edu(p);
    let ctx = Context::new(p.devices()).unwrap();
    let q = Queue::new(&ctx, &e, QueueProps::default()).unwrap();
    let src = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    let dst = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    // SAFETY: live 4 KiB allocations; every command is waited for.
    unsafe {
        for i in 0..4096 {
            *src.add(i) = (i % 251) as u8;
        }
        let t = Instant::now();
        cmd::enqueue_memcpy(&q, true, dst, src, 200, &[]).unwrap();
        println!("blocking 200-byte clEnqueueMemcpyINTEL on the edu queue: {:?}", t.elapsed());
        assert_eq!(std::slice::from_raw_parts(dst, 200), std::slice::from_raw_parts(src, 200));
        let ev = cmd::enqueue_memcpy(&q, false, dst.add(1000), src.add(7), 300, &[]).unwrap();
        Event::wait(std::slice::from_ref(&ev)).unwrap();
        assert_eq!(ev.status(), EventStatus::Complete);
        assert_eq!(std::slice::from_raw_parts(dst.add(1000), 300), std::slice::from_raw_parts(src.add(7), 300));
    }
    // The device cannot pin a dma-buf's own mmap (PFN-mapped RAM): the
    // command ends with CL_INVALID_VALUE and the blocking call reports it.
    let m = dmabridge::sys::memfd::Memfd::create(c"pfn", 4096).unwrap();
    m.add_seals(dmabridge::sys::memfd::Seals::SHRINK).unwrap();
    let buf = dmabridge::sys::udmabuf::Udmabuf::open().unwrap().create(m.as_fd(), 0, 4096).unwrap();
    let view = buf.map(dmabridge::sys::mmap::Access::ReadWrite).unwrap();
    // SAFETY: both ranges are valid mapped memory for 64 bytes.
    let err = unsafe { cmd::enqueue_memcpy(&q, true, dst, view.as_ptr(), 64, &[]) }.unwrap_err();
    assert_eq!(err.code(), code::INVALID_VALUE, "{err}");
    let domain = p.dma_domain().unwrap();
    assert!(domain.container().mappings().is_empty(), "nothing left mapped");
    usm::mem_free(&ctx, src).unwrap();
    usm::mem_free(&ctx, dst).unwrap();
}
