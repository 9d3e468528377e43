//! The library reports what it cannot return (a failed device copy behind a
//! command's status, failed undo and drop paths) through the `log` facade,
//! never by writing to stderr itself: the application chooses where the
//! records go. This test installs a capturing logger for the test process.

use std::sync::{Arc, Mutex, OnceLock};

use dmabridge::error::{code, ClError, ClErrorKind, ClResult};
use dmabridge::runtime::backend::{self, Backend};
use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::runtime::platform::Platform;
use log::{Level, Log, Metadata, Record};

/// One record: level, target (the module that logged) and message.
type Captured = (Level, String, String);

/// Keeps every record of level warn and above.
struct Capture(Mutex<Vec<Captured>>);

impl Log for Capture {
    fn enabled(&self, m: &Metadata) -> bool {
        m.level() <= Level::Warn
    }

    fn log(&self, r: &Record) {
        if self.enabled(r.metadata()) {
            self.0.lock().unwrap().push((r.level(), r.target().to_string(), r.args().to_string()));
        }
    }

    fn flush(&self) {}
}

/// The process's logger, installed by the first test that asks for it.
fn capture() -> &'static Capture {
    static CAPTURE: OnceLock<&'static Capture> = OnceLock::new();
    CAPTURE.get_or_init(|| {
        let c: &'static Capture = Box::leak(Box::new(Capture(Mutex::new(Vec::new()))));
        log::set_logger(c).expect("no other logger in the host test process");
        log::set_max_level(log::LevelFilter::Warn);
        c
    })
}

/// The records logged so far whose message contains `needle`.
fn records_with(needle: &str) -> Vec<Captured> {
    capture().0.lock().unwrap().iter().filter(|(_, _, m)| m.contains(needle)).cloned().collect()
}

/// An engine whose every copy fails.
#[derive(Debug)]
struct Broken;

impl Backend for Broken {
    fn name(&self) -> &str {
        "broken"
    }
    fn pci_address(&self) -> Option<dmabridge::sys::pci::PciAddress> {
        None
    }
    fn max_transfer(&self) -> usize {
        4096
    }
    unsafe fn copy(&self, _: *mut u8, _: *const u8, _: usize) -> ClResult<()> {
        Err(ClError::new(ClErrorKind::OutOfResources, "the engine is broken (logging test)"))
    }
}

#[test]
fn a_failed_device_copy_is_logged_through_the_log_facade() {
    capture();
    let device = Arc::new(Device {
        index: 99,
        name: "broken-for-logging".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 1 << 20,
        max_alignment: 128,
        host_unified_memory: true,
        usm: Platform::get().cpu().usm,
        svm: 0,
        compute_units: 1,
        backend: Some(Arc::new(Broken)),
        dma_domain: None,
    });
    let src = [7u8; 100];
    let mut dst = [0u8; 100];
    // SAFETY: both arrays hold 100 bytes and are distinct; the engine does
    // not touch them anyway.
    let status = unsafe { backend::device_copy(&device, dst.as_mut_ptr(), src.as_ptr(), 100) };
    assert_eq!(status, Err(code::OUT_OF_RESOURCES));

    let got = records_with("the engine is broken (logging test)");
    assert_eq!(got.len(), 1, "exactly one record for the failed copy, got {got:?}");
    let (level, target, message) = &got[0];
    assert_eq!(*level, Level::Warn);
    assert!(target.starts_with("dmabridge::runtime::backend"), "logged by the backend layer, not {target}");
    assert!(
        message.contains("copy of 100 bytes on \"broken-for-logging\""),
        "the record says what failed where: {message}"
    );
    assert!(!message.starts_with("dmabridge:"), "the target names the crate; no stderr-style prefix: {message}");
    assert_eq!(dst, [0u8; 100], "the failed copy wrote nothing");
}
