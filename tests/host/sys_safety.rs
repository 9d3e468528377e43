//! Safe `sys` calls cannot crash the process: a memfd mapping cannot lose its
//! pages (the file shrinking under it, or the range reaching past its end,
//! would kill the process with SIGBUS at the first touch).
//!
//! Each scenario runs in a child process (this test binary again, running only
//! the ignored `child` test with the scenario in `SYS_SAFETY_SCENARIO`), so
//! that a SIGBUS shows up as a failed test instead of killing the suite.

use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use dmabridge::sys::memfd::{Memfd, Seals};
use dmabridge::sys::mmap::Access;

const SCENARIO: &str = "SYS_SAFETY_SCENARIO";
const PAGE: u64 = 4096;

/// Runs `scenario` in a child process and checks that it passed rather than
/// died of a signal.
fn in_child(scenario: &str) {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "sys_safety::child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(SCENARIO, scenario)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(signal) = out.status.signal() {
        panic!("scenario {scenario}: the process died of signal {signal} (SIGBUS is 7)\n{stdout}\n{stderr}");
    }
    assert!(out.status.success(), "scenario {scenario} failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("test result: ok. 1 passed"), "the child did not run the scenario:\n{stdout}");
}

/// The child side: one scenario, chosen by the environment.
#[test]
#[ignore = "run in a child process by the other tests of this module"]
fn child() {
    let scenario = std::env::var(SCENARIO).expect("run by in_child");
    let mut out = [0u8; 16];
    match scenario.as_str() {
        // The reproduction: map a 4 KiB memfd, shrink it to 0, read.
        "unsealed-shrink" => {
            let m = Memfd::create(c"shrink", PAGE).unwrap();
            match m.map(0, PAGE as usize, Access::Read) {
                Ok(map) => {
                    m.set_size(0).unwrap();
                    map.read_bytes(0, &mut out);
                    panic!("read {out:?} from a page that no longer exists");
                }
                Err(e) => assert!(e.to_string().contains("F_SEAL_SHRINK"), "{e}"),
            }
        }
        // Sealed: every way of shrinking the file is refused, the mapping
        // stays readable.
        "sealed-shrink" => {
            let m = Memfd::create(c"sealed", PAGE).unwrap();
            m.add_seals(Seals::SHRINK).unwrap();
            let map = m.map(0, PAGE as usize, Access::ReadWrite).unwrap();
            map.write_bytes(0, b"survives");
            assert!(m.set_size(0).is_err());
            assert_eq!(rustix::fs::ftruncate(m.as_fd(), 100), Err(rustix::io::Errno::PERM));
            // Through a second fd of the same file, as another process would.
            let other = rustix::fs::open(
                format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&m.as_fd())),
                rustix::fs::OFlags::RDWR,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
            assert_eq!(rustix::fs::ftruncate(&other, 0), Err(rustix::io::Errno::PERM));
            map.read_bytes(0, &mut out[..8]);
            assert_eq!(&out[..8], b"survives");
        }
        // A mapping that reaches past the end of the file.
        "past-eof" => {
            let m = Memfd::create(c"short", PAGE).unwrap();
            m.add_seals(Seals::SHRINK).unwrap();
            match m.map(0, 2 * PAGE as usize, Access::Read) {
                Ok(map) => {
                    map.read_bytes(PAGE as usize, &mut out);
                    panic!("read {out:?} past the end of the file");
                }
                Err(e) => assert!(e.to_string().contains("not inside"), "{e}"),
            }
        }
        other => panic!("unknown scenario {other}"),
    }
}

#[test]
fn shrinking_a_mapped_memfd_cannot_kill_the_process() {
    in_child("unsealed-shrink");
}

#[test]
fn a_sealed_memfd_keeps_its_mapped_pages() {
    in_child("sealed-shrink");
}

#[test]
fn a_mapping_cannot_reach_past_the_end_of_the_file() {
    in_child("past-eof");
}

/// The data-race half: `Mapping` is `Send + Sync` and writes take `&self`,
/// which is sound because every access is volatile (the bytes are shared
/// with other mappings, processes and devices anyway). Many threads writing
/// and reading the same words never see a torn aligned word.
#[test]
fn mappings_are_shared_between_threads_through_volatile_accesses() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    let m = Memfd::create(c"threads", PAGE).unwrap();
    m.add_seals(Seals::SHRINK).unwrap();
    let map = m.map(0, PAGE as usize, Access::ReadWrite).unwrap();
    send_sync(&map);
    std::thread::scope(|s| {
        for value in 1..=4u64 {
            let map = &map;
            s.spawn(move || {
                for _ in 0..1000 {
                    map.write_bytes(64, &value.to_ne_bytes().repeat(8));
                }
            });
        }
        let map = &map;
        s.spawn(move || {
            for _ in 0..1000 {
                let v = map.read_u64(64 + 8 * 3);
                assert!((0..=4).contains(&v), "torn word {v:#x}");
            }
        });
    });
}
