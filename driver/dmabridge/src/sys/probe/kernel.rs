//! The running kernel and its io_uring.

use rustix::io::Errno;
use serde::Serialize;

use super::memory::memlock_hint;
use super::{hint, Verdict};
use crate::sys::hints;

fn io_uring_nosys_hint() -> String {
    format!(
        "the kernel has no io_uring (CONFIG_IO_URING), which device completions wait on: use one with it{}",
        hints::checkout_only(", or `make demo`")
    )
}
const IO_URING_SYSCTL_HINT: &str =
    "sysctl -w kernel.io_uring_disabled=0, or add your user to the group in kernel.io_uring_group";
const IO_URING_SECCOMP_HINT: &str =
    "io_uring_setup was refused, likely by a seccomp filter: in a container, allow io_uring in its seccomp profile";

/// The running kernel (`uname`).
#[derive(Debug, Clone, Serialize)]
pub struct KernelReport {
    /// Release, as `uname -r` prints it.
    pub release: String,
    /// Machine, as `uname -m` prints it.
    pub machine: String,
    /// [`Verdict::Warning`] for kernels older than 5.6 (no DMA-BUF heaps).
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

/// Whether an io_uring can be set up (`io_uring_setup` with 2 entries).
#[derive(Debug, Clone, Serialize)]
pub struct IoUringReport {
    /// True if the ring was created.
    pub works: bool,
    /// The error if it was not.
    pub error: Option<String>,
    /// `/proc/sys/kernel/io_uring_disabled` (0, 1 or 2), if the kernel has it.
    pub disabled_sysctl: Option<u8>,
    /// Ok, missing (`ENOSYS`), no-access (`EPERM`) or warning (other errors).
    pub verdict: Verdict,
    /// How to fix it, when not ok.
    pub hint: Option<String>,
}

impl KernelReport {
    /// Reads `uname`.
    ///
    /// Wraps `uname(2)`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::KernelReport;
    ///
    /// let kernel = KernelReport::gather();
    /// assert_eq!(kernel.machine, std::env::consts::ARCH);
    /// assert!(kernel.release.starts_with(|c: char| c.is_ascii_digit()));
    /// ```
    pub fn gather() -> KernelReport {
        let u = rustix::system::uname();
        let release = u.release().to_string_lossy().into_owned();
        let machine = u.machine().to_string_lossy().into_owned();
        let mut nums = release.split(|c: char| !c.is_ascii_digit()).map(|s| s.parse::<u32>().unwrap_or(0));
        let version = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        let verdict = if version < (5, 6) { Verdict::Warning } else { Verdict::Ok };
        let hint = hint(
            verdict,
            format!(
                "DMA-BUF heaps need Linux 5.6 and dmabridge is tested on 6.12: use a newer kernel{}",
                hints::checkout_only(", or run `make demo`")
            ),
        );
        KernelReport { release, machine, verdict, hint }
    }
}

impl IoUringReport {
    /// Sets up and drops a ring of 2 entries.
    ///
    /// Wraps `io_uring_setup(2)`; reads `/proc/sys/kernel/io_uring_disabled`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::probe::{IoUringReport, Verdict};
    ///
    /// let uring = IoUringReport::gather();
    /// assert_eq!(uring.works, uring.error.is_none());
    /// assert_eq!(uring.works, uring.verdict == Verdict::Ok);
    /// ```
    pub fn gather() -> IoUringReport {
        let disabled_sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
            .ok()
            .and_then(|s| s.trim().parse::<u8>().ok());
        let err = match io_uring::IoUring::new(2) {
            Ok(_) => {
                return IoUringReport { works: true, error: None, disabled_sysctl, verdict: Verdict::Ok, hint: None }
            }
            Err(e) => e,
        };
        let (verdict, hint) = match Errno::from_io_error(&err) {
            Some(Errno::NOSYS) => (Verdict::Missing, io_uring_nosys_hint()),
            Some(Errno::PERM | Errno::ACCESS) => (
                Verdict::NoAccess,
                match disabled_sysctl {
                    Some(n @ 1..) => {
                        format!("io_uring is restricted (kernel.io_uring_disabled = {n}): {IO_URING_SYSCTL_HINT}")
                    }
                    _ => IO_URING_SECCOMP_HINT.to_owned(),
                },
            ),
            Some(Errno::NOMEM) => {
                (Verdict::Warning, format!("old kernels charge io_uring rings to memlock: {}", memlock_hint()))
            }
            _ => (Verdict::Warning, "io_uring_setup failed unexpectedly: see the error above, and dmesg".to_owned()),
        };
        IoUringReport { works: false, error: Some(err.to_string()), disabled_sysctl, verdict, hint: Some(hint) }
    }
}
