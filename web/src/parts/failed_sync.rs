//! Part 3: when fsync fails. The text; the two branches run on the core's device model.

use yew::prelude::*;

use super::{ChapterProps, Source};

pub fn failed_sync_text() -> Html {
    html! {
        <div class="prose">
            <p>{ "A sync can fail: EIO from a failing device or a lost network volume, ENOSPC from a full disk. The \
                  natural reaction, trying again, is exactly wrong. When Linux fails to write dirty pages back, it may \
                  mark them clean anyway and report the error once, to the next sync that asks. The bytes may never have \
                  reached the disk, yet the kernel no longer holds them as waiting to be written, so a second sync finds \
                  nothing to do and returns success. " }
               <Source name="fsync(2) ERRORS" href="https://man7.org/linux/man-pages/man2/fsync.2.html" /></p>
            <p>{ "This bit PostgreSQL in 2018 (\"fsyncgate\"). Its fix was to stop retrying: by default a failed data sync \
                  now raises a PANIC, and the server restarts and recovers from its WAL (data_sync_retry = off). A study \
                  at USENIX ATC 2020 tested five widely used systems (PostgreSQL, LMDB, LevelDB, SQLite, Redis) and found \
                  that none handled a failed fsync safely in every case. " }
               <Source name="PostgreSQL: data_sync_retry" href="https://www.postgresql.org/docs/current/runtime-config-error-handling.html#GUC-DATA-SYNC-RETRY" />
               <Source name="Rebello et al., Can Applications Recover from fsync Failures? (ATC '20)" href="https://www.usenix.org/conference/atc20/presentation/rebello" /></p>
            <h3>{ "The rule" }</h3>
            <ol>
                <li>{ "A failed sync is fatal to the log: never retry it and carry on." }</li>
                <li>{ "Fail every writer waiting on that sync; none of them was acknowledged." }</li>
                <li>{ "Stop taking writes, restart, and recover from what is on the disk." }</li>
                <li>{ "A client that got an error does not know the outcome: the write may or may not exist after \
                       recovery. Its retry must be idempotent." }</li>
            </ol>
            <p>{ "One more trap: after a write-back error the kernel may keep the pages' contents in memory. A process \
                  that restarts without a reboot and reads its log through the page cache can see records the disk does \
                  not have, replay them as durable, and lose them at the next power cut. Recover after a reboot, or read \
                  the log with direct I/O." }</p>
        </div>
    }
}

#[component]
pub fn FailedSyncChapter(_props: &ChapterProps) -> Html {
    failed_sync_text()
}
