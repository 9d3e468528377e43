//! udev/70-dmabridge.rules parses and gives group `dmabridge` mode 0660 on
//! the udmabuf, DMA-BUF heap and VFIO group nodes, checked with the real
//! udevadm inside the guest.
//!
//! Needs `udevadm` on the host (the guest's `/` is the host's: `apt-get
//! install udev`) and a function bound to vfio-pci:
//! `qemu/run-in-guest --bind 0000:00:10.0 -- GUEST_TEST udev`.
//!
//! The guest's `/etc` is the host's, read-only, and has no `dmabridge` group;
//! udev would ignore the rules' GROUP (it resolves names when it reads rules).
//! The test therefore bind-mounts a copy of `/etc/group` with the group added
//! over `/etc/group` (guest only), copies the rules to `/run/udev/rules.d`
//! (tmpfs in the guest) and runs `udevadm test --action=add` on each device:
//! that reads every rules file, logs each assignment with its file and line,
//! and applies owner and mode to the node, which the test then checks.
//! Bookworm's udev (systemd 252) has no `udevadm verify` (253 on), and exits
//! 0 whatever the rules say, so its log is what is judged: any line about our
//! file that is not a GROUP or MODE assignment is a complaint.

use std::collections::BTreeSet;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use dmabridge_tests::{repo_root, require_guest};

const GROUP: &str = "dmabridge";
const RULES_NAME: &str = "70-dmabridge.rules";
const RUN_RULES_DIR: &str = "/run/udev/rules.d";

fn source_rules() -> PathBuf {
    repo_root().join("udev").join(RULES_NAME)
}

fn installed_rules() -> String {
    format!("{RUN_RULES_DIR}/{RULES_NAME}")
}

/// The gid of `name` in /etc/group, if it is there.
fn gid_of(group_file: &str, name: &str) -> Option<u32> {
    group_file.lines().find_map(|l| {
        let mut f = l.split(':');
        (f.next() == Some(name)).then(|| f.nth(1)?.parse().ok()).flatten()
    })
}

/// Makes the group exist and installs the rules, once per process; returns
/// the group's gid.
/// Whether the host's udevadm runs in this guest (not in the arm64 guest):
/// otherwise `test` says so and is skipped.
fn udevadm_or_skip(test: &str) -> bool {
    require_guest();
    dmabridge_tests::host_program_runs_or_skip(test, "udevadm")
}

fn setup() -> u32 {
    static GID: OnceLock<u32> = OnceLock::new();
    *GID.get_or_init(|| {
        // They change /etc/group (a bind mount) and the modes of device nodes.
        require_guest();
        let groups = std::fs::read_to_string("/etc/group").expect("read /etc/group");
        let gid = gid_of(&groups, GROUP).unwrap_or_else(|| {
            let used: BTreeSet<u32> = groups.lines().filter_map(|l| l.split(':').nth(2)?.parse().ok()).collect();
            let gid = (100..1000).rev().find(|g| !used.contains(g)).expect("a free system gid");
            let copy = "/run/dmabridge-test-group";
            std::fs::write(copy, format!("{}{GROUP}:x:{gid}:\n", groups)).expect("write the group copy");
            run_ok(Command::new("mount").args(["--bind", copy, "/etc/group"]));
            gid
        });
        std::fs::create_dir_all(RUN_RULES_DIR).expect("create /run/udev/rules.d");
        std::fs::copy(source_rules(), installed_rules()).expect("copy the rules to /run/udev/rules.d");
        gid
    })
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| {
        panic!("cannot run {cmd:?} ({e}): udevadm comes with the host's udev package (apt-get install udev)")
    });
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{cmd:?} failed ({}):\n{text}", out.status);
    text
}

/// One line of `udevadm test` output that names our rules file.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// `Reading rules file: PATH`.
    Reading,
    /// `DEV: PATH:N KEY VALUE` with KEY one of GROUP, MODE, OWNER.
    Assign { line: usize, key: String, value: String },
    /// Anything else: a parse or apply complaint.
    Other(String),
}

