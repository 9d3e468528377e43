//! `layercheck [--config FILE] SRC`: checks the crate whose root is
//! `SRC/lib.rs` against the layer order of FILE (default: the
//! `layers.conf` beside this tool). Exit status 1 when a module names a
//! layer above its own (each such path printed with file and line), 2 when
//! the check could not run.

use std::path::PathBuf;
use std::process::ExitCode;

use layercheck::Config;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut config_path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("layers.conf");
    let mut src = None;
    while let Some(a) = args.next() {
        match a.as_str() {
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
    let bare = match layercheck::addrs::check(&src) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("layercheck: {e}");
            return ExitCode::from(2);
        }
    };
    for b in &bare {
        println!("{b}");
    }
    if !bare.is_empty() {
        println!("layercheck: FAILED: {} functions carry an address as a bare integer", bare.len());
    }
    if report.violations.is_empty() {
        println!("layercheck: {summary}: no module names a layer above its own");
        if bare.is_empty() {
            println!("layercheck: no crate-visible function takes or returns an address as a bare integer");
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

fn usage(why: &str) -> ExitCode {
    if !why.is_empty() {
        eprintln!("layercheck: {why}");
    }
    eprintln!("usage: layercheck [--config FILE] SRC   (SRC holds the crate's lib.rs)");
    if why.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}
