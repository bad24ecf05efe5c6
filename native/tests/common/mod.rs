//! Helpers the CLI test files share.

use std::process::Output;

/// The keys of a successful `walab dump --json`, in the order it printed them.
pub fn keys_of_json_dump(dump: &Output) -> Vec<String> {
    assert!(dump.status.success(), "{}", String::from_utf8_lossy(&dump.stderr));
    String::from_utf8(dump.stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["key"].as_str().unwrap().to_string()
        })
        .collect()
}
