//! `cl_dmabridge_dma_buf_export` (dmabridge's own extension, header
//! `include/CL/cl_dmabridge.h`): a USM or SVM allocation, or a buffer, as a
//! dma-buf fd that other drivers (V4L2, DRM, VFIO users) import — zero copy.
//!
//! The context's heap and the buffers' host pages are memfd-backed, so
//! udmabuf turns their pages into a dma-buf
//! ([`Heap::export_dmabuf`](crate::memory::heap::Heap::export_dmabuf),
//! [`Buffer::export_dmabuf`]). Semantics:
//! - the dma-buf spans the whole pages the allocation (or buffer) covers; a
//!   small USM/SVM allocation shares its page with neighbours allocated
//!   before the export, whose bytes are then visible through it too;
//!   [`Info::Offset`] says where the byte asked about lies in it;
//! - the fd is the caller's (`O_RDWR | O_CLOEXEC`): the caller closes it;
//! - the dma-buf maps the same pages as the allocation: writes on either
//!   side are seen by the other; it may outlive the allocation, whose pages
//!   then stay with it (last contents) and are never handed to a later
//!   allocation;
//! - exporting needs `/dev/udmabuf` (opened once per process). Without it
//!   every export answers `CL_INVALID_OPERATION`, [`Info::Exportable`] is
//!   false, and the extension is not advertised.

use crate::cl_err;
use crate::error::{ClError, ClErrorKind, ClResult};
use crate::memory::heap::{AllocInfo, ExportError};
use crate::runtime::buffer::{mem_flags, Buffer};
use crate::runtime::context::Context;
use crate::runtime::image::Image;
use crate::runtime::info::{Extension, InfoValue, Requires, EXTENSIONS};
use crate::sys::addr::HostAddr;
use crate::sys::dma_buf::DmaBuf;
use crate::sys::udmabuf::Udmabuf;

/// The extension's string (`CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_NAME` of
/// `include/CL/cl_dmabridge.h`).
pub const EXTENSION: &str = "cl_dmabridge_dma_buf_export";

/// Listed where exports work: `/dev/udmabuf` opens ([`available`]).
#[linkme::distributed_slice(EXTENSIONS)]
static EXTENSION_ROW: Extension = Extension::new(EXTENSION, Requires::Udmabuf, 300);

/// `cl_dma_buf_info_dmabridge` values: the queries of
/// `clGetMemAllocDmaBufInfoDMABRIDGE` and `clGetMemObjectDmaBufInfoDMABRIDGE`.
pub mod info_param {
    /// `CL_DMA_BUF_EXPORTABLE_DMABRIDGE` (`cl_bool`).
    pub const EXPORTABLE: u32 = 0x4F10;
    /// `CL_DMA_BUF_SIZE_DMABRIDGE` (`size_t`): bytes of the dma-buf an
    /// export makes (whole pages).
    pub const SIZE: u32 = 0x4F11;
    /// `CL_DMA_BUF_OFFSET_DMABRIDGE` (`size_t`): offset in that dma-buf of
    /// the byte the pointer points to (of byte 0 for a buffer).
    pub const OFFSET: u32 = 0x4F12;
    /// `CL_DMA_BUF_ROW_PITCH_DMABRIDGE` (`size_t`): for an image, the bytes
    /// from one row of pixels to the next in its dma-buf
    /// (`CL_IMAGE_ROW_PITCH`); `CL_INVALID_MEM_OBJECT` for a buffer.
    pub const ROW_PITCH: u32 = 0x4F13;
    /// `CL_DMA_BUF_SLICE_PITCH_DMABRIDGE` (`size_t`): for an image, the
    /// bytes from one slice (layer, 1D array element) to the next; 0 for 1D
    /// and 2D images.
    pub const SLICE_PITCH: u32 = 0x4F14;
}

/// The answer of a dma-buf info query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Info {
    /// `CL_DMA_BUF_EXPORTABLE_DMABRIDGE`.
    Exportable(bool),
    /// `CL_DMA_BUF_SIZE_DMABRIDGE`.
    Size(usize),
    /// `CL_DMA_BUF_OFFSET_DMABRIDGE`.
    Offset(usize),
    /// `CL_DMA_BUF_ROW_PITCH_DMABRIDGE` or `CL_DMA_BUF_SLICE_PITCH_DMABRIDGE`.
    Pitch(usize),
}

