//! The built-in kernels of the CPU device (`CL_DEVICE_BUILT_IN_KERNELS`),
//! written in Rust over the raw pointers of their arguments.
//!
//! Each built-in's work is a number of *units* fixed by its scalar
//! arguments (bytes, elements or rows); an NDRange of `global_size`
//! work-items gives work-item `i` the units `[i*U/G, (i+1)*U/G)`, so the
//! result does not depend on the global size (a task is `global_size` 1).
//!
//! Arguments in I/O memory (a PCI BAR mapping, e.g. an external physical
//! buffer's remote memory, seed 002) are read and written only with the
//! aligned volatile accesses of [`transfer::io`], through a staging copy:
//! Device memory on arm64 faults on the wide and unaligned accesses that
//! `memcpy` and the compiler's vectorised loops make.

use std::ops::Range;

use super::csc::YuvCoefficients;
use super::yuyv::{convert_line, Order};
use super::{ArgKind, KernelArgValue};
use crate::runtime::transfer;
use crate::sys::addr::HostAddr;

/// For every pointer argument, `(index, bytes it may access)`.
pub(crate) type Extents = Vec<(u32, usize)>;

/// A built-in kernel: its name, its fixed argument list, and how to run it.
pub(crate) struct Builtin {
    /// The name `clCreateProgramWithBuiltInKernels` takes.
    pub name: &'static str,
    /// The argument list, in order.
    pub args: &'static [ArgKind],
    /// For every pointer argument, `(index, bytes it may access)`, computed
    /// from the scalars; `Err` says which scalars do not make sense.
    pub extents: fn(&[KernelArgValue]) -> Result<Extents, String>,
    /// Pointer arguments that must not overlap (a source and a destination).
    pub disjoint: &'static [(u32, u32)],
    /// How many units of work the arguments describe.
    pub units: fn(&[KernelArgValue]) -> usize,
    /// Runs the units of `range`.
    ///
    /// # Safety
    /// Every pointer argument must be valid for its extent, the `disjoint`
    /// pairs must not overlap, and no other thread may access the bytes the
    /// units of `range` write.
    pub run: unsafe fn(&[KernelArgValue], Range<usize>),
    /// Runs on the device's DMA engine ([`crate::runtime::backend::device_copy`]
    /// of argument 1 to argument 0, argument 2 bytes) rather than on CPU
    /// threads; `run` is then not used.
    pub engine: bool,
    /// A large launch is split across threads (see [`super::launch`]). Not
    /// the YUYV conversions: one thread converts a 1080p frame in about
    /// 0.7 ms, and splitting it raised `dmabridgeconvert`'s CPU per frame
    /// (2.90-3.06 ms against 2.72-2.85 ms unsplit, `bench/gst/run`, same run)
    /// for frame rates that the loaded 2-core host could not tell apart.
    pub split: bool,
}

const P: ArgKind = ArgKind::Pointer;
pub(super) const IMG: ArgKind = ArgKind::Image;
const U32: ArgKind = ArgKind::Scalar(4);
const U64: ArgKind = ArgKind::Scalar(8);
/// The `short8` of a conversion's coefficients ([`YuvCoefficients::to_arg`]).
const CSC: ArgKind = ArgKind::Scalar(YuvCoefficients::ARG_SIZE);

