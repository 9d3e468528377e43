//! The repository's own OpenCL headers (`include/CL/*.h`, the C face of
//! the vendor extensions opencl-sys does not know) against the Rust values
//! of the same constants: every `#define` with a value has its Rust
//! counterpart here and equals it (an extension's presence macro,
//! `#define cl_<name> 1`, names an extension of `runtime::info::EXTENSIONS`, the rows the `ext` modules register). (The Khronos constants are checked
//! against opencl-sys at compile time: driver/dmabridge-icd/src/cl_constants.rs.)

use std::collections::BTreeMap;

use dmabridge::ext::{amd_bus, dma_buf_export};
use dmabridge::runtime::info::{make_version, EXTENSIONS, EXTENSION_VERSION};

/// A `#define`'s value: a number or a string.
#[derive(Debug, PartialEq)]
enum Value {
    Int(u128),
    Str(String),
}

/// The Rust value of each constant the headers define.
fn rust_values() -> BTreeMap<&'static str, Value> {
    use Value::*;
    let int = |v: u64| Int(u128::from(v));
    BTreeMap::from([
        ("CL_MEM_BUS_ADDRESSABLE_AMD", int(amd_bus::BUS_ADDRESSABLE)),
        ("CL_MEM_EXTERNAL_PHYSICAL_AMD", int(amd_bus::EXTERNAL_PHYSICAL)),
        ("CL_COMMAND_WAIT_SIGNAL_AMD", int(amd_bus::command_type::WAIT_SIGNAL.into())),
        ("CL_COMMAND_WRITE_SIGNAL_AMD", int(amd_bus::command_type::WRITE_SIGNAL.into())),
        ("CL_COMMAND_MAKE_BUFFERS_RESIDENT_AMD", int(amd_bus::command_type::MAKE_BUFFERS_RESIDENT.into())),
        ("CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_NAME", Str(dma_buf_export::EXTENSION.into())),
        ("CL_DMABRIDGE_DMA_BUF_EXPORT_EXTENSION_VERSION", int(EXTENSION_VERSION.into())),
        ("CL_DMA_BUF_EXPORTABLE_DMABRIDGE", int(dma_buf_export::info_param::EXPORTABLE.into())),
        ("CL_DMA_BUF_SIZE_DMABRIDGE", int(dma_buf_export::info_param::SIZE.into())),
        ("CL_DMA_BUF_OFFSET_DMABRIDGE", int(dma_buf_export::info_param::OFFSET.into())),
        ("CL_DMA_BUF_ROW_PITCH_DMABRIDGE", int(dma_buf_export::info_param::ROW_PITCH.into())),
        ("CL_DMA_BUF_SLICE_PITCH_DMABRIDGE", int(dma_buf_export::info_param::SLICE_PITCH.into())),
    ])
}

/// The value of a `#define` as the headers write them: a decimal or hex
/// integer (with C suffixes), `(1ull << n)`, a string literal or
/// `CL_MAKE_VERSION(major, minor, patch)`. None for anything else.
fn parse(value: &str) -> Option<Value> {
    let value = value.trim();
    if let Some(s) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return Some(Value::Str(s.into()));
    }
    if let Some(args) = value.strip_prefix("CL_MAKE_VERSION(").and_then(|v| v.strip_suffix(')')) {
        let n: Vec<u32> = args.split(',').map(|a| a.trim().parse().ok()).collect::<Option<_>>()?;
        let [major, minor, patch] = n[..] else { return None };
        return Some(Value::Int(make_version(major, minor, patch).into()));
    }
    let int = |s: &str| {
        let s = s.trim().trim_end_matches(['u', 'U', 'l', 'L']);
        match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(hex) => u128::from_str_radix(hex, 16).ok(),
            None => s.parse().ok(),
        }
    };
    if let Some((base, shift)) =
        value.strip_prefix('(').and_then(|v| v.strip_suffix(')')).and_then(|v| v.split_once("<<"))
    {
        return Some(Value::Int(int(base)? << int(shift)?));
    }
    int(value).map(Value::Int)
}

/// Every `#define NAME VALUE` of `include/CL/*.h` (include guards, which
/// have no value, left out).
fn header_defines() -> BTreeMap<String, String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../include/CL");
    let mut defines = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{dir}: {e}")) {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "h") {
            let text = std::fs::read_to_string(&path).unwrap();
            for line in text.lines() {
                let Some(rest) = line.trim_start().strip_prefix("#define ") else { continue };
                if let Some((name, value)) = rest.trim().split_once(char::is_whitespace) {
                    defines.insert(name.to_owned(), value.trim().to_owned());
                }
            }
        }
    }
    defines
}

#[test]
fn own_headers_define_the_rust_values() {
    let defines = header_defines();
    let rust = rust_values();
    for (name, text) in &defines {
        if name.starts_with("cl_") {
            // An extension's presence macro: 1, and an extension dmabridge reports.
            assert_eq!(text, "1", "{name}");
            assert!(EXTENSIONS.iter().any(|e| e.name == name), "{name} is not in runtime::info::EXTENSIONS");
            continue;
        }
        let expected = rust.get(name.as_str()).unwrap_or_else(|| {
            panic!("include/CL defines {name} ({text}) with no Rust value in tests/host/cl_headers.rs: add it")
        });
        let value = parse(text).unwrap_or_else(|| panic!("{name}: cannot read the value {text:?}"));
        assert_eq!(&value, expected, "{name}: the header's {text} is not the Rust value");
    }
    for name in rust.keys() {
        assert!(defines.contains_key(*name), "{name} has a Rust value but no #define in include/CL");
    }
}

#[test]
fn define_values_parse_as_c_reads_them() {
    assert_eq!(parse("(1ull << 30)"), Some(Value::Int(1 << 30)));
    assert_eq!(parse("0x4F10"), Some(Value::Int(0x4F10)));
    assert_eq!(parse("\"cl_x\""), Some(Value::Str("cl_x".into())));
    assert_eq!(parse("CL_MAKE_VERSION(1, 0, 0)"), Some(Value::Int(1 << 22)));
    assert_eq!(parse("SIZE_MAX"), None);
}
