//! Machine capability report (`dmabridge info`). Being written.
