//! Image formats (`cl_image_format`): the channel orders and data types this
//! runtime stores, the size of one element, and the list
//! `clGetSupportedImageFormats` answers.
//!
//! Images are stored linearly, so any order/type pair whose element has a
//! fixed size could be stored; the list is what OpenCL 3.0 requires of a
//! full-profile device with read-write images (a superset of the embedded
//! profile's) plus the video formats of issue 22. A format outside the list
//! is `CL_IMAGE_FORMAT_NOT_SUPPORTED`, an unknown or inconsistent pair
//! `CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`.

use crate::cl_err;
use crate::error::ClResult;

/// `cl_channel_order` values.
pub mod order {
    /// `CL_R`.
    pub const R: u32 = 0x10B0;
    /// `CL_A`.
    pub const A: u32 = 0x10B1;
    /// `CL_RG`.
    pub const RG: u32 = 0x10B2;
    /// `CL_RA`.
    pub const RA: u32 = 0x10B3;
    /// `CL_RGB`.
    pub const RGB: u32 = 0x10B4;
    /// `CL_RGBA`.
    pub const RGBA: u32 = 0x10B5;
    /// `CL_BGRA`.
    pub const BGRA: u32 = 0x10B6;
    /// `CL_ARGB`.
    pub const ARGB: u32 = 0x10B7;
    /// `CL_INTENSITY`.
    pub const INTENSITY: u32 = 0x10B8;
    /// `CL_LUMINANCE`.
    pub const LUMINANCE: u32 = 0x10B9;
    /// `CL_Rx`.
    pub const RX: u32 = 0x10BA;
    /// `CL_RGx`.
    pub const RGX: u32 = 0x10BB;
    /// `CL_RGBx`.
    pub const RGBX: u32 = 0x10BC;
    /// `CL_DEPTH`.
    pub const DEPTH: u32 = 0x10BD;
    /// CL_DEPTH_STENCIL (`CL/cl.h`, for `cl_khr_gl_depth_images`;
    /// opencl-sys does not define it). Valid, not supported.
    pub const DEPTH_STENCIL: u32 = 0x10BE;
    /// `CL_sRGB`.
    pub const SRGB: u32 = 0x10BF;
    /// `CL_sRGBx`.
    pub const SRGBX: u32 = 0x10C0;
    /// `CL_sRGBA`.
    pub const SRGBA: u32 = 0x10C1;
    /// `CL_sBGRA`.
    pub const SBGRA: u32 = 0x10C2;
    /// `CL_ABGR`.
    pub const ABGR: u32 = 0x10C3;
    /// `CL_YUYV_INTEL` (`cl_intel_packed_yuv`): 2 bytes per pixel, Y0 U Y1 V
    /// for each pair of pixels; the width must be even.
    pub const YUYV_INTEL: u32 = 0x4076;
    /// `CL_NV12_INTEL` (`cl_intel_planar_yuv`): see [`Nv12`](super::Nv12).
    pub const NV12_INTEL: u32 = 0x410E;
}

