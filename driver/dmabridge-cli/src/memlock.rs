//! What a failure for want of locked memory says: the limit in force, what
//! the process holds already, the amount the failed step needed, and how a
//! service, a login or a shell raises it.
//!
//! VFIO pins every page it maps for a device and counts it against
//! `RLIMIT_MEMLOCK` (as `mlock` does); an unprivileged process has a small
//! limit (64 KiB or 8 MiB by default), and `ulimit -l` can raise it only up
//! to the hard limit, which an administrator sets: for a systemd service in
//! its unit, for logins in limits.d.

use dmabridge::sys::vfio::VfioError;

/// When `err` failed for want of locked memory: one paragraph for the user
/// with the figures read now and the fixes.
pub fn explain(err: &anyhow::Error) -> Option<String> {
    let needed = err.chain().find_map(|e| match e.downcast_ref::<VfioError>() {
        Some(VfioError::MemlockLimit { size, .. }) => Some(*size),
        _ => None,
    })?;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    Some(advice(limit.current, limit.maximum, dmabridge::sys::vm::memlock_usage(needed).locked, needed))
}

fn kib(n: u64) -> u64 {
    n.div_ceil(1024)
}

fn shown(limit: Option<u64>) -> String {
    limit.map_or_else(|| "unlimited".to_owned(), |n| format!("{} KiB", kib(n)))
}

/// The paragraph: `soft`/`hard` are the limits (`None`: unlimited), `locked`
/// what the process holds, `needed` what the failed step asked for more.
fn advice(soft: Option<u64>, hard: Option<u64>, locked: u64, needed: u64) -> String {
    // What a service needs at least, rounded up to a MiB so that the next
    // step has room too.
    let at_least = kib(locked + needed).div_ceil(1024).max(1);
    let shell = match hard {
        Some(h) if h < at_least << 20 => {
            format!("`ulimit -l` cannot go past the hard limit ({}) without root", shown(Some(h)))
        }
        _ => format!("in this shell: ulimit -l {}", at_least * 1024),
    };
    format!(
        "RLIMIT_MEMLOCK (locked memory, `ulimit -l`) is {} (hard limit {}); this process holds {} KiB locked or \
         pinned for DMA and the failed step needed {} KiB more, so it needs a limit of at least {} MiB. Fix: for a \
         systemd service, LimitMEMLOCK={}M (or infinity) in its unit; for the logins of group dmabridge, \
         `@dmabridge - memlock unlimited` in /etc/security/limits.d/dmabridge.conf ({}); {}; or as \
         root, {} memlock --pid PID --raise unlimited.",
        shown(soft),
        shown(hard),
        kib(locked),
        kib(needed),
        at_least,
        at_least,
        dmabridge::sys::hints::udev_notes(),
        shell,
        dmabridge::sys::hints::kmod()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use dmabridge::sys::addr::HostAddr;

    #[test]
    fn names_the_limit_the_amount_and_the_fixes() {
        let text = advice(Some(4096), Some(4096), 0, 8192);
        assert!(text.contains("RLIMIT_MEMLOCK (locked memory, `ulimit -l`) is 4 KiB (hard limit 4 KiB)"), "{text}");
        assert!(text.contains("needed 8 KiB more, so it needs a limit of at least 1 MiB"), "{text}");
        assert!(text.contains("LimitMEMLOCK=1M"), "{text}");
        assert!(text.contains("cannot go past the hard limit (4 KiB) without root"), "{text}");
        assert!(text.contains("/etc/security/limits.d/dmabridge.conf"), "{text}");
    }

    #[test]
    fn a_shell_below_its_hard_limit_may_raise_it_itself() {
        let text = advice(Some(64 << 10), None, 3 << 20, 2 << 20);
        assert!(text.contains("is 64 KiB (hard limit unlimited)"), "{text}");
        assert!(text.contains("holds 3072 KiB locked"), "{text}");
        assert!(text.contains("at least 5 MiB"), "{text}");
        assert!(text.contains("in this shell: ulimit -l 5120"), "{text}");
    }

    #[test]
    fn other_errors_are_not_explained() {
        let e = anyhow::Error::new(VfioError::NotPinnable { vaddr: HostAddr(0x1000) }).context("mapping");
        assert!(explain(&e).is_none());
        let e = anyhow::Error::new(VfioError::MemlockLimit { size: 8192, detail: String::new() }).context("mapping");
        assert!(explain(&e).is_some_and(|t| t.contains("needed 8 KiB more")));
    }
}
