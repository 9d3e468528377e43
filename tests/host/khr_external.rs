//! `cl_khr_external_memory(_dma_buf)` and `cl_khr_semaphore` /
//! `cl_khr_external_semaphore(_sync_fd)` on the CPU device: every error
//! rule with its code, the strings and handle-type queries, the bracket
//! state, and semaphore waits that hold the queue. A dma-buf and a real
//! fence need udmabuf, heaps or vgem: `tests/guest/khr_external.rs`. Here an
//! eventfd plays the imported fence: pollable like a sync_file, readable
//! once signalled, so the io_uring wait path runs on any machine.

use std::os::fd::AsFd;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::Duration;

use dmabridge::error::ClErrorKind::*;
use dmabridge::ext;
use dmabridge::ext::khr_external::memory::{self, MemProperties};
use dmabridge::ext::khr_external::semaphore::{self, semaphore_info, SemaphoreProperties, SEMAPHORE_TYPE_BINARY_KHR};
use dmabridge::ext::khr_external::{self as khr, info_param};
use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::event::{command_type, Event, EventStatus};
use dmabridge::runtime::info::{device_extensions, platform_extensions, InfoValue};
use dmabridge::runtime::queue::{properties, Queue, QueueProps};
use dmabridge::sys::eventfd::EventFd;
use dmabridge::sys::memfd::Memfd;
use dmabridge_tests::{cpu_context, cpu_context_and_queue, cpu_device, err_kind};

fn binary() -> SemaphoreProperties<'static> {
    SemaphoreProperties { ty: Some(SEMAPHORE_TYPE_BINARY_KHR.into()), ..Default::default() }
}

#[test]
fn strings_and_handle_type_queries() {
    let cpu = cpu_device();
    for name in [
        khr::MEMORY_EXTENSION,
        khr::MEMORY_DMA_BUF_EXTENSION,
        khr::SEMAPHORE_EXTENSION,
        khr::EXTERNAL_SEMAPHORE_EXTENSION,
        khr::SEMAPHORE_SYNC_FD_EXTENSION,
    ] {
        assert!(platform_extensions().iter().any(|e| e.name == name), "{name}");
        assert!(device_extensions(&cpu).iter().any(|e| e.name == name), "{name}");
    }
    use info_param::*;
    let dma_buf = InfoValue::U32s(vec![khr::EXTERNAL_MEMORY_HANDLE_DMA_BUF_KHR]);
    let sync_fd = InfoValue::U32s(vec![khr::SEMAPHORE_HANDLE_SYNC_FD_KHR]);
    let binary = InfoValue::U32s(vec![SEMAPHORE_TYPE_BINARY_KHR]);
    let none = InfoValue::U32s(Vec::new());
    assert_eq!(ext::platform_info(PLATFORM_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR).unwrap(), dma_buf);
    assert_eq!(ext::device_info(&cpu, DEVICE_EXTERNAL_MEMORY_IMPORT_HANDLE_TYPES_KHR).unwrap(), dma_buf);
    assert_eq!(ext::platform_info(PLATFORM_SEMAPHORE_TYPES_KHR).unwrap(), binary);
    assert_eq!(ext::device_info(&cpu, DEVICE_SEMAPHORE_TYPES_KHR).unwrap(), binary);
    assert_eq!(ext::platform_info(PLATFORM_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR).unwrap(), sync_fd);
    assert_eq!(ext::device_info(&cpu, DEVICE_SEMAPHORE_IMPORT_HANDLE_TYPES_KHR).unwrap(), sync_fd);
    assert_eq!(ext::platform_info(PLATFORM_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR).unwrap(), none);
    assert_eq!(ext::device_info(&cpu, DEVICE_SEMAPHORE_EXPORT_HANDLE_TYPES_KHR).unwrap(), none);
    assert_eq!(none.size(), 0);
    assert_eq!(dma_buf.size(), 4);
}

