//! Rules of seeds 000, 001 and 003 (and the core OpenCL rules they lean on)
//! that involve two kinds of object, each checked both ways with its exact
//! CL code: USM pointers given to SVM functions and SVM pointers to USM
//! ones, pointers, buffers, events, queues, kernels and devices of another
//! context, and sub-buffers of sub-buffers. A refused call changes nothing.

use std::ptr::null_mut;
use std::sync::Arc;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext::svm::{self, flags};
use dmabridge::ext::svm_commands::{self as svm_cmd, map_flags as svm_map};
use dmabridge::ext::usm::{self, mem_info, mem_type, MemAllocInfo};
use dmabridge::ext::usm_commands::{self as usm_cmd, migration};
use dmabridge::runtime::buffer::map::{self, map_flags};
use dmabridge::runtime::buffer::rect::{self, CopyRect, HostRect};
use dmabridge::runtime::buffer::{commands, mem_flags, Buffer, BUFFER_CREATE_TYPE_REGION};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::runtime::event::{command_type, Event, EventStatus};
use dmabridge::runtime::kernel::{self, Kernel};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge_tests::{cpu_context_and_queue as setup, err_kind, host_alloc as host};

fn svm_alloc(ctx: &Arc<Context>, size: usize) -> *mut u8 {
    svm::svm_alloc(ctx, flags::READ_WRITE, size, 0).unwrap().as_ptr()
}

fn alloc_type(ctx: &Arc<Context>, p: *const u8) -> u32 {
    match usm::get_mem_alloc_info(ctx, p, mem_info::ALLOC_TYPE).unwrap() {
        MemAllocInfo::Type(t) => t,
        other => panic!("{other:?}"),
    }
}

/// The `len` bytes at `p`, which the caller keeps live.
fn bytes(p: *const u8, len: usize) -> Vec<u8> {
    // SAFETY: every caller passes a live allocation of at least `len` bytes
    // that no command is writing.
    unsafe { std::slice::from_raw_parts(p, len) }.to_vec()
}

fn fill(p: *mut u8, value: u8, len: usize) {
    // SAFETY: as `bytes`.
    unsafe { std::ptr::write_bytes(p, value, len) }
}

/// A device that is in no context of these tests unless put there.
fn stray_device() -> Arc<Device> {
    let cpu = Platform::get().cpu();
    Arc::new(Device {
        index: 40,
        name: "stray".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: cpu.max_mem_alloc_size,
        max_alignment: cpu.max_alignment,
        host_unified_memory: true,
        usm: cpu.usm,
        svm: cpu.svm,
        compute_units: 1,
        backend: None,
        dma_domain: None,
    })
}

/// `clMemFreeINTEL` / `clMemBlockingFreeINTEL` take only values of the three
/// USM allocation functions (seed 000): a `clSVMAlloc` pointer is
/// `CL_INVALID_VALUE` and stays intact and usable. `clSVMFree` (seed 001)
/// has no error to return: given a USM pointer it does nothing, and so
/// does `clEnqueueSVMFree` without a callback.
#[test]
fn usm_frees_refuse_svm_pointers_and_svm_frees_ignore_usm_pointers() {
    let (ctx, q) = setup();
    let s = svm_alloc(&ctx, 4096);
    let u = host(&ctx, 4096);
    fill(s, 0x11, 4096);
    fill(u, 0x22, 4096);
    assert_eq!(err_kind(usm::mem_free(&ctx, s)), InvalidValue, "clMemFreeINTEL of an SVM pointer");
    assert_eq!(err_kind(usm_cmd::mem_blocking_free(&ctx, s)), InvalidValue, "clMemBlockingFreeINTEL of one");
    assert_eq!(err_kind(usm::mem_free(&ctx, s.wrapping_add(8))), InvalidValue, "an interior SVM pointer");
    assert!(!svm::svm_free(&ctx, u), "clSVMFree of a USM pointer does nothing");
    let e = svm_cmd::enqueue_svm_free(&q, &[u], None, &[]).unwrap();
    Event::wait(std::slice::from_ref(&e)).unwrap();
    assert_eq!(e.status(), EventStatus::Complete);
    // Both intact and usable.
    assert_eq!(ctx.heap().stats().live, 2);
    assert_eq!(svm::svm_flags(&ctx, s), Some(flags::READ_WRITE));
    assert_eq!(alloc_type(&ctx, u), mem_type::HOST);
    assert_eq!(bytes(s, 4096), vec![0x11; 4096]);
    assert_eq!(bytes(u, 4096), vec![0x22; 4096]);
    // SAFETY: both are live 4 KiB allocations; every command is waited for.
    unsafe {
        Event::wait(&[svm_cmd::enqueue_svm_mem_fill(&q, s, &[0x33], 4096, &[]).unwrap()]).unwrap();
        usm_cmd::enqueue_memcpy(&q, true, u, s, 4096, &[]).unwrap();
    }
    assert_eq!(bytes(u, 4096), vec![0x33; 4096]);
    // Each freed by its own function.
    assert!(svm::svm_free(&ctx, s));
    usm_cmd::mem_blocking_free(&ctx, u).unwrap();
    assert_eq!(ctx.heap().stats().live, 0);
}

