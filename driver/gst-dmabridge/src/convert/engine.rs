//! The dmabridge side of `dmabridgeconvert`: the device, its context,
//! queue and built-in kernels, and one conversion.

use std::sync::Arc;

use dmabridge::runtime::buffer::Buffer;
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType};
use dmabridge::runtime::event::Event;
use dmabridge::runtime::kernel::{self, Kernel, YuvCoefficients};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};

use super::caps::OUTPUTS;
use super::foreign::Imports;

/// The frame a conversion reads.
pub enum Input<'a> {
    /// Mapped by GStreamer (the element's own memory, system memory).
    Mapped(&'a [u8]),
    /// A buffer of the engine's context over a foreign dma-buf
    /// ([`Engine::import`]), from the frame's first byte.
    Imported(Arc<Buffer>),
}

/// The device named by the `device` property: `cpu` (the CPU device), or a
/// device's name (`CL_DEVICE_NAME`, as `dmabridge info` lists them).
fn find_device(name: &str) -> Result<Arc<Device>, String> {
    let p = Platform::get();
    if name.eq_ignore_ascii_case("cpu") {
        return Ok(p.cpu().clone());
    }
    let devices = p.devices();
    devices
        .iter()
        .find(|d| d.name == name || d.device_type == DeviceType::Cpu && d.name.eq_ignore_ascii_case(name))
        .cloned()
        .ok_or_else(|| {
            let names: Vec<String> = devices.iter().map(|d| format!("{:?}", d.name)).collect();
            format!("device={name:?}: dmabridge has no such device here; it has {} (or \"cpu\")", names.join(", "))
        })
}

/// A context, queue and the conversion kernels on one device.
pub struct Engine {
    queue: Arc<Queue>,
    imports: Imports,
    kernels: Vec<(gst_video::VideoFormat, Arc<Kernel>)>,
    device: String,
}

impl Engine {
    /// Everything on `device`: refused, naming the device and the kernel,
    /// when the device lacks a conversion built-in (edu has only `dma_copy`).
    pub fn new(device: &str) -> Result<Engine, String> {
        let dev = find_device(device)?;
        let ctx = Context::new(std::slice::from_ref(&dev))
            .map_err(|e| format!("making a dmabridge context on device {:?}: {e}", dev.name))?;
        let queue = Queue::new(&ctx, &dev, QueueProps::default())
            .map_err(|e| format!("making a dmabridge queue on device {:?}: {e}", dev.name))?;
        let offered = kernel::builtin_kernels_string(&dev);
        let mut kernels = Vec::new();
        for &(format, name) in OUTPUTS {
            let k = Kernel::builtin(&ctx, &dev, name).map_err(|e| {
                format!(
                    "device {:?} cannot convert: it has no built-in kernel {name} (its built-ins: {:?}; {e}); use device=cpu",
                    dev.name,
                    offered
                )
            })?;
            kernels.push((format, k));
        }
        Ok(Engine { queue, imports: Imports::new(ctx), kernels, device: dev.name.clone() })
    }

    /// The foreign dma-buf `fd` from byte `offset` on as a buffer the
    /// device reads where it is, or why it cannot (naming the device).
    pub fn import(&mut self, fd: std::os::fd::BorrowedFd<'_>, offset: usize) -> Result<Arc<Buffer>, String> {
        self.imports.import(fd, offset, &self.device)
    }

    /// Foreign dma-bufs imported since the engine was made.
    pub fn imported(&self) -> u64 {
        self.imports.made()
    }

    /// Converts `input` (YUY2 lines of `in_stride` bytes) into `output`
    /// (4-byte pixels in `format`, lines of `out_stride` bytes), `width` x
    /// `height` pixels, with the colorimetry's coefficients `csc`, and
    /// waits for the kernel.
    #[allow(clippy::too_many_arguments)]
    pub fn convert(
        &self,
        format: gst_video::VideoFormat,
        csc: &YuvCoefficients,
        input: Input<'_>,
        in_stride: usize,
        output: &mut [u8],
        out_stride: usize,
        width: u32,
        height: u32,
    ) -> Result<(), String> {
        let Some((_, k)) = self.kernels.iter().find(|(f, _)| *f == format) else {
            return Err(format!("no conversion to {format:?}"));
        };
        let stride = |s: usize| u32::try_from(s).map_err(|_| format!("stride {s} does not fit 32 bits"));
        let dst = output.as_mut_ptr() as *const u8;
        let in_len = match &input {
            Input::Mapped(s) => s.len(),
            Input::Imported(b) => b.size(),
        };
        let scalars = [width, height, stride(in_stride)?, stride(out_stride)?];
        let set = || -> Result<(), dmabridge::error::ClError> {
            match &input {
                Input::Mapped(s) => k.set_arg_mem_pointer(0, s.as_ptr())?,
                Input::Imported(b) => k.set_arg_buffer(0, b)?,
            }
            k.set_arg_mem_pointer(1, dst)?;
            for (i, v) in scalars.iter().enumerate() {
                k.set_arg_scalar(2 + i as u32, &v.to_ne_bytes())?;
            }
            k.set_arg_scalar(6, &csc.to_arg())
        };
        set().map_err(|e| format!("setting {}'s arguments: {e}", k.name()))?;
        let (in_need, out_need) = needs(width as usize, height as usize, in_stride, out_stride);
        if in_len < in_need || output.len() < out_need {
            return Err(format!(
                "{width}x{height} needs {in_need} input and {out_need} output bytes; the frames have {} and {}",
                in_len,
                output.len()
            ));
        }
        // The extents the kernel checks (lines of the strides given, the
        // last one only its pixels) lie inside `input` and `output`
        // (checked just above), which the caller's borrows (or the imported
        // buffer, held by the launch) keep mapped and unaliased until the
        // wait below returns.
        // SAFETY: as above.
        let event = unsafe { kernel::enqueue_nd_range(&self.queue, k, height as usize, &[]) }
            .map_err(|e| format!("launching {} on {:?}: {e}", k.name(), self.device))?;
        Event::wait(&[event]).map_err(|e| format!("{} on {:?} failed: {e}", k.name(), self.device))
    }
}

/// Bytes the kernels touch in the input and the output.
fn needs(w: usize, h: usize, in_stride: usize, out_stride: usize) -> (usize, usize) {
    match h {
        0 => (0, 0),
        _ => ((h - 1) * in_stride + w.div_ceil(2) * 4, (h - 1) * out_stride + w * 4),
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Err(e) = self.queue.finish() {
            log::warn!("dmabridgeconvert: finishing the queue: {e}");
        }
    }
}