/// `cl_channel_type` values.
pub mod data_type {
    /// `CL_SNORM_INT8`.
    pub const SNORM_INT8: u32 = 0x10D0;
    /// `CL_SNORM_INT16`.
    pub const SNORM_INT16: u32 = 0x10D1;
    /// `CL_UNORM_INT8`.
    pub const UNORM_INT8: u32 = 0x10D2;
    /// `CL_UNORM_INT16`.
    pub const UNORM_INT16: u32 = 0x10D3;
    /// `CL_UNORM_SHORT_565`.
    pub const UNORM_SHORT_565: u32 = 0x10D4;
    /// `CL_UNORM_SHORT_555`.
    pub const UNORM_SHORT_555: u32 = 0x10D5;
    /// `CL_UNORM_INT_101010`.
    pub const UNORM_INT_101010: u32 = 0x10D6;
    /// `CL_SIGNED_INT8`.
    pub const SIGNED_INT8: u32 = 0x10D7;
    /// `CL_SIGNED_INT16`.
    pub const SIGNED_INT16: u32 = 0x10D8;
    /// `CL_SIGNED_INT32`.
    pub const SIGNED_INT32: u32 = 0x10D9;
    /// `CL_UNSIGNED_INT8`.
    pub const UNSIGNED_INT8: u32 = 0x10DA;
    /// `CL_UNSIGNED_INT16`.
    pub const UNSIGNED_INT16: u32 = 0x10DB;
    /// `CL_UNSIGNED_INT32`.
    pub const UNSIGNED_INT32: u32 = 0x10DC;
    /// `CL_HALF_FLOAT`.
    pub const HALF_FLOAT: u32 = 0x10DD;
    /// `CL_FLOAT`.
    pub const FLOAT: u32 = 0x10DE;
    /// CL_UNORM_INT24 (`CL/cl.h`, for `cl_khr_gl_depth_images`;
    /// opencl-sys does not define it). Valid, not supported.
    pub const UNORM_INT24: u32 = 0x10DF;
    /// `CL_UNORM_INT_101010_2`.
    pub const UNORM_INT_101010_2: u32 = 0x10E0;
}

/// NV12 (`CL_NV12_INTEL`) here: an image of `width` x `height` pixels is one
/// linear surface of `height * 3 / 2` rows of `width` bytes at the image's
/// row pitch — the `height` rows of the Y plane, then the `height / 2` rows
/// of the interleaved CbCr plane (Cb, Cr for each pair of pixels) — exactly
/// a V4L2/DRM NV12 frame with one pitch. The element is one byte; reads,
/// writes, copies and maps address that surface (origin and region in
/// bytes by rows, up to `height * 3 / 2` rows), so a whole-frame read
/// returns the frame as a capture driver writes it. Width and height must be
/// even, and only 2D images take it. Fill is refused (the colour of a
/// chroma-subsampled pixel is not one element).
pub struct Nv12;

/// A `cl_image_format`: channel order and channel data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageFormat {
    /// `image_channel_order`.
    pub order: u32,
    /// `image_channel_data_type`.
    pub data_type: u32,
}

/// How a channel data type's values are written (`clEnqueueFillImage`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    /// Normalised or floating point: the fill colour is `float[4]`.
    Float,
    /// `CL_SIGNED_INT*`: `int[4]`.
    Int,
    /// `CL_UNSIGNED_INT*`: `uint[4]`.
    Uint,
}

impl ImageFormat {
    /// A format.
    pub const fn new(order: u32, data_type: u32) -> ImageFormat {
        ImageFormat { order, data_type }
    }

    /// The number of channels of the order (`None` for an unknown order).
    /// The `x` orders store their ignored channel ("CL_Rx: a two channel
    /// image format ... the second channel is ignored", CL_RGx three,
    /// CL_RGBx and CL_sRGBx four).
    pub fn channels(&self) -> Option<usize> {
        use order::*;
        Some(match self.order {
            R | A | INTENSITY | LUMINANCE | DEPTH => 1,
            RG | RA | RX => 2,
            RGB | SRGB | RGX => 3,
            RGBA | BGRA | ARGB | ABGR | SRGBA | SBGRA | RGBX | SRGBX => 4,
            // A packed pixel (Y and one chroma sample), a luma/chroma byte.
            YUYV_INTEL => 2,
            NV12_INTEL => 1,
            DEPTH_STENCIL => 1,
            _ => return None,
        })
    }

    /// Bytes of one channel (`None` for an unknown or packed type).
    fn channel_bytes(data_type: u32) -> Option<usize> {
        use data_type::*;
        Some(match data_type {
            SNORM_INT8 | UNORM_INT8 | SIGNED_INT8 | UNSIGNED_INT8 => 1,
            SNORM_INT16 | UNORM_INT16 | SIGNED_INT16 | UNSIGNED_INT16 | HALF_FLOAT => 2,
            SIGNED_INT32 | UNSIGNED_INT32 | FLOAT => 4,
            _ => return None,
        })
    }

