//! OpenCL C programs from source on the CPU device, compiled and run by
//! PoCL ([`pocl`], loaded at run time; optional): [`Program`]
//! (`clCreateProgramWithSource`, `clBuildProgram`, the build log) and
//! [`Kernel`] (`clCreateKernel`, the argument setters,
//! `clEnqueueNDRangeKernel` on a dmabridge queue, zero copy).
//!
//! The ICD's program and kernel entry points are thin wrappers over these
//! (it keeps its own program objects, for binaries, links and built-in
//! programs, and passes PoCL's codes on as they are: [`BuildError::code`]).
//! Without PoCL a build fails with `CL_COMPILER_NOT_AVAILABLE` and a log
//! that says how to install it.

pub mod kernel;
pub mod pocl;

use std::sync::{Arc, Mutex};

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::runtime::context::Context;
use crate::runtime::device::{Device, DeviceType};
use crate::sync;

use pocl::program::PoclProgram;

pub use kernel::Kernel;

/// `CL_PROGRAM_BINARY_TYPE_COMPILED_OBJECT`.
pub const BINARY_TYPE_COMPILED_OBJECT: u32 = 0x1;
/// `CL_PROGRAM_BINARY_TYPE_EXECUTABLE`.
pub const BINARY_TYPE_EXECUTABLE: u32 = 0x4;

/// A [`ClError`] of PoCL's `code` (a negative CL code) with `message`; a
/// code dmabridge has no kind for becomes `CL_INVALID_OPERATION`, the code
/// kept in the message (faces that must return PoCL's code as it was keep
/// it themselves, as [`BuildError::code`] does).
///
/// ```
/// use dmabridge::runtime::program::from_pocl;
/// assert_eq!(from_pocl(-11, "build failed").code(), -11); // CL_BUILD_PROGRAM_FAILURE
/// assert_eq!(from_pocl(-9999, "?").code(), -59);
/// ```
pub fn from_pocl(code: i32, message: impl Into<String>) -> ClError {
    let message = message.into();
    match ClErrorKind::from_code(code) {
        Some(kind) => ClError::new(kind, message),
        None => ClError::new(ClErrorKind::InvalidOperation, format!("{message} (PoCL's code {code})")),
    }
}

/// A failed build or compile: PoCL's code (or `CL_COMPILER_NOT_AVAILABLE`),
/// what failed with the build log, and the log alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError {
    /// The CL code, as PoCL answered it (`CL_BUILD_PROGRAM_FAILURE`,
    /// `CL_INVALID_BUILD_OPTIONS`, ...).
    pub code: i32,
    /// What failed, then the build log: what the ICD answers as
    /// `CL_PROGRAM_BUILD_LOG` after a failure.
    pub message: String,
    /// The compiler's build log alone (without PoCL: why it is missing and
    /// how to install it).
    pub log: String,
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BuildError {}

impl From<BuildError> for ClError {
    fn from(e: BuildError) -> ClError {
        from_pocl(e.code, e.message)
    }
}

impl BuildError {
    fn new(code: i32, message: String, log: String) -> BuildError {
        BuildError { code, message, log }
    }
}

/// What a successful build or compile made.
#[derive(Debug, Clone)]
pub struct Built {
    /// PoCL's program.
    pub program: Arc<PoclProgram>,
    /// PoCL's build log.
    pub log: String,
    /// [`BINARY_TYPE_EXECUTABLE`] or [`BINARY_TYPE_COMPILED_OBJECT`].
    pub binary_type: u32,
}

/// What [`build_source`] makes.
#[derive(Debug, Clone, Copy)]
pub enum Mode<'a> {
    /// An executable (`clBuildProgram`).
    Build,
    /// A compiled object (`clCompileProgram`) with embedded headers: each
    /// its source (`None`: the header program has none, which is
    /// `CL_INVALID_OPERATION`) and its include name.
    Compile(&'a [(Option<&'a str>, String)]),
}

