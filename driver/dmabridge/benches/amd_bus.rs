//! `cl_amd_bus_addressable_memory` (seed 002), in the QEMU guest (it needs
//! a VFIO domain; `make bench` runs it there with edu 00:10.0 and 00:12.0
//! bound). Peers from the same run:
//!
//! 1. Make-resident of 64 MiB (`amd_bus::make_buffers_resident`: IOVA
//!    allocation, pinning and mapping of the surface and its signal page)
//!    against one raw `VFIO_IOMMU_MAP_DMA` of the same pages
//!    (`Container::map_dma_raw`), alternating, pages faulted in beforehand.
//!    Target: ≤ 1.2×.
//! 2. `WaitSignal`: the latency from the marker being written to the next
//!    command of the queue starting — woken by the remote device's
//!    interrupt (edu's MSI, raised after the marker is written) or, with no
//!    interrupt, by back-off polling — against a thread busy-polling the
//!    marker, and against a thread blocked in `poll()` on the remote's
//!    interrupt eventfd woken by the same interrupt (target: ≤ 1.5× that
//!    thread's latency); and the process's CPU time while a wait lasts 1 s,
//!    against the busy-polling thread's. Target: ≤ 1% of a core while
//!    waiting.

use std::os::fd::OwnedFd;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dmabridge::ext::amd_bus::{self, RemoteDma};
use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::event::Event;
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};
use dmabridge::sys::access::Access;
use dmabridge::sys::addr::{HostAddr, Iova};
use rustix::event::{PollFd, PollFlags};

fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn bus_buffer(ctx: &Arc<Context>, size: usize) -> Arc<Buffer> {
    // SAFETY: no host pointer.
    let b = unsafe { amd_bus::create_buffer(ctx, amd_bus::BUS_ADDRESSABLE, size, null_mut()) }.unwrap();
    let (surface, _) = amd_bus::cpu_pages(&b).unwrap();
    // SAFETY: the buffer's surface, not resident yet: fault every page in.
    unsafe { std::ptr::write_bytes(surface, 1, size) };
    b
}

fn make_resident_vs_raw_map(ctx: &Arc<Context>, q: &Arc<Queue>) {
    const SIZE: usize = 64 << 20;
    const RAW_IOVA: Iova = Iova(1 << 32);
    let domain = Platform::get().dma_domain().unwrap();
    let (mut ours, mut raw) = (Vec::new(), Vec::new());
    for round in 0..8 {
        let b = bus_buffer(ctx, SIZE);
        let (surface, _) = amd_bus::cpu_pages(&b).unwrap();
        let raw_map = || {
            let t = Instant::now();
            // SAFETY: the buffer's pages, reached only through raw pointers;
            // unmapped at once, before the buffer goes.
            unsafe { domain.container().map_dma_raw(RAW_IOVA, SIZE as u64, HostAddr::of(surface), Access::ReadWrite) }
                .unwrap();
            let d = t.elapsed();
            domain.container().unmap_dma(RAW_IOVA, SIZE as u64).unwrap();
            d
        };
        // Each goes first in every other round.
        if round % 2 == 0 {
            raw.push(raw_map());
        }
        let t = Instant::now();
        amd_bus::make_buffers_resident(q, std::slice::from_ref(&b), true, &[]).unwrap();
        ours.push(t.elapsed());
        if round % 2 == 1 {
            raw.push(raw_map());
        }
        drop(b);
    }
    let (o, r) = (median(ours), median(raw));
    println!("make-resident of 64 MiB (median of 8, pages faulted in beforehand, order alternating)");
    println!("  amd_bus::make_buffers_resident  {:>10}", ms(o));
    println!("  raw VFIO_IOMMU_MAP_DMA          {:>10}", ms(r));
    println!("  ratio                           {:>10.2}x (target <= 1.2x)", o.as_secs_f64() / r.as_secs_f64());
}

/// The time from `written` (set by whoever wrote the marker) to the next
/// command of the queue starting, for one wait.
fn wait_latency(q: &Arc<Queue>, b: &Arc<Buffer>, value: u32, signal: impl FnOnce() -> Instant) -> Duration {
    let started = Arc::new(Mutex::new(None));
    let wait = amd_bus::enqueue_wait_signal(q, b, value, &[]).unwrap();
    let s = started.clone();
    let next = q
        .enqueue(
            dmabridge::runtime::event::command_type::MARKER,
            &[],
            false,
            Box::new(move || {
                *s.lock().unwrap() = Some(Instant::now());
                Ok(())
            }),
        )
        .unwrap();
    // Let the wait settle into its sleep.
    std::thread::sleep(Duration::from_millis(20));
    let written = signal();
    Event::wait(&[wait, next]).unwrap();
    let at = started.lock().unwrap().expect("the next command ran");
    at.saturating_duration_since(written)
}

/// The latency of a thread blocked in `poll()` on `irq` (the remote's
/// interrupt eventfd; it never reads the count, which is the device's),
/// from the marker written to its wake-up by the interrupt raised after it.
fn blocked_thread_latency(irq: &OwnedFd, remote: &RemoteDma, write: impl Fn() -> Instant) -> Option<Duration> {
    let irq = irq.try_clone().unwrap();
    let woken = std::thread::spawn(move || {
        let mut fds = [PollFd::new(&irq, PollFlags::IN)];
        // Bounded: a thread not yet in poll() when the interrupt came and
        // went (its count read by the remote's waiter) misses it.
        let limit = rustix::time::Timespec { tv_sec: 2, tv_nsec: 0 };
        let n = rustix::event::poll(&mut fds, Some(&limit)).unwrap();
        (n > 0).then(Instant::now)
    });
    std::thread::sleep(Duration::from_millis(20));
    let t = write();
    remote.raise_irq().unwrap();
    Some(woken.join().unwrap()?.saturating_duration_since(t))
}

