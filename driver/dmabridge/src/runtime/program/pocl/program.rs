//! A program from source or from a binary as PoCL's program object: build,
//! compile, link, the build log, the kernel names and the binary.

use std::ffi::{c_char, CString};

use opencl_sys::*;

use super::{call, check, create, Pocl};

/// PoCL's program, released when dropped.
#[derive(Debug)]
pub struct PoclProgram {
    pub(crate) handle: cl_program,
}

// SAFETY: OpenCL program objects may be used from any thread.
unsafe impl Send for PoclProgram {}
// SAFETY: as `Send`.
unsafe impl Sync for PoclProgram {}

impl Drop for PoclProgram {
    fn drop(&mut self) {
        if let Some(p) = super::get() {
            // SAFETY: our reference to PoCL's program.
            unsafe { call!(p, clReleaseProgram(self.handle)) };
        }
    }
}

/// The options PoCL gets: the application's, and `-cl-kernel-arg-info`,
/// without which PoCL 3.1 keeps no argument information, and the bridge
/// learns from it which arguments are pointers, `__local` or values.
fn with_arg_info(options: &str) -> CString {
    c_string(format!("{options} -cl-kernel-arg-info").trim_start())
}

/// A C string of `s` (a NUL inside ends it: OpenCL strings cannot hold one).
fn c_string(s: &str) -> CString {
    let end = s.find('\0').unwrap_or(s.len());
    CString::new(&s[..end]).unwrap_or_default()
}

impl PoclProgram {
    /// `clCreateProgramWithSource` in PoCL's context.
    pub fn with_source(p: &Pocl, source: &str) -> Result<PoclProgram, cl_int> {
        let src = c_string(source);
        let mut ptr: *const c_char = src.as_ptr();
        // SAFETY: one NUL-terminated string, lengths NULL.
        let handle = unsafe { create!(p, clCreateProgramWithSource(p.context, 1, &mut ptr, std::ptr::null())) }?;
        Ok(PoclProgram { handle })
    }

    /// `clCreateProgramWithBinary` in PoCL's context: PoCL's own binary
    /// format (what [`PoclProgram::binary`] gives), which PoCL checks
    /// (`CL_INVALID_BINARY` for anything else).
    pub fn with_binary(p: &Pocl, binary: &[u8]) -> Result<PoclProgram, cl_int> {
        let len = binary.len();
        let mut ptr = binary.as_ptr();
        let mut status = CL_SUCCESS;
        // SAFETY: one device, one binary of `len` readable bytes, one status.
        let handle =
            unsafe { create!(p, clCreateProgramWithBinary(p.context, 1, &p.device, &len, &mut ptr, &mut status)) }?;
        Ok(PoclProgram { handle })
    }

    /// `CL_PROGRAM_BINARIES` of PoCL's device: empty when PoCL has none
    /// (nothing compiled or built).
    pub fn binary(&self, p: &Pocl) -> Result<Vec<u8>, cl_int> {
        let mut size = 0usize;
        // SAFETY: our program; one size_t (one device).
        check(unsafe {
            call!(
                p,
                clGetProgramInfo(
                    self.handle,
                    CL_PROGRAM_BINARY_SIZES,
                    std::mem::size_of::<usize>(),
                    (&mut size as *mut usize).cast(),
                    std::ptr::null_mut()
                )
            )
        })?;
        let mut bytes = vec![0u8; size];
        if size == 0 {
            return Ok(bytes);
        }
        let mut ptr = bytes.as_mut_ptr();
        // SAFETY: one pointer to `size` writable bytes, as PoCL answered.
        check(unsafe {
            call!(
                p,
                clGetProgramInfo(
                    self.handle,
                    CL_PROGRAM_BINARIES,
                    std::mem::size_of::<*mut u8>(),
                    (&mut ptr as *mut *mut u8).cast(),
                    std::ptr::null_mut()
                )
            )
        })?;
        Ok(bytes)
    }