#[test]
fn buffer_property_rules() {
    let ctx = cpu_context();
    let memfd = Memfd::create(c"not-a-dma-buf", 4096).unwrap();
    let create = |props: &MemProperties<'_>, flags, size, host: *mut u8| {
        // SAFETY: the host pointers given are refused before use, or NULL.
        unsafe { memory::create_buffer_with_properties(&ctx, props, flags, size, host) }
    };
    let fd = MemProperties { dma_buf: Some(memfd.as_fd()), devices: None };
    let list_only = MemProperties { dma_buf: None, devices: Some(vec![cpu_device()]) };
    assert_eq!(err_kind(create(&list_only, 0, 64, null_mut())), InvalidProperty);
    let empty_list = MemProperties { dma_buf: Some(memfd.as_fd()), devices: Some(Vec::new()) };
    assert_eq!(err_kind(create(&empty_list, 0, 64, null_mut())), InvalidProperty);
    let mut host = [0u8; 64];
    assert_eq!(err_kind(create(&fd, 0, 64, host.as_mut_ptr())), InvalidHostPtr);
    assert_eq!(
        err_kind(create(&fd, dmabridge::runtime::buffer::mem_flags::COPY_HOST_PTR, 64, null_mut())),
        InvalidValue
    );
    assert_eq!(err_kind(create(&fd, 0, 0, null_mut())), InvalidBufferSize);
    assert_eq!(err_kind(create(&fd, 0, 4096, null_mut())), InvalidValue, "a memfd is not a dma-buf");
    // Without a handle: a plain buffer, not an external one.
    let plain = create(&MemProperties::default(), 0, 64, null_mut()).unwrap();
    assert!(!memory::is_external(&plain));
    assert_eq!(memory::devices(&plain), None);
}

#[test]
fn acquire_and_release_rules() {
    let (ctx, q) = cpu_context_and_queue();
    // SAFETY: no host pointer.
    let plain = unsafe { Buffer::create(&ctx, 0, 64, null_mut()) }.unwrap();
    assert_eq!(err_kind(memory::enqueue_acquire(&q, &[], &[])), InvalidValue);
    assert_eq!(err_kind(memory::enqueue_release(&q, &[], &[])), InvalidValue);
    assert_eq!(err_kind(memory::enqueue_acquire(&q, std::slice::from_ref(&plain), &[])), InvalidMemObject);
    assert_eq!(err_kind(memory::enqueue_release(&q, &[plain], &[])), InvalidMemObject);
}

#[test]
fn semaphore_creation_rules() {
    let ctx = cpu_context();
    assert_eq!(err_kind(semaphore::create(&ctx, &SemaphoreProperties::default())), InvalidValue);
    let timeline = SemaphoreProperties { ty: Some(2), ..Default::default() };
    assert_eq!(err_kind(semaphore::create(&ctx, &timeline)), InvalidProperty);
    let export = SemaphoreProperties { export_types: Some(vec![khr::SEMAPHORE_HANDLE_SYNC_FD_KHR.into()]), ..binary() };
    assert_eq!(err_kind(semaphore::create(&ctx, &export)), InvalidProperty);
    let empty = SemaphoreProperties { devices: Some(Vec::new()), ..binary() };
    assert_eq!(err_kind(semaphore::create(&ctx, &empty)), InvalidProperty);
    // An empty export list asks for nothing.
    let no_export = SemaphoreProperties { export_types: Some(Vec::new()), ..binary() };
    let s = semaphore::create(&ctx, &no_export).unwrap();
    assert!(Arc::ptr_eq(s.context(), &ctx));
    assert_eq!(s.devices().len(), 1);
    assert_eq!(s.info(semaphore_info::TYPE).unwrap(), InfoValue::U32(SEMAPHORE_TYPE_BINARY_KHR));
    assert_eq!(s.info(semaphore_info::PAYLOAD).unwrap(), InfoValue::U64(0));
    assert_eq!(s.info(semaphore_info::EXPORT_HANDLE_TYPES).unwrap(), InfoValue::U32s(Vec::new()));
    assert_eq!(s.info(semaphore_info::DEVICE_HANDLE_LIST).unwrap(), InfoValue::DeviceIds(vec![cpu_device()]));
    assert_eq!(err_kind(s.info(0x4242)), InvalidValue);
}

