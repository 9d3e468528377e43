//! dmabridge inside GStreamer pipelines (issue 19): a dma-buf allocator and
//! video buffer pool whose memory is dmabridge memory
//! ([`allocator::DmabridgeAllocator`], [`pool::video_pool`]), and the
//! `dmabridgeconvert` element, which converts YUY2 to RGBA or BGRx with
//! dmabridge's built-in kernels on a dmabridge queue, reading and writing
//! the frames where they are (no copy), and offers its pool upstream.
//!
//! The plugin is `libgstdmabridge.so`; `make install` puts it in
//! GStreamer's plugin directory.

use gst::glib;

pub mod allocator;
mod convert;
pub mod pool;

pub use allocator::DmabridgeAllocator;

/// Registers the plugin's elements and allocator with `plugin`.
fn plugin_init(plugin: &gst::Plugin) -> Result<(), glib::BoolError> {
    allocator::register();
    convert::register(plugin)
}

gst::plugin_define!(
    dmabridge,
    env!("CARGO_PKG_DESCRIPTION"),
    plugin_init,
    concat!(env!("CARGO_PKG_VERSION"), "-", env!("COMMIT_ID")),
    "MIT/X11",
    env!("CARGO_PKG_NAME"),
    env!("CARGO_PKG_NAME"),
    "https://example.invalid/dmabridge",
    env!("BUILD_REL_DATE")
);
