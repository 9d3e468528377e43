//! The element's GObject implementation: the `device` property, state
//! changes (the engine is made at start, so a device that cannot convert
//! is refused there), caps, allocation and the per-frame conversion.

use std::sync::{LazyLock, Mutex};

use dmabridge::runtime::kernel::YuvCoefficients;
use dmabridge::sync;
use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::subclass::prelude::*;
use gst_video::prelude::*;
use gst_video::subclass::prelude::*;

use super::caps;
use super::engine::{Engine, Input};
use super::foreign::foreign_dma_buf;
use crate::allocator::{exports_available, DmabridgeAllocator};
use crate::pool::video_pool;

static CAT: LazyLock<gst::DebugCategory> = LazyLock::new(|| {
    gst::DebugCategory::new("dmabridgeconvert", gst::DebugColorFlags::empty(), Some("dmabridge YUY2 converter"))
});

const DEFAULT_DEVICE: &str = "cpu";

pub struct DmabridgeConvert {
    device: Mutex<String>,
    engine: Mutex<Option<Engine>>,
    /// The output's format and the input colorimetry's coefficients, set
    /// by `set_info`.
    conversion: Mutex<Option<(gst_video::VideoFormat, YuvCoefficients)>>,
    /// The input's and the output's video info, set by `set_info`: what
    /// the conversion of a foreign dma-buf lays the frames out by.
    infos: Mutex<Option<(gst_video::VideoInfo, gst_video::VideoInfo)>>,
    /// Foreign dma-bufs imported by engines since stopped.
    imported_before: Mutex<u64>,
    /// The memory of the pool offered upstream, and of the output's pool:
    /// one allocator each, so each pool's allocations can be told apart.
    upstream: DmabridgeAllocator,
    output: DmabridgeAllocator,
}

impl Default for DmabridgeConvert {
    fn default() -> Self {
        DmabridgeConvert {
            device: Mutex::new(DEFAULT_DEVICE.into()),
            engine: Mutex::new(None),
            conversion: Mutex::new(None),
            infos: Mutex::new(None),
            imported_before: Mutex::new(0),
            upstream: DmabridgeAllocator::new(),
            output: DmabridgeAllocator::new(),
        }
    }
}

#[glib::object_subclass]
impl ObjectSubclass for DmabridgeConvert {
    const NAME: &'static str = "GstDmabridgeConvert";
    type Type = super::DmabridgeConvert;
    type ParentType = gst_video::VideoFilter;
}

impl ObjectImpl for DmabridgeConvert {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            vec![
                glib::ParamSpecString::builder("device")
                .nick("Device")
                .blurb("dmabridge device that converts: \"cpu\" (default) or a device name as `dmabridge info` lists it; a device without the conversion kernels is refused when the element starts")
                .default_value(Some(DEFAULT_DEVICE))
                .mutable_ready()
                .build(),
                glib::ParamSpecUInt64::builder("imported")
                    .nick("Imported dma-bufs")
                    .blurb("Foreign dma-bufs (of another allocator, e.g. v4l2src io-mode=dmabuf) imported into the device's context and converted where they are, each once")
                    .read_only()
                    .build(),
            ]
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if pspec.name() == "device" {
            let v: Option<String> = value.get().unwrap_or(None);
            *sync::lock(&self.device) = v.unwrap_or_else(|| DEFAULT_DEVICE.into());
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        match pspec.name() {
            "device" => sync::lock(&self.device).to_value(),
            "imported" => {
                let now = sync::lock(&self.engine).as_ref().map_or(0, |e| e.imported());
                (*sync::lock(&self.imported_before) + now).to_value()
            }
            other => {
                gst::warning!(CAT, imp = self, "no property {other}");
                glib::Value::from_type(pspec.value_type())
            }
        }
    }
}

impl GstObjectImpl for DmabridgeConvert {}

impl ElementImpl for DmabridgeConvert {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "dmabridge converter",
                "Filter/Converter/Video",
                "Converts YUY2 (BT.601 or BT.709, limited or full range) to RGBA or BGRx with dmabridge's built-in kernels on a dmabridge queue, \
                 in place in the frames' memory (no copy; other allocators' dma-bufs through dmabridge's dma-buf import, or an error \
                 naming the device); offers upstream a pool of dmabridge memory exported as dma-bufs",
                "dmabridge developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            let make = |name, dir, caps: gst::Caps| {
                gst::PadTemplate::new(name, dir, gst::PadPresence::Always, &caps).expect("valid template")
            };
            vec![
                make("sink", gst::PadDirection::Sink, caps::sink_caps()),
                make("src", gst::PadDirection::Src, caps::src_caps()),
            ]
        });
        TEMPLATES.as_ref()
    }
}

