//! The stream store's WAL in Postgres: one row per batch, a ring of slot tables, epoch
//! fencing, and the start-up and timeline checks.
//!
//! # Where the logic lives
//!
//! Everything that is arithmetic or judgement is in [`walab_core::ring`], pure and
//! tested without a server: which generation and slot an offset falls in, when a slot
//! may be written and when it is released, the row's frame, the recovery chain, the URL
//! settings, the start-up verdicts. Group commit (batch interval, batch size, inflight
//! limit, ordered acknowledgements, backpressure, fail-stop) and the ring's ordering are
//! the core's log session, driven by [`super::Wal`]'s driver thread exactly as for files. This module is the
//! I/O: it owns a small tokio runtime and a pool of connections (`deadpool-postgres`,
//! at most `inflight`, each caching its prepared inserts), and turns each
//! `persist(batch)` into one fenced `INSERT`, in its own transaction, on its own
//! connection, completing the batch when the `COMMIT` returns. The machine keeps up to
//! `inflight` of them running and releases acknowledgements in order.
//!
//! # One batch, one row
//!
//! A batch of segment `g` at byte `o` of that segment becomes the row whose offsets run
//! from `g x segment_bytes + o` for the batch's length, in slot table `g % segments`.
//! The driver hands a batch to [`Backend::persist`] only once the log session admits it
//! ([`walab_core::session::ring`]: its slot free of any older generation, every earlier
//! batch committed if it opens a generation, no earlier failure), and the session holds
//! a failure back until every earlier batch has settled. The backend makes none of
//! these decisions itself: it inserts what it is given.
//!
//! # The parts
//!
//! - [`startup`]: the start-up, step by step (server checks, the node row's claim, the
//!   chain followed, clean-up and ring change under the fence, the
//!   timeline);
//! - [`read`]: recovery's reads of the slots, the rows' places first, then the chain's
//!   bodies a page at a time, each row checked and its records handed on in order;
//! - [`insert`]: one batch's fenced insert, its retries and the judgement of a row
//!   found at its offset;
//! - [`trim`]: the trim task, carrying out the trims the session names;
//! - [`sql`]: every statement; [`cluster`]: throwaway clusters for the crash tests.

pub mod cluster;
pub mod insert;
pub mod read;
pub mod sql;
pub mod startup;
pub mod trim;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_postgres::{Client, NoTls, Statement};

use walab_core::codec::tiny::TinyRecord;
use walab_core::group_commit::{self, Batch, SyncError};
use walab_core::session::preset::{Storage, Tuning, POSTGRES_TRIM_PAUSE};
use walab_core::session::ring::RingTrim;
use walab_core::session::{RingLayout, RingResume};
use walab_core::ring::{
    self, ChainStop, PgWalSettings, RingGeometry, ServerState, StartupWarning, TablePrefix, TimelineVerdict,
};

use super::{Backend, Completion, Recovered, TrimDone, WalError};
use self::insert::{FencedInsert, InsertRow, PersistTask};
pub use self::startup::{claim_epoch, StartupNote};
use self::trim::trim_loop;

/// Attempts per batch insert before the batch is failed.
pub const INSERT_ATTEMPTS_MAX: u32 = 5;
/// Wait before the first retry; doubled after each.
pub const RETRY_BACKOFF_FIRST: Duration = Duration::from_millis(20);
/// Wait before a failed trim is tried again (on a new connection).
pub const TRIM_RETRY_PAUSE: Duration = Duration::from_millis(250);

/// Counters for tests and reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PgCounters {
    pub inserts: u64,
    /// Inserts retried after an error.
    pub retries: u64,
    /// Retries whose compare found the first attempt had committed.
    pub retries_found_committed: u64,
    /// Trim transactions committed, and slots truncated by them.
    pub trims: u64,
    pub slots_truncated: u64,
}

/// The shared state of the backend's tasks.
struct RingState {
    /// The ring as recovery left it (the URL's until then).
    geometry: RingGeometry,
    epoch: u64,
    /// The trim offset the last committed trim recorded.
    trim_offset: u64,
    counters: PgCounters,
}

