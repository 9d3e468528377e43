//! What PoCL's compiler adds to the CPU device's answers: the OpenCL C
//! extensions and features it really gives, read from PoCL's device when it
//! is loaded, and the double-precision answers that go with `cl_khr_fp64`.
//!
//! Not everything PoCL's device lists is the compiler's: `cl_khr_spir`,
//! `cl_khr_command_buffer` or `cl_khr_il_program` are API extensions that
//! dmabridge's platform would have to implement itself. So PoCL's lists are
//! filtered, never extended: an extension is passed on when it is an OpenCL C
//! language extension whose whole support is the compiler and the CPU
//! ([`LANGUAGE_EXTENSIONS`]), a feature when dmabridge's device answers the
//! queries the feature depends on ([`feature_holds`]). What PoCL lacks is
//! never claimed; what PoCL has that dmabridge cannot back is left out.

use opencl_sys::*;

use crate::runtime::device::Device;
use crate::runtime::info::{self, InfoValue};

/// The OpenCL C extensions that need nothing of the platform beyond
/// compiling and running kernels on the host's CPU (atomics, byte stores,
/// double precision), and `cl_khr_3d_image_writes`, which also needs the
/// device's 3D images (the bridge passes 3D images to PoCL, written in
/// place: `tests/icd/pocl_programs_test.c`): passed on when PoCL's device
/// lists them. Other image extensions (`cl_khr_depth_images`, mipmaps) need
/// image kinds dmabridge lacks.
pub const LANGUAGE_EXTENSIONS: &[&str] = &[
    "cl_khr_byte_addressable_store",
    "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics",
    "cl_khr_local_int32_extended_atomics",
    "cl_khr_int64_base_atomics",
    "cl_khr_int64_extended_atomics",
    "cl_khr_fp64",
    "cl_khr_3d_image_writes",
];

/// What OpenCL 3.0 requires of every device whose OpenCL C version is 1.1
/// or later (`CL_DEVICE_EXTENSIONS`, "must be returned by all devices that
/// support OpenCL C 1.1").
pub const REQUIRED_BY_OPENCL_C_1_1: &[&str] = &[
    "cl_khr_byte_addressable_store",
    "cl_khr_global_int32_base_atomics",
    "cl_khr_global_int32_extended_atomics",
    "cl_khr_local_int32_base_atomics",
    "cl_khr_local_int32_extended_atomics",
];

/// PoCL's language: its extensions and features as dmabridge passes them on.
#[derive(Debug, Default, Clone)]
pub struct Language {
    /// (version, name) of PoCL's extensions that are in [`LANGUAGE_EXTENSIONS`];
    /// [`Language::extensions`] filters them for a device.
    pub all_extensions: Vec<(u32, String)>,
    /// (version, name) of all of PoCL's `CL_DEVICE_OPENCL_C_FEATURES`;
    /// [`Language::features`] filters them for a device.
    pub all_features: Vec<(u32, String)>,
    /// PoCL's `CL_DEVICE_DOUBLE_FP_CONFIG` (0 without `cl_khr_fp64`).
    pub double_fp_config: u64,
    /// PoCL's `CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE` and `..._NATIVE_...`.
    pub double_widths: (u32, u32),
}

impl Language {
    /// From PoCL's answers: `extensions` and `features` as (version, name).
    pub fn new(
        extensions: Vec<(u32, String)>,
        features: Vec<(u32, String)>,
        double_fp_config: u64,
        double_widths: (u32, u32),
    ) -> Language {
        let extensions: Vec<(u32, String)> =
            extensions.into_iter().filter(|(_, n)| LANGUAGE_EXTENSIONS.contains(&n.as_str())).collect();
        let fp64 = extensions.iter().any(|(_, n)| n == "cl_khr_fp64") && double_fp_config != 0;
        let extensions = extensions.into_iter().filter(|(_, n)| fp64 || n != "cl_khr_fp64").collect();
        let (double_fp_config, double_widths) = if fp64 { (double_fp_config, double_widths) } else { (0, (0, 0)) };
        Language { all_extensions: extensions, all_features: features, double_fp_config, double_widths }
    }

    /// Whether `cl_khr_fp64` is passed on.
    pub fn fp64(&self) -> bool {
        self.double_fp_config != 0
    }

    /// The features of PoCL's that `device`'s answers back.
    pub fn features(&self, device: &Device) -> Vec<(u32, String)> {
        self.all_features.iter().filter(|(_, n)| feature_holds(n, device, self)).cloned().collect()
    }

