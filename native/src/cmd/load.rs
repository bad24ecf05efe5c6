//! `walab load`: concurrent writers append to a WAL and print each acknowledgement.
//!
//! Each acknowledged record's key goes to stdout as `ack <key>` on its own line, flushed
//! at once, and nothing else is ever printed there. That makes the output a ledger of
//! promises: a harness that kills this process at any moment (`walab crash-test`) knows
//! exactly which records the WAL said were durable, and checks each one after recovery.
//! Keys are `<run id>-<writer>-<n>`, unique across runs as long as run ids differ (the
//! default run id mixes the clock and the process id).

use std::io::Write;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cli_error::CliError;
use crate::wal::url::WalArgs;
use crate::wal::{Wal, WalError, WalOptions};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    wal: Option<WalArgs>,
    #[command(flatten)]
    http: super::load_http::HttpArgs,
    /// Concurrent writers.
    #[arg(long, default_value_t = 1)]
    writers: usize,
    /// Records to append in all (split across the writers).
    #[arg(long, conflicts_with = "seconds")]
    records: Option<u64>,
    /// Append for this many seconds instead.
    #[arg(long)]
    seconds: Option<f64>,
    /// Value bytes per record.
    #[arg(long, default_value_t = 100)]
    record_bytes: usize,
    /// Prefix of every key (default: derived from the clock and the process id).
    #[arg(long)]
    run_id: Option<String>,
}

use super::common::{check_writers_and_bytes, default_run_id, open_failure};

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    crate::wal::limit_malloc_arenas();
    check_writers_and_bytes(args.writers, args.record_bytes)?;
    let deadline = match args.seconds {
        Some(s) if s.is_finite() && s > 0.0 && s <= 1e6 => Some(Instant::now() + Duration::from_secs_f64(s)),
        Some(_) => return Err(CliError::usage("--seconds: must be a positive number")),
        None => None,
    };
    let total = if deadline.is_some() { u64::MAX } else { args.records.unwrap_or(1000) };
    let run_id = args.run_id.unwrap_or_else(default_run_id);
    if let Some(url) = args.http.http {
        return super::load_http::run(super::load_http::HttpLoad {
            url,
            writers: args.writers,
            records: total,
            deadline,
            record_bytes: args.record_bytes,
            streams: args.http.streams,
            producers: args.http.producers,
            batch: args.http.batch,
            content: args.http.content,
            run_id,
        });
    }
    let Some(wal) = args.wal else { return Err(CliError::usage("--wal URL or --http URL: say where to append")) };
    let backend = wal.backend(true).map_err(CliError::usage)?;
    // The records found are not needed: recovery hands them over one by one and they go.
    let (wal, _recovered) = Wal::open_streaming(backend, WalOptions::default(), None, &mut |_| {}).map_err(open_failure)?;
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let stop = Arc::new(AtomicBool::new(false));
    let first_error: Arc<Mutex<Option<WalError>>> = Arc::new(Mutex::new(None));
    let value = vec![b'v'; args.record_bytes];
    let handles: Vec<_> = (0..args.writers as u64)
        .map(|w| {
            let mut writer = wal.writer();
            let (stdout, stop, first_error, value, run_id) =
                (Arc::clone(&stdout), Arc::clone(&stop), Arc::clone(&first_error), value.clone(), run_id.clone());
            let share = total / args.writers as u64 + u64::from(w < total % args.writers as u64);
            std::thread::spawn(move || {
                for n in 0..share {
                    if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let key = format!("{run_id}-{w}-{n}");
                    match writer.append(key.as_bytes(), &value) {
                        Ok(_) => {
                            let mut out = stdout.lock().unwrap_or_else(|p| p.into_inner());
                            if writeln!(out, "ack {key}").and_then(|()| out.flush()).is_err() {
                                // Nobody reads our promises any more (a closed pipe).
                                stop.store(true, Ordering::Relaxed);
                                break;
                            }
                        }
                        Err(error) => {
                            stop.store(true, Ordering::Relaxed);
                            first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert(error);
                            break;
                        }
                    }
                }
            })
        })
        .collect();
    for handle in handles {
        let _ = handle.join();
    }
    let name = wal.name().to_string();
    wal.close();
    let error = first_error.lock().unwrap_or_else(|p| p.into_inner()).take();
    match error {
        Some(error) => Err(CliError::failed(format!("{name}: {error}"))),
        None => Ok(ExitCode::SUCCESS),
    }
}
