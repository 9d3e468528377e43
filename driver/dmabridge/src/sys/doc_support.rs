//! What the doc examples share, hidden from the documentation: not part of
//! the API (no semver promise), public only because doc examples are
//! compiled as separate crates.

/// The value of `r`, or `None` after printing the error: a doc example
/// that needs a device this machine may lack (udmabuf, vgem, a DMA-BUF
/// heap) takes what it needs with
/// `# let Some(dev) = dmabridge::sys::doc_support::or_skip(DrmDevice::open_vgem()) else { return Ok(()) };`
/// and ends early without it; `make test-guest-doc` runs it in full in the
/// QEMU guest, where the devices are.
pub fn or_skip<T, E: std::fmt::Display>(r: Result<T, E>) -> Option<T> {
    r.map_err(|e| println!("{e}")).ok()
}
