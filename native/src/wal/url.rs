//! `--wal URL --cluster NAME --node ID`: which log a command opens.
//!
//! Every backend names a node's log the same way: a URL for the storage, and a cluster
//! name and node id (defaults `default` and `0`) inside it. For `file:///DIR` the log
//! lives in `DIR/<cluster>/<node>/`; for `s3://bucket/path` under
//! `path/<cluster>/<node>/` in the bucket (`--endpoint URL` for S3-compatible servers);
//! the Postgres backend in the tables of that node.
//! A scheme this build does not drive yet is refused with one clear line.

use std::path::PathBuf;
use std::sync::Arc;

use super::file::affinity::SyncCpus;
use super::file::{node_dir, FileBackend, SegmentFormat, SEGMENT_BYTES_DEFAULT};
use super::file::fs::RealFs;
use super::postgres::PgBackend;
use super::s3::{self, S3Backend, S3Location};
use super::Backend;
use walab_core::group_commit::Policy;
use walab_core::session::preset::Tuning;
use walab_core::remote::lease::{FenceMode, LeaseTerms, LEASE_DEFAULT, SKEW_DEFAULT};
use walab_core::ring::{parse_duration, walab_option};
use walab_core::time::Nanos;

/// The flags every WAL command shares.
#[derive(clap::Args, Debug, Clone)]
pub struct WalArgs {
    /// Where the log lives: file:///DIR, s3://BUCKET/PATH or postgres://... An s3://
    /// URL may choose its fence: ?fence=read (the default: a registration read after
    /// every PUT) or ?fence=lease (with lease=10s&skew=1s, the defaults; `walab serve`'s
    /// default), and how many
    /// records a batch holds before it uploads beside another: ?pipeline_min=32.
    #[arg(long)]
    pub wal: String,
    /// The cluster the log belongs to.
    #[arg(long, default_value = "default")]
    pub cluster: String,
    /// The node whose log this is.
    #[arg(long, default_value = "0")]
    pub node: String,
    /// Bytes per segment: a segment file's size for file:// (default 16 MiB, or what
    /// the log recorded when it was created), the record bytes per trim unit for s3://,
    /// a ring generation for postgres:// (the URL's segmentBytes).
    #[arg(long, value_name = "BYTES")]
    pub segment_bytes: Option<u64>,
    /// Record format of the segment files (file backend): the tiny store's, one record
    /// per write, or LevelDB's, one WriteBatch record per commit group.
    #[arg(long, value_enum, default_value = "tiny")]
    pub format: SegmentFormat,
    /// S3-compatible endpoint for s3:// (MinIO, R2, a local server); AWS S3 when absent.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Batches persisting at once: syncs for file:// (default 1: every batch synced
    /// inline, one at a time; 2 or more run on sync threads), uploads for s3:// (default
    /// 4), inserts for postgres:// (the URL's maxInflight, default 4).
    #[arg(long, value_name = "N", alias = "inflight-max", alias = "sync-threads")]
    pub inflight: Option<usize>,
    /// For s3://: make every append its own PUT (the baseline group commit is measured
    /// against).
    #[arg(long)]
    pub per_write: bool,
    /// For file://: the CPUs the syncing threads (the driver, the sync threads) run on.
    /// `auto` (the default): the CPUs that take the log device's completion interrupts,
    /// if those are fewer than this process may use (a single-queue disk, as in most
    /// VMs); `off`: wherever Linux puts them; or a list such as `1` or `0,2-3`.
    #[arg(long, value_name = "auto|off|CPUS")]
    pub sync_cpus: Option<String>,
    /// After an acknowledgement with fewer than half as many records waiting as it
    /// answered, hold the next batch until the writers it answered have appended again,
    /// for at most PERCENT of the answered persist's duration (0: off; file:// defaults
    /// to 100, s3:// to 10, postgres:// to 0).
    #[arg(long, value_name = "PERCENT")]
    pub cohort_hold: Option<u32>,
    /// With batches persisting, start the next one beside them only once it holds
    /// PERCENT of the records they carry (0: off, the default).
    #[arg(long, value_name = "PERCENT")]
    pub pipeline_running: Option<u32>,
    /// Let a batch gather for PERCENT of a round trip: beside running batches it starts
    /// once it holds PERCENT of the records a round trip brings (as measured), and above
    /// 100, after an acknowledgement, the next batch waits for the writers it answered
    /// until its first record has waited PERCENT of a round trip (0: off, the default;
    /// `walab serve` on s3://: 150).
    #[arg(long, value_name = "PERCENT")]
    pub pipeline_round_trip: Option<u32>,
}