#[test]
fn semaphore_enqueue_rules() {
    let (ctx, q) = cpu_context_and_queue();
    let (other, other_q) = cpu_context_and_queue();
    let s = semaphore::create(&ctx, &binary()).unwrap();
    assert_eq!(err_kind(semaphore::enqueue_wait(&q, &[], &[])), InvalidValue);
    assert_eq!(err_kind(semaphore::enqueue_signal(&q, &[], &[])), InvalidValue);
    assert_eq!(err_kind(semaphore::enqueue_signal(&other_q, std::slice::from_ref(&s), &[])), InvalidContext);
    assert_eq!(err_kind(semaphore::enqueue_wait(&other_q, std::slice::from_ref(&s), &[])), InvalidContext);
    let foreign = Event::user(&other);
    assert_eq!(err_kind(semaphore::enqueue_signal(&q, std::slice::from_ref(&s), &[foreign])), InvalidContext);
    // No signal pending: refused, and nothing consumed by a refusal.
    assert_eq!(err_kind(semaphore::enqueue_wait(&q, std::slice::from_ref(&s), &[])), InvalidOperation);
    let t = semaphore::create(&ctx, &binary()).unwrap();
    semaphore::enqueue_signal(&q, std::slice::from_ref(&t), &[]).unwrap();
    assert_eq!(err_kind(semaphore::enqueue_wait(&q, &[t.clone(), s.clone()], &[])), InvalidOperation);
    Event::wait(&[semaphore::enqueue_wait(&q, std::slice::from_ref(&t), &[]).unwrap()]).unwrap();
    assert_eq!(err_kind(semaphore::enqueue_wait(&q, &[t], &[])), InvalidOperation, "the wait consumed it");
}

