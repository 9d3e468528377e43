//! Program binaries: `CL_PROGRAM_BINARY_SIZES` / `CL_PROGRAM_BINARIES` and
//! `clCreateProgramWithBinary`, in PoCL's format (`pocl::program`).
//!
//! The CPU device's binary is PoCL's (a compiled object, a library or an
//! executable, with the kernels' argument information, which the bridge
//! needs) behind a header of dmabridge's: a magic, the length and a hash of
//! PoCL's version and bytes. PoCL 3.1 does not check its binaries: one cut
//! short fails an `assert` in PoCL and aborts the process (measured), so
//! only bytes that are whole, and from this PoCL, reach it; anything else is
//! `CL_INVALID_BINARY`. Other devices (edu, the BAR device) run no kernels
//! from source: they have no binary (size 0), and a binary given for them is
//! `CL_INVALID_BINARY`.

use std::sync::Arc;

use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::sync;
use opencl_sys::*;

use super::program::ProgramObj;
use crate::entry::ClRes;
use crate::notify::note_error;
use crate::pocl::{self, program::PoclProgram};

/// The first bytes of every binary dmabridge hands out.
const MAGIC: &[u8; 8] = b"DMBPOCL1";
/// The header: the magic, the hash, the length of PoCL's bytes.
const HEADER: usize = 24;

/// FNV-1a (64 bits) of PoCL's version and `bytes`: what tells a damaged
/// binary, or one of another PoCL, from a good one. Not a defence against a
/// crafted binary; a dependency for a hash this small is not worth it.
fn hash(version: &str, bytes: &[u8]) -> u64 {
    version
        .as_bytes()
        .iter()
        .chain(bytes)
        .fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// PoCL's `bytes` with dmabridge's header.
fn wrap(version: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + bytes.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&hash(version, bytes).to_le_bytes());
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
    out
}

/// PoCL's bytes of a binary [`wrap`] made, or what is wrong with it.
fn unwrap<'a>(version: &str, bin: &'a [u8]) -> Result<&'a [u8], String> {
    let word = |at: usize| bin.get(at..at + 8).and_then(|b| b.try_into().ok()).map(u64::from_le_bytes);
    if bin.len() < HEADER || &bin[..8] != MAGIC {
        return Err("it is not a binary of dmabridge's CPU device (no DMBPOCL1 header)".into());
    }
    let (sum, len) = (word(8).unwrap_or(0), word(16).unwrap_or(0));
    let body = &bin[HEADER..];
    if body.len() as u64 != len {
        return Err(format!(
            "it holds {} bytes after its header, and its header says {len}: it was cut or padded",
            body.len()
        ));
    }
    if hash(version, body) != sum {
        return Err(format!("it is damaged, or was made with another PoCL than this one ({version})"));
    }
    Ok(body)
}

/// The binary of each of the program's devices (empty: none), in
/// `CL_PROGRAM_DEVICES` order.
pub(crate) fn binaries(p: &ProgramObj) -> ClRes<Vec<Vec<u8>>> {
    let prog = sync::lock(&p.build).pocl.clone();
    let cpu_binary = match (prog, pocl::get()) {
        (Some(prog), Some(pocl)) => match prog.binary(pocl)? {
            b if b.is_empty() => b,
            b => wrap(&pocl.version, &b),
        },
        _ => Vec::new(),
    };
    Ok(p.devices
        .iter()
        .map(|d| if d.device_type == DeviceType::Cpu { cpu_binary.clone() } else { Vec::new() })
        .collect())
}