/// A refused free changes nothing, not even the commands enqueued on the
/// allocation: `clMemFreeINTEL` / `clMemBlockingFreeINTEL` of an SVM
/// pointer must not cancel a migration of it that has not run yet (only a
/// free that succeeds keeps pending migrations off the pages).
#[test]
fn a_refused_usm_free_of_an_svm_pointer_keeps_its_pending_migration() {
    let (ctx, q) = setup();
    const SIZE: usize = 4 << 20;
    // Never touched: none of its pages is committed until the migration runs.
    let s = svm_alloc(&ctx, SIZE);
    let before = ctx.heap().stats().resident_bytes;
    let gate = Event::user(&ctx);
    let e = svm_cmd::enqueue_svm_migrate_mem(&q, &[s.cast_const()], None, migration::HOST, std::slice::from_ref(&gate));
    let e = e.unwrap();
    assert_eq!(err_kind(usm::mem_free(&ctx, s)), InvalidValue);
    assert_eq!(err_kind(usm_cmd::mem_blocking_free(&ctx, s)), InvalidValue);
    gate.set_user_status(0).unwrap();
    Event::wait(&[e]).unwrap();
    let grown = ctx.heap().stats().resident_bytes - before;
    assert!(grown >= SIZE as u64, "the migration was cancelled by a refused free: {grown} bytes committed");
    assert!(svm::svm_free(&ctx, s));
}

/// Frees given another context's allocations: `CL_INVALID_VALUE` from the
/// USM frees, nothing from the SVM ones; the allocations stay live in
/// their own context. Both ways round.
#[test]
fn frees_of_another_contexts_allocations_change_nothing() {
    let (a, qa) = setup();
    let (b, qb) = setup();
    for (mine, q, theirs) in [(&a, &qa, &b), (&b, &qb, &a)] {
        let u = host(theirs, 256);
        let s = svm_alloc(theirs, 256);
        fill(u, 1, 256);
        fill(s, 2, 256);
        assert_eq!(err_kind(usm::mem_free(mine, u)), InvalidValue);
        assert_eq!(err_kind(usm_cmd::mem_blocking_free(mine, u)), InvalidValue);
        assert_eq!(err_kind(usm::mem_free(mine, s)), InvalidValue);
        assert!(!svm::svm_free(mine, s));
        assert!(!svm::svm_free(mine, u));
        Event::wait(&[svm_cmd::enqueue_svm_free(q, &[s, u], None, &[]).unwrap()]).unwrap();
        assert_eq!(theirs.heap().stats().live, 2, "nothing of the other context was freed");
        assert_eq!(mine.heap().stats().live, 0);
        assert_eq!((bytes(u, 256), bytes(s, 256)), (vec![1; 256], vec![2; 256]));
        assert_eq!(alloc_type(mine, u), mem_type::UNKNOWN, "not an allocation of this context");
        assert_eq!(svm::svm_flags(mine, s), None);
        usm::mem_free(theirs, u).unwrap();
        assert!(svm::svm_free(theirs, s));
    }
}