struct Shared {
    state: Mutex<RingState>,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, RingState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where the WAL lives and how it talks to it; the same for every task.
#[derive(Clone)]
struct Target {
    /// The URL's client part, with the session's `synchronous_commit` as a start-up option.
    client_config: tokio_postgres::Config,
    /// The URL names a ring (`segments`, `segment_bytes`); without, the stored one stands.
    geometry_given: bool,
    cluster: String,
    node: String,
    settings: PgWalSettings,
    name: String,
    /// The tables' prefix: walab's, or the earlier one a cluster made before the rename
    /// keeps (found at start-up, [`startup`]).
    prefix: TablePrefix,
}

impl Target {
    async fn connect(&self) -> Result<Client, tokio_postgres::Error> {
        let (client, connection) = self.client_config.connect(NoTls).await?;
        tokio::spawn(async move {
            // Ends when the client is dropped or the server goes away.
            let _ = connection.await;
        });
        Ok(client)
    }

    fn table(&self, slot: u64) -> String {
        ring::slot_table_name(self.prefix, &self.cluster, &self.node, slot).expect("names were checked when the prefix was found")
    }

    /// The slot tables of a ring, slot 0 first.
    fn tables(&self, geometry: &RingGeometry) -> Vec<String> {
        (0..geometry.segments).map(|slot| self.table(slot)).collect()
    }

    /// A start-up failure: `what` failed, with the server's message.
    fn open_error(&self, what: &str, error: tokio_postgres::Error) -> WalError {
        WalError::Open(format!("{}: {what}: {}", self.name, error_text(&error)))
    }
}

/// The Postgres WAL backend. See the module docs.
pub struct PgBackend {
    target: Target,
    create: bool,
    runtime: tokio::runtime::Runtime,
    shared: Arc<Shared>,
    /// The inserts' connections: `inflight` at most, one per running insert, each with
    /// its prepared statements.
    pool: Pool,
    insert: Arc<dyn InsertRow>,
    notes: Vec<StartupNote>,
    quiet: bool,
    /// What the user set on top of the ring's preset ([`PgBackend::with_tuning`]).
    tuning: Tuning,
    /// The trim task's inbox (a writer's, once recovered).
    trims: Option<mpsc::UnboundedSender<(RingTrim, TrimDone)>>,
}

impl PgBackend {
    /// A backend for `--wal URL --cluster C --node N`. `create` is false for `dump`,
    /// which only reads: no claim, no clean-up, nothing written.
    pub fn new(url: &str, cluster: &str, node: &str, create: bool) -> Result<PgBackend, String> {
        let split = ring::split_wal_url(url).map_err(|e| format!("--wal: {e}"))?;
        ring::slot_table_name(TablePrefix::Walab, cluster, node, split.settings.geometry.segments.saturating_sub(1))
            .map_err(|e| format!("--node: {e}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("wal-postgres")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the postgres runtime: {e}"))?;
        let settings = split.settings;
        let name = format!("{} ({cluster}/{node})", redact(&split.connect_url));
        let mut client_config: tokio_postgres::Config =
            split.connect_url.parse().map_err(|e| format!("--wal: {}", error_text(&e)))?;
        let options = sql::with_synchronous_commit(client_config.get_options(), settings.synchronous_commit);
        client_config.options(&options);
        let manager = Manager::from_config(
            client_config.clone(),
            NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(settings.inflight_max)
            .build()
            .map_err(|e| format!("cannot make the postgres connection pool: {e}"))?;
        let state = RingState { geometry: settings.geometry, epoch: 0, trim_offset: 0, counters: PgCounters::default() };
        Ok(PgBackend {
            target: Target {
                client_config,
                geometry_given: split.geometry_given,
                cluster: cluster.to_string(),
                node: node.to_string(),
                settings,
                name,
                prefix: TablePrefix::Walab,
            },
            create,
            runtime,
            shared: Arc::new(Shared { state: Mutex::new(state) }),
            pool,
            insert: Arc::new(FencedInsert),
            notes: Vec::new(),
            quiet: false,
            tuning: Tuning::default(),
            trims: None,
        })
    }

    /// What the user set on top of the ring's preset
    /// ([`walab_core::session::preset::Storage::PostgresRing`], from the URL's settings):
    /// `--cohort-hold`.
    pub fn with_tuning(mut self, tuning: Tuning) -> PgBackend {
        self.tuning = tuning;
        self
    }

    /// Keeps the start-up notes off stderr (tests read [`PgBackend::notes`]).
    pub fn quiet(&mut self) {
        self.quiet = true;
    }

    /// What the start-up noticed.
    pub fn notes(&self) -> &[StartupNote] {
        &self.notes
    }

    /// A handle on the counters that stays valid after the backend moves into a WAL.
    pub fn counters_handle(&self) -> PgCountersHandle {
        PgCountersHandle(Arc::clone(&self.shared))
    }

    /// The epoch this backend claimed (0 before recovery, and for `dump` the stored one).
    pub fn epoch(&self) -> u64 {
        self.shared.lock().epoch
    }

    fn note(&mut self, note: StartupNote) {
        if !self.quiet {
            eprintln!("walab: {}: {note}", self.target.name);
        }
        self.notes.push(note);
    }
}

/// Reads the counters of a backend that has moved into a WAL.
#[derive(Clone)]
pub struct PgCountersHandle(Arc<Shared>);

impl PgCountersHandle {
    pub fn get(&self) -> PgCounters {
        self.0.lock().counters.clone()
    }

