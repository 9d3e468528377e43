//! The answer of a query, [`InfoValue`], with its C representation (size
//! and bytes), and [`copy_out`], the `param_value` rule over it.

use std::mem::size_of;
use std::sync::Arc;

use crate::cl_err;
use crate::error::ClResult;
use crate::runtime::buffer::Buffer;
use crate::runtime::context::Context;
use crate::runtime::device::Device;
use crate::runtime::platform::Platform;
use crate::runtime::queue::Queue;

/// `CL_NAME_VERSION_MAX_NAME_SIZE`: the bytes of a `cl_name_version` name,
/// NUL included.
pub const NAME_VERSION_MAX_NAME_SIZE: usize = 64;

/// One `cl_name_version`: in C `{ cl_version version; char name[64]; }`,
/// 68 bytes, the name NUL-terminated and zero-padded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameVersion {
    /// `CL_MAKE_VERSION(major, minor, patch)`.
    pub version: u32,
    /// At most 63 bytes (longer names are cut when written).
    pub name: String,
}

impl NameVersion {
    /// Size of the C struct.
    pub const C_SIZE: usize = 4 + NAME_VERSION_MAX_NAME_SIZE;

    /// A name and its version.
    ///
    /// No OpenCL function of its own: one entry of the `*_WITH_VERSION` queries.
    ///
    /// ```
    /// use dmabridge::runtime::info::{make_version, NameVersion};
    /// let e = NameVersion::new("cl_khr_icd", make_version(1, 0, 0));
    /// assert_eq!((e.name.as_str(), e.version), ("cl_khr_icd", 1 << 22));
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn new(name: &str, version: u32) -> NameVersion {
        NameVersion { version, name: name.into() }
    }
}

/// The hook through which a face writes the object handles of an answer:
/// the core answers with its Rust objects ([`InfoValue::Device`],
/// [`InfoValue::Context`], ...) and does not know how a face names them;
/// the OpenCL ICD passes its handle registry in, and
/// [`InfoValue::encode`] writes what it returns. `None`: the face has no
/// handle for that object (the answer fails with `CL_INVALID_VALUE` rather
/// than writing a wrong one).
pub trait HandleEncoder {
    /// The `cl_platform_id` of the one platform.
    fn platform(&self) -> Option<usize>;
    /// The `cl_device_id` of `device`.
    fn device(&self, device: &Arc<Device>) -> Option<usize>;
    /// The `cl_context` of `context`.
    fn context(&self, context: &Arc<Context>) -> Option<usize>;
    /// The `cl_command_queue` of `queue`.
    fn queue(&self, queue: &Arc<Queue>) -> Option<usize>;
    /// The `cl_mem` of `mem`.
    fn mem(&self, mem: &Arc<Buffer>) -> Option<usize>;
}

/// The C bytes of a handle list (native byte order, a pointer each).
fn handle_bytes(handles: &[usize]) -> Vec<u8> {
    handles.iter().flat_map(|h| h.to_ne_bytes()).collect()
}

