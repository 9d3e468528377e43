//! The platform's edu device: discovery, capabilities, copies by DMA through
//! its backend, and the error path.
//!
//! The platform holds its VFIO groups for the life of the process, which
//! would make the later tests that open edu in their own container fail
//! with EBUSY. So each test here runs its body (an ignored test) in a child
//! process of this same executable.

use std::time::Instant;

use dmabridge::error::code;
use dmabridge::ext::usm;
use dmabridge::runtime::backend::device_copy;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{svm_caps, usm_caps, Device, DeviceType};
use dmabridge::runtime::platform::Platform;
use dmabridge::sys::addr::{HostAddr, Iova};
use dmabridge_tests::{addr, run_in_child, Resources, EDU0, EDU1};

/// Runs the ignored test `name` of this module alone in a child process.
fn in_child(name: &str) {
    run_in_child(&format!("edu_device::{name}"), &[]);
}

/// As [`in_child`], with extra environment variables.
fn in_child_env(name: &str, env: &[(&str, &str)]) {
    let env: Vec<(&str, Option<&str>)> = env.iter().map(|&(k, v)| (k, Some(v))).collect();
    run_in_child(&format!("edu_device::{name}"), &env);
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
    // A range the device can never pin: two pages reserved without any
    // access, kept for the whole test. (An unmapped range is no good here:
    // a freshly unmapped one lies at the edge of free address space, and the
    // next mmap of anyone in the process, the allocator's included, takes
    // it. One CI run saw the copy succeed from such a "hole".)
    // SAFETY: a fresh anonymous reservation that nothing else uses; it is
    // never read or written, only handed to the device, which refuses it.
    let hole = unsafe {
        rustix::mm::mmap_anonymous(
            std::ptr::null_mut(),
            8192,
            rustix::mm::ProtFlags::empty(),
            rustix::mm::MapFlags::PRIVATE,
        )
    }
    .unwrap()
    .cast::<u8>();
    let before = Resources::now();
    for _ in 0..3 {
        // SAFETY: the device refuses the reserved range before any transfer;
        // `buf` is a valid allocation.
        unsafe {
            // Inaccessible source: the first mapping fails.
            assert_eq!(device_copy(&e, buf, hole.add(5), 100), Err(code::INVALID_VALUE));
            // Inaccessible destination: the source was mapped first and must
            // be unmapped again.
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
    // SAFETY: our reservation; nothing refers to it any more.
    unsafe { rustix::mm::munmap(hole.cast(), 8192) }.unwrap();
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

/// The mapping of the domain's container that covers `[iova, iova + len)`.
fn mapping_covering(
    domain: &dmabridge::runtime::backend::domain::DmaDomain,
    iova: u64,
    len: usize,
) -> Option<dmabridge::sys::vfio::DmaMapping> {
    domain.container().mappings().into_iter().find(|m| m.iova.0 <= iova && iova + len as u64 <= m.iova.0 + m.size)
}

#[test]
fn device_allocations_on_edu_are_resident_until_freed() {
    in_child("child_device_allocations_on_edu_are_resident_until_freed");
}

#[test]
#[ignore = "run in a child process by device_allocations_on_edu_are_resident_until_freed"]
fn child_device_allocations_on_edu_are_resident_until_freed() {
    use dmabridge::ext::usm_commands as cmd;
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let t = Instant::now();
    let a = usm::device_mem_alloc(&ctx, &e, &[], 5000, 0).unwrap().as_ptr();
    println!("5000-byte device allocation on edu, resident: {:?}", t.elapsed());
    let iova = usm::device_address(&e, a).map(|b| b.raw()).expect("a device allocation of edu is resident");
    // QEMU's default 28-bit mask: the heap's addresses are far above it.
    assert!(iova < 1 << 28 && iova != a as u64, "IOVA {iova:#x} for {a:?}");
    assert_eq!(a as usize % 4096, 0, "it owns its pages");
    assert_eq!(usm::device_address(&e, a.wrapping_add(4999)).map(|b| b.raw()), Some(iova + 4999), "interior pointers");
    assert_eq!(usm::device_address(&e, a.wrapping_add(5000)).map(|b| b.raw()), None, "one past the end");
    let m = mapping_covering(domain, iova, 5000).expect("a container mapping covers it");
    assert_eq!((m.vaddr, m.size, m.access), (HostAddr::of(a), 8192, dmabridge::sys::access::Access::ReadWrite));
    assert_eq!(domain.residents().len(), 1);
    // CPU device allocations are not resident anywhere.
    let c = usm::device_mem_alloc(&ctx, p.cpu(), &[], 64, 0).unwrap().as_ptr();
    assert_eq!(usm::device_address(p.cpu(), c).map(|b| b.raw()), None);
    assert_eq!(usm::device_address(&e, c).map(|b| b.raw()), None);
    usm::mem_free(&ctx, c).unwrap();
    // A bad free changes nothing; the real one evicts.
    assert!(usm::mem_free(&ctx, a.wrapping_add(64)).is_err());
    assert!(mapping_covering(domain, iova, 5000).is_some());
    usm::mem_free(&ctx, a).unwrap();
    assert!(domain.container().mappings().is_empty(), "{:?}", domain.container().mappings());
    assert_eq!(domain.iova_allocated_bytes(), 0);
    assert_eq!(usm::device_address(&e, a).map(|b| b.raw()), None);
    // The blocking free evicts too.
    let b = usm::device_mem_alloc(&ctx, &e, &[], 100, 0).unwrap().as_ptr();
    assert_eq!(domain.container().mappings().len(), 1);
    cmd::mem_blocking_free(&ctx, b).unwrap();
    assert!(domain.container().mappings().is_empty());
    // A context released with live device allocations unpins them.
    let ctx2 = Context::new(std::slice::from_ref(&e)).unwrap();
    let _live = usm::device_mem_alloc(&ctx2, &e, &[], 3 << 20, 0).unwrap();
    assert_eq!(domain.container().mappings().len(), 1);
    drop(ctx2);
    assert!(domain.container().mappings().is_empty(), "released with the context");
    assert_eq!(domain.iova_allocated_bytes(), 0);
    // Too large for edu's 256 MiB of bus addresses: refused by size, nothing left.
    assert_eq!(usm::device_mem_alloc(&ctx, &e, &[], 1 << 28, 0).unwrap_err().code(), code::INVALID_BUFFER_SIZE);
    assert_eq!(ctx.heap().stats().live, 0);
}

#[test]
fn edu_copies_use_resident_bus_addresses() {
    in_child("child_edu_copies_use_resident_bus_addresses");
}

#[test]
#[ignore = "run in a child process by edu_copies_use_resident_bus_addresses"]
fn child_edu_copies_use_resident_bus_addresses() {
    use dmabridge::ext::usm_commands as cmd;
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let q = Queue::new(&ctx, &e, QueueProps::default()).unwrap();
    let dev = usm::device_mem_alloc(&ctx, &e, &[], 4096, 0).unwrap().as_ptr();
    let src = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    let back = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    // SAFETY: live allocations of 4096 bytes; every command is blocking.
    unsafe {
        for i in 0..4096 {
            *src.add(i) = (i * 13 % 256) as u8;
            *back.add(i) = 0;
        }
        let t = Instant::now();
        cmd::enqueue_memcpy(&q, true, dev.add(100), src.add(5), 1000, &[]).unwrap();
        cmd::enqueue_memcpy(&q, true, back, dev.add(100), 1000, &[]).unwrap();
        println!("two 1000-byte edu copies through a resident device allocation: {:?}", t.elapsed());
        assert_eq!(std::slice::from_raw_parts(back, 1000), std::slice::from_raw_parts(src.add(5), 1000));
        assert!(std::slice::from_raw_parts(back.add(1000), 3096).iter().all(|&b| b == 0));
        // The device allocation's bytes are the ones the host sees (host-unified).
        assert_eq!(std::slice::from_raw_parts(dev.add(100), 1000), std::slice::from_raw_parts(src.add(5), 1000));
    }
    // Only the resident mapping stays: the host sides were mapped per copy.
    assert_eq!(domain.container().mappings().len(), 1);
    assert!(mapping_covering(domain, usm::device_address(&e, dev).map(|b| b.raw()).unwrap(), 4096).is_some());
    for ptr in [dev, src, back] {
        usm::mem_free(&ctx, ptr).unwrap();
    }
    assert!(domain.container().mappings().is_empty());
}

#[test]
fn migrate_to_edu_makes_a_host_allocation_resident() {
    in_child("child_migrate_to_edu_makes_a_host_allocation_resident");
}

#[test]
#[ignore = "run in a child process by migrate_to_edu_makes_a_host_allocation_resident"]
fn child_migrate_to_edu_makes_a_host_allocation_resident() {
    use dmabridge::ext::usm_commands::{self as cmd, migration};
    use dmabridge::runtime::event::Event;
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let q = Queue::new(&ctx, &e, QueueProps::default()).unwrap();
    let h = usm::host_mem_alloc(&ctx, &[], 6000, 0).unwrap().as_ptr();
    let s = usm::shared_mem_alloc(&ctx, None, &[], 100, 0).unwrap().as_ptr();
    assert_eq!(usm::device_address(&e, h).map(|b| b.raw()), None);
    // To the host: no residency.
    let ev = cmd::enqueue_migrate_mem(&q, h, 6000, migration::HOST, &[]).unwrap();
    Event::wait(&[ev]).unwrap();
    assert_eq!(usm::device_address(&e, h).map(|b| b.raw()), None);
    // To the device (the only flag that says so is CONTENT_UNDEFINED): the
    // whole allocation becomes resident, from an interior pointer too.
    let ev = cmd::enqueue_migrate_mem(&q, h.wrapping_add(10), 10, migration::CONTENT_UNDEFINED, &[]).unwrap();
    Event::wait(&[ev]).unwrap();
    let iova = usm::device_address(&e, h).map(|b| b.raw()).expect("migrated host allocation is resident");
    assert!(mapping_covering(domain, iova, 6000).is_some());
    let ev = cmd::enqueue_migrate_mem(&q, s, 100, migration::CONTENT_UNDEFINED, &[]).unwrap();
    Event::wait(&[ev]).unwrap();
    assert!(usm::device_address(&e, s).map(|b| b.raw()).is_some());
    // Migrating again counts nothing; one free evicts.
    let ev = cmd::enqueue_migrate_mem(&q, h, 6000, migration::CONTENT_UNDEFINED, &[]).unwrap();
    Event::wait(&[ev]).unwrap();
    assert_eq!(domain.residents().len(), 2);
    // Resident pages keep their backing: the host still sees what it writes.
    // SAFETY: a live 6000-byte allocation.
    unsafe {
        *h.add(7) = 9;
        assert_eq!(*h.add(7), 9);
    }
    usm::mem_free(&ctx, h).unwrap();
    assert_eq!(usm::device_address(&e, h).map(|b| b.raw()), None);
    cmd::mem_blocking_free(&ctx, s).unwrap();
    assert!(domain.container().mappings().is_empty());
    assert_eq!(domain.iova_allocated_bytes(), 0);
}

#[test]
fn the_dma_copy_kernel_moves_bytes() {
    in_child("child_the_dma_copy_kernel_moves_bytes");
}

#[test]
#[ignore = "run in a child process by the_dma_copy_kernel_moves_bytes"]
fn child_the_dma_copy_kernel_moves_bytes() {
    use dmabridge::error::ClErrorKind;
    use dmabridge::runtime::event::{Event, EventStatus};
    use dmabridge::runtime::kernel::{self, builtin_kernel_names, Kernel};
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    assert_eq!(builtin_kernel_names(&e), ["dma_copy"]);
    assert_eq!(Kernel::builtin(&ctx, &e, "copy_bytes").unwrap_err().kind, ClErrorKind::InvalidValue);
    assert_eq!(Kernel::builtin(&ctx, p.cpu(), "dma_copy").unwrap_err().kind, ClErrorKind::InvalidValue);
    let q = Queue::new(&ctx, &e, QueueProps::default()).unwrap();
    let k = Kernel::builtin(&ctx, &e, "dma_copy").unwrap();
    let src = usm::host_mem_alloc(&ctx, &[], 3000, 0).unwrap().as_ptr();
    let dst = usm::device_mem_alloc(&ctx, &e, &[], 3000, 0).unwrap().as_ptr();
    // SAFETY: live 3000-byte allocations; the launch is waited for.
    unsafe {
        for i in 0..3000 {
            *src.add(i) = (i % 199) as u8;
            *dst.add(i) = 0xaa;
        }
    }
    k.set_arg_mem_pointer(0, dst.wrapping_add(1)).unwrap();
    k.set_arg_mem_pointer(1, src).unwrap();
    k.set_arg_scalar(2, &2500u64.to_ne_bytes()).unwrap();
    let t = Instant::now();
    // SAFETY: both extents lie in their allocations, which outlive the launch.
    let ev = unsafe { kernel::enqueue_nd_range(&q, &k, 64, &[]) }.unwrap();
    Event::wait(std::slice::from_ref(&ev)).unwrap();
    println!("dma_copy of 2500 bytes (1 chunk of 4096 max): {:?}", t.elapsed());
    assert_eq!(ev.status(), EventStatus::Complete);
    // SAFETY: the launch is complete.
    let d = unsafe { std::slice::from_raw_parts(dst, 3000) };
    let s = unsafe { std::slice::from_raw_parts(src, 3000) };
    assert_eq!(&d[1..2501], &s[..2500]);
    assert!(d[0] == 0xaa && d[2501..].iter().all(|&b| b == 0xaa));
    // The launch made its source resident; both stay so until freed.
    assert!(usm::device_address(&e, src).map(|b| b.raw()).is_some());
    assert_eq!(domain.residents().len(), 2);
    // A range past the end of the allocation is refused at enqueue.
    k.set_arg_scalar(2, &3000u64.to_ne_bytes()).unwrap();
    // SAFETY: refused before it is enqueued.
    let err = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap_err();
    assert_eq!(err.kind, ClErrorKind::InvalidKernelArgs);
    usm::mem_free(&ctx, src).unwrap();
    usm::mem_free(&ctx, dst).unwrap();
    assert!(domain.container().mappings().is_empty());
}

#[test]
fn indirect_access_makes_allocations_of_its_types_resident() {
    in_child("child_indirect_access_makes_allocations_of_its_types_resident");
}

#[test]
#[ignore = "run in a child process by indirect_access_makes_allocations_of_its_types_resident"]
fn child_indirect_access_makes_allocations_of_its_types_resident() {
    use dmabridge::runtime::event::Event;
    use dmabridge::runtime::kernel::{self, exec_info, Kernel, KernelArgValue};
    use dmabridge::runtime::queue::{Queue, QueueProps};
    use std::sync::Arc;
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(p.devices()).unwrap();
    let q = Queue::new(&ctx, &e, QueueProps::default()).unwrap();
    let shared: Vec<*mut u8> =
        (0..2).map(|_| usm::shared_mem_alloc(&ctx, None, &[], 200, 0).unwrap().as_ptr()).collect();
    let host = usm::host_mem_alloc(&ctx, &[], 200, 0).unwrap().as_ptr();
    let named = usm::host_mem_alloc(&ctx, &[], 200, 0).unwrap().as_ptr();
    let cpu_dev = usm::device_mem_alloc(&ctx, p.cpu(), &[], 200, 0).unwrap().as_ptr();
    // The kernel sees, when it runs, that everything it may reach is resident.
    let (e2, sh, h2) = (e.clone(), shared.iter().map(|&x| x as usize).collect::<Vec<_>>(), host as usize);
    let k = Kernel::native(
        &ctx,
        Arc::new(move |_: &[KernelArgValue]| {
            let ok = sh.iter().all(|&x| usm::device_address(&e2, x as *const u8).map(|b| b.raw()).is_some());
            println!(
                "in the kernel: shared resident {ok}, host resident {}",
                usm::device_address(&e2, h2 as *const u8).map(|b| b.raw()).is_some()
            );
            if ok {
                Ok(())
            } else {
                Err(code::INVALID_OPERATION)
            }
        }),
        vec![],
    )
    .unwrap();
    k.set_exec_info_indirect_access(exec_info::INDIRECT_SHARED_ACCESS, true).unwrap();
    k.set_exec_info_usm_ptrs(&[named.wrapping_add(50)]);
    // SAFETY: the native kernel touches no memory.
    let ev = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap();
    Event::wait(&[ev]).unwrap();
    assert!(shared.iter().all(|&x| usm::device_address(&e, x).map(|b| b.raw()).is_some()));
    assert!(usm::device_address(&e, named).map(|b| b.raw()).is_some(), "USM_PTRS entries are made resident");
    assert_eq!(
        usm::device_address(&e, host).map(|b| b.raw()),
        None,
        "no INDIRECT_HOST_ACCESS: host allocations are not"
    );
    k.set_exec_info_indirect_access(exec_info::INDIRECT_HOST_ACCESS, true).unwrap();
    k.set_exec_info_indirect_access(exec_info::INDIRECT_DEVICE_ACCESS, true).unwrap();
    // SAFETY: as above.
    let ev = unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap();
    Event::wait(&[ev]).unwrap();
    assert!(usm::device_address(&e, host).map(|b| b.raw()).is_some());
    assert_eq!(
        usm::device_address(&e, cpu_dev).map(|b| b.raw()),
        None,
        "another device's device allocation is not edu's to reach"
    );
    assert_eq!(domain.residents().len(), 4);
    for x in shared.into_iter().chain([host, named, cpu_dev]) {
        usm::mem_free(&ctx, x).unwrap();
    }
    assert!(domain.container().mappings().is_empty());
    assert_eq!(domain.iova_allocated_bytes(), 0);
}

#[test]
fn a_bad_dma_mask_variable_skips_the_edu_with_a_reason() {
    in_child_env("child_a_bad_dma_mask_variable_skips_the_edu_with_a_reason", &[("DMABRIDGE_EDU_DMA_MASK", "0x1234")]);
}

#[test]
#[ignore = "run in a child process by a_bad_dma_mask_variable_skips_the_edu_with_a_reason"]
fn child_a_bad_dma_mask_variable_skips_the_edu_with_a_reason() {
    let p = Platform::get();
    assert_eq!(p.devices().len(), 1, "only the CPU device: {:?}", p.devices());
    let why = p.skipped().iter().find(|(a, _)| *a == addr(EDU0)).map(|(_, w)| w.clone()).unwrap_or_default();
    assert!(why.contains("DMABRIDGE_EDU_DMA_MASK") && why.contains("2^n - 1"), "{why}");
}

/// Run by the rig test `edu_bus_addresses_equal_pointers_with_a_wide_dma_mask`
/// in a guest whose edu has a 64-bit `dma_mask` and DMABRIDGE_EDU_DMA_MASK
/// says so: a device allocation's bus address is its pointer, and edu DMA
/// through it works.
#[test]
#[ignore = "run by the rig test edu_bus_addresses_equal_pointers_with_a_wide_dma_mask"]
fn child_bus_address_equals_the_pointer_with_a_wide_mask() {
    use dmabridge::ext::usm_commands as cmd;
    use dmabridge::runtime::queue::{Queue, QueueProps};
    let p = Platform::get();
    assert_eq!(p.skipped().iter().filter(|(a, _)| *a == addr(EDU0)).count(), 0, "{:?}", p.skipped());
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    println!(
        "domain DMA mask {:#x}, IOMMU ranges {:x?}",
        domain.dma_mask(),
        domain.container().iommu_info().map(|i| i.iova_ranges)
    );
    assert_eq!(domain.dma_mask(), u64::MAX);
    let ctx = Context::new(p.devices()).unwrap();
    let dev = usm::device_mem_alloc(&ctx, &e, &[], 4096, 0).unwrap().as_ptr();
    assert_eq!(usm::device_address(&e, dev).map(|b| b.raw()), Some(dev as u64), "IOVA == VA");
    println!("device allocation at {dev:?}, bus address {:#x}", usm::device_address(&e, dev).map(|b| b.raw()).unwrap());
    let src = usm::host_mem_alloc(&ctx, &[], 4096, 0).unwrap().as_ptr();
    let q = Queue::new(&ctx, &e, QueueProps::default()).unwrap();
    // SAFETY: live 4 KiB allocations; the copies are blocking.
    unsafe {
        for i in 0..4096 {
            *src.add(i) = (i % 241) as u8;
        }
        cmd::enqueue_memcpy(&q, true, dev, src, 512, &[]).unwrap();
        assert_eq!(std::slice::from_raw_parts(dev, 512), std::slice::from_raw_parts(src, 512));
    }
    usm::mem_free(&ctx, dev).unwrap();
    usm::mem_free(&ctx, src).unwrap();
    assert!(domain.container().mappings().is_empty());
}

#[test]
fn a_device_allocation_that_cannot_be_made_resident_is_not_made() {
    in_child("child_a_device_allocation_that_cannot_be_made_resident_is_not_made");
}

#[test]
#[ignore = "run in a child process by a_device_allocation_that_cannot_be_made_resident_is_not_made"]
fn child_a_device_allocation_that_cannot_be_made_resident_is_not_made() {
    use dmabridge::sys::memfd::Memfd;
    use dmabridge::sys::mmap::Access;
    let p = Platform::get();
    let e = edu(p);
    let domain = p.dma_domain().unwrap();
    let ctx = Context::new(std::slice::from_ref(&e)).unwrap();
    const BIG: usize = 64 << 20;
    assert!(e.max_mem_alloc_size >= BIG as u64, "the udmabuf limit allows 64 MiB");
    // How many 64 MiB allocations edu's 28-bit window holds: page 0 is never
    // handed out, nor what the IOMMU reserves (VFIO's usable IOVA ranges; on
    // x86_64 the window is whole: three, not four; on arm64 the SMMU's MSI
    // window 0x08000000-0x080fffff splits it: two).
    let ranges = domain.container().iommu_info().unwrap().iova_ranges;
    let window = (4096u64, (1u64 << 28) - 1);
    let fits: u64 = ranges
        .iter()
        .map(|r| (r.start().0.max(window.0), r.end().0.min(window.1)))
        .filter(|(start, end)| start <= end)
        .map(|(start, end)| (end - start + 1) / BIG as u64)
        .sum();
    assert!(fits >= 1, "edu's window holds no 64 MiB allocation: usable IOVA ranges {ranges:x?}");
    let mut live = Vec::new();
    for i in 0..fits {
        let t = Instant::now();
        live.push(usm::device_mem_alloc(&ctx, &e, &[], BIG, 0).unwrap().as_ptr());
        println!("64 MiB device allocation made resident ({i}): {:?}", t.elapsed());
    }
    // The raw ioctl on the same amount of fresh memfd pages, for comparison
    // (at an IOVA edu cannot drive: VFIO accepts it, nothing DMAs there).
    let m = Memfd::create(c"raw", BIG as u64).unwrap();
    m.add_seals(dmabridge::sys::memfd::Seals::SHRINK).unwrap();
    let map = m.map(0, BIG, Access::ReadWrite).unwrap();
    let t = Instant::now();
    // SAFETY: no Rust reference points into the mapping; it is unmapped
    // from the IOMMU below, before `map` drops.
    unsafe { domain.container().map_dma_raw(Iova(1 << 40), BIG as u64, HostAddr::of(map.as_ptr()), Access::ReadWrite) }
        .unwrap();
    println!("raw VFIO_IOMMU_MAP_DMA of 64 MiB: {:?}", t.elapsed());
    domain.container().unmap_dma(Iova(1 << 40), BIG as u64).unwrap();
    let (before_live, before_maps) = (ctx.heap().stats().live, domain.container().mappings().len());
    let err = usm::device_mem_alloc(&ctx, &e, &[], BIG, 0).unwrap_err();
    assert_eq!(err.code(), code::OUT_OF_RESOURCES, "{err}");
    assert!(err.to_string().contains("resident"), "{err}");
    assert_eq!(ctx.heap().stats().live, before_live, "the allocation was freed again");
    assert_eq!(domain.container().mappings().len(), before_maps);
    for a in live {
        usm::mem_free(&ctx, a).unwrap();
    }
    assert!(domain.container().mappings().is_empty());
    assert_eq!(domain.iova_allocated_bytes(), 0);
    // Room again.
    let a = usm::device_mem_alloc(&ctx, &e, &[], BIG, 0).unwrap().as_ptr();
    usm::mem_free(&ctx, a).unwrap();
}
