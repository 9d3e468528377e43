//! Queues. Being written.