    /// The kind of value a channel holds.
    pub fn kind(&self) -> ChannelKind {
        use data_type::*;
        match self.data_type {
            SIGNED_INT8 | SIGNED_INT16 | SIGNED_INT32 => ChannelKind::Int,
            UNSIGNED_INT8 | UNSIGNED_INT16 | UNSIGNED_INT32 => ChannelKind::Uint,
            _ => ChannelKind::Float,
        }
    }

    /// `CL_IMAGE_ELEMENT_SIZE`: bytes of one pixel, after checking that
    /// the pair is a valid `cl_image_format` (`CL_INVALID_IMAGE_FORMAT_DESCRIPTOR`
    /// otherwise: an unknown order or type, or a packed type with an order it
    /// does not pack).
    ///
    /// ```
    /// use dmabridge::runtime::image::format::{data_type, order, ImageFormat};
    /// assert_eq!(ImageFormat::new(order::RGBA, data_type::UNORM_INT8).element_size()?, 4);
    /// assert_eq!(ImageFormat::new(order::RG, data_type::FLOAT).element_size()?, 8);
    /// assert_eq!(ImageFormat::new(order::RGBA, data_type::UNORM_SHORT_565).element_size().unwrap_err().code(), -39);
    /// # Ok::<(), dmabridge::error::ClError>(())
    /// ```
    pub fn element_size(&self) -> ClResult<usize> {
        use data_type::*;
        let Some(channels) = self.channels() else {
            return cl_err!(
                InvalidImageFormatDescriptor,
                "image_channel_order {:#x} is no cl_channel_order",
                self.order
            );
        };
        let packed = match self.data_type {
            UNORM_SHORT_565 | UNORM_SHORT_555 => Some((2, &[order::RGB, order::RGBX][..])),
            UNORM_INT_101010 => Some((4, &[order::RGB, order::RGBX][..])),
            UNORM_INT_101010_2 => Some((4, &[order::RGBA][..])),
            UNORM_INT24 => Some((4, &[order::DEPTH, order::DEPTH_STENCIL][..])),
            _ => None,
        };
        let size = match (packed, Self::channel_bytes(self.data_type)) {
            (Some((size, orders)), _) if orders.contains(&self.order) => size,
            (Some(_), _) => {
                return cl_err!(
                    InvalidImageFormatDescriptor,
                    "image_channel_data_type {:#x} is a packed type that channel order {:#x} cannot use",
                    self.data_type,
                    self.order
                )
            }
            // "The number of bits per element determined by the
            // image_channel_data_type and image_channel_order must be a
            // power of two" (CL_RGB of 8-bit channels is not a format).
            (None, Some(bytes)) if (bytes * channels).is_power_of_two() => bytes * channels,
            (None, Some(bytes)) => {
                return cl_err!(
                    InvalidImageFormatDescriptor,
                    "channel order {:#x} with data type {:#x} makes {}-bit elements: OpenCL needs a power of two",
                    self.order,
                    self.data_type,
                    bytes * channels * 8
                )
            }
            (None, None) => {
                return cl_err!(
                    InvalidImageFormatDescriptor,
                    "image_channel_data_type {:#x} is no cl_channel_type",
                    self.data_type
                )
            }
        };
        // The orders that constrain their type (OpenCL 3.0, "Image Format
        // Descriptor"): luminance/intensity and depth take few types; the
        // video orders take 8-bit unsigned normalised channels.
        let type_ok = match self.order {
            order::INTENSITY | order::LUMINANCE => {
                matches!(self.data_type, UNORM_INT8 | UNORM_INT16 | SNORM_INT8 | SNORM_INT16 | HALF_FLOAT | FLOAT)
            }
            order::DEPTH => matches!(self.data_type, UNORM_INT16 | FLOAT),
            order::DEPTH_STENCIL => matches!(self.data_type, UNORM_INT24 | FLOAT),
            order::SRGB | order::SRGBX | order::SRGBA | order::SBGRA | order::YUYV_INTEL | order::NV12_INTEL => {
                self.data_type == UNORM_INT8
            }
            order::ARGB | order::BGRA | order::ABGR => {
                matches!(self.data_type, UNORM_INT8 | SNORM_INT8 | SIGNED_INT8 | UNSIGNED_INT8)
            }
            _ => true,
        };
        if !type_ok {
            return cl_err!(
                InvalidImageFormatDescriptor,
                "channel order {:#x} cannot take channel data type {:#x}",
                self.order,
                self.data_type
            );
        }
        // DEPTH_STENCIL with FLOAT is 32-bit depth + 8-bit stencil padded.
        Ok(if self.order == order::DEPTH_STENCIL && self.data_type == FLOAT { 8 } else { size })
    }
}

