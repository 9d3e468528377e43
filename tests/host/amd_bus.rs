//! `cl_amd_bus_addressable_memory` (seed 002) on the development host: the
//! flag rules and error codes of every entry point. The host has no VFIO
//! domain, so buffers are created but never made resident; residency,
//! remote DMA and signals are the guest's (tests/guest/amd_bus.rs).

use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind;
use dmabridge::ext::amd_bus::{self, BusAddress, BUS_ADDRESSABLE, EXTERNAL_PHYSICAL};
use dmabridge::runtime::buffer::{commands, mem_flags, mem_info, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::event::Event;
use dmabridge::runtime::info::InfoValue;
use dmabridge::runtime::platform::Platform;
use dmabridge::sys::addr::BusAddr;
use dmabridge_tests::{cpu_context_and_queue, err_kind};

fn bus_buffer(ctx: &Arc<dmabridge::runtime::context::Context>, size: usize) -> Arc<Buffer> {
    // SAFETY: no host pointer.
    unsafe { amd_bus::create_buffer(ctx, BUS_ADDRESSABLE, size, null_mut()) }.unwrap()
}

#[test]
fn bus_addressable_buffers_follow_the_flag_rules() {
    let (ctx, _q) = cpu_context_and_queue();
    let data = vec![0x5au8; 10_000];
    let p = data.as_ptr() as *mut u8;
    use mem_flags::*;
    // SAFETY (every call below): `p` holds 10 000 readable bytes; refused
    // calls read nothing.
    let create = |flags: u64, size: usize, ptr: *mut u8| unsafe { amd_bus::create_buffer(&ctx, flags, size, ptr) };
    for bad in [BUS_ADDRESSABLE | ALLOC_HOST_PTR, BUS_ADDRESSABLE | USE_HOST_PTR, BUS_ADDRESSABLE | EXTERNAL_PHYSICAL] {
        assert_eq!(err_kind(create(bad, 64, p)), ClErrorKind::InvalidValue, "flags {bad:#x}");
    }
    assert_eq!(err_kind(create(BUS_ADDRESSABLE | READ_ONLY | WRITE_ONLY, 64, null_mut())), ClErrorKind::InvalidValue);
    assert_eq!(err_kind(create(BUS_ADDRESSABLE, 0, null_mut())), ClErrorKind::InvalidBufferSize);
    assert_eq!(err_kind(create(BUS_ADDRESSABLE, usize::MAX, null_mut())), ClErrorKind::InvalidBufferSize);
    assert_eq!(err_kind(create(BUS_ADDRESSABLE | COPY_HOST_PTR, 64, null_mut())), ClErrorKind::InvalidHostPtr);
    assert_eq!(err_kind(create(BUS_ADDRESSABLE, 64, p)), ClErrorKind::InvalidHostPtr, "host_ptr without COPY");

    // COPY_HOST_PTR initialises the surface; the signal page starts at 0.
    let b = create(BUS_ADDRESSABLE | COPY_HOST_PTR, 10_000, p).unwrap();
    let (surface, signal) = amd_bus::cpu_pages(&b).unwrap();
    // SAFETY: the buffer's pages; no device has them (never resident).
    let (bytes, marker) = unsafe { (std::slice::from_raw_parts(surface, 10_000).to_vec(), signal.read_volatile()) };
    assert_eq!(bytes, data);
    assert_eq!(marker, 0);
    assert_eq!(surface as usize % 4096, 0, "whole pages");
    match b.info(mem_info::FLAGS).unwrap() {
        InfoValue::Bits(f) => assert_eq!(f, BUS_ADDRESSABLE | COPY_HOST_PTR | READ_WRITE),
        other => panic!("{other:?}"),
    }
    assert!(amd_bus::is_bus_addressable(&b));
    assert_eq!(amd_bus::bus_address(&b), None, "not resident");

    // Ordinary buffer commands work on it.
    let q = _q;
    let mut out = vec![0u8; 16];
    // SAFETY: `out` holds 16 bytes; blocking.
    let ev = unsafe { commands::enqueue_read_buffer(&q, &b, true, 100, 16, out.as_mut_ptr(), &[]) }.unwrap();
    Event::wait(&[ev]).unwrap();
    assert_eq!(out, [0x5a; 16]);

    // No sub-buffers.
    let sub = Buffer::create_sub_buffer(&b, 0, BUFFER_CREATE_TYPE_REGION, 0, 4096);
    assert_eq!(err_kind(sub), ClErrorKind::InvalidMemObject);
}

#[test]
fn external_physical_buffers_check_their_bus_addresses() {
    let (ctx, _q) = cpu_context_and_queue();
    use mem_flags::*;
    let create = |flags: u64, at: Option<BusAddress>| {
        let mut at = at;
        let p = at.as_mut().map_or(null_mut(), |a| a as *mut BusAddress as *mut u8);
        // SAFETY: `p` is NULL or a whole BusAddress.
        unsafe { amd_bus::create_buffer(&ctx, flags, 4096, p) }
    };
    let good = BusAddress { surface_bus_address: BusAddr(0x1000_0000), marker_bus_address: BusAddr(0x1000_1000) };
    for bad in [
        EXTERNAL_PHYSICAL | READ_WRITE,
        EXTERNAL_PHYSICAL | READ_ONLY,
        EXTERNAL_PHYSICAL | COPY_HOST_PTR,
        EXTERNAL_PHYSICAL | HOST_READ_ONLY,
    ] {
        assert_eq!(err_kind(create(bad, Some(good))), ClErrorKind::InvalidValue, "flags {bad:#x}");
    }
    assert_eq!(err_kind(create(EXTERNAL_PHYSICAL, None)), ClErrorKind::InvalidHostPtr);
    for at in [
        BusAddress { surface_bus_address: BusAddr(0), ..good },
        BusAddress { marker_bus_address: BusAddr(0), ..good },
        BusAddress { surface_bus_address: BusAddr(0x1000_0010), ..good },
        BusAddress { marker_bus_address: BusAddr(0x1000_1004), ..good },
    ] {
        assert_eq!(err_kind(create(EXTERNAL_PHYSICAL, Some(at))), ClErrorKind::InvalidHostPtr, "{at:?}");
    }
    // An address in no PCI BAR cannot be mapped.
    let nowhere =
        BusAddress { surface_bus_address: BusAddr(0x7fff_ffff_f000), marker_bus_address: BusAddr(0x7fff_ffff_e000) };
    let e = create(EXTERNAL_PHYSICAL | WRITE_ONLY, Some(nowhere)).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::MemObjectAllocationFailure);
    assert!(e.message.contains("no PCI function"), "{e}");
}

