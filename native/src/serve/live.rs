//! The lab's edge of `walab serve`: `GET /trace`, the live trace as server-sent events,
//! and the page itself (`--page DIR`) at `/`.
//!
//! `GET /trace` sends one `header` message first (the run's [`Trace`] with its files and
//! no events: what a client needs to start drawing), then every event of the WAL and the
//! upload from the moment it connected, one message each, in the JSON `walab bench
//! --trace` writes, in time order. A client that falls behind loses the oldest events
//! and is told so by a `note` (see [`crate::wal::live`]).
//!
//! [`Trace`]: walab_core::trace::Trace

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use axum::handler::HandlerWithoutStateExt;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures::stream::{self, StreamExt};
use serde_json::json;
use tower_http::compression::Compression;
use tower_http::services::ServeDir;

use super::Store;

/// `GET /trace`.
pub async fn trace(store: Arc<Store>) -> Response {
    let Some(live) = store.live().cloned() else {
        return (StatusCode::NOT_FOUND, Json(json!({ "error": "this server keeps no live trace" }))).into_response();
    };
    // Listen before the header is made, so no event falls between them.
    let listener = live.listen();
    let header = match serde_json::to_string(&live.header()) {
        Ok(header) => header,
        Err(error) => return (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "error": format!("trace header: {error}") }))).into_response(),
    };
    let first = stream::once(async move { Ok::<_, Infallible>(SseEvent::default().event("header").data(header)) });
    let events = stream::unfold(listener, |mut listener| async move {
        let event = listener.next().await?;
        // A core event always serializes; were one not to, the feed ends rather than lies.
        let json = serde_json::to_string(&event).ok()?;
        Some((Ok::<_, Infallible>(SseEvent::default().data(json)), listener))
    });
    let mut response = Sse::new(first.chain(events)).keep_alive(KeepAlive::default()).into_response();
    // A page served from elsewhere (`trunk serve`, `server=` in its URL) may watch too.
    response.headers_mut().insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}

/// The tag that tells the page a `walab serve` served it, so it watches `/trace`.
pub const PAGE_MARK: &str = r#"<meta name="walab-serve" content="trace">"#;

/// The routes, and the page's files at every path no route takes. The page's
/// `index.html` carries [`PAGE_MARK`].
pub fn with_page(routes: Router, dir: &Path) -> Router {
    let not_found = || async {
        (StatusCode::NOT_FOUND, Json(json!({ "error": "no such route or page file; streams are at /v1/stream/NAME" }))).into_response()
    };
    let index_file = dir.join("index.html");
    let index = move || {
        let index_file = index_file.clone();
        async move {
            match tokio::fs::read_to_string(&index_file).await {
                Ok(page) => {
                    let page = match page.find("</head>") {
                        Some(at) => format!("{}{PAGE_MARK}{}", &page[..at], &page[at..]),
                        None => format!("{PAGE_MARK}{page}"),
                    };
                    ([(header::CONTENT_TYPE, "text/html; charset=utf-8"), (header::CACHE_CONTROL, "no-store")], page).into_response()
                }
                Err(error) => (StatusCode::INTERNAL_SERVER_ERROR, Json(json!({ "error": format!("{}: {error}", index_file.display()) })))
                    .into_response(),
            }
        }
    };
    routes
        .route("/", get(index.clone()))
        .route("/index.html", get(index))
        // The page's files gzipped for a browser that takes it (the wasm goes from 1.4 MB
        // to under 600 KB on the wire); the protocol's routes, and their live reads, are
        // not compressed.
        .fallback_service(Compression::new(ServeDir::new(dir).fallback(not_found.into_service())).gzip(true))
}

/// Where the page is: `--page DIR` (it must hold index.html), else `dist/` in the
/// working directory when it holds one, else none.
pub fn page_dir(flag: Option<&Path>) -> Result<Option<std::path::PathBuf>, String> {
    match flag {
        Some(dir) if dir.join("index.html").is_file() => Ok(Some(dir.to_path_buf())),
        Some(dir) => Err(format!("--page {}: no index.html in it (build the page with `trunk build` in web/)", dir.display())),
        None => {
            let default = Path::new("dist");
            Ok(default.join("index.html").is_file().then(|| default.to_path_buf()))
        }
    }
}
