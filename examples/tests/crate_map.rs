//! README.md's crate map names exactly the obliv dependencies each crate's Cargo.toml has
//! (a map that drifts from the code fails here).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;

/// The `obliv-*` names under `[dependencies]` of a Cargo.toml, without the prefix.
fn obliv_dependencies(manifest: &str) -> BTreeSet<String> {
    let mut in_deps = false;
    let mut out = BTreeSet::new();
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if let Some(rest) = line.strip_prefix("obliv-").filter(|_| in_deps) {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            out.insert(name);
        }
    }
    out
}

/// The map between the markers: crate name (without `obliv-`) → its dependencies.
fn readme_map(readme: &str) -> Vec<(String, BTreeSet<String>)> {
    let start = readme
        .find("<!-- crate-map -->")
        .expect("crate map start marker");
    let end = readme
        .find("<!-- /crate-map -->")
        .expect("crate map end marker");
    readme[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix("- `obliv-"))
        .map(|l| {
            let (name, deps) = l.split_once("`:").expect("`- `obliv-x`: a, b` lines");
            let deps = deps.trim();
            let deps = if deps == "none" {
                BTreeSet::new()
            } else {
                deps.split(',').map(|d| d.trim().to_string()).collect()
            };
            (name.to_string(), deps)
        })
        .collect()
}

#[test]
fn readme_crate_map_matches_the_manifests() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let map = readme_map(&readme);
    assert!(map.len() >= 13, "the map lists every library crate");
    for (name, deps) in &map {
        let manifest = std::fs::read_to_string(root.join("crates").join(name).join("Cargo.toml"))
            .unwrap_or_else(|e| panic!("README names obliv-{name}, which has no manifest: {e}"));
        assert_eq!(
            &obliv_dependencies(&manifest),
            deps,
            "README.md's crate map for obliv-{name} differs from its Cargo.toml"
        );
    }
    // Every crate under crates/ with obliv dependencies or dependents is in the map (the
    // FourQlib differential-test crate is a test harness, not a library).
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name != "fourqlib-diff" {
            assert!(
                map.iter().any(|(n, _)| *n == name),
                "crates/{name} is missing from README.md's crate map"
            );
        }
    }
}

#[test]
fn the_parser_sees_dependencies_only() {
    let m = "[package]\nname = \"obliv-x\"\n[dependencies]\nobliv-core.workspace = true\n\
             obliv-net = { path = \"../net\" }\nrand = \"1\"\n[dev-dependencies]\nobliv-ec.workspace = true\n";
    let got: Vec<String> = obliv_dependencies(m).into_iter().collect();
    assert_eq!(got, ["core", "net"]);
}
