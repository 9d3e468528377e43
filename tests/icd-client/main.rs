//! An independent Rust client of the ICD: the published binding crate `cl3`
//! through the real loader (ocl-icd's `libOpenCL.so.1`, which cl3 opens at
//! run time) with `OCL_ICD_VENDORS` naming `target/<profile>/dmabridge.icd`,
//! so that the loader sees dmabridge and nothing else. Nothing here links or
//! calls the dmabridge crates: every call goes application → cl3 → loader →
//! dispatch table → ICD.
//!
//! cl3's own USM wrappers (`cl3::ext::host_mem_alloc_intel`, ...) look the
//! functions up as symbols of the loader, which ocl-icd does not export, and
//! do not return the allocation; the USM entry points are reached the way the
//! extension says instead: `clGetExtensionFunctionAddressForPlatform`, typed
//! with opencl-sys's function types (those of Khronos `CL/cl_ext.h`).
//!
//! The ICD must be built and its `.icd` written first: `make icd
//! ICD_PROFILE=debug` (`make test-host` does so before `cargo test`, whose
//! `--workspace` build also rebuilds the library), or
//! `DMABRIDGE_ICD=/abs/path/dmabridge.icd`. A missing `.icd` or library fails
//! the tests; run alone (`cargo test --test icd_client`), they load whatever
//! library the last build left.

use std::ffi::{c_void, CString};
use std::path::PathBuf;
use std::ptr::{null, null_mut};
use std::sync::OnceLock;

use cl3::{command_queue as cq, context, device, kernel, memory, platform, program};
use opencl_sys::*;

/// The handles every test uses (raw handles are plain addresses; the ICD's
/// entry points are thread-safe).
struct Cl {
    platform: usize,
    device: usize,
    context: usize,
}

impl Cl {
    fn platform(&self) -> cl_platform_id {
        self.platform as cl_platform_id
    }
    fn device(&self) -> cl_device_id {
        self.device as cl_device_id
    }
    fn context(&self) -> cl_context {
        self.context as cl_context
    }
    fn queue(&self) -> Queue {
        // SAFETY: a live context and one of its devices; NULL properties.
        let q = unsafe { cq::create_command_queue_with_properties(self.context(), self.device(), null()) };
        Queue(q.expect("clCreateCommandQueueWithProperties"))
    }
}

/// A command queue, released on drop.
struct Queue(cl_command_queue);

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the queue this test created; released once.
        unsafe { cq::release_command_queue(self.0) }.expect("clReleaseCommandQueue");
    }
}

/// `target/<profile>/dmabridge.icd` of this test's own profile (the test
/// binary is `target/<profile>/deps/icd_client-*`), or `DMABRIDGE_ICD`.
fn icd_file() -> PathBuf {
    if let Some(p) = std::env::var_os("DMABRIDGE_ICD") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps/<test>");
    profile_dir.join("dmabridge.icd")
}

