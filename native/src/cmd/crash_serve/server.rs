//! The `walab serve` child a crash test kills and restarts: started on the test's WAL,
//! metadata and objects, its address read from its stderr, the tail of which is kept for
//! error messages.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use super::ServeCrashParams;
use crate::cli_error::CliError;

/// A running `walab serve` child and the tail of what it printed.
pub(super) struct Server {
    child: Child,
    pub(super) authority: String,
    tail: Arc<Mutex<VecDeque<String>>>,
}

/// Lines of the server's stderr kept for error messages.
const TAIL_LINES: usize = 20;

/// How much later every other server seals a block by age.
const SLOW_BLOCK_FACTOR: u64 = 50;

/// How long a server may take to recover and listen.
const START_TIMEOUT: Duration = Duration::from_secs(120);

impl Server {
    /// Starts the `n`th server of the test: every other one seals its blocks only after
    /// [`SLOW_BLOCK_FACTOR`] times `--block-ms` (or when full), so that a kill also finds
    /// a long WAL tail to replay and the check reads records from the log cache, not only
    /// from objects.
    pub(super) fn start(params: &ServeCrashParams, n: u64) -> Result<Server, CliError> {
        let block_ms = match n % 2 {
            0 => params.block_ms,
            _ => params.block_ms.saturating_mul(SLOW_BLOCK_FACTOR).min(3_600_000),
        };
        let mut command = Command::new(&params.exe);
        command
            .args(["serve", "--wal", &params.wal, "--cluster", &params.cluster, "--node", &params.node])
            .args(["--listen", "127.0.0.1:0", "--block-bytes", &params.block_bytes.to_string()])
            .args(["--block-ms", &block_ms.to_string(), "--stream-object-bytes", &(params.block_bytes / 4).to_string()]);
        for (flag, value) in [("--endpoint", &params.endpoint), ("--objects", &params.objects), ("--meta", &params.meta), ("--fault", &params.fault)] {
            if let Some(value) = value {
                command.args([flag, value.as_str()]);
            }
        }
        if let Some(bytes) = params.segment_bytes {
            command.args(["--segment-bytes", &bytes.to_string()]);
        }
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| CliError::failed(format!("cannot start walab serve: {error}")))?;
        let stderr = child.stderr.take().expect("piped");
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let (listening, address) = mpsc::sync_channel(1);
        let kept = Arc::clone(&tail);
        // Reads stderr to its end, so that the server never writes into a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if let Some(address) = line.strip_prefix("walab serve: listening on http://") {
                    let _ = listening.try_send(address.trim().to_string());
                }
                let mut kept = kept.lock().unwrap_or_else(|p| p.into_inner());
                if kept.len() == TAIL_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
        });
        let mut server = Server { child, authority: String::new(), tail };
        match address.recv_timeout(START_TIMEOUT) {
            Ok(authority) => server.authority = authority,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                server.kill();
                return Err(CliError::failed(format!("walab serve did not listen within {} s", START_TIMEOUT.as_secs())));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let _ = server.child.wait();
                return Err(CliError::failed(format!("walab serve ended before it listened: {}", server.last_words())));
            }
        }
        Ok(server)
    }

    /// The server's last line on stderr, without its `walab: ` prefix.
    pub(super) fn last_words(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        tail.back().map_or("(nothing on stderr)".to_string(), |line| line.trim_start_matches("walab: ").to_string())
    }

    /// Whether the server already ended by itself.
    pub(super) fn ended(&mut self) -> bool {
        !matches!(self.child.try_wait(), Ok(None))
    }

    pub(super) fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
