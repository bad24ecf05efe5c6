//! The stream store's WAL in Postgres: one row per batch, a ring of slot tables, epoch
//! fencing, and the start-up and timeline checks.
//!
//! # Where the logic lives
//!
//! Everything that is arithmetic or judgement is in [`walab_core::ring`], pure and
//! tested without a server: which generation and slot an offset falls in, when a slot
//! may be written and when it is released, the row's frame, the recovery chain, the URL
//! settings, the start-up verdicts. Group commit (batch interval, batch size, inflight
//! limit, ordered acknowledgements, backpressure, fail-stop) is the core's machine,
//! driven by [`super::Wal`]'s driver thread exactly as for files. This module is the
//! I/O: it owns a small tokio runtime and a pool of connections (`deadpool-postgres`,
//! at most `maxInflight`, each caching its prepared inserts), and turns each
//! `persist(batch)` into one fenced `INSERT`, in its own transaction, on its own
//! connection, completing the batch when the `COMMIT` returns. The machine keeps up to
//! `maxInflight` of them running and releases acknowledgements in order.
//!
//! # One batch, one row
//!
//! A batch of segment `g` at byte `o` of that segment becomes the row whose offsets run
//! from `g x segmentBytes + o` for the batch's length, in slot table `g % segments`.
//! The driver hands a batch to [`Backend::persist`] only once the log session admits it
//! ([`walab_core::session::ring`]: its slot free of any older generation, every earlier
//! batch committed if it opens a generation, no earlier failure), and the session holds
//! a failure back until every earlier batch has settled. The backend makes none of
//! these decisions itself: it inserts what it is given.
//!
//! # When an insert fails
//!
//! A lost connection says nothing about whether the `COMMIT` happened. So the batch is
//! retried (`backon`, [`INSERT_ATTEMPTS_MAX`] attempts with doubling waits, each on a
//! pooled connection; one that failed leaves the pool) against the same table, with
//! `ON CONFLICT (start_offset) DO NOTHING`; when that inserts nothing, the row already at
//! that offset is read back and judged by [`ring::judge_stored_row`]: the same bytes,
//! offsets and epoch mean the first attempt did commit (success); a row of another epoch
//! means a newer writer owns the log (fenced); anything else is corruption
//! ([`SyncError::Mismatch`]), reported and never accepted. No row at all and no insert
//! means the fence held: the node row carries a newer epoch. The tests of this path put
//! their faults between the task and the insert ([`InsertRow`]), never on it.
//!
//! # Trim
//!
//! The session maps the consumer's confirmations to the end offset of the last wholly
//! confirmed batch and names each trim ([`Backend::trim_ring`]); a background task
//! records that trim offset in the node row (guarded by the epoch), truncating in the
//! same transaction every slot whose generation the trim offset has passed, and retries
//! until it commits or the fence refuses it. `load` and `dump` confirm nothing.

pub mod cluster;
pub mod sql;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use backon::{ExponentialBuilder, Retryable};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, PoolError, RecyclingMethod};
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio_postgres::{Client, NoTls, Statement};

use walab_core::group_commit::{self, Batch, SyncError};
use walab_core::session::preset::{Storage, Tuning, POSTGRES_TRIM_PAUSE};
use walab_core::session::ring::RingTrim;
use walab_core::session::{RingLayout, RingResume};
use walab_core::ring::{
    self, ChainStop, PgWalSettings, RingGeometry, ServerState, SlotRow, StartupWarning, TimelineVerdict,
};

use super::{Backend, Completion, Recovered, TrimDone, WalError};

/// Attempts per batch insert before the batch is failed.
pub const INSERT_ATTEMPTS_MAX: u32 = 5;
/// Wait before the first retry; doubled after each.
pub const RETRY_BACKOFF_FIRST: Duration = Duration::from_millis(20);
/// Wait before a failed trim is tried again (on a new connection).
pub const TRIM_RETRY_PAUSE: Duration = Duration::from_millis(250);

