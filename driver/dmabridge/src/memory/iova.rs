//! iova