/// A parsed `--wal` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalUrl {
    /// `file:///absolute/dir` (or `file://relative/dir`).
    File(PathBuf),
    /// `postgres://...` or `postgresql://...`, walab's options still in it.
    Postgres(String),
    /// `s3://bucket` or `s3://bucket/path`.
    S3 { bucket: String, path: String },
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
    if let Some(rest) = text.strip_prefix("s3://") {
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        parse_s3_options(text, query)?;
        let (bucket, path) = rest.split_once('/').unwrap_or((rest, ""));
        let bucket_ok = (3..=63).contains(&bucket.len())
            && bucket.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.');
        if !bucket_ok {
            return Err(format!(
                "--wal {text}: bucket {bucket:?} is not a bucket name (3 to 63 of a-z, 0-9, '-', '.')"
            ));
        }
        let path = path.trim_matches('/');
        let path_ok = path.is_empty()
            || path.split('/').all(|part| {
                !part.is_empty()
                    && part != "."
                    && part != ".."
                    && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            });
        if !path_ok {
            return Err(format!("--wal {text}: use letters, digits, '-', '_' and '.' in the path's parts"));
        }
        return Ok(WalUrl::S3 { bucket: bucket.to_string(), path: path.to_string() });
    }
    match text.split_once("://") {
        Some((scheme, _)) => Err(format!(
            "--wal {text}: unknown scheme {scheme:?}; use file:///DIR, s3://BUCKET/PATH or postgres://..."
        )),
        None => Err(format!("--wal {text}: not a URL; use file:///DIR, s3://BUCKET/PATH or postgres://...")),
    }
}

/// The options an `s3://` URL may carry (`s3://BUCKET/PATH?fence=lease&lease=10s`).
pub const S3_OPTIONS: [&str; 4] = ["fence", "lease", "skew", "pipeline_min"];

/// What an `s3://` URL's options ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct S3Options {
    pub fence: FenceMode,
    /// Records a batch must hold before it uploads beside another upload
    /// (`pipeline_min=N`, 1 to 65536; `None`: the object store's preset, 32).
    pub pipeline_min: Option<u64>,
}

const DURATION: &str = "a duration with ns, us, ms or s (10s); a bare number is milliseconds";

/// The fence an `s3://` URL asks for: `fence=read` (the default: a registration read
/// after every PUT) or `fence=lease`, with `lease=` and `skew=` (defaults 10s and 1s,
/// [`walab_core::remote::lease`] says why). Every refusal names the option.
pub fn s3_fence_mode(text: &str) -> Result<FenceMode, String> {
    s3_options(text).map(|options| options.fence)
}

/// Every option of an `s3://` URL ([`S3_OPTIONS`]); each refusal names the option.
pub fn s3_options(text: &str) -> Result<S3Options, String> {
    let query = text.strip_prefix("s3://").and_then(|rest| rest.split_once('?')).map_or("", |(_, query)| query);
    parse_s3_options(text, query)
}

/// `text` with `option=value` added to its query when the query does not name `option`
/// (a default a command chooses for an `s3://` URL: `walab serve`'s fence).
pub fn with_default_s3_option(text: &str, option: &str, value: &str) -> String {
    let query = text.split_once('?').map_or("", |(_, query)| query);
    let named = query.split('&').any(|pair| pair.split_once('=').map_or(pair, |(name, _)| name) == option);
    if named {
        return text.to_string();
    }
    let separator = match text.split_once('?') {
        None => "?",
        Some((_, "")) => "",
        Some(_) if text.ends_with('&') => "",
        Some(_) => "&",
    };
    format!("{text}{separator}{option}={value}")
}