fn classify(text: &str, path: &str) -> Option<Line> {
    let at = text.find(path)?;
    let (prefix, rest) = (&text[..at], &text[at + path.len()..]);
    if prefix == "Reading rules file: " && rest.is_empty() {
        return Some(Line::Reading);
    }
    let assign = || -> Option<Line> {
        if !prefix.ends_with(": ") {
            return None;
        }
        let (num, kv) = rest.strip_prefix(':')?.split_once(' ')?;
        let (key, value) = kv.split_once(' ')?;
        if !["GROUP", "MODE", "OWNER"].contains(&key) {
            return None;
        }
        Some(Line::Assign { line: num.parse().ok()?, key: key.to_owned(), value: value.to_owned() })
    };
    Some(assign().unwrap_or_else(|| Line::Other(text.to_owned())))
}

/// What `udevadm test --action=add DEVPATH` said about our rules.
struct Report {
    text: String,
    lines: Vec<Line>,
}

impl Report {
    fn of(devpath: &str) -> Report {
        setup();
        let text = run_ok(Command::new("udevadm").args(["test", "--action=add", devpath]));
        let path = installed_rules();
        let lines = text.lines().filter_map(|l| classify(l, &path)).collect();
        Report { text, lines }
    }

    fn assigned(&self, key: &str) -> Vec<(usize, &str)> {
        self.lines
            .iter()
            .filter_map(|l| match l {
                Line::Assign { line, key: k, value } if k == key => Some((*line, value.as_str())),
                _ => None,
            })
            .collect()
    }

    /// Our file was read and nothing was said against it.
    fn assert_clean(&self) {
        assert!(self.lines.contains(&Line::Reading), "udevadm did not read {}:\n{}", installed_rules(), self.text);
        let complaints: Vec<_> = self.lines.iter().filter(|l| matches!(l, Line::Other(_))).collect();
        assert!(complaints.is_empty(), "udevadm complained about the rules: {complaints:#?}");
    }
}

/// The devpath (`/devices/...`) and node (`/dev/...`) of a sysfs class entry.
fn device(class_entry: &str) -> (String, String) {
    let sys = std::fs::canonicalize(class_entry).unwrap_or_else(|e| panic!("{class_entry}: {e}"));
    let devpath = sys.strip_prefix("/sys").expect("a sysfs path").display().to_string();
    let uevent = std::fs::read_to_string(sys.join("uevent")).expect("read uevent");
    let name = uevent.lines().find_map(|l| l.strip_prefix("DEVNAME=")).expect("DEVNAME in uevent");
    (format!("/{}", devpath.trim_start_matches('/')), format!("/dev/{name}"))
}

fn vfio_group_entry() -> String {
    let entry = std::fs::read_dir("/sys/class/vfio")
        .ok()
        .and_then(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).next())
        .expect("no VFIO group: boot the guest with --bind 0000:00:10.0");
    entry.display().to_string()
}

/// Runs the rules on the device behind `class_entry` and checks that our
/// file gave its node group dmabridge and mode 0660.
fn assert_group_rw(class_entry: &str) {
    let gid = setup();
    let (devpath, node) = device(class_entry);
    // Start from root:root 0600, so that what the node ends up with is what
    // this run of the rules set (udevadm says "Preserve" instead of "Setting"
    // when nothing changes).
    std::os::unix::fs::chown(&node, Some(0), Some(0)).unwrap_or_else(|e| panic!("chown {node}: {e}"));
    std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o600)).unwrap();
    let report = Report::of(&devpath);
    report.assert_clean();
    let groups = report.assigned("GROUP");
    let modes = report.assigned("MODE");
    assert!(!groups.is_empty(), "no GROUP from our rules for {devpath}:\n{}", report.text);
    assert!(!modes.is_empty(), "no MODE from our rules for {devpath}:\n{}", report.text);
    // The last assignment wins; ours must be the last one udev made.
    assert_eq!(groups.last().unwrap().1, gid.to_string(), "GROUP for {devpath} (dmabridge is {gid})");
    assert_eq!(modes.last().unwrap().1, "0660", "MODE for {devpath}");
    let applied = format!("Setting permissions {node}, uid=0, gid={gid}, mode=0660");
    assert!(report.text.contains(&applied), "udevadm did not report `{applied}`:\n{}", report.text);
    let meta = std::fs::metadata(&node).unwrap_or_else(|e| panic!("{node}: {e}"));
    assert_eq!((meta.uid(), meta.gid(), meta.mode() & 0o7777), (0, gid, 0o660), "owner, group, mode of {node}");
}

