//! Which doc examples the x86_64 guest runs: `tests/device-doctests` picks
//! those whose program links a module of the library that names a /dev or
//! /sys path, and `tests/guest-runner --only` runs just those. Host side
//! only (no guest boots): the selection is made on the host.

use std::path::{Path, PathBuf};
use std::process::Command;

use dmabridge_tests::repo_root;

use super::{text, FakeExamples};

/// `tests/device-doctests DIR [SRC]`: its output lines, or its failure.
fn select(dir: &Path, src: Option<&Path>) -> Vec<String> {
    let mut cmd = Command::new(repo_root().join("tests/device-doctests"));
    cmd.arg(dir);
    if let Some(src) = src {
        cmd.arg(src);
    }
    let out = cmd.output().expect("tests/device-doctests runs");
    assert!(out.status.success(), "tests/device-doctests failed: {}", text(&out.stderr));
    let mut names: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    names.sort();
    names
}

/// `tests/device-doctests --every --without-pocl` (the arm64 guest, which
/// has no PoCL): every example but those that link PoCL's module.
#[test]
fn a_guest_without_pocl_runs_every_example_but_the_pocl_ones() {
    let examples = FakeExamples::new(
        "docsel-nopocl",
        &[
            ("a_calls_node_open", "# _ZN9dmabridge3sys4node4open17h0123456789abcdefE\necho ran a"),
            ("b_links_pocl", "# _ZN9dmabridge7runtime7program4pocl3get17h0123456789abcdefE\necho ran b"),
            ("c_adds", "# _ZN9dmabridge3sys5plain3add17h0123456789abcdefE\necho ran c"),
            ("d_pocl_impl", "# _$LT$dmabridge..runtime..program..pocl..Pocl$u20$as$u20$x$GT$\necho ran d"),
            ("driver_dmabridge_src_runtime_program_mod_rs_1_0", "echo ran e"),
        ],
    );
    let src = fake_source(&examples.0);
    let mut cmd = Command::new(repo_root().join("tests/device-doctests"));
    let out = cmd.args(["--every", "--without-pocl"]).arg(&examples.0).arg(&src).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut picked: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    picked.sort();
    assert_eq!(picked, ["a_calls_node_open", "c_adds", "driver_dmabridge_src_runtime_program_mod_rs_1_0"]);
}

/// A fake library source: `sys/node.rs` opens a device node in its code,
/// `sys/plain.rs` names one in a comment only, `pipeline/mod.rs` reads sysfs.
fn fake_source(root: &Path) -> PathBuf {
    let src = root.join("src");
    for (file, code) in [
        ("sys/node.rs", "pub fn open() -> std::io::Result<std::fs::File> { std::fs::File::open(\"/dev/fake\") }\n"),
        ("sys/plain.rs", "/// Not \"/dev/fake\": a comment.\n// Nor \"/sys/x\".\npub fn add(a: u8) -> u8 { a + 1 }\n"),
        ("pipeline/mod.rs", "pub fn scan() -> bool { std::path::Path::new(\"/sys\").exists() }\n"),
    ] {
        let path = src.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, code).unwrap();
    }
    src
}