/// The devices among `devices` that cannot build OpenCL C (all but the CPU
/// device), as the message that says so; `None` when all can.
///
/// ```
/// use dmabridge::runtime::{platform::Platform, program};
/// assert_eq!(program::no_compiler(std::slice::from_ref(Platform::get().cpu())), None);
/// ```
pub fn no_compiler(devices: &[Arc<Device>]) -> Option<String> {
    let names: Vec<&str> =
        devices.iter().filter(|d| d.device_type != DeviceType::Cpu).map(|d| d.name.as_str()).collect();
    (!names.is_empty()).then(|| {
        format!(
            "{names:?} cannot build OpenCL C: only the CPU device runs kernels from source; \
             name the CPU device alone in device_list"
        )
    })
}

/// `clBuildProgram` or `clCompileProgram` of `source` for `devices` with
/// `options`, through PoCL: PoCL's program and log, or why not (the ICD's
/// codes: `CL_COMPILER_NOT_AVAILABLE` for a device without a compiler or
/// without PoCL; PoCL's own otherwise).
///
/// ```
/// use dmabridge::runtime::platform::Platform;
/// use dmabridge::runtime::program::{build_source, pocl, Mode};
/// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
/// let cpu = std::slice::from_ref(Platform::get().cpu());
/// assert!(build_source(cpu, "kernel void k(void) {}", "", Mode::Build).is_ok());
/// let e = build_source(cpu, "kernel void k(void) { nope; }", "", Mode::Build).unwrap_err();
/// assert!(e.code == -11 && e.log.contains("nope")); // CL_BUILD_PROGRAM_FAILURE
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn build_source(devices: &[Arc<Device>], source: &str, options: &str, mode: Mode) -> Result<Built, BuildError> {
    let p = compiler_for(devices, crate::error::code::COMPILER_NOT_AVAILABLE)?;
    let refused = |code: i32, what: String| BuildError::new(code, what, String::new());
    let prog = PoclProgram::with_source(p, source)
        .map_err(|code| refused(code, format!("PoCL refused the source (clCreateProgramWithSource: {code})")))?;
    let (r, binary_type) = match mode {
        Mode::Build => (prog.build(p, options), BINARY_TYPE_EXECUTABLE),
        Mode::Compile(headers) => {
            let mut hs = Vec::new();
            for (src, name) in headers {
                let Some(src) = src else {
                    let why = format!("header {name:?} is not a program from source");
                    return Err(refused(crate::error::code::INVALID_OPERATION, why));
                };
                let hp = PoclProgram::with_source(p, src)
                    .map_err(|code| refused(code, format!("header {name:?}: PoCL refused it ({code})")))?;
                hs.push((hp, name.clone()));
            }
            let refs: Vec<(&PoclProgram, String)> = hs.iter().map(|(h, n)| (h, n.clone())).collect();
            (prog.compile(p, options, &refs), BINARY_TYPE_COMPILED_OBJECT)
        }
    };
    let log = prog.log(p);
    if let Err(code) = r {
        let bad_options = [crate::error::code::INVALID_BUILD_OPTIONS, crate::error::code::INVALID_COMPILER_OPTIONS];
        let what = if bad_options.contains(&code) {
            format!("invalid options {options:?}")
        } else {
            "the build failed".into()
        };
        return Err(BuildError::new(code, format!("{what} (PoCL: {code}); build log:\n{log}"), log));
    }
    Ok(Built { program: Arc::new(prog), log, binary_type })
}

/// PoCL, when every one of `devices` can build OpenCL C and PoCL is there;
/// else the error with `code` (`CL_COMPILER_NOT_AVAILABLE` or
/// `CL_LINKER_NOT_AVAILABLE`) whose message and log say why.
fn compiler_for(devices: &[Arc<Device>], code: i32) -> Result<&'static pocl::Pocl, BuildError> {
    if let Some(why) = no_compiler(devices) {
        return Err(BuildError::new(code, why.clone(), why));
    }
    pocl::get().ok_or_else(|| {
        let log = pocl::no_compiler_log();
        BuildError::new(code, log.clone(), log)
    })
}

/// Whether `devices` can link OpenCL C objects: `CL_LINKER_NOT_AVAILABLE`
/// with the reason when one of them has no compiler or PoCL is missing
/// (what [`link`] answers first).
///
/// ```
/// use dmabridge::runtime::{platform::Platform, program};
/// let cpu = std::slice::from_ref(Platform::get().cpu());
/// assert_eq!(program::check_linker(cpu).is_ok(), program::pocl::get().is_some());
/// ```
pub fn check_linker(devices: &[Arc<Device>]) -> Result<(), BuildError> {
    compiler_for(devices, crate::error::code::LINKER_NOT_AVAILABLE).map(|_| ())
}

