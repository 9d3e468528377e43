//! PoCL's kernel cache: the folder PoCL writes every program it compiles
//! into, checked before PoCL starts.
//!
//! PoCL creates the folder when its devices start; where it cannot (a
//! read-only root file system, as on many boards and in the QEMU guests,
//! with the default folder under `$HOME`), PoCL reports no device and
//! prints that "most likely pocl and the program you're trying to run are
//! linked to different versions of libstdc++", which sends its reader the
//! wrong way. So dmabridge looks first, where PoCL 3.1 would
//! (`pocl_cache_init_topdir`), and when the folder can be neither made nor
//! written leaves PoCL unloaded, with a reason that names the folder and
//! the fix. The library does not pick another folder itself: `setenv` in a
//! process whose other threads (and PoCL's) read the environment is not
//! safe, and a folder PoCL loads compiled code from must not be one that
//! another user could have made first.

use std::ffi::OsString;
use std::path::PathBuf;

use rustix::fs::{access, Access};

/// What to do when the cache folder cannot be used.
pub const FIX: &str = "set POCL_CACHE_DIR to a folder this process can write and no other user can (e.g. \
                       $XDG_RUNTIME_DIR/pocl, or a systemd service's CacheDirectory=): PoCL keeps the programs it \
                       compiles there and loads them again";

/// The folder PoCL 3.1 keeps compiled programs in, and the variable that
/// chose it: `POCL_CACHE_DIR` as it is; otherwise `pocl/kcache`
/// (`pocl/uncached` with the cache off: `POCL_KERNEL_CACHE` set to anything
/// that does not start with `1`) under `$XDG_CACHE_HOME` if
/// set and not empty, else under `$HOME/.cache`, else under `/tmp`.
pub fn folder() -> (PathBuf, &'static str) {
    if let Some(dir) = std::env::var_os("POCL_CACHE_DIR") {
        return (dir.into(), "POCL_CACHE_DIR");
    }
    // PoCL's reading of a flag (`pocl_get_bool_option`): set and starting
    // with "1" is on, set to anything else is off.
    let cached = std::env::var_os("POCL_KERNEL_CACHE").is_none_or(|v| v.as_encoded_bytes().starts_with(b"1"));
    let leaf = if cached { "pocl/kcache" } else { "pocl/uncached" };
    // Joined as PoCL joins them ("%s/%s"): an empty HOME gives /.cache/...
    let under = |top: OsString, rest: &str| {
        let mut path = top;
        path.push(rest);
        PathBuf::from(path)
    };
    match (std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()), std::env::var_os("HOME")) {
        (Some(xdg), _) => (under(xdg, &format!("/{leaf}")), "XDG_CACHE_HOME"),
        (None, Some(home)) => (under(home, &format!("/.cache/{leaf}")), "HOME"),
        (None, None) => (PathBuf::from(format!("/tmp/{leaf}")), "the default: neither XDG_CACHE_HOME nor HOME is set"),
    }
}

/// Makes PoCL's cache folder if it is missing (as PoCL itself would) and
/// checks that this process can write into it; otherwise says which
/// folder, why, and which variable chose it.
pub fn check() -> Result<(), String> {
    let (dir, from) = folder();
    if dir.as_os_str().is_empty() {
        return Err("POCL_CACHE_DIR is set but empty: PoCL needs a folder for its kernel cache".into());
    }
    let fail = |e: std::io::Error| format!("PoCL's kernel cache {} (from {from}) is not usable: {e}", dir.display());
    std::fs::create_dir_all(&dir).map_err(fail)?;
    access(&dir, Access::WRITE_OK | Access::EXEC_OK).map_err(|e| fail(e.into()))
}
