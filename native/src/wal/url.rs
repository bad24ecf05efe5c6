//! `--wal URL --cluster NAME --node ID`: which log a command opens.
//!
//! Every backend names a node's log the same way: a URL for the storage, and a cluster
//! name and node id (defaults `default` and `0`) inside it. For `file:///DIR` the log
//! lives in `DIR/<cluster>/<node>/`; the S3 backend will put it under
//! `<prefix>/<cluster>/<node>/`, the Postgres backend in the tables of that node.
//! A scheme this build does not drive yet is refused with one clear line.

use std::path::PathBuf;
use std::sync::Arc;

use super::file::{node_dir, FileBackend, SegmentFormat, SEGMENT_BYTES_DEFAULT};
use super::fs::RealFs;
use super::io_thread::OnThread;
use super::postgres::PgBackend;
use super::Backend;

/// The flags every WAL command shares.
#[derive(clap::Args, Debug, Clone)]
pub struct WalArgs {
    /// Where the log lives: file:///DIR (s3:// and postgres:// come with their backends).
    #[arg(long)]
    pub wal: String,
    /// The cluster the log belongs to.
    #[arg(long, default_value = "default")]
    pub cluster: String,
    /// The node whose log this is.
    #[arg(long, default_value = "0")]
    pub node: String,
    /// Bytes per segment file (file backend).
    #[arg(long, default_value_t = SEGMENT_BYTES_DEFAULT)]
    pub segment_bytes: u64,
    /// Record format of the segment files (file backend): the tiny store's, one record
    /// per write, or LevelDB's, one WriteBatch record per commit group.
    #[arg(long, value_enum, default_value = "tiny")]
    pub format: SegmentFormat,
}

/// A parsed `--wal` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalUrl {
    /// `file:///absolute/dir` (or `file://relative/dir`).
    File(PathBuf),
    /// `postgres://...` or `postgresql://...`, walab's options still in it.
    Postgres(String),
}

/// Parses a `--wal` value; the error is the one line to print.
pub fn parse_wal_url(text: &str) -> Result<WalUrl, String> {
    if let Some(path) = text.strip_prefix("file://") {
        if path.is_empty() {
            return Err(format!("--wal {text}: no directory after file://"));
        }
        return Ok(WalUrl::File(PathBuf::from(path)));
    }
    if text.starts_with("postgres://") || text.starts_with("postgresql://") {
        return Ok(WalUrl::Postgres(text.to_string()));
    }
    match text.split_once("://") {
        Some((scheme @ "s3", _)) => {
            Err(format!("--wal {text}: the {scheme} backend is not in this build yet; use file:///DIR"))
        }
        Some((scheme, _)) => Err(format!("--wal {text}: unknown scheme {scheme:?}; use file:///DIR")),
        None => Err(format!("--wal {text}: not a URL; use file:///DIR")),
    }
}

fn check_name(flag: &str, value: &str) -> Result<(), String> {
    let ok = !value.is_empty()
        && value != "."
        && value != ".."
        && value.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.');
    if ok {
        Ok(())
    } else {
        Err(format!("{flag} {value:?}: use letters, digits, '-', '_' and '.' only"))
    }
}

impl WalArgs {
    /// The backend these flags name. `create` says whether a missing log may be created
    /// (`load`, `bench`) or is an error (`dump`).
    pub fn backend(&self, create: bool) -> Result<Box<dyn Backend>, String> {
        check_name("--cluster", &self.cluster)?;
        check_name("--node", &self.node)?;
        if self.segment_bytes < 4096 || self.segment_bytes > (1 << 34) {
            return Err(format!("--segment-bytes {}: must be between 4096 and 17179869184", self.segment_bytes));
        }
        match parse_wal_url(&self.wal)? {
            WalUrl::File(base) => {
                let file = FileBackend::with_format(
                    Arc::new(RealFs),
                    node_dir(&base, &self.cluster, &self.node),
                    self.segment_bytes,
                    create,
                    self.format,
                );
                // Blocking file I/O runs on its own thread (see `io_thread`).
                Ok(Box::new(OnThread::new(Box::new(file)).map_err(|e| e.to_string())?))
            }
            WalUrl::Postgres(url) => {
                let backend = PgBackend::new(&url, &self.cluster, &self.node, create)?;
                Ok(Box::new(backend))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_urls_and_refuses_the_rest() {
        assert_eq!(parse_wal_url("file:///data/wal"), Ok(WalUrl::File(PathBuf::from("/data/wal"))));
        assert!(parse_wal_url("file://").unwrap_err().contains("no directory"));
        assert!(parse_wal_url("s3://bucket/p").unwrap_err().contains("not in this build"));
        assert_eq!(parse_wal_url("postgres://h/db?segments=4"), Ok(WalUrl::Postgres("postgres://h/db?segments=4".into())));
        assert!(parse_wal_url("ftp://x").unwrap_err().contains("unknown scheme"));
        assert!(parse_wal_url("/data").unwrap_err().contains("not a URL"));
    }

    #[test]
    fn cluster_and_node_cannot_escape_the_directory() {
        assert!(check_name("--node", "..").is_err());
        assert!(check_name("--cluster", "a/b").is_err());
        assert!(check_name("--node", "node-1").is_ok());
    }
}
