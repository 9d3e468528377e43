//! Layer 3: runtime — platform, devices, contexts, command queues, events,
//! and the device backends that execute commands.

pub mod backend;
pub mod buffer;
pub mod context;
pub mod device;
pub mod event;
pub mod fence;
pub(crate) mod free_gate;
pub mod image;
pub mod info;
pub mod kernel;
pub mod platform;
pub mod program;
pub mod queue;
pub mod transfer;
