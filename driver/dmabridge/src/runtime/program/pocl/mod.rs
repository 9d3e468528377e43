//! The OpenCL C compiler and kernel executor of the CPU device: PoCL
//! (Debian's `pocl-opencl-icd`, `libpocl.so.2`), loaded at run time.
//!
//! dmabridge writes no compiler. When a program from source is first built
//! (through [`Program`](super::Program) or the ICD), the runtime `dlopen`s
//! PoCL privately (`RTLD_LOCAL`: its `cl*` symbols never shadow an ICD
//! loader's), asks it for its platform through `clIcdGetPlatformIDsKHR` and
//! calls everything else through the dispatch table every PoCL object
//! starts with, as an ICD loader would. Nobody sees PoCL's platform: one
//! PoCL context on PoCL's CPU device and one in-order PoCL queue serve every
//! dmabridge context. Programs ([`program`]) and kernels ([`kernel`]) are
//! PoCL's objects behind dmabridge's; a launch is a dmabridge command whose
//! work sets the arguments on PoCL's kernel and runs it on PoCL's queue,
//! with dmabridge's own pages as the pointers (no copy: PoCL uses pointers
//! given through `clSetKernelArgSVMPointer` in place, which
//! `tests/icd/pocl_test.c` pins, since PoCL does not promise it for memory
//! it did not allocate).
//!
//! PoCL is optional: without it (not installed, not loadable, or
//! `DMABRIDGE_POCL=off`) [`get`] answers `None`, `CL_DEVICE_COMPILER_AVAILABLE`
//! is false and a build answers `CL_COMPILER_NOT_AVAILABLE`, as before.
//! `DMABRIDGE_POCL=/path/libpocl.so.2` loads another build.
//!
//! The items here speak PoCL's raw `cl_int` codes (the ICD passes them on
//! as they are); [`Program`](super::Program) and [`Kernel`](super::Kernel)
//! are the Rust API over them.
//!
//! `libloading` would wrap `dlopen`; the four libc calls here do not need a
//! crate.

pub mod cache;
pub mod image;
pub mod kernel;
pub mod language;
pub mod program;

use std::ffi::{c_char, c_void, CStr, CString};
use std::sync::OnceLock;

use opencl_sys::cl_icd::cl_icd_dispatch;
use opencl_sys::*;

/// The library loaded when `DMABRIDGE_POCL` does not name one.
pub const LIBRARY: &str = "libpocl.so.2";

/// PoCL, loaded: its dispatch table and the objects dmabridge uses.
pub struct Pocl {
    /// PoCL's dispatch table (the first word of each of its objects).
    pub(crate) api: &'static cl_icd_dispatch,
    pub(crate) device: cl_device_id,
    pub(crate) context: cl_context,
    pub(crate) queue: cl_command_queue,
    /// `CL_DEVICE_OPENCL_C_VERSION` of PoCL's device.
    pub c_version: String,
    /// `CL_PLATFORM_VERSION` of PoCL's platform.
    pub version: String,
    /// `CL_DEVICE_OPENCL_C_ALL_VERSIONS` of PoCL's device: (version, name).
    pub c_all_versions: Vec<(u32, String)>,
    /// The OpenCL C extensions and features PoCL's device gives, as
    /// dmabridge passes them on.
    pub language: language::Language,
}

// SAFETY: the handles are PoCL's; OpenCL objects may be used from any
// thread (OpenCL 1.1 and later: every API call is thread-safe except
// clSetKernelArg on one kernel, which `kernel` serialises).
unsafe impl Send for Pocl {}
// SAFETY: as `Send`.
unsafe impl Sync for Pocl {}

/// Why PoCL is not loaded, and what would make it load.
#[derive(Debug)]
pub struct Unavailable {
    /// Why: not installed or not loadable, `DMABRIDGE_POCL=off`, a kernel
    /// cache folder it could not write, a PoCL without a CPU device.
    pub why: String,
    /// The fix: install it, or, for the cache folder, [`cache::FIX`].
    pub fix: &'static str,
}

/// The fix for PoCL missing or not loadable.
const INSTALL: &str = "install Debian's pocl-opencl-icd (`apt install pocl-opencl-icd`: it provides libpocl.so.2), \
                       or use built-in and native kernels";

impl From<String> for Unavailable {
    fn from(why: String) -> Unavailable {
        Unavailable { why, fix: INSTALL }
    }
}

static POCL: OnceLock<Result<Pocl, Unavailable>> = OnceLock::new();

/// PoCL, loaded on the first call, or why it cannot be and the fix.
pub fn status() -> Result<&'static Pocl, &'static Unavailable> {
    POCL.get_or_init(load).as_ref()
}

/// PoCL, loaded on the first call; `None` when it cannot be (why: [`status`]).
pub fn get() -> Option<&'static Pocl> {
    status().ok()
}

/// Why [`get`] answers `None` (`None` when PoCL is loaded).
pub fn why_not() -> Option<&'static str> {
    status().err().map(|u| u.why.as_str())
}

