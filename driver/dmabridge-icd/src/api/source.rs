//! Programs from source: `clBuildProgram`, `clCompileProgram` and
//! `clLinkProgram` through PoCL (the core's `runtime::program`), for the CPU device.
//!
//! The CPU device is the one device with a compiler (with PoCL). A build
//! whose devices include another one (edu, the BAR device: no compute)
//! answers `CL_COMPILER_NOT_AVAILABLE` and says in the log which device and
//! that the CPU device alone can be named in `device_list`.

use std::sync::Arc;

use dmabridge::runtime::device::Device;
use dmabridge::runtime::program::{self, build_source};
use dmabridge::sync;
use opencl_sys::*;

use super::context::ContextObj;
use super::program::{new_program, Contents, ProgramObj};
use crate::entry::ClRes;
use crate::handles::Obj;
use crate::notify::note_error;
use crate::pocl::program::PoclProgram;

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

/// Builds or compiles `src` for `devices` (the program's, or those the
/// call names): the core's [`build_source`], its outcome kept as the
/// program's build state.
pub(crate) fn build(p: &ProgramObj, devices: &[Arc<Device>], src: &str, options: &str, mode: Mode) -> ClRes<()> {
    let headers: Vec<(Option<&str>, String)> = match mode {
        Mode::Build => Vec::new(),
        Mode::Compile(hs) => hs
            .iter()
            .map(|(h, name)| match &h.inner.contents {
                Contents::Source(hsrc) => (Some(hsrc.as_str()), name.clone()),
                _ => (None, name.clone()),
            })
            .collect(),
    };
    let mode = match mode {
        Mode::Build => program::Mode::Build,
        Mode::Compile(_) => program::Mode::Compile(&headers),
    };
    match build_source(devices, src, options, mode) {
        Err(e) => failed(p, e.code, e.message),
        Ok(built) => {
            let mut b = sync::lock(&p.build);
            b.status = CL_BUILD_SUCCESS;
            b.binary_type = cl_program_binary_type::from(built.binary_type);
            b.log = built.log;
            b.pocl = Some(built.program);
            Ok(())
        }
    }
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
    if let Err(e) = program::check_linker(&devices) {
        note_error(e.code, e.message);
        return Err(e.code);
    }
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
    match program::link(&devices, &refs, options) {
        Ok(linked) => {
            let handle = new_program(ctx, devices, Contents::Linked);
            let p = super::program::program(handle)?;
            let mut b = sync::lock(&p.inner.build);
            b.status = CL_BUILD_SUCCESS;
            b.binary_type = CL_PROGRAM_BINARY_TYPE_EXECUTABLE;
            b.options = options.to_owned();
            b.log = linked.log;
            b.pocl = Some(linked.program);
            Ok(handle)
        }
        Err(e) => {
            note_error(e.code, e.message);
            Err(e.code)
        }
    }
}
