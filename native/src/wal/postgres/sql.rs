//! The SQL the Postgres WAL sends, in one place.
//!
//! Every statement that changes the log carries the writer's epoch as a predicate on
//! the node row, so a writer that has been taken over changes nothing:
//!
//! - a batch insert is `INSERT ... SELECT ... FROM walab_node WHERE ... epoch = $e FOR
//!   SHARE`: the row lock makes the insert and a concurrent claim (an `UPDATE` of that
//!   row) serialize, so an insert either commits before the claim (and the new owner's
//!   recovery sees it) or re-reads the row after it, finds a newer epoch, and inserts
//!   nothing;
//! - a trim is `UPDATE walab_node SET trim_offset = ... WHERE ... AND epoch = $e`, in
//!   the same transaction as the `TRUNCATE` of the slots it releases;
//! - the clean-up after recovery runs under `SELECT ... FOR SHARE` of the node row with
//!   the same predicate.
//!
//! Claiming the node row is the seed's upsert, which succeeds only when the new epoch is
//! at least the stored one. Two processes starting at once would both read epoch `e` and
//! both claim `e + 1` with it, so walab takes the row lock (`FOR UPDATE`) first: claims
//! serialize, each gets its own epoch, and the later one wins.
//!
//! DDL runs under a transaction-scoped advisory lock, because two concurrent `CREATE
//! TABLE IF NOT EXISTS` of one name can still collide in the catalog.

use tokio_postgres::{Client, Error};

use walab_core::ring::{SynchronousCommit, TablePrefix};

/// The advisory lock key under which walab creates its tables ("walab" in ASCII).
pub const DDL_LOCK_KEY: i64 = 0x77_616c_6162;

/// The client's start-up `options` with the URL's `synchronous_commit` added, so every
/// connection's session commits at that level from its first statement.
pub fn with_synchronous_commit(options: Option<&str>, level: SynchronousCommit) -> String {
    let setting = format!("-c synchronous_commit={}", level.as_sql());
    match options {
        Some(options) if !options.trim().is_empty() => format!("{options} {setting}"),
        _ => setting,
    }
}

/// `CREATE TABLE IF NOT EXISTS` for the node table.
pub fn create_node_table(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!(
        "CREATE TABLE IF NOT EXISTS {node_table} (
            cluster text NOT NULL,
            node text NOT NULL,
            epoch bigint NOT NULL,
            trim_offset bigint NOT NULL,
            segments bigint NOT NULL,
            segment_bytes bigint NOT NULL,
            timeline bigint,
            PRIMARY KEY (cluster, node))"
    )
}

/// `CREATE TABLE IF NOT EXISTS` for one slot table, body stored EXTERNAL (out of line,
/// uncompressed: a row read is one TOAST fetch with no decompression).
pub fn create_slot_table(table: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {table} (
            start_offset bigint PRIMARY KEY,
            end_offset bigint NOT NULL,
            epoch bigint NOT NULL,
            body bytea NOT NULL);
         ALTER TABLE {table} ALTER COLUMN body SET STORAGE EXTERNAL"
    )
}

/// Creates the node table and these slot tables, serialized with other walab processes.
pub async fn create_tables(client: &mut Client, prefix: TablePrefix, slot_tables: &[String]) -> Result<(), Error> {
    let transaction = client.transaction().await?;
    transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&DDL_LOCK_KEY]).await?;
    transaction.batch_execute(&create_node_table(prefix)).await?;
    for table in slot_tables {
        transaction.batch_execute(&create_slot_table(table)).await?;
    }
    transaction.commit().await
}

/// Makes sure the node row exists (epoch 0: never claimed), so that every claim below
/// updates an existing row under its lock.
pub fn insert_node_row(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!(
        "INSERT INTO {node_table} (cluster, node, epoch, trim_offset, segments, segment_bytes, timeline)
         VALUES ($1, $2, 0, 0, $3, $4, NULL) ON CONFLICT (cluster, node) DO NOTHING"
    )
}

/// Locks the node row for a claim.
pub fn lock_node_row(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!("SELECT epoch FROM {node_table} WHERE cluster = $1 AND node = $2 FOR UPDATE")
}

/// The seed's claim: an upsert that takes the row only when the new epoch ($3) is at
/// least the stored one. Returns the row when it succeeded, nothing when refused.
pub fn claim_node_row(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!(
        "INSERT INTO {node_table} AS n (cluster, node, epoch, trim_offset, segments, segment_bytes, timeline)
         VALUES ($1, $2, $3, 0, $4, $5, NULL)
         ON CONFLICT (cluster, node) DO UPDATE SET epoch = EXCLUDED.epoch WHERE n.epoch <= EXCLUDED.epoch
         RETURNING epoch, trim_offset, segments, segment_bytes, timeline"
    )
}

