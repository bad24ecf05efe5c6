//! walab's S3 test server: s3s-fs made to behave like S3 where a WAL can tell.
//!
//! The tests, CI, the benchmarks and `scripts/s3-server` all run against this server
//! (in-process for the Rust tests, `walab s3-server` for the scripts). It is the
//! [`s3s`] protocol layer over [`s3s_fs`]'s file-backed buckets (objects are plain files
//! under the root, so they survive a restart on the same root), with three changes a
//! WAL's correctness and its benchmarks depend on:
//!
//! - **Atomic conditional PUTs** ([`store`]): `If-None-Match: *` and `If-Match` are
//!   decided and written under one lock per key, as S3 decides them. s3s-fs alone checks
//!   then writes, so two claimers of one registration could both win; a fencing
//!   argument cannot be exercised against that. [`Control::set_locking`] turns the lock
//!   off, so a test can show its race being caught.
//! - **Latency** ([`latency`]): every request waits a time drawn for its kind from a
//!   profile (`none`, `s3-standard`, `s3-express`, or a file of measured latencies)
//!   before it is handled, so group commit sees the round trips it would see on S3.
//! - **Faults** ([`faults`]): fail the Nth PUT, stall it between its check and its
//!   write, or drop its connection before or after the write.
//!
//! One more difference from s3s-fs's own binary: accepted sockets set `TCP_NODELAY`.
//! Without it a GET's answer leaves as two writes (headers, then the body) and the body
//! waits for the client's delayed ACK, about 40 ms on loopback, a delay S3 does not have.
//!
//! HTTP is hyper's, as in s3s-fs's binary: one task per connection, HTTP/1 or HTTP/2.
//! A request whose PUT fault says "drop" ends with an error from the service, which
//! makes hyper close the connection without writing an answer.

pub mod faults;
pub mod latency;
pub mod store;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnectionBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

pub use faults::{Control, PutFault};
pub use latency::{LatencyProfile, RequestKind};

/// How long a stopped server's runtime may take to finish its file operations.
const SHUTDOWN_WAIT_MAX: Duration = Duration::from_secs(2);
/// Worker threads of an in-process server's runtime.
pub const RUNTIME_WORKER_THREADS: usize = 2;

/// What a server serves and how.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Directory whose sub-directories are the buckets.
    pub root: PathBuf,
    pub access_key: String,
    pub secret_key: String,
    pub latency: LatencyProfile,
    /// Seeds the latency draws.
    pub seed: u64,
}

impl ServerConfig {
    pub fn new(root: &Path, access_key: &str, secret_key: &str) -> ServerConfig {
        ServerConfig {
            root: root.to_path_buf(),
            access_key: access_key.to_string(),
            secret_key: secret_key.to_string(),
            latency: LatencyProfile::none(),
            seed: 1,
        }
    }
}

/// Builds the S3 service for `config`, its faults and switches in `control`.
fn service(config: &ServerConfig, control: Arc<Control>) -> Result<s3s::service::S3Service, String> {
    let fs = s3s_fs::FileSystem::new(&config.root)
        .map_err(|error| format!("{}: cannot serve this root: {error:?}", config.root.display()))?;
    let store = store::Store::new(fs, config.latency.clone(), config.seed, control);
    let mut builder = S3ServiceBuilder::new(store);
    builder.set_auth(SimpleAuth::from_single(config.access_key.clone(), config.secret_key.clone()));
    Ok(builder.build())
}

/// Serves S3 on `listener` until the future is dropped.
pub async fn serve(config: &ServerConfig, control: Arc<Control>, listener: TcpListener) -> Result<(), String> {
    let s3 = service(config, control)?;
    listener.set_nonblocking(true).map_err(|error| format!("cannot use the listener: {error}"))?;
    let listener =
        tokio::net::TcpListener::from_std(listener).map_err(|error| format!("cannot use the listener: {error}"))?;
    let http = ConnectionBuilder::new(TokioExecutor::new());
    loop {
        let (socket, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            // A connection that failed before it was accepted (reset, out of files)
            // concerns that client only.
            Err(_) => continue,
        };
        let _ = socket.set_nodelay(true);
        let s3 = s3.clone();
        let handler = hyper::service::service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
            let s3 = s3.clone();
            async move {
                let drop_flag = store::DropConnection::default();
                request.extensions_mut().insert(drop_flag.clone());
                let response = hyper::service::Service::call(&s3, request).await;
                if drop_flag.0.load(Ordering::SeqCst) {
                    let dropped = std::io::Error::other("injected fault: connection dropped");
                    return Err(s3s::HttpError::new(Box::new(dropped)));
                }
                response
            }
        });
        let connection = http.serve_connection(TokioIo::new(socket), handler).into_owned();
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
}

/// A server running in this process, on its own thread and runtime. Dropping it stops
/// it.
pub struct Running {
    address: SocketAddr,
    control: Arc<Control>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Running {
    /// Starts serving `config` on `listener` (already bound, so the caller knows the
    /// port and no one else takes it).
    pub fn start(config: ServerConfig, control: Arc<Control>, listener: TcpListener) -> Result<Running, String> {
        let address = listener.local_addr().map_err(|error| format!("cannot use the listener: {error}"))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(RUNTIME_WORKER_THREADS)
            .thread_name("s3-server")
            .enable_all()
            .build()
            .map_err(|error| format!("cannot start the server's runtime: {error}"))?;
        // Build the service here, so a bad root is this call's error.
        drop(service(&config, Arc::clone(&control))?);
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = Arc::clone(&control);
        let thread = std::thread::Builder::new()
            .name("s3-server".to_string())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        result = serve(&config, serving, listener) => {
                            if let Err(error) = result {
                                eprintln!("s3-server: {error}");
                            }
                        }
                        _ = stopped => {}
                    }
                });
                // Drops every connection task; waits a little for file operations.
                runtime.shutdown_timeout(SHUTDOWN_WAIT_MAX);
            })
            .map_err(|error| format!("cannot start the server's thread: {error}"))?;
        Ok(Running { address, control, stop: Some(stop), thread: Some(thread) })
    }

    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The fault table and switches.
    pub fn control(&self) -> &Arc<Control> {
        &self.control
    }

    /// Stops serving: the listener closes, every open connection is dropped.
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests;
