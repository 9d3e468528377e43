//! What a C user learns about a failed call besides its code.
//!
//! The core's errors carry a message naming the argument, the limit or the
//! kernel's errno and the fix; a C caller sees only the code. Two ways out:
//!
//! - the `pfn_notify` of `clCreateContext*`: when a call that names a
//!   context (directly, or through a queue, buffer, event, program or kernel
//!   of it) fails with a message, the context's callback gets the message
//!   (`errinfo`, NUL-terminated; `private_info` NULL, `cb` 0). It is called
//!   on the failing thread after the call's body has returned, so no lock
//!   or handle borrow of the ICD is held (it may call back into the ICD),
//!   and before the entry point returns;
//! - `DMABRIDGE_LOG=error|warn|info|debug|trace`: unless the application
//!   installed a `log` logger of its own, the ICD installs one that prints
//!   the records of that level and above to stderr — the messages of
//!   failed calls at `warn` (with the entry point's name), and the core's
//!   own records.
//!
//! The note of a call lives in the thread's state (`per_thread.rs`), which
//! each entry point saves and restores (`Call::begin`, `Call::end`), so a
//! nested call (from a callback) keeps its own.

use std::ffi::{c_char, c_void, CString};
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use opencl_sys::cl_int;

use crate::per_thread::{self, PerThread};

/// The `pfn_notify` of `clCreateContext*`.
pub type NotifyFn = unsafe extern "C" fn(*const c_char, *const c_void, usize, *mut c_void);

/// A context's `pfn_notify` and its `user_data`.
#[derive(Debug, Clone, Copy)]
pub struct Notifier {
    f: Option<NotifyFn>,
    user_data: *mut c_void,
}

// SAFETY: `user_data` is an opaque word only passed back to the
// application's callback; OpenCL lets the callback run on any thread (the
// application made it thread-safe, the spec says so for `pfn_notify`).
unsafe impl Send for Notifier {}
// SAFETY: as above: the word is never dereferenced here.
unsafe impl Sync for Notifier {}

impl Notifier {
    /// No callback.
    pub const NONE: Notifier = Notifier { f: None, user_data: std::ptr::null_mut() };

    /// The callback `f` (if any) with `user_data`.
    pub fn new(f: Option<NotifyFn>, user_data: *mut c_void) -> Notifier {
        Notifier { f, user_data }
    }
}

/// What the current call has noted: the context's notifier (the first
/// context-bearing handle it looked up) and whether a message is pending.
#[derive(Clone, Copy)]
pub(crate) struct Note {
    notifier: Notifier,
    message: bool,
}

impl Note {
    /// Nothing noted.
    pub(crate) const FRESH: Note = Note { notifier: Notifier::NONE, message: false };
}

/// The last error message of the current call, with its code.
pub(crate) type Message = Option<(cl_int, String)>;

/// Notes the notifier of the context a call's handle belongs to (the first
/// one of the call counts: every handle of one call is of one context).
/// Nothing to do, and no thread-local touched, for a context without one.
#[inline]
pub(crate) fn note_context(n: Notifier) {
    if n.f.is_none() {
        return;
    }
    per_thread::with(|t| note_context_in(t, n));
}

/// [`note_context`] on this thread's state `t`.
#[inline]
pub(crate) fn note_context_in(t: &PerThread, n: Notifier) {
    if n.f.is_none() {
        return;
    }
    let mut note = t.note.get();
    if note.notifier.f.is_none() {
        note.notifier = n;
        t.note.set(note);
    }
}

/// Notes a core error's message as the current call's (its code `code`).
pub(crate) fn note_error(code: cl_int, message: String) {
    per_thread::with(|t| {
        *t.message.borrow_mut() = Some((code, message));
        t.note.set(Note { message: true, ..t.note.get() });
    });
}

/// The state of the enclosing call, put back by [`Call::end`].
pub(crate) struct Call {
    /// This thread's state (NULL if it could not be reached): found once
    /// per call, as each thread-local access of a shared library is a call
    /// into the dynamic linker (see `per_thread.rs`). A raw pointer, so
    /// `Call` stays on its thread.
    state: *const PerThread,
    outer: Note,
}

impl Call {
    /// A fresh note for a call starting now.
    #[inline]
    pub(crate) fn begin() -> Call {
        let state = per_thread::pointer();
        // SAFETY: this thread's pointer, during this call.
        let outer = match unsafe { per_thread::with_pointer(state) } {
            Some(t) => t.note.replace(Note::FRESH),
            None => Note::FRESH,
        };
        Call { state, outer }
    }

