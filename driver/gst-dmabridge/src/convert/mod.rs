//! `dmabridgeconvert`: YUY2 (BT.601 or BT.709, limited or full range) to
//! RGBA or BGRx with dmabridge's built-in kernels `yuyv_to_rgba_csc` /
//! `yuyv_to_bgrx_csc` (the colorimetry's coefficients an argument) on a
//! dmabridge queue of the `device` property's device (the CPU by default).
//! The kernels read the input frame and write the output frame where they
//! are (the pointers of the mapped frames, with their strides; a foreign
//! dma-buf in, through dmabridge's dma-buf import, see `foreign`): no byte
//! is copied. The element offers upstream a pool of
//! dmabridge memory (dma-buf exports, `GstVideoMeta`) and takes its output
//! buffers from one, where dmabridge can export dma-bufs.

mod caps;
mod engine;
mod foreign;
mod imp;

use gst::glib;
use gst::prelude::*;

glib::wrapper! {
    /// The element (GType `GstDmabridgeConvert`).
    pub struct DmabridgeConvert(ObjectSubclass<imp::DmabridgeConvert>)
        @extends gst_video::VideoFilter, gst_base::BaseTransform, gst::Element, gst::Object;
}

/// Registers `dmabridgeconvert` with `plugin`.
pub fn register(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    gst::Element::register(Some(plugin), "dmabridgeconvert", gst::Rank::NONE, DmabridgeConvert::static_type())
}
