//! Device backends: the engines that execute DMA for a device.

pub mod edu;
