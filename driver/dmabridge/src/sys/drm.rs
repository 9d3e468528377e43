//! DRM PRIME (vgem). Being written.