/// A signal with a wait list: the wait on the semaphore, and the commands
/// behind it, start only once the user event completes.
#[test]
fn a_wait_holds_the_queue_until_the_signal() {
    let (ctx, q) = cpu_context_and_queue();
    let s = semaphore::create(&ctx, &binary()).unwrap();
    let gate = Event::user(&ctx);
    let other = Queue::new(&ctx, &cpu_device(), Default::default()).unwrap();
    semaphore::enqueue_signal(&other, std::slice::from_ref(&s), std::slice::from_ref(&gate)).unwrap();
    semaphore::enqueue_wait(&q, std::slice::from_ref(&s), &[]).unwrap();
    let after = q.enqueue_marker(&[]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_ne!(after.status(), EventStatus::Complete);
    assert_eq!(s.payload(), 0);
    gate.set_user_status(0).unwrap();
    Event::wait(&[after]).unwrap();
}

/// An imported pollable fd (an eventfd standing in for a sync_file) holds
/// the queue until it is readable; the fd given may be closed after the
/// import, and a re-import replaces the fence.
#[test]
fn an_imported_fence_holds_the_queue_until_readable() {
    let (ctx, q) = cpu_context_and_queue();
    let fence = EventFd::new().unwrap();
    let s = semaphore::create(&ctx, &SemaphoreProperties { sync_fd: Some(fence.as_fd()), ..binary() }).unwrap();
    semaphore::enqueue_wait(&q, std::slice::from_ref(&s), &[]).unwrap();
    let after = q.enqueue_marker(&[]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_ne!(after.status(), EventStatus::Complete);
    fence.signal(1).unwrap();
    Event::wait(&[after]).unwrap();
    // Re-imported: a fence already signalled lets the next wait through.
    s.reimport_sync_fd(fence.as_fd()).unwrap();
    assert_eq!(s.payload(), 1);
    Event::wait(&[semaphore::enqueue_wait(&q, &[s], &[]).unwrap()]).unwrap();
}

/// A wait whose queue is released before its fence signals ends (its
/// status `CL_INVALID_COMMAND_QUEUE`), so the release returns.
#[test]
fn a_released_queue_ends_its_fence_wait() {
    let (ctx, q) = cpu_context_and_queue();
    let fence = EventFd::new().unwrap();
    let s = semaphore::create(&ctx, &SemaphoreProperties { sync_fd: Some(fence.as_fd()), ..binary() }).unwrap();
    let waited = semaphore::enqueue_wait(&q, &[s], &[]).unwrap();
    drop(q);
    assert!(Event::wait(&[waited]).is_err());
}

fn out_of_order_queue(ctx: &Arc<dmabridge::runtime::context::Context>) -> Arc<Queue> {
    let props = QueueProps::from_bits(properties::OUT_OF_ORDER_EXEC_MODE_ENABLE).unwrap();
    Queue::new(ctx, &cpu_device(), props).unwrap()
}

/// On an out-of-order queue a signal with no wait list waits for every
/// command enqueued before it (the extension's order), here one held by a
/// user event; the commands after it wait for the signal.
#[test]
fn out_of_order_a_signal_waits_for_the_commands_before_it() {
    let ctx = cpu_context();
    let q = out_of_order_queue(&ctx);
    let s = semaphore::create(&ctx, &binary()).unwrap();
    let gate = Event::user(&ctx);
    let held = q.enqueue(command_type::NATIVE_KERNEL, std::slice::from_ref(&gate), false, Box::new(|| Ok(()))).unwrap();
    let signal = semaphore::enqueue_signal(&q, std::slice::from_ref(&s), &[]).unwrap();
    let after = q.enqueue(command_type::NATIVE_KERNEL, &[], false, Box::new(|| Ok(()))).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_ne!(signal.status(), EventStatus::Complete, "the signal ran before the command enqueued before it");
    assert_ne!(after.status(), EventStatus::Complete, "a command after the signal ran before it");
    assert_eq!(s.payload(), 0);
    gate.set_user_status(0).unwrap();
    Event::wait(&[held, signal, after]).unwrap();
    assert_eq!(s.payload(), 1);
}

/// On an out-of-order queue a wait with no wait list starts only after the
/// commands enqueued before it, and the commands after it start only after
/// the wait (here on a fence that is signalled last).
#[test]
fn out_of_order_a_wait_is_ordered_with_the_commands_around_it() {
    let ctx = cpu_context();
    let q = out_of_order_queue(&ctx);
    let signalled = EventFd::new().unwrap();
    signalled.signal(1).unwrap();
    let s = semaphore::create(&ctx, &SemaphoreProperties { sync_fd: Some(signalled.as_fd()), ..binary() }).unwrap();
    let gate = Event::user(&ctx);
    let held = q.enqueue(command_type::NATIVE_KERNEL, std::slice::from_ref(&gate), false, Box::new(|| Ok(()))).unwrap();
    let wait = semaphore::enqueue_wait(&q, std::slice::from_ref(&s), &[]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_ne!(wait.status(), EventStatus::Complete, "the wait ran before the command enqueued before it");
    gate.set_user_status(0).unwrap();
    Event::wait(&[held, wait]).unwrap();

    let fence = EventFd::new().unwrap();
    let t = semaphore::create(&ctx, &SemaphoreProperties { sync_fd: Some(fence.as_fd()), ..binary() }).unwrap();
    let wait = semaphore::enqueue_wait(&q, std::slice::from_ref(&t), &[]).unwrap();
    let after = q.enqueue(command_type::NATIVE_KERNEL, &[], false, Box::new(|| Ok(()))).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_ne!(after.status(), EventStatus::Complete, "a command after the wait ran before its fence signalled");
    fence.signal(1).unwrap();
    Event::wait(&[wait, after]).unwrap();
}
