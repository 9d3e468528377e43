//! Seed 000 (cl_intel_unified_shared_memory): every error bullet of the
//! allocation, free and query functions, with the exact CL code, and no
//! partial state after a failure.

use std::sync::Arc;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::usm::{self, alloc_flags, mem_info, mem_type, MemAllocInfo, MEM_ALLOC_FLAGS};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType, UsmCaps};
use dmabridge_tests::{cpu_context as ctx, cpu_device as cpu, err_kind as kind};

/// A device that supports no USM at all, to show the INVALID_OPERATION cases.
fn no_usm_device(index: u16) -> Arc<Device> {
    Arc::new(Device {
        index,
        name: "no-usm".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 1 << 20,
        max_alignment: 64,
        host_unified_memory: false,
        usm: UsmCaps { host: 0, device: 0, single_device_shared: 0, cross_device_shared: 0, shared_system: 0 },
        svm: 0,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    })
}

fn live(ctx: &Context) -> usize {
    ctx.heap().stats().live
}

#[test]
fn host_alloc_errors() {
    let c = ctx();
    let max = cpu().max_mem_alloc_size as usize;
    let flags = |v| [(MEM_ALLOC_FLAGS, v)];
    assert_eq!(kind(usm::host_mem_alloc(&c, &[], 64, 3)), InvalidValue, "alignment not a power of two");
    assert_eq!(kind(usm::host_mem_alloc(&c, &[], 64, 256)), InvalidValue, "alignment above long16");
    assert_eq!(kind(usm::host_mem_alloc(&c, &[(0x4196, 0)], 64, 0)), InvalidProperty, "unknown property");
    assert_eq!(kind(usm::host_mem_alloc(&c, &flags(1 << 5), 64, 0)), InvalidProperty, "unknown flag bit");
    assert_eq!(
        kind(usm::host_mem_alloc(&c, &[(MEM_ALLOC_FLAGS, 0), (MEM_ALLOC_FLAGS, 0)], 64, 0)),
        InvalidProperty,
        "property given twice"
    );
    for p in [alloc_flags::INITIAL_PLACEMENT_DEVICE, alloc_flags::INITIAL_PLACEMENT_HOST] {
        assert_eq!(kind(usm::host_mem_alloc(&c, &flags(p), 64, 0)), InvalidProperty, "placement on host");
    }
    assert_eq!(kind(usm::host_mem_alloc(&c, &[], 0, 0)), InvalidBufferSize);
    assert_eq!(kind(usm::host_mem_alloc(&c, &[], max + 1, 0)), InvalidBufferSize);
    let none = Context::new(&[no_usm_device(7)]).unwrap();
    assert_eq!(kind(usm::host_mem_alloc(&none, &[], 64, 0)), InvalidOperation);
    assert_eq!(live(&c), 0, "no failed call left an allocation behind");
    // The valid corner cases work.
    let p = usm::host_mem_alloc(&c, &flags(alloc_flags::WRITE_COMBINED), max, 128).unwrap();
    assert_eq!(usm::get_mem_alloc_info(&c, p.as_ptr(), mem_info::ALLOC_FLAGS).unwrap(), MemAllocInfo::Flags(1));
    usm::mem_free(&c, p.as_ptr()).unwrap();
}

