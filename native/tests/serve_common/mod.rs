//! A running `walab serve` for the serve tests: started on port 0, its address read from
//! its stderr, killed (SIGKILL, a crash) when dropped.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    /// `http://ADDR`.
    pub base: String,
    /// What the server printed before it listened, and the `lines_after` lines after.
    pub preamble: Vec<String>,
    /// What it prints after that, once it has ended.
    rest: Option<JoinHandle<String>>,
}

impl Server {
    /// Starts `command` (a `walab serve ...` without `--listen`) on 127.0.0.1:0 and waits
    /// until it listens; `lines_after` more lines of stderr go to the preamble.
    pub fn spawn(mut command: Command, lines_after: usize) -> Server {
        let mut child = command
            .args(["--listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .expect("walab serve starts");
        let mut stderr = BufReader::new(child.stderr.take().expect("stderr is piped"));
        let mut preamble = Vec::new();
        let address = loop {
            let mut line = String::new();
            assert!(stderr.read_line(&mut line).expect("stderr") > 0, "the server ended before it listened: {preamble:?}");
            match line.trim().strip_prefix("walab serve: listening on ") {
                Some(address) => break address.to_string(),
                None => preamble.push(line.trim().to_string()),
            }
        };
        for _ in 0..lines_after {
            let mut line = String::new();
            stderr.read_line(&mut line).expect("stderr");
            preamble.push(line.trim().to_string());
        }
        // Keep reading stderr so that the server never writes into a full or closed pipe.
        let rest = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = stderr.read_to_string(&mut rest);
            rest
        });
        Server { child, base: address, preamble, rest: Some(rest) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn crash(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// Waits (at most 30 s) for the server to end by itself; its exit and what it printed.
    pub fn ended(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let exit = loop {
            if let Some(exit) = self.child.try_wait().expect("the server's status") {
                break exit;
            }
            assert!(Instant::now() < deadline, "the server never ended");
            std::thread::sleep(Duration::from_millis(20));
        };
        (exit, self.rest.take().expect("read once").join().expect("the reader thread"))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