impl DmabridgeConvert {
    /// A pool of `allocator`'s memory for `caps`, or why not (no dma-buf
    /// exports here).
    fn pool(allocator: &DmabridgeAllocator, caps: &gst::Caps, min: u32) -> Result<(gst::BufferPool, u32), String> {
        exports_available()?;
        video_pool(allocator, caps, min, 0)
    }
}

impl DmabridgeConvert {
    /// Posts `why` as the element's error and fails the frame.
    fn fail(&self, why: String) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ("{why}"));
        gst::FlowError::Error
    }

    /// Converts `inbuf`, a foreign dma-buf (`fd`, its memory at `offset`),
    /// through dmabridge's import into the engine's context: the device
    /// reads it where it is; the output is mapped as usual.
    fn transform_foreign(
        &self,
        inbuf: &gst::Buffer,
        fd: std::os::fd::BorrowedFd<'_>,
        offset: usize,
        outbuf: &mut gst::BufferRef,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let (Some((in_info, out_info)), Some((format, csc))) =
            (sync::lock(&self.infos).clone(), *sync::lock(&self.conversion))
        else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ("dmabridgeconvert has no caps yet"));
            return Err(gst::FlowError::NotNegotiated);
        };
        // The plane's layout: the buffer's GstVideoMeta where it has one.
        let (in_offset, in_stride) = match inbuf.meta::<gst_video::VideoMeta>() {
            Some(m) => (m.offset()[0], m.stride()[0]),
            None => (in_info.offset()[0], in_info.stride()[0]),
        };
        let in_stride = usize::try_from(in_stride).map_err(|_| self.fail(format!("input stride {in_stride}")))?;
        let mut out = gst_video::VideoFrameRef::from_buffer_ref_writable(outbuf, &out_info)
            .map_err(|_| self.fail("mapping the output frame failed".into()))?;
        let out_stride = out.plane_stride()[0].max(0) as usize;
        let mut engine = sync::lock(&self.engine);
        let Some(engine) = engine.as_mut() else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ("dmabridgeconvert is not started"));
            return Err(gst::FlowError::NotNegotiated);
        };
        let input = engine.import(fd, offset + in_offset).map_err(|why| self.fail(why))?;
        let output = out.plane_data_mut(0).map_err(|_| gst::FlowError::Error)?;
        let (w, h) = (in_info.width(), in_info.height());
        engine
            .convert(format, &csc, Input::Imported(input), in_stride, output, out_stride, w, h)
            .map_err(|why| self.fail(why))?;
        Ok(gst::FlowSuccess::Ok)
    }
}

impl BaseTransformImpl for DmabridgeConvert {
    const MODE: gst_base::subclass::BaseTransformMode = gst_base::subclass::BaseTransformMode::NeverInPlace;
    const PASSTHROUGH_ON_SAME_CAPS: bool = false;
    const TRANSFORM_IP_ON_PASSTHROUGH: bool = false;

    fn start(&self) -> Result<(), gst::ErrorMessage> {
        let device = sync::lock(&self.device).clone();
        let engine = Engine::new(&device).map_err(|why| gst::error_msg!(gst::LibraryError::Settings, ("{why}")))?;
        *sync::lock(&self.engine) = Some(engine);
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        if let Some(e) = sync::lock(&self.engine).take() {
            *sync::lock(&self.imported_before) += e.imported();
        }
        *sync::lock(&self.infos) = None;
        *sync::lock(&self.conversion) = None;
        Ok(())
    }

    fn transform_caps(
        &self,
        direction: gst::PadDirection,
        caps: &gst::Caps,
        filter: Option<&gst::Caps>,
    ) -> Option<gst::Caps> {
        Some(caps::transform(direction, caps, filter))
    }

    /// A foreign dma-buf in is imported and read where it is (see
    /// `foreign`); anything else goes the video filter's way (frames
    /// mapped, then `transform_frame`).
    fn transform(&self, inbuf: &gst::Buffer, outbuf: &mut gst::BufferRef) -> Result<gst::FlowSuccess, gst::FlowError> {
        match foreign_dma_buf(inbuf) {
            Some((fd, offset)) => self.transform_foreign(inbuf, fd, offset, outbuf),
            None => self.parent_transform(inbuf, outbuf),
        }
    }