    pub fn trim_offset(&self) -> u64 {
        self.0.lock().trim_offset
    }
}

impl Backend for PgBackend {
    fn describe(&self) -> String {
        self.target.name.clone()
    }

    fn recover(&mut self) -> Result<Recovered, WalError> {
        let mut records = Vec::new();
        let mut recovered = self.recover_streaming(&mut |record| records.push(record))?;
        recovered.records = records;
        Ok(recovered)
    }

    fn recover_streaming(&mut self, visit: &mut dyn FnMut(TinyRecord)) -> Result<Recovered, WalError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| WalError::Open(format!("{}: cannot start a runtime: {e}", self.target.name)))?;
        // Recovery's own connection lives on a throwaway runtime; the backend's runtime
        // keeps only the pool and the trim task.
        let recovered = runtime.block_on(self.recover_async(visit));
        drop(runtime);
        recovered
    }

    fn segment_bytes_max(&self) -> u64 {
        self.shared.lock().geometry.segment_bytes
    }

    fn persist(&mut self, batch: Batch, done: Completion) {
        let (start, slot, epoch) = {
            let state = self.shared.lock();
            (state.geometry.address(batch.segment, batch.offset), state.geometry.slot(batch.segment), state.epoch)
        };
        let task = PersistTask {
            shared: Arc::clone(&self.shared),
            pool: self.pool.clone(),
            insert: Arc::clone(&self.insert),
            target: self.target.clone(),
            start,
            slot,
            epoch,
        };
        self.runtime.spawn(async move {
            let result = task.run(&batch).await;
            done.complete(result, batch.bytes);
        });
    }

    fn write_unsynced(&mut self, _batch: &Batch) -> Result<(), SyncError> {
        // Every Postgres append is a commit; there is no unsynced write to offer.
        Err(SyncError::Unavailable)
    }

    fn remove_segments(&mut self, _segments: &[u64]) -> Result<(), WalError> {
        // Slots are released by the trim offset (see `confirmed`), in the trim task.
        Ok(())
    }

    fn machine_config(&self) -> group_commit::Config {
        Storage::PostgresRing(self.target.settings).config(&self.tuning)
    }

    fn trim_ring(&mut self, trim: RingTrim, done: TrimDone) {
        match &self.trims {
            Some(trims) => {
                if let Err(mpsc::error::SendError((_, done))) = trims.send((trim, done)) {
                    // The trim task ended: it was fenced.
                    done.complete(Err(SyncError::Fenced));
                }
            }
            // `dump` never trims; nothing asks it to.
            None => done.complete(Err(SyncError::Unavailable)),
        }
    }
}

/// Offsets and epochs are below 2^63 in practice; the columns are `bigint`.
fn to_i64(value: u64) -> i64 {
    i64::try_from(value).expect("offsets and epochs stay below 2^63")
}

/// The server's message, without tokio-postgres's "db error: " wrapper.
fn error_text(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => db.message().to_string(),
        None => {
            let text = error.to_string();
            match std::error::Error::source(error) {
                Some(source) => format!("{text}: {source}"),
                None => text,
            }
        }
    }
}

/// The URL without its password, for messages.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_string(),
    };
    let path = path.split_once("password=").map_or(path.to_string(), |(before, _)| format!("{before}password=***"));
    format!("{scheme}://{authority}{path}")
}

#[cfg(test)]
mod tests;
