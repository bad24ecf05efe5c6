//! The student's progress through the lab, kept in the browser's local storage: the
//! Parts visited, the predictions committed, the drills opened. It is shown in the
//! navigation and never leaves the browser.
//!
//! The stored form is one line of text, `v=0,2,3;p=7@13.5,6@12;d=12:0,12:3`, read back
//! forgivingly: anything unreadable is dropped, so a stale or hand-edited value never
//! breaks the page.
//!
//! Each list is a [`SortedSet`], a sorted vector: a few hundred entries at most, and
//! a `BTreeSet` would compile the whole B-tree once more for each item type.

/// The local-storage key.
pub const STORAGE_KEY: &str = "walab-progress";
/// At most this many predictions and drills are kept (a bound on the stored line).
pub const ENTRIES_MAX: usize = 200;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    pub visited: SortedSet<u8>,
    /// One entry per question answered: the Part and the moment, "7@13.5".
    pub predictions: SortedSet<String>,
    /// One entry per drill opened: "12:3".
    pub drills: SortedSet<String>,
}

/// A set kept as a sorted vector without repeats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortedSet<T>(Vec<T>);

impl<T> Default for SortedSet<T> {
    fn default() -> Self {
        SortedSet(Vec::new())
    }
}

impl<T: Ord> SortedSet<T> {
    /// Adds `item`; returns whether it was new.
    pub fn insert(&mut self, item: T) -> bool {
        match self.0.binary_search(&item) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, item);
                true
            }
        }
    }

    pub fn contains(&self, item: &T) -> bool {
        self.0.binary_search(item).is_ok()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The items in order.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.0.iter()
    }

    fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.insert(item);
        }
    }
}

impl Progress {
    pub fn decode(text: &str) -> Progress {
        let mut progress = Progress::default();
        for section in text.split(';') {
            let Some((name, list)) = section.split_once('=') else { continue };
            let items = list.split(',').filter(|item| !item.is_empty() && item.len() <= 40);
            match name {
                "v" => progress.visited.extend(items.filter_map(|item| item.parse::<u8>().ok()).filter(|part| *part < 100)),
                "p" => progress.predictions.extend(items.take(ENTRIES_MAX).map(clean)),
                "d" => progress.drills.extend(items.take(ENTRIES_MAX).map(clean)),
                _ => {}
            }
        }
        progress
    }

    pub fn encode(&self) -> String {
        let join = |set: &SortedSet<String>| set.0.join(",");
        let visited: Vec<String> = self.visited.iter().map(u8::to_string).collect();
        format!("v={};p={};d={}", visited.join(","), join(&self.predictions), join(&self.drills))
    }

    /// Adds an entry; returns whether anything changed.
    pub fn visit(&mut self, part: u8) -> bool {
        self.visited.insert(part)
    }

    pub fn predicted(&mut self, entry: &str) -> bool {
        self.predictions.len() < ENTRIES_MAX && self.predictions.insert(clean(entry))
    }

    pub fn drill(&mut self, entry: &str) -> bool {
        self.drills.len() < ENTRIES_MAX && self.drills.insert(clean(entry))
    }
}

/// Keeps the separators out of an entry.
fn clean(entry: &str) -> String {
    entry.chars().filter(|c| !matches!(c, ',' | ';' | '=')).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_round_trips_and_garbage_is_dropped() {
        let mut progress = Progress::default();
        assert!(progress.visit(3));
        assert!(!progress.visit(3));
        assert!(progress.predicted("7@13.5"));
        assert!(progress.drill("12:0"));
        let text = progress.encode();
        assert_eq!(text, "v=3;p=7@13.5;d=12:0");
        assert_eq!(Progress::decode(&text), progress);
        assert_eq!(Progress::decode("v=5,2,5,3").encode(), "v=2,3,5;p=;d=");
        assert_eq!(Progress::decode("nonsense;v=x,2,300;q=1"), Progress { visited: SortedSet(vec![2]), ..Progress::default() });
    }
}