    /// PoCL's language extensions that `device` backs: all of them, but
    /// `cl_khr_3d_image_writes` only with 3D images.
    pub fn extensions(&self, device: &Device) -> Vec<(u32, String)> {
        let images3d = images_3d(device);
        self.all_extensions.iter().filter(|(_, n)| images3d || n != "cl_khr_3d_image_writes").cloned().collect()
    }

    /// Whether PoCL gives extension `name` (before any device's filter).
    fn gives(&self, name: &str) -> bool {
        self.all_extensions.iter().any(|(_, n)| n == name)
    }
}

/// Whether `device` has 3D images (image support and a 3D size limit).
fn images_3d(device: &Device) -> bool {
    let q = |param: u32| info::device_info(device, param).ok();
    matches!(q(CL_DEVICE_IMAGE_SUPPORT), Some(InfoValue::Bool(true)))
        && matches!(q(CL_DEVICE_IMAGE3D_MAX_WIDTH), Some(InfoValue::Usize(n)) if n > 0)
}

/// Whether dmabridge's `device` (with PoCL's `lang`) answers what OpenCL 3.0
/// ties feature `name` to; unknown features are never passed on.
pub fn feature_holds(name: &str, device: &Device, lang: &Language) -> bool {
    let q = |param: u32| info::device_info(device, param).ok();
    let bits = |param: u32| match q(param) {
        Some(InfoValue::Bits(b)) => b,
        _ => 0,
    };
    let uint = |param: u32| match q(param) {
        Some(InfoValue::U32(v)) => v,
        _ => 0,
    };
    let images = matches!(q(CL_DEVICE_IMAGE_SUPPORT), Some(InfoValue::Bool(true)));
    let atomics = bits(CL_DEVICE_ATOMIC_MEMORY_CAPABILITIES);
    match name {
        // 64-bit integers: the host's CPU.
        "__opencl_c_int64" => true,
        "__opencl_c_fp64" => lang.fp64(),
        "__opencl_c_images" => images,
        "__opencl_c_read_write_images" => images && uint(CL_DEVICE_MAX_READ_WRITE_IMAGE_ARGS) > 0,
        "__opencl_c_3d_image_writes" => images_3d(device) && lang.gives("cl_khr_3d_image_writes"),
        "__opencl_c_atomic_order_acq_rel" => atomics & CL_DEVICE_ATOMIC_ORDER_ACQ_REL != 0,
        "__opencl_c_atomic_order_seq_cst" => atomics & CL_DEVICE_ATOMIC_ORDER_SEQ_CST != 0,
        "__opencl_c_atomic_scope_device" => atomics & CL_DEVICE_ATOMIC_SCOPE_DEVICE != 0,
        "__opencl_c_atomic_scope_all_devices" => atomics & CL_DEVICE_ATOMIC_SCOPE_ALL_DEVICES != 0,
        // Generic address space, pipes, program-scope globals, sub-groups,
        // work-group collectives, device-side enqueue: dmabridge's device
        // says no.
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::platform::Platform;

    fn v(list: &[&str]) -> Vec<(u32, String)> {
        list.iter().map(|n| (1 << 22, n.to_string())).collect()
    }

    #[test]
    fn api_extensions_and_unknown_features_are_not_passed_on() {
        let lang = Language::new(
            v(&["cl_khr_byte_addressable_store", "cl_khr_spir", "cl_khr_command_buffer", "cl_khr_fp64"]),
            v(&["__opencl_c_int64", "__opencl_c_pipes", "__opencl_c_fp64", "__opencl_c_images"]),
            0x3f,
            (1, 1),
        );
        let cpu = Platform::get().cpu();
        let names: Vec<String> = lang.extensions(cpu).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["cl_khr_byte_addressable_store", "cl_khr_fp64"]);
        let features: Vec<String> = lang.features(cpu).into_iter().map(|(_, n)| n).collect();
        assert!(features.contains(&"__opencl_c_int64".to_string()));
        assert!(features.contains(&"__opencl_c_fp64".to_string()));
        assert!(!features.contains(&"__opencl_c_pipes".to_string()));
    }

    #[test]
    fn fp64_without_a_double_config_is_not_claimed() {
        let lang = Language::new(v(&["cl_khr_fp64"]), v(&["__opencl_c_fp64"]), 0, (1, 1));
        assert!(lang.all_extensions.is_empty());
        assert_eq!(lang.double_widths, (0, 0));
        assert!(lang.features(Platform::get().cpu()).is_empty());
    }
}