/// Reads the node row without claiming it (`dump`).
pub fn read_node_row(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!(
        "SELECT epoch, trim_offset, segments, segment_bytes, timeline FROM {node_table} WHERE cluster = $1 AND node = $2"
    )
}

/// Holds the node row (shared) while the epoch is ours; no row means fenced.
pub fn hold_epoch(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!("SELECT epoch FROM {node_table} WHERE cluster = $1 AND node = $2 AND epoch = $3 FOR SHARE")
}

/// Records the trim offset, guarded by the epoch; 0 rows means fenced.
pub fn update_trim(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!(
        "UPDATE {node_table} SET trim_offset = $4 WHERE cluster = $1 AND node = $2 AND epoch = $3 AND trim_offset <= $4"
    )
}

/// Records the timeline seen at this start, guarded by the epoch.
pub fn update_timeline(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!("UPDATE {node_table} SET timeline = $4 WHERE cluster = $1 AND node = $2 AND epoch = $3")
}

/// Records a new ring geometry, guarded by the epoch.
pub fn update_geometry(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!(
        "UPDATE {node_table} SET segments = $4, segment_bytes = $5 WHERE cluster = $1 AND node = $2 AND epoch = $3"
    )
}

/// The batch insert with the fence: $1 start, $2 end, $3 epoch, $4 body, $5 cluster, $6 node.
/// A row already at the offset is left alone (0 rows), and the caller compares it.
pub fn insert_batch(prefix: TablePrefix, table: &str) -> String {
    let node_table = prefix.node_table();
    format!(
        "INSERT INTO {table} (start_offset, end_offset, epoch, body)
         SELECT $1, $2, $3, $4 FROM {node_table} WHERE cluster = $5 AND node = $6 AND epoch = $3 FOR SHARE
         ON CONFLICT (start_offset) DO NOTHING"
    )
}

/// A row put at an offset without the fence: only the tests of the retry path use it,
/// to plant a foreign row where a batch is about to go.
#[cfg(test)]
pub fn insert_unfenced(table: &str) -> String {
    format!("INSERT INTO {table} (start_offset, end_offset, epoch, body) VALUES ($1, $2, $3, $4)")
}

/// The row at an offset, for the compare after a retried insert.
pub fn row_at(table: &str) -> String {
    format!("SELECT end_offset, epoch, body FROM {table} WHERE start_offset = $1")
}

/// The node row's epoch now.
pub fn current_epoch(prefix: TablePrefix) -> String {
    let node_table = prefix.node_table();
    format!("SELECT epoch FROM {node_table} WHERE cluster = $1 AND node = $2")
}

/// Where every row of a slot that recovery needs lies (those ending at or after the
/// trim offset $1), without the bodies: the chain is planned from these.
pub fn places_from(table: &str) -> String {
    format!("SELECT start_offset, end_offset FROM {table} WHERE end_offset >= $1 ORDER BY start_offset")
}

/// The rows of a slot starting at the offsets in $1 (a page of the chain), with bodies.
pub fn rows_at(table: &str) -> String {
    format!("SELECT start_offset, end_offset, epoch, body FROM {table} WHERE start_offset = ANY($1) ORDER BY start_offset")
}

/// Deletes a kept slot's rows at or beyond the chain's head ($1): never acknowledged.
pub fn delete_from(table: &str) -> String {
    format!("DELETE FROM {table} WHERE start_offset >= $1")
}

/// Empties a slot whose generations were released.
pub fn truncate(table: &str) -> String {
    format!("TRUNCATE {table}")
}

/// Drops a slot table of a drained ring that is being replaced.
pub fn drop_table(table: &str) -> String {
    format!("DROP TABLE IF EXISTS {table}")
}

/// Whether a cluster's node is in a node table that exists: $1 the table, $2 cluster, $3 node.
/// Finds which prefix a cluster's tables have ([`TablePrefix::for_cluster`]).
pub fn node_row_exists(node_table: &str) -> String {
    format!("SELECT EXISTS (SELECT 1 FROM {node_table} WHERE cluster = $1 AND node = $2)")
}

/// Whether a table exists (`dump` of a log that was never written).
pub const TABLE_EXISTS: &str = "SELECT to_regclass($1) IS NOT NULL";

/// The server state the start-up checks judge, and the timeline: the first 8 hex
/// digits of the current WAL file's name are the timeline the server writes on (it
/// moves at promotion at once, where `pg_control_checkpoint()` waits for a checkpoint).
pub const SERVER_STATE: &str = "SELECT pg_is_in_recovery(), current_setting('fsync'), current_setting('synchronous_standby_names')";
pub const TIMELINE: &str = "SELECT substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8)";