#[test]
fn device_alloc_errors() {
    let c = ctx();
    let dev = cpu();
    let stranger = no_usm_device(8);
    let mixed = Context::new(&[dev.clone(), stranger.clone()]).unwrap();
    assert_eq!(kind(usm::device_mem_alloc(&c, &stranger, &[], 64, 0)), InvalidDevice, "device not in the context");
    assert_eq!(kind(usm::device_mem_alloc(&mixed, &stranger, &[], 64, 0)), InvalidOperation, "no device USM");
    assert_eq!(kind(usm::device_mem_alloc(&c, &dev, &[], 64, 5)), InvalidValue);
    assert_eq!(kind(usm::device_mem_alloc(&c, &dev, &[], 64, 1024)), InvalidValue);
    assert_eq!(kind(usm::device_mem_alloc(&c, &dev, &[(1, 1)], 64, 0)), InvalidProperty);
    assert_eq!(
        kind(usm::device_mem_alloc(&c, &dev, &[(MEM_ALLOC_FLAGS, alloc_flags::INITIAL_PLACEMENT_DEVICE)], 64, 0)),
        InvalidProperty
    );
    assert_eq!(kind(usm::device_mem_alloc(&c, &dev, &[], 0, 0)), InvalidBufferSize);
    assert_eq!(kind(usm::device_mem_alloc(&c, &dev, &[], dev.max_mem_alloc_size as usize + 1, 0)), InvalidBufferSize);
    assert_eq!(live(&c) + live(&mixed), 0);
    let p = usm::device_mem_alloc(&c, &dev, &[], 100, 0).unwrap();
    assert_eq!(
        usm::get_mem_alloc_info(&c, p.as_ptr(), mem_info::ALLOC_TYPE).unwrap(),
        MemAllocInfo::Type(mem_type::DEVICE)
    );
    assert_eq!(
        usm::get_mem_alloc_info(&c, p.as_ptr(), mem_info::ALLOC_DEVICE).unwrap(),
        MemAllocInfo::Device(Some(dev))
    );
    usm::mem_free(&c, p.as_ptr()).unwrap();
}

#[test]
fn shared_alloc_errors() {
    let c = ctx();
    let dev = cpu();
    let stranger = no_usm_device(9);
    let mixed = Context::new(&[dev.clone(), stranger.clone()]).unwrap();
    let none = Context::new(&[no_usm_device(10)]).unwrap();
    let both = alloc_flags::INITIAL_PLACEMENT_DEVICE | alloc_flags::INITIAL_PLACEMENT_HOST;
    assert_eq!(kind(usm::shared_mem_alloc(&c, Some(&stranger), &[], 64, 0)), InvalidDevice);
    assert_eq!(kind(usm::shared_mem_alloc(&mixed, Some(&stranger), &[], 64, 0)), InvalidOperation);
    assert_eq!(kind(usm::shared_mem_alloc(&none, None, &[], 64, 0)), InvalidOperation);
    assert_eq!(kind(usm::shared_mem_alloc(&c, None, &[], 64, 6)), InvalidValue);
    assert_eq!(kind(usm::shared_mem_alloc(&c, Some(&dev), &[], 64, 512)), InvalidValue);
    assert_eq!(kind(usm::shared_mem_alloc(&c, None, &[(MEM_ALLOC_FLAGS, both)], 64, 0)), InvalidProperty);
    assert_eq!(kind(usm::shared_mem_alloc(&c, None, &[], 0, 0)), InvalidBufferSize);
    assert_eq!(
        kind(usm::shared_mem_alloc(&c, Some(&dev), &[], dev.max_mem_alloc_size as usize + 1, 0)),
        InvalidBufferSize
    );
    assert_eq!(live(&c) + live(&mixed) + live(&none), 0);
    // Either placement flag alone is fine; device-less shared has no device.
    for p in [alloc_flags::INITIAL_PLACEMENT_DEVICE, alloc_flags::INITIAL_PLACEMENT_HOST] {
        let a = usm::shared_mem_alloc(&c, None, &[(MEM_ALLOC_FLAGS, p)], 64, 0).unwrap();
        assert_eq!(
            usm::get_mem_alloc_info(&c, a.as_ptr(), mem_info::ALLOC_DEVICE).unwrap(),
            MemAllocInfo::Device(None)
        );
        assert_eq!(
            usm::get_mem_alloc_info(&c, a.as_ptr(), mem_info::ALLOC_TYPE).unwrap(),
            MemAllocInfo::Type(mem_type::SHARED)
        );
        usm::mem_free(&c, a.as_ptr()).unwrap();
    }
}

#[test]
fn running_out_of_memory_is_out_of_host_memory() {
    let c = ctx();
    let max = cpu().max_mem_alloc_size as usize;
    let mut ptrs = Vec::new();
    // The heap reserves 64 GiB of address space; pages are only used when
    // touched, so this costs no memory.
    let err = loop {
        match usm::host_mem_alloc(&c, &[], max, 0) {
            Ok(p) => ptrs.push(p),
            Err(e) => break e,
        }
        assert!(ptrs.len() < 1_000_000, "the heap never ran out");
    };
    assert_eq!(err.kind, OutOfHostMemory, "{err}");
    assert_eq!(live(&c), ptrs.len());
    for p in ptrs {
        usm::mem_free(&c, p.as_ptr()).unwrap();
    }
}