fn wait_signal(ctx: &Arc<Context>, q: &Arc<Queue>, remote: Option<(RemoteDma, OwnedFd)>) {
    let b = bus_buffer(ctx, 4096);
    amd_bus::make_buffers_resident(q, std::slice::from_ref(&b), true, &[]).unwrap();
    let (_, marker) = amd_bus::cpu_pages(&b).unwrap();
    let marker = marker as usize;
    let write = move |v: u32| {
        // SAFETY: the buffer's signal page, alive for this function.
        unsafe { std::ptr::write_volatile(marker as *mut u32, v) };
        Instant::now()
    };
    let value = std::cell::Cell::new(0u32);
    let next = || {
        value.set(value.get() + 1);
        value.get()
    };
    // The process's CPU time while a wait-signal command waits 1 s.
    let one_second = || {
        let v = next();
        let t0 = (Instant::now(), cpu_time());
        let wait = amd_bus::enqueue_wait_signal(q, &b, v, &[]).unwrap();
        std::thread::sleep(Duration::from_secs(1));
        let pct = 100.0 * (cpu_time() - t0.1).as_secs_f64() / t0.0.elapsed().as_secs_f64();
        write(v);
        Event::wait(&[wait]).unwrap();
        pct
    };
    println!("WaitSignal: marker written -> next command of the queue starts (median of 9)");
    let mut cpu = Vec::new();
    if let Some((remote, irq)) = &remote {
        let lat: Vec<Duration> = (0..9)
            .map(|_| {
                let v = next();
                wait_latency(q, &b, v, || {
                    let t = write(v);
                    remote.raise_irq().unwrap();
                    t
                })
            })
            .collect();
        let ours = median(lat);
        println!("  woken by the remote's MSI (edu {})          {:>10}", remote.address(), us(ours));
        // A poll() that wakes after the remote's waiter read the count finds
        // nothing and sleeps on (up to 2 s): that sample is lost, not counted.
        let lat: Vec<Duration> = (0..9)
            .filter_map(|_| {
                let v = next();
                blocked_thread_latency(irq, remote, || write(v))
            })
            .collect();
        let caught = lat.len();
        if caught == 0 {
            println!("  thread blocked in poll() on that MSI eventfd (peer): missed all 9 interrupts");
        } else {
            let peer = median(lat);
            println!("  thread blocked in poll() on that MSI eventfd (peer)   {:>10} ({caught} of 9 caught)", us(peer));
            println!(
                "  ratio                                                 {:>9.2}x (target <= 1.5x)",
                ours.as_secs_f64() / peer.as_secs_f64()
            );
        }
        cpu.push(("WaitSignal, interrupt source known (backstop 100 ms)", one_second()));
    }
    // Busy-polling peer: a thread spinning on the marker.
    let lat: Vec<Duration> = (0..9)
        .map(|_| {
            let v = next();
            let spin = std::thread::spawn(move || {
                // SAFETY: as above.
                while !amd_bus::signal_reached(unsafe { std::ptr::read_volatile(marker as *const u32) }, v) {
                    std::hint::spin_loop();
                }
                Instant::now()
            });
            std::thread::sleep(Duration::from_millis(20));
            let t = write(v);
            spin.join().unwrap().saturating_duration_since(t)
        })
        .collect();
    println!("  busy-polling thread (peer)                            {:>10}", us(median(lat)));
    drop(remote);
    let lat: Vec<Duration> = (0..9)
        .map(|_| {
            let v = next();
            wait_latency(q, &b, v, || write(v))
        })
        .collect();
    println!("  no interrupt source: back-off polling (<= 20 ms)       {:>10}", us(median(lat)));
    cpu.push(("WaitSignal, no interrupt source (polling <= 20 ms)", one_second()));

    let stop = Arc::new(AtomicBool::new(false));
    let v = next();
    let t0 = (Instant::now(), cpu_time());
    let spin = std::thread::spawn({
        let stop = stop.clone();
        move || {
            // SAFETY: as above.
            while !amd_bus::signal_reached(unsafe { std::ptr::read_volatile(marker as *const u32) }, v)
                && !stop.load(Ordering::Relaxed)
            {
                std::hint::spin_loop();
            }
        }
    });
    std::thread::sleep(Duration::from_secs(1));
    let pct = 100.0 * (cpu_time() - t0.1).as_secs_f64() / t0.0.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    spin.join().unwrap();
    cpu.push(("busy-polling thread (peer)", pct));
    println!("CPU time of the process while waiting 1 s for the marker (target <= 1% of a core)");
    for (what, pct) in cpu {
        println!("  {what:<54} {pct:>6.2}% of a core");
    }
}

fn main() {
    let p = Platform::get();
    if p.dma_domain().is_none() {
        println!(
            "amd_bus: no VFIO domain here; `make bench` runs this in the QEMU guest (--edu 3, 00:10.0 and 00:12.0 \
             bound to vfio-pci)"
        );
        return;
    }
    let ctx = Context::new(std::slice::from_ref(p.cpu())).unwrap();
    let q = Queue::new(&ctx, p.cpu(), QueueProps::default()).unwrap();
    make_resident_vs_raw_map(&ctx, &q);
    let edus: Vec<_> = p.devices().iter().filter(|d| d.name.starts_with("edu ")).collect();
    let remote = edus.last().and_then(|d| {
        let irq = d.backend()?.into_edu()?.edu().interrupt_fd().ok()?;
        Some((RemoteDma::open(d.pci_address()?).ok()?, irq))
    });
    wait_signal(&ctx, &q, remote);
}
