//! The test server against the client the WAL uses (object_store): racing conditional
//! PUTs have one winner (and, with the lock off, sometimes two), the latency profile
//! holds requests, and each fault does what it says.

use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, RetryConfig, UpdateVersion};

use super::LatencyProfile;
use crate::wal::s3::local_server::LocalS3;

/// Rounds of each race.
const RACE_ROUNDS: usize = 60;
/// How long a stalled claim holds between its check and its write.
const RACE_STALL: Duration = Duration::from_millis(15);

fn client_with(server: &LocalS3, retry: RetryConfig) -> Arc<dyn ObjectStore> {
    let store = server
        .client_builder()
        .with_retry(retry)
        .build()
        .expect("a client for the local server");
    Arc::new(store)
}

fn client(server: &LocalS3) -> Arc<dyn ObjectStore> {
    client_with(server, RetryConfig::default())
}

/// A client that gives up at the first error, so a test sees what the server answered.
fn client_without_retries(server: &LocalS3) -> Arc<dyn ObjectStore> {
    client_with(server, RetryConfig { max_retries: 0, retry_timeout: Duration::from_secs(5), ..RetryConfig::default() })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Two claimers of one registration, each with its own client (so its own connection),
/// released at once: both create it (`If-None-Match: *`, a node never claimed), or both
/// replace the version they both read (`If-Match`, a takeover). With `stall`, each of
/// the two PUTs is held that long between the server's check and its write. Returns
/// how many of the two PUTs succeeded, per round. Keys are `race-{tag}/{round}/...`.
fn race(server: &LocalS3, tag: &str, rounds: usize, stall: Option<Duration>) -> Vec<usize> {
    let runtime = runtime();
    let claimers = [client(server), client(server)];
    let setup = client(server);
    let mut wins = Vec::with_capacity(rounds);
    for round in 0..rounds {
        let key = Path::from(format!("race-{tag}/{round}/registration"));
        let mode = if round % 2 == 0 {
            PutMode::Create
        } else {
            let put = runtime.block_on(setup.put(&key, PutPayload::from_static(b"epoch 1"))).unwrap();
            PutMode::Update(UpdateVersion { e_tag: put.e_tag, version: put.version })
        };
        if let Some(stall) = stall {
            let next = server.control().puts_seen();
            server.control().stall_put(next + 1, stall);
            server.control().stall_put(next + 2, stall);
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let tasks: Vec<_> = claimers
            .iter()
            .enumerate()
            .map(|(claimer, store)| {
                let (store, key, mode, barrier) = (Arc::clone(store), key.clone(), mode.clone(), Arc::clone(&barrier));
                runtime.spawn(async move {
                    let body = PutPayload::from(format!("epoch 2 owner {claimer}").into_bytes());
                    barrier.wait().await;
                    store.put_opts(&key, body, PutOptions::from(mode)).await
                })
            })
            .collect();
        let mut won = 0;
        for task in tasks {
            match runtime.block_on(task).unwrap() {
                Ok(_) => won += 1,
                Err(object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. }) => {}
                Err(error) => panic!("round {round}: a claim failed otherwise: {error}"),
            }
        }
        wins.push(won);
    }
    assert_eq!(server.control().faults_pending(), 0, "every stall was used");
    wins
}

#[test]
fn racing_claimers_of_one_registration_have_exactly_one_winner_every_time() {
    let server = LocalS3::start();
    let plain = race(&server, "plain", RACE_ROUNDS, None);
    assert!(plain.iter().all(|&won| won == 1), "winners per round: {plain:?}");
    // Held between check and write, both claims are in the server at once: the second
    // waits for the key's lock, then finds the first's write.
    let stalled = race(&server, "stalled", RACE_ROUNDS, Some(RACE_STALL));
    assert!(stalled.iter().all(|&won| won == 1), "winners per round: {stalled:?}");
}

#[test]
fn without_the_lock_racing_claimers_both_win_at_least_once() {
    // The same race against the check-then-write s3s-fs does alone: the test above can
    // fail, and this is how.
    let server = LocalS3::start();
    server.control().set_locking(false);
    let stalled = race(&server, "stalled", RACE_ROUNDS, Some(RACE_STALL));
    assert!(stalled.iter().all(|&won| won >= 1), "winners per round: {stalled:?}");
    assert!(stalled.contains(&2), "no double win in {RACE_ROUNDS} rounds: {stalled:?}");
}

#[test]
fn an_update_with_a_stale_etag_and_a_create_of_an_existing_key_are_refused() {
    let server = LocalS3::start();
    let store = client(&server);
    let runtime = runtime();
    let key = Path::from("node/registration");
    let first = runtime.block_on(store.put_opts(&key, PutPayload::from_static(b"a"), PutMode::Create.into())).unwrap();
    let again = runtime.block_on(store.put_opts(&key, PutPayload::from_static(b"b"), PutMode::Create.into()));
    assert!(matches!(again, Err(object_store::Error::AlreadyExists { .. })), "{again:?}");
    let version = UpdateVersion { e_tag: first.e_tag.clone(), version: None };
    let second = runtime.block_on(store.put_opts(&key, PutPayload::from_static(b"c"), PutMode::Update(version.clone()).into()));
    assert!(second.is_ok(), "{second:?}");
    let stale = runtime.block_on(store.put_opts(&key, PutPayload::from_static(b"d"), PutMode::Update(version).into()));
    assert!(matches!(stale, Err(object_store::Error::Precondition { .. })), "{stale:?}");
    let body = runtime.block_on(async { store.get(&key).await.unwrap().bytes().await.unwrap() });
    assert_eq!(&body[..], b"c");
}

#[test]
fn requests_wait_at_least_their_profiles_shortest_latency() {
    // A lower bound only: the server sleeps before it answers, whatever the machine's
    // load; how close to the profile the answers come is for the benchmarks.
    let server = LocalS3::start_with(LatencyProfile::parse("s3-standard").unwrap());
    let store = client(&server);
    let runtime = runtime();
    let key = Path::from("slow");
    let started = Instant::now();
    runtime.block_on(store.put(&key, PutPayload::from_static(b"x"))).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(20), "{:?}", started.elapsed());
    let started = Instant::now();
    runtime.block_on(store.head(&key)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(20), "{:?}", started.elapsed());
}