/// Something the start-up noticed, in order; also printed to stderr.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StartupNote {
    Warning(StartupWarning),
    Timeline(TimelineVerdict),
    /// The URL asks for another ring than the stored one, and the WAL is not drained.
    GeometryKept { stored: RingGeometry, requested: RingGeometry },
    /// The WAL was drained, so the URL's ring was applied.
    GeometryChanged { from: RingGeometry, to: RingGeometry },
    /// Rows after the first gap (never acknowledged) were deleted.
    RowsBeyondGapDeleted { at: u64, rows: usize },
}

impl std::fmt::Display for StartupNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartupNote::Warning(warning) => write!(f, "warning: {warning}"),
            StartupNote::Timeline(verdict) => match verdict.severity() {
                ring::Severity::Error => write!(f, "error: {verdict}"),
                ring::Severity::Warning => write!(f, "warning: {verdict}"),
                ring::Severity::Info => write!(f, "{verdict}"),
            },
            StartupNote::GeometryKept { stored, requested } => write!(
                f,
                "warning: the URL asks for segments={} segmentBytes={}, the ring has segments={} segmentBytes={}; a change applies at the first start where the WAL is fully drained",
                requested.segments, requested.segment_bytes, stored.segments, stored.segment_bytes
            ),
            StartupNote::GeometryChanged { from, to } => write!(
                f,
                "the WAL was drained: ring changed from segments={} segmentBytes={} to segments={} segmentBytes={}",
                from.segments, from.segment_bytes, to.segments, to.segment_bytes
            ),
            StartupNote::RowsBeyondGapDeleted { at, rows } => {
                write!(f, "deleted {rows} unacknowledged rows after the gap at offset {at}")
            }
        }
    }
}

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
    /// The URL names a ring (`segments`, `segmentBytes`); without, the stored one stands.
    geometry_given: bool,
    cluster: String,
    node: String,
    settings: PgWalSettings,
    name: String,
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
        ring::slot_table_name(&self.cluster, &self.node, slot).expect("names were checked when the backend was made")
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
    /// The inserts' connections: `maxInflight` at most, one per running insert, each with
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
        ring::slot_table_name(cluster, node, split.settings.geometry.segments.saturating_sub(1))
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

    /// Start-up, step by step: judge the server, claim (or for `dump` read) the node
    /// row, read the slots and follow the chain, clean up and apply a new ring under the
    /// fence, check the timeline, and resume the schedule at the head.
    async fn recover_async(&mut self) -> Result<Recovered, WalError> {
        let target = self.target.clone();
        let mut client = target.connect().await.map_err(|e| target.open_error("cannot connect", e))?;
        let synchronous_standby = self.check_server(&client).await?;
        let node_row = self.node_row(&mut client).await?;
        let stored = node_row.geometry();
        let (epoch, trim_offset) = (node_row.epoch as u64, node_row.trim_offset as u64);
        if self.create {
            // `dump` forms no batches; a writer's batches must fit the stored ring.
            stored
                .validate(target.settings.batch_bytes_max, target.settings.unflushed_bytes_max)
                .map_err(|e| WalError::Open(format!("{}: the stored ring does not fit the URL's settings: {e}", target.name)))?;
        }
        let tables = target.tables(&stored);
        if self.create {
            sql::create_tables(&mut client, &tables).await.map_err(|e| target.open_error("cannot create the slot tables", e))?;
        }
        let rows = read_slots(&client, &target, &tables, trim_offset).await?;
        let chain = ring::recover_chain(&stored, trim_offset, epoch, &rows)
            .map_err(|e| WalError::Corrupt(format!("{}: {e}", target.name)))?;
        drop(rows);

        let mut geometry = stored;
        let mut repaired = None;
        if self.create {
            clean_up(&mut client, &target, &tables, ring::clean_up_plan(&stored, trim_offset, chain.head), epoch).await?;
            if let ChainStop::Gap { at, rows_beyond } = chain.stop {
                let note = StartupNote::RowsBeyondGapDeleted { at, rows: rows_beyond };
                repaired = Some(format!("{}: {note}", target.name));
                self.note(note);
            }
            let requested = target.settings.geometry;
            match ring::ring_change(&stored, &requested, target.geometry_given, chain.records.is_empty()) {
                ring::RingChange::Unchanged => {}
                ring::RingChange::Deferred => self.note(StartupNote::GeometryKept { stored, requested }),
                ring::RingChange::Apply => {
                    change_ring(&mut client, &target, &tables, &requested, epoch).await?;
                    geometry = requested;
                    self.note(StartupNote::GeometryChanged { from: stored, to: requested });
                }
            }
        }
        self.check_timeline(&client, node_row.timeline, synchronous_standby, epoch).await?;

        let resume = chain.resume_point(&geometry, trim_offset);
        {
            let mut state = self.shared.lock();
            state.geometry = geometry;
            state.epoch = epoch;
            state.trim_offset = trim_offset;
        }
        if self.create {
            let (trims, inbox) = mpsc::unbounded_channel();
            self.trims = Some(trims);
            self.runtime.spawn(trim_loop(Arc::clone(&self.shared), target, inbox));
        }
        Ok(Recovered {
            next_seq: chain.next_seq(),
            records: chain.records,
            lsn: chain.head,
            segment: resume.segment,
            segment_bytes: resume.segment_bytes,
            segments: resume.segments,
            repaired,
            ring: Some((
                RingLayout { geometry, trim_pause: POSTGRES_TRIM_PAUSE },
                RingResume { trim_offset, confirmations: resume.confirmations },
            )),
        })
    }

    /// The start-up checks on the server's state; true when a synchronous standby is
    /// configured (the timeline verdict needs it).
    async fn check_server(&mut self, client: &Client) -> Result<bool, WalError> {
        let target = &self.target;
        let row = client.query_one(sql::SERVER_STATE, &[]).await.map_err(|e| target.open_error("server state", e))?;
        let fsync: String = row.get(1);
        let state = ServerState { in_recovery: row.get(0), fsync: fsync != "off", synchronous_standby_names: row.get(2) };
        let warnings = ring::startup_checks(&state, target.settings.allow_unsafe)
            .map_err(|refusal| WalError::Open(format!("{}: refused: {refusal}", target.name)))?;
        for warning in warnings {
            self.note(StartupNote::Warning(warning));
        }
        Ok(!state.synchronous_standby_names.trim().is_empty())
    }

    /// A writer claims the node row with the next epoch; `dump` reads it as it is.
    async fn node_row(&self, client: &mut Client) -> Result<NodeRow, WalError> {
        let target = &self.target;
        let node_row = if self.create {
            sql::create_tables(client, &[]).await.map_err(|e| target.open_error("cannot create pico_wal_node", e))?;
            Some(claim_next(client, target).await?)
        } else {
            let exists: bool =
                client.query_one(sql::TABLE_EXISTS, &[&ring::NODE_TABLE]).await.map_err(|e| target.open_error("catalog", e))?.get(0);
            if exists {
                client
                    .query_opt(&sql::read_node_row(), &[&target.cluster, &target.node])
                    .await
                    .map_err(|e| target.open_error("reading pico_wal_node", e))?
                    .map(|row| NodeRow::from_row(&row))
            } else {
                None
            }
        };
        node_row.ok_or_else(|| WalError::Open(format!("{}: no WAL for this cluster and node (nothing was ever appended)", target.name)))
    }

    /// The timeline against the one recorded at the last start; a writer records the
    /// current one.
    async fn check_timeline(
        &mut self,
        client: &Client,
        recorded: Option<i64>,
        synchronous_standby: bool,
        epoch: u64,
    ) -> Result<(), WalError> {
        let target = self.target.clone();
        let timeline_hex: String = client.query_one(sql::TIMELINE, &[]).await.map_err(|e| target.open_error("timeline", e))?.get(0);
        let timeline = ring::parse_timeline(&timeline_hex)
            .ok_or_else(|| WalError::Open(format!("{}: cannot read the timeline from {timeline_hex:?}", target.name)))?;
        let verdict = ring::timeline_verdict(recorded.map(|t| t as u32), timeline, synchronous_standby);
        if verdict.is_notable() {
            self.note(StartupNote::Timeline(verdict));
        }
        if self.create {
            let updated = client
                .execute(&sql::update_timeline(), &[&target.cluster, &target.node, &to_i64(epoch), &i64::from(timeline)])
                .await
                .map_err(|e| target.open_error("recording the timeline", e))?;
            if updated == 0 {
                return Err(WalError::Open(format!("{}: fenced during start-up by a newer writer", target.name)));
            }
        }
        Ok(())
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

struct NodeRow {
    epoch: i64,
    trim_offset: i64,
    segments: i64,
    segment_bytes: i64,
    timeline: Option<i64>,
}

impl NodeRow {
    fn from_row(row: &tokio_postgres::Row) -> NodeRow {
        NodeRow { epoch: row.get(0), trim_offset: row.get(1), segments: row.get(2), segment_bytes: row.get(3), timeline: row.get(4) }
    }

    fn geometry(&self) -> RingGeometry {
        RingGeometry { segments: self.segments as u64, segment_bytes: self.segment_bytes as u64 }
    }
}

/// Every row recovery needs (those ending at or after the trim offset), slot by slot.
async fn read_slots(client: &Client, target: &Target, tables: &[String], trim_offset: u64) -> Result<Vec<SlotRow>, WalError> {
    let mut rows = Vec::new();
    for (slot, table) in tables.iter().enumerate() {
        let exists: bool =
            client.query_one(sql::TABLE_EXISTS, &[&table.as_str()]).await.map_err(|e| target.open_error("catalog", e))?.get(0);
        if !exists {
            continue;
        }
        for row in client.query(&sql::rows_from(table), &[&to_i64(trim_offset)]).await.map_err(|e| target.open_error(table, e))? {
            rows.push(SlotRow {
                slot: slot as u64,
                start_offset: row.get::<_, i64>(0) as u64,
                end_offset: row.get::<_, i64>(1) as u64,
                epoch: row.get::<_, i64>(2) as u64,
                body: row.get(3),
            });
        }
    }
    Ok(rows)
}

/// Carries out [`ring::clean_up_plan`] in one transaction under the fence.
async fn clean_up(
    client: &mut Client,
    target: &Target,
    tables: &[String],
    plan: Vec<ring::SlotCleanUp>,
    epoch: u64,
) -> Result<(), WalError> {
    let error = |e| target.open_error("clean-up", e);
    let transaction = client.transaction().await.map_err(error)?;
    hold(&transaction, target, epoch).await?;
    for (table, step) in tables.iter().zip(plan) {
        match step {
            ring::SlotCleanUp::DeleteFrom { head } => {
                transaction.execute(&sql::delete_from(table), &[&to_i64(head)]).await.map_err(error)?;
            }
            ring::SlotCleanUp::Truncate => transaction.batch_execute(&sql::truncate(table)).await.map_err(error)?,
        }
    }
    transaction.commit().await.map_err(error)
}

/// Replaces the drained ring's tables with `requested`'s, recording it under the fence.
async fn change_ring(
    client: &mut Client,
    target: &Target,
    tables: &[String],
    requested: &RingGeometry,
    epoch: u64,
) -> Result<(), WalError> {
    let error = |e| target.open_error("ring change", e);
    let transaction = client.transaction().await.map_err(error)?;
    hold(&transaction, target, epoch).await?;
    for table in tables {
        transaction.batch_execute(&sql::drop_table(table)).await.map_err(error)?;
    }
    let (segments, segment_bytes) = (to_i64(requested.segments), to_i64(requested.segment_bytes));
    transaction
        .execute(&sql::update_geometry(), &[&target.cluster, &target.node, &to_i64(epoch), &segments, &segment_bytes])
        .await
        .map_err(error)?;
    transaction.commit().await.map_err(error)?;
    sql::create_tables(client, &target.tables(requested)).await.map_err(|e| target.open_error("cannot create the slot tables", e))
}

/// Claims the node row with the next epoch (see [`sql`] for why under a row lock).
async fn claim_next(client: &mut Client, target: &Target) -> Result<NodeRow, WalError> {
    let error = |e: tokio_postgres::Error| WalError::Open(format!("{}: claiming the node row: {}", target.name, error_text(&e)));
    let (cluster, node) = (target.cluster.as_str(), target.node.as_str());
    let geometry = target.settings.geometry;
    let transaction = client.transaction().await.map_err(error)?;
    transaction
        .execute(&sql::insert_node_row(), &[&cluster, &node, &to_i64(geometry.segments), &to_i64(geometry.segment_bytes)])
        .await
        .map_err(error)?;
    let stored: i64 = transaction.query_one(&sql::lock_node_row(), &[&cluster, &node]).await.map_err(error)?.get(0);
    let row = claim_in(&transaction, target, stored + 1).await.map_err(error)?;
    transaction.commit().await.map_err(error)?;
    row.ok_or_else(|| WalError::Open(format!("{}: claim refused: a newer epoch holds the node row", target.name)))
}

/// The seed's claim: the upsert that succeeds only when `epoch` is at least the stored
/// epoch. `None` when refused.
async fn claim_in(
    client: &impl tokio_postgres::GenericClient,
    target: &Target,
    epoch: i64,
) -> Result<Option<NodeRow>, tokio_postgres::Error> {
    let geometry = target.settings.geometry;
    let row = client
        .query_opt(
            &sql::claim_node_row(),
            &[&target.cluster, &target.node, &epoch, &to_i64(geometry.segments), &to_i64(geometry.segment_bytes)],
        )
        .await?;
    Ok(row.as_ref().map(NodeRow::from_row))
}

/// Claims the node row with exactly `epoch` (tests of the claim rule).
pub fn claim_epoch(url: &str, cluster: &str, node: &str, epoch: u64) -> Result<bool, String> {
    let backend = PgBackend::new(url, cluster, node, true)?;
    let target = backend.target.clone();
    backend.runtime.block_on(async move {
        let mut client = target.connect().await.map_err(|e| error_text(&e))?;
        sql::create_tables(&mut client, &[]).await.map_err(|e| error_text(&e))?;
        claim_in(&client, &target, to_i64(epoch)).await.map(|row| row.is_some()).map_err(|e| error_text(&e))
    })
}

/// Holds the node row while the epoch is ours, in a transaction.
async fn hold(transaction: &tokio_postgres::Transaction<'_>, target: &Target, epoch: u64) -> Result<(), WalError> {
    let held = transaction
        .query_opt(&sql::hold_epoch(), &[&target.cluster, &target.node, &to_i64(epoch)])
        .await
        .map_err(|e| WalError::Open(format!("{}: {}", target.name, error_text(&e))))?;
    match held {
        Some(_) => Ok(()),
        None => Err(WalError::Open(format!("{}: fenced during start-up by a newer writer", target.name))),
    }
}

impl Backend for PgBackend {
    fn describe(&self) -> String {
        self.target.name.clone()
    }

    fn recover(&mut self) -> Result<Recovered, WalError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| WalError::Open(format!("{}: cannot start a runtime: {e}", self.target.name)))?;
        // Recovery's own connection lives on a throwaway runtime; the backend's runtime
        // keeps only the pool and the trim task.
        let recovered = runtime.block_on(self.recover_async());
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

struct PersistTask {
    shared: Arc<Shared>,
    pool: Pool,
    insert: Arc<dyn InsertRow>,
    target: Target,
    start: u64,
    slot: u64,
    epoch: u64,
}

impl PersistTask {
    async fn run(&self, batch: &Batch) -> Result<(), SyncError> {
        let epoch = self.epoch;
        let body = ring::encode_row_body(self.start, epoch, batch.records());
        let slot = self.slot;
        let table = self.target.table(slot);
        let end = self.start + batch.bytes.len() as u64;
        let row = BatchRow {
            table: &table,
            start: to_i64(self.start),
            end: to_i64(end),
            epoch: to_i64(epoch),
            body: &body,
            cluster: &self.target.cluster,
            node: &self.target.node,
        };
        let attempts = AtomicU32::new(0);
        let outcome = (|| async {
            attempts.fetch_add(1, Ordering::Relaxed);
            self.attempt(&row).await
        })
        .retry(insert_retries())
        .notify(|_, _| self.shared.lock().counters.retries += 1)
        .await;
        match outcome {
            Ok(Attempt::Inserted) => {
                self.shared.lock().counters.inserts += 1;
                Ok(())
            }
            Ok(Attempt::AlreadyThere) => {
                let mut state = self.shared.lock();
                state.counters.inserts += 1;
                if attempts.load(Ordering::Relaxed) > 1 {
                    state.counters.retries_found_committed += 1;
                }
                Ok(())
            }
            Ok(Attempt::Fenced(stored)) => {
                eprintln!(
                    "walab: {}: fenced: the node row's epoch is now {stored}, this writer's is {epoch}; no more appends",
                    self.target.name
                );
                Err(SyncError::Fenced)
            }
            Ok(Attempt::Mismatch(what)) => {
                eprintln!(
                    "walab: {}: corruption: slot {slot} already holds a different row at offset {}: {what}",
                    self.target.name, self.start
                );
                Err(SyncError::Mismatch)
            }
            Err(last_error) => {
                eprintln!(
                    "walab: {}: insert at offset {} failed {INSERT_ATTEMPTS_MAX} times: {last_error}",
                    self.target.name, self.start
                );
                Err(SyncError::Unavailable)
            }
        }
    }

    /// One attempt on a pooled connection. After an error (retried) the connection may be
    /// broken: it leaves the pool, and the next attempt gets another.
    async fn attempt(&self, row: &BatchRow<'_>) -> Result<Attempt, String> {
        let client = self.pool.get().await.map_err(|error| match error {
            PoolError::Backend(error) => error_text(&error),
            other => other.to_string(),
        })?;
        let outcome = self.insert_or_compare(&client, row).await;
        if outcome.is_err() {
            drop(Object::take(client));
        }
        outcome
    }

    /// The fenced insert; when it inserts nothing, what is at the offset says why.
    async fn insert_or_compare(&self, client: &Object, row: &BatchRow<'_>) -> Result<Attempt, String> {
        let statement = client.prepare_cached(&sql::insert_batch(row.table)).await.map_err(|e| error_text(&e))?;
        if self.insert.insert(client, &statement, row).await? == 1 {
            return Ok(Attempt::Inserted);
        }
        let existing = client.query_opt(&sql::row_at(row.table), &[&row.start]).await.map_err(|e| error_text(&e))?;
        if let Some(stored) = existing {
            let (end, epoch, body): (i64, i64, Vec<u8>) = (stored.get(0), stored.get(1), stored.get(2));
            let ours = ring::RowAt { end: row.end as u64, epoch: row.epoch as u64, body: row.body };
            let theirs = ring::RowAt { end: end as u64, epoch: epoch as u64, body: &body };
            return Ok(match ring::judge_stored_row(&ours, &theirs) {
                ring::StoredRowVerdict::Committed => Attempt::AlreadyThere,
                ring::StoredRowVerdict::Fenced => Attempt::Fenced(epoch),
                ring::StoredRowVerdict::Mismatch => Attempt::Mismatch(format!(
                    "end {end} (ours {}), {} body bytes (ours {})",
                    row.end,
                    body.len(),
                    row.body.len()
                )),
            });
        }
        // No row and nothing inserted: the fence held.
        let stored = client
            .query_opt(&sql::current_epoch(), &[&self.target.cluster, &self.target.node])
            .await
            .map_err(|e| error_text(&e))?;
        Ok(Attempt::Fenced(stored.map_or(-1, |row| row.get(0))))
    }
}

/// How an insert that did not fail ended.
enum Attempt {
    Inserted,
    /// A retry found the batch's own row: the earlier attempt committed.
    AlreadyThere,
    Fenced(i64),
    Mismatch(String),
}

/// The retries of a batch's insert: [`INSERT_ATTEMPTS_MAX`] attempts in all, the first
/// retry after [`RETRY_BACKOFF_FIRST`], each wait twice the one before.
fn insert_retries() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(RETRY_BACKOFF_FIRST)
        .with_factor(2.0)
        .with_max_times(INSERT_ATTEMPTS_MAX as usize - 1)
}