/// The answer in the shape of every `clGet*Info` answer
/// (`CL_DMA_BUF_EXPORTABLE_DMABRIDGE` is a `cl_bool`, the others `size_t`).
///
/// ```
/// use dmabridge::ext::dma_buf_export::Info;
/// use dmabridge::runtime::info::InfoValue;
/// assert_eq!(InfoValue::from(Info::Exportable(true)), InfoValue::Bool(true));
/// assert_eq!(InfoValue::from(Info::Offset(4096)), InfoValue::Usize(4096));
/// ```
impl From<Info> for InfoValue {
    fn from(info: Info) -> InfoValue {
        match info {
            Info::Exportable(b) => InfoValue::Bool(b),
            Info::Size(n) | Info::Offset(n) | Info::Pitch(n) => InfoValue::Usize(n),
        }
    }
}

/// `/dev/udmabuf`, opened on first use (an export, or the extension
/// strings' probe) and kept for the process; the message says why it cannot
/// be used.
fn udmabuf() -> ClResult<&'static Udmabuf> {
    match Udmabuf::shared() {
        Ok(u) => Ok(u),
        Err(why) => cl_err!(InvalidOperation, "dma-buf export is not available here: {why}"),
    }
}

/// True where exports work (`/dev/udmabuf` opens): then, and only then,
/// the platform and its devices list `cl_dmabridge_dma_buf_export`.
///
/// No OpenCL function of its own: decides the extension strings.
///
/// ```
/// use dmabridge::ext::dma_buf_export;
/// use dmabridge::sys::udmabuf::Udmabuf;
/// assert_eq!(dma_buf_export::available(), Udmabuf::open().is_ok());
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn available() -> bool {
    udmabuf().is_ok()
}

/// No export property is defined: any is `CL_INVALID_PROPERTY`.
fn check_properties(properties: &[(u64, u64)]) -> ClResult<()> {
    match properties.first() {
        None => Ok(()),
        Some((name, _)) => cl_err!(InvalidProperty, "dma-buf export property {name:#x} is not supported"),
    }
}

/// The page span `[first, end)` of `info` in bytes (addresses).
fn page_span(info: &AllocInfo) -> (usize, usize) {
    let page = crate::sys::page_size();
    let first = info.base.0 / page * page;
    // The allocation exists, so its end does not overflow.
    (first, (info.base + info.size).0.next_multiple_of(page))
}

/// The heap allocation of `ctx` that holds `ptr`: `CL_INVALID_VALUE` if
/// `ptr` is in no USM/SVM allocation of `ctx`, `CL_INVALID_OPERATION` if it
/// is one in a device's local memory (a BAR: not memfd pages).
fn heap_allocation(ctx: &Context, ptr: usize) -> ClResult<AllocInfo> {
    if let Some(info) = ctx.heap().lookup(HostAddr(ptr)) {
        return Ok(info);
    }
    match ctx.lookup(HostAddr(ptr)) {
        Some(_) => {
            cl_err!(InvalidOperation, "{ptr:#x} is in a device's local memory, which cannot be exported as a dma-buf")
        }
        None => cl_err!(InvalidValue, "{ptr:#x} is not inside a USM or SVM allocation of this context"),
    }
}

/// True if udmabuf takes `len` bytes.
fn within_limit(u: &Udmabuf, len: usize) -> bool {
    len as u64 <= u.limits().size_limit
}

/// `clGetMemAllocDmaBufInfoDMABRIDGE`: whether the USM/SVM allocation of
/// `ctx` that `ptr` points into can be exported, the size of the dma-buf
/// an export makes, and where `ptr`'s byte lies in it.
///
/// Errors: `CL_INVALID_VALUE` for an unknown `param`, or a `ptr` in no
/// allocation of `ctx` (a device-local allocation answers: not exportable).
///
/// ```
/// use dmabridge::ext::{dma_buf_export::{self, info_param, Info}, usm};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let p = usm::host_mem_alloc(&ctx, &[], 8192, 0)?.as_ptr();
/// let at = |param| dma_buf_export::mem_alloc_info(&ctx, p.wrapping_add(100), param);
/// assert_eq!(at(info_param::EXPORTABLE)?, Info::Exportable(dma_buf_export::available()));
/// assert_eq!(at(info_param::SIZE)?, Info::Size(8192));
/// assert_eq!(at(info_param::OFFSET)?, Info::Offset(100));
/// usm::mem_free(&ctx, p)?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn mem_alloc_info(ctx: &Context, ptr: *const u8, param: u32) -> ClResult<Info> {
    let ptr = ptr as usize;
    if ![info_param::EXPORTABLE, info_param::SIZE, info_param::OFFSET].contains(&param) {
        return cl_err!(InvalidValue, "param_name {param:#x} is not a cl_dma_buf_info_dmabridge");
    }
    let info = match heap_allocation(ctx, ptr) {
        Err(e) if e.kind == ClErrorKind::InvalidOperation && param == info_param::EXPORTABLE => {
            return Ok(Info::Exportable(false))
        }
        r => r?,
    };
    let (first, end) = page_span(&info);
    Ok(match param {
        info_param::EXPORTABLE => Info::Exportable(udmabuf().is_ok_and(|u| within_limit(u, end - first))),
        info_param::SIZE => Info::Size(end - first),
        _ => Info::Offset(ptr - first),
    })
}

