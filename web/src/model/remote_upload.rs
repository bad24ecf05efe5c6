//! The upload from WAL to committed objects at the playhead: what each object, each
//! stream's committed end and each WAL object is at `t`, and the caption of the upload's
//! steps. The run is the core's (`walab_core::sim::remote::upload`); nothing here decides.

use walab_core::sim::remote::upload::{AttemptOutcome, ObjectKind, ObjectRow, UploadRun};
use walab_core::sim::remote::RemoteRun;
use walab_core::time::Nanos;


/// An uploaded object at the playhead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectState {
    /// Its id is not reserved yet.
    NotYet,
    /// Its id is reserved; its PUT is in flight.
    Uploading,
    /// Stored, but no commit references it yet: no reader can find it.
    Unreferenced,
    Committed,
    /// Its attempt ended without a commit (a crash, a refused commit): waiting to expire.
    Orphan,
    /// Its id expired: the object is garbage.
    Expired,
}

impl ObjectState {
    pub fn name(&self) -> &'static str {
        match self {
            ObjectState::NotYet => "not-yet",
            ObjectState::Uploading => "uploading",
            ObjectState::Unreferenced => "unreferenced",
            ObjectState::Committed => "committed",
            ObjectState::Orphan => "orphan",
            ObjectState::Expired => "expired",
        }
    }
}

/// When the attempt that made `object` ended without a commit, if it did.
fn abandoned_at(upload: &UploadRun, object: &ObjectRow) -> Option<Nanos> {
    let block = upload.blocks.iter().find(|block| block.block == object.block)?;
    let attempt = block.attempts.get(object.attempt as usize - 1)?;
    match attempt.outcome {
        AttemptOutcome::Committed => None,
        AttemptOutcome::CrashedBeforeCommit => Some(attempt.uploaded),
        AttemptOutcome::Expired | AttemptOutcome::Fenced => attempt.commit_answered,
    }
}

pub fn object_state(upload: &UploadRun, object: &ObjectRow, t: Nanos) -> ObjectState {
    if t < object.reserved {
        return ObjectState::NotYet;
    }
    if t < object.stored {
        return ObjectState::Uploading;
    }
    if object.committed.is_some_and(|at| at <= t) {
        return ObjectState::Committed;
    }
    if object.expired.is_some_and(|at| at <= t) {
        return ObjectState::Expired;
    }
    if abandoned_at(upload, object).is_some_and(|at| at <= t) {
        return ObjectState::Orphan;
    }
    ObjectState::Unreferenced
}

/// "s1 0–91, s3 0–18": an object's stream ranges, streams numbered from 1 on the page.
pub fn ranges_text(object: &ObjectRow) -> String {
    let ranges: Vec<String> = object.ranges.iter().map(|r| format!("s{} {}–{}", r.stream + 1, r.start, r.end)).collect();
    ranges.join(", ")
}

pub fn kind_text(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::StreamSet => "stream-set object",
        ObjectKind::Stream => "stream object",
    }
}

fn ids_text(ids: &[u64]) -> String {
    match ids {
        [] => String::new(),
        [one] => format!("id {one}"),
        [first @ .., last] => {
            let first: Vec<String> = first.iter().map(u64::to_string).collect();
            format!("ids {} and {last}", first.join(", "))
        }
    }
}

/// Every instant the upload's picture changes.
pub fn marks(upload: &UploadRun) -> Vec<Nanos> {
    let mut marks = Vec::new();
    for block in &upload.blocks {
        marks.push(block.sealed);
        for attempt in &block.attempts {
            marks.extend([Some(attempt.reserve_sent), Some(attempt.reserved), Some(attempt.uploaded), attempt.commit_answered].into_iter().flatten());
        }
    }
    for object in &upload.objects {
        marks.extend([Some(object.stored), object.expired].into_iter().flatten());
    }
    marks.extend(upload.deletes.iter().map(|delete| delete.done));
    marks
}

