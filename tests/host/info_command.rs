//! `dmabridge info` on this host: every fact the report states is checked
//! against an independent reading of the same machine (sysfs, /dev, /proc,
//! `uname -r`, getrlimit), and what is missing comes with its fix.
//!
//! Needs the CLI built first: `cargo build -p dmabridge-cli`.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use dmabridge::sys::probe::Report;
use dmabridge_tests::dmabridge_bin;
use rustix::process::{Resource, Rlimit};
use serde_json::Value;

const UDMABUF_HINT: &str =
    "load the udmabuf module (kmod-helpers/dmabridge-kmod load udmabuf) or run `make demo`, which uses the QEMU guest";
#[cfg(not(target_arch = "aarch64"))]
const IOMMU_HINT: &str = "boot with intel_iommu=on / amd_iommu=on";
#[cfg(target_arch = "aarch64")]
const IOMMU_HINT: &str = "enable the SMMU (CONFIG_ARM_SMMU_V3 or CONFIG_ARM_SMMU, described by the device tree or ACPI IORT) and boot with iommu.passthrough=0; VFIO also needs MSI isolation (a GICv3 with an ITS)";
// A service user's hard limit is small too: the fixes of an administrator come first.
const MEMLOCK_HINT: &str = "raise RLIMIT_MEMLOCK: LimitMEMLOCK=infinity in a systemd service's unit, \
     `@dmabridge - memlock unlimited` in /etc/security/limits.d/dmabridge.conf for logins (udev/README.md), or as root \
     kmod-helpers/dmabridge-kmod memlock --raise unlimited; `ulimit -l` raises it only up to the hard limit";
const VERDICTS: [&str; 4] = ["ok", "warning", "no-access", "missing"];

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?} exited with {}: {}", o.status, String::from_utf8_lossy(&o.stderr));
    o
}

fn info_json_of(cmd: &mut Command) -> Value {
    let o = run(cmd.args(["info", "--json"]));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("info --json is not JSON ({e}): {:?}", o.stdout))
}

fn info_json() -> Value {
    info_json_of(&mut Command::new(dmabridge_bin()))
}

fn info_text() -> String {
    String::from_utf8(run(Command::new(dmabridge_bin()).arg("info")).stdout).unwrap()
}

fn exists(path: &str) -> bool {
    Path::new(path).exists()
}

fn dir_count(path: &str) -> usize {
    std::fs::read_dir(path).map(|d| d.count()).unwrap_or(0)
}

fn link_name(path: &Path) -> Option<String> {
    Some(std::fs::read_link(path).ok()?.file_name()?.to_string_lossy().into_owned())
}

/// (soft, hard) of "Max locked memory" in a /proc/PID/limits text; `None`
/// for unlimited.
fn proc_memlock(limits: &str) -> (Option<u64>, Option<u64>) {
    let line = limits.lines().find(|l| l.starts_with("Max locked memory")).expect("no memlock line");
    let nums: Vec<Option<u64>> =
        line["Max locked memory".len()..].split_whitespace().take(2).map(|w| w.parse().ok()).collect();
    (nums[0], nums[1])
}

/// The report's way of writing a limit: bytes, or "unlimited".
fn limit_json(v: Option<u64>) -> Value {
    v.map_or_else(|| Value::from("unlimited"), Value::from)
}

/// True if this process holds capability `cap` (from /proc/self/status).
fn has_cap(cap: u32) -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hex = status.lines().find_map(|l| l.strip_prefix("CapEff:")).unwrap().trim();
    u64::from_str_radix(hex, 16).unwrap() & (1 << cap) != 0
}

/// A `dmabridge info --json` child whose RLIMIT_MEMLOCK is set to `limit`
/// before it starts.
fn info_json_with_memlock(limit: Rlimit) -> Value {
    let mut cmd = Command::new(dmabridge_bin());
    let (soft, hard) = (limit.current, limit.maximum);
    // SAFETY: between fork and exec the closure makes one system call
    // (prlimit64 through rustix, which neither allocates nor takes locks) on
    // values captured by copy.
    unsafe {
        cmd.pre_exec(move || {
            rustix::process::setrlimit(Resource::Memlock, Rlimit { current: soft, maximum: hard }).map_err(Into::into)
        });
    }
    info_json_of(&mut cmd)
}