/// Every built-in of the CPU device.
pub(crate) static CPU_BUILTINS: &[Builtin] = &[
    Builtin {
        name: "checksum_adler32",
        args: &[P, U64, P],
        extents: |a| Ok(vec![(0, size(a, 1)?), (2, 4)]),
        disjoint: &[(0, 2)],
        // One unit: Adler-32 is sequential; the last work-item computes it.
        units: |_| 1,
        run: adler32_units,
        engine: false,
        split: true,
    },
    Builtin {
        name: "fill_pattern_u32",
        args: &[P, U64, U32],
        extents: |a| Ok(vec![(0, size(a, 1)?.checked_mul(4).ok_or("count * 4 overflows")?)]),
        disjoint: &[],
        units: |a| a[1].as_u64().unwrap_or(0) as usize,
        run: fill_units,
        engine: false,
        split: true,
    },
    Builtin {
        name: "yuyv_to_rgba",
        args: &[P, P, U32, U32],
        extents: |a| {
            let (w, h) = (a[2].as_u32().unwrap_or(0) as usize, a[3].as_u32().unwrap_or(0) as usize);
            if w % 2 != 0 {
                return Err(format!("width {w} is odd: YUYV stores pixels in pairs"));
            }
            let px = w.checked_mul(h).ok_or("width * height overflows")?;
            Ok(vec![
                (0, px.checked_mul(2).ok_or("the YUYV size overflows")?),
                (1, px.checked_mul(4).ok_or("the RGBA size overflows")?),
            ])
        },
        disjoint: &[(0, 1)],
        units: |a| a[3].as_u32().unwrap_or(0) as usize,
        run: yuyv_units,
        engine: false,
        split: false,
    },
    Builtin {
        name: "yuyv_to_rgba_strided",
        args: &[P, P, U32, U32, U32, U32],
        extents: strided_extents,
        disjoint: &[(0, 1)],
        units: |a| a[3].as_u32().unwrap_or(0) as usize,
        run: |a, rows| {
            // SAFETY: forwarded (Builtin::run's contract).
            unsafe { strided_units(a, rows, Order::Rgba, &YuvCoefficients::BT601_LIMITED) }
        },
        engine: false,
        split: false,
    },
    Builtin {
        name: "yuyv_to_bgrx_strided",
        args: &[P, P, U32, U32, U32, U32],
        extents: strided_extents,
        disjoint: &[(0, 1)],
        units: |a| a[3].as_u32().unwrap_or(0) as usize,
        run: |a, rows| {
            // SAFETY: forwarded (Builtin::run's contract).
            unsafe { strided_units(a, rows, Order::Bgrx, &YuvCoefficients::BT601_LIMITED) }
        },
        engine: false,
        split: false,
    },
    Builtin {
        name: "yuyv_to_rgba_csc",
        args: &[P, P, U32, U32, U32, U32, CSC],
        extents: csc_extents,
        disjoint: &[(0, 1)],
        units: |a| a[3].as_u32().unwrap_or(0) as usize,
        run: |a, rows| {
            // SAFETY: forwarded (Builtin::run's contract).
            unsafe { csc_units(a, rows, Order::Rgba) }
        },
        engine: false,
        split: false,
    },
    Builtin {
        name: "yuyv_to_bgrx_csc",
        args: &[P, P, U32, U32, U32, U32, CSC],
        extents: csc_extents,
        disjoint: &[(0, 1)],
        units: |a| a[3].as_u32().unwrap_or(0) as usize,
        run: |a, rows| {
            // SAFETY: forwarded (Builtin::run's contract).
            unsafe { csc_units(a, rows, Order::Bgrx) }
        },
        engine: false,
        split: false,
    },
    super::builtin_image::YUYV_TO_RGBA_IMAGE,
    Builtin {
        name: "copy_bytes",
        args: &[P, P, U64],
        extents: |a| {
            let n = size(a, 2)?;
            Ok(vec![(0, n), (1, n)])
        },
        disjoint: &[(0, 1)],
        units: |a| a[2].as_u64().unwrap_or(0) as usize,
        run: copy_units,
        engine: false,
        split: true,
    },
];

/// The built-ins of a device with a DMA engine (edu): `dma_copy(dst, src,
/// size)` copies `size` bytes from `src` to `dst` by DMA, through the
/// engine's bus addresses (the resident IOVAs of allocations resident in its
/// IOMMU domain, per-command mappings for anything else). One transfer per
/// launch, whatever the global size (0 runs nothing).
pub(crate) static DMA_BUILTINS: &[Builtin] = &[Builtin {
    name: "dma_copy",
    args: &[P, P, U64],
    extents: |a| {
        let n = size(a, 2)?;
        Ok(vec![(0, n), (1, n)])
    },
    disjoint: &[(0, 1)],
    units: |_| 1,
    run: copy_units,
    engine: true,
    split: true,
}];

fn size(a: &[KernelArgValue], i: usize) -> Result<usize, String> {
    let v = a[i].as_u64().ok_or_else(|| format!("argument {i} is not a ulong"))?;
    usize::try_from(v).map_err(|_| format!("argument {i} ({v}) does not fit the address space"))
}

fn ptr(a: &[KernelArgValue], i: usize) -> usize {
    a[i].as_ptr().map_or(0, |p| p as usize)
}