fn setup() -> &'static Cl {
    static CL: OnceLock<Cl> = OnceLock::new();
    CL.get_or_init(|| {
        let icd = icd_file();
        let hint = if std::env::var_os("DMABRIDGE_ICD").is_some() {
            "run `make icd` and point DMABRIDGE_ICD at the .icd it writes".to_string()
        } else {
            match icd.parent().and_then(|d| d.file_name()).and_then(|n| n.to_str()) {
                Some("release") | None => "run `make icd` first".to_string(),
                Some(p) => format!("run `make icd ICD_PROFILE={p}` first"),
            }
        };
        let lib = std::fs::read_to_string(&icd)
            .unwrap_or_else(|e| panic!("{}: {e}: the ICD is not built; {hint}", icd.display()));
        let lib = PathBuf::from(lib.trim());
        assert!(lib.is_file(), "{} names {}, which does not exist: {hint}", icd.display(), lib.display());
        // Before the loader's first call (it reads the variable once), in
        // the one initialiser every test waits for.
        std::env::set_var("OCL_ICD_VENDORS", &icd);
        assert!(
            cl3::is_opencl_runtime_available(),
            "cl3 cannot open libOpenCL.so.1 (ocl-icd's loader): run tests/icd-deps"
        );
        let platforms = platform::get_platform_ids().expect("clGetPlatformIDs through the loader");
        let platform = *platforms
            .iter()
            .find(|&&p| {
                platform::get_platform_info(p, CL_PLATFORM_NAME).map(String::from).ok().as_deref() == Some("dmabridge")
            })
            .unwrap_or_else(|| {
                panic!("no dmabridge platform among {} (OCL_ICD_VENDORS={})", platforms.len(), icd.display())
            });
        let devices = device::get_device_ids(platform, CL_DEVICE_TYPE_ALL).expect("clGetDeviceIDs(ALL)");
        let cpu = *devices
            .iter()
            .find(|&&d| u64::from(device::get_device_info(d, CL_DEVICE_TYPE).unwrap()) == CL_DEVICE_TYPE_CPU)
            .expect("a CPU device");
        let ctx = context::create_context(&[cpu], null(), None, null_mut()).expect("clCreateContext");
        Cl { platform: platform as usize, device: cpu as usize, context: ctx as usize }
    })
}

/// An extension entry point through the loader's
/// `clGetExtensionFunctionAddressForPlatform`, as the function type `F`.
///
/// # Safety
/// `F` is the C function pointer type of `name` (an `Option<extern "C" fn>`).
unsafe fn ext_fn<F: Copy>(cl: &Cl, name: &str) -> F {
    assert_eq!(std::mem::size_of::<F>(), std::mem::size_of::<*mut c_void>());
    let rt = cl3::load_library().as_ref().expect("libOpenCL.so.1");
    let name = CString::new(name).unwrap();
    let p = rt.clGetExtensionFunctionAddressForPlatform(cl.platform(), name.as_ptr()).expect("loader entry point");
    assert!(!p.is_null(), "{name:?} is not reachable through clGetExtensionFunctionAddressForPlatform");
    // SAFETY: `F` is a pointer-sized function pointer type of this entry
    // point (the caller's contract); `p` is non-NULL.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&p) }
}

fn str_info(v: cl3::info_type::InfoType) -> String {
    String::from(v)
}

#[test]
fn platform_and_device_through_the_loader() {
    let cl = setup();
    let p = cl.platform();
    assert!(str_info(platform::get_platform_info(p, CL_PLATFORM_VERSION).unwrap()).starts_with("OpenCL 3.0"));
    assert_eq!(str_info(platform::get_platform_info(p, CL_PLATFORM_ICD_SUFFIX_KHR).unwrap()), "DMABRIDGE");
    let ext = str_info(platform::get_platform_info(p, CL_PLATFORM_EXTENSIONS).unwrap());
    assert!(ext.split(' ').any(|e| e == "cl_khr_icd"), "{ext}");
    // ALL and DEFAULT both find devices (not CUSTOM-only ones).
    assert!(!device::get_device_ids(p, CL_DEVICE_TYPE_DEFAULT).unwrap().is_empty());
    let d = cl.device();
    assert_eq!(str_info(device::get_device_info(d, CL_DEVICE_PROFILE).unwrap()), "EMBEDDED_PROFILE");
    assert!(u32::from(device::get_device_info(d, CL_DEVICE_ADDRESS_BITS).unwrap()) == 64);
    let dext = str_info(device::get_device_info(d, CL_DEVICE_EXTENSIONS).unwrap());
    assert!(dext.split(' ').any(|e| e == "cl_intel_unified_shared_memory"), "{dext}");
    // Extensions not built yet are not advertised; the import ones are.
    assert!(!ext.split(' ').chain(dext.split(' ')).any(|x| x == "cl_amd_bus_addressable_memory"));
    for e in ["cl_arm_import_memory", "cl_arm_import_memory_host", "cl_arm_import_memory_dma_buf"] {
        assert!(ext.split(' ').any(|x| x == e) && dext.split(' ').any(|x| x == e), "{e} not advertised");
    }
}

