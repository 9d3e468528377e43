//! udmabuf: turn memfd pages into a dma-buf (`/dev/udmabuf`).
//!
//! The kernel's rules are checked up front so the caller learns which one was
//! broken instead of a bare `EINVAL`: the memfd must carry `F_SEAL_SHRINK` and
//! must not carry `F_SEAL_WRITE`, offsets and sizes must be page multiples and
//! inside the file, the total must stay within the module's `size_limit_mb`
//! and a list within `list_limit` ranges. [`Udmabuf::create_unchecked`] skips
//! the checks (the kernel still enforces them), which lets tests show that the
//! checks and the kernel agree.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;

use rustix::fs::{Mode, OFlags, SealFlags};
use rustix::io::Errno;

use super::dma_buf::DmaBuf;
use super::ioctl::{ioctl_ptr, opcode, Opcode};
use super::{page_size, OsError};

const UDMABUF_FLAGS_CLOEXEC: u32 = 0x01;

#[repr(C)]
struct UdmabufCreate {
    memfd: u32,
    flags: u32,
    offset: u64,
    size: u64,
}

#[repr(C)]
struct UdmabufCreateItem {
    memfd: u32,
    pad: u32,
    offset: u64,
    size: u64,
}

#[repr(C)]
struct UdmabufCreateListHeader {
    flags: u32,
    count: u32,
}

const UDMABUF_CREATE: Opcode = opcode::write::<UdmabufCreate>(b'u', 0x42);
const UDMABUF_CREATE_LIST: Opcode = opcode::write::<UdmabufCreateListHeader>(b'u', 0x43);

/// Why udmabuf refused (or would refuse) to make a dma-buf.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UdmabufError {
    /// `/dev/udmabuf` does not exist.
    #[error(
        "no /dev/udmabuf: load the udmabuf module ({kmod} load udmabuf){demo}",
        kmod = crate::sys::hints::kmod(),
        demo = crate::sys::hints::checkout_only(" or run `make demo`, which uses the QEMU guest")
    )]
    NoDevice,
    /// `/dev/udmabuf` exists but cannot be opened read-write by this user.
    #[error("cannot open /dev/udmabuf ({0}): {join}, or run as root", join = crate::sys::hints::join_group())]
    NoAccess(Errno),
    /// The memfd lacks `F_SEAL_SHRINK`.
    #[error("the memfd has no F_SEAL_SHRINK seal: udmabuf pins its pages and refuses files that can shrink; add the seal with Memfd::add_seals(Seals::SHRINK)")]
    MissingShrinkSeal,
    /// The memfd carries `F_SEAL_WRITE`.
    #[error("the memfd carries F_SEAL_WRITE: udmabuf refuses write-sealed memfds; use one without that seal")]
    WriteSealed,
    /// Offset or size is not a page multiple, or the size is zero.
    #[error("offset {offset} and size {size} must be non-zero multiples of the page size ({page} bytes)")]
    Unaligned {
        /// Offset asked for.
        offset: u64,
        /// Size asked for.
        size: u64,
        /// The page size.
        page: u64,
    },
    /// The range runs past the end of the memfd.
    #[error(
        "range {offset}+{size} runs past the end of the memfd ({file_size} bytes); grow it with Memfd::set_size first"
    )]
    BeyondFile {
        /// Offset asked for.
        offset: u64,
        /// Size asked for.
        size: u64,
        /// The memfd's size.
        file_size: u64,
    },
    /// The total is larger than the module's `size_limit_mb`.
    #[error("{size} bytes exceed udmabuf's limit of {limit} bytes (size_limit_mb); boot with udmabuf.size_limit_mb=N or split the buffer")]
    OverSizeLimit {
        /// Total size asked for.
        size: u64,
        /// The limit in bytes.
        limit: u64,
    },
    /// More ranges than the module's `list_limit`, or none.
    #[error("{count} ranges: udmabuf takes 1 to {limit} ranges in one list (list_limit)")]
    BadRangeCount {
        /// Ranges asked for.
        count: usize,
        /// The module's limit.
        limit: u32,
    },
    /// A system call failed.
    #[error(transparent)]
    Os(#[from] OsError),
}