    /// This thread's state, for the lookups of the call (none while the
    /// thread is exiting).
    #[inline]
    pub(crate) fn state(&self) -> Option<&PerThread> {
        // SAFETY: taken on this thread by `begin`; `Call` is neither `Send`
        // nor `Sync` and lives on the stack of the entry point's call.
        unsafe { per_thread::with_pointer(self.state) }
    }

    /// Ends the call `name` that answered `result` (`CL_SUCCESS` or the
    /// error's code: a plain integer rather than a `Result`, which the hot
    /// entry points built in memory and read back wider than written, a
    /// store the CPU could not forward to the load): if it failed with the
    /// code of a noted message, logs the message (`warn`) and, if a
    /// context's notifier was noted, calls it with the message. The caller
    /// holds no lock or borrow of the ICD.
    #[inline(always)]
    pub(crate) fn end(self, name: &str, result: cl_int) {
        let Some(t) = self.state() else { return };
        let note = t.note.replace(self.outer);
        if note.message {
            report(t, note.notifier, name, result);
        }
    }
}

/// The end of a call that noted a message (out of line: the rare path of
/// [`Call::end`], which every entry point inlines).
#[cold]
#[inline(never)]
fn report(t: &PerThread, notifier: Notifier, name: &str, result: cl_int) {
    let Some((code, message)) = t.message.borrow_mut().take() else { return };
    // (A noted code is an error's, never `CL_SUCCESS`.)
    if result != code {
        return;
    }
    // A logger of the application's may panic: not across the boundary.
    let _ = catch_unwind(AssertUnwindSafe(|| log::warn!("{name}: {message}")));
    if let Some(f) = notifier.f {
        call(f, notifier.user_data, message);
    }
}

/// Calls `f` with `message` as `errinfo`.
fn call(f: NotifyFn, user_data: *mut c_void, message: String) {
    // A message with a NUL in it is cut there rather than lost.
    let text = CString::new(message).unwrap_or_else(|e| {
        let n = e.nul_position();
        let mut bytes = e.into_vec();
        bytes.truncate(n);
        CString::new(bytes).unwrap_or_default()
    });
    // (Nothing above panics: no unwinding leaves the entry point.)
    // SAFETY: the application's `pfn_notify` of clCreateContext, called as the OpenCL contract says: a NUL-terminated
    // `errinfo` valid for the call, no private info, and its own `user_data`. A C function does not unwind into Rust.
    unsafe { f(text.as_ptr(), std::ptr::null(), 0, user_data) };
}

/// Installs the stderr logger if `DMABRIDGE_LOG` asks for one (once per
/// process; nothing if the application has a logger of its own).
pub(crate) fn init_logging() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = catch_unwind(AssertUnwindSafe(|| {
            let Some(level) = std::env::var("DMABRIDGE_LOG").ok().and_then(|v| parse_level(&v)) else { return };
            if log::set_logger(&StderrLogger).is_ok() {
                log::set_max_level(level);
            }
        }));
    });
}

fn parse_level(v: &str) -> Option<log::LevelFilter> {
    match v.trim().to_ascii_lowercase().as_str() {
        "off" | "" => None,
        "error" => Some(log::LevelFilter::Error),
        "warn" => Some(log::LevelFilter::Warn),
        "info" => Some(log::LevelFilter::Info),
        "debug" => Some(log::LevelFilter::Debug),
        "trace" => Some(log::LevelFilter::Trace),
        other => {
            let _ = writeln!(
                std::io::stderr(),
                "dmabridge: DMABRIDGE_LOG={other:?} is no level (error, warn, info, debug, trace)"
            );
            None
        }
    }
}

/// Prints each record as one line on stderr.
struct StderrLogger;

impl log::Log for StderrLogger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        // One write per line, so that threads' lines do not interleave.
        let line = format!("dmabridge {} [{}] {}\n", record.level(), record.target(), record.args());
        let _ = std::io::stderr().write_all(line.as_bytes());
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse() {
        assert_eq!(parse_level("WARN"), Some(log::LevelFilter::Warn));
        assert_eq!(parse_level("off"), None);
        assert_eq!(parse_level("loud"), None);
    }
}
