//! Program entry points. A program holds either built-in kernels of its
//! devices (`runtime::kernel`'s list, always built) or OpenCL C source,
//! which PoCL compiles for the CPU device (`api::source`, `crate::pocl`);
//! without PoCL a build answers that no compiler (linker) is available.

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use dmabridge::runtime::device::Device;
use dmabridge::runtime::info::InfoValue;
use dmabridge::runtime::kernel::builtin_kernel_names;
use opencl_sys::*;

use super::binary;
use super::context::ContextObj;
use super::source::{self, Mode};
use crate::entry::{object, slice, status, ClRes};
use crate::handles::{self, DeviceObj, Kind, Obj, Tag};
use crate::info::{get_info, Handles};
use crate::pocl::program::PoclProgram;
use dmabridge::sync;

/// What a program was created from.
#[derive(Debug)]
pub enum Contents {
    /// Built-in kernels (`clCreateProgramWithBuiltInKernels`, or a link of
    /// such programs), by name.
    BuiltIn(Vec<&'static str>),
    /// OpenCL C source (`clCreateProgramWithSource`), concatenated.
    Source(String),
    /// The output of `clLinkProgram` over compiled source programs.
    Linked,
    /// Program binaries (`clCreateProgramWithBinary`, `api::binary`).
    Binary,
}

/// The state of the last build, per program (all its devices alike).
#[derive(Debug)]
pub(crate) struct Build {
    pub(crate) status: cl_build_status,
    pub(crate) options: String,
    pub(crate) log: String,
    /// `CL_PROGRAM_BINARY_TYPE`.
    pub(crate) binary_type: cl_program_binary_type,
    /// PoCL's program once compiled or built (source programs).
    pub(crate) pocl: Option<Arc<PoclProgram>>,
}

/// A program.
#[derive(Debug)]
pub struct ProgramObj {
    /// Its context's object.
    pub context: Arc<Obj<ContextObj>>,
    /// Its devices.
    pub devices: Vec<Arc<Device>>,
    /// Built-in kernels or source.
    pub contents: Contents,
    pub(crate) build: Mutex<Build>,
    /// Kernel objects created from it and not released yet.
    pub(crate) kernels: AtomicUsize,
}

impl Kind for ProgramObj {
    const TAG: Tag = Tag::Program;
    const INVALID: cl_int = CL_INVALID_PROGRAM;

    fn notifier(&self) -> crate::notify::Notifier {
        self.context.inner.notify
    }
}

impl ProgramObj {
    /// The kernel names: the built-ins, or those of the built executable
    /// (`CL_INVALID_PROGRAM_EXECUTABLE` for a program from source that has
    /// none).
    pub(crate) fn kernel_names(&self) -> ClRes<Vec<String>> {
        match &self.contents {
            Contents::BuiltIn(names) => Ok(names.iter().map(|n| n.to_string()).collect()),
            Contents::Source(_) | Contents::Linked | Contents::Binary => {
                let p = crate::pocl::get().ok_or(CL_INVALID_PROGRAM_EXECUTABLE)?;
                self.executable()?.kernel_names(p)
            }
        }
    }