/// The upload's part of the caption at `t`.
pub fn caption_parts(upload: &UploadRun, t: Nanos) -> Vec<String> {
    let mut parts = Vec::new();
    let stored: Vec<u64> = upload.objects.iter().filter(|o| o.stored == t).map(|o| o.id).collect();
    if !stored.is_empty() {
        let ids: Vec<String> = stored.iter().map(u64::to_string).collect();
        let (noun, pronoun) = if stored.len() == 1 { ("object", "it") } else { ("objects", "them") };
        parts.push(format!("{noun} {} stored; no reader can find {pronoun} before the commit", ids.join(" and ")));
    }
    for block in &upload.blocks {
        if block.sealed == t {
            parts.push(format!("log-cache block {} seals with {} acknowledged records", block.block, block.records));
        }
        for attempt in &block.attempts {
            let retry = if attempt.ids.first() != block.attempts[0].ids.first() { " again" } else { "" };
            if attempt.reserve_sent == t {
                parts.push(format!("the upload asks the metadata log for {} object ids for block {}{retry}", attempt.ids.len(), block.block));
            }
            if attempt.reserved == t {
                parts.push(format!("{} reserved before anything is uploaded; the PUTs go out", ids_text(&attempt.ids)));
            }
            if attempt.uploaded == t && attempt.outcome == AttemptOutcome::CrashedBeforeCommit {
                parts.push(format!(
                    "the upload task crashes after uploading block {} and before its commit: {} are orphans that nothing references",
                    block.block,
                    ids_text(&attempt.ids)
                ));
            }
            if attempt.commit_answered == Some(t) {
                parts.push(match attempt.outcome {
                    AttemptOutcome::Committed => {
                        let ends = upload.stream_ends_at(t);
                        let ends: Vec<String> = ends.iter().enumerate().map(|(s, end)| format!("s{} {end}", s + 1)).collect();
                        format!(
                            "one commit registers {} and advances every stream at once (committed ends: {})",
                            ids_text(&attempt.ids),
                            ends.join(", ")
                        )
                    }
                    AttemptOutcome::Fenced => format!("the commit of {} is refused: node B holds the node now", ids_text(&attempt.ids)),
                    AttemptOutcome::Expired => format!("the commit is refused: {} expired", ids_text(&attempt.ids)),
                    AttemptOutcome::CrashedBeforeCommit => String::new(),
                });
            }
        }
    }
    let expired: Vec<u64> = upload.objects.iter().filter(|o| o.expired == Some(t)).map(|o| o.id).collect();
    if !expired.is_empty() {
        parts.push(format!("{} expire: the orphaned objects are garbage, and no reader ever saw them", ids_text(&expired)));
    }
    for delete in upload.deletes.iter().filter(|delete| delete.done == t) {
        let (first, last) = (delete.batches[0], delete.batches[delete.batches.len() - 1]);
        parts.push(if first == last {
            format!("WAL object of batch {first} deleted: its records are committed")
        } else {
            format!("WAL objects of batches {first} to {last} deleted: their records are committed")
        });
    }
    parts
}

/// A WAL object at the playhead, for the strip under the upload.
pub fn wal_object_state(run: &RemoteRun, upload: &UploadRun, batch: u64, t: Nanos) -> &'static str {
    let Some(row) = run.batches.iter().find(|b| b.batch == batch) else { return "not-yet" };
    if upload.deleted_by(t).any(|deleted| deleted == batch) {
        "deleted"
    } else if row.stored.is_some_and(|stored| stored <= t) {
        "stored"
    } else {
        "not-yet"
    }
}

/// The figure's label: what the upload shows at `t`, in words.
pub fn label_at(upload: &UploadRun, t: Nanos) -> String {
    let committed = upload.objects.iter().filter(|o| object_state(upload, o, t) == ObjectState::Committed).count();
    let orphans = upload.objects.iter().filter(|o| object_state(upload, o, t) == ObjectState::Orphan).count();
    let ends = upload.stream_ends_at(t);
    format!(
        "the upload at {}: {} committed, {orphans} orphaned; committed ends {}",
        crate::format::ms(t),
        crate::format::count(committed, "object"),
        ends.iter().enumerate().map(|(s, end)| format!("s{} {end}", s + 1)).collect::<Vec<_>>().join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::remote::RemoteModel;
    use crate::remote_params::RemoteParams;
    use walab_core::sim::remote::RemoteBackend;

    #[test]
    fn a_crash_before_the_commit_shows_orphans_then_expired_ids_and_the_retry_committed() {
        let mut params = RemoteParams::default();
        params.parse("rlat", "25").unwrap();
        params.parse("rupcrash", "2").unwrap();
        let model = RemoteModel::build(RemoteBackend::S3, &params, 1);
        let upload = model.upload.as_ref().unwrap().as_ref().unwrap();
        let block = &upload.blocks[1];
        let crash = block.attempts[0].uploaded;
        let orphan = &upload.objects[block.attempts[0].ids[0] as usize];
        assert_eq!(object_state(upload, orphan, crash), ObjectState::Orphan);
        assert_eq!(object_state(upload, orphan, orphan.expired.unwrap()), ObjectState::Expired);
        let retry = &upload.objects[block.attempts[1].ids[0] as usize];
        assert_eq!(object_state(upload, retry, block.attempts[1].commit_answered.unwrap()), ObjectState::Committed);
        assert!(caption_parts(upload, crash).iter().any(|p| p.contains("crashes after uploading block 2")));
        assert!(model.command.contains("--upload-crash-before-commit 2"));
    }
}