#[test]
fn usm_host_and_shared_alloc_fill_memcpy_free() {
    let cl = setup();
    // SAFETY: each name with its cl_ext.h function type.
    let (host_alloc, shared_alloc, free, fill, memcpy, info) = unsafe {
        (
            ext_fn::<clHostMemAllocINTEL_fn>(cl, "clHostMemAllocINTEL").unwrap(),
            ext_fn::<clSharedMemAllocINTEL_fn>(cl, "clSharedMemAllocINTEL").unwrap(),
            ext_fn::<clMemFreeINTEL_fn>(cl, "clMemFreeINTEL").unwrap(),
            ext_fn::<clEnqueueMemFillINTEL_fn>(cl, "clEnqueueMemFillINTEL").unwrap(),
            ext_fn::<clEnqueueMemcpyINTEL_fn>(cl, "clEnqueueMemcpyINTEL").unwrap(),
            ext_fn::<clGetMemAllocInfoINTEL_fn>(cl, "clGetMemAllocInfoINTEL").unwrap(),
        )
    };
    let q = cl.queue();
    const N: usize = 1 << 16;
    let mut err = 1;
    // SAFETY: the USM entry points with valid handles and out-parameters;
    // the allocations are N bytes, used within bounds and freed once.
    unsafe {
        let h = host_alloc(cl.context(), null(), N, 0, &mut err).cast::<u8>();
        assert!(!h.is_null() && err == CL_SUCCESS, "clHostMemAllocINTEL: {err}");
        let s = shared_alloc(cl.context(), cl.device(), null(), N, 64, &mut err).cast::<u8>();
        assert!(!s.is_null() && err == CL_SUCCESS, "clSharedMemAllocINTEL: {err}");
        assert_eq!(s as usize % 64, 0);
        let pattern = 0xa5c3_0f01u32;
        assert_eq!(fill(q.0, h.cast(), (&pattern as *const u32).cast(), 4, N, 0, null(), null_mut()), CL_SUCCESS);
        assert_eq!(memcpy(q.0, CL_TRUE, s.cast(), h.cast(), N, 0, null(), null_mut()), CL_SUCCESS);
        let got = std::slice::from_raw_parts(s, N);
        assert!(got.chunks(4).all(|c| c == pattern.to_ne_bytes()), "the shared allocation holds the fill");
        let (mut ty, mut size): (cl_uint, usize) = (0, 0);
        assert_eq!(
            info(cl.context(), h.cast(), CL_MEM_ALLOC_TYPE_INTEL, 4, (&mut ty as *mut cl_uint).cast(), null_mut()),
            0
        );
        assert_eq!(ty, CL_MEM_TYPE_HOST_INTEL);
        assert_eq!(
            info(
                cl.context(),
                s.add(7).cast(),
                CL_MEM_ALLOC_TYPE_INTEL,
                4,
                (&mut ty as *mut cl_uint).cast(),
                null_mut()
            ),
            0
        );
        assert_eq!(ty, CL_MEM_TYPE_SHARED_INTEL);
        assert_eq!(
            info(cl.context(), s.cast(), CL_MEM_ALLOC_SIZE_INTEL, 8, (&mut size as *mut usize).cast(), null_mut()),
            CL_SUCCESS
        );
        assert_eq!(size, N);
        // Errors: a zero size, invalid contexts and queues, NULL or wrapping ranges.
        assert!(host_alloc(cl.context(), null(), 0, 0, &mut err).is_null());
        assert_eq!(err, CL_INVALID_BUFFER_SIZE);
        assert!(host_alloc(null_mut(), null(), 64, 0, &mut err).is_null());
        assert_eq!(err, CL_INVALID_CONTEXT);
        assert!(host_alloc(q.0.cast(), null(), 64, 0, &mut err).is_null(), "a queue is no context");
        assert_eq!(err, CL_INVALID_CONTEXT);
        // (A range past an allocation's end is the application's business;
        // one past the end of the address space is never valid.)
        assert_eq!(memcpy(q.0, CL_TRUE, s.cast(), h.cast(), usize::MAX, 0, null(), null_mut()), CL_INVALID_VALUE);
        assert_eq!(memcpy(q.0, CL_TRUE, null_mut(), h.cast(), 4, 0, null(), null_mut()), CL_INVALID_VALUE);
        assert_eq!(memcpy(null_mut(), CL_TRUE, s.cast(), h.cast(), 4, 0, null(), null_mut()), CL_INVALID_COMMAND_QUEUE);
        assert_eq!(free(cl.context(), h.cast()), CL_SUCCESS);
        assert_eq!(free(cl.context(), s.cast()), CL_SUCCESS);
        // A freed pointer is no allocation any more.
        assert_eq!(
            info(cl.context(), h.cast(), CL_MEM_ALLOC_TYPE_INTEL, 4, (&mut ty as *mut cl_uint).cast(), null_mut()),
            0
        );
        assert_eq!(ty, opencl_sys::CL_MEM_TYPE_UNKNOWN_INTEL);
    }
}

