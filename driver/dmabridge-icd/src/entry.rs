//! The boundary every entry point runs through: `status` and `object`
//! run the body under `catch_unwind` (no panic crosses into C; a panic
//! answers `CL_OUT_OF_RESOURCES`), turn a [`ClError`] into its code and
//! write `errcode_ret`; the helpers below read the C-shaped arguments
//! (wait lists, out-parameters, `param_value` buffers) with the checks that
//! only C needs. Locks are taken with `dmabridge::sync::lock`, which never
//! panics on a poisoned lock, so one failure cannot turn every later call into a panic.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

use dmabridge::error::{ClError, ClResult};
use dmabridge::runtime::event::Event;
use opencl_sys::*;

use crate::api::event::EventObj;
use crate::handles::Kind;
use crate::per_thread::PerThread;
use crate::{handles, notify};

/// Result of an entry point's body: the value, or the CL error code.
pub(crate) type ClRes<T> = Result<T, cl_int>;

/// A core result as a C one: the error's code (the message goes to the
/// context's `pfn_notify` and the log: see `notify.rs`).
pub(crate) trait Cl<T> {
    /// The value, or the error's CL code.
    fn cl(self) -> ClRes<T>;
}

impl<T> Cl<T> for ClResult<T> {
    #[inline]
    fn cl(self) -> ClRes<T> {
        match self {
            Ok(v) => Ok(v),
            Err(e) => Err(noted(e)),
        }
    }
}

/// The code of `e`, its message noted for the call (out of line: the hot
/// entry points inline [`Cl::cl`], and their error path is the rare one).
#[cold]
#[inline(never)]
fn noted(e: ClError) -> cl_int {
    let code = e.code();
    notify::note_error(code, e.to_string());
    code
}

/// Runs `f` under `catch_unwind`, with this thread's state (found once for
/// the call: see `per_thread.rs`); if it failed with a message and named a
/// context, that context's `pfn_notify` is called once `f` has returned
/// (no lock or handle borrow of `f` is held then). The answer comes out
/// flat, as the C caller gets it: the value (`none` on error) and the code.
///
/// Inlined, with its rare paths out of line: on the hot USM and SVM entry
/// points the calls between the entry point, this frame, the handle borrow
/// and the body cost more instructions than their work (`catch_unwind`
/// itself costs nothing until a panic). Flat, because a `ClRes` that leaves
/// the unwinding frame goes through memory, and its discriminant, written
/// as 4 bytes, was read back together with the code as 8: a load the CPU
/// cannot forward from the store, which stalled every hot call.
#[inline(always)]
fn caught<T: Copy>(name: &str, none: T, f: impl FnOnce(Option<&PerThread>) -> ClRes<T>) -> (T, cl_int) {
    let call = notify::Call::begin();
    let flat = |r: ClRes<T>| match r {
        Ok(v) => (v, CL_SUCCESS),
        Err(code) => (none, code),
    };
    let (v, code) = match catch_unwind(AssertUnwindSafe(|| flat(f(call.state())))) {
        Ok(answer) => answer,
        Err(_) => (none, panicked(name)),
    };
    call.end(name, code);
    (v, code)
}

/// The answer of a call whose body panicked (logged).
#[cold]
#[inline(never)]
fn panicked(name: &str) -> cl_int {
    log::error!("{name}: panicked; answering CL_OUT_OF_RESOURCES");
    CL_OUT_OF_RESOURCES
}

/// Runs the body of an entry point that returns a `cl_int`.
pub(crate) fn status(name: &str, f: impl FnOnce() -> ClRes<()>) -> cl_int {
    caught(name, (), |_| f()).1
}

/// [`status`] of an entry point whose first argument is a handle of kind
/// `K`, borrowed for the call as [`handles::with`] does: the hot USM and
/// SVM entry points, which find the thread's state once for both.
#[inline(always)]
pub(crate) fn status_with<K: Kind>(name: &str, handle: *const c_void, f: impl FnOnce(&K) -> ClRes<()>) -> cl_int {
    caught(name, (), |state| handles::with_in(state, handle, f)).1
}

/// Runs the body of an entry point that returns an object (or pointer) and
/// stores the status in `errcode_ret`: NULL on error.
///
/// # Safety
/// `errcode_ret` is NULL or valid for a write of a `cl_int`.
pub(crate) unsafe fn object<T>(name: &str, errcode_ret: *mut cl_int, f: impl FnOnce() -> ClRes<*mut T>) -> *mut T {
    // SAFETY: the caller's contract.
    unsafe { object_of(caught(name, std::ptr::null_mut(), |_| f()), errcode_ret) }
}

/// [`object`] of an entry point whose first argument is a handle of kind
/// `K`, borrowed as in [`status_with`].
///
/// # Safety
/// `errcode_ret` is NULL or valid for a write of a `cl_int`.
#[inline(always)]
pub(crate) unsafe fn object_with<K: Kind, T>(
    name: &str,
    errcode_ret: *mut cl_int,
    handle: *const c_void,
    f: impl FnOnce(&K) -> ClRes<*mut T>,
) -> *mut T {
    let answer = caught(name, std::ptr::null_mut(), |state| handles::with_in(state, handle, f));
    // SAFETY: the caller's contract.
    unsafe { object_of(answer, errcode_ret) }
}

/// The answer of an object-returning entry point: the object (NULL on
/// error), the code stored in `errcode_ret`.
///
/// # Safety
/// `errcode_ret` is NULL or valid for a write of a `cl_int`.
#[inline(always)]
unsafe fn object_of<T>((ptr, code): (*mut T, cl_int), errcode_ret: *mut cl_int) -> *mut T {
    // SAFETY: the caller's contract.
    unsafe { write_opt(errcode_ret, code) };
    ptr
}

