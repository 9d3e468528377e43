//! Programs from source: `clBuildProgram`, `clCompileProgram` and
//! `clLinkProgram` through PoCL (`crate::pocl`), for the CPU device.
//!
//! The CPU device is the one device with a compiler (with PoCL). A build
//! whose devices include another one (edu, the BAR device: no compute)
//! answers `CL_COMPILER_NOT_AVAILABLE` and says in the log which device and
//! that the CPU device alone can be named in `device_list`.

use std::sync::Arc;

use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::sync;
use opencl_sys::*;

use super::context::ContextObj;
use super::program::{new_program, Contents, ProgramObj};
use crate::entry::ClRes;
use crate::handles::Obj;
use crate::notify::note_error;
use crate::pocl::{self, program::PoclProgram};

/// What `clBuildProgram` or `clCompileProgram` asks.
pub(crate) enum Mode<'a> {
    /// An executable.
    Build,
    /// A compiled object, with the embedded headers (program, include name).
    Compile(&'a [(Arc<Obj<ProgramObj>>, String)]),
}

/// Records a failed build's status and log, and notes the message.
fn failed(p: &ProgramObj, code: cl_int, log: String) -> ClRes<()> {
    let mut b = sync::lock(&p.build);
    b.status = CL_BUILD_ERROR;
    b.binary_type = CL_PROGRAM_BINARY_TYPE_NONE;
    b.pocl = None;
    b.log = log.clone();
    drop(b);
    note_error(code, log);
    Err(code)
}

/// The devices without a compiler among `devices`, as a log line.
fn no_compiler(devices: &[Arc<Device>]) -> Option<String> {
    let names: Vec<&str> =
        devices.iter().filter(|d| d.device_type != DeviceType::Cpu).map(|d| d.name.as_str()).collect();
    (!names.is_empty()).then(|| {
        format!(
            "{names:?} cannot build OpenCL C: only the CPU device runs kernels from source; \
             name the CPU device alone in device_list"
        )
    })
}

/// Builds or compiles `src` for `devices` (the program's, or those the
/// call names).
pub(crate) fn build(p: &ProgramObj, devices: &[Arc<Device>], src: &str, options: &str, mode: Mode) -> ClRes<()> {
    if let Some(why) = no_compiler(devices) {
        return failed(p, CL_COMPILER_NOT_AVAILABLE, why);
    }
    let Some(pocl) = pocl::get() else {
        return failed(p, CL_COMPILER_NOT_AVAILABLE, pocl::no_compiler_log());
    };
    let prog = match PoclProgram::with_source(pocl, src) {
        Ok(prog) => prog,
        Err(code) => return failed(p, code, format!("PoCL refused the source (clCreateProgramWithSource: {code})")),
    };
    let (r, binary_type) = match mode {
        Mode::Build => (prog.build(pocl, options), CL_PROGRAM_BINARY_TYPE_EXECUTABLE),
        Mode::Compile(headers) => {
            let mut hs = Vec::new();
            for (h, name) in headers {
                let Contents::Source(hsrc) = &h.inner.contents else {
                    return failed(p, CL_INVALID_OPERATION, format!("header {name:?} is not a program from source"));
                };
                match PoclProgram::with_source(pocl, hsrc) {
                    Ok(hp) => hs.push((hp, name.clone())),
                    Err(code) => return failed(p, code, format!("header {name:?}: PoCL refused it ({code})")),
                }
            }
            let refs: Vec<(&PoclProgram, String)> = hs.iter().map(|(h, n)| (h, n.clone())).collect();
            (prog.compile(pocl, options, &refs), CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT)
        }
    };
    let log = prog.log(pocl);
    if let Err(code) = r {
        let what = if code == CL_INVALID_BUILD_OPTIONS || code == CL_INVALID_COMPILER_OPTIONS {
            format!("invalid options {options:?}")
        } else {
            "the build failed".to_string()
        };
        return failed(p, code, format!("{what} (PoCL: {code}); build log:\n{log}"));
    }
    let mut b = sync::lock(&p.build);
    b.status = CL_BUILD_SUCCESS;
    b.binary_type = binary_type;
    b.log = log;
    b.pocl = Some(Arc::new(prog));
    Ok(())
}

/// `clLinkProgram` of compiled programs from source: a new program with
/// PoCL's linked executable (`CL_INVALID_OPERATION` for an input that is
/// not a compiled object, or a mix with built-in programs;
/// `CL_LINKER_NOT_AVAILABLE` without PoCL or for a device other than the CPU).
pub(crate) fn link(
    ctx: Arc<Obj<ContextObj>>,
    devices: Vec<Arc<Device>>,
    inputs: &[Arc<Obj<ProgramObj>>],
    options: &str,
) -> ClRes<cl_program> {
    if let Some(why) = no_compiler(&devices) {
        note_error(CL_LINKER_NOT_AVAILABLE, why);
        return Err(CL_LINKER_NOT_AVAILABLE);
    }
    let Some(pocl) = pocl::get() else {
        note_error(CL_LINKER_NOT_AVAILABLE, pocl::no_compiler_log());
        return Err(CL_LINKER_NOT_AVAILABLE);
    };
    let mut objects = Vec::new();
    for (i, input) in inputs.iter().enumerate() {
        let b = sync::lock(&input.inner.build);
        match &b.pocl {
            Some(obj) if b.binary_type == CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT => objects.push(obj.clone()),
            _ => {
                note_error(
                    CL_INVALID_OPERATION,
                    format!("input program {i} is not a compiled object: compile it with clCompileProgram first"),
                );
                return Err(CL_INVALID_OPERATION);
            }
        }
    }
    let refs: Vec<&PoclProgram> = objects.iter().map(|o| o.as_ref()).collect();
    let (linked, code) = PoclProgram::link(pocl, options, &refs);
    let log = linked.as_ref().map(|l| l.log(pocl)).unwrap_or_default();
    match linked {
        Some(l) if code == CL_SUCCESS => {
            let handle = new_program(ctx, devices, Contents::Linked);
            let p = super::program::program(handle)?;
            let mut b = sync::lock(&p.inner.build);
            b.status = CL_BUILD_SUCCESS;
            b.binary_type = CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
            b.options = options.to_owned();
            b.log = log;
            b.pocl = Some(Arc::new(l));
            Ok(handle)
        }
        _ => {
            let code = if code == CL_SUCCESS { CL_LINK_PROGRAM_FAILURE } else { code };
            note_error(code, format!("the link failed (PoCL: {code}); link log:\n{log}"));
            Err(code)
        }
    }
}