/// Every object with a `verdict` follows the rule: a known verdict (or null
/// for items VFIO does not concern), and a hint exactly when not ok.
fn check_verdicts(v: &Value, at: &str, seen: &mut usize) {
    match v {
        Value::Object(map) => {
            if let Some(verdict) = map.get("verdict") {
                *seen += 1;
                let hint = map.get("hint").unwrap_or_else(|| panic!("{at}: a verdict without a hint field"));
                match verdict.as_str() {
                    None => assert!(verdict.is_null() && hint.is_null(), "{at}: {v}"),
                    Some("ok") => assert!(hint.is_null(), "{at}: ok with a hint: {v}"),
                    Some(s) => {
                        assert!(VERDICTS.contains(&s), "{at}: unknown verdict {s}");
                        let h = hint.as_str().unwrap_or_else(|| panic!("{at}: {s} without a hint: {v}"));
                        assert!(!h.is_empty() && !h.contains('\n'), "{at}: the hint must be one line: {h:?}");
                    }
                }
            }
            for (k, x) in map {
                check_verdicts(x, &format!("{at}.{k}"), seen);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                check_verdicts(x, &format!("{at}[{i}]"), seen);
            }
        }
        _ => {}
    }
}

#[test]
fn every_section_has_a_verdict_and_a_hint_when_not_ok() {
    let r = info_json();
    for section in ["kernel", "io_uring", "udmabuf", "heaps", "iommu", "vfio", "memlock", "overall"] {
        let v = r[section]["verdict"].as_str().unwrap_or_else(|| panic!("section {section} has no verdict: {r}"));
        assert!(VERDICTS.contains(&v), "{section}: {v}");
    }
    let mut seen = 0;
    check_verdicts(&r, "report", &mut seen);
    assert!(seen >= 12, "only {seen} verdicts in {r}");
}

#[test]
fn kernel_release_is_uname_r() {
    let uname = run(Command::new("uname").arg("-r")).stdout;
    let r = info_json();
    assert_eq!(r["kernel"]["release"], String::from_utf8(uname).unwrap().trim());
    let io = &r["io_uring"];
    assert_eq!(io["works"].as_bool(), Some(io["verdict"] == "ok"), "{io}");
}

#[test]
fn udmabuf_state_matches_dev() {
    let u = &info_json()["udmabuf"];
    if !exists("/dev/udmabuf") {
        assert_eq!(u["present"], false, "{u}");
        assert_eq!(u["accessible"], false, "{u}");
        assert_eq!(u["verdict"], "missing", "{u}");
        assert_eq!(u["hint"], UDMABUF_HINT, "{u}");
        assert!(u["limits"].is_null(), "{u}");
    } else {
        let rw = rustix::fs::access("/dev/udmabuf", rustix::fs::Access::READ_OK | rustix::fs::Access::WRITE_OK);
        assert_eq!(u["present"], true, "{u}");
        assert_eq!(u["accessible"], rw.is_ok(), "{u}");
        assert_eq!(u["verdict"], if rw.is_ok() { "ok" } else { "no-access" }, "{u}");
        let mb = std::fs::read_to_string("/sys/module/udmabuf/parameters/size_limit_mb")
            .map_or(64, |s| s.trim().parse::<u64>().unwrap());
        assert_eq!(u["limits"]["size_limit"], mb << 20, "{u}");
    }
}

#[test]
fn heaps_match_dev_dma_heap() {
    let h = &info_json()["heaps"];
    let mut names: Vec<String> = std::fs::read_dir("/dev/dma_heap")
        .map(|d| d.map(|e| e.unwrap().file_name().into_string().unwrap()).collect())
        .unwrap_or_default();
    names.sort();
    let reported: Vec<&str> = h["heaps"].as_array().unwrap().iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(reported, names, "{h}");
    if names.is_empty() {
        assert_eq!(h["verdict"], "missing", "{h}");
        assert!(h["hint"].as_str().unwrap().contains("CONFIG_DMABUF_HEAPS_SYSTEM"), "{h}");
    }
}

#[test]
fn iommu_state_matches_sysfs() {
    let i = &info_json()["iommu"];
    let groups = dir_count("/sys/kernel/iommu_groups");
    assert_eq!(i["groups"], groups, "{i}");
    assert_eq!(i["on"], groups > 0, "{i}");
    assert_eq!(i["units"].as_array().unwrap().len(), dir_count("/sys/class/iommu"), "{i}");
    if groups == 0 {
        assert_eq!(i["verdict"], "missing", "{i}");
        assert_eq!(i["hint"], IOMMU_HINT, "{i}");
    }
}