/// USM commands given SVM pointers, SVM commands given USM pointers.
/// Seed 000's memcpy and fill take any memory the device reaches (the CPU
/// device reaches all of the process: shared system allocations), and so
/// do the core SVM memcpy, fill and map; SVM allocations are shared
/// allocations here (`clGetMemAllocInfoINTEL` says `SHARED`), so USM
/// migration and advice take them. `clEnqueueSVMMigrateMem` takes only
/// ranges inside `clSVMAlloc` allocations.
#[test]
fn usm_commands_take_svm_pointers_and_svm_commands_usm_pointers_as_the_rules_say() {
    let (ctx, q) = setup();
    let s = svm_alloc(&ctx, 4096);
    let u = usm::shared_mem_alloc(&ctx, None, &[], 4096, 0).unwrap().as_ptr();
    assert_eq!(alloc_type(&ctx, s), mem_type::SHARED);
    assert_eq!(usm::get_mem_alloc_info(&ctx, s, mem_info::ALLOC_FLAGS).unwrap(), MemAllocInfo::Flags(0));
    assert_eq!(svm::svm_flags(&ctx, u), None);
    // SAFETY (this block): both allocations are live and 4 KiB; every
    // command is blocking or waited for.
    unsafe {
        Event::wait(&[usm_cmd::enqueue_mem_fill(&q, s, &[1, 2, 3, 4], 4096, &[]).unwrap()]).unwrap();
        Event::wait(&[svm_cmd::enqueue_svm_mem_fill(&q, u, &[9; 8], 4096, &[]).unwrap()]).unwrap();
        assert!(bytes(s, 4096).chunks(4).all(|c| c == [1, 2, 3, 4]));
        assert_eq!(bytes(u, 4096), vec![9; 4096]);
        usm_cmd::enqueue_memcpy(&q, true, u, s, 1024, &[]).unwrap();
        svm_cmd::enqueue_svm_memcpy(&q, true, s.add(2048), u.add(1024), 1024, &[]).unwrap();
    }
    assert_eq!(bytes(u, 1024), bytes(s, 1024));
    assert_eq!(bytes(s.wrapping_add(2048), 1024), vec![9; 1024]);
    // Map and unmap order the host's access: any host memory will do.
    Event::wait(&[svm_cmd::enqueue_svm_map(&q, true, svm_map::WRITE, u, 4096, &[]).unwrap()]).unwrap();
    Event::wait(&[svm_cmd::enqueue_svm_unmap(&q, u, &[]).unwrap()]).unwrap();
    // USM migration and advice of an SVM range.
    Event::wait(&[usm_cmd::enqueue_migrate_mem(&q, s, 4096, migration::HOST, &[]).unwrap()]).unwrap();
    Event::wait(&[usm_cmd::enqueue_mem_advise(&q, s, 4096, 0, &[]).unwrap()]).unwrap();
    assert_eq!(err_kind(usm_cmd::enqueue_migrate_mem(&q, s, 4097, migration::HOST, &[])), InvalidValue);
    // SVM migration of a USM range: not a clSVMAlloc allocation.
    let u_const = u.cast_const();
    assert_eq!(err_kind(svm_cmd::enqueue_svm_migrate_mem(&q, &[u_const], None, 0, &[])), InvalidValue);
    assert_eq!(err_kind(svm_cmd::enqueue_svm_migrate_mem(&q, &[u_const], Some(&[64]), 0, &[])), InvalidValue);
    Event::wait(&[svm_cmd::enqueue_svm_migrate_mem(&q, &[s.cast_const()], Some(&[64]), 0, &[]).unwrap()]).unwrap();
    // A kernel takes either kind of pointer (clSetKernelArgMemPointerINTEL,
    // clSetKernelArgSVMPointer).
    let k = Kernel::builtin(&ctx, Platform::get().cpu(), "copy_bytes").unwrap();
    k.set_arg_mem_pointer(0, u).unwrap();
    k.set_arg_mem_pointer(1, s).unwrap();
    k.set_arg_scalar(2, &4096u64.to_ne_bytes()).unwrap();
    // SAFETY: both extents are the live 4 KiB allocations.
    Event::wait(&[unsafe { kernel::enqueue_task(&q, &k, &[]) }.unwrap()]).unwrap();
    assert_eq!(bytes(u, 4096), bytes(s, 4096));
    assert!(svm::svm_free(&ctx, s));
    usm::mem_free(&ctx, u).unwrap();
}