/// `clLinkProgram` of compiled `objects` (each from a compile:
/// [`Mode::Compile`]) for `devices` with `options`, through PoCL: the
/// executable and its log, or why not (`CL_LINKER_NOT_AVAILABLE` as
/// [`check_linker`] says; PoCL's code, or `CL_LINK_PROGRAM_FAILURE` when it
/// gave none, with the link log).
///
/// ```
/// use dmabridge::runtime::platform::Platform;
/// use dmabridge::runtime::program::{build_source, link, pocl, Mode};
/// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
/// let cpu = std::slice::from_ref(Platform::get().cpu());
/// let a = build_source(cpu, "int twice(int x) { return 2 * x; }", "", Mode::Compile(&[]))?;
/// let b = build_source(cpu, "int twice(int);\nkernel void k(global int *p) { p[0] = twice(p[0]); }", "", Mode::Compile(&[]))?;
/// let exe = link(cpu, &[&a.program, &b.program], "")?;
/// assert_eq!(exe.program.kernel_names(pocl::get().unwrap()), Ok(vec!["k".to_string()]));
/// # Ok::<(), dmabridge::runtime::program::BuildError>(())
/// ```
pub fn link(devices: &[Arc<Device>], objects: &[&PoclProgram], options: &str) -> Result<Built, BuildError> {
    let p = compiler_for(devices, crate::error::code::LINKER_NOT_AVAILABLE)?;
    let (linked, code) = PoclProgram::link(p, options, objects);
    let log = linked.as_ref().map(|l| l.log(p)).unwrap_or_default();
    match linked {
        Some(l) if code == crate::error::code::SUCCESS => {
            Ok(Built { program: Arc::new(l), log, binary_type: BINARY_TYPE_EXECUTABLE })
        }
        _ => {
            let code =
                if code == crate::error::code::SUCCESS { crate::error::code::LINK_PROGRAM_FAILURE } else { code };
            Err(BuildError::new(code, format!("the link failed (PoCL: {code}); link log:\n{log}"), log))
        }
    }
}

/// An OpenCL C program from source (`clCreateProgramWithSource`), built
/// for its context's CPU device by PoCL.
#[derive(Debug)]
pub struct Program {
    context: Arc<Context>,
    source: String,
    state: Mutex<State>,
}

/// The last build's outcome.
#[derive(Debug, Default)]
struct State {
    built: Option<Built>,
    log: String,
}

/// The CPU devices of `ctx` (the ones that build OpenCL C), or the error
/// with `code` that says the context has none.
fn cpu_of(ctx: &Context, code: i32) -> Result<Vec<Arc<Device>>, BuildError> {
    let cpu: Vec<Arc<Device>> = ctx.devices().iter().filter(|d| d.device_type == DeviceType::Cpu).cloned().collect();
    if cpu.is_empty() {
        let why = "the context has no CPU device: only the CPU device builds OpenCL C".to_string();
        return Err(BuildError::new(code, why.clone(), why));
    }
    Ok(cpu)
}

impl Program {
    /// `clCreateProgramWithSource` in `ctx` (nothing is compiled yet).
    ///
    /// Errors: `CL_INVALID_VALUE` for a source holding a NUL byte (OpenCL
    /// strings end there).
    ///
    /// ```
    /// use dmabridge::runtime::program::Program;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void k(void) {}")?;
    /// assert!(p.kernel_names().is_err()); // not built
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn from_source(ctx: &Arc<Context>, source: &str) -> ClResult<Program> {
        if source.contains('\0') {
            return cl_err!(InvalidValue, "the source holds a NUL byte: OpenCL C source is a C string");
        }
        Ok(Program { context: ctx.clone(), source: source.to_owned(), state: Mutex::default() })
    }