/// Adler-32 (RFC 1950) of `data`, summing in blocks of 5552 bytes, the most
/// that cannot overflow a `u32` before the modulo.
///
/// Serves the `checksum_adler32` built-in kernel of the CPU device
/// (`clCreateProgramWithBuiltInKernels`, `clEnqueueNDRangeKernel`), and
/// lets the host check its result.
///
/// ```
/// use dmabridge::runtime::kernel::adler32;
/// assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
/// assert_eq!(adler32(&[]), 1);
/// assert_eq!(adler32(&vec![0xff; 1 << 20]), 0x8e88_ef11, "no overflow past 5552 bytes");
/// ```
pub fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    for block in data.chunks(5552) {
        for &x in block {
            a += x as u32;
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

unsafe fn adler32_units(a: &[KernelArgValue], units: Range<usize>) {
    if units.is_empty() {
        return;
    }
    let (src, n, dst) = (ptr(a, 0), a[1].as_u64().unwrap_or(0) as usize, ptr(a, 2));
    // SAFETY: the caller guarantees `src` is valid for reads of `n` bytes.
    let sum = unsafe { with_input(src as *const u8, n, adler32) };
    // SAFETY: `dst` is valid for 4 bytes and does not overlap the source.
    unsafe { with_output(dst as *mut u8, 4, |out| out.copy_from_slice(&sum.to_ne_bytes())) };
}

unsafe fn fill_units(a: &[KernelArgValue], units: Range<usize>) {
    let (dst, pattern) = (ptr(a, 0) as *mut u8, a[2].as_u32().unwrap_or(0).to_ne_bytes());
    // SAFETY: `dst` is valid for `count` u32s and the units lie below it.
    unsafe {
        with_output(dst.add(4 * units.start), 4 * units.len(), |out| {
            out.chunks_exact_mut(4).for_each(|w| w.copy_from_slice(&pattern))
        })
    };
}

unsafe fn copy_units(a: &[KernelArgValue], units: Range<usize>) {
    let (dst, src) = (ptr(a, 0) as *mut u8, ptr(a, 1) as *const u8);
    // SAFETY: both are valid for `size` bytes, do not overlap, and the range
    // lies below `size`.
    unsafe { transfer::copy_unsplit(dst.add(units.start), src.add(units.start), units.len()) };
}

/// Runs `f` over the `len` bytes at `src`; if they are I/O memory (a PCI
/// BAR mapping, [`transfer::io`]), over a copy made with aligned volatile
/// loads: no slice is ever formed over I/O memory, where the compiler's wide
/// and unaligned loads fault (Device memory on arm64).
///
/// # Safety
/// `src` must be valid for reads of `len` bytes that nothing writes during
/// the call.
unsafe fn with_input<R>(src: *const u8, len: usize, f: impl FnOnce(&[u8]) -> R) -> R {
    if len == 0 {
        return f(&[]);
    }
    if transfer::io::is_io(HostAddr::of(src), len) {
        let mut staged = vec![0u8; len];
        // SAFETY: `src` as the caller guarantees; `staged` is ours.
        unsafe { transfer::copy_unsplit(staged.as_mut_ptr(), src, len) };
        return f(&staged);
    }
    // SAFETY: ordinary memory, valid and unwritten (the caller).
    f(unsafe { std::slice::from_raw_parts(src, len) })
}

/// Runs `f` over the `len` bytes at `dst` to write them; if they are I/O
/// memory, over a staging buffer then copied there with aligned volatile
/// stores (see [`with_input`]).
///
/// # Safety
/// `dst` must be valid for writes of `len` bytes that nothing else
/// accesses during the call.
unsafe fn with_output(dst: *mut u8, len: usize, f: impl FnOnce(&mut [u8])) {
    if len == 0 {
        return;
    }
    if transfer::io::is_io(HostAddr::of(dst), len) {
        let mut staged = vec![0u8; len];
        f(&mut staged);
        // SAFETY: `dst` as the caller guarantees; `staged` is ours.
        unsafe { transfer::copy_unsplit(dst, staged.as_ptr(), len) };
        return;
    }
    // SAFETY: ordinary memory, valid and unshared (the caller).
    f(unsafe { std::slice::from_raw_parts_mut(dst, len) })
}

/// One BT.601 limited-range YUV sample to RGB (the integer form of
/// ITU-R BT.601: 8-bit fixed point, rounded).
///
/// Serves the `yuyv_to_rgba` built-in kernel of the CPU device
/// (`clCreateProgramWithBuiltInKernels`, `clEnqueueNDRangeKernel`), and
/// lets the host check its result.
///
/// ```
/// use dmabridge::runtime::kernel::yuv_to_rgb;
/// assert_eq!(yuv_to_rgb(16, 128, 128), [0, 0, 0], "limited-range black");
/// assert_eq!(yuv_to_rgb(235, 128, 128), [255, 255, 255], "limited-range white");
/// assert_eq!(yuv_to_rgb(81, 90, 240), [255, 0, 0], "red");
/// ```
pub fn yuv_to_rgb(y: u8, u: u8, v: u8) -> [u8; 3] {
    YuvCoefficients::BT601_LIMITED.convert(y, u, v)
}

unsafe fn yuyv_units(a: &[KernelArgValue], rows: Range<usize>) {
    let (src, dst, w) = (ptr(a, 0) as *const u8, ptr(a, 1) as *mut u8, a[2].as_u32().unwrap_or(0) as usize);
    for r in rows {
        // SAFETY: rows below `height` lie inside the two extents, which do
        // not overlap; other threads write other rows.
        unsafe {
            with_input(src.add(r * w * 2), w * 2, |s| {
                with_output(dst.add(r * w * 4), w * 4, |d| {
                    convert_line(s, d, Order::Rgba, &YuvCoefficients::BT601_LIMITED)
                })
            })
        };
    }
}

/// `(width, height, source stride, destination stride)` of the strided
/// conversions: lines of video frames are padded (GStreamer rounds YUY2 lines
/// to 4 bytes, pools add alignment), so each image has its own stride.
fn strided_dims(a: &[KernelArgValue]) -> [usize; 4] {
    [2, 3, 4, 5].map(|i| a[i].as_u32().unwrap_or(0) as usize)
}

/// Extents of `yuyv_to_{rgba,bgrx}_strided(src, dst, width, height,
/// src_stride, dst_stride)`: an odd width is allowed (its last pair gives one
/// pixel), the strides must hold a line, and the last line needs only its
/// own bytes (not a whole stride).
fn strided_extents(a: &[KernelArgValue]) -> Result<Extents, String> {
    let [w, h, ss, ds] = strided_dims(a);
    let (src_line, dst_line) = (w.div_ceil(2) * 4, w.checked_mul(4).ok_or("width * 4 overflows")?);
    if ss < src_line {
        return Err(format!("source stride {ss} is shorter than a YUYV line of {w} pixels ({src_line} bytes)"));
    }
    if ds < dst_line {
        return Err(format!("destination stride {ds} is shorter than a line of {w} 4-byte pixels ({dst_line} bytes)"));
    }
    let extent = |stride: usize, line: usize| match h {
        0 => Some(0),
        _ => (h - 1).checked_mul(stride)?.checked_add(line),
    };
    Ok(vec![
        (0, extent(ss, src_line).ok_or("height * source stride overflows")?),
        (1, extent(ds, dst_line).ok_or("height * destination stride overflows")?),
    ])
}

/// Converts the lines `rows` of a strided YUYV image with the coefficients
/// `c` into 4-byte pixels in `order`.
///
/// # Safety
/// As [`Builtin::run`]: the extents of [`strided_extents`] are valid, do not
/// overlap, and nothing else writes the lines of `rows`.
unsafe fn strided_units(a: &[KernelArgValue], rows: Range<usize>, order: Order, c: &YuvCoefficients) {
    let [w, _, ss, ds] = strided_dims(a);
    // SAFETY: forwarded: the extents of strided_extents are valid for the
    // strides and width given here.
    unsafe { convert_rows(ptr(a, 0) as *const u8, ptr(a, 1) as *mut u8, w, ss, ds, rows, (order, c)) }
}

/// The coefficients of `yuyv_to_{rgba,bgrx}_csc` (argument 6), or what is
/// wrong with them.
fn csc_coefficients(a: &[KernelArgValue]) -> Result<YuvCoefficients, String> {
    let bytes = a[6].as_bytes().ok_or("argument 6 (the coefficients) is not a short8")?;
    YuvCoefficients::from_arg(bytes).map_err(|e| format!("argument 6: {e}"))
}

/// Extents of `yuyv_to_{rgba,bgrx}_csc`: the strided ones, once the
/// coefficients are known to be usable.
fn csc_extents(a: &[KernelArgValue]) -> Result<Extents, String> {
    csc_coefficients(a)?;
    strided_extents(a)
}

/// [`strided_units`] with the coefficients of argument 6.
///
/// # Safety
/// As [`strided_units`].
unsafe fn csc_units(a: &[KernelArgValue], rows: Range<usize>, order: Order) {
    // Checked by csc_extents before any launch; a launch never runs units
    // with arguments its extents refused.
    let Ok(c) = csc_coefficients(a) else { return };
    // SAFETY: forwarded.
    unsafe { strided_units(a, rows, order, &c) }
}

/// Converts the lines `rows` of a YUYV image of `w` pixels a line, lines
/// `ss` bytes apart at `src`, into 4-byte pixels in `order`, lines `ds`
/// bytes apart at `dst`: the one conversion of the strided built-ins and
/// of their image form (`builtin_image`), so both give the same bytes.
///
/// # Safety
/// Line `r` of each `rows` is valid at `src + r * ss` for `w.div_ceil(2) * 4`
/// bytes and at `dst + r * ds` for `w * 4` bytes, the two do not overlap,
/// and nothing else writes the destination lines.
pub(super) unsafe fn convert_rows(
    src: *const u8,
    dst: *mut u8,
    w: usize,
    ss: usize,
    ds: usize,
    rows: Range<usize>,
    (order, c): (Order, &YuvCoefficients),
) {
    for r in rows {
        // SAFETY: line `r` lies inside both extents (the caller); other
        // threads convert other lines.
        unsafe {
            with_input(src.add(r * ss), w.div_ceil(2) * 4, |s| {
                with_output(dst.add(r * ds), w * 4, |d| convert_line(s, d, order, c))
            })
        };
    }
}
