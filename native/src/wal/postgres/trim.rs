//! The trim task of the Postgres WAL.
//!
//! The session maps the consumer's confirmations to the end offset of the last wholly
//! confirmed batch and names each trim ([`Backend::trim_ring`]); a background task
//! records that trim offset in the node row (guarded by the epoch), truncating in the
//! same transaction every slot whose generation the trim offset has passed, and retries
//! until it commits or the fence refuses it. `load` and `dump` confirm nothing.

use super::*;

/// Records the trim offset and truncates released slots, whenever the target moves.
pub(super) async fn trim_loop(shared: Arc<Shared>, target: Target, mut requests: mpsc::UnboundedReceiver<(RingTrim, TrimDone)>) {
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
pub(super) async fn trim_once(
    client: &mut Client,
    target: &Target,
    epoch: u64,
    to: u64,
    released: std::ops::Range<u64>,
    geometry: &RingGeometry,
) -> Result<bool, tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    let updated = transaction
        .execute(&sql::update_trim(target.prefix), &[&target.cluster, &target.node, &to_i64(epoch), &to_i64(to)])
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
