//! Layer 5: pipelines — kernel drivers, the runtime and the extensions put
//! together end to end, for the faces (the `dmabridge` command) and the
//! tests to share.
//!
//! [`capture`]: a V4L2 capture (or output) device streaming frames straight
//! into dmabridge allocations exported as dma-bufs, or out of the driver's
//! own buffers imported as dmabridge buffers, converted by a built-in kernel
//! on a dmabridge queue — no frame byte copied by dmabridge.
//!
//! [`sequence`]: dropped frames, counted from a driver's sequence numbers.

pub mod capture;
pub mod sequence;
