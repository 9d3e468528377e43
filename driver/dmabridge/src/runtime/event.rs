//! Events. Being written.