/// An entry point that is not implemented: logs and answers `code`.
pub(crate) fn unsupported(name: &str, code: cl_int) -> cl_int {
    log::debug!("{name}: not supported by dmabridge (answering {code})");
    code
}

/// An object-returning entry point that is not implemented: stores `code` in
/// `errcode_ret` (when given) and answers NULL.
///
/// # Safety
/// `errcode_ret` is NULL or valid for a write of a `cl_int`.
// For generated stubs whose first argument is no handle (none at present).
#[allow(dead_code)]
pub(crate) unsafe fn unsupported_object(name: &str, code: cl_int, errcode_ret: *mut cl_int) -> *mut c_void {
    // SAFETY: the caller's contract.
    unsafe { write_opt(errcode_ret, unsupported(name, code)) };
    std::ptr::null_mut()
}

/// An entry point that is not implemented, whose first argument is a
/// handle of kind `T`: `T::INVALID` for an invalid handle (NULL, released,
/// another kind), else `code` (the call's answer for a valid one).
pub(crate) fn unsupported_for<T: crate::handles::Kind>(name: &str, handle: *const c_void, code: cl_int) -> cl_int {
    status(name, || {
        handles::get::<T>(handle)?;
        Err(unsupported(name, code))
    })
}

/// [`unsupported_for`] of an object-returning entry point: NULL, the code
/// in `errcode_ret` (when given).
///
/// # Safety
/// `errcode_ret` is NULL or valid for a write of a `cl_int`.
pub(crate) unsafe fn unsupported_object_for<T: crate::handles::Kind>(
    name: &str,
    handle: *const c_void,
    code: cl_int,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    // SAFETY: `errcode_ret` is NULL or writable (the caller's contract).
    unsafe { write_opt(errcode_ret, unsupported_for::<T>(name, handle, code)) };
    std::ptr::null_mut()
}

/// [`unsupported_for`] with a platform as first argument
/// (`CL_INVALID_PLATFORM` for any other than dmabridge's).
pub(crate) fn unsupported_for_platform(name: &str, platform: cl_platform_id, code: cl_int) -> cl_int {
    status(name, || {
        handles::check_platform(platform, false)?;
        Err(unsupported(name, code))
    })
}

/// Writes `v` to `p` unless `p` is NULL.
///
/// # Safety
/// `p` is NULL or valid for a write of a `T`.
pub(crate) unsafe fn write_opt<T>(p: *mut T, v: T) {
    if !p.is_null() {
        // SAFETY: non-NULL, so valid for the write by the caller's contract.
        unsafe { p.write_unaligned(v) };
    }
}

/// A slice of `n` `T`s at `p` (empty when `n` is 0, whatever `p`).
///
/// # Safety
/// When `n > 0`, `p` is non-NULL and valid for reads of `n` `T`s for `'a`
/// (so `n` `T`s fit in `isize::MAX` bytes: a size the application passes
/// and a rule of the specification bounds is checked before, see
/// [`pattern_bytes`]).
pub(crate) unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

/// The largest fill pattern: a `long16` or `double16`, 128 bytes.
pub(crate) const MAX_PATTERN: usize = 128;

/// The bytes of a fill pattern: empty for a NULL `pattern`, which the core
/// then refuses with its own error (`CL_INVALID_VALUE`). A `size` above
/// [`MAX_PATTERN`] is `CL_INVALID_VALUE` here, before any read: a slice of a
/// size the application merely claims (up to `SIZE_MAX`) must never be
/// formed, a length past `isize::MAX` aborts the process.
///
/// # Safety
/// A non-NULL `pattern` is valid for reads of `size` bytes for `'a`.
pub(crate) unsafe fn pattern_bytes<'a>(pattern: *const c_void, size: usize) -> ClRes<&'a [u8]> {
    if size > MAX_PATTERN {
        return Err(CL_INVALID_VALUE);
    }
    if pattern.is_null() {
        Ok(&[])
    } else {
        // SAFETY: the caller's contract.
        Ok(unsafe { slice(pattern.cast(), size) })
    }
}

/// The events of a wait list: `CL_INVALID_EVENT_WAIT_LIST` for a NULL list
/// with a count, a list with a count of 0, or an entry that is not a live
/// event.
///
/// # Safety
/// A non-NULL `list` holds `num` readable `cl_event`s.
pub(crate) unsafe fn wait_list(num: cl_uint, list: *const cl_event) -> ClRes<Vec<Event>> {
    if (num == 0) != list.is_null() {
        return Err(CL_INVALID_EVENT_WAIT_LIST);
    }
    // SAFETY: the caller's contract; `num > 0` implies a non-NULL list.
    let handles = unsafe { slice(list, num as usize) };
    handles
        .iter()
        .map(|&h| {
            handles::get::<EventObj>(h.cast()).map(|e| e.inner.event.clone()).map_err(|_| CL_INVALID_EVENT_WAIT_LIST)
        })
        .collect()
}

/// The `param_value` rules of every `clGet*Info` over the answer's C bytes:
/// `CL_INVALID_VALUE` when `param_value` is given and shorter than the
/// answer (nothing written then); `param_value_size_ret` gets the size.
///
/// # Safety
/// `param_value` is NULL or valid for writes of `param_value_size` bytes;
/// `param_value_size_ret` is NULL or valid for a write of a `size_t`.
pub(crate) unsafe fn info_bytes(
    bytes: &[u8],
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> ClRes<()> {
    if !param_value.is_null() {
        if param_value_size < bytes.len() {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: the caller's contract; `bytes.len() <= param_value_size`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), param_value.cast::<u8>(), bytes.len()) };
    }
    // SAFETY: the caller's contract.
    unsafe { write_opt(param_value_size_ret, bytes.len()) };
    Ok(())
}
