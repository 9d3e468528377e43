use std::fmt;

pub use rustix::io::Errno;

/// A failed system call: which operation, and the errno the kernel returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OsError {
    /// What was being done, e.g. `"UDMABUF_CREATE"` or `"open /dev/udmabuf"`.
    pub op: &'static str,
    /// The kernel's answer.
    pub errno: Errno,
}

impl OsError {
    /// Pairs an errno with the operation that produced it.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::OsError;
    /// use rustix::io::Errno;
    ///
    /// let e = OsError::new("open /dev/udmabuf", Errno::NOENT);
    /// assert_eq!(e.errno, Errno::NOENT);
    /// assert!(e.to_string().starts_with("open /dev/udmabuf failed: "));
    /// assert!(e.to_string().ends_with("(errno 2)"));
    /// ```
    pub fn new(op: &'static str, errno: Errno) -> Self {
        Self { op, errno }
    }

    /// A closure for `map_err` that tags an errno with `op`.
    ///
    /// # Examples
    ///
    /// ```
    /// use dmabridge::sys::OsError;
    /// use rustix::io::Errno;
    ///
    /// let e = rustix::fs::stat("/no/such/file").map_err(OsError::tag("stat")).unwrap_err();
    /// assert_eq!(e, OsError::new("stat", Errno::NOENT));
    /// ```
    pub fn tag(op: &'static str) -> impl Fn(Errno) -> OsError {
        move |errno| OsError { op, errno }
    }
}

impl fmt::Display for OsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} (errno {})", self.op, self.errno, self.errno.raw_os_error())
    }
}

impl std::error::Error for OsError {}

impl From<OsError> for std::io::Error {
    fn from(e: OsError) -> Self {
        std::io::Error::from_raw_os_error(e.errno.raw_os_error())
    }
}

/// Result of a single system call.
pub type OsResult<T> = Result<T, OsError>;
