//! `walab serve`: the stream store over HTTP (see [`crate::serve`]).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli_error::CliError;
use crate::serve::{http, Store};
use crate::wal::url::WalArgs;
use crate::wal::{Wal, WalOptions};

use super::common::open_failure;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    wal: WalArgs,
    /// The address to take HTTP requests on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:7070")]
    listen: String,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let listen: SocketAddr = args
        .listen
        .parse()
        .map_err(|_| CliError::usage(format!("--listen {}: not an address such as 127.0.0.1:7070", args.listen)))?;
    let backend = args.wal.backend(true).map_err(CliError::usage)?;
    // The WAL is opened (and recovered) before the runtime starts: a backend with a
    // runtime of its own must not be opened from inside another.
    let (wal, recovered) = Wal::open(backend, WalOptions::default()).map_err(open_failure)?;
    let store = Arc::new(Store::recover(wal, recovered).map_err(CliError::failed)?);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("walab-serve")
        .build()
        .map_err(|error| CliError::failed(format!("serve: cannot start the runtime: {error}")))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|error| CliError::usage(format!("--listen {listen}: {error}")))?;
        let bound = listener.local_addr().map_err(|error| CliError::failed(format!("--listen {listen}: {error}")))?;
        eprintln!("walab serve: listening on http://{bound}");
        axum::serve(listener, http::router(store))
            .await
            .map_err(|error| CliError::failed(format!("serve: http://{bound}: {error}")))
    })?;
    Ok(ExitCode::SUCCESS)
}