/// Pointers into another context's allocations. Migration and advice act
/// on allocations of the queue's context only (`CL_INVALID_VALUE`), as
/// `clEnqueueSVMMigrateMem` does for SVM; queries answer UNKNOWN. Copies,
/// fills and kernels on the CPU device reach any memory of the process, so
/// they work across contexts. Both ways round.
#[test]
fn pointers_of_another_context() {
    let (a, qa) = setup();
    let (b, qb) = setup();
    for (mine, q, theirs) in [(&a, &qa, &b), (&b, &qb, &a)] {
        let local = host(mine, 512);
        let u = usm::shared_mem_alloc(theirs, None, &[], 512, 0).unwrap().as_ptr();
        let s = svm_alloc(theirs, 512);
        fill(u, 4, 512);
        fill(s, 5, 512);
        let before = theirs.heap().stats().resident_bytes;
        for p in [u, s] {
            for flags in [migration::HOST, migration::CONTENT_UNDEFINED] {
                assert_eq!(err_kind(usm_cmd::enqueue_migrate_mem(q, p, 512, flags, &[])), InvalidValue);
            }
            assert_eq!(err_kind(usm_cmd::enqueue_mem_advise(q, p, 512, 0, &[])), InvalidValue);
            assert_eq!(alloc_type(mine, p), mem_type::UNKNOWN);
        }
        let r = svm_cmd::enqueue_svm_migrate_mem(q, &[s.cast_const()], None, migration::CONTENT_UNDEFINED, &[]);
        assert_eq!(err_kind(r), InvalidValue);
        q.finish().unwrap();
        assert_eq!((bytes(u, 512), bytes(s, 512)), (vec![4; 512], vec![5; 512]), "nothing was dropped");
        assert_eq!(theirs.heap().stats().resident_bytes, before);
        // SAFETY: all three are live 512-byte allocations; blocking or waited.
        unsafe {
            usm_cmd::enqueue_memcpy(q, true, local, u, 512, &[]).unwrap();
            assert_eq!(bytes(local, 512), vec![4; 512]);
            Event::wait(&[usm_cmd::enqueue_mem_fill(q, u, &[6], 512, &[]).unwrap()]).unwrap();
            assert_eq!(bytes(u, 512), vec![6; 512]);
        }
        let k = Kernel::builtin(mine, Platform::get().cpu(), "copy_bytes").unwrap();
        k.set_arg_mem_pointer(0, local).unwrap();
        k.set_arg_mem_pointer(1, s).unwrap();
        k.set_arg_scalar(2, &512u64.to_ne_bytes()).unwrap();
        // SAFETY: both extents are live 512-byte allocations.
        Event::wait(&[unsafe { kernel::enqueue_task(q, &k, &[]) }.unwrap()]).unwrap();
        assert_eq!(bytes(local, 512), vec![5; 512]);
        usm::mem_free(mine, local).unwrap();
        usm::mem_free(theirs, u).unwrap();
        assert!(svm::svm_free(theirs, s));
    }
}

