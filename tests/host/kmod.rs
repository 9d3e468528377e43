//! kmod-helpers/dmabridge-kmod on a host without modprobe, IOMMU or vfio: one
//! clear line per missing piece, a failing exit status, nothing changed.

use std::process::{Command, Output};

use dmabridge_tests::repo_root;

fn kmod(args: &[&str]) -> Output {
    Command::new(repo_root().join("kmod-helpers/dmabridge-kmod")).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn unknown_commands_and_bad_devices_are_refused() {
    let o = kmod(&["frob"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("unknown command frob"));
    let o = kmod(&["load"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("name at least one module"));
}

#[test]
fn missing_iommu_or_module_is_one_line_with_a_fix() {
    let has_groups = std::fs::read_dir("/sys/kernel/iommu_groups").map(|d| d.count() > 0).unwrap_or(false);
    if !has_groups {
        let o = kmod(&["bind", "1234:11e8"]);
        assert_eq!(o.status.code(), Some(1));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        let hint = if cfg!(target_arch = "aarch64") { "iommu.passthrough=0" } else { "intel_iommu=on" };
        assert!(e.contains("IOMMU is off") && e.contains(hint), "{e}");
    }
    if !std::path::Path::new("/sys/module/udmabuf").exists() {
        let o = kmod(&["load", "udmabuf"]);
        assert_eq!(o.status.code(), Some(1));
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.contains("udmabuf") && (e.contains("kmod") || e.contains("modprobe")), "{e}");
    }
}

#[test]
fn memlock_report_matches_the_kernel() {
    let o = kmod(&["memlock"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let lim = rustix::process::getrlimit(rustix::process::Resource::Memlock);
    let show = |v: Option<u64>| v.map_or("unlimited".to_string(), |n| n.to_string());
    assert!(out.contains(&format!("soft {}, hard {}", show(lim.current), show(lim.maximum))), "{out} vs {lim:?}");
}