/// A batch's row as the fenced insert's parameters.
struct BatchRow<'a> {
    table: &'a str,
    start: i64,
    end: i64,
    epoch: i64,
    body: &'a [u8],
    cluster: &'a str,
    node: &'a str,
}

/// Runs a batch's fenced insert ([`sql::insert_batch`]) and returns the rows it
/// inserted. The backend runs [`FencedInsert`]; the tests of the retry path wrap it to
/// lose a commit's reply or plant a foreign row, so no fault branch is on this path.
trait InsertRow: Send + Sync {
    fn insert<'a>(&'a self, client: &'a Client, statement: &'a Statement, row: &'a BatchRow<'a>) -> BoxFuture<'a, Result<u64, String>>;
}

struct FencedInsert;

impl InsertRow for FencedInsert {
    fn insert<'a>(&'a self, client: &'a Client, statement: &'a Statement, row: &'a BatchRow<'a>) -> BoxFuture<'a, Result<u64, String>> {
        Box::pin(async move {
            client
                .execute(statement, &[&row.start, &row.end, &row.epoch, &row.body, &row.cluster, &row.node])
                .await
                .map_err(|e| error_text(&e))
        })
    }
}

/// Records the trim offset and truncates released slots, whenever the target moves.
async fn trim_loop(shared: Arc<Shared>, target: Target, mut requests: mpsc::UnboundedReceiver<(RingTrim, TrimDone)>) {
    let mut client: Option<Client> = None;
    while let Some((RingTrim { to, released }, done)) = requests.recv().await {
        // Tried until it commits or the fence refuses it: a trim is background work, and
        // the session asks for no other until this one is reported.
        loop {
            let (epoch, geometry) = {
                let state = shared.lock();
                (state.epoch, state.geometry)
            };
            if client.as_ref().is_none_or(Client::is_closed) {
                client = target.connect().await.ok();
            }
            let Some(conn) = client.as_mut() else {
                tokio::time::sleep(TRIM_RETRY_PAUSE).await;
                continue;
            };
            match trim_once(conn, &target, epoch, to, released.clone(), &geometry).await {
                Ok(true) => {
                    let mut state = shared.lock();
                    state.trim_offset = state.trim_offset.max(to);
                    state.counters.trims += 1;
                    state.counters.slots_truncated += released.end - released.start;
                    drop(state);
                    done.complete(Ok(()));
                    break;
                }
                Ok(false) => {
                    eprintln!("walab: {}: fenced: trim refused, the node row carries a newer epoch", target.name);
                    done.complete(Err(SyncError::Fenced));
                    return;
                }
                Err(error) => {
                    eprintln!("walab: {}: trim failed, will retry: {}", target.name, error_text(&error));
                    client = None;
                    tokio::time::sleep(TRIM_RETRY_PAUSE).await;
                }
            }
        }
    }
}

/// One trim transaction; `Ok(false)` when fenced.
async fn trim_once(
    client: &mut Client,
    target: &Target,
    epoch: u64,
    to: u64,
    released: std::ops::Range<u64>,
    geometry: &RingGeometry,
) -> Result<bool, tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    let updated = transaction
        .execute(&sql::update_trim(), &[&target.cluster, &target.node, &to_i64(epoch), &to_i64(to)])
        .await?;
    if updated == 0 {
        transaction.rollback().await?;
        return Ok(false);
    }
    for generation in released {
        transaction.batch_execute(&sql::truncate(&target.table(geometry.slot(generation)))).await?;
    }
    transaction.commit().await?;
    Ok(true)
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