/// One answer of a `clGet*Info` query.
#[derive(Debug, Clone)]
pub enum InfoValue {
    /// A string; in C a NUL-terminated `char[]`.
    Str(String),
    /// `cl_uint`.
    U32(u32),
    /// `cl_int`.
    I32(i32),
    /// `cl_ulong`.
    U64(u64),
    /// `size_t`.
    Usize(usize),
    /// `cl_bool` (4 bytes, `CL_TRUE` = 1).
    Bool(bool),
    /// A `cl_bitfield` (8 bytes).
    Bits(u64),
    /// `size_t[]`.
    Sizes(Vec<usize>),
    /// `cl_uint[]` (e.g. the handle types of `cl_khr_external_memory`).
    U32s(Vec<u32>),
    /// `cl_device_id[]`.
    DeviceIds(Vec<Arc<Device>>),
    /// `cl_device_id` (`None`: NULL).
    Device(Option<Arc<Device>>),
    /// `cl_context`.
    Context(Arc<Context>),
    /// `cl_command_queue` (`None`: NULL).
    Queue(Option<Arc<Queue>>),
    /// `cl_platform_id` (`CL_DEVICE_PLATFORM`): the one platform of the process.
    Platform(&'static Platform),
    /// `cl_mem` (`None`: NULL), e.g. `CL_MEM_ASSOCIATED_MEMOBJECT`.
    Mem(Option<Arc<Buffer>>),
    /// A properties array (`cl_context_properties[]`, `cl_queue_properties[]`:
    /// 8 bytes each on 64-bit Linux), zero-terminated when not empty.
    Properties(Vec<u64>),
    /// `cl_name_version[]` (68 bytes each).
    NameVersions(Vec<NameVersion>),
}

/// Handles compare by identity, like the `cl_*` handles they become.
impl PartialEq for InfoValue {
    fn eq(&self, other: &InfoValue) -> bool {
        use InfoValue::*;
        fn same<T>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
        }
        match (self, other) {
            (Str(a), Str(b)) => a == b,
            (U32(a), U32(b)) => a == b,
            (I32(a), I32(b)) => a == b,
            (U64(a), U64(b)) => a == b,
            (Usize(a), Usize(b)) => a == b,
            (Bool(a), Bool(b)) => a == b,
            (Bits(a), Bits(b)) => a == b,
            (Sizes(a), Sizes(b)) => a == b,
            (U32s(a), U32s(b)) => a == b,
            (DeviceIds(a), DeviceIds(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| Arc::ptr_eq(a, b)),
            (Device(a), Device(b)) => same(a, b),
            (Context(a), Context(b)) => Arc::ptr_eq(a, b),
            (Queue(a), Queue(b)) => same(a, b),
            (Mem(a), Mem(b)) => same(a, b),
            (Platform(a), Platform(b)) => std::ptr::eq(*a, *b),
            (Properties(a), Properties(b)) => a == b,
            (NameVersions(a), NameVersions(b)) => a == b,
            _ => false,
        }
    }
}

impl InfoValue {
    /// Size in bytes of the C value (what `param_value_size_ret` reports),
    /// including the NUL of a string.
    ///
    /// The `param_value_size_ret` of every `clGet*Info`.
    ///
    /// ```
    /// use dmabridge::runtime::info::InfoValue;
    /// assert_eq!(InfoValue::Str("abc".into()).size(), 4); // with the NUL
    /// assert_eq!(InfoValue::U64(1).size(), 8);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn size(&self) -> usize {
        const PTR: usize = size_of::<usize>();
        match self {
            InfoValue::Str(s) => s.len() + 1,
            InfoValue::U32(_) | InfoValue::I32(_) | InfoValue::Bool(_) => 4,
            InfoValue::U64(_) | InfoValue::Bits(_) => 8,
            InfoValue::Usize(_) => size_of::<usize>(),
            InfoValue::Sizes(v) => v.len() * size_of::<usize>(),
            InfoValue::U32s(v) => v.len() * 4,
            InfoValue::DeviceIds(v) => v.len() * PTR,
            InfoValue::Device(_)
            | InfoValue::Context(_)
            | InfoValue::Queue(_)
            | InfoValue::Platform(_)
            | InfoValue::Mem(_) => PTR,
            InfoValue::Properties(v) => v.len() * 8,
            InfoValue::NameVersions(v) => v.len() * NameVersion::C_SIZE,
        }
    }

    /// True for a value that holds a non-null object handle, which only the
    /// C face can write (it owns the handle mapping).
    ///
    /// No OpenCL function of its own: which `clGet*Info` answers the C face writes itself.
    ///
    /// ```
    /// use dmabridge::runtime::info::InfoValue;
    /// assert!(!InfoValue::Device(None).is_handle()); // NULL
    /// assert!(!InfoValue::U32(1).is_handle());
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn is_handle(&self) -> bool {
        match self {
            InfoValue::DeviceIds(v) => !v.is_empty(),
            InfoValue::Device(d) => d.is_some(),
            InfoValue::Queue(q) => q.is_some(),
            InfoValue::Mem(m) => m.is_some(),
            InfoValue::Context(_) | InfoValue::Platform(_) => true,
            _ => false,
        }
    }

