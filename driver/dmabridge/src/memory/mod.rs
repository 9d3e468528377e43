//! Layer 2: memory — IOVA allocation now; backings, the allocation table, pools and residency next.

pub mod iova;