fn parse_s3_options(text: &str, query: &str) -> Result<S3Options, String> {
    let mut fence = None;
    let mut lease = None;
    let mut skew = None;
    let mut pipeline_min = None;
    for pair in query.split('&').filter(|pair| !pair.is_empty()) {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(format!("--wal {text}: option {pair:?} has no value (write {pair}=...)"));
        };
        let slot = match name {
            "fence" => &mut fence,
            "lease" => &mut lease,
            "skew" => &mut skew,
            "pipeline_min" => &mut pipeline_min,
            _ => {
                return Err(format!(
                    "--wal {text}: unknown option {name:?}; an s3:// URL takes {}",
                    S3_OPTIONS.join(", ")
                ))
            }
        };
        if slot.replace(value).is_some() {
            return Err(format!("--wal {text}: option {name:?} is given twice"));
        }
    }
    let duration = |name: &str, value: Option<&str>, default: Nanos| match value {
        None => Ok(default),
        Some(value) => parse_duration(value).ok_or_else(|| format!("--wal {text}: {name}={value}: expected {DURATION}")),
    };
    let pipeline_min = match pipeline_min {
        None => None,
        Some(value) => match value.parse::<u64>() {
            Ok(records) if (1..=65_536).contains(&records) => Some(records),
            _ => return Err(format!("--wal {text}: pipeline_min={value}: expected a number of records from 1 to 65536")),
        },
    };
    let fence = match fence.unwrap_or("read") {
        "read" => {
            if let Some((name, value)) = [("lease", lease), ("skew", skew)].into_iter().find_map(|(n, v)| Some((n, v?))) {
                return Err(format!("--wal {text}: {name}={value}: only with fence=lease"));
            }
            FenceMode::Read
        }
        "lease" => {
            let lease_length = duration("lease", lease, LEASE_DEFAULT)?;
            let skew_allowed = duration("skew", skew, SKEW_DEFAULT)?;
            let terms = LeaseTerms::new(lease_length, skew_allowed).map_err(|error| {
                let given = |name: &str, value: Option<&str>| value.map(|v| format!("{name}={v}"));
                let named: Vec<String> = [given("lease", lease), given("skew", skew)].into_iter().flatten().collect();
                let named = if named.is_empty() { "the defaults".to_string() } else { named.join(" ") };
                format!("--wal {text}: {named}: {error}")
            })?;
            FenceMode::Lease(terms)
        }
        other => return Err(format!("--wal {text}: fence={other}: expected read or lease")),
    };
    Ok(S3Options { fence, pipeline_min })
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
        if let Some(bytes) = self.segment_bytes {
            if !(4096..=(1 << 34)).contains(&bytes) {
                return Err(format!("--segment-bytes {bytes}: must be between 4096 and 17179869184"));
            }
        }
        let is_file = matches!(parse_wal_url(&self.wal)?, WalUrl::File(_));
        if let Some(inflight) = self.inflight {
            if is_file && !(1..=16).contains(&inflight) {
                return Err(format!("--inflight {inflight}: must be between 1 and 16 for a file:// WAL"));
            }
            if !(1..=4096).contains(&inflight) {
                return Err(format!("--inflight {inflight}: must be between 1 and 4096"));
            }
        }
        if let Some(percent) = self.cohort_hold {
            if percent > 1000 {
                return Err(format!("--cohort-hold {percent}: must be between 0 and 1000 (percent of a persist)"));
            }
        }
        if let Some(percent) = self.pipeline_running {
            if percent > 1000 {
                return Err(format!("--pipeline-running {percent}: must be between 0 and 1000 (percent of the running batches' records)"));
            }
        }
        if let Some(percent) = self.pipeline_round_trip {
            if percent > 1000 {
                return Err(format!("--pipeline-round-trip {percent}: must be between 0 and 1000 (percent of a round trip's arrivals)"));
            }
        }
        let sync_cpus = match &self.sync_cpus {
            Some(text) => {
                let parsed = SyncCpus::parse(text)?;
                if !matches!(parse_wal_url(&self.wal)?, WalUrl::File(_)) {
                    return Err(format!("--sync-cpus {text}: only for a file:// WAL"));
                }
                parsed
            }
            None => SyncCpus::Auto,
        };
        // What the user set on top of the storage's preset, assembled once here; the
        // preset itself is the core's (`walab_core::session::preset`).
        let tuning = Tuning {
            policy: self.per_write.then_some(Policy::PerWrite),
            inflight_max: self.inflight,
            cohort_hold_percent: self.cohort_hold,
            pipeline_min_records: None,
            pipeline_running_percent: self.pipeline_running,
            pipeline_round_trip_percent: self.pipeline_round_trip,
        };
        match parse_wal_url(&self.wal)? {
            WalUrl::File(base) => {
                let sync_cpus = sync_cpus.resolve(&base)?;
                let file = FileBackend::with_format(
                    Arc::new(RealFs),
                    node_dir(&base, &self.cluster, &self.node),
                    self.segment_bytes.unwrap_or(SEGMENT_BYTES_DEFAULT),
                    create,
                    self.format,
                )
                .with_recorded_geometry(self.segment_bytes.is_none())
                .with_sync_cpus(sync_cpus)
                .with_tuning(Tuning { policy: None, ..tuning });
                Ok(Box::new(file))
            }
            WalUrl::Postgres(url) => {
                // `--inflight` and `--segment-bytes` are the URL's options of the same names.
                let url = with_url_option(&url, "inflight", "--inflight", self.inflight)?;
                let url = with_url_option(&url, "segment_bytes", "--segment-bytes", self.segment_bytes)?;
                let backend = PgBackend::new(&url, &self.cluster, &self.node, create)?
                    .with_tuning(Tuning { policy: None, inflight_max: None, ..tuning });
                Ok(Box::new(backend))
            }
            WalUrl::S3 { bucket, path } => {
                let options = s3_options(&self.wal)?;
                if let Some(endpoint) = &self.endpoint {
                    if !(endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
                        return Err(format!("--endpoint {endpoint}: use http://HOST:PORT or https://HOST"));
                    }
                }
                let store = s3::connect(&bucket, self.endpoint.as_deref())?;
                let location =
                    S3Location { node_prefix: s3::layout::node_prefix(&path, &self.cluster, &self.node), bucket };
                // Uploads are spawned on the backend's own runtime: nothing blocks the driver.
                let backend = S3Backend::new(store, location, create, self.segment_bytes.unwrap_or(SEGMENT_BYTES_DEFAULT))?
                    .with_tuning(Tuning { pipeline_min_records: options.pipeline_min, ..tuning })
                    .with_fence(options.fence);
                Ok(Box::new(backend))
            }
        }
    }
}