#[test]
fn udmabuf_is_group_read_write() {
    if !udevadm_or_skip("udmabuf_is_group_read_write") {
        return;
    }
    assert_group_rw("/sys/class/misc/udmabuf");
}

#[test]
fn system_heap_is_group_read_write() {
    if !udevadm_or_skip("system_heap_is_group_read_write")
        || !dmabridge_tests::dma_heaps_or_skip("system_heap_is_group_read_write")
    {
        return;
    }
    assert_group_rw("/sys/class/dma_heap/system");
}

#[test]
fn vfio_group_is_group_read_write() {
    if !udevadm_or_skip("vfio_group_is_group_read_write") {
        return;
    }
    assert_group_rw(&vfio_group_entry());
}

#[test]
fn vfio_container_is_left_world_accessible() {
    if !udevadm_or_skip("vfio_container_is_left_world_accessible") {
        return;
    }
    setup();
    let (devpath, node) = device("/sys/class/misc/vfio");
    assert_eq!(node, "/dev/vfio/vfio");
    let report = Report::of(&devpath);
    report.assert_clean();
    assert!(report.assigned("GROUP").is_empty() && report.assigned("MODE").is_empty(), "{:?}", report.lines);
    let meta = std::fs::metadata(&node).unwrap();
    assert_eq!(meta.mode() & 0o7777, 0o666, "mode of {node}");
}

#[test]
fn every_rule_applies_to_a_device() {
    if !udevadm_or_skip("every_rule_applies_to_a_device") {
        return;
    }
    setup();
    // A kernel without DMA-BUF heaps (Debian's arm64 ones) has no device for
    // the heap rule to apply to: that rule is left out, the others are held.
    let heaps = dmabridge_tests::dma_heaps_or_skip("every_rule_applies_to_a_device (its DMA-BUF heap rule)");
    let text = std::fs::read_to_string(source_rules()).expect("read the rules");
    let rules: BTreeSet<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .filter(|(_, l)| heaps || !l.contains("dma_heap"))
        .map(|(i, _)| i + 1)
        .collect();
    let mut entries = vec!["/sys/class/misc/udmabuf".to_owned(), vfio_group_entry()];
    if heaps {
        entries.push("/sys/class/dma_heap/system".to_owned());
    }
    let mut hit = BTreeSet::new();
    for entry in entries {
        let report = Report::of(&device(&entry).0);
        hit.extend(report.assigned("GROUP").into_iter().map(|(line, _)| line));
    }
    assert_eq!(hit, rules, "rule lines that assigned a group vs. rule lines in {RULES_NAME}");
}

/// udev 252 silently accepts a missing comma between two key-value pairs
/// (253's `udevadm verify` flags it): catch it here.
#[test]
fn rule_pairs_are_comma_separated() {
    let text = std::fs::read_to_string(source_rules()).expect("read the rules");
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with('#')) {
        // Outside quotes, whitespace may only follow a comma.
        let (mut quoted, mut prev) = (false, ',');
        for c in line.trim().chars() {
            if c == '"' {
                quoted = !quoted;
            } else if !quoted && c.is_whitespace() && prev != ',' && !prev.is_whitespace() {
                panic!("{RULES_NAME}:{}: missing comma before {:?}", i + 1, line.trim());
            }
            prev = c;
        }
        assert!(!quoted, "{RULES_NAME}:{}: unbalanced quotes", i + 1);
    }
}

#[test]
fn classify_reads_udevadm_lines() {
    let p = "/run/udev/rules.d/70-dmabridge.rules";
    assert_eq!(classify(&format!("Reading rules file: {p}"), p), Some(Line::Reading));
    assert_eq!(
        classify(&format!("udmabuf: {p}:10 GROUP 990"), p),
        Some(Line::Assign { line: 10, key: "GROUP".into(), value: "990".into() })
    );
    let bad = format!("{p}:1 Invalid key 'GRUOP'");
    assert_eq!(classify(&bad, p), Some(Line::Other(bad.clone())));
    let unknown = format!("{p}:10 Unknown group 'dmabridge', ignoring");
    assert_eq!(classify(&unknown, p), Some(Line::Other(unknown.clone())));
    assert_eq!(classify("udmabuf: /usr/lib/udev/rules.d/50-udev-default.rules:117 GROUP 108", p), None);
}