    /// PoCL's program of a successfully built executable
    /// (`CL_INVALID_PROGRAM_EXECUTABLE` otherwise).
    pub(crate) fn executable(&self) -> ClRes<Arc<PoclProgram>> {
        let b = sync::lock(&self.build);
        match &b.pocl {
            Some(p) if b.binary_type == CL_PROGRAM_BINARY_TYPE_EXECUTABLE && b.status == CL_BUILD_SUCCESS => {
                Ok(p.clone())
            }
            _ => Err(CL_INVALID_PROGRAM_EXECUTABLE),
        }
    }
}

/// The program object behind a handle.
pub(crate) fn program(handle: cl_program) -> ClRes<Arc<Obj<ProgramObj>>> {
    handles::get::<ProgramObj>(handle.cast())
}

pub(crate) fn new_program(context: Arc<Obj<ContextObj>>, devices: Vec<Arc<Device>>, contents: Contents) -> cl_program {
    let built = matches!(contents, Contents::BuiltIn(_));
    let status = if built { CL_BUILD_SUCCESS } else { CL_BUILD_NONE };
    let binary_type = if built { CL_PROGRAM_BINARY_TYPE_EXECUTABLE } else { CL_PROGRAM_BINARY_TYPE_NONE };
    let build = Mutex::new(Build { status, options: String::new(), log: String::new(), binary_type, pocl: None });
    let obj = ProgramObj { context, devices, contents, build, kernels: AtomicUsize::new(0) };
    handles::into_handle(handles::new_object(obj)).cast()
}

/// The devices of a device list that must all be in `ctx`
/// (`CL_INVALID_DEVICE` otherwise).
///
/// # Safety
/// As [`handles::device_list`].
unsafe fn devices_in(ctx: &ContextObj, num: cl_uint, list: *const cl_device_id) -> ClRes<Vec<Arc<Device>>> {
    // SAFETY: forwarded to the caller.
    let devices = unsafe { handles::device_list(num, list) }?;
    if devices.iter().any(|d| !ctx.ctx.has_device(d)) {
        return Err(CL_INVALID_DEVICE);
    }
    Ok(devices)
}

/// The built-in kernels named in `names` (`;`-separated, blanks around a
/// name ignored), each offered by at least one of `devices`; repeated names
/// count once. `CL_INVALID_VALUE` for an empty list or an unknown name.
fn builtin_names(names: &[u8], devices: &[Arc<Device>]) -> ClRes<Vec<&'static str>> {
    let offered: Vec<&'static str> = devices.iter().flat_map(|d| builtin_kernel_names(d)).collect();
    let mut out: Vec<&'static str> = Vec::new();
    for name in names.split(|&b| b == b';') {
        let name = name.trim_ascii();
        let known = offered.iter().find(|n| n.as_bytes() == name).ok_or(CL_INVALID_VALUE)?;
        if !out.contains(known) {
            out.push(known);
        }
    }
    Ok(out)
}

/// `clCreateProgramWithBuiltInKernels`.
pub(crate) unsafe extern "C" fn clCreateProgramWithBuiltInKernels(
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    kernel_names: *const c_char,
    errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: the C contract of `errcode_ret`, `device_list` and
    // `kernel_names` (NULL or NUL-terminated).
    unsafe {
        object("clCreateProgramWithBuiltInKernels", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let devices = devices_in(&ctx.inner, num_devices, device_list)?;
            if kernel_names.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let names = builtin_names(CStr::from_ptr(kernel_names).to_bytes(), &devices)?;
            Ok(new_program(ctx, devices, Contents::BuiltIn(names)))
        })
    }
}

/// `clCreateProgramWithBinary`: binaries in PoCL's format for the CPU
/// device (`api::binary`). After the argument checks (context, device list,
/// `lengths` and `binaries` with a non-empty entry per device), each
/// `binary_status` entry gets its device's status; `CL_INVALID_BINARY` if
/// any is invalid (a device other than the CPU, a binary PoCL refuses, no
/// PoCL). The program is not built yet: `clBuildProgram` builds it.
pub(crate) unsafe extern "C" fn clCreateProgramWithBinary(
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    lengths: *const usize,
    binaries: *mut *const u8,
    binary_status: *mut cl_int,
    errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: the C contract of `errcode_ret`, `device_list`, `lengths`,
    // `binaries` and `binary_status` (NULL or `num_devices` entries each).
    unsafe {
        object("clCreateProgramWithBinary", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            let devices = devices_in(&ctx.inner, num_devices, device_list)?;
            let n = devices.len();
            if lengths.is_null() || binaries.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let (lens, bins) = (slice(lengths, n), slice(binaries.cast_const(), n));
            if lens.iter().zip(bins).any(|(&len, bin)| len == 0 || len > isize::MAX as usize || bin.is_null()) {
                return Err(CL_INVALID_VALUE);
            }
            // The C contract: each binary holds its length's bytes.
            let bytes: Vec<&[u8]> = lens.iter().zip(bins).map(|(&len, &bin)| slice(bin, len)).collect();
            let made = binary::from_binaries(&devices, &bytes);
            if !binary_status.is_null() {
                let status = made.as_ref().map_or_else(Clone::clone, |_| vec![CL_SUCCESS; n]);
                for (i, s) in status.into_iter().enumerate() {
                    binary_status.add(i).write_unaligned(s);
                }
            }
            let prog = made.map_err(|_| CL_INVALID_BINARY)?;
            let handle = new_program(ctx, devices, Contents::Binary);
            binary::keep(&self::program(handle)?.inner, prog);
            Ok(handle)
        })
    }
}

