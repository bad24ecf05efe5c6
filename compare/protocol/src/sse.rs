//! A server-sent events parser, as much of it as a Durable Streams tail needs: events
//! end at a blank line, `event:` names one, `data:` lines join with newlines (one space
//! after the colon dropped), comments and other fields are ignored, and `\r\n` counts as
//! `\n`.

#[derive(Debug, PartialEq, Eq)]
pub struct Event {
    /// `message` when the event named none.
    pub name: String,
    pub data: String,
}

#[derive(Default)]
pub struct Parser {
    pending: Vec<u8>,
}

/// The most bytes an unfinished event may hold before the stream is called broken.
const EVENT_BYTES_MAX: usize = 16 << 20;

impl Parser {
    /// Feeds a chunk of the body; answers the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<Event>, String> {
        self.pending
            .extend(chunk.iter().copied().filter(|&b| b != b'\r'));
        let mut events = Vec::new();
        while let Some(end) = self.pending.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.pending.drain(..end + 2).collect();
            let text = std::str::from_utf8(&block[..end])
                .map_err(|_| "an SSE event that is not UTF-8".to_string())?;
            let mut name = None;
            let mut data: Option<String> = None;
            for line in text.split('\n') {
                let (field, value) = match line.split_once(':') {
                    Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                    None => (line, ""),
                };
                match field {
                    "event" => name = Some(value.to_string()),
                    "data" => match &mut data {
                        Some(data) => {
                            data.push('\n');
                            data.push_str(value);
                        }
                        None => data = Some(value.to_string()),
                    },
                    _ => {}
                }
            }
            if let Some(data) = data {
                events.push(Event {
                    name: name.unwrap_or_else(|| "message".to_string()),
                    data,
                });
            }
        }
        if self.pending.len() > EVENT_BYTES_MAX {
            return Err(format!("an SSE event longer than {EVENT_BYTES_MAX} bytes"));
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_join_their_data_lines() {
        let mut parser = Parser::default();
        assert_eq!(parser.feed(b"event: data\ndata:[1,\r\n").unwrap(), vec![]);
        let events = parser
            .feed(b"data: 2]\n\n: a comment\n\nevent:control\ndata:{}\n\n")
            .unwrap();
        assert_eq!(
            events,
            vec![
                Event {
                    name: "data".to_string(),
                    data: "[1,\n2]".to_string()
                },
                Event {
                    name: "control".to_string(),
                    data: "{}".to_string()
                },
            ]
        );
    }
}
