//! walab-web: the browser lab.
//!
//! A Yew single-page app. The simulation logic lives in `walab-core`; this crate only
//! keeps the page's state and draws it.

use walab_core::codec::tiny::HEADER_BYTES;
use walab_core::tiny_store;
use yew::prelude::*;

const PARTS: [&str; 13] = [
    "Start here",
    "What acknowledged means",
    "What fsync guarantees",
    "When fsync fails",
    "The record and the append",
    "Group commit",
    "Durability modes",
    "Power loss and torn writes",
    "Segments and truncation",
    "The WAL in B-tree engines",
    "Replication",
    "On AWS",
    "What you've learned",
];

#[component]
fn App() -> Html {
    let part = use_state(|| 4usize);
    let nav = PARTS.iter().enumerate().map(|(index, title)| {
        let part = part.clone();
        let onclick = Callback::from(move |_| part.set(index));
        html! { <li><button {onclick}>{ format!("Part {index}. {title}") }</button></li> }
    });
    html! {
        <main>
            <h1>{ "walab: the write-ahead log lab" }</h1>
            <nav><ul>{ for nav }</ul></nav>
            <section>
                <h2>{ format!("Part {}. {}", *part, PARTS[*part]) }</h2>
                if *part == 4 { <RecordBytes /> }
            </section>
        </main>
    }
}

#[component]
fn RecordBytes() -> Html {
    let rows = tiny_store::WRITES[..4].iter().map(|write| {
        let record = write.record();
        let header: String = record[..HEADER_BYTES].iter().map(|b| format!("{b:02x} ")).collect();
        let payload: String = record[HEADER_BYTES..].iter().map(|b| format!("{b:02x} ")).collect();
        html! {
            <tr>
                <td>{ write.id }</td>
                <td>{ format!("{:?} {} {}", write.op, write.key, write.value) }</td>
                <td><code class="header">{ header }</code><code>{ payload }</code></td>
            </tr>
        }
    });
    html! { <table class="records">{ for rows }</table> }
}

fn main() {
    yew::Renderer::<App>::new().render();
}