#[test]
fn make_resident_waits_and_writes_answer_the_seeds_codes_on_the_host() {
    let (ctx, q) = cpu_context_and_queue();
    let b = bus_buffer(&ctx, 8192);
    // SAFETY: no host pointer.
    let plain = unsafe { Buffer::create(&ctx, 0, 64, null_mut()) }.unwrap();
    let e = amd_bus::make_buffers_resident(&q, &[b.clone(), plain.clone()], true, &[]).unwrap_err();
    assert_eq!(e.kind, ClErrorKind::InvalidOperation, "{e}");
    assert_eq!(err_kind(amd_bus::make_buffers_resident(&q, &[], true, &[])), ClErrorKind::InvalidValue);
    let (ctx2, q2) = cpu_context_and_queue();
    let _ = ctx2;
    assert_eq!(
        err_kind(amd_bus::make_buffers_resident(&q2, std::slice::from_ref(&b), true, &[])),
        ClErrorKind::InvalidContext
    );
    if Platform::get().dma_domain().is_none() {
        let e = amd_bus::make_buffers_resident(&q, std::slice::from_ref(&b), false, &[]).unwrap_err();
        assert_eq!(e.kind, ClErrorKind::OutOfHostMemory);
        assert!(e.message.contains("no IOMMU domain"), "{e}");
        assert!(!amd_bus::available());
    }
    // Wait-signal: only bus-addressable buffers, only once resident.
    assert_eq!(err_kind(amd_bus::enqueue_wait_signal(&q, &plain, 1, &[])), ClErrorKind::InvalidMemObject);
    assert_eq!(err_kind(amd_bus::enqueue_wait_signal(&q, &b, 1, &[])), ClErrorKind::InvalidValue);
    assert_eq!(err_kind(amd_bus::enqueue_wait_signal(&q2, &b, 1, &[])), ClErrorKind::InvalidContext);
    // Write-signal: only external physical buffers.
    assert_eq!(err_kind(amd_bus::enqueue_write_signal(&q, &b, 1, 0, &[])), ClErrorKind::InvalidMemObject);
    assert_eq!(err_kind(amd_bus::enqueue_write_signal(&q, &plain, 1, 0, &[])), ClErrorKind::InvalidMemObject);
    // The failed calls left the buffer as it was.
    assert_eq!(amd_bus::bus_address(&b), None);
}

#[test]
fn the_signal_comparison_is_written_or_passed_without_wrap_around() {
    assert!(amd_bus::signal_reached(10, 10));
    assert!(amd_bus::signal_reached(11, 10), "a later marker: the value was passed");
    assert!(!amd_bus::signal_reached(9, 10));
    // Markers only increase and never wrap (clEnqueueWriteSignalAMD's rule):
    // a small marker has not reached a large value, whatever the distance.
    assert!(!amd_bus::signal_reached(3, u32::MAX - 2), "a fresh or small marker");
    assert!(!amd_bus::signal_reached(0, 0x8000_0001), "a fresh signal page");
    assert!(amd_bus::signal_reached(u32::MAX - 2, 3));
    assert!(amd_bus::signal_reached(10u32.wrapping_add(1 << 31), 10), "2^31 ahead is ahead");
}

#[test]
fn the_command_types_of_the_extension_have_names() {
    // Error messages and event debug output name a command by its type.
    use dmabridge::runtime::event::command_type::name;
    assert_eq!(name(amd_bus::command_type::WAIT_SIGNAL), "COMMAND_WAIT_SIGNAL_AMD");
    assert_eq!(name(amd_bus::command_type::WRITE_SIGNAL), "COMMAND_WRITE_SIGNAL_AMD");
    assert_eq!(name(amd_bus::command_type::MAKE_BUFFERS_RESIDENT), "COMMAND_MAKE_BUFFERS_RESIDENT_AMD");
}