/// The message of a build when PoCL is not there: why, and the fix.
pub fn no_compiler_log() -> String {
    match status() {
        Err(u) => {
            format!("dmabridge builds OpenCL C with PoCL, which is not available: {}. To use it: {}", u.why, u.fix)
        }
        Ok(p) => format!("PoCL {} is loaded", p.version),
    }
}

/// The `cl_int` of a PoCL call as a result.
pub(crate) fn check(code: cl_int) -> Result<(), cl_int> {
    if code == CL_SUCCESS {
        Ok(())
    } else {
        Err(code)
    }
}

/// Calls PoCL's entry point `$f` from its dispatch table (`CL_INVALID_OPERATION`
/// if the table has no such entry; PoCL 3.1 fills every slot this crate uses).
macro_rules! call {
    ($pocl:expr, $f:ident($($a:expr),* $(,)?)) => {
        match $pocl.api.$f {
            Some(f) => f($($a),*),
            None => {
                log::warn!("PoCL's dispatch table has no {}", stringify!($f));
                opencl_sys::CL_INVALID_OPERATION
            }
        }
    };
}
pub(crate) use call;

/// Like [`call!`] for the entry points that return an object and take
/// `errcode_ret` last.
macro_rules! create {
    ($pocl:expr, $f:ident($($a:expr),* $(,)?)) => {{
        let mut err: opencl_sys::cl_int = opencl_sys::CL_SUCCESS;
        let obj = match $pocl.api.$f {
            Some(f) => f($($a,)* &mut err),
            None => {
                err = opencl_sys::CL_INVALID_OPERATION;
                std::ptr::null_mut()
            }
        };
        if err == opencl_sys::CL_SUCCESS && !obj.is_null() {
            Ok(obj)
        } else {
            Err(if err == opencl_sys::CL_SUCCESS { opencl_sys::CL_OUT_OF_HOST_MEMORY } else { err })
        }
    }};
}
pub(crate) use create;