    /// `clBuildProgram` for the context's CPU device with `options` (PoCL's
    /// options, e.g. `-cl-std=CL3.0`, `-D NAME=VALUE`). On failure the
    /// error carries the code, the build log ([`BuildError::log`]) and a
    /// message with both; [`Program::log`] keeps the log either way.
    ///
    /// Errors: `CL_COMPILER_NOT_AVAILABLE` without PoCL (the log says how to
    /// install it: `apt install pocl-opencl-icd`) or without a CPU device in
    /// the context; PoCL's `CL_BUILD_PROGRAM_FAILURE`,
    /// `CL_INVALID_BUILD_OPTIONS`, ...
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let p = Program::from_source(&ctx, "kernel void a(void) {}\nkernel void b(void) {}")?;
    /// p.build("-cl-std=CL1.2")?;
    /// assert_eq!(p.kernel_names()?, ["a", "b"]);
    /// let bad = Program::from_source(&ctx, "kernel void c(void) { undeclared = 1; }")?;
    /// let e = bad.build("").unwrap_err();
    /// assert_eq!(e.code, -11); // CL_BUILD_PROGRAM_FAILURE
    /// assert!(e.log.contains("undeclared") && bad.log().contains("undeclared"));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn build(&self, options: &str) -> Result<(), BuildError> {
        let r = cpu_of(&self.context, crate::error::code::COMPILER_NOT_AVAILABLE)
            .and_then(|cpu| build_source(&cpu, &self.source, options, Mode::Build));
        self.record(r)
    }

    /// `clCompileProgram` for the context's CPU device with `options`: a
    /// compiled object, for [`Program::link`]. `headers` are the programs
    /// whose sources an `#include` of their name (the second of each pair)
    /// finds.
    ///
    /// Errors: as [`Program::build`] (`CL_COMPILE_PROGRAM_FAILURE` for
    /// source that does not compile, `CL_INVALID_COMPILER_OPTIONS`).
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Program, BINARY_TYPE_COMPILED_OBJECT};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let header = Program::from_source(&ctx, "#define SCALE 3")?;
    /// let p = Program::from_source(&ctx, "#include \"scale.h\"\nint scale(int x) { return SCALE * x; }")?;
    /// p.compile("", &[(&header, "scale.h")])?;
    /// assert_eq!(p.binary_type(), BINARY_TYPE_COMPILED_OBJECT);
    /// assert!(p.kernel_names().is_err()); // an object, not an executable
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn compile(&self, options: &str, headers: &[(&Program, &str)]) -> Result<(), BuildError> {
        let headers: Vec<(Option<&str>, String)> =
            headers.iter().map(|(h, name)| (Some(h.source.as_str()), name.to_string())).collect();
        let r = cpu_of(&self.context, crate::error::code::COMPILER_NOT_AVAILABLE)
            .and_then(|cpu| build_source(&cpu, &self.source, options, Mode::Compile(&headers)));
        self.record(r)
    }

    /// `clLinkProgram`: a new program, built, from the compiled objects
    /// `inputs` ([`Program::compile`]) of `ctx` with `options` (e.g.
    /// `-create-library` is PoCL's to take or refuse). The new program has
    /// no source; its log is the link's.
    ///
    /// Errors: `CL_INVALID_VALUE` for no input; `CL_INVALID_CONTEXT` for an
    /// input of another context; `CL_INVALID_OPERATION` for an input that
    /// is not a compiled object; `CL_LINKER_NOT_AVAILABLE` without PoCL or
    /// a CPU device; PoCL's `CL_LINK_PROGRAM_FAILURE` (unresolved symbols)
    /// with the log.
    ///
    /// ```
    /// use dmabridge::runtime::program::{pocl, Program};
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// # if pocl::get().is_none() { return Ok(()) } // needs PoCL (pocl-opencl-icd)
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// let lib = Program::from_source(&ctx, "int twice(int x) { return 2 * x; }")?;
    /// let main = Program::from_source(&ctx, "int twice(int);\nkernel void k(global int *p) { p[0] = twice(p[0]); }")?;
    /// lib.compile("", &[])?;
    /// main.compile("", &[])?;
    /// let exe = Program::link(&ctx, &[&lib, &main], "")?;
    /// assert_eq!(exe.kernel_names()?, ["k"]);
    /// assert_eq!(Program::link(&ctx, &[&main], "").unwrap_err().code, -17); // twice: unresolved
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn link(ctx: &Arc<Context>, inputs: &[&Program], options: &str) -> Result<Program, BuildError> {
        use crate::error::code;
        let refused = |code: i32, why: String| BuildError::new(code, why, String::new());
        if inputs.is_empty() {
            return Err(refused(code::INVALID_VALUE, "no input program to link".into()));
        }
        let mut objects = Vec::with_capacity(inputs.len());
        for (i, input) in inputs.iter().enumerate() {
            if !Arc::ptr_eq(&input.context, ctx) {
                return Err(refused(code::INVALID_CONTEXT, format!("input program {i} belongs to another context")));
            }
            match &sync::lock(&input.state).built {
                Some(b) if b.binary_type == BINARY_TYPE_COMPILED_OBJECT => objects.push(b.program.clone()),
                _ => {
                    let why =
                        format!("input program {i} is not a compiled object: compile it first (Program::compile)");
                    return Err(refused(code::INVALID_OPERATION, why));
                }
            }
        }
        let refs: Vec<&PoclProgram> = objects.iter().map(|o| o.as_ref()).collect();
        let linked = Program { context: ctx.clone(), source: String::new(), state: Mutex::default() };
        let r = cpu_of(ctx, code::LINKER_NOT_AVAILABLE).and_then(|cpu| link(&cpu, &refs, options));
        linked.record(r).map(|()| linked)
    }

    /// `CL_PROGRAM_BINARY_TYPE`: [`BINARY_TYPE_EXECUTABLE`] after a build or
    /// a link, [`BINARY_TYPE_COMPILED_OBJECT`] after a compile, 0
    /// (`CL_PROGRAM_BINARY_TYPE_NONE`) before either or after a failure.
    ///
    /// See [`Program::compile`].
    pub fn binary_type(&self) -> u32 {
        sync::lock(&self.state).built.as_ref().map_or(0, |b| b.binary_type)
    }

    /// Keeps a build's, compile's or link's outcome (and its log).
    fn record(&self, r: Result<Built, BuildError>) -> Result<(), BuildError> {
        let mut st = sync::lock(&self.state);
        match r {
            Ok(built) => {
                st.log = built.log.clone();
                st.built = Some(built);
                Ok(())
            }
            Err(e) => {
                st.log = e.log.clone();
                st.built = None;
                Err(e)
            }
        }
    }

    /// `CL_PROGRAM_BUILD_LOG` of the last build (empty before one).
    ///
    /// See [`Program::build`].
    pub fn log(&self) -> String {
        sync::lock(&self.state).log.clone()
    }

    /// `CL_PROGRAM_KERNEL_NAMES`, as a list.
    ///
    /// Errors: `CL_INVALID_PROGRAM_EXECUTABLE` before a successful build.
    ///
    /// See [`Program::build`].
    pub fn kernel_names(&self) -> ClResult<Vec<String>> {
        let exe = self.executable()?;
        let Some(p) = pocl::get() else { return cl_err!(InvalidProgramExecutable, "{}", pocl::no_compiler_log()) };
        exe.kernel_names(p).map_err(|code| from_pocl(code, "PoCL did not list the program's kernels"))
    }

    /// PoCL's program of the last successful build.
    ///
    /// Errors: `CL_INVALID_PROGRAM_EXECUTABLE` before one.
    ///
    /// See [`Kernel::with_program`].
    pub fn executable(&self) -> ClResult<Arc<PoclProgram>> {
        match &sync::lock(&self.state).built {
            Some(b) if b.binary_type == BINARY_TYPE_EXECUTABLE => Ok(b.program.clone()),
            Some(_) => cl_err!(
                InvalidProgramExecutable,
                "the program is a compiled object: link it into an executable first (Program::link)"
            ),
            None => cl_err!(InvalidProgramExecutable, "the program is not built: build it first (Program::build)"),
        }
    }

    /// `CL_PROGRAM_CONTEXT`.
    ///
    /// ```
    /// use dmabridge::runtime::program::Program;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// assert!(std::sync::Arc::ptr_eq(Program::from_source(&ctx, "")?.context(), &ctx));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// `CL_PROGRAM_SOURCE`.
    ///
    /// ```
    /// use dmabridge::runtime::program::Program;
    /// use dmabridge::runtime::{context::Context, platform::Platform};
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// assert_eq!(Program::from_source(&ctx, "kernel void k(void) {}")?.source(), "kernel void k(void) {}");
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn source(&self) -> &str {
        &self.source
    }
}