#[test]
fn free_errors_change_nothing() {
    let c = ctx();
    let other = ctx();
    let p = usm::host_mem_alloc(&c, &[], 1000, 0).unwrap().as_ptr();
    let q = usm::host_mem_alloc(&other, &[], 1000, 0).unwrap().as_ptr();
    let mut on_stack = 0u8;
    usm::mem_free(&c, std::ptr::null_mut()).unwrap();
    assert_eq!(kind(usm::mem_free(&c, p.wrapping_add(8))), InvalidValue, "interior pointer");
    assert_eq!(kind(usm::mem_free(&c, q)), InvalidValue, "another context's pointer");
    assert_eq!(kind(usm::mem_free(&c, &mut on_stack)), InvalidValue, "not a USM pointer");
    assert_eq!(usm::get_mem_alloc_info(&c, p, mem_info::ALLOC_SIZE).unwrap(), MemAllocInfo::Size(1000));
    assert_eq!(usm::get_mem_alloc_info(&other, q, mem_info::ALLOC_SIZE).unwrap(), MemAllocInfo::Size(1000));
    usm::mem_free(&c, p).unwrap();
    assert_eq!(kind(usm::mem_free(&c, p)), InvalidValue, "double free");
    usm::mem_free(&other, q).unwrap();
}

#[test]
fn queries_of_unknown_pointers_and_bad_names() {
    let c = ctx();
    let x = 5u64;
    let unknown = &x as *const u64 as *const u8;
    assert_eq!(
        usm::get_mem_alloc_info(&c, unknown, mem_info::ALLOC_TYPE).unwrap(),
        MemAllocInfo::Type(mem_type::UNKNOWN)
    );
    assert_eq!(usm::get_mem_alloc_info(&c, unknown, mem_info::ALLOC_BASE_PTR).unwrap(), MemAllocInfo::BasePtr(0));
    assert_eq!(usm::get_mem_alloc_info(&c, unknown, mem_info::ALLOC_SIZE).unwrap(), MemAllocInfo::Size(0));
    assert_eq!(usm::get_mem_alloc_info(&c, unknown, mem_info::ALLOC_DEVICE).unwrap(), MemAllocInfo::Device(None));
    assert_eq!(usm::get_mem_alloc_info(&c, unknown, mem_info::ALLOC_FLAGS).unwrap(), MemAllocInfo::Flags(0));
    assert_eq!(kind(usm::get_mem_alloc_info(&c, unknown, 0x4194)), InvalidValue);
    let p = usm::host_mem_alloc(&c, &[], 64, 0).unwrap().as_ptr();
    assert_eq!(
        usm::get_mem_alloc_info(&c, p.wrapping_add(64), mem_info::ALLOC_TYPE).unwrap(),
        MemAllocInfo::Type(mem_type::UNKNOWN),
        "one past the end"
    );
    assert_eq!(MemAllocInfo::Type(0).size(), 4);
    assert_eq!(MemAllocInfo::Flags(0).size(), 8);
    assert_eq!(MemAllocInfo::BasePtr(0).size(), std::mem::size_of::<usize>());
    usm::mem_free(&c, p).unwrap();
}

#[test]
fn error_codes_are_the_cl_codes() {
    assert_eq!(InvalidValue.code(), -30);
    assert_eq!(InvalidProperty.code(), -64);
    assert_eq!(InvalidBufferSize.code(), -61);
    assert_eq!(InvalidOperation.code(), -59);
    assert_eq!(InvalidDevice.code(), -33);
    assert_eq!(OutOfHostMemory.code(), -6);
    assert_eq!(MemCopyOverlap.code(), -8);
    assert_eq!(ExecStatusErrorForEventsInWaitList.code(), -14);
    let e = usm::host_mem_alloc(&ctx(), &[], 64, 3).unwrap_err();
    assert!(e.to_string().starts_with("CL_INVALID_VALUE: alignment 3"), "{e}");
}
