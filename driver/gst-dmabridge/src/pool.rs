//! The video buffer pool over dmabridge memory: GStreamer's own
//! `GstVideoBufferPool` (it lays planes out and attaches `GstVideoMeta` with
//! the strides and offsets) configured with [`DmabridgeAllocator`], so every
//! buffer it makes is one dmabridge export. A subclass would add nothing.

use gst::prelude::*;

use crate::allocator::DmabridgeAllocator;

/// A pool of `min..=max` (0: unlimited) buffers of `caps` (raw video) from
/// `allocator`, with `GstVideoMeta` on every buffer.
pub fn video_pool(
    allocator: &DmabridgeAllocator,
    caps: &gst::Caps,
    min: u32,
    max: u32,
) -> Result<(gst::BufferPool, u32), String> {
    let info = gst_video::VideoInfo::from_caps(caps).map_err(|e| format!("{caps} is not raw video: {e}"))?;
    let size =
        u32::try_from(info.size()).map_err(|_| format!("a {} byte frame is too large for a pool", info.size()))?;
    let pool = gst_video::VideoBufferPool::new();
    let mut config = pool.config();
    config.set_params(Some(caps), size, min, max);
    config.set_allocator(Some(allocator.upcast_ref::<gst::Allocator>()), None);
    config.add_option(gst_video::BUFFER_POOL_OPTION_VIDEO_META);
    pool.set_config(config).map_err(|e| format!("configuring the dmabridge pool for {caps}: {e}"))?;
    Ok((pool.upcast(), size))
}