#[test]
fn svm_alloc_fill_memcpy_map() {
    let cl = setup();
    let q = cl.queue();
    const N: usize = 1 << 20;
    // SAFETY: SVM allocations of N bytes, used within bounds through the
    // queue and (mapped) from the host, freed once.
    unsafe {
        let a = memory::svm_alloc(cl.context(), CL_MEM_READ_WRITE, N, 0).expect("clSVMAlloc");
        let b = memory::svm_alloc(cl.context(), CL_MEM_READ_WRITE, N, 128).expect("clSVMAlloc aligned");
        assert_eq!(b as usize % 128, 0);
        let pat = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let ev = cq::enqueue_svm_mem_fill(q.0, a, pat.as_ptr().cast(), 8, N, 0, null()).expect("clEnqueueSVMMemFill");
        cl3::event::wait_for_events(&[ev]).unwrap();
        cl3::event::release_event(ev).unwrap();
        let ev = cq::enqueue_svm_mem_cpy(q.0, CL_TRUE, b, a, N, 0, null()).expect("clEnqueueSVMMemcpy");
        cl3::event::release_event(ev).unwrap();
        let ev = cq::enqueue_svm_map(q.0, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, b, N, 0, null()).expect("map");
        cl3::event::release_event(ev).unwrap();
        let bytes = std::slice::from_raw_parts_mut(b.cast::<u8>(), N);
        assert!(bytes.chunks(8).all(|c| c == pat), "the copy of the fill");
        bytes[N - 1] = 0xee;
        let ev = cq::enqueue_svm_unmap(q.0, b, 0, null()).expect("clEnqueueSVMUnmap");
        cl3::event::release_event(ev).unwrap();
        cq::finish(q.0).unwrap();
        // Errors: a pattern size that is not a power of two, NULL or wrapping ranges.
        assert_eq!(
            cq::enqueue_svm_mem_fill(q.0, a, pat.as_ptr().cast(), 3, N, 0, null()).unwrap_err(),
            CL_INVALID_VALUE
        );
        assert_eq!(cq::enqueue_svm_mem_cpy(q.0, CL_TRUE, b, a, usize::MAX, 0, null()).unwrap_err(), CL_INVALID_VALUE);
        assert_eq!(cq::enqueue_svm_mem_cpy(q.0, CL_TRUE, null_mut(), a, 4, 0, null()).unwrap_err(), CL_INVALID_VALUE);
        assert_eq!(memory::svm_alloc(cl.context(), CL_MEM_READ_WRITE, 0, 0).unwrap_err(), CL_INVALID_VALUE);
        memory::svm_free(cl.context(), a).unwrap();
        memory::svm_free(cl.context(), b).unwrap();
    }
}

