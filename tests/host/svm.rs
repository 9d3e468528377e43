//! Seed 001 (clSVMAlloc): every flag, size and alignment rule, on the same
//! heap as USM.

use std::sync::Arc;

use dmabridge::error::ClErrorKind::{self, *};
use dmabridge::ext::svm::{self, flags};
use dmabridge::ext::usm::{self, mem_info, mem_type, MemAllocInfo};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{svm_caps, Device, DeviceType};
use dmabridge::runtime::platform::Platform;

fn ctx() -> Arc<Context> {
    Context::new(Platform::get().devices()).unwrap()
}

fn kind(r: dmabridge::error::ClResult<std::ptr::NonNull<u8>>) -> ClErrorKind {
    r.expect_err("clSVMAlloc must return NULL").kind
}

#[test]
fn flag_rules() {
    let c = ctx();
    assert_eq!(kind(svm::svm_alloc(&c, flags::ATOMICS, 64, 0)), InvalidValue, "atomics without fine grain");
    assert_eq!(kind(svm::svm_alloc(&c, flags::READ_WRITE | flags::WRITE_ONLY, 64, 0)), InvalidValue);
    assert_eq!(kind(svm::svm_alloc(&c, flags::READ_WRITE | flags::READ_ONLY, 64, 0)), InvalidValue);
    assert_eq!(kind(svm::svm_alloc(&c, flags::WRITE_ONLY | flags::READ_ONLY, 64, 0)), InvalidValue);
    assert_eq!(kind(svm::svm_alloc(&c, 1 << 3 /* CL_MEM_USE_HOST_PTR */, 64, 0)), InvalidValue, "not an SVM flag");
    assert_eq!(c.heap().stats().live, 0);
    for f in [
        0,
        flags::READ_WRITE,
        flags::WRITE_ONLY,
        flags::READ_ONLY,
        flags::FINE_GRAIN_BUFFER,
        flags::FINE_GRAIN_BUFFER | flags::ATOMICS | flags::READ_ONLY,
    ] {
        let p = svm::svm_alloc(&c, f, 100, 0).unwrap();
        assert_eq!(svm::svm_flags(&c, p.as_ptr()), Some(f));
        assert!(svm::svm_free(&c, p.as_ptr()));
    }
}

#[test]
fn fine_grain_and_atomics_need_every_device() {
    let coarse_only = Arc::new(Device {
        index: 20,
        name: "coarse-only".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 1 << 20,
        max_alignment: 128,
        host_unified_memory: false,
        usm: Platform::get().cpu().usm,
        svm: svm_caps::COARSE_GRAIN_BUFFER,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    });
    let c = Context::new(&[Platform::get().cpu().clone(), coarse_only]).unwrap();
    assert_eq!(kind(svm::svm_alloc(&c, flags::FINE_GRAIN_BUFFER, 64, 0)), InvalidOperation);
    assert_eq!(kind(svm::svm_alloc(&c, flags::FINE_GRAIN_BUFFER | flags::ATOMICS, 64, 0)), InvalidOperation);
    // Coarse grain works, and the smaller device limit applies.
    let p = svm::svm_alloc(&c, 0, 1 << 20, 0).unwrap();
    assert_eq!(kind(svm::svm_alloc(&c, 0, (1 << 20) + 1, 0)), InvalidBufferSize);
    svm::svm_free(&c, p.as_ptr());
}

#[test]
fn size_and_alignment_rules() {
    let c = ctx();
    let max = Platform::get().cpu().max_mem_alloc_size as usize;
    assert_eq!(kind(svm::svm_alloc(&c, 0, 0, 0)), InvalidBufferSize);
    assert_eq!(kind(svm::svm_alloc(&c, 0, max + 1, 0)), InvalidBufferSize);
    assert_eq!(kind(svm::svm_alloc(&c, 0, 64, 12)), InvalidValue);
    assert_eq!(kind(svm::svm_alloc(&c, 0, 64, 256)), InvalidValue, "above long16");
    for align in [0u32, 1, 2, 64, 128] {
        let p = svm::svm_alloc(&c, 0, 10, align).unwrap();
        assert_eq!(p.as_ptr() as usize % align.max(128) as usize, 0, "default alignment is 128");
        svm::svm_free(&c, p.as_ptr());
    }
    assert_eq!(c.heap().stats().live, 0);
}

#[test]
fn free_use_host_ptr_and_usm_view() {
    let c = ctx();
    let p = svm::svm_alloc(&c, flags::FINE_GRAIN_BUFFER, 1000, 0).unwrap().as_ptr();
    let u = usm::host_mem_alloc(&c, &[], 1000, 0).unwrap().as_ptr();
    assert_eq!(
        usm::get_mem_alloc_info(&c, p.wrapping_add(10), mem_info::ALLOC_TYPE).unwrap(),
        MemAllocInfo::Type(mem_type::SHARED)
    );
    // A buffer over SVM memory must fit in the allocation.
    svm::check_use_host_ptr(&c, p, 1000).unwrap();
    svm::check_use_host_ptr(&c, p.wrapping_add(500), 500).unwrap();
    assert_eq!(svm::check_use_host_ptr(&c, p, 1001).unwrap_err().kind, InvalidBufferSize);
    assert_eq!(svm::check_use_host_ptr(&c, p.wrapping_add(500), 501).unwrap_err().kind, InvalidBufferSize);
    // clSVMFree ignores NULL, interior pointers and USM pointers.
    assert!(!svm::svm_free(&c, std::ptr::null_mut()));
    assert!(!svm::svm_free(&c, p.wrapping_add(1)));
    assert!(!svm::svm_free(&c, u), "a USM host allocation is not SVM");
    assert_eq!(c.heap().stats().live, 2);
    assert!(svm::svm_free(&c, p));
    assert!(!svm::svm_free(&c, p), "double free is ignored");
    usm::mem_free(&c, u).unwrap();
}