    /// Upstream gets our pool (dmabridge memory, `GstVideoMeta`) when
    /// dmabridge can export here. Nothing is forwarded downstream: the
    /// element never passes its input buffers on.
    fn propose_allocation(
        &self,
        _decide_query: Option<&gst::query::Allocation>,
        query: &mut gst::query::Allocation,
    ) -> Result<(), gst::LoggableError> {
        query.add_allocation_meta::<gst_video::VideoMeta>(None);
        let (Some(caps), need_pool) = query.get_owned() else {
            return Ok(());
        };
        if !need_pool {
            return Ok(());
        }
        match Self::pool(&self.upstream, &caps, 2) {
            Ok((pool, size)) => {
                query.add_allocation_param(
                    Some(self.upstream.upcast_ref::<gst::Allocator>()),
                    gst::AllocationParams::default(),
                );
                query.add_allocation_pool(Some(&pool), size, 2, 0);
            }
            Err(why) => gst::info!(CAT, imp = self, "no dmabridge pool offered upstream: {why}"),
        }
        Ok(())
    }

    /// Output buffers come from our pool where dmabridge can export (first
    /// in the query, so the default decision takes it); otherwise from what
    /// downstream offers.
    fn decide_allocation(&self, query: &mut gst::query::Allocation) -> Result<(), gst::LoggableError> {
        let (Some(caps), _) = query.get_owned() else {
            return Err(gst::loggable_error!(CAT, "allocation query without caps"));
        };
        match Self::pool(&self.output, &caps, 2) {
            Ok((pool, size)) => {
                let params = gst::AllocationParams::default();
                let allocator = Some(self.output.upcast_ref::<gst::Allocator>());
                if query.allocation_params().len() == 0 {
                    query.add_allocation_param(allocator, params);
                } else {
                    query.set_nth_allocation_param(0, allocator, params);
                }
                if query.allocation_pools().len() == 0 {
                    query.add_allocation_pool(Some(&pool), size, 2, 0);
                } else {
                    query.set_nth_allocation_pool(0, Some(&pool), size, 2, 0);
                }
            }
            Err(why) => gst::info!(CAT, imp = self, "output in downstream's memory: {why}"),
        }
        self.parent_decide_allocation(query)
    }
}

impl VideoFilterImpl for DmabridgeConvert {
    fn set_info(
        &self,
        _incaps: &gst::Caps,
        in_info: &gst_video::VideoInfo,
        _outcaps: &gst::Caps,
        out_info: &gst_video::VideoInfo,
    ) -> Result<(), gst::LoggableError> {
        let csc = caps::coefficients(in_info).map_err(|why| {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ("{why}"));
            gst::loggable_error!(CAT, "{why}")
        })?;
        *sync::lock(&self.conversion) = Some((out_info.format(), csc));
        *sync::lock(&self.infos) = Some((in_info.clone(), out_info.clone()));
        Ok(())
    }

    fn transform_frame(
        &self,
        inframe: &gst_video::VideoFrameRef<&gst::BufferRef>,
        outframe: &mut gst_video::VideoFrameRef<&mut gst::BufferRef>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let (w, h) = (inframe.width(), inframe.height());
        let Some((format, csc)) = *sync::lock(&self.conversion) else {
            gst::element_imp_error!(self, gst::CoreError::Negotiation, ("dmabridgeconvert has no caps yet"));
            return Err(gst::FlowError::NotNegotiated);
        };
        let in_stride = inframe.plane_stride()[0].max(0) as usize;
        let out_stride = outframe.plane_stride()[0].max(0) as usize;
        let engine = sync::lock(&self.engine);
        let Some(engine) = engine.as_ref() else {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("dmabridgeconvert is not started: it has no dmabridge queue")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        let input = inframe.plane_data(0).map_err(|_| gst::FlowError::Error)?;
        let output = outframe.plane_data_mut(0).map_err(|_| gst::FlowError::Error)?;
        engine.convert(format, &csc, Input::Mapped(input), in_stride, output, out_stride, w, h).map_err(|why| {
            gst::element_imp_error!(self, gst::StreamError::Failed, ("{why}"));
            gst::FlowError::Error
        })?;
        Ok(gst::FlowSuccess::Ok)
    }
}
