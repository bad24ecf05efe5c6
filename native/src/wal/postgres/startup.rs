//! The Postgres WAL's start-up, step by step: judge the server, claim (or for `dump`
//! read) the node row, read the slots and follow the chain ([`super::read`]), clean up and apply a new
//! ring under the fence, check the timeline. What each step decides is the core's
//! ([`walab_core::ring`]); this module asks and runs the statements.

use super::*;
use self::super::read::walk_slots;

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
    /// The cluster was made before the tables took walab's name: its tables keep the
    /// earlier prefix.
    EarlierTablePrefix,
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
                "warning: the URL asks for segments={} segment_bytes={}, the ring has segments={} segment_bytes={}; a change applies at the first start where the WAL is fully drained",
                requested.segments, requested.segment_bytes, stored.segments, stored.segment_bytes
            ),
            StartupNote::GeometryChanged { from, to } => write!(
                f,
                "the WAL was drained: ring changed from segments={} segment_bytes={} to segments={} segment_bytes={}",
                from.segments, from.segment_bytes, to.segments, to.segment_bytes
            ),
            StartupNote::RowsBeyondGapDeleted { at, rows } => {
                write!(f, "deleted {rows} unacknowledged rows after the gap at offset {at}")
            }
            StartupNote::EarlierTablePrefix => write!(
                f,
                "this cluster was made with the earlier table names ({}, {}...): its log stays in them",
                TablePrefix::Earlier.node_table(),
                TablePrefix::Earlier.text()
            ),
        }
    }
}

impl PgBackend {
    /// Start-up, step by step: judge the server, claim (or for `dump` read) the node
    /// row, read the slots and follow the chain, clean up and apply a new ring under the
    /// fence, check the timeline, and resume the schedule at the head.
    pub(super) async fn recover_async(&mut self, visit: &mut dyn FnMut(TinyRecord)) -> Result<Recovered, WalError> {
        let mut client = self.target.connect().await.map_err(|e| self.target.open_error("cannot connect", e))?;
        let synchronous_standby = self.check_server(&client).await?;
        self.find_prefix(&client).await?;
        let target = self.target.clone();
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
            sql::create_tables(&mut client, target.prefix, &tables).await.map_err(|e| target.open_error("cannot create the slot tables", e))?;
        }
        let chain = walk_slots(&client, &target, &tables, &stored, trim_offset, epoch, visit).await?;

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
            match ring::ring_change(&stored, &requested, target.geometry_given, chain.is_drained()) {
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
            records: Vec::new(),
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
    pub(super) async fn check_server(&mut self, client: &Client) -> Result<bool, WalError> {
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

    /// Which prefix this cluster's tables have: a cluster found only in the earlier node
    /// table keeps the earlier prefix, and the start-up says so ([`TablePrefix::for_cluster`]).
    pub(super) async fn find_prefix(&mut self, client: &Client) -> Result<(), WalError> {
        let target = &self.target;
        let mut found = [false; 2];
        for (index, prefix) in [TablePrefix::Walab, TablePrefix::Earlier].into_iter().enumerate() {
            let table = prefix.node_table();
            let exists: bool = client.query_one(sql::TABLE_EXISTS, &[&table]).await.map_err(|e| target.open_error("catalog", e))?.get(0);
            if exists {
                found[index] = client
                    .query_one(&sql::node_row_exists(table), &[&target.cluster, &target.node])
                    .await
                    .map_err(|e| target.open_error(&format!("reading {table}"), e))?
                    .get(0);
            }
        }
        let prefix = TablePrefix::for_cluster(found[0], found[1]);
        if prefix != TablePrefix::Walab {
            let last = target.settings.geometry.segments.max(1) - 1;
            ring::slot_table_name(prefix, &target.cluster, &target.node, last)
                .map_err(|e| WalError::Open(format!("{}: --node: {e}", target.name)))?;
            self.target.prefix = prefix;
            self.note(StartupNote::EarlierTablePrefix);
        }
        Ok(())
    }

    /// A writer claims the node row with the next epoch; `dump` reads it as it is.
    pub(super) async fn node_row(&self, client: &mut Client) -> Result<NodeRow, WalError> {
        let target = &self.target;
        let node_row = if self.create {
            sql::create_tables(client, target.prefix, &[]).await.map_err(|e| target.open_error(&format!("cannot create {}", target.prefix.node_table()), e))?;
            Some(claim_next(client, target).await?)
        } else {
            let exists: bool =
                client.query_one(sql::TABLE_EXISTS, &[&target.prefix.node_table()]).await.map_err(|e| target.open_error("catalog", e))?.get(0);
            if exists {
                client
                    .query_opt(&sql::read_node_row(target.prefix), &[&target.cluster, &target.node])
                    .await
                    .map_err(|e| target.open_error(&format!("reading {}", target.prefix.node_table()), e))?
                    .map(|row| NodeRow::from_row(&row))
            } else {
                None
            }
        };
        node_row.ok_or_else(|| WalError::Open(format!("{}: no WAL for this cluster and node (nothing was ever appended)", target.name)))
    }

    /// The timeline against the one recorded at the last start; a writer records the
    /// current one.
    pub(super) async fn check_timeline(
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
                .execute(&sql::update_timeline(target.prefix), &[&target.cluster, &target.node, &to_i64(epoch), &i64::from(timeline)])
                .await
                .map_err(|e| target.open_error("recording the timeline", e))?;
            if updated == 0 {
                return Err(WalError::Open(format!("{}: fenced during start-up by a newer writer", target.name)));
            }
        }
        Ok(())
    }
}

pub(super) struct NodeRow {
    pub(super) epoch: i64,
    pub(super) trim_offset: i64,
    pub(super) segments: i64,
    pub(super) segment_bytes: i64,
    pub(super) timeline: Option<i64>,
}

impl NodeRow {
    pub(super) fn from_row(row: &tokio_postgres::Row) -> NodeRow {
        NodeRow { epoch: row.get(0), trim_offset: row.get(1), segments: row.get(2), segment_bytes: row.get(3), timeline: row.get(4) }
    }