#[test]
fn vfio_state_matches_dev_and_sysfs() {
    let r = info_json();
    let v = &r["vfio"];
    let c = &v["container"];
    assert_eq!(c["present"], exists("/dev/vfio/vfio"), "{c}");
    if !exists("/dev/vfio/vfio") {
        assert_eq!(c["verdict"], "missing", "{c}");
        assert!(c["hint"].as_str().unwrap().contains("dmabridge-kmod load vfio-pci"), "{c}");
        assert_eq!(v["verdict"], "missing", "{v}");
        let path = r["overall"]["paths"].as_array().unwrap().iter().find(|p| p["kind"] == "vfio").unwrap();
        assert_eq!(path["available"], false, "{path}");
    }
    for m in v["modules"].as_array().unwrap() {
        let loaded = Path::new("/sys/module").join(m["name"].as_str().unwrap()).is_dir();
        assert_eq!(m["loaded"], loaded, "{m}");
        assert_eq!(m["verdict"], if loaded { "ok" } else { "missing" }, "{m}");
    }

    // Every PCI function appears once, in its own group, with its driver.
    let mut reported: Vec<(String, Value, Value)> = Vec::new();
    for g in v["groups"].as_array().unwrap() {
        assert_eq!(g["node_present"], exists(g["node"].as_str().unwrap()), "{g}");
        for f in g["functions"].as_array().unwrap() {
            assert_eq!(f["iommu_group"], g["group"], "{f} listed under group {}", g["group"]);
            reported.push((f["address"].as_str().unwrap().to_owned(), f["driver"].clone(), f["iommu_group"].clone()));
        }
    }
    for f in v["ungrouped"].as_array().unwrap() {
        assert!(f["iommu_group"].is_null(), "{f}");
        reported.push((f["address"].as_str().unwrap().to_owned(), f["driver"].clone(), Value::Null));
    }
    reported.sort_by(|a, b| a.0.cmp(&b.0));
    let mut sysfs: Vec<(String, Value, Value)> = std::fs::read_dir("/sys/bus/pci/devices")
        .map(|d| {
            d.map(|e| {
                let e = e.unwrap();
                let p = e.path();
                let group = link_name(&p.join("iommu_group")).map_or(Value::Null, |g| g.parse::<u32>().unwrap().into());
                (e.file_name().into_string().unwrap(), link_name(&p.join("driver")).into(), group)
            })
            .collect()
        })
        .unwrap_or_default();
    sysfs.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(reported, sysfs);
}

#[test]
fn memlock_is_the_process_limit() {
    let own = rustix::process::getrlimit(Resource::Memlock);
    let proc = proc_memlock(&std::fs::read_to_string("/proc/self/limits").unwrap());
    assert_eq!((own.current, own.maximum), proc, "getrlimit and /proc/self/limits disagree");
    // The child inherits this process's limits.
    let m = &info_json()["memlock"];
    assert_eq!(m["soft"], limit_json(own.current), "{m}");
    assert_eq!(m["hard"], limit_json(own.maximum), "{m}");
    assert_eq!(m["cap_ipc_lock"], has_cap(14), "{m}");
    let low = own.current.is_some_and(|n| n < 64 << 20);
    assert_eq!(m["verdict"], if low { "warning" } else { "ok" }, "{m}");
    if low {
        assert_eq!(m["hint"], MEMLOCK_HINT, "{m}");
    }
}

#[test]
fn memlock_follows_the_limit_the_child_runs_with() {
    let own = rustix::process::getrlimit(Resource::Memlock);
    // Lowering the soft limit is always allowed.
    let m = &info_json_with_memlock(Rlimit { current: Some(4 << 20), maximum: own.maximum })["memlock"];
    assert_eq!(m["soft"], 4 << 20, "{m}");
    assert_eq!(m["hard"], limit_json(own.maximum), "{m}");
    assert_eq!(m["verdict"], "warning", "{m}");
    assert_eq!(m["hint"], MEMLOCK_HINT, "{m}");
    // Raising it to unlimited needs CAP_SYS_RESOURCE (or an unlimited hard limit).
    if own.maximum.is_none() || has_cap(24) {
        let m = &info_json_with_memlock(Rlimit { current: None, maximum: None })["memlock"];
        assert_eq!(m["soft"], "unlimited", "{m}");
        assert_eq!(m["hard"], "unlimited", "{m}");
        assert_eq!(m["verdict"], "ok", "{m}");
        assert!(m["hint"].is_null(), "{m}");
    } else {
        eprintln!("cannot raise RLIMIT_MEMLOCK here: the unlimited case is not shown");
    }
}