/// The udmabuf module's limits, read from `/sys/module/udmabuf/parameters`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Largest dma-buf in bytes (`size_limit_mb` × 1 MiB; default 64 MiB).
    pub size_limit: u64,
    /// Most ranges in one `UDMABUF_CREATE_LIST` (`list_limit`; default 1024).
    pub list_limit: u32,
}

impl Limits {
    /// Reads the limits of the running kernel (the kernel defaults when the
    /// parameters are not exported).
    ///
    /// Reads `size_limit_mb` and `list_limit` in `/sys/module/udmabuf/parameters`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::udmabuf::Limits;
    ///
    /// let limits = Limits::read();
    /// assert!(limits.size_limit >= 1 << 20);
    /// assert!(limits.list_limit >= 1);
    /// ```
    pub fn read() -> Limits {
        let param = |name: &str, default: u64| {
            std::fs::read_to_string(Path::new("/sys/module/udmabuf/parameters").join(name))
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .unwrap_or(default)
        };
        Limits { size_limit: param("size_limit_mb", 64) << 20, list_limit: param("list_limit", 1024) as u32 }
    }
}

/// One range of a memfd, for [`Udmabuf::create_list`].
#[derive(Debug, Clone, Copy)]
pub struct Range<'a> {
    /// The memfd.
    pub memfd: BorrowedFd<'a>,
    /// Byte offset in it (page multiple).
    pub offset: u64,
    /// Length (page multiple).
    pub size: u64,
}

/// An open `/dev/udmabuf`.
#[derive(Debug)]
pub struct Udmabuf {
    dev: OwnedFd,
    limits: Limits,
}

impl Udmabuf {
    /// The device node.
    pub const PATH: &'static str = "/dev/udmabuf";

    /// Opens `/dev/udmabuf` and reads the module's limits.
    ///
    /// Wraps `open(2)` of `/dev/udmabuf` (`O_RDWR | O_CLOEXEC`).
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::udmabuf::{Udmabuf, UdmabufError};
    ///
    /// match Udmabuf::open() {
    ///     Ok(u) => println!("udmabuf makes dma-bufs of up to {} bytes", u.limits().size_limit),
    ///     Err(e) => println!("{e}"),
    /// }
    /// if !std::path::Path::new(Udmabuf::PATH).exists() {
    ///     assert_eq!(Udmabuf::open().unwrap_err(), UdmabufError::NoDevice);
    /// }
    /// ```
    pub fn open() -> Result<Udmabuf, UdmabufError> {
        let dev = rustix::fs::open(Self::PATH, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(|e| match e {
            Errno::NOENT => UdmabufError::NoDevice,
            Errno::ACCESS | Errno::PERM => UdmabufError::NoAccess(e),
            e => OsError::new("open /dev/udmabuf", e).into(),
        })?;
        Ok(Udmabuf { dev, limits: Limits::read() })
    }

    /// `/dev/udmabuf` opened once for the process and kept open: the one
    /// handle through which the library exports (and by which it decides
    /// whether it can), so that asking and exporting keep one fd between
    /// them, opened by whichever comes first.
    ///
    /// ```
    /// use dmabridge::sys::udmabuf::Udmabuf;
    /// assert_eq!(Udmabuf::shared().is_ok(), Udmabuf::open().is_ok());
    /// ```
    pub fn shared() -> Result<&'static Udmabuf, &'static UdmabufError> {
        static SHARED: OnceLock<Result<Udmabuf, UdmabufError>> = OnceLock::new();
        SHARED.get_or_init(Udmabuf::open).as_ref()
    }

    /// The module's limits.
    ///
    /// No system call: read by [`Udmabuf::open`].
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::udmabuf::{Limits, Udmabuf};
    ///
    /// match Udmabuf::open() {
    ///     Ok(u) => assert_eq!(u.limits(), Limits::read()),
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Makes a dma-buf of `size` bytes of `memfd` from `offset`
    /// (`UDMABUF_CREATE`, close-on-exec), after checking the kernel's rules.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::{Udmabuf, UdmabufError};
    ///
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// let memfd = Memfd::create(c"pages", 8192)?;
    /// // udmabuf pins the pages, so the file must not be able to shrink.
    /// assert_eq!(udmabuf.create(memfd.as_fd(), 0, 8192).unwrap_err(), UdmabufError::MissingShrinkSeal);
    /// memfd.add_seals(Seals::SHRINK)?;
    /// assert!(matches!(udmabuf.create(memfd.as_fd(), 1, 4096), Err(UdmabufError::Unaligned { .. })));
    /// let buf = udmabuf.create(memfd.as_fd(), 0, 8192)?;
    /// assert_eq!(buf.size()?, 8192);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(&self, memfd: BorrowedFd<'_>, offset: u64, size: u64) -> Result<DmaBuf, UdmabufError> {
        self.check(&[Range { memfd, offset, size }])?;
        self.create_unchecked(memfd, offset, size)
    }

