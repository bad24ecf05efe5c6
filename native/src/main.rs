//! `walab`: the write-ahead-log lab on the command line (see [`walab::cmd`]).

fn main() -> std::process::ExitCode {
    walab::cmd::main()
}