/// A Postgres URL with `option=value` added from a flag, so a flag and the URL option
/// name one setting; both given and different is refused by name.
fn with_url_option(url: &str, option: &str, flag: &str, value: Option<impl std::fmt::Display>) -> Result<String, String> {
    let Some(value) = value else { return Ok(url.to_string()) };
    let query = url.split_once('?').map_or("", |(_, query)| query);
    // The URL may spell the option by an earlier name (`maxInflight` for `inflight`).
    let given = query.split('&').filter_map(|pair| pair.split_once('=')).find(|(name, _)| walab_option(name) == Some(option));
    if let Some((name, given)) = given {
        return Err(format!("{flag} {value} and the URL's {name}={given}: pass one of them"));
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    Ok(format!("{url}{separator}{option}={value}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_file_urls_and_refuses_the_rest() {
        assert_eq!(parse_wal_url("file:///data/wal"), Ok(WalUrl::File(PathBuf::from("/data/wal"))));
        assert!(parse_wal_url("file://").unwrap_err().contains("no directory"));
        assert_eq!(parse_wal_url("postgres://h/db?segments=4"), Ok(WalUrl::Postgres("postgres://h/db?segments=4".into())));
        assert_eq!(
            parse_wal_url("s3://my-bucket/wal/prod/"),
            Ok(WalUrl::S3 { bucket: "my-bucket".into(), path: "wal/prod".into() })
        );
        assert_eq!(parse_wal_url("s3://my-bucket"), Ok(WalUrl::S3 { bucket: "my-bucket".into(), path: String::new() }));
        assert!(parse_wal_url("s3://B/x").unwrap_err().contains("bucket"));
        assert!(parse_wal_url("s3://bucket/a/../b").unwrap_err().contains("path"));
        assert!(parse_wal_url("ftp://x").unwrap_err().contains("unknown scheme"));
        assert!(parse_wal_url("/data").unwrap_err().contains("not a URL"));
    }

    fn args(wal: &str, inflight: Option<usize>) -> WalArgs {
        WalArgs {
            wal: wal.to_string(),
            cluster: "default".into(),
            node: "0".into(),
            segment_bytes: None,
            format: SegmentFormat::Tiny,
            endpoint: None,
            inflight,
            per_write: false,
            sync_cpus: None,
            cohort_hold: None,
            pipeline_running: None,
            pipeline_round_trip: None,
        }
    }

    #[test]
    fn inflight_is_checked_before_anything_is_opened() {
        let refusal = |a: WalArgs| a.backend(true).err().expect("refused");
        assert!(refusal(args("file:///tmp/x", Some(0))).contains("--inflight 0: must be between 1 and 16"));
        assert!(refusal(args("file:///tmp/x", Some(17))).contains("between 1 and 16"));
        assert!(refusal(args("s3://bucket/wal", Some(0))).contains("--inflight 0: must be between 1 and 4096"));
        assert!(refusal(args("postgres://h/db?inflight=2", Some(3))).contains("--inflight 3 and the URL's inflight=2"));
        // The earlier spelling names the same option.
        assert!(refusal(args("postgres://h/db?maxInflight=2", Some(3))).contains("--inflight 3 and the URL's maxInflight=2"));
    }

    #[test]
    fn a_flag_becomes_the_postgres_url_option_of_the_same_name() {
        assert_eq!(with_url_option("postgres://h/db", "inflight", "--inflight", Some(8)).unwrap(), "postgres://h/db?inflight=8");
        assert_eq!(
            with_url_option("postgres://h/db?segments=4", "segment_bytes", "--segment-bytes", Some(65536)).unwrap(),
            "postgres://h/db?segments=4&segment_bytes=65536"
        );
        assert_eq!(with_url_option("postgres://h/db", "inflight", "--inflight", None::<u64>).unwrap(), "postgres://h/db");
    }

    #[test]
    fn sync_cpus_are_checked_before_anything_is_opened() {
        let with = |wal: &str, cpus: &str| WalArgs { sync_cpus: Some(cpus.to_string()), ..args(wal, None) };
        let refusal = |a: WalArgs| a.backend(true).err().expect("refused");
        assert!(refusal(with("file:///tmp/x", "fast")).starts_with("--sync-cpus fast: "));
        assert!(refusal(with("file:///tmp/x", "2-1")).contains("empty range"));
        assert!(refusal(with("file:///tmp/x", "99999")).contains("out of range"));
        assert!(refusal(with("s3://bucket/wal", "auto")).contains("--sync-cpus auto: only for a file:// WAL"));
        assert!(refusal(with("postgres://h/db", "1")).contains("only for a file:// WAL"));
    }

    #[test]
    fn a_default_option_is_added_only_where_the_url_names_none() {
        let lease = |url: &str| with_default_s3_option(url, "fence", "lease");
        assert_eq!(lease("s3://bucket/wal"), "s3://bucket/wal?fence=lease");
        assert_eq!(lease("s3://bucket/wal?"), "s3://bucket/wal?fence=lease");
        assert_eq!(lease("s3://bucket/wal?pipeline_min=64"), "s3://bucket/wal?pipeline_min=64&fence=lease");
        assert_eq!(lease("s3://bucket/wal?fence=read"), "s3://bucket/wal?fence=read", "the URL's own fence stays");
        assert_eq!(lease("s3://bucket/wal?lease=5s&fence=lease"), "s3://bucket/wal?lease=5s&fence=lease");
        let terms = LeaseTerms::new(LEASE_DEFAULT, SKEW_DEFAULT).unwrap();
        assert_eq!(s3_fence_mode(&lease("s3://bucket/wal")), Ok(FenceMode::Lease(terms)));
    }

    #[test]
    fn s3_fence_options_parse_or_name_what_is_wrong() {
        let lease = |lease_ms: u64, skew_ms: u64| {
            FenceMode::Lease(LeaseTerms::new(Nanos::from_millis(lease_ms), Nanos::from_millis(skew_ms)).unwrap())
        };
        assert_eq!(s3_fence_mode("s3://bucket/wal"), Ok(FenceMode::Read));
        assert_eq!(s3_fence_mode("s3://bucket/wal?fence=read"), Ok(FenceMode::Read));
        assert_eq!(s3_fence_mode("s3://bucket/wal?fence=lease"), Ok(lease(10_000, 1_000)));
        assert_eq!(s3_fence_mode("s3://bucket?fence=lease&lease=2s&skew=250ms"), Ok(lease(2_000, 250)));
        assert_eq!(s3_fence_mode("s3://bucket/wal?skew=0&fence=lease&lease=1000"), Ok(lease(1_000, 0)));
        // The path is still checked, the query kept out of it.
        assert_eq!(
            parse_wal_url("s3://bucket/wal/x?fence=lease"),
            Ok(WalUrl::S3 { bucket: "bucket".into(), path: "wal/x".into() })
        );
        let refusal = |url: &str| parse_wal_url(url).unwrap_err();
        assert_eq!(refusal("s3://b1b/w?fence=maybe"), "--wal s3://b1b/w?fence=maybe: fence=maybe: expected read or lease");
        assert!(refusal("s3://b1b/w?fencing=lease").contains("unknown option \"fencing\"; an s3:// URL takes fence, lease, skew"));
        assert!(refusal("s3://b1b/w?fence=lease&fence=read").contains("option \"fence\" is given twice"));
        assert!(refusal("s3://b1b/w?fence").contains("option \"fence\" has no value"));
        assert!(refusal("s3://b1b/w?lease=5s").ends_with(": lease=5s: only with fence=lease"));
        assert_eq!(s3_options("s3://bucket/wal").map(|o| o.pipeline_min), Ok(None));
        assert_eq!(s3_options("s3://bucket/wal?fence=lease&pipeline_min=64").map(|o| o.pipeline_min), Ok(Some(64)));

        assert!(refusal("s3://b1b/w?pipeline_min=0").ends_with(": pipeline_min=0: expected a number of records from 1 to 65536"));
        assert!(refusal("s3://b1b/w?pipeline_min=many").contains("pipeline_min=many: expected a number"));
        assert!(refusal("s3://b1b/w?fence=read&skew=1s").ends_with(": skew=1s: only with fence=lease"));
        assert!(refusal("s3://b1b/w?fence=lease&lease=soon").contains("lease=soon: expected a duration"));
        assert!(refusal("s3://b1b/w?fence=lease&skew=-1s").contains("skew=-1s: expected a duration"));
        assert!(refusal("s3://b1b/w?fence=lease&lease=50ms").contains("lease=50ms: lease 50.0 ms is shorter"));
        assert!(refusal("s3://b1b/w?fence=lease&lease=1h").contains("lease=1h: expected a duration"));
        assert!(refusal("s3://b1b/w?fence=lease&lease=3600s").contains("lease=3600s: lease 3600000.0 ms is longer"));
        assert!(refusal("s3://b1b/w?fence=lease&lease=2s").contains("lease=2s: skew 1000.0 ms is more than a 4th of the lease"));
        // And the same refusal from the flags that open the log.
        assert!(args("s3://bucket/wal?fence=lease&skew=9s", None).backend(true).err().unwrap().contains("skew=9s: skew"));
    }

    #[test]
    fn cluster_and_node_cannot_escape_the_directory() {
        assert!(check_name("--node", "..").is_err());
        assert!(check_name("--cluster", "a/b").is_err());
        assert!(check_name("--node", "node-1").is_ok());
    }
}
