//! dmabridge — a userspace memory driver for zero-copy Linux pipelines.
//!
//! The crate is layered as `docs/ARCHITECTURE.md` describes; each layer is a
//! folder and depends only on the ones below it:
//!
//! 1. [`sys`] — kernel interfaces: one small module per kernel object (memfd,
//!    mappings, udmabuf, dma-buf, DMA-BUF heaps, DRM PRIME, V4L2, VFIO,
//!    eventfd, io_uring, PCI sysfs, the process's address space, the machine
//!    probe), safe types over owned fds, errors that carry the operation and
//!    the errno.
//! 2. [`memory`] — the address reservation and allocation table, the memfd
//!    heap, IOVA allocation, sub-allocation of a device's BAR.
//! 3. [`runtime`] — platform, devices, contexts, queues, events, kernels
//!    (built-in, native, and OpenCL C from source through PoCL), buffer
//!    objects, transfers, info queries, and the device backends (edu's DMA
//!    engine, the BAR device, the DMA domain and residency).
//! 4. [`ext`] — one module per OpenCL extension (USM, SVM,
//!    `cl_amd_bus_addressable_memory`, `cl_arm_import_memory`,
//!    `cl_dmabridge_dma_buf_export`), speaking its vocabulary; errors are
//!    [`error::ClError`], one variant per CL code.
//! 5. [`pipeline`] — pipelines end to end: the V4L2 capture pipeline
//!    (frames written by the driver into dmabridge memory, converted in place)
//!    and dropped-frame counting.
//!
//! [`sync`] beside them holds the one lock policy: locks are taken also
//! after a panic poisoned them (why that is sound is written there).
//!
//! The faces (C ABI as an OpenCL ICD, CLI) build on these.
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

pub mod error;
pub mod ext;
pub mod memory;
pub mod pipeline;
pub mod runtime;
pub mod sync;
pub mod sys;

/// The README's Rust example, compiled as a doctest so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;
