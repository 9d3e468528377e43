//! The `clGet*Info` answers of `runtime::info`: every parameter answers with
//! the C type and size the spec gives it and a value that agrees with the
//! object, unknown parameters give CL_INVALID_VALUE, and `copy_out` follows
//! the `param_value` / `param_value_size_ret` rule.

use std::mem::size_of;
use std::sync::Arc;

use dmabridge::error::{ClError, ClErrorKind::*};
use dmabridge::runtime::context::Context;
use dmabridge::runtime::device::{Device, DeviceType, UsmCaps};
use dmabridge::runtime::event::{command_type, exec_status, profiling_info, Event};
use dmabridge::runtime::info::{
    self, context_param, copy_out, device_param as dp, event_param, platform_param as pp, queue_param, InfoValue,
};
use dmabridge::runtime::platform::Platform;
use dmabridge::runtime::queue::{Queue, QueueProps};

const PTR: usize = size_of::<usize>();
use dmabridge_tests::{cpu_context as ctx, cpu_device as cpu, err_kind as kind};

/// The value written through `copy_out` into a buffer exactly as large as
/// the reported size; checks that the size query and the write agree.
fn bytes(v: &InfoValue) -> Vec<u8> {
    let size = copy_out(v, None).unwrap();
    assert_eq!(size, v.size());
    let mut buf = vec![0xAB; size];
    assert_eq!(copy_out(v, Some(&mut buf)).unwrap(), size);
    buf
}

/// A string answer: a `Str` whose C form is the text plus one NUL.
fn text(v: &InfoValue) -> String {
    let InfoValue::Str(s) = v else { panic!("{v:?} is not a string") };
    let b = bytes(v);
    assert_eq!(b.len(), s.len() + 1, "size of {s:?} must count the NUL");
    assert_eq!(b.last(), Some(&0), "{s:?} is not NUL-terminated");
    assert!(!b[..s.len()].contains(&0), "{s:?} has an interior NUL");
    assert_eq!(&b[..s.len()], s.as_bytes());
    s.clone()
}