/// `clCreateProgramWithSource`: the program is created (for all the
/// context's devices) and keeps its source; PoCL builds it for the CPU
/// device (`api::source`).
pub(crate) unsafe extern "C" fn clCreateProgramWithSource(
    context: cl_context,
    count: cl_uint,
    strings: *mut *const c_char,
    lengths: *const usize,
    errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: the C contract of `errcode_ret`, `strings` (`count` entries)
    // and `lengths` (NULL or `count` entries).
    unsafe {
        object("clCreateProgramWithSource", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            if count == 0 || strings.is_null() {
                return Err(CL_INVALID_VALUE);
            }
            let strings = slice(strings.cast_const(), count as usize);
            let lengths = if lengths.is_null() { &[][..] } else { slice(lengths, count as usize) };
            let mut source = Vec::new();
            for (i, &s) in strings.iter().enumerate() {
                if s.is_null() {
                    return Err(CL_INVALID_VALUE);
                }
                match lengths.get(i) {
                    // No string is larger than an address space (a slice of
                    // that length would abort the process).
                    Some(&n) if n > isize::MAX as usize => return Err(CL_INVALID_VALUE),
                    Some(&n) if n > 0 => source.extend_from_slice(slice(s.cast::<u8>(), n)),
                    _ => source.extend_from_slice(CStr::from_ptr(s).to_bytes()),
                }
            }
            let source = String::from_utf8_lossy(&source).into_owned();
            let devices = ctx.inner.ctx.devices().to_vec();
            Ok(new_program(ctx, devices, Contents::Source(source)))
        })
    }
}

/// `clRetainProgram`.
pub(crate) unsafe extern "C" fn clRetainProgram(program: cl_program) -> cl_int {
    status("clRetainProgram", || handles::retain::<ProgramObj>(program.cast()))
}

/// `clReleaseProgram`.
pub(crate) unsafe extern "C" fn clReleaseProgram(program: cl_program) -> cl_int {
    status("clReleaseProgram", || handles::release::<ProgramObj>(program.cast()))
}

/// The C callback of the build calls.
type BuildNotify = Option<unsafe extern "C" fn(cl_program, *mut c_void)>;

