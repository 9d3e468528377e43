//! Layer 3: runtime — device backends now; platform, contexts, queues and events next.

pub mod backend;