#[test]
fn buffer_write_read_copy_map() {
    let cl = setup();
    let q = cl.queue();
    const N: usize = 4096;
    let src: Vec<u8> = (0..N).map(|i| (i * 7 + 1) as u8).collect();
    // SAFETY: buffers of N bytes; host memory of N bytes for each transfer;
    // the mapping is read within its N bytes before it is unmapped.
    unsafe {
        let a = memory::create_buffer(cl.context(), CL_MEM_READ_WRITE, N, null_mut()).expect("clCreateBuffer");
        let b = memory::create_buffer(cl.context(), CL_MEM_READ_WRITE, N, null_mut()).expect("clCreateBuffer");
        let ev = cq::enqueue_write_buffer(q.0, a, CL_TRUE, 0, N, src.as_ptr().cast(), 0, null()).expect("write");
        cl3::event::release_event(ev).unwrap();
        let ev = cq::enqueue_copy_buffer(q.0, a, b, 0, 0, N, 0, null()).expect("clEnqueueCopyBuffer");
        cl3::event::release_event(ev).unwrap();
        let mut back = vec![0u8; N];
        let ev = cq::enqueue_read_buffer(q.0, b, CL_TRUE, 0, N, back.as_mut_ptr().cast(), 0, null()).expect("read");
        cl3::event::release_event(ev).unwrap();
        assert_eq!(back, src);
        let mut mapped: cl_mem = null_mut();
        let ev = cq::enqueue_map_buffer(q.0, b, CL_TRUE, CL_MAP_READ, 16, N - 16, &mut mapped, 0, null()).expect("map");
        cl3::event::release_event(ev).unwrap();
        assert_eq!(std::slice::from_raw_parts(mapped.cast::<u8>(), N - 16), &src[16..]);
        let ev = cq::enqueue_unmap_mem_object(q.0, b, mapped.cast(), 0, null()).expect("unmap");
        cl3::event::release_event(ev).unwrap();
        cq::finish(q.0).unwrap();
        assert_eq!(usize::from(memory::get_mem_object_info(b, CL_MEM_SIZE).unwrap()), N);
        // Errors: past the end, an unknown mapping, a released buffer.
        assert_eq!(
            cq::enqueue_read_buffer(q.0, b, CL_TRUE, 1, N, back.as_mut_ptr().cast(), 0, null()).unwrap_err(),
            CL_INVALID_VALUE
        );
        assert_eq!(
            cq::enqueue_unmap_mem_object(q.0, b, back.as_mut_ptr().cast(), 0, null()).unwrap_err(),
            CL_INVALID_VALUE
        );
        assert_eq!(
            memory::create_buffer(cl.context(), CL_MEM_READ_WRITE, 0, null_mut()).unwrap_err(),
            CL_INVALID_BUFFER_SIZE
        );
        memory::release_mem_object(a).unwrap();
        memory::release_mem_object(b).unwrap();
        assert_eq!(memory::release_mem_object(b).unwrap_err(), CL_INVALID_MEM_OBJECT);
        assert_eq!(memory::get_mem_object_info(a, CL_MEM_SIZE).unwrap_err(), CL_INVALID_MEM_OBJECT);
    }
}

