//! Recovery's reads of the slot tables, in bounded memory: the places of the rows it
//! needs first (offsets only, no bodies), from which the core plans the chain
//! ([`ring::plan_chain`]); then the chain's rows, a page of at most
//! [`RECOVERY_PAGE_BYTES`] at a time, each checked in order ([`ring::ChainWalk`]) and its
//! records handed to the visitor. What is kept, refused or continued after is exactly
//! what [`ring::recover_chain`] decides over all the rows at once.

use std::collections::HashMap;

use walab_core::codec::tiny::TinyRecord;
use walab_core::ring::{self, ChainSummary, ChainWalk, RingGeometry, RowPlace, SlotRow};

use super::{sql, to_i64, Target, WalError};
use tokio_postgres::Client;

/// The row bytes (by offsets) one read of the chain asks for, at most: one page.
pub const RECOVERY_PAGE_BYTES: u64 = 8 << 20;

/// Plans the chain from the rows' places, reads its rows a page at a time and checks
/// each in order, handing their records to `visit`; returns the chain without records.
pub(super) async fn walk_slots(
    client: &Client,
    target: &Target,
    tables: &[String],
    geometry: &RingGeometry,
    trim_offset: u64,
    claimed_epoch: u64,
    visit: &mut dyn FnMut(TinyRecord),
) -> Result<ChainSummary, WalError> {
    let places = read_places(client, target, tables, trim_offset).await?;
    let plan = ring::plan_chain(geometry, trim_offset, &places);
    let seq_before_trim = ring::seq_before_trim(&read_rows(client, target, tables, &plan.before_trim).await?);
    let mut walk = ChainWalk::new(geometry, claimed_epoch, seq_before_trim);
    let chain: Vec<RowPlace> = plan.rows.iter().map(|&index| places[index]).collect();
    drop(places);
    for page in pages(&chain) {
        for row in read_rows(client, target, tables, page).await? {
            walk.row(&row, visit).map_err(|e| WalError::Corrupt(format!("{}: {e}", target.name)))?;
        }
    }
    Ok(walk.finish(&plan, seq_before_trim))
}

/// Where every row recovery needs lies (those ending at or after the trim offset),
/// slot by slot.
async fn read_places(client: &Client, target: &Target, tables: &[String], trim_offset: u64) -> Result<Vec<RowPlace>, WalError> {
    let mut places = Vec::new();
    for (slot, table) in tables.iter().enumerate() {
        let exists: bool =
            client.query_one(sql::TABLE_EXISTS, &[&table.as_str()]).await.map_err(|e| target.open_error("catalog", e))?.get(0);
        if !exists {
            continue;
        }
        for row in client.query(&sql::places_from(table), &[&to_i64(trim_offset)]).await.map_err(|e| target.open_error(table, e))? {
            places.push(RowPlace {
                slot: slot as u64,
                start_offset: row.get::<_, i64>(0) as u64,
                end_offset: row.get::<_, i64>(1) as u64,
            });
        }
    }
    Ok(places)
}

/// The chain cut into pages: runs of rows in one slot, at most [`RECOVERY_PAGE_BYTES`]
/// of offsets each (and at least one row).
fn pages(chain: &[RowPlace]) -> impl Iterator<Item = &[RowPlace]> {
    let mut rest = chain;
    std::iter::from_fn(move || {
        let first = rest.first()?;
        let mut bytes = 0u64;
        let length = rest
            .iter()
            .take_while(|place| {
                bytes = bytes.saturating_add(place.end_offset.saturating_sub(place.start_offset));
                place.slot == first.slot && (bytes <= RECOVERY_PAGE_BYTES || place == &first)
            })
            .count()
            .max(1);
        let (page, later) = rest.split_at(length);
        rest = later;
        Some(page)
    })
}

/// The rows at `places`, with their bodies, in the order given (one query per slot).
/// A row no longer there, or ending elsewhere, was removed while recovery read (a
/// writer trimmed it): the reading is refused, to be tried again.
async fn read_rows(client: &Client, target: &Target, tables: &[String], places: &[RowPlace]) -> Result<Vec<SlotRow>, WalError> {
    // How often each row is asked for (more than once only on a chain that loops back
    // onto a row, which its checks then refuse).
    let mut wanted: HashMap<(u64, u64), usize> = HashMap::new();
    for place in places {
        *wanted.entry((place.slot, place.start_offset)).or_default() += 1;
    }
    let mut slots: Vec<u64> = wanted.keys().map(|&(slot, _)| slot).collect();
    slots.sort_unstable();
    slots.dedup();
    let mut found: HashMap<(u64, u64), SlotRow> = HashMap::with_capacity(wanted.len());
    for slot in slots {
        let table = &tables[slot as usize];
        let starts: Vec<i64> = places.iter().filter(|p| p.slot == slot).map(|p| to_i64(p.start_offset)).collect();
        for row in client.query(&sql::rows_at(table), &[&starts]).await.map_err(|e| target.open_error(table, e))? {
            let row = SlotRow {
                slot,
                start_offset: row.get::<_, i64>(0) as u64,
                end_offset: row.get::<_, i64>(1) as u64,
                epoch: row.get::<_, i64>(2) as u64,
                body: row.get(3),
            };
            found.insert((slot, row.start_offset), row);
        }
    }
    let mut rows = Vec::with_capacity(places.len());
    for place in places {
        let key = (place.slot, place.start_offset);
        let uses = wanted.get_mut(&key).expect("counted above");
        *uses -= 1;
        let row = if *uses == 0 { found.remove(&key) } else { found.get(&key).cloned() };
        match row {
            Some(row) if RowPlace::of(&row) == *place => rows.push(row),
            _ => {
                return Err(WalError::Open(format!(
                    "{}: the row at offset {} of slot {} changed while recovery read the ring; try again",
                    target.name, place.start_offset, place.slot
                )))
            }
        }
    }
    Ok(rows)
}
