//! The process's own address space: which ranges are mapped (and how), and
//! keeping pages resident (`mlock`).
//!
//! Used by host-memory import (`cl_arm_import_memory_host`, seed 004): the
//! range must be mapped — a hole answers `CL_INVALID_OPERATION` — and its
//! pages are committed and pinned for the life of the buffer. Nothing here
//! touches the bytes of the range, so nothing here can fault.

use rustix::io::Errno;

use super::addr::HostAddr;
use super::{OsError, OsResult};

/// What the mappings covering a range allow (the intersection over all of
/// them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeAccess {
    /// Every page may be read.
    pub read: bool,
    /// Every page may be written.
    pub write: bool,
}

/// Whether every byte of `[addr, addr + len)` is mapped in this process:
/// `Ok(Some(access))` with the permissions every covering mapping grants,
/// `Ok(None)` if some page is not mapped (a hole, or a range past the end of
/// the address space). Pages that are mapped but not yet populated count as
/// mapped. An empty range is mapped (with full access).
///
/// Reads `/proc/self/maps`. Another thread may map or unmap pages right
/// after the answer: callers that rely on it must say so in their contract.
///
/// # Examples
///
/// ```
/// use dmabridge::sys::addr::HostAddr;
/// use dmabridge::sys::vm::mapped;
/// let data = vec![1u8; 10_000];
/// let access = mapped(HostAddr(data.as_ptr() as usize), data.len())?.expect("a live Vec is mapped");
/// assert!(access.read && access.write);
/// // Page 0 is never mapped.
/// assert_eq!(mapped(HostAddr(0), 4096)?, None);
/// assert_eq!(mapped(HostAddr(usize::MAX - 10), 100)?, None, "wraps around");
/// # Ok::<(), dmabridge::sys::OsError>(())
/// ```
pub fn mapped(addr: HostAddr, len: usize) -> OsResult<Option<RangeAccess>> {
    let addr = addr.0;
    let full = RangeAccess { read: true, write: true };
    if len == 0 {
        return Ok(Some(full));
    }
    let Some(end) = addr.checked_add(len) else {
        return Ok(None);
    };
    let maps = std::fs::read_to_string("/proc/self/maps")
        .map_err(|e| OsError::new("read /proc/self/maps", Errno::from_io_error(&e).unwrap_or(Errno::IO)))?;
    // The lines are sorted by address and do not overlap: walk them with a
    // cursor that must never find a gap before `end`.
    let mut cursor = addr;
    let mut access = full;
    for line in maps.lines() {
        let Some((lo, hi, perms)) = parse_line(line) else { continue };
        if hi <= cursor {
            continue;
        }
        if lo > cursor {
            return Ok(None);
        }
        access.read &= perms.as_bytes().first() == Some(&b'r');
        access.write &= perms.as_bytes().get(1) == Some(&b'w');
        cursor = hi;
        if cursor >= end {
            return Ok(Some(access));
        }
    }
    Ok(None)
}

/// `start-end perms ...` of one `/proc/self/maps` line.
fn parse_line(line: &str) -> Option<(usize, usize, &str)> {
    let mut fields = line.split_ascii_whitespace();
    let (lo, hi) = fields.next()?.split_once('-')?;
    let perms = fields.next()?;
    Some((usize::from_str_radix(lo, 16).ok()?, usize::from_str_radix(hi, 16).ok()?, perms))
}

/// Commits and locks the pages covering `[addr, addr + len)` in memory
/// (`mlock(2)`): every page is faulted in now (a private writable mapping
/// gets its own copy of each page, breaking copy-on-write, so that the
/// physical page stays the one the process sees) and is never swapped out
/// until [`unlock`]. Locks do not nest: one `unlock` of a page undoes every
/// `lock` of it.
///
/// Errors: `ENOMEM` if part of the range is not mapped or the lock would
/// exceed `RLIMIT_MEMLOCK`, `EPERM` without the right to lock memory.
///
/// Safe: locking changes neither the bytes nor the mappings of the range.
///
/// # Examples
///
/// ```
/// use dmabridge::sys::addr::HostAddr;
/// use dmabridge::sys::vm::{lock, unlock};
/// let data = vec![1u8; 4096];
/// // Where RLIMIT_MEMLOCK allows it.
/// if lock(HostAddr(data.as_ptr() as usize), data.len()).is_ok() {
///     unlock(HostAddr(data.as_ptr() as usize), data.len())?;
/// }
/// assert!(lock(HostAddr(0), 4096).is_err(), "page 0 is not mapped");
/// # Ok::<(), dmabridge::sys::OsError>(())
/// ```
pub fn lock(addr: HostAddr, len: usize) -> OsResult<()> {
    // SAFETY: mlock only faults pages in and marks them unevictable; it
    // reads no byte the program sees differently, and the kernel checks the
    // range (ENOMEM for unmapped pages).
    unsafe { rustix::mm::mlock(addr.as_ptr().cast(), len) }.map_err(OsError::tag("mlock"))
}

