//! walab's native side as a library: the subcommands ([`cmd`]), the WAL front-end and its
//! backends ([`wal`]: file, S3, Postgres), the stream store over HTTP ([`serve`]), the S3 test
//! server ([`s3_server`]), and the one-line errors ([`cli_error`]). The
//! `walab` binary is [`cmd::main`]; tests, benches and examples use the same modules.

pub mod cli_error;
pub mod cmd;
pub mod latency;
pub mod s3_server;
pub mod serve;
pub mod wal;