    /// Writes the C value (native byte order) to the first [`size`](Self::size)
    /// bytes of `out`. `CL_INVALID_VALUE` if `out` is shorter, or if the value
    /// holds a non-null object handle: the C face maps those to its `cl_*`
    /// handles itself. NULL handles (`Device(None)`, `Queue(None)`) are
    /// written as zeros. Nothing is written on error.
    ///
    /// ```
    /// use dmabridge::runtime::info::InfoValue;
    /// let mut out = [0u8; 8];
    /// InfoValue::U32(0x1234).write(&mut out)?;
    /// assert_eq!(out[..4], 0x1234u32.to_ne_bytes());
    /// assert!(InfoValue::U64(1).write(&mut out[..4]).is_err()); // too short
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn write(&self, out: &mut [u8]) -> ClResult<()> {
        let size = self.size();
        if out.len() < size {
            return cl_err!(InvalidValue, "param_value_size {} is smaller than the value's size {size}", out.len());
        }
        if self.is_handle() {
            return cl_err!(
                InvalidValue,
                "{} is an object handle: the C face writes it as its cl_* handle",
                self.variant_name()
            );
        }
        let out = &mut out[..size];
        match self {
            InfoValue::Str(s) => {
                out[..s.len()].copy_from_slice(s.as_bytes());
                out[s.len()] = 0;
            }
            InfoValue::U32(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::I32(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::U64(v) | InfoValue::Bits(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::Usize(v) => out.copy_from_slice(&v.to_ne_bytes()),
            InfoValue::Bool(b) => out.copy_from_slice(&u32::from(*b).to_ne_bytes()),
            InfoValue::Sizes(v) => {
                for (chunk, x) in out.chunks_exact_mut(size_of::<usize>()).zip(v) {
                    chunk.copy_from_slice(&x.to_ne_bytes());
                }
            }
            InfoValue::U32s(v) => {
                for (chunk, x) in out.chunks_exact_mut(4).zip(v) {
                    chunk.copy_from_slice(&x.to_ne_bytes());
                }
            }
            InfoValue::Properties(v) => {
                for (chunk, x) in out.chunks_exact_mut(8).zip(v) {
                    chunk.copy_from_slice(&x.to_ne_bytes());
                }
            }
            InfoValue::NameVersions(v) => {
                for (chunk, e) in out.chunks_exact_mut(NameVersion::C_SIZE).zip(v) {
                    chunk[..4].copy_from_slice(&e.version.to_ne_bytes());
                    let name = e.name.as_bytes();
                    let n = name.len().min(NAME_VERSION_MAX_NAME_SIZE - 1);
                    chunk[4..4 + n].copy_from_slice(&name[..n]);
                    chunk[4 + n..].fill(0);
                }
            }
            // Only NULL handles and empty lists get here.
            InfoValue::DeviceIds(_) | InfoValue::Device(_) | InfoValue::Queue(_) | InfoValue::Mem(_) => out.fill(0),
            InfoValue::Context(_) | InfoValue::Platform(_) => unreachable!("refused above"),
        }
        Ok(())
    }

    /// The C bytes of the answer, [`size`](Self::size) of them, object
    /// handles written as `handles` names them (NULL handles as zeros).
    /// `CL_INVALID_VALUE` if `handles` has no handle for an object of the
    /// answer.
    ///
    /// The one encoding of every `clGet*Info` answer of the C face.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use dmabridge::runtime::info::{HandleEncoder, InfoValue};
    /// use dmabridge::runtime::{buffer::Buffer, context::Context, device::Device, platform::Platform, queue::Queue};
    /// struct ByIndex;
    /// impl HandleEncoder for ByIndex {
    ///     fn platform(&self) -> Option<usize> { Some(0x100) }
    ///     fn device(&self, d: &Arc<Device>) -> Option<usize> { Some(0x200 + usize::from(d.index)) }
    ///     fn context(&self, _: &Arc<Context>) -> Option<usize> { None }
    ///     fn queue(&self, _: &Arc<Queue>) -> Option<usize> { None }
    ///     fn mem(&self, _: &Arc<Buffer>) -> Option<usize> { None }
    /// }
    /// let cpu = Platform::get().cpu().clone();
    /// assert_eq!(InfoValue::Device(Some(cpu)).encode(&ByIndex)?, 0x200usize.to_ne_bytes());
    /// assert_eq!(InfoValue::Queue(None).encode(&ByIndex)?, 0usize.to_ne_bytes());
    /// assert_eq!(InfoValue::U32(7).encode(&ByIndex)?, 7u32.to_ne_bytes());
    /// // An object the face has no handle for: CL_INVALID_VALUE, nothing made up.
    /// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
    /// assert_eq!(InfoValue::Context(ctx).encode(&ByIndex).unwrap_err().code(), -30);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn encode(&self, handles: &dyn HandleEncoder) -> ClResult<Vec<u8>> {
        let known = |h: Option<usize>| match h {
            Some(h) => Ok(h),
            None => cl_err!(InvalidValue, "{} names an object the C face has no handle for", self.variant_name()),
        };
        let opt = |h: Option<Option<usize>>| h.map_or(Ok(0), known);
        let list = match self {
            InfoValue::DeviceIds(v) => v.iter().map(|d| known(handles.device(d))).collect::<ClResult<Vec<_>>>()?,
            InfoValue::Device(d) => vec![opt(d.as_ref().map(|d| handles.device(d)))?],
            InfoValue::Context(c) => vec![known(handles.context(c))?],
            InfoValue::Queue(q) => vec![opt(q.as_ref().map(|q| handles.queue(q)))?],
            InfoValue::Platform(_) => vec![known(handles.platform())?],
            InfoValue::Mem(m) => vec![opt(m.as_ref().map(|m| handles.mem(m)))?],
            _ => {
                let mut out = vec![0u8; self.size()];
                self.write(&mut out)?;
                return Ok(out);
            }
        };
        Ok(handle_bytes(&list))
    }

    fn variant_name(&self) -> &'static str {
        match self {
            InfoValue::Str(_) => "Str",
            InfoValue::U32(_) => "U32",
            InfoValue::I32(_) => "I32",
            InfoValue::U64(_) => "U64",
            InfoValue::Usize(_) => "Usize",
            InfoValue::Bool(_) => "Bool",
            InfoValue::Bits(_) => "Bits",
            InfoValue::Sizes(_) => "Sizes",
            InfoValue::U32s(_) => "U32s (cl_uint[])",
            InfoValue::DeviceIds(_) => "DeviceIds (cl_device_id[])",
            InfoValue::Device(_) => "Device (cl_device_id)",
            InfoValue::Context(_) => "Context (cl_context)",
            InfoValue::Queue(_) => "Queue (cl_command_queue)",
            InfoValue::Platform(_) => "Platform (cl_platform_id)",
            InfoValue::Mem(_) => "Mem (cl_mem)",
            InfoValue::Properties(_) => "Properties",
            InfoValue::NameVersions(_) => "NameVersions (cl_name_version[])",
        }
    }
}

/// The OpenCL `param_value` rule: with `param_value` given, writes the value
/// into it (`CL_INVALID_VALUE`, and the buffer untouched, if it is shorter
/// than the value); returns `param_value_size_ret`, the value's size, either
/// way. Handles are refused as [`InfoValue::write`] says.
///
/// ```
/// use dmabridge::runtime::info::{copy_out, InfoValue};
/// let v = InfoValue::Bool(true);
/// assert_eq!(copy_out(&v, None)?, 4); // the size query
/// let mut out = [0u8; 4];
/// assert_eq!(copy_out(&v, Some(&mut out))?, 4);
/// assert_eq!(out, 1u32.to_ne_bytes());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn copy_out(value: &InfoValue, param_value: Option<&mut [u8]>) -> ClResult<usize> {
    if let Some(out) = param_value {
        value.write(out)?;
    }
    Ok(value.size())
}