impl Pocl {
    /// A string answer of an info query (`q(size, value, size_ret)`).
    pub(crate) fn string(q: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Result<String, cl_int> {
        let bytes = Self::bytes(q)?;
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Ok(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }

    /// The bytes of an info answer (`q(size, value, size_ret)`).
    pub(crate) fn bytes(q: impl Fn(usize, *mut c_void, *mut usize) -> cl_int) -> Result<Vec<u8>, cl_int> {
        let mut size = 0usize;
        check(q(0, std::ptr::null_mut(), &mut size))?;
        let mut buf = vec![0u8; size];
        check(q(size, buf.as_mut_ptr().cast(), std::ptr::null_mut()))?;
        Ok(buf)
    }
}

/// Loads PoCL and makes its context and queue, or says why not.
fn load() -> Result<Pocl, Unavailable> {
    let name = match std::env::var("DMABRIDGE_POCL") {
        Ok(v) if v == "off" || v == "0" => return Err(String::from("DMABRIDGE_POCL=off").into()),
        Ok(v) if !v.is_empty() => v,
        _ => LIBRARY.to_string(),
    };
    let r = open(&name);
    match &r {
        Ok(p) => log::info!("PoCL {} ({name}) compiles and runs OpenCL C on the CPU device", p.version),
        Err(e) => log::info!("no OpenCL C compiler: {}", e.why),
    }
    r
}

type GetPlatforms = unsafe extern "C" fn(cl_uint, *mut cl_platform_id, *mut cl_uint) -> cl_int;
type GetAddress = unsafe extern "C" fn(*const c_char) -> *mut c_void;

fn open(name: &str) -> Result<Pocl, Unavailable> {
    let cname = CString::new(name).map_err(|_| format!("DMABRIDGE_POCL={name:?} holds a NUL byte"))?;
    // SAFETY: dlopen with a C string; the library stays loaded for the
    // process's life (never dlclosed: its objects and threads live on).
    let lib = unsafe { libc::dlopen(cname.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if lib.is_null() {
        // SAFETY: dlerror returns NULL or a C string valid until the next dl call.
        let why = unsafe { libc::dlerror() };
        let why = if why.is_null() {
            "unknown".into()
        } else {
            // SAFETY: as above.
            unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned()
        };
        return Err(format!("cannot load {name}: {why}").into());
    }
    // Before PoCL's devices start (they make the cache folder, or fail with
    // a misleading message): see `cache`.
    cache::check().map_err(|why| Unavailable { why, fix: cache::FIX })?;
    // SAFETY: dlsym on the handle just opened, with a C string.
    let gefa = unsafe { libc::dlsym(lib, c"clGetExtensionFunctionAddress".as_ptr()) };
    if gefa.is_null() {
        return Err(format!("{name} exports no clGetExtensionFunctionAddress: not an OpenCL ICD").into());
    }
    // SAFETY: the symbol is the ICD's clGetExtensionFunctionAddress (cl_khr_icd).
    let gefa: GetAddress = unsafe { std::mem::transmute::<*mut c_void, GetAddress>(gefa) };
    // SAFETY: a C string; the answer is NULL or the entry point named.
    let gp = unsafe { gefa(c"clIcdGetPlatformIDsKHR".as_ptr()) };
    if gp.is_null() {
        return Err(format!("{name} has no clIcdGetPlatformIDsKHR").into());
    }
    // SAFETY: clIcdGetPlatformIDsKHR has the signature of clGetPlatformIDs.
    let gp: GetPlatforms = unsafe { std::mem::transmute::<*mut c_void, GetPlatforms>(gp) };
    let mut platform: cl_platform_id = std::ptr::null_mut();
    let mut n: cl_uint = 0;
    // SAFETY: room for one platform.
    let code = unsafe { gp(1, &mut platform, &mut n) };
    if code != CL_SUCCESS || n == 0 || platform.is_null() {
        return Err(format!("{name} reports no platform (clIcdGetPlatformIDsKHR: {code})").into());
    }
    // SAFETY: an ICD's platform starts with its dispatch table, which lives
    // as long as the library (never unloaded).
    let api: &'static cl_icd_dispatch = unsafe { &**platform.cast::<*const cl_icd_dispatch>() };
    // SAFETY: PoCL's own entry points with valid arguments, as documented
    // by OpenCL; each output is checked before use.
    unsafe { setup(api, platform) }.map_err(|e| format!("{name}: {e}").into())
}

/// PoCL's CPU device, a context on it and an in-order queue.
///
/// # Safety
/// `api` is `platform`'s dispatch table.
unsafe fn setup(api: &'static cl_icd_dispatch, platform: cl_platform_id) -> Result<Pocl, String> {
    let p = Pocl {
        api,
        device: std::ptr::null_mut(),
        context: std::ptr::null_mut(),
        queue: std::ptr::null_mut(),
        c_version: String::new(),
        version: String::new(),
        c_all_versions: Vec::new(),
        language: language::Language::default(),
    };
    let mut device: cl_device_id = std::ptr::null_mut();
    let mut n: cl_uint = 0;
    // SAFETY: room for one device.
    let code = unsafe { call!(p, clGetDeviceIDs(platform, CL_DEVICE_TYPE_CPU, 1, &mut device, &mut n)) };
    if code != CL_SUCCESS || n == 0 {
        return Err(format!("no CPU device (clGetDeviceIDs: {code})"));
    }
    // SAFETY: a context on the one device, no properties or callback.
    let context = unsafe {
        create!(p, clCreateContext(std::ptr::null(), 1, &device, None, std::ptr::null_mut()))
            .map_err(|e| format!("clCreateContext: {e}"))?
    };
    // SAFETY: an in-order queue on the context's device.
    let queue = unsafe {
        create!(p, clCreateCommandQueue(context, device, 0)).map_err(|e| format!("clCreateCommandQueue: {e}"))?
    };
    let version = Pocl::string(|s, v, r| {
        // SAFETY: the platform with a buffer of `s` bytes (or none).
        unsafe { call!(p, clGetPlatformInfo(platform, CL_PLATFORM_VERSION, s, v, r)) }
    })
    .unwrap_or_default();
    let c_version = Pocl::string(|s, v, r| {
        // SAFETY: the device with a buffer of `s` bytes (or none).
        unsafe { call!(p, clGetDeviceInfo(device, CL_DEVICE_OPENCL_C_VERSION, s, v, r)) }
    })
    .unwrap_or_default();
    let device_bytes = |param: cl_device_info| {
        Pocl::bytes(|s, v, r| {
            // SAFETY: the device with a buffer of `s` bytes (or none).
            unsafe { call!(p, clGetDeviceInfo(device, param, s, v, r)) }
        })
        .unwrap_or_default()
    };
    let number =
        |param: cl_device_info| device_bytes(param).iter().take(8).rev().fold(0u64, |acc, &b| acc << 8 | u64::from(b));
    let c_all_versions = name_versions(&device_bytes(CL_DEVICE_OPENCL_C_ALL_VERSIONS));
    let language = language::Language::new(
        name_versions(&device_bytes(CL_DEVICE_EXTENSIONS_WITH_VERSION)),
        name_versions(&device_bytes(CL_DEVICE_OPENCL_C_FEATURES)),
        number(CL_DEVICE_DOUBLE_FP_CONFIG),
        (number(CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE) as u32, number(CL_DEVICE_NATIVE_VECTOR_WIDTH_DOUBLE) as u32),
    );
    Ok(Pocl { device, context, queue, version, c_version, c_all_versions, language, ..p })
}

/// A `cl_name_version[]` answer as (version, name) pairs: each entry a
/// `cl_version`, then a NUL-terminated name in 64 bytes.
fn name_versions(bytes: &[u8]) -> Vec<(u32, String)> {
    bytes
        .chunks_exact(68)
        .map(|e| {
            let version = u32::from_ne_bytes([e[0], e[1], e[2], e[3]]);
            let name = &e[4..];
            let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
            (version, String::from_utf8_lossy(&name[..end]).into_owned())
        })
        .collect()
}