#[test]
fn text_puts_each_fix_under_its_item() {
    let text = info_text();
    let lines: Vec<&str> = text.lines().collect();
    // (item line contains all of these, the fix line under it contains this)
    let mut cases: Vec<(Vec<&str>, &str)> = Vec::new();
    if !exists("/dev/udmabuf") {
        cases.push((vec!["MISSING", "/dev/udmabuf", "not present"], UDMABUF_HINT));
    }
    if dir_count("/sys/kernel/iommu_groups") == 0 {
        cases.push((vec!["MISSING", "groups"], IOMMU_HINT));
    }
    if !exists("/dev/vfio/vfio") {
        cases.push((vec!["MISSING", "/dev/vfio/vfio", "not present"], "kmod-helpers/dmabridge-kmod load vfio-pci"));
    }
    if !exists("/dev/dma_heap") {
        cases.push((vec!["MISSING", "/dev/dma_heap", "no heaps"], "CONFIG_DMABUF_HEAPS_SYSTEM"));
    }
    if rustix::process::getrlimit(Resource::Memlock).current.is_some_and(|n| n < 64 << 20) {
        cases.push((vec!["WARNING", "limit", "below 64 MiB"], MEMLOCK_HINT));
    }
    for (item, fix) in cases {
        let i = lines
            .iter()
            .position(|l| item.iter().all(|w| l.contains(w)))
            .unwrap_or_else(|| panic!("no line with {item:?} in:\n{text}"));
        let next = lines.get(i + 1).copied().unwrap_or_default();
        assert!(
            next.trim_start().starts_with("fix: ") && next.contains(fix),
            "no fix {fix:?} under {:?}:\n{text}",
            lines[i]
        );
        let indent = |l: &str| l.len() - l.trim_start().len();
        assert!(indent(next) > indent(lines[i]), "the fix is not indented under its item:\n{}\n{next}", lines[i]);
    }
    // The verdict column is aligned: every item line starts with two spaces
    // and a verdict, and its label starts at the same column.
    let items: Vec<&&str> =
        lines.iter().filter(|l| l.starts_with("  ") && !l.trim_start().starts_with("fix: ")).collect();
    assert!(items.len() >= 10, "{text}");
    for l in items {
        let word = l.trim_start().split("  ").next().unwrap();
        assert!(["ok", "WARNING", "NO ACCESS", "MISSING", "-"].contains(&word), "bad verdict in {l:?}");
        assert_eq!(&l[12..13], " ", "verdict column not aligned: {l:?}");
        // Labels start at column 13, nested ones (PCI functions) two further.
        let label = l[13..].strip_prefix("  ").unwrap_or(&l[13..]);
        assert!(!label.starts_with(' '), "label column not aligned: {l:?}");
    }
}

#[test]
fn text_and_json_name_the_same_paths() {
    let r = info_json();
    let text = info_text();
    for p in r["overall"]["paths"].as_array().unwrap() {
        let name = p["name"].as_str().unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("  ") && l.contains(name))
            .unwrap_or_else(|| panic!("no item {name} in:\n{text}"));
        let label = match p["verdict"].as_str().unwrap() {
            "ok" => "ok",
            "warning" => "WARNING",
            "no-access" => "NO ACCESS",
            _ => "MISSING",
        };
        assert!(line.trim_start().starts_with(label), "{line} (verdict {})", p["verdict"]);
        assert_eq!(p["available"] == true, p["verdict"] == "ok", "{p}");
        assert!(line.contains(p["detail"].as_str().unwrap()), "{line}");
    }
    assert!(text.contains(r["overall"]["summary"].as_str().unwrap()), "{text}");
}

#[test]
fn library_and_cli_report_the_same_machine() {
    let lib = serde_json::to_value(Report::gather()).unwrap();
    // The CLI adds the OpenCL devices (the platform, opened) to the report.
    let mut cli = info_json();
    assert!(cli.as_object_mut().unwrap().remove("devices").is_some_and(|d| d.is_object()), "no devices section");
    assert_eq!(cli, lib);
}

#[test]
fn cli_help_and_usage_errors() {
    let o = run(Command::new(dmabridge_bin()).arg("--help"));
    let help = String::from_utf8(o.stdout).unwrap();
    assert!(help.contains("info") && help.contains("dmabridge info"), "{help}");
    let o = Command::new(dmabridge_bin()).arg("frobnicate").output().unwrap();
    assert_eq!(o.status.code(), Some(2), "a usage error exits with 2");
    let o = Command::new(dmabridge_bin()).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "no subcommand is a usage error");
}

#[test]
fn proc_memlock_parses_unlimited() {
    let text = "Limit                     Soft Limit           Hard Limit           Units\n\
                Max locked memory         8388608              unlimited            bytes\n";
    assert_eq!(proc_memlock(text), (Some(8 << 20), None));
}