/// The checks `clBuildProgram` and `clCompileProgram` share: the device
/// list (all of the program's devices when empty), the callback rule, no
/// kernel attached. Records the options.
///
/// # Safety
/// `device_list` as [`handles::device_list`] when `num_devices > 0`;
/// `options` NULL or NUL-terminated.
unsafe fn check_build(
    p: &ProgramObj,
    mode: Mode,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> ClRes<()> {
    if (num_devices == 0) != device_list.is_null() || (pfn_notify.is_none() && !user_data.is_null()) {
        return Err(CL_INVALID_VALUE);
    }
    let devices = if num_devices > 0 {
        // SAFETY: the caller's contract.
        let devices = unsafe { handles::device_list(num_devices, device_list) }?;
        if devices.iter().any(|d| !p.devices.iter().any(|pd| Arc::ptr_eq(pd, d))) {
            return Err(CL_INVALID_DEVICE);
        }
        devices
    } else {
        p.devices.clone()
    };
    if p.kernels.load(Ordering::Acquire) > 0 {
        return Err(CL_INVALID_OPERATION);
    }
    let options = if options.is_null() {
        String::new()
    } else {
        // SAFETY: the caller's contract: a non-NULL `options` is a C string.
        unsafe { CStr::from_ptr(options) }.to_string_lossy().into_owned()
    };
    sync::lock(&p.build).options = options.clone();
    match &p.contents {
        Contents::Source(src) => source::build(p, &devices, src, &options, mode),
        Contents::Binary => binary::build(p, &devices, &options, matches!(mode, Mode::Compile(_))),
        // A linked program is an executable already; built-ins are built.
        Contents::Linked | Contents::BuiltIn(_) => Ok(()),
    }
}

/// Calls the build callback (after the build: with no lock held).
fn notify(pfn_notify: BuildNotify, program: cl_program, user_data: *mut c_void) {
    if let Some(f) = pfn_notify {
        // SAFETY: the application's callback with the arguments OpenCL
        // defines; the caller holds the program alive.
        unsafe { f(program, user_data) };
    }
}

/// `clBuildProgram`: built-in programs are built already (success);
/// programs from source answer `CL_COMPILER_NOT_AVAILABLE`.
pub(crate) unsafe extern "C" fn clBuildProgram(
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> cl_int {
    status("clBuildProgram", || {
        let p = self::program(program)?;
        // SAFETY: the C contract of `device_list` and `options`.
        let r = unsafe { check_build(&p.inner, Mode::Build, num_devices, device_list, options, pfn_notify, user_data) };
        if !matches!(r, Err(CL_INVALID_VALUE | CL_INVALID_DEVICE | CL_INVALID_OPERATION)) {
            // The callback runs once the build ends, also when it failed.
            notify(pfn_notify, program, user_data);
        }
        r
    })
}

/// `clCompileProgram`: as [`clBuildProgram`]; headers must be consistent
/// (`CL_INVALID_VALUE`) and be programs.
pub(crate) unsafe extern "C" fn clCompileProgram(
    program: cl_program,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    options: *const c_char,
    num_input_headers: cl_uint,
    input_headers: *const cl_program,
    header_include_names: *mut *const c_char,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
) -> cl_int {
    status("clCompileProgram", || {
        let p = self::program(program)?;
        if (num_input_headers == 0) != (input_headers.is_null() && header_include_names.is_null())
            || (num_input_headers > 0 && (input_headers.is_null() || header_include_names.is_null()))
        {
            return Err(CL_INVALID_VALUE);
        }
        let mut headers = Vec::new();
        // SAFETY: the C contract: `num_input_headers` readable handles and names.
        let names = unsafe { slice(header_include_names.cast_const(), num_input_headers as usize) };
        // SAFETY: as above.
        for (i, &h) in unsafe { slice(input_headers, num_input_headers as usize) }.iter().enumerate() {
            let hp = self::program(h)?;
            if names[i].is_null() {
                return Err(CL_INVALID_VALUE);
            }
            // SAFETY: the C contract: each include name is a C string.
            let name = unsafe { CStr::from_ptr(names[i]) }.to_string_lossy().into_owned();
            headers.push((hp, name));
        }
        // SAFETY: the C contract of `device_list` and `options`.
        let r = unsafe {
            check_build(&p.inner, Mode::Compile(&headers), num_devices, device_list, options, pfn_notify, user_data)
        };
        if !matches!(r, Err(CL_INVALID_VALUE | CL_INVALID_DEVICE | CL_INVALID_OPERATION)) {
            notify(pfn_notify, program, user_data);
        }
        r
    })
}

/// `clLinkProgram`: a link of built-in programs is a new built-in program
/// with all their kernels (for the given devices, or the context's); a
/// program from source among the inputs answers `CL_LINKER_NOT_AVAILABLE`
/// (no device has a linker).
pub(crate) unsafe extern "C" fn clLinkProgram(
    context: cl_context,
    num_devices: cl_uint,
    device_list: *const cl_device_id,
    _options: *const c_char,
    num_input_programs: cl_uint,
    input_programs: *const cl_program,
    pfn_notify: BuildNotify,
    user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> cl_program {
    // SAFETY: the C contract of `errcode_ret`, `device_list` and
    // `input_programs`.
    unsafe {
        object("clLinkProgram", errcode_ret, || {
            let ctx = handles::get::<ContextObj>(context.cast())?;
            if (num_devices == 0) != device_list.is_null()
                || num_input_programs == 0
                || input_programs.is_null()
                || (pfn_notify.is_none() && !user_data.is_null())
            {
                return Err(CL_INVALID_VALUE);
            }
            let devices = if num_devices == 0 {
                ctx.inner.ctx.devices().to_vec()
            } else {
                devices_in(&ctx.inner, num_devices, device_list)?
            };
            let mut names: Vec<&'static str> = Vec::new();
            let inputs = slice(input_programs, num_input_programs as usize)
                .iter()
                .map(|&h| self::program(h))
                .collect::<ClRes<Vec<_>>>()?;
            if inputs.iter().any(|p| !Arc::ptr_eq(&p.inner.context, &ctx)) {
                return Err(CL_INVALID_CONTEXT);
            }
            if inputs.iter().any(|p| !matches!(p.inner.contents, Contents::BuiltIn(_))) {
                let options = if _options.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(_options).to_string_lossy().into_owned()
                };
                let linked = source::link(ctx, devices, &inputs, &options)?;
                notify(pfn_notify, linked, user_data);
                return Ok(linked);
            }
            for p in &inputs {
                let Contents::BuiltIn(ns) = &p.inner.contents else { return Err(CL_LINKER_NOT_AVAILABLE) };
                names.extend(ns.iter().filter(|n| !names.contains(n)).copied().collect::<Vec<_>>());
            }
            let joined = names.join(";");
            let names = builtin_names(joined.as_bytes(), &devices)?;
            let linked = new_program(ctx, devices, Contents::BuiltIn(names));
            notify(pfn_notify, linked, user_data);
            Ok(linked)
        })
    }
}

/// `clGetProgramInfo`. `CL_PROGRAM_BINARY_SIZES` and `CL_PROGRAM_BINARIES`
/// answer the CPU device's binary in PoCL's format once the program is
/// compiled or built (`api::binary`), and size 0 (nothing written) for the
/// other devices and before.
pub(crate) unsafe extern "C" fn clGetProgramInfo(
    program: cl_program,
    param_name: cl_program_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // CL_PROGRAM_BINARIES writes through the application's pointers: the one
    // answer outside the generic path.
    if param_name == CL_PROGRAM_BINARIES {
        return status("clGetProgramInfo", || {
            let p = self::program(program)?;
            // One pointer per device.
            let size = p.inner.devices.len() * std::mem::size_of::<*mut u8>();
            if !param_value.is_null() && param_value_size < size {
                return Err(CL_INVALID_VALUE);
            }
            if !param_value.is_null() {
                let bins = binary::binaries(&p.inner)?;
                // SAFETY: the C contract: `param_value` holds a pointer per
                // device (size checked above), each NULL (skipped) or room
                // for CL_PROGRAM_BINARY_SIZES's bytes of its device.
                unsafe {
                    let dst = slice(param_value.cast_const().cast::<*mut u8>(), bins.len());
                    for (bin, &to) in bins.iter().zip(dst) {
                        if !to.is_null() && !bin.is_empty() {
                            std::ptr::copy_nonoverlapping(bin.as_ptr(), to, bin.len());
                        }
                    }
                }
            }
            // SAFETY: the C contract of `param_value_size_ret`.
            unsafe { crate::entry::write_opt(param_value_size_ret, size) };
            Ok(())
        });
    }
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetProgramInfo", param_value_size, param_value, param_value_size_ret, || {
            let p = self::program(program)?;
            let pi = &p.inner;
            let value = match param_name {
                CL_PROGRAM_REFERENCE_COUNT => crate::info::reference_count(&p),
                CL_PROGRAM_NUM_DEVICES => InfoValue::U32(pi.devices.len() as cl_uint),
                CL_PROGRAM_SOURCE => InfoValue::Str(match &pi.contents {
                    Contents::Source(s) => s.clone(),
                    Contents::BuiltIn(_) | Contents::Linked | Contents::Binary => String::new(),
                }),
                CL_PROGRAM_BINARY_SIZES => InfoValue::Sizes(binary::binaries(pi)?.iter().map(Vec::len).collect()),
                CL_PROGRAM_NUM_KERNELS => InfoValue::Usize(pi.kernel_names()?.len()),
                CL_PROGRAM_KERNEL_NAMES => InfoValue::Str(pi.kernel_names()?.join(";")),
                CL_PROGRAM_SCOPE_GLOBAL_CTORS_PRESENT | CL_PROGRAM_SCOPE_GLOBAL_DTORS_PRESENT => InfoValue::Bool(false),
                CL_PROGRAM_CONTEXT => InfoValue::Context(pi.context.inner.ctx.clone()),
                CL_PROGRAM_DEVICES => InfoValue::DeviceIds(pi.devices.clone()),
                // No IL: an empty answer.
                CL_PROGRAM_IL => InfoValue::Sizes(Vec::new()),
                _ => return Err(CL_INVALID_VALUE),
            };
            Ok((value, Handles::of_context(&pi.context)))
        })
    }
}

