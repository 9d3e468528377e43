//! Device loss that the engine finds itself, without the kernel's request
//! interrupt: a transfer whose completion never comes, and a register that
//! reads all ones (what a function that is gone answers). Either must leave
//! the device exactly as a removal does (`removal.rs`): its running and
//! queued commands end with a negative status, `CL_DEVICE_AVAILABLE` is
//! false, its VFIO device is closed, nothing hangs, and the other devices go
//! on — whichever user of the engine met the loss (a queue's copy, a remote
//! DMA of `cl_amd_bus_addressable_memory`).
//!
//! The test breaks both edus of its guest, so it runs alone in a guest of
//! its own (`make test-removal`, `make test-arm64-removal`).

use std::time::{Duration, Instant};

use dmabridge::error::code;
use dmabridge::ext::amd_bus::RemoteDma;
use dmabridge::ext::{usm, usm_commands};
use dmabridge::runtime::backend::edu_backend::TRANSFER_TIMEOUT;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::{Event, EventStatus};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::access::Access;
use dmabridge::sys::addr::{BusAddr, HostAddr};
use dmabridge_tests::{addr, EDU0, EDU1, IVSHMEM};

use super::removal::{cl_available, copies, cpu_buffer, device_at, end_status, pattern, reads_back, wait_running};

/// edu's "raise interrupt" register: the value written is ORed into the
/// interrupt status register, which keeps it until acknowledged.
const IRQ_RAISE: usize = 0x60;

/// The process's open VFIO device fds (a lost device's is closed).
fn vfio_device_fds() -> usize {
    let fds = std::fs::read_dir("/proc/self/fd").unwrap();
    let links = fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok());
    links.filter(|l| l.to_string_lossy() == "anon_inode:[vfio-device]").count()
}

/// Turns Bus Master of `bdf` off behind dmabridge's back, through sysfs:
/// the function can then neither DMA nor send its MSI, so a transfer under
/// way never completes.
fn bus_master_off(bdf: &str) {
    use std::os::unix::fs::FileExt;
    let f =
        std::fs::OpenOptions::new().read(true).write(true).open(format!("/sys/bus/pci/devices/{bdf}/config")).unwrap();
    let mut cmd = [0u8; 2];
    f.read_exact_at(&mut cmd, 4).unwrap();
    let off = u16::from_le_bytes(cmd) & !(1 << 2);
    f.write_all_at(&off.to_le_bytes(), 4).unwrap();
    println!("{bdf}: PCI_COMMAND {:#06x} -> {off:#06x}", u16::from_le_bytes(cmd));
}

/// edu 0000:00:10.0 misses a completion (its Bus Master turned off while a
/// queue's copy runs), then edu 0000:00:11.0's interrupt status register
/// reads all ones during a remote DMA (every status bit raised by hand:
/// edu keeps them until acknowledged). Each loses its device as a removal
/// does.
#[test]
#[ignore = "breaks both edus of its guest: run alone in a guest of its own by make test-removal"]
fn edu_lost_by_a_missed_completion_or_an_all_ones_register() {
    let p = Platform::get();
    let (edu0, edu1) = (device_at(p, EDU0), device_at(p, EDU1));
    assert!(cl_available(&edu0) && cl_available(&edu1));
    let data = pattern(8192, 3);
    let (cpu_q, cpu_b) = cpu_buffer(&data);
    let fds = vfio_device_fds();

    // 1. A missed completion, met by a queue's copy.
    let ctx = Context::new(&[p.cpu().clone(), edu0.clone()]).unwrap();
    let q = Queue::new(&ctx, &edu0, QueueProps::default()).unwrap();
    const LEN: usize = 32 * 1024;
    let src = usm::host_mem_alloc(&ctx, &[], LEN, 0).unwrap().as_ptr();
    let dst = usm::host_mem_alloc(&ctx, &[], LEN, 0).unwrap().as_ptr();
    let gate = Event::user(&ctx);
    // SAFETY: both ranges lie in their allocations, which outlive the
    // commands (waited for below); no reference into `dst` is used.
    let events = unsafe {
        [
            usm_commands::enqueue_memcpy(&q, false, dst, src, LEN, &[]).unwrap(),
            usm_commands::enqueue_memcpy(&q, false, dst, src, 4096, std::slice::from_ref(&gate)).unwrap(),
        ]
    };
    wait_running(&events[0]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(events[0].status(), EventStatus::Running, "the copy is under way when the engine stops");
    bus_master_off(EDU0);
    let t = Instant::now();
    gate.set_user_status(0).unwrap();
    for (i, e) in events.iter().enumerate() {
        let s = end_status(e);
        println!("command {i}: {s:?} after {:.1} s", t.elapsed().as_secs_f64());
        assert_eq!(s, EventStatus::Error(code::DEVICE_NOT_AVAILABLE), "command {i}");
    }
    assert!(t.elapsed() < TRANSFER_TIMEOUT + Duration::from_secs(10), "ended after {:?}", t.elapsed());
    assert!(!edu0.available() && !cl_available(&edu0), "CL_DEVICE_AVAILABLE is false");
    let why = edu0.lost().unwrap().to_string();
    assert!(why.contains("did not complete") && why.contains(EDU0), "{why}");
    assert_eq!(vfio_device_fds(), fds - 1, "its VFIO device is closed, as after a removal");
    let bar = device_at(p, IVSHMEM);
    assert!(!cl_available(&bar), "the BAR device whose engine it was");
    // SAFETY: as above.
    let late = unsafe { usm_commands::enqueue_memcpy(&q, true, dst, src, 4096, &[]) };
    assert_eq!(late.map(|_| ()).unwrap_err().code(), code::DEVICE_NOT_AVAILABLE, "a later command");
    reads_back(&cpu_q, &cpu_b, &data);
    copies(&edu1);
    usm::mem_free(&ctx, src).unwrap();
    usm::mem_free(&ctx, dst).unwrap();

    // 2. A register reading all ones, met by a remote DMA on the other edu.
    let remote = RemoteDma::open(addr(EDU1)).unwrap();
    let engine = edu1.backend().and_then(|b| b.into_edu()).unwrap();
    let regs = engine.edu().device().map_region(0).unwrap();
    let domain = p.dma_domain().unwrap();
    let host = pattern(LEN, 4);
    // SAFETY: the device only reads `host`.
    let span = unsafe { domain.map_span(HostAddr::of(host.as_ptr()), LEN, Access::Read) }.unwrap();
    let bus = BusAddr(span.iova_of(HostAddr::of(host.as_ptr())).0);
    let read = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            regs.write_u32(IRQ_RAISE, u32::MAX);
        });
        remote.read(bus, LEN)
    });
    let e = read.unwrap_err();
    println!("the remote DMA: {e}");
    assert_eq!(e.code(), code::DEVICE_NOT_AVAILABLE, "{e}");
    assert!(!edu1.available() && !cl_available(&edu1), "CL_DEVICE_AVAILABLE is false");
    let why = edu1.lost().unwrap().to_string();
    assert!(why.contains("all ones") && why.contains(EDU1), "{why}");
    assert_eq!(vfio_device_fds(), fds - 2, "its VFIO device is closed, as after a removal");
    assert_eq!(remote.read(bus, 64).unwrap_err().code(), code::DEVICE_NOT_AVAILABLE, "a later remote DMA");
    drop((span, regs));
    reads_back(&cpu_q, &cpu_b, &data);
    copies(p.cpu());
}