/// What `clCreateProgramWithBinary` makes of the binaries of `devices`:
/// PoCL's program of the CPU device's binary, or each device's status
/// (`CL_INVALID_BINARY` for a device other than the CPU, a binary PoCL
/// refuses, or no PoCL).
pub(crate) fn from_binaries(devices: &[Arc<Device>], binaries: &[&[u8]]) -> Result<Arc<PoclProgram>, Vec<cl_int>> {
    let mut status = vec![CL_SUCCESS; devices.len()];
    let mut program = None;
    for (i, (d, bin)) in devices.iter().zip(binaries).enumerate() {
        let made = match (d.device_type, pocl::get()) {
            (DeviceType::Cpu, Some(p)) => unwrap(&p.version, bin)
                .and_then(|body| PoclProgram::with_binary(p, body).map_err(|code| format!("PoCL refused it ({code})")))
                .map_err(|why| {
                    format!(
                        "binary {i} ({} bytes): {why}; a binary is what CL_PROGRAM_BINARIES gave for the CPU \
                         device, with the same PoCL",
                        bin.len()
                    )
                }),
            (DeviceType::Cpu, None) => Err(pocl::no_compiler_log()),
            _ => Err(format!("{:?} runs no kernels from source and has no program binaries", d.name)),
        };
        match made {
            Ok(prog) => program = Some(Arc::new(prog)),
            Err(why) => {
                note_error(CL_INVALID_BINARY, why);
                status[i] = CL_INVALID_BINARY;
            }
        }
    }
    match program {
        Some(prog) if status.iter().all(|&s| s == CL_SUCCESS) => Ok(prog),
        _ => Err(status),
    }
}

/// Records PoCL's program of a new program from binary: not built yet
/// (`CL_BUILD_NONE`), of PoCL's binary type.
pub(crate) fn keep(p: &ProgramObj, prog: Arc<PoclProgram>) {
    let binary_type = pocl::get().map_or(CL_PROGRAM_BINARY_TYPE_NONE, |pocl| prog.binary_type(pocl));
    let mut b = sync::lock(&p.build);
    b.binary_type = binary_type;
    b.pocl = Some(prog);
}

/// `clBuildProgram` of a program from binary: PoCL builds its program
/// (`CL_INVALID_OPERATION` for `clCompileProgram`: there is no source).
pub(crate) fn build(p: &ProgramObj, devices: &[Arc<Device>], options: &str, compile: bool) -> ClRes<()> {
    if compile {
        note_error(CL_INVALID_OPERATION, "a program from binary has no source to compile: build or link it".into());
        return Err(CL_INVALID_OPERATION);
    }
    if devices.iter().any(|d| d.device_type != DeviceType::Cpu) {
        note_error(CL_INVALID_BINARY, "only the CPU device has a binary: name it alone in device_list".into());
        return Err(CL_INVALID_BINARY);
    }
    let (Some(prog), Some(pocl)) = (sync::lock(&p.build).pocl.clone(), pocl::get()) else {
        return Err(CL_INVALID_BINARY);
    };
    let r = prog.build(pocl, options);
    let log = prog.log(pocl);
    let binary_type = prog.binary_type(pocl);
    let mut b = sync::lock(&p.build);
    b.log = log.clone();
    b.status = if r.is_ok() { CL_BUILD_SUCCESS } else { CL_BUILD_ERROR };
    b.binary_type = binary_type;
    drop(b);
    if let Err(code) = r {
        note_error(code, format!("the build of the binary failed (PoCL: {code}); build log:\n{log}"));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_binaries_of_the_same_pocl_unwrap() {
        let bin = wrap("PoCL 3.1", b"poclbin and more");
        assert_eq!(unwrap("PoCL 3.1", &bin), Ok(&b"poclbin and more"[..]));
        assert!(unwrap("PoCL 3.1", &bin[..bin.len() - 1]).unwrap_err().contains("cut"));
        assert!(unwrap("PoCL 4.0", &bin).unwrap_err().contains("another PoCL"));
        let mut flipped = bin.clone();
        flipped[HEADER + 3] ^= 1;
        assert!(unwrap("PoCL 3.1", &flipped).unwrap_err().contains("damaged"));
        assert!(unwrap("PoCL 3.1", b"poclbin").unwrap_err().contains("header"));
        assert!(unwrap("PoCL 3.1", &[]).is_err());
    }
}
