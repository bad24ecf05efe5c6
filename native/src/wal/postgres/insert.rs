//! One batch's fenced insert.
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

use super::*;

pub(super) struct PersistTask {
    pub(super) shared: Arc<Shared>,
    pub(super) pool: Pool,
    pub(super) insert: Arc<dyn InsertRow>,
    pub(super) target: Target,
    pub(super) start: u64,
    pub(super) slot: u64,
    pub(super) epoch: u64,
}

impl PersistTask {
    pub(super) async fn run(&self, batch: &Batch) -> Result<(), SyncError> {
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
    pub(super) async fn attempt(&self, row: &BatchRow<'_>) -> Result<Attempt, String> {
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
    pub(super) async fn insert_or_compare(&self, client: &Object, row: &BatchRow<'_>) -> Result<Attempt, String> {
        let statement = client.prepare_cached(&sql::insert_batch(self.target.prefix, row.table)).await.map_err(|e| error_text(&e))?;
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
            .query_opt(&sql::current_epoch(self.target.prefix), &[&self.target.cluster, &self.target.node])
            .await
            .map_err(|e| error_text(&e))?;
        Ok(Attempt::Fenced(stored.map_or(-1, |row| row.get(0))))
    }
}

/// How an insert that did not fail ended.
pub(super) enum Attempt {
    Inserted,
    /// A retry found the batch's own row: the earlier attempt committed.
    AlreadyThere,
    Fenced(i64),
    Mismatch(String),
}

/// The retries of a batch's insert: [`INSERT_ATTEMPTS_MAX`] attempts in all, the first
/// retry after [`RETRY_BACKOFF_FIRST`], each wait twice the one before.
pub(super) fn insert_retries() -> ExponentialBuilder {
    ExponentialBuilder::default()
        .with_min_delay(RETRY_BACKOFF_FIRST)
        .with_factor(2.0)
        .with_max_times(INSERT_ATTEMPTS_MAX as usize - 1)
}

/// A batch's row as the fenced insert's parameters.
pub(super) struct BatchRow<'a> {
    pub(super) table: &'a str,
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) epoch: i64,
    pub(super) body: &'a [u8],
    pub(super) cluster: &'a str,
    pub(super) node: &'a str,
}

/// Runs a batch's fenced insert ([`sql::insert_batch`]) and returns the rows it
/// inserted. The backend runs [`FencedInsert`]; the tests of the retry path wrap it to
/// lose a commit's reply or plant a foreign row, so no fault branch is on this path.
pub(super) trait InsertRow: Send + Sync {
    fn insert<'a>(&'a self, client: &'a Client, statement: &'a Statement, row: &'a BatchRow<'a>) -> BoxFuture<'a, Result<u64, String>>;
}

pub(super) struct FencedInsert;

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