    /// `UDMABUF_CREATE` without the up-front checks: the kernel's own answer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::Memfd;
    /// use dmabridge::sys::udmabuf::{Udmabuf, UdmabufError};
    ///
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// // No F_SEAL_SHRINK: the kernel itself refuses with EINVAL.
    /// let memfd = Memfd::create(c"unsealed", 4096)?;
    /// match udmabuf.create_unchecked(memfd.as_fd(), 0, 4096) {
    ///     Err(UdmabufError::Os(e)) => assert_eq!(e.errno, rustix::io::Errno::INVAL),
    ///     other => panic!("expected EINVAL, got {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_unchecked(&self, memfd: BorrowedFd<'_>, offset: u64, size: u64) -> Result<DmaBuf, UdmabufError> {
        let mut arg = UdmabufCreate { memfd: memfd.as_raw_fd() as u32, flags: UDMABUF_FLAGS_CLOEXEC, offset, size };
        // SAFETY: UDMABUF_CREATE reads one `struct udmabuf_create`, mirrored
        // by `UdmabufCreate`; the memfd is borrowed for the whole call.
        let fd =
            unsafe { ioctl_ptr(self.dev.as_fd(), UDMABUF_CREATE, &mut arg) }.map_err(OsError::tag("UDMABUF_CREATE"))?;
        // SAFETY: on success the ioctl returns a new fd owned by nobody else.
        Ok(DmaBuf::from_kernel(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Makes one dma-buf from several memfd ranges (`UDMABUF_CREATE_LIST`),
    /// after checking the kernel's rules for each range and for the total.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::{Range, Udmabuf, UdmabufError};
    ///
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// let (a, b) = (Memfd::create(c"a", 8192)?, Memfd::create(c"b", 4096)?);
    /// a.add_seals(Seals::SHRINK)?;
    /// b.add_seals(Seals::SHRINK)?;
    /// let ranges = [
    ///     Range { memfd: a.as_fd(), offset: 4096, size: 4096 },
    ///     Range { memfd: b.as_fd(), offset: 0, size: 4096 },
    /// ];
    /// assert_eq!(udmabuf.create_list(&ranges)?.size()?, 8192);
    /// assert!(matches!(udmabuf.create_list(&[]), Err(UdmabufError::BadRangeCount { count: 0, .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_list(&self, ranges: &[Range<'_>]) -> Result<DmaBuf, UdmabufError> {
        self.check(ranges)?;
        self.create_list_unchecked(ranges)
    }

    /// `UDMABUF_CREATE_LIST` without the up-front checks.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::os::fd::AsFd;
    /// use dmabridge::sys::memfd::{Memfd, Seals};
    /// use dmabridge::sys::udmabuf::{Range, Udmabuf, UdmabufError};
    ///
    /// # let Some(udmabuf) = dmabridge::sys::doc_support::or_skip(Udmabuf::open()) else { return Ok(()) };
    /// let memfd = Memfd::create(c"list", 8192)?;
    /// memfd.add_seals(Seals::SHRINK)?;
    /// let ranges = [
    ///     Range { memfd: memfd.as_fd(), offset: 0, size: 4096 },
    ///     Range { memfd: memfd.as_fd(), offset: 4096, size: 4096 },
    /// ];
    /// assert_eq!(udmabuf.create_list_unchecked(&ranges)?.size()?, 8192);
    /// // A range past the end of the file: the kernel's own EINVAL.
    /// let past = [Range { memfd: memfd.as_fd(), offset: 8192, size: 4096 }];
    /// match udmabuf.create_list_unchecked(&past) {
    ///     Err(UdmabufError::Os(e)) => assert_eq!(e.errno, rustix::io::Errno::INVAL),
    ///     other => panic!("expected EINVAL, got {other:?}"),
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create_list_unchecked(&self, ranges: &[Range<'_>]) -> Result<DmaBuf, UdmabufError> {
        // The kernel reads a header followed by `count` items: lay them out in
        // one u64-aligned buffer (both structs have 8-byte alignment needs at
        // most, and the header is 8 bytes, so items start aligned).
        // The count is a u32 in the header: a longer list would be cut short.
        let count = u32::try_from(ranges.len())
            .map_err(|_| UdmabufError::BadRangeCount { count: ranges.len(), limit: u32::MAX })?;
        let hdr = std::mem::size_of::<UdmabufCreateListHeader>();
        let item = std::mem::size_of::<UdmabufCreateItem>();
        let mut buf = vec![0u64; (hdr + item * ranges.len()).div_ceil(8)];
        let base = buf.as_mut_ptr().cast::<u8>();
        // SAFETY: `buf` has room for the header and every item (sized above),
        // is 8-byte aligned, and each write stays inside it.
        unsafe {
            base.cast::<UdmabufCreateListHeader>()
                .write(UdmabufCreateListHeader { flags: UDMABUF_FLAGS_CLOEXEC, count });
            for (i, r) in ranges.iter().enumerate() {
                base.add(hdr + i * item).cast::<UdmabufCreateItem>().write(UdmabufCreateItem {
                    memfd: r.memfd.as_raw_fd() as u32,
                    pad: 0,
                    offset: r.offset,
                    size: r.size,
                });
            }
        }
        // SAFETY: UDMABUF_CREATE_LIST reads the header and `count` items that
        // follow it, all inside `buf`; the memfds are borrowed for the call.
        let fd = unsafe { ioctl_ptr(self.dev.as_fd(), UDMABUF_CREATE_LIST, base) }
            .map_err(OsError::tag("UDMABUF_CREATE_LIST"))?;
        // SAFETY: on success the ioctl returns a new fd owned by nobody else.
        Ok(DmaBuf::from_kernel(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// The kernel's rules (drivers/dma-buf/udmabuf.c), in the order it
    /// applies them.
    fn check(&self, ranges: &[Range<'_>]) -> Result<(), UdmabufError> {
        if ranges.is_empty() || ranges.len() > self.limits.list_limit as usize {
            return Err(UdmabufError::BadRangeCount { count: ranges.len(), limit: self.limits.list_limit });
        }
        let page = page_size() as u64;
        let mut total = 0u64;
        for r in ranges {
            if r.size == 0 || r.offset % page != 0 || r.size % page != 0 {
                return Err(UdmabufError::Unaligned { offset: r.offset, size: r.size, page });
            }
            total = total.saturating_add(r.size);
        }
        if total > self.limits.size_limit {
            return Err(UdmabufError::OverSizeLimit { size: total, limit: self.limits.size_limit });
        }
        for r in ranges {
            let seals = rustix::fs::fcntl_get_seals(r.memfd).map_err(OsError::tag("F_GET_SEALS"))?;
            if !seals.contains(SealFlags::SHRINK) {
                return Err(UdmabufError::MissingShrinkSeal);
            }
            if seals.contains(SealFlags::WRITE) {
                return Err(UdmabufError::WriteSealed);
            }
            let file_size = rustix::fs::fstat(r.memfd).map_err(OsError::tag("fstat memfd"))?.st_size as u64;
            if r.offset.checked_add(r.size).is_none_or(|end| end > file_size) {
                return Err(UdmabufError::BeyondFile { offset: r.offset, size: r.size, file_size });
            }
        }
        Ok(())
    }
}

impl AsFd for Udmabuf {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.dev.as_fd()
    }
}
