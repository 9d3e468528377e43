//! layercheck on its fixtures: `fixtures/bad` reaches up in every way the
//! checker resolves (each such line marked BAD in a comment), `fixtures/good` names
//! higher layers only where that is no dependency, or allowed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use layercheck::{check, Config};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures").join(name)
}

fn config() -> Config {
    Config::read(&fixture("layers.conf")).unwrap()
}

/// The `(file, line)` of every line marked `// BAD` under `dir`.
fn marked(dir: &Path) -> BTreeSet<(PathBuf, usize)> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    if line.contains("// BAD") {
                        out.insert((path.clone(), i + 1));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn every_way_of_reaching_up_is_reported_with_its_line() {
    let dir = fixture("bad");
    let report = check(&dir, &config()).unwrap();
    let found: BTreeSet<(PathBuf, usize)> = report.violations.iter().map(|v| (v.file.clone(), v.line)).collect();
    let expected = marked(&dir);
    assert!(expected.len() >= 20, "the fixture marks {} lines", expected.len());
    let missed: Vec<_> = expected.difference(&found).collect();
    let extra: Vec<_> = found.difference(&expected).collect();
    assert!(missed.is_empty() && extra.is_empty(), "missed {missed:#?}\nreported but not marked {extra:#?}");
    assert_eq!(report.allowed, [0], "the bad fixture has no runtime::info");
}

#[test]
fn a_violation_names_the_module_and_the_path_as_written_and_resolved() {
    let report = check(&fixture("bad"), &config()).unwrap();
    let chained = report.violations.iter().find(|v| v.written == "u::keep").expect("runtime/chain.rs");
    assert_eq!(chained.module, "crate::runtime::chain");
    assert_eq!(chained.resolved, "crate::ext::usm::keep");
    let line = chained.to_string();
    assert!(line.contains("chain.rs:5: crate::runtime::chain names u::keep (that is crate::ext::usm::keep)"), "{line}");
    let supers = report.violations.iter().find(|v| v.written == "super::super::super::ext").unwrap();
    assert_eq!(supers.resolved, "crate::ext");
}

#[test]
fn downward_paths_tests_docs_local_names_and_allowed_modules_pass() {
    let report = check(&fixture("good"), &config()).unwrap();
    assert_eq!(report.violations, [], "{:#?}", report.violations);
    assert_eq!(report.allowed, [1], "runtime::info's one path to ext");
    assert_eq!(report.files, 9);
}

#[test]
fn the_configuration_is_checked() {
    assert!(Config::parse("").is_err(), "no layer");
    assert!(Config::parse("layer sys\nallow sys::x ext\n").is_err(), "an exception to no layer");
    assert!(Config::parse("layer sys\nlayers memory\n").is_err(), "a typo");
    let c = Config::parse("layer sys # the lowest\nlayer memory\n").unwrap();
    assert_eq!((c.rank(Some("sys")), c.rank(Some("memory")), c.rank(Some("error")), c.rank(None)), (1, 2, 0, 0));
}

#[test]
fn a_missing_module_file_is_an_error_not_a_pass() {
    let dir = std::env::temp_dir().join(format!("layercheck-missing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("lib.rs"), "pub mod sys;\n").unwrap();
    let e = check(&dir, &config()).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(e.contains("mod sys: neither sys.rs nor sys/mod.rs"), "{e}");
}

/// The bare-address check reports exactly the lines marked BAD in
/// `fixtures/addrs`, and nothing in the good or bad layer fixtures.
#[test]
fn bare_addresses_are_the_marked_lines() {
    let found: BTreeSet<(PathBuf, usize)> =
        layercheck::addrs::check(&fixture("addrs")).unwrap().into_iter().map(|b| (b.file, b.line)).collect();
    assert_eq!(found, marked(&fixture("addrs")));
    assert!(layercheck::addrs::check(&fixture("good")).unwrap().is_empty());
}