#[test]
fn builtin_kernel_launch() {
    let cl = setup();
    let q = cl.queue();
    const N: usize = 1024;
    // SAFETY: an SVM allocation of N u32s, the kernel's first argument with
    // the count N; read after the queue finished; freed once.
    unsafe {
        let prog = program::create_program_with_builtin_kernels(cl.context(), &[cl.device()], c"fill_pattern_u32")
            .expect("clCreateProgramWithBuiltInKernels");
        let k = kernel::create_kernel(prog, c"fill_pattern_u32").expect("clCreateKernel");
        assert_eq!(u32::from(kernel::get_kernel_info(k, CL_KERNEL_NUM_ARGS).unwrap()), 3);
        let p = memory::svm_alloc(cl.context(), CL_MEM_READ_WRITE, N * 4, 0).unwrap();
        let (count, pattern): (cl_ulong, cl_uint) = (N as cl_ulong, 0x600d_f00d);
        kernel::set_kernel_arg_svm_pointer(k, 0, p).unwrap();
        kernel::set_kernel_arg(k, 1, 8, (&count as *const cl_ulong).cast()).unwrap();
        kernel::set_kernel_arg(k, 2, 4, (&pattern as *const cl_uint).cast()).unwrap();
        let global = [64usize];
        let ev = cq::enqueue_nd_range_kernel(q.0, k, 1, null(), global.as_ptr(), null(), 0, null()).expect("NDRange");
        cl3::event::wait_for_events(&[ev]).unwrap();
        assert_eq!(
            u32::from(cl3::event::get_event_info(ev, CL_EVENT_COMMAND_TYPE).unwrap()),
            CL_COMMAND_NDRANGE_KERNEL
        );
        cl3::event::release_event(ev).unwrap();
        assert!(std::slice::from_raw_parts(p.cast::<u32>(), N).iter().all(|&x| x == pattern));
        // Errors: a wrong argument size, an unknown kernel name.
        assert_eq!(
            kernel::set_kernel_arg(k, 1, 4, (&pattern as *const cl_uint).cast()).unwrap_err(),
            CL_INVALID_ARG_SIZE
        );
        assert_eq!(kernel::create_kernel(prog, c"copy_bytes").unwrap_err(), CL_INVALID_KERNEL_NAME);
        kernel::release_kernel(k).unwrap();
        program::release_program(prog).unwrap();
        memory::svm_free(cl.context(), p).unwrap();
    }
}

#[test]
fn invalid_calls_answer_their_codes() {
    let cl = setup();
    // A program from source can be created; building it needs a compiler
    // (PoCL, when the ICD can load it), and a compile error fails the build.
    let prog = program::create_program_with_source(cl.context(), &["kernel void k() { undeclared; }"]).unwrap();
    let compiler = u32::from(device::get_device_info(cl.device(), CL_DEVICE_COMPILER_AVAILABLE).unwrap()) != 0;
    assert_eq!(
        program::build_program(prog, &[cl.device()], c"", None, null_mut()).unwrap_err(),
        if compiler { CL_BUILD_PROGRAM_FAILURE } else { CL_COMPILER_NOT_AVAILABLE }
    );
    // SAFETY: the program this test created, released once; the other calls
    // pass invalid handles, which the ICD refuses without dereferencing.
    unsafe {
        program::release_program(prog).unwrap();
        assert_eq!(program::release_program(prog).unwrap_err(), CL_INVALID_PROGRAM);
        assert_eq!(
            cq::create_command_queue_with_properties(null_mut(), cl.device(), null()).unwrap_err(),
            CL_INVALID_CONTEXT
        );
        assert_eq!(
            cq::create_command_queue_with_properties(cl.device().cast(), cl.device(), null()).unwrap_err(),
            CL_INVALID_CONTEXT,
            "a device is no context"
        );
        assert_eq!(memory::create_buffer(null_mut(), 0, 64, null_mut()).unwrap_err(), CL_INVALID_CONTEXT);
    }
    assert_eq!(cl3::event::wait_for_events(&[]).unwrap_err(), CL_INVALID_VALUE);
    assert_eq!(context::get_context_info(null_mut(), CL_CONTEXT_NUM_DEVICES).unwrap_err(), CL_INVALID_CONTEXT);
    // Unknown extension functions are NULL.
    let rt = cl3::load_library().as_ref().unwrap();
    let name = CString::new("clNoSuchFunctionDMABRIDGE").unwrap();
    let p = rt.clGetExtensionFunctionAddressForPlatform(cl.platform(), name.as_ptr()).unwrap();
    assert!(p.is_null());
}