#[test]
fn only_examples_linking_a_device_module_are_selected_and_run() {
    // The fake programs carry the symbols a real one would: the mangled
    // path of a function, or the path of an impl.
    let examples = FakeExamples::new(
        "docsel",
        &[
            ("a_calls_node_open", "# _ZN9dmabridge3sys4node4open17h0123456789abcdefE\necho ran a"),
            (
                "b_formats_a_node_error",
                "# _$LT$dmabridge..sys..node..Error$u20$as$u20$core..fmt..Display$GT$\necho ran b",
            ),
            ("c_adds", "# _ZN9dmabridge3sys5plain3add17h0123456789abcdefE\necho ran c"),
            ("d_scans_sysfs", "# _ZN9dmabridge8pipeline4scan17h0123456789abcdefE\necho ran d"),
            ("e_links_nothing_of_ours", "echo ran e"),
            // runtime/program's examples are the host run's (PoCL, CPU device).
            (
                "driver_dmabridge_src_runtime_program_mod_rs_1_0",
                "# _ZN9dmabridge3sys4node4open17h0123456789abcdefE\necho ran f",
            ),
        ],
    );
    let src = fake_source(&examples.0);
    let picked = select(&examples.0, Some(&src));
    assert_eq!(picked, ["a_calls_node_open", "b_formats_a_node_error", "d_scans_sysfs"]);

    let list = examples.0.join("selected.txt");
    std::fs::write(&list, picked.join("\n") + "\n").unwrap();
    let out = Command::new(repo_root().join("tests/guest-runner"))
        .args(["--doctests", examples.0.to_str().unwrap(), "--only", list.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    for run in ["a_calls_node_open", "b_formats_a_node_error", "d_scans_sysfs"] {
        assert!(stdout.contains(&format!("test {run} ... ok")), "{run} runs: {stdout}");
    }
    for left in ["c_adds", "e_links_nothing_of_ours", "driver_dmabridge_src_runtime_program_mod_rs_1_0"] {
        assert!(!stdout.contains(left), "{left} is left out: {stdout}");
    }
    assert!(stdout.contains("guest-runner: 3 examples not in"), "{stdout}");
    assert!(stdout.contains("test result: ok. 3 passed; 0 failed; 0 ignored"), "{stdout}");
}

/// The doc examples that take a device with `doc_support::or_skip` (the
/// documented way, tests/README.md) are all selected from the real
/// compiled examples that `make test-doc` kept in target/doctests.
#[test]
fn every_real_example_that_takes_a_device_with_or_skip_is_selected() {
    let root = repo_root();
    let doctests = root.join("target/doctests");
    assert!(
        doctests.is_dir(),
        "{} is missing: run `make test-doc` first (make test runs it before this suite)",
        doctests.display()
    );
    let picked = select(&doctests, None);
    let mut expected = Vec::new();
    for file in rust_files(&root.join("driver")) {
        let rel = file.strip_prefix(&root).unwrap().to_str().unwrap().replace(['/', '.', '-'], "_");
        let source = std::fs::read_to_string(&file).unwrap();
        // rustdoc names a kept example PATH_LINE_N: the line of its opening
        // fence, N counting the examples that start on that line (0 here).
        // Inside a fence: Some((line, runs, takes a device)); compile_fail
        // examples do not run.
        let mut fence: Option<(usize, bool, bool)> = None;
        for (i, line) in source.lines().enumerate() {
            let doc = line.trim_start();
            let Some(body) = doc.strip_prefix("///").or_else(|| doc.strip_prefix("//!")) else { continue };
            let body = body.trim_start();
            if let Some(kind) = body.strip_prefix("```") {
                match fence.take() {
                    None => {
                        fence = Some((i + 1, kind.is_empty() || kind.starts_with("rust") || kind == "no_run", false))
                    }
                    Some((start, true, true)) => expected.push(format!("{rel}_{start}_0")),
                    Some(_) => {}
                }
            } else if let Some((_, _, takes_device)) = fence.as_mut() {
                *takes_device |= body.contains("doc_support::or_skip");
            }
        }
    }
    expected.retain(|name| doctests.join(name).join("rust_out").exists());
    assert!(
        expected.len() >= 20,
        "found only {} examples that take a device with or_skip: {expected:?}",
        expected.len()
    );
    let missing: Vec<&String> = expected.iter().filter(|n| !picked.contains(n)).collect();
    assert!(missing.is_empty(), "examples that take a device but are not selected for the guest: {missing:?}");
    assert!(picked.len() < count_examples(&doctests), "some examples reach no device and are left to the host run");
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    out
}

fn count_examples(doctests: &Path) -> usize {
    std::fs::read_dir(doctests).unwrap().flatten().filter(|e| e.path().join("rust_out").exists()).count()
}