fn u32_of(v: &InfoValue) -> u32 {
    let InfoValue::U32(x) = v else { panic!("{v:?} is not a cl_uint") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn u64_of(v: &InfoValue) -> u64 {
    let InfoValue::U64(x) = v else { panic!("{v:?} is not a cl_ulong") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn usize_of(v: &InfoValue) -> usize {
    let InfoValue::Usize(x) = v else { panic!("{v:?} is not a size_t") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn bool_of(v: &InfoValue) -> bool {
    let InfoValue::Bool(x) = v else { panic!("{v:?} is not a cl_bool") };
    let b = bytes(v);
    assert_eq!(b, u32::from(*x).to_ne_bytes(), "cl_bool is 4 bytes, CL_TRUE = 1");
    *x
}

fn bits_of(v: &InfoValue) -> u64 {
    let InfoValue::Bits(x) = v else { panic!("{v:?} is not a cl_bitfield") };
    assert_eq!(bytes(v), x.to_ne_bytes());
    *x
}

fn dev(d: &Device, param: u32) -> InfoValue {
    info::device_info(d, param).unwrap_or_else(|e| panic!("device param {param:#x}: {e}"))
}

fn plat(param: u32) -> InfoValue {
    info::platform_info(param).unwrap_or_else(|e| panic!("platform param {param:#x}: {e}"))
}

/// Unknown parameters: CL_INVALID_VALUE naming the parameter.
fn assert_unknown(r: Result<InfoValue, ClError>, param: u32) {
    let e = r.expect_err("unknown param must fail");
    assert_eq!(e.kind, InvalidValue);
    assert!(e.message.contains(&format!("{param:#x}")), "message does not name {param:#x}: {e}");
}

#[test]
fn platform_answers() {
    assert_eq!(text(&plat(pp::PROFILE)), "EMBEDDED_PROFILE", "no OpenCL C compiler");
    assert!(text(&plat(pp::VERSION)).starts_with("OpenCL 3.0 "));
    assert_eq!(text(&plat(pp::NAME)), "dmabridge");
    assert_eq!(text(&plat(pp::VENDOR)), "dmabridge");
    let ext = text(&plat(pp::EXTENSIONS));
    let list: Vec<&str> = ext.split(' ').collect();
    assert_eq!(list, ["cl_intel_unified_shared_memory", "cl_khr_icd"], "only what is implemented: {ext:?}");
    assert_eq!(u64_of(&plat(pp::HOST_TIMER_RESOLUTION)), 0);
    assert_eq!(u32_of(&plat(pp::NUMERIC_VERSION)), 3 << 22);
    assert_eq!(info::make_version(3, 0, 0), 3 << 22);
    assert_eq!(text(&plat(pp::ICD_SUFFIX_KHR)), "DMABRIDGE");
    for &p in pp::ALL {
        plat(p);
    }
    for p in [0x08FF, 0x0907, 0x091F, 0x0921, 0x1000, 0] {
        assert_unknown(info::platform_info(p), p);
    }
}

/// What C type each device parameter returns, per the spec.
#[derive(Debug, PartialEq)]
enum Ty {
    Uint,
    Ulong,
    SizeT,
    Bool,
    Bitfield,
    Str,
    Sizes,
    PlatformId,
    DeviceId,
}

fn device_param_type(p: u32) -> Ty {
    use Ty::*;
    match p {
        dp::TYPE
        | dp::EXECUTION_CAPABILITIES
        | dp::QUEUE_PROPERTIES
        | dp::SVM_CAPABILITIES
        | dp::HOST_MEM_CAPABILITIES_INTEL
        | dp::DEVICE_MEM_CAPABILITIES_INTEL
        | dp::SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
        | dp::CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL
        | dp::SHARED_SYSTEM_MEM_CAPABILITIES_INTEL => Bitfield,
        dp::MAX_MEM_ALLOC_SIZE | dp::GLOBAL_MEM_SIZE => Ulong,
        dp::MAX_WORK_GROUP_SIZE | dp::MAX_PARAMETER_SIZE | dp::PROFILING_TIMER_RESOLUTION => SizeT,
        dp::MAX_WORK_ITEM_SIZES => Sizes,
        dp::IMAGE_SUPPORT
        | dp::ERROR_CORRECTION_SUPPORT
        | dp::ENDIAN_LITTLE
        | dp::AVAILABLE
        | dp::COMPILER_AVAILABLE
        | dp::LINKER_AVAILABLE
        | dp::HOST_UNIFIED_MEMORY => Bool,
        dp::NAME
        | dp::VENDOR
        | dp::DRIVER_VERSION
        | dp::PROFILE
        | dp::VERSION
        | dp::EXTENSIONS
        | dp::OPENCL_C_VERSION
        | dp::BUILT_IN_KERNELS => Str,
        dp::PLATFORM => PlatformId,
        dp::PARENT_DEVICE => DeviceId,
        _ => Uint,
    }
}

fn type_of(v: &InfoValue) -> (Ty, usize) {
    match v {
        InfoValue::U32(_) => (Ty::Uint, 4),
        InfoValue::U64(_) => (Ty::Ulong, 8),
        InfoValue::Usize(_) => (Ty::SizeT, PTR),
        InfoValue::Bool(_) => (Ty::Bool, 4),
        InfoValue::Bits(_) => (Ty::Bitfield, 8),
        InfoValue::Str(s) => (Ty::Str, s.len() + 1),
        InfoValue::Sizes(s) => (Ty::Sizes, s.len() * PTR),
        InfoValue::Platform(_) => (Ty::PlatformId, PTR),
        InfoValue::Device(_) => (Ty::DeviceId, PTR),
        other => panic!("no device param answers {other:?}"),
    }
}

#[test]
fn every_device_param_has_its_c_type_and_size() {
    let d = cpu();
    assert!(dp::ALL.len() >= 50);
    for &p in dp::ALL {
        let v = dev(&d, p);
        let (ty, size) = type_of(&v);
        assert_eq!(ty, device_param_type(p), "param {p:#x} answered {v:?}");
        assert_eq!(v.size(), size, "param {p:#x}");
        assert_eq!(copy_out(&v, None).unwrap(), size, "param {p:#x}");
    }
    let mut sorted = dp::ALL.to_vec();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), dp::ALL.len(), "a device param is listed twice");
}

#[test]
fn cpu_device_values() {
    let d = cpu();
    assert_eq!(bits_of(&dev(&d, dp::TYPE)), 1 << 1, "CL_DEVICE_TYPE_CPU");
    assert_eq!(u32_of(&dev(&d, dp::MAX_COMPUTE_UNITS)), d.compute_units);
    assert!(d.compute_units >= 1);
    let dims = u32_of(&dev(&d, dp::MAX_WORK_ITEM_DIMENSIONS));
    assert_eq!(dims, 1, "only 1-D ranges");
    let wg = usize_of(&dev(&d, dp::MAX_WORK_GROUP_SIZE));
    assert!(wg >= 1);
    let InfoValue::Sizes(sizes) = dev(&d, dp::MAX_WORK_ITEM_SIZES) else { panic!() };
    assert_eq!(sizes.len(), dims as usize, "one entry per dimension");
    assert!(sizes.iter().all(|&s| s >= 1 && s <= wg));
    let b = bytes(&dev(&d, dp::MAX_WORK_ITEM_SIZES));
    assert_eq!(b, sizes[0].to_ne_bytes());
    assert_eq!(u64_of(&dev(&d, dp::MAX_MEM_ALLOC_SIZE)), d.max_mem_alloc_size);
    assert_eq!(u32_of(&dev(&d, dp::MEM_BASE_ADDR_ALIGN)) as u64, d.max_alignment * 8, "in bits");
    let global = u64_of(&dev(&d, dp::GLOBAL_MEM_SIZE));
    assert!(global >= d.max_mem_alloc_size, "global {global} < max alloc {}", d.max_mem_alloc_size);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find(|l| l.starts_with("MemTotal:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(global, kib * 1024, "MemTotal");
    assert_eq!(bool_of(&dev(&d, dp::HOST_UNIFIED_MEMORY)), d.host_unified_memory);
    assert!(d.host_unified_memory);
    assert_eq!(usize_of(&dev(&d, dp::PROFILING_TIMER_RESOLUTION)), 1);
    assert_eq!(bool_of(&dev(&d, dp::ENDIAN_LITTLE)), cfg!(target_endian = "little"));
    assert!(bool_of(&dev(&d, dp::AVAILABLE)));
    assert_eq!(bits_of(&dev(&d, dp::EXECUTION_CAPABILITIES)), 3);
    assert_eq!(bits_of(&dev(&d, dp::QUEUE_PROPERTIES)), 3, "out-of-order | profiling");
    assert_eq!(dp::QUEUE_ON_HOST_PROPERTIES, dp::QUEUE_PROPERTIES);
    assert_eq!(text(&dev(&d, dp::NAME)), d.name);
    assert_eq!(text(&dev(&d, dp::VENDOR)), "dmabridge");
    assert!(!text(&dev(&d, dp::DRIVER_VERSION)).is_empty());
    assert!(text(&dev(&d, dp::VERSION)).starts_with("OpenCL 3.0"));
    let ext = text(&dev(&d, dp::EXTENSIONS));
    assert!(ext.split(' ').any(|e| e == "cl_intel_unified_shared_memory"), "{ext:?}");
    assert!(!ext.contains("cl_arm_import_memory") && !ext.contains("cl_amd_bus_addressable_memory"));
    assert_eq!(u32_of(&dev(&d, dp::ADDRESS_BITS)), 64);
    assert_eq!(text(&dev(&d, dp::OPENCL_C_VERSION)), "");
    assert_eq!(
        text(&dev(&d, dp::BUILT_IN_KERNELS)),
        dmabridge::runtime::kernel::builtin_kernel_names(&d).join(";"),
        "CL_DEVICE_BUILT_IN_KERNELS lists the CPU device's built-ins"
    );
    assert!(text(&dev(&d, dp::BUILT_IN_KERNELS)).split(';').any(|k| k == "yuyv_to_rgba"));
    assert!(usize_of(&dev(&d, dp::MAX_PARAMETER_SIZE)) >= 256, "embedded-profile minimum");
    assert_eq!(bits_of(&dev(&d, dp::SVM_CAPABILITIES)), d.svm);
    assert_eq!(u32_of(&dev(&d, dp::NUMERIC_VERSION)), 3 << 22);
    assert_eq!(u32_of(&dev(&d, dp::PREFERRED_VECTOR_WIDTH_INT)), 1);
    assert_eq!(u32_of(&dev(&d, dp::NATIVE_VECTOR_WIDTH_DOUBLE)), 0, "no cl_khr_fp64");
    assert_eq!(dev(&d, dp::PARENT_DEVICE), InfoValue::Device(None));
    assert_eq!(u32_of(&dev(&d, dp::REFERENCE_COUNT)), 1);
}

/// Seed rule: a device without an OpenCL C compiler reports the embedded
/// profile and no compiler.
#[test]
fn no_compiler_means_embedded_profile() {
    for d in Platform::get().devices() {
        assert!(!bool_of(&dev(d, dp::COMPILER_AVAILABLE)));
        assert!(!bool_of(&dev(d, dp::LINKER_AVAILABLE)));
        assert_eq!(text(&dev(d, dp::PROFILE)), "EMBEDDED_PROFILE");
    }
}

/// A device whose five USM capabilities all differ, so that a query answered
/// from the wrong field shows.
fn odd_device() -> Arc<Device> {
    Arc::new(Device {
        index: 7,
        name: "odd accelerator".into(),
        device_type: DeviceType::Accelerator,
        max_mem_alloc_size: 12345 << 12,
        max_alignment: 64,
        host_unified_memory: false,
        usm: UsmCaps { host: 1, device: 3, single_device_shared: 5, cross_device_shared: 0, shared_system: 9 },
        svm: 1,
        compute_units: 3,
    })
}

#[test]
fn device_values_follow_the_device() {
    for d in [cpu(), odd_device()] {
        assert_eq!(bits_of(&dev(&d, dp::HOST_MEM_CAPABILITIES_INTEL)), d.usm.host);
        assert_eq!(bits_of(&dev(&d, dp::DEVICE_MEM_CAPABILITIES_INTEL)), d.usm.device);
        assert_eq!(bits_of(&dev(&d, dp::SINGLE_DEVICE_SHARED_MEM_CAPABILITIES_INTEL)), d.usm.single_device_shared);
        assert_eq!(bits_of(&dev(&d, dp::CROSS_DEVICE_SHARED_MEM_CAPABILITIES_INTEL)), d.usm.cross_device_shared);
        assert_eq!(bits_of(&dev(&d, dp::SHARED_SYSTEM_MEM_CAPABILITIES_INTEL)), d.usm.shared_system);
        assert_eq!(u64_of(&dev(&d, dp::MAX_MEM_ALLOC_SIZE)), d.max_mem_alloc_size);
        assert_eq!(u32_of(&dev(&d, dp::MEM_BASE_ADDR_ALIGN)) as u64, d.max_alignment * 8);
        assert_eq!(bits_of(&dev(&d, dp::SVM_CAPABILITIES)), d.svm);
        assert_eq!(u32_of(&dev(&d, dp::MAX_COMPUTE_UNITS)), d.compute_units);
        assert_eq!(bool_of(&dev(&d, dp::HOST_UNIFIED_MEMORY)), d.host_unified_memory);
        assert_eq!(text(&dev(&d, dp::NAME)), d.name);
    }
    let odd = odd_device();
    assert_eq!(bits_of(&dev(&odd, dp::TYPE)), 1 << 3, "CL_DEVICE_TYPE_ACCELERATOR");
}

#[test]
fn device_platform_is_a_handle_for_the_c_face() {
    let v = dev(&cpu(), dp::PLATFORM);
    assert_eq!(v, InfoValue::Platform(Platform::get()));
    assert_eq!(copy_out(&v, None).unwrap(), PTR);
    let mut buf = [0x5Au8; 16];
    let e = copy_out(&v, Some(&mut buf)).expect_err("a handle is the C face's to write");
    assert_eq!(e.kind, InvalidValue);
    assert!(e.message.contains("handle"), "{e}");
    assert_eq!(buf, [0x5A; 16], "nothing written");
}

#[test]
fn unknown_device_params() {
    let d = cpu();
    for p in [0x0FFF, 0x100C, 0x1011, 0x104F, 0x4195, 0x419A, 0xFFFF_FFFF] {
        assert!(!dp::ALL.contains(&p));
        assert_unknown(info::device_info(&d, p), p);
    }
}

#[test]
fn copy_out_size_rule() {
    let v = InfoValue::Str("dmabridge".into());
    assert_eq!(copy_out(&v, None).unwrap(), 10, "None: just the size, NUL included");
    let mut small = [0x77u8; 9];
    assert_eq!(kind(copy_out(&v, Some(&mut small))), InvalidValue);
    assert_eq!(small, [0x77; 9], "a too-small buffer is left untouched");
    let mut empty: [u8; 0] = [];
    assert_eq!(kind(copy_out(&v, Some(&mut empty))), InvalidValue);
    let mut big = [0x77u8; 16];
    assert_eq!(copy_out(&v, Some(&mut big)).unwrap(), 10);
    assert_eq!(&big[..10], b"dmabridge\0");
    assert_eq!(big[10..], [0x77; 6], "bytes past the value are untouched");

    let n = InfoValue::U64(0x0102_0304_0506_0708);
    let mut seven = [0u8; 7];
    assert_eq!(kind(copy_out(&n, Some(&mut seven))), InvalidValue);
    assert_eq!(seven, [0; 7]);
    let mut eight = [0u8; 8];
    assert_eq!(copy_out(&n, Some(&mut eight)).unwrap(), 8);
    assert_eq!(u64::from_ne_bytes(eight), 0x0102_0304_0506_0708);

    let b = InfoValue::Bool(true);
    let mut three = [9u8; 3];
    assert_eq!(kind(copy_out(&b, Some(&mut three))), InvalidValue, "cl_bool is 4 bytes");
    assert_eq!(three, [9; 3]);

    let e = InfoValue::Str(String::new());
    assert_eq!(copy_out(&e, None).unwrap(), 1, "an empty string is one NUL");
    assert_eq!(bytes(&e), [0]);
}

#[test]
fn write_plain_values() {
    assert_eq!(bytes(&InfoValue::U32(0xDEAD_BEEF)), 0xDEAD_BEEFu32.to_ne_bytes());
    assert_eq!(bytes(&InfoValue::I32(-14)), (-14i32).to_ne_bytes());
    assert_eq!(bytes(&InfoValue::Usize(usize::MAX - 1)), (usize::MAX - 1).to_ne_bytes());
    assert_eq!(bytes(&InfoValue::Bool(false)), [0; 4]);
    assert_eq!(bytes(&InfoValue::Bits(1 << 40)), (1u64 << 40).to_ne_bytes());
    let s = bytes(&InfoValue::Sizes(vec![1, 2, 3]));
    assert_eq!(s.len(), 3 * PTR);
    assert_eq!(s[PTR..2 * PTR], 2usize.to_ne_bytes());
    let p = bytes(&InfoValue::Properties(vec![0x1093, 3, 0]));
    assert_eq!(p.len(), 24);
    assert_eq!(p[8..16], 3u64.to_ne_bytes());
    assert_eq!(bytes(&InfoValue::Properties(vec![])), Vec::<u8>::new());
    // NULL handles are plain zeros; real handles are refused.
    assert_eq!(bytes(&InfoValue::Queue(None)), vec![0; PTR]);
    assert_eq!(bytes(&InfoValue::Device(None)), vec![0; PTR]);
    assert_eq!(bytes(&InfoValue::DeviceIds(vec![])), Vec::<u8>::new());
    let c = ctx();
    for v in [InfoValue::Device(Some(cpu())), InfoValue::DeviceIds(vec![cpu()]), InfoValue::Context(c)] {
        let mut buf = vec![0x11u8; 64];
        assert_eq!(kind(v.write(&mut buf)), InvalidValue, "{v:?}");
        assert!(buf.iter().all(|&b| b == 0x11));
    }
}

#[test]
fn context_answers() {
    let c = ctx();
    let count = |c: &Arc<Context>| u32_of(&info::context_info(c, context_param::REFERENCE_COUNT).unwrap());
    let base = count(&c);
    assert_eq!(base, 1);
    let c2 = c.clone();
    assert_eq!(count(&c), base + 1, "a clone retains");
    let q = Queue::new(&c, &cpu(), QueueProps::default()).unwrap();
    assert!(count(&c) > base + 1, "a queue holds its context");
    drop(q);
    drop(c2);
    assert_eq!(count(&c), base, "drops release");

    let devices = info::context_info(&c, context_param::DEVICES).unwrap();
    assert_eq!(devices, InfoValue::DeviceIds(vec![cpu()]));
    assert_eq!(devices.size(), PTR);
    assert_eq!(u32_of(&info::context_info(&c, context_param::NUM_DEVICES).unwrap()), 1);
    let props = info::context_info(&c, context_param::PROPERTIES).unwrap();
    assert_eq!(props, InfoValue::Properties(vec![]));
    assert_eq!(copy_out(&props, None).unwrap(), 0);

    let two = Context::new(&[cpu(), odd_device()]).unwrap();
    assert_eq!(u32_of(&info::context_info(&two, context_param::NUM_DEVICES).unwrap()), 2);
    assert_eq!(info::context_info(&two, context_param::DEVICES).unwrap().size(), 2 * PTR);
    for &p in context_param::ALL {
        info::context_info(&c, p).unwrap();
    }
    for p in [0x107F, 0x1084, 0x1090] {
        assert_unknown(info::context_info(&c, p), p);
    }
}

#[test]
fn queue_answers() {
    let c = ctx();
    let d = cpu();
    let q = Queue::new(&c, &d, QueueProps { out_of_order: true, profiling: true }).unwrap();
    let qi = |p| info::queue_info(&q, p).unwrap();
    assert_eq!(qi(queue_param::CONTEXT), InfoValue::Context(c.clone()));
    assert_eq!(qi(queue_param::CONTEXT).size(), PTR);
    assert_eq!(qi(queue_param::DEVICE), InfoValue::Device(Some(d.clone())));
    assert_ne!(qi(queue_param::DEVICE), InfoValue::Device(Some(odd_device())));
    assert_eq!(bits_of(&qi(queue_param::PROPERTIES)), 3);
    assert_eq!(qi(queue_param::PROPERTIES_ARRAY), InfoValue::Properties(vec![0x1093, 3, 0]));
    assert_eq!(qi(queue_param::PROPERTIES_ARRAY).size(), 24);
    assert_eq!(qi(queue_param::DEVICE_DEFAULT), InfoValue::Queue(None));
    assert_eq!(kind(info::queue_info(&q, queue_param::SIZE)), InvalidCommandQueue);

    let count = |q: &Arc<Queue>| u32_of(&info::queue_info(q, queue_param::REFERENCE_COUNT).unwrap());
    let base = count(&q);
    let q2 = q.clone();
    assert_eq!(count(&q), base + 1);
    drop(q2);
    assert_eq!(count(&q), base);

    let plain = Queue::new(&c, &d, QueueProps::default()).unwrap();
    assert_eq!(bits_of(&info::queue_info(&plain, queue_param::PROPERTIES).unwrap()), 0);
    let arr = info::queue_info(&plain, queue_param::PROPERTIES_ARRAY).unwrap();
    assert_eq!(copy_out(&arr, None).unwrap(), 0);
    let profiling = Queue::new(&c, &d, QueueProps { out_of_order: false, profiling: true }).unwrap();
    assert_eq!(
        info::queue_info(&profiling, queue_param::PROPERTIES_ARRAY).unwrap(),
        InfoValue::Properties(vec![0x1093, 2, 0])
    );
    for &p in queue_param::ALL {
        info::queue_info(&q, p).unwrap();
    }
    for p in [0x108F, 0x1096, 0x1097, 0x1099] {
        assert_unknown(info::queue_info(&q, p), p);
    }
}

#[test]
fn user_event_answers() {
    let c = ctx();
    let e = Event::user(&c);
    let ei = |p| info::event_info(&e, p).unwrap();
    assert_eq!(ei(event_param::COMMAND_QUEUE), InfoValue::Queue(None), "user events have no queue");
    assert_eq!(u32_of(&ei(event_param::COMMAND_TYPE)), command_type::USER);
    assert_eq!(ei(event_param::CONTEXT), InfoValue::Context(c.clone()));
    let status = ei(event_param::COMMAND_EXECUTION_STATUS);
    assert_eq!(status, InfoValue::I32(exec_status::SUBMITTED));
    assert_eq!(bytes(&status), exec_status::SUBMITTED.to_ne_bytes());
    e.set_user_status(-5).unwrap();
    assert_eq!(ei(event_param::COMMAND_EXECUTION_STATUS), InfoValue::I32(-5), "a failed status is its error code");

    let count = |e: &Event| u32_of(&info::event_info(e, event_param::REFERENCE_COUNT).unwrap());
    let base = count(&e);
    let e2 = e.clone();
    assert_eq!(count(&e), base + 1);
    drop(e2);
    assert_eq!(count(&e), base);

    assert_eq!(kind(info::event_profiling_info(&e, profiling_info::START)), ProfilingInfoNotAvailable);
    for &p in event_param::ALL {
        info::event_info(&e, p).unwrap();
    }
    for p in [0x11CF, 0x11D5, 0x1280] {
        assert_unknown(info::event_info(&e, p), p);
    }
}

#[test]
fn command_event_answers() {
    let c = ctx();
    let q = Queue::new(&c, &cpu(), QueueProps { out_of_order: false, profiling: true }).unwrap();
    let e = q.enqueue_marker(&[]).unwrap();
    q.finish().unwrap();
    let ei = |p| info::event_info(&e, p).unwrap();
    assert_eq!(ei(event_param::COMMAND_QUEUE), InfoValue::Queue(Some(q.clone())));
    assert_eq!(u32_of(&ei(event_param::COMMAND_TYPE)), command_type::MARKER);
    assert_eq!(ei(event_param::COMMAND_EXECUTION_STATUS), InfoValue::I32(exec_status::COMPLETE));
    assert_eq!(ei(event_param::CONTEXT), InfoValue::Context(c.clone()));
    let t = |p| u64_of(&info::event_profiling_info(&e, p).unwrap());
    let (queued, start, end) = (t(profiling_info::QUEUED), t(profiling_info::START), t(profiling_info::END));
    assert!(queued > 0 && queued <= start && start <= end, "{queued} {start} {end}");
    assert_eq!(kind(info::event_profiling_info(&e, 0x1285)), InvalidValue);

    let plain = Queue::new(&c, &cpu(), QueueProps::default()).unwrap();
    let e = plain.enqueue_marker(&[]).unwrap();
    plain.finish().unwrap();
    assert_eq!(kind(info::event_profiling_info(&e, profiling_info::END)), ProfilingInfoNotAvailable);
}
