//! `layercheck [--config FILE] SRC`: checks the crate whose root is
//! `SRC/lib.rs` against the layer order of FILE (default: the
//! `layers.conf` beside this tool). Exit status 1 when a module names a
//! layer above its own (each such path printed with file and line), 2 when
//! the check could not run.
//!
//! `layercheck --addrs-only SRC`: only the bare-address check, for a crate
//! without the library's layers (the ICD).

use std::path::PathBuf;
use std::process::ExitCode;

use layercheck::Config;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut config_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("layers.conf");
    let mut src = None;
    let mut addrs_only = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addrs-only" => addrs_only = true,
            "--config" => match args.next() {
                Some(p) => config_path = p.into(),
                None => return usage("--config needs a file"),
            },
            "-h" | "--help" => return usage(""),
            _ if src.is_none() => src = Some(PathBuf::from(a)),
            _ => return usage(&format!("unexpected argument {a:?}")),
        }
    }
    let Some(src) = src else { return usage("no source folder given") };
    if addrs_only {
        return match bare_addresses(&src) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(code) => code,
        };
    }
    let result = Config::read(&config_path).and_then(|config| Ok((layercheck::check(&src, &config)?, config)));
    let (report, config) = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("layercheck: {e}");
            return ExitCode::from(2);
        }
    };
    for v in &report.violations {
        println!("{v}");
    }
    for ((module, layer), used) in config.allow.iter().zip(&report.allowed) {
        if *used == 0 {
            eprintln!(
                "layercheck: note: `allow {} {layer}` in {} lets nothing through any more: remove it",
                module.join("::"),
                config_path.display()
            );
        }
    }
    let exceptions: Vec<String> = config
        .allow
        .iter()
        .zip(&report.allowed)
        .filter(|(_, n)| **n > 0)
        .map(|((m, l), n)| format!("{} -> {l} ({n} paths)", m.join("::")))
        .collect();
    let summary = format!(
        "{} modules in {} files of {}, layers {}{}",
        report.modules,
        report.files,
        src.display(),
        config.layers.join(" < "),
        if exceptions.is_empty() { String::new() } else { format!("; known exceptions: {}", exceptions.join(", ")) }
    );
    let bare_ok = match bare_addresses(&src) {
        Ok(ok) => ok,
        Err(code) => return code,
    };
    if report.violations.is_empty() {
        println!("layercheck: {summary}: no module names a layer above its own");
        if bare_ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        }
    } else {
        println!(
            "layercheck: FAILED: {} paths name a layer above their module's ({summary}). Move what the lower layer \
             needs down into it, or let the higher layer hand it down (a field or capability set by whoever creates \
             the object); see docs/ARCHITECTURE.md, \"Layers\"",
            report.violations.len()
        );
        ExitCode::FAILURE
    }
}

/// Runs the bare-address check on `src` and prints what it finds: `Ok(true)`
/// if nothing, the exit code if the check could not run.
fn bare_addresses(src: &std::path::Path) -> Result<bool, ExitCode> {
    let bare = layercheck::addrs::check(src).map_err(|e| {
        eprintln!("layercheck: {e}");
        ExitCode::from(2)
    })?;
    for b in &bare {
        println!("{b}");
    }
    if bare.is_empty() {
        println!(
            "layercheck: {}: no crate-visible function or field takes, returns or holds an address as a bare integer",
            src.display()
        );
    } else {
        println!("layercheck: FAILED: {} functions or fields carry an address as a bare integer", bare.len());
    }
    Ok(bare.is_empty())
}

fn usage(why: &str) -> ExitCode {
    if !why.is_empty() {
        eprintln!("layercheck: {why}");
    }
    eprintln!("usage: layercheck [--config FILE] SRC   (SRC holds the crate's lib.rs)");
    eprintln!("       layercheck --addrs-only SRC");
    if why.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}
