//! Gives the ICD library a SONAME, libdmabridge_icd.so.1: installed in the
//! multiarch library folder (`make install`, the Debian packages), a shared
//! object needs one, so that ldconfig and the loader's bare-name dlopen of
//! /etc/OpenCL/vendors/dmabridge.icd find it as Debian's other ICDs are found
//! (mesa's libMesaOpenCL.so.1). The `1` is the ABI the loaders see, OpenCL's
//! ICD interface, which does not change with dmabridge's version.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libdmabridge_icd.so.1");
    println!("cargo:rerun-if-changed=build.rs");
}