/// `clGetProgramBuildInfo`.
pub(crate) unsafe extern "C" fn clGetProgramBuildInfo(
    program: cl_program,
    device: cl_device_id,
    param_name: cl_program_build_info,
    param_value_size: usize,
    param_value: *mut c_void,
    param_value_size_ret: *mut usize,
) -> cl_int {
    // SAFETY: the C contract of the `param_value` arguments.
    unsafe {
        get_info("clGetProgramBuildInfo", param_value_size, param_value, param_value_size_ret, || {
            let p = self::program(program)?;
            let d = handles::get::<DeviceObj>(device.cast())?;
            if !p.inner.devices.iter().any(|pd| Arc::ptr_eq(pd, &d.inner.device)) {
                return Err(CL_INVALID_DEVICE);
            }
            let value = {
                let build = sync::lock(&p.inner.build);
                match param_name {
                    CL_PROGRAM_BUILD_STATUS => InfoValue::I32(build.status),
                    CL_PROGRAM_BUILD_OPTIONS => InfoValue::Str(build.options.clone()),
                    CL_PROGRAM_BUILD_LOG => InfoValue::Str(build.log.clone()),
                    CL_PROGRAM_BINARY_TYPE => InfoValue::U32(build.binary_type),
                    CL_PROGRAM_BUILD_GLOBAL_VARIABLE_TOTAL_SIZE => InfoValue::Usize(0),
                    _ => return Err(CL_INVALID_VALUE),
                }
            };
            Ok((value, Handles::default()))
        })
    }
}

/// `clSetProgramReleaseCallback`: no program-scope global destructors
/// exist, so it is not supported (`CL_INVALID_OPERATION`, as OpenCL 3.0
/// allows) once the handle is checked.
pub(crate) unsafe extern "C" fn clSetProgramReleaseCallback(
    program: cl_program,
    pfn_notify: BuildNotify,
    _user_data: *mut c_void,
) -> cl_int {
    status("clSetProgramReleaseCallback", || {
        self::program(program)?;
        pfn_notify.ok_or(CL_INVALID_VALUE)?;
        Err(CL_INVALID_OPERATION)
    })
}