    /// `CL_PROGRAM_BINARY_TYPE` of PoCL's device.
    pub fn binary_type(&self, p: &Pocl) -> cl_program_binary_type {
        let mut t: cl_program_binary_type = CL_PROGRAM_BINARY_TYPE_NONE;
        // SAFETY: our program and PoCL's device; one binary type.
        let code = unsafe {
            call!(
                p,
                clGetProgramBuildInfo(
                    self.handle,
                    p.device,
                    CL_PROGRAM_BINARY_TYPE,
                    std::mem::size_of_val(&t),
                    (&mut t as *mut cl_program_binary_type).cast(),
                    std::ptr::null_mut()
                )
            )
        };
        if code == CL_SUCCESS {
            t
        } else {
            CL_PROGRAM_BINARY_TYPE_NONE
        }
    }

    /// `clBuildProgram` for PoCL's device with `options`.
    pub fn build(&self, p: &Pocl, options: &str) -> Result<(), cl_int> {
        let opts = with_arg_info(options);
        // SAFETY: our program, PoCL's device, a C string, no callback.
        check(unsafe { call!(p, clBuildProgram(self.handle, 1, &p.device, opts.as_ptr(), None, std::ptr::null_mut())) })
    }

    /// `clCompileProgram` with the headers (program and include name each).
    pub fn compile(&self, p: &Pocl, options: &str, headers: &[(&PoclProgram, String)]) -> Result<(), cl_int> {
        let opts = with_arg_info(options);
        let handles: Vec<cl_program> = headers.iter().map(|(h, _)| h.handle).collect();
        let names: Vec<CString> = headers.iter().map(|(_, n)| c_string(n)).collect();
        let mut name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let (hp, np) = if headers.is_empty() {
            (std::ptr::null(), std::ptr::null_mut())
        } else {
            (handles.as_ptr(), name_ptrs.as_mut_ptr())
        };
        // SAFETY: our program, PoCL's device, `headers.len()` programs and
        // names (kept alive for the call), no callback.
        check(unsafe {
            call!(
                p,
                clCompileProgram(
                    self.handle,
                    1,
                    &p.device,
                    opts.as_ptr(),
                    headers.len() as cl_uint,
                    hp,
                    np,
                    None,
                    std::ptr::null_mut()
                )
            )
        })
    }

    /// `clLinkProgram` of compiled `inputs` into a new program. On a link
    /// failure PoCL may still return a program holding the log: it comes
    /// back with the code.
    pub fn link(p: &Pocl, options: &str, inputs: &[&PoclProgram]) -> (Option<PoclProgram>, cl_int) {
        // No options is NULL: PoCL then keeps the inputs' argument
        // information, which an empty string drops.
        let opts = (!options.trim().is_empty()).then(|| c_string(options));
        let handles: Vec<cl_program> = inputs.iter().map(|i| i.handle).collect();
        let mut err = CL_SUCCESS;
        // SAFETY: PoCL's context and device, `inputs.len()` programs, no callback.
        let handle = unsafe {
            match p.api.clLinkProgram {
                Some(f) => f(
                    p.context,
                    1,
                    &p.device,
                    opts.as_ref().map_or(std::ptr::null(), |o| o.as_ptr()),
                    handles.len() as cl_uint,
                    handles.as_ptr(),
                    None,
                    std::ptr::null_mut(),
                    &mut err,
                ),
                None => {
                    err = CL_LINKER_NOT_AVAILABLE;
                    std::ptr::null_mut()
                }
            }
        };
        ((!handle.is_null()).then_some(PoclProgram { handle }), err)
    }

    /// `CL_PROGRAM_BUILD_LOG` of PoCL's device.
    pub fn log(&self, p: &Pocl) -> String {
        Pocl::string(|s, v, r| {
            // SAFETY: our program and PoCL's device, a buffer of `s` bytes or none.
            unsafe { call!(p, clGetProgramBuildInfo(self.handle, p.device, CL_PROGRAM_BUILD_LOG, s, v, r)) }
        })
        .unwrap_or_default()
    }

    /// `CL_PROGRAM_KERNEL_NAMES` (`;`-separated), once built.
    pub fn kernel_names(&self, p: &Pocl) -> Result<Vec<String>, cl_int> {
        let names = Pocl::string(|s, v, r| {
            // SAFETY: our program, a buffer of `s` bytes or none.
            unsafe { call!(p, clGetProgramInfo(self.handle, CL_PROGRAM_KERNEL_NAMES, s, v, r)) }
        })?;
        Ok(names.split(';').filter(|n| !n.is_empty()).map(str::to_owned).collect())
    }
}