/// Every enqueue refuses a wait-list event of another context with
/// `CL_INVALID_CONTEXT` (a user event and a command's event), before
/// anything runs or is freed; `clWaitForEvents` refuses a mixed list.
/// Both ways round.
#[test]
fn every_command_refuses_wait_list_events_of_another_context() {
    let (a, qa) = setup();
    let (b, qb) = setup();
    for (mine, q, other_q, theirs) in [(&a, &qa, &qb, &b), (&b, &qb, &qa, &a)] {
        let foreign = [Event::user(theirs), other_q.enqueue_marker(&[]).unwrap()];
        let u = host(mine, 256);
        let v = host(mine, 256);
        let s = svm_alloc(mine, 256);
        fill(u, 1, 256);
        fill(v, 2, 256);
        fill(s, 3, 256);
        // SAFETY: no buffer host pointer.
        let buf = unsafe { Buffer::create(mine, 0, 256, null_mut()) }.unwrap();
        // SAFETY: no buffer host pointer.
        let buf2 = unsafe { Buffer::create(mine, 0, 256, null_mut()) }.unwrap();
        let k = Kernel::builtin(mine, Platform::get().cpu(), "copy_bytes").unwrap();
        k.set_arg_mem_pointer(0, v).unwrap();
        k.set_arg_mem_pointer(1, u).unwrap();
        k.set_arg_scalar(2, &256u64.to_ne_bytes()).unwrap();
        let mut host_buf = [0u8; 256];
        for e in &foreign {
            let w = std::slice::from_ref(e);
            let (sc, uc) = (s.cast_const(), u.cast_const());
            // SAFETY (this block): every call is refused before anything is
            // enqueued; the pointers are live 256-byte allocations anyway.
            let codes = unsafe {
                [
                    err_kind(usm_cmd::enqueue_mem_fill(q, u, &[0], 256, w)),
                    err_kind(usm_cmd::enqueue_memcpy(q, true, v, u, 256, w)),
                    err_kind(usm_cmd::enqueue_memcpy(q, false, v, u, 256, w)),
                    err_kind(usm_cmd::enqueue_migrate_mem(q, u, 256, migration::CONTENT_UNDEFINED, w)),
                    err_kind(usm_cmd::enqueue_mem_advise(q, u, 256, 0, w)),
                    err_kind(svm_cmd::enqueue_svm_free(q, &[s], None, w)),
                    err_kind(svm_cmd::enqueue_svm_memcpy(q, true, v, s, 256, w)),
                    err_kind(svm_cmd::enqueue_svm_mem_fill(q, s, &[0], 256, w)),
                    err_kind(svm_cmd::enqueue_svm_map(q, true, svm_map::READ, s, 256, w)),
                    err_kind(svm_cmd::enqueue_svm_unmap(q, s, w)),
                    err_kind(svm_cmd::enqueue_svm_migrate_mem(q, &[sc], None, migration::CONTENT_UNDEFINED, w)),
                    err_kind(q.enqueue_marker(w)),
                    err_kind(q.enqueue_barrier(w)),
                    err_kind(q.enqueue(command_type::NATIVE_KERNEL, w, false, Box::new(|| Ok(())))),
                    err_kind(kernel::enqueue_task(q, &k, w)),
                    err_kind(kernel::enqueue_nd_range(q, &k, 4, w)),
                    err_kind(commands::enqueue_read_buffer(q, &buf, true, 0, 256, host_buf.as_mut_ptr(), w)),
                    err_kind(commands::enqueue_write_buffer(q, &buf, true, 0, 256, uc, w)),
                    err_kind(commands::enqueue_copy_buffer(q, &buf, &buf2, 0, 0, 256, w)),
                    err_kind(commands::enqueue_fill_buffer(q, &buf, &[0], 0, 256, w)),
                    err_kind(map::enqueue_map_buffer_after(q, &buf, true, map_flags::READ, 0, 256, w)),
                    err_kind(rect::enqueue_read_buffer_rect(
                        q,
                        &buf,
                        true,
                        &HostRect { region: [16, 16, 1], ..Default::default() },
                        host_buf.as_mut_ptr(),
                        w,
                    )),
                    err_kind(rect::enqueue_copy_buffer_rect(
                        q,
                        &buf,
                        &buf2,
                        &CopyRect { region: [16, 16, 1], ..Default::default() },
                        w,
                    )),
                ]
            };
            for (i, c) in codes.into_iter().enumerate() {
                assert_eq!(c, InvalidContext, "command {i}");
            }
        }
        q.finish().unwrap();
        assert_eq!(q.pending_commands(), 0);
        assert_eq!((bytes(u, 256), bytes(v, 256), bytes(s, 256)), (vec![1; 256], vec![2; 256], vec![3; 256]));
        assert_eq!(buf.map_count(), 0);
        assert_eq!(mine.heap().stats().live, 3, "the SVM free did not run");
        let own = Event::user(mine);
        own.set_user_status(0).unwrap();
        let [f0, f1] = foreign;
        f0.set_user_status(0).unwrap();
        assert_eq!(err_kind(Event::wait(&[own.clone(), f0])), InvalidContext);
        assert_eq!(err_kind(Event::wait(&[f1, own])), InvalidContext);
        usm::mem_free(mine, u).unwrap();
        usm::mem_free(mine, v).unwrap();
        assert!(svm::svm_free(mine, s));
    }
}