/// Unlocks the pages covering `[addr, addr + len)` (`munlock(2)`): they may
/// be swapped out again.
///
/// Errors: `ENOMEM` if part of the range is not mapped.
///
/// Safe: unlocking changes neither the bytes nor the mappings of the range.
///
/// # Examples
///
/// ```
/// use dmabridge::sys::addr::HostAddr;
/// use dmabridge::sys::vm::unlock;
/// let data = vec![1u8; 4096];
/// unlock(HostAddr(data.as_ptr() as usize), data.len())?; // unlocking unlocked pages is fine
/// # Ok::<(), dmabridge::sys::OsError>(())
/// ```
pub fn unlock(addr: HostAddr, len: usize) -> OsResult<()> {
    // SAFETY: as in `lock`: munlock changes no byte and no mapping.
    unsafe { rustix::mm::munlock(addr.as_ptr().cast(), len) }.map_err(OsError::tag("munlock"))
}

/// How to raise `RLIMIT_MEMLOCK`, for the messages that name it.
///
/// # Examples
///
/// ```
/// assert!(dmabridge::sys::vm::memlock_fix().contains("memlock --raise BYTES"));
/// ```
pub fn memlock_fix() -> String {
    format!(
        "raise RLIMIT_MEMLOCK: `ulimit -l` (a shell and what it starts), `memlock` in \
         /etc/security/limits.conf (login sessions), `LimitMEMLOCK=` (a systemd service), or \
         `{} memlock --raise BYTES`",
        crate::sys::hints::kmod()
    )
}

/// Locking or pinning against `RLIMIT_MEMLOCK`: the limit, the bytes the
/// process has locked or pinned already, and the bytes asked for. Its
/// `Display` names all three and [`memlock_fix`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemlockShortfall {
    /// `RLIMIT_MEMLOCK` (the soft limit), bytes; `u64::MAX`: infinite.
    pub limit: u64,
    /// Bytes charged already (`VmLck`: `mlock`ed pages and VFIO-pinned ones).
    pub locked: u64,
    /// Bytes the operation needs charged.
    pub needed: u64,
}

impl std::fmt::Display for MemlockShortfall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limit = match self.limit {
            u64::MAX => "unlimited".to_owned(),
            n => format!("{n} bytes"),
        };
        write!(
            f,
            "RLIMIT_MEMLOCK is {}, {} are locked or pinned already and {} more are needed ({} in all); {}",
            limit,
            self.locked,
            self.needed,
            self.locked.saturating_add(self.needed),
            memlock_fix()
        )
    }
}

/// `Some` if charging `needed` more bytes against `RLIMIT_MEMLOCK` would
/// exceed it for this thread: the soft limit against what the process has
/// charged already (`VmLck`, `mm->locked_vm`, which both `mlock` and VFIO's
/// pinning add to), unless the thread holds `CAP_IPC_LOCK` (the kernel
/// checks the calling thread's capabilities: read from
/// `/proc/thread-self/status`) or the limit is infinite. Lets an operation
/// refuse before it locks or pins anything, naming the limit.
///
/// Reads `/proc/thread-self/status` and `getrlimit(2)`.
///
/// ```
/// use dmabridge::sys::vm::memlock_shortfall;
/// // Nothing more to charge never exceeds the limit.
/// assert_eq!(memlock_shortfall(0), None);
/// if let Some(s) = memlock_shortfall(u64::MAX / 2) {
///     assert!(s.to_string().contains("ulimit -l"));
/// }
/// ```
pub fn memlock_shortfall(needed: u64) -> Option<MemlockShortfall> {
    if has_capability("/proc/thread-self/status", CAP_IPC_LOCK) {
        return None;
    }
    let usage = memlock_usage(needed);
    (usage.limit != u64::MAX && usage.locked.saturating_add(needed) > usage.limit).then_some(usage)
}