/// A dma-buf and where the byte asked about lies in it.
#[derive(Debug)]
pub struct Export {
    /// The dma-buf (its fd is the caller's).
    pub dmabuf: DmaBuf,
    /// Offset in the dma-buf of the byte the pointer points to (0 for a
    /// buffer).
    pub offset: usize,
}

/// `clGetMemAllocDmaBufFdDMABRIDGE`: the pages of the USM/SVM allocation
/// of `ctx` that `ptr` points into (any interior byte) as a dma-buf.
///
/// Errors: `CL_INVALID_PROPERTY` for any property (none is defined);
/// `CL_INVALID_VALUE` for a `ptr` in no allocation of `ctx`;
/// `CL_INVALID_OPERATION` without `/dev/udmabuf`, or for an allocation in a
/// device's local memory; `CL_OUT_OF_RESOURCES` if udmabuf refuses (more
/// than its `size_limit_mb`, no fd left). A failed export changes nothing.
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::{dma_buf_export, usm};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let p = usm::host_mem_alloc(&ctx, &[], 4096, 0)?.as_ptr();
/// match dma_buf_export::export_mem_alloc(&ctx, p, &[]) {
///     Ok(export) => assert_eq!((export.dmabuf.size().unwrap(), export.offset), (4096, 0)),
///     Err(e) => assert_eq!(e.kind, ClErrorKind::InvalidOperation, "no /dev/udmabuf here: {e}"),
/// }
/// usm::mem_free(&ctx, p)?;
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn export_mem_alloc(ctx: &Context, ptr: *const u8, properties: &[(u64, u64)]) -> ClResult<Export> {
    check_properties(properties)?;
    let ptr = ptr as usize;
    let info = heap_allocation(ctx, ptr)?;
    let u = udmabuf()?;
    let (first, _) = page_span(&info);
    let dmabuf = ctx.heap().export_dmabuf(u, HostAddr(ptr)).map_err(|e| match e {
        ExportError::Unknown(_) => {
            ClError::new(ClErrorKind::InvalidValue, format!("{ptr:#x} was freed while being exported"))
        }
        ExportError::Udmabuf(e) => {
            ClError::new(ClErrorKind::OutOfResources, format!("exporting {ptr:#x} as a dma-buf: {e}"))
        }
    })?;
    // USM and SVM commands wait for the fences other drivers attach to it
    // (ext/usm_commands.rs). Without the registry's duplicate they cannot:
    // as a failed record of the export (memory::exports::note), that is
    // logged, and the export stands.
    if let Err(e) = crate::memory::exports::watch_fences(&dmabuf) {
        log::warn!("the export of {ptr:#x}: other drivers' fences on it will not be waited for: {e}");
    }
    Ok(Export { dmabuf, offset: ptr - first })
}

/// Why `buffer` cannot be exported whatever the system (`CL_INVALID_MEM_OBJECT`).
fn buffer_refusal(buffer: &Buffer) -> Option<ClError> {
    if buffer.flags() & mem_flags::USE_HOST_PTR != 0 {
        return Some(ClError::new(
            ClErrorKind::InvalidMemObject,
            "a CL_MEM_USE_HOST_PTR buffer's pages are the application's: it is not exported",
        ));
    }
    buffer.parent().is_some().then(|| {
        ClError::new(ClErrorKind::InvalidMemObject, "a sub-buffer shares its parent's pages: export the parent")
    })
}