/// Kernels, queues and devices across contexts: a kernel runs only on a
/// queue of its own context (`CL_INVALID_CONTEXT`), queues and allocations
/// take only devices of the context (`CL_INVALID_DEVICE`), and a built-in
/// runs only on a device that offers it. Both ways round.
#[test]
fn kernels_queues_and_devices_of_another_context() {
    let (a, qa) = setup();
    let (b, qb) = setup();
    for (mine, q, theirs) in [(&a, &qa, &b), (&b, &qb, &a)] {
        let k = Kernel::builtin(theirs, Platform::get().cpu(), "fill_pattern_u32").unwrap();
        let p = host(mine, 64);
        k.set_arg_mem_pointer(0, p).unwrap();
        k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
        k.set_arg_scalar(2, &7u32.to_ne_bytes()).unwrap();
        // SAFETY: refused before anything is enqueued.
        unsafe {
            assert_eq!(err_kind(kernel::enqueue_task(q, &k, &[])), InvalidContext);
            assert_eq!(err_kind(kernel::enqueue_nd_range(q, &k, 16, &[])), InvalidContext);
        }
        q.finish().unwrap();
        assert_eq!(bytes(p, 64), vec![0; 64]);
        usm::mem_free(mine, p).unwrap();
    }
    // A device outside the context, and the same device inside another one.
    let stray = stray_device();
    let cpu = Platform::get().cpu();
    let with = Context::new(&[cpu.clone(), stray.clone()]).unwrap();
    assert_eq!(err_kind(Queue::new(&a, &stray, QueueProps::default())), InvalidDevice);
    assert_eq!(err_kind(Kernel::builtin(&a, &stray, "copy_bytes")), InvalidDevice);
    assert_eq!(err_kind(usm::device_mem_alloc(&a, &stray, &[], 64, 0)), InvalidDevice);
    assert_eq!(err_kind(usm::shared_mem_alloc(&a, Some(&stray), &[], 64, 0)), InvalidDevice);
    assert_eq!(a.heap().stats().live, 0);
    let sq = Queue::new(&with, &stray, QueueProps::default()).unwrap();
    let d = usm::device_mem_alloc(&with, &stray, &[], 64, 0).unwrap().as_ptr();
    assert_eq!(alloc_type(&with, d), mem_type::DEVICE);
    usm::mem_free(&with, d).unwrap();
    // The stray device offers no built-ins: the CPU's kernel, of the same
    // context, is refused on its queue; on the CPU's queue it runs.
    assert_eq!(err_kind(Kernel::builtin(&with, &stray, "copy_bytes")), InvalidValue);
    let k = Kernel::builtin(&with, cpu, "fill_pattern_u32").unwrap();
    let p = host(&with, 64);
    k.set_arg_mem_pointer(0, p).unwrap();
    k.set_arg_scalar(1, &16u64.to_ne_bytes()).unwrap();
    k.set_arg_scalar(2, &7u32.to_ne_bytes()).unwrap();
    // SAFETY: refused, then a launch over the live 64-byte allocation.
    unsafe {
        assert_eq!(err_kind(kernel::enqueue_task(&sq, &k, &[])), InvalidDevice);
        let cq = Queue::new(&with, cpu, QueueProps::default()).unwrap();
        Event::wait(&[kernel::enqueue_task(&cq, &k, &[]).unwrap()]).unwrap();
    }
    assert!(bytes(p, 64).chunks(4).all(|w| w == 7u32.to_ne_bytes()));
    usm::mem_free(&with, p).unwrap();
}