/// `CAP_IPC_LOCK`: locking and pinning beyond `RLIMIT_MEMLOCK`.
pub(crate) const CAP_IPC_LOCK: u32 = 14;

/// True if bit `cap` is set in the effective capabilities (`CapEff`) of a
/// `status` file of procfs (`/proc/self/status`, `/proc/thread-self/status`);
/// false if it cannot be read.
pub(crate) fn has_capability(status: &str, cap: u32) -> bool {
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            let hex = s.lines().find_map(|l| l.strip_prefix("CapEff:"))?.trim().to_owned();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << cap) != 0)
}

/// The limit, what is charged and `needed`, whether or not it fits (an
/// infinite limit is `u64::MAX`): what a message about a refused lock or pin
/// names when the kernel refused it ([`memlock_shortfall`] is the forecast).
///
/// Reads `/proc/self/status` and `getrlimit(2)`.
///
/// ```
/// use dmabridge::sys::vm::memlock_usage;
/// let u = memlock_usage(4096);
/// assert_eq!(u.needed, 4096);
/// assert!(u.to_string().contains("LimitMEMLOCK"));
/// ```
pub fn memlock_usage(needed: u64) -> MemlockShortfall {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let locked_kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmLck:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    let limit = rustix::process::getrlimit(rustix::process::Resource::Memlock).current.unwrap_or(u64::MAX);
    MemlockShortfall { limit, locked: locked_kb.saturating_mul(1024), needed }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hole_between_two_mappings_is_not_mapped() {
        let page = crate::sys::page_size();
        // The kernel gives a freshly unmapped page to the next mmap of any
        // thread (this binary's tests run in parallel): a round whose hole
        // was taken meanwhile, as msync (ENOMEM on unmapped memory) tells,
        // proves nothing and runs again.
        for _round in 0..20 {
            // Three anonymous pages, the middle one unmapped.
            // SAFETY: a fresh private anonymous mapping that nothing else uses.
            let p = unsafe {
                rustix::mm::mmap_anonymous(
                    std::ptr::null_mut(),
                    3 * page,
                    rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                    rustix::mm::MapFlags::PRIVATE,
                )
            }
            .unwrap() as usize;
            // SAFETY: the middle page of our own mapping.
            unsafe { rustix::mm::munmap((p + page) as *mut _, page) }.unwrap();
            let seen = [mapped(HostAddr(p), 3 * page).unwrap(), mapped(HostAddr(p + page - 1), 2).unwrap()];
            // SAFETY: msync only asks the kernel about the range.
            let hole = unsafe { rustix::mm::msync((p + page) as *mut _, page, rustix::mm::MsyncFlags::ASYNC) };
            assert!(mapped(HostAddr(p), page).unwrap().is_some());
            assert!(mapped(HostAddr(p + 2 * page), page).unwrap().is_some());
            // SAFETY: the two remaining pages of our own mapping (never the
            // hole: it may be another thread's by now).
            unsafe {
                rustix::mm::munmap(p as *mut _, page).unwrap();
                rustix::mm::munmap((p + 2 * page) as *mut _, page).unwrap();
            }
            if hole == Err(rustix::io::Errno::NOMEM) {
                assert_eq!(seen, [None, None], "the range across the hole, one byte each side of its start");
                return;
            }
        }
        panic!("another thread's mmap took the hole 20 times in a row");
    }

    #[test]
    fn a_read_only_mapping_says_so() {
        let page = crate::sys::page_size();
        // SAFETY: a fresh private anonymous mapping that nothing else uses.
        let p = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                page,
                rustix::mm::ProtFlags::READ,
                rustix::mm::MapFlags::PRIVATE,
            )
        }
        .unwrap() as usize;
        assert_eq!(mapped(HostAddr(p), page).unwrap(), Some(RangeAccess { read: true, write: false }));
        // SAFETY: our own mapping.
        unsafe { rustix::mm::munmap(p as *mut _, page) }.unwrap();
    }
}