/// `clGetMemObjectDmaBufInfoDMABRIDGE`: whether `buffer` can be exported
/// (not a sub-buffer, not `CL_MEM_USE_HOST_PTR`, within udmabuf's limit,
/// `/dev/udmabuf` present), the size of its dma-buf (its size in whole
/// pages) and the offset of its byte 0 in it (0).
///
/// Errors: `CL_INVALID_VALUE` for an unknown `param`.
///
/// ```
/// use dmabridge::ext::dma_buf_export::{self, info_param, Info};
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 5000, std::ptr::null_mut()) }?;
/// assert_eq!(dma_buf_export::buffer_info(&b, info_param::SIZE)?, Info::Size(8192));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn buffer_info(buffer: &Buffer, param: u32) -> ClResult<Info> {
    let len = buffer.size().next_multiple_of(crate::sys::page_size());
    Ok(match param {
        info_param::EXPORTABLE => {
            Info::Exportable(buffer_refusal(buffer).is_none() && udmabuf().is_ok_and(|u| within_limit(u, len)))
        }
        info_param::SIZE => Info::Size(len),
        info_param::OFFSET => Info::Offset(0),
        info_param::ROW_PITCH | info_param::SLICE_PITCH => {
            return cl_err!(
                InvalidMemObject,
                "param_name {param:#x} is a pitch: only images have one (a buffer's bytes are its own layout)"
            )
        }
        _ => return cl_err!(InvalidValue, "param_name {param:#x} is not a cl_dma_buf_info_dmabridge"),
    })
}

/// `clGetMemObjectDmaBufInfoDMABRIDGE` for an image: its storage's answers
/// (the dma-buf holds the pixels from offset 0), and the pitches at which
/// the pixels lie in it — what an importer (V4L2, DRM) needs besides the fd.
///
/// Errors: `CL_INVALID_VALUE` for an unknown `param`.
///
/// ```
/// use dmabridge::ext::dma_buf_export::{self, info_param, Info};
/// use dmabridge::runtime::image::{format::{data_type, order, ImageFormat}, mem_object, Image, ImageDesc};
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// let f = ImageFormat::new(order::BGRA, data_type::UNORM_INT8);
/// // SAFETY: no host pointer.
/// let img = unsafe { Image::create(&ctx, 0, f, &ImageDesc::new(mem_object::IMAGE2D, [640, 480, 1]), std::ptr::null_mut()) }?;
/// assert_eq!(dma_buf_export::image_info(&img, info_param::ROW_PITCH)?, Info::Pitch(2560));
/// assert_eq!(dma_buf_export::image_info(&img, info_param::OFFSET)?, Info::Offset(0));
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn image_info(image: &Image, param: u32) -> ClResult<Info> {
    match param {
        info_param::ROW_PITCH => Ok(Info::Pitch(image.row_pitch())),
        info_param::SLICE_PITCH => Ok(Info::Pitch(image.slice_pitch())),
        _ => buffer_info(image.storage(), param),
    }
}

/// `clGetMemObjectDmaBufFdDMABRIDGE`: `buffer`'s host pages as a dma-buf
/// (its bytes made current there first; see [`Buffer::export_dmabuf`]).
///
/// Errors: `CL_INVALID_PROPERTY` for any property; `CL_INVALID_MEM_OBJECT`
/// for a sub-buffer or a `CL_MEM_USE_HOST_PTR` buffer;
/// `CL_INVALID_OPERATION` without `/dev/udmabuf`; `CL_OUT_OF_RESOURCES` if
/// udmabuf refuses.
///
/// ```
/// use dmabridge::error::ClErrorKind;
/// use dmabridge::ext::dma_buf_export;
/// use dmabridge::runtime::buffer::Buffer;
/// use dmabridge::runtime::{context::Context, platform::Platform};
/// let ctx = Context::new(std::slice::from_ref(Platform::get().cpu()))?;
/// // SAFETY: no host pointer.
/// let b = unsafe { Buffer::create(&ctx, 0, 4096, std::ptr::null_mut()) }?;
/// match dma_buf_export::export_buffer(&b, &[]) {
///     Ok(export) => assert_eq!(export.dmabuf.size().unwrap(), 4096),
///     Err(e) => assert_eq!(e.kind, ClErrorKind::InvalidOperation, "no /dev/udmabuf here: {e}"),
/// }
/// # Ok::<(), dmabridge::error::ClError>(())
/// ```
pub fn export_buffer(buffer: &Buffer, properties: &[(u64, u64)]) -> ClResult<Export> {
    check_properties(properties)?;
    if let Some(e) = buffer_refusal(buffer) {
        return Err(e);
    }
    let dmabuf = buffer.export_dmabuf(udmabuf()?)?;
    Ok(Export { dmabuf, offset: 0 })
}