/// The channel data types OpenCL 3.0 requires for `CL_R`, `CL_RG` and `CL_RGBA`.
const ALL_TYPES: [u32; 12] = [
    data_type::SNORM_INT8,
    data_type::SNORM_INT16,
    data_type::UNORM_INT8,
    data_type::UNORM_INT16,
    data_type::SIGNED_INT8,
    data_type::SIGNED_INT16,
    data_type::SIGNED_INT32,
    data_type::UNSIGNED_INT8,
    data_type::UNSIGNED_INT16,
    data_type::UNSIGNED_INT32,
    data_type::HALF_FLOAT,
    data_type::FLOAT,
];

/// Every format this runtime supports, for images of type `image_type`
/// (a `CL_MEM_OBJECT_IMAGE*`): `CL_R`, `CL_RG`, `CL_RGBA` with the twelve
/// types OpenCL 3.0 lists, `CL_BGRA` and `CL_sRGBA` with `CL_UNORM_INT8`,
/// `CL_DEPTH` with `CL_UNORM_INT16` and `CL_FLOAT` (2D and 2D array), and
/// `CL_YUYV_INTEL` and `CL_NV12_INTEL` with `CL_UNORM_INT8` (2D only).
/// The same for reading, writing and read-write (the storage is linear
/// memory the CPU reads and writes).
///
/// ```
/// use dmabridge::runtime::image::format::{data_type, order, supported_formats, ImageFormat};
/// use dmabridge::runtime::image::mem_object;
/// let f = supported_formats(mem_object::IMAGE2D);
/// assert!(f.contains(&ImageFormat::new(order::NV12_INTEL, data_type::UNORM_INT8)));
/// assert!(!supported_formats(mem_object::IMAGE3D).contains(&ImageFormat::new(order::NV12_INTEL, data_type::UNORM_INT8)));
/// ```
pub fn supported_formats(image_type: u32) -> Vec<ImageFormat> {
    use super::mem_object::*;
    let mut v = Vec::new();
    for o in [order::R, order::RG, order::RGBA] {
        v.extend(ALL_TYPES.iter().map(|&t| ImageFormat::new(o, t)));
    }
    v.push(ImageFormat::new(order::BGRA, data_type::UNORM_INT8));
    v.push(ImageFormat::new(order::SRGBA, data_type::UNORM_INT8));
    if matches!(image_type, IMAGE2D | IMAGE2D_ARRAY) {
        v.push(ImageFormat::new(order::DEPTH, data_type::UNORM_INT16));
        v.push(ImageFormat::new(order::DEPTH, data_type::FLOAT));
    }
    if image_type == IMAGE2D {
        v.push(ImageFormat::new(order::YUYV_INTEL, data_type::UNORM_INT8));
        v.push(ImageFormat::new(order::NV12_INTEL, data_type::UNORM_INT8));
    }
    v
}