#[test]
fn a_failed_put_writes_nothing_and_a_retry_gets_through() {
    let server = LocalS3::start();
    let runtime = runtime();
    let key = Path::from("failed");
    server.control().fail_put(server.control().puts_seen() + 1);
    let once = client_without_retries(&server);
    let failed = runtime.block_on(once.put(&key, PutPayload::from_static(b"x")));
    assert!(format!("{failed:?}").contains("status: 500"), "{failed:?}");
    assert!(matches!(runtime.block_on(once.head(&key)), Err(object_store::Error::NotFound { .. })));
    // The client the WAL uses retries a 500: the fault costs one more PUT.
    let before = server.control().puts_seen();
    server.control().fail_put(before + 1);
    runtime.block_on(client(&server).put(&key, PutPayload::from_static(b"y"))).unwrap();
    assert_eq!(server.control().puts_seen(), before + 2);
    assert!(runtime.block_on(once.head(&key)).is_ok());
}

#[test]
fn a_dropped_connection_before_the_write_stores_nothing_after_it_stores_the_object() {
    let server = LocalS3::start();
    let runtime = runtime();
    let store = client_without_retries(&server);
    let before = Path::from("dropped-before");
    server.control().drop_put_connection(server.control().puts_seen() + 1, false);
    let answer = runtime.block_on(store.put(&before, PutPayload::from_static(b"x")));
    assert!(answer.is_err(), "{answer:?}");
    // No status came back: the connection closed without an answer.
    assert!(!format!("{answer:?}").contains("Status {"), "{answer:?}");
    assert!(matches!(runtime.block_on(store.head(&before)), Err(object_store::Error::NotFound { .. })));
    let after = Path::from("dropped-after");
    server.control().drop_put_connection(server.control().puts_seen() + 1, true);
    let answer = runtime.block_on(store.put(&after, PutPayload::from_static(b"x")));
    assert!(answer.is_err(), "{answer:?}");
    assert!(!format!("{answer:?}").contains("Status {"), "{answer:?}");
    let stored = runtime.block_on(async { store.get(&after).await.unwrap().bytes().await.unwrap() });
    assert_eq!(&stored[..], b"x");
    // The connection is gone, not the server: the next request is answered.
    assert!(runtime.block_on(store.head(&after)).is_ok());
}

#[test]
fn a_stalled_put_holds_readers_of_its_key_until_it_is_written() {
    let server = LocalS3::start();
    let runtime = runtime();
    let (writer, reader) = (client(&server), client(&server));
    let key = Path::from("stalled");
    runtime.block_on(writer.put(&key, PutPayload::from_static(b"old"))).unwrap();
    server.control().stall_put(server.control().puts_seen() + 1, Duration::from_millis(300));
    let put = {
        let (writer, key) = (Arc::clone(&writer), key.clone());
        runtime.spawn(async move { writer.put(&key, PutPayload::from_static(b"new")).await })
    };
    // Wait until the stalled PUT has reached the server (it counts on arrival).
    let started = Instant::now();
    while server.control().faults_pending() > 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "the PUT never arrived");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A GET that arrives while the PUT holds the key's lock is answered after the write:
    // it sees the new object, never the old one.
    let read = runtime.block_on(async { reader.get(&key).await.unwrap().bytes().await.unwrap() });
    assert_eq!(&read[..], b"new");
    runtime.block_on(put).unwrap().unwrap();
}

#[test]
fn every_request_is_counted_by_kind() {
    use super::RequestKind;
    use futures::TryStreamExt;
    let server = LocalS3::start();
    let runtime = runtime();
    let store = client_without_retries(&server);
    let key = Path::from("counted/one");
    runtime.block_on(async {
        store.put(&key, PutPayload::from_static(b"x")).await.unwrap();
        // A refused conditional PUT is a request too.
        let refused = store.put_opts(&key, PutPayload::from_static(b"y"), PutOptions::from(PutMode::Create)).await;
        assert!(refused.is_err());
        store.head(&key).await.unwrap();
        store.get(&key).await.unwrap().bytes().await.unwrap();
        let listed: Vec<_> = store.list(Some(&Path::from("counted"))).try_collect().await.unwrap();
        assert_eq!(listed.len(), 1);
        store.delete(&key).await.unwrap();
    });
    let control = server.control();
    let seen: Vec<u64> = RequestKind::ALL.iter().map(|kind| control.requests_seen(*kind)).collect();
    assert_eq!(seen, vec![2, 1, 1, 1, 1]);
    assert_eq!(control.requests_text(), "put 2\nhead 1\nget 1\nlist 1\ndelete 1\n");
}
