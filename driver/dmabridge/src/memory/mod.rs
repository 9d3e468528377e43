//! Layer 2: memory.
//!
//! - [`vaspace`]: the address reservation every heap allocation lives in;
//! - `exports` (private): the registry of the dma-bufs made from the heap's
//!   memfd pages, which imports of them pin in their place;
//! - `table` (private): lock-free "which allocation holds this pointer";
//! - [`heap`]: memfd-backed host and shared allocations, pooled, exportable
//!   as dma-bufs;
//! - [`iova`]: IOVA allocation under a device's DMA mask;
//! - [`local`]: sub-allocation of a device's local memory (a PCI BAR).

pub(crate) mod exports;
pub mod heap;
pub mod iova;
pub mod local;
pub(crate) mod table;
pub mod vaspace;
