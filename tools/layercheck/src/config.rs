//! `layers.conf`: the layer order and the known exceptions.

use std::path::Path;

/// The layers, lowest first, and the exceptions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Top-level module names, lowest layer first.
    pub layers: Vec<String>,
    /// `(module path, layer)`: the module (and those inside it) may name that layer.
    pub allow: Vec<(Vec<String>, String)>,
}

impl Config {
    /// Reads `path` (see `layers.conf` for the format).
    pub fn read(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
        Config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the text of a `layers.conf`.
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut config = Config { layers: Vec::new(), allow: Vec::new() };
        for (n, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                [] => {}
                ["layer", name] => config.layers.push(name.to_string()),
                ["allow", module, layer] => {
                    config.allow.push((module.split("::").map(str::to_string).collect(), layer.to_string()))
                }
                _ => {
                    return Err(format!(
                        "line {}: expected `layer NAME` or `allow MODULE LAYER`, found {line:?}",
                        n + 1
                    ))
                }
            }
        }
        if config.layers.is_empty() {
            return Err("no `layer NAME` line".into());
        }
        for (module, layer) in &config.allow {
            if !config.layers.contains(layer) {
                return Err(format!("allow {} {layer}: {layer} is not a layer", module.join("::")));
            }
        }
        Ok(config)
    }

    /// The rank of the top-level module `name`: 1 for the lowest layer, 0
    /// for the crate root and modules that are no layer.
    pub fn rank(&self, name: Option<&str>) -> usize {
        name.and_then(|n| self.layers.iter().position(|l| l == n)).map_or(0, |i| i + 1)
    }

    /// The exception that lets `module` name `layer`, if any (its index).
    pub fn allowed(&self, module: &[String], layer: &str) -> Option<usize> {
        self.allow.iter().position(|(m, l)| l == layer && module.starts_with(m))
    }
}