/// A function `DMABRIDGE_BAR_DEVICE` names (as a BAR device and as its
/// engine) that is not on the bus (removed, or never there) is named as
/// gone, with the fix; the CPU device is available; `--no-devices` leaves
/// the section (and the opening of the platform) out.
#[test]
fn info_names_a_configured_function_that_is_gone() {
    let (bar, engine) = ("0000:7e:1f.6", "0000:7e:1f.5");
    assert!(!exists(&format!("/sys/bus/pci/devices/{bar}")) && !exists(&format!("/sys/bus/pci/devices/{engine}")));
    let r =
        info_json_of(Command::new(dmabridge_bin()).env("DMABRIDGE_BAR_DEVICE", format!("{bar},bar=2,engine={engine}")));
    let devices = r["devices"]["devices"].as_array().unwrap_or_else(|| panic!("no devices section: {r}"));
    assert_eq!(devices[0]["state"], "available", "the CPU device: {}", devices[0]);
    assert!(devices[0]["address"].is_null() && devices[0]["verdict"] == "ok", "{}", devices[0]);
    for address in [bar, engine] {
        let d = devices.iter().find(|d| d["address"] == address).unwrap_or_else(|| panic!("no {address}: {r}"));
        assert_eq!((&d["state"], &d["verdict"]), (&"gone".into(), &"missing".into()), "{d}");
        assert!(d["reason"].as_str().unwrap().contains("not on the PCI bus"), "{d}");
        let hint = d["hint"].as_str().unwrap();
        assert!(hint.contains("/sys/bus/pci/rescan") && hint.contains(&format!("bind {address}")), "{d}");
    }
    assert_eq!(r["devices"]["verdict"], "missing");

    let text = String::from_utf8(
        run(Command::new(dmabridge_bin()).arg("info").env("DMABRIDGE_BAR_DEVICE", format!("{bar},bar=2"))).stdout,
    )
    .unwrap();
    let line = text.lines().find(|l| l.contains(bar)).unwrap_or_else(|| panic!("no {bar} in:\n{text}"));
    assert!(line.starts_with("  MISSING    ") && line.contains("GONE: not on the PCI bus"), "{line}");

    let o =
        run(Command::new(dmabridge_bin()).args(["info", "--json", "--no-devices"]).env("DMABRIDGE_BAR_DEVICE", bar));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(r["devices"].is_null() && r["overall"].is_object(), "{r}");
}

/// Where PoCL cannot make or write its kernel cache (a read-only root with
/// the default folder under `$HOME`), the report says there is no compiler
/// for that reason, names the folder and the variable that chose it, and
/// gives `POCL_CACHE_DIR` as the fix — not the install, PoCL is installed —
/// and PoCL's own message about mismatched libstdc++ versions is not
/// printed (PoCL's devices never start).
#[test]
fn a_kernel_cache_pocl_cannot_write_is_named_with_its_fix() {
    if !dmabridge_tests::pocl_or_skip("a_kernel_cache_pocl_cannot_write_is_named_with_its_fix") {
        return;
    }
    // /dev/null is not a folder: nothing can be made under it, even by root.
    let cases = [
        ("XDG_CACHE_HOME", "/dev/null/cache", "/dev/null/cache/pocl/kcache"),
        ("POCL_CACHE_DIR", "/dev/null/pocl", "/dev/null/pocl"),
    ];
    for (var, value, folder) in cases {
        let o = run(Command::new(dmabridge_bin()).arg("info").env_remove("POCL_CACHE_DIR").env(var, value));
        let (text, err) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let lines: Vec<&str> = text.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.contains("compiler") && l.contains("CL_COMPILER_NOT_AVAILABLE"))
            .unwrap_or_else(|| panic!("{var}={value}: no line saying there is no compiler:\n{text}"));
        assert!(lines[i].contains(folder) && lines[i].contains(&format!("from {var}")), "{var}={value}: {}", lines[i]);
        let fix = lines.get(i + 1).copied().unwrap_or_default();
        assert!(fix.trim_start().starts_with("fix: set POCL_CACHE_DIR"), "{var}={value}: the fix: {fix:?}\n{text}");
        assert!(!text.contains("apt-get install pocl") && !err.contains("libstdc++"), "{var}={value}:\n{text}\n{err}");
        let v = info_json_of(Command::new(dmabridge_bin()).env_remove("POCL_CACHE_DIR").env(var, value));
        let no = &v["devices"]["compiler"]["Err"];
        assert!(no["why"].as_str().is_some_and(|w| w.contains(folder)), "{var}={value}: {no}");
        assert!(no["fix"].as_str().is_some_and(|f| f.contains("POCL_CACHE_DIR")), "{var}={value}: {no}");
    }
}
