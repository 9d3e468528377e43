//! USM. Being written.