/// Buffers across contexts, both directions of every two-buffer command;
/// buffers over USM and SVM memory of this context and of another (seed
/// 000 issues 20 and 21, seed 001's `CL_MEM_USE_HOST_PTR` rule); sub-buffers
/// of sub-buffers.
#[test]
fn buffers_across_contexts_and_over_usm_and_svm_memory() {
    let (a, qa) = setup();
    let (b, _qb) = setup();
    let data: Vec<u8> = (0..=255).collect();
    // SAFETY: COPY_HOST_PTR reads `data` (256 bytes) now.
    let in_a = unsafe { Buffer::create(&a, mem_flags::COPY_HOST_PTR, 256, data.as_ptr().cast_mut()) }.unwrap();
    // SAFETY: as above.
    let in_b = unsafe { Buffer::create(&b, mem_flags::COPY_HOST_PTR, 256, data.as_ptr().cast_mut()) }.unwrap();
    let r = CopyRect { region: [16, 16, 1], ..Default::default() };
    for (src, dst) in [(&in_a, &in_b), (&in_b, &in_a), (&in_b, &in_b)] {
        assert_eq!(err_kind(commands::enqueue_copy_buffer(&qa, src, dst, 0, 0, 256, &[])), InvalidContext);
        assert_eq!(err_kind(rect::enqueue_copy_buffer_rect(&qa, src, dst, &r, &[])), InvalidContext);
    }
    let mut out = [0u8; 256];
    // SAFETY: blocking read of 256 bytes into `out`.
    unsafe { commands::enqueue_read_buffer(&qa, &in_a, true, 0, 256, out.as_mut_ptr(), &[]) }.unwrap();
    assert_eq!(out[..], data[..], "nothing was written into the buffer");

    // Sub-buffers: of a buffer yes, of a sub-buffer no.
    let sub = Buffer::create_sub_buffer(&in_a, 0, BUFFER_CREATE_TYPE_REGION, 0, 128).unwrap();
    assert_eq!(err_kind(Buffer::create_sub_buffer(&sub, 0, BUFFER_CREATE_TYPE_REGION, 0, 64)), InvalidMemObject);
    // A sub-buffer of another context's buffer is refused like its parent.
    let sub_b = Buffer::create_sub_buffer(&in_b, 0, BUFFER_CREATE_TYPE_REGION, 128, 128).unwrap();
    assert_eq!(err_kind(commands::enqueue_copy_buffer(&qa, &sub, &sub_b, 0, 0, 64, &[])), InvalidContext);
    assert_eq!(err_kind(commands::enqueue_copy_buffer(&qa, &sub_b, &sub, 0, 0, 64, &[])), InvalidContext);

    // Over USM memory: this context's is refused (issues 20, 21), another
    // context's is plain host memory to this one.
    let (shared_a, shared_b) = (
        usm::shared_mem_alloc(&a, None, &[], 256, 0).unwrap().as_ptr(),
        usm::shared_mem_alloc(&b, None, &[], 256, 0).unwrap().as_ptr(),
    );
    let (svm_a, svm_b) = (svm_alloc(&a, 256), svm_alloc(&b, 256));
    // SAFETY (this block): the pointers are live 256-byte allocations that
    // outlive the buffers made over them, which are dropped first.
    unsafe {
        assert_eq!(err_kind(Buffer::create(&a, mem_flags::USE_HOST_PTR, 256, shared_a)), InvalidHostPtr);
        assert_eq!(err_kind(Buffer::create(&a, mem_flags::COPY_HOST_PTR, 256, shared_a)), InvalidHostPtr);
        drop(Buffer::create(&a, mem_flags::USE_HOST_PTR, 256, shared_b).unwrap());
        drop(Buffer::create(&a, mem_flags::COPY_HOST_PTR, 256, shared_b).unwrap());
        // Over SVM: this context's must fit in the allocation; another
        // context's is not this context's SVM.
        assert_eq!(err_kind(Buffer::create(&a, mem_flags::USE_HOST_PTR, 256, svm_a.add(1))), InvalidBufferSize);
        drop(Buffer::create(&a, mem_flags::USE_HOST_PTR, 256, svm_a).unwrap());
        drop(Buffer::create(&a, mem_flags::USE_HOST_PTR, 255, svm_b.add(1)).unwrap());
    }
    assert_eq!((a.heap().stats().live, b.heap().stats().live), (2, 2));
    usm::mem_free(&a, shared_a).unwrap();
    usm::mem_free(&b, shared_b).unwrap();
    assert!(svm::svm_free(&a, svm_a) && svm::svm_free(&b, svm_b));
}