    pub(super) fn geometry(&self) -> RingGeometry {
        RingGeometry { segments: self.segments as u64, segment_bytes: self.segment_bytes as u64 }
    }
}

/// Carries out [`ring::clean_up_plan`] in one transaction under the fence.
pub(super) async fn clean_up(
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
pub(super) async fn change_ring(
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
        .execute(&sql::update_geometry(target.prefix), &[&target.cluster, &target.node, &to_i64(epoch), &segments, &segment_bytes])
        .await
        .map_err(error)?;
    transaction.commit().await.map_err(error)?;
    sql::create_tables(client, target.prefix, &target.tables(requested)).await.map_err(|e| target.open_error("cannot create the slot tables", e))
}

/// Claims the node row with the next epoch (see [`sql`] for why under a row lock).
pub(super) async fn claim_next(client: &mut Client, target: &Target) -> Result<NodeRow, WalError> {
    let error = |e: tokio_postgres::Error| WalError::Open(format!("{}: claiming the node row: {}", target.name, error_text(&e)));
    let (cluster, node) = (target.cluster.as_str(), target.node.as_str());
    let geometry = target.settings.geometry;
    let transaction = client.transaction().await.map_err(error)?;
    transaction
        .execute(&sql::insert_node_row(target.prefix), &[&cluster, &node, &to_i64(geometry.segments), &to_i64(geometry.segment_bytes)])
        .await
        .map_err(error)?;
    let stored: i64 = transaction.query_one(&sql::lock_node_row(target.prefix), &[&cluster, &node]).await.map_err(error)?.get(0);
    let row = claim_in(&transaction, target, stored + 1).await.map_err(error)?;
    transaction.commit().await.map_err(error)?;
    row.ok_or_else(|| WalError::Open(format!("{}: claim refused: a newer epoch holds the node row", target.name)))
}

/// The seed's claim: the upsert that succeeds only when `epoch` is at least the stored
/// epoch. `None` when refused.
pub(super) async fn claim_in(
    client: &impl tokio_postgres::GenericClient,
    target: &Target,
    epoch: i64,
) -> Result<Option<NodeRow>, tokio_postgres::Error> {
    let geometry = target.settings.geometry;
    let row = client
        .query_opt(
            &sql::claim_node_row(target.prefix),
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
        sql::create_tables(&mut client, target.prefix, &[]).await.map_err(|e| error_text(&e))?;
        claim_in(&client, &target, to_i64(epoch)).await.map(|row| row.is_some()).map_err(|e| error_text(&e))
    })
}

/// Holds the node row while the epoch is ours, in a transaction.
pub(super) async fn hold(transaction: &tokio_postgres::Transaction<'_>, target: &Target, epoch: u64) -> Result<(), WalError> {
    let held = transaction
        .query_opt(&sql::hold_epoch(target.prefix), &[&target.cluster, &target.node, &to_i64(epoch)])
        .await
        .map_err(|e| WalError::Open(format!("{}: {}", target.name, error_text(&e))))?;
    match held {
        Some(_) => Ok(()),
        None => Err(WalError::Open(format!("{}: fenced during start-up by a newer writer", target.name))),
    }
}
