//! Sorting through one compiled sort.
//!
//! Each `slice::sort_by_key` (or `sort`, `sort_by`, `sort_unstable`) call on a new item
//! type or with a new closure compiles its own copy of the standard library's sort: a few
//! KB of WebAssembly each, and the page's core and views had about thirty. These
//! functions sort the positions `0..len` with a single non-generic stable sort whose
//! comparison is a `&mut dyn FnMut`, then move the items into that order by swaps, so
//! every caller shares one sort and pays only for a short swap loop.
//!
//! The result is the standard library's stable sort's: items that compare equal keep
//! their order (the tests compare both on random input, ties included).
//!
//! Collecting into a `BTreeMap` hides one more copy: `FromIterator` gathers the pairs in a
//! vector and sorts it with the standard sort, compiled again for each key and value type.
//! [`map_from`] builds the map by insertion instead, which needs no sort at all.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// The map of `pairs`, a later pair replacing an earlier one with the same key: like
/// `collect::<BTreeMap<_, _>>()`, without compiling a sort for the pair type.
pub fn map_from<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (key, value) in pairs {
        map.insert(key, value);
    }
    map
}

/// Sorts `items` by `compare`, stable: like `slice::sort_by`.
pub fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    let order = stable_order(items.len(), &mut |a, b| compare(&items[a], &items[b]));
    permute(items, order);
}

/// Sorts `items` by the key `key` gives, stable: like `slice::sort_by_key`.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |a, b| key(a).cmp(&key(b)));
}

/// Sorts `items` in their own order, stable: like `slice::sort` (and, for items whose
/// equal values cannot be told apart, such as numbers, like `slice::sort_unstable`).
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// The positions `0..len` in the order `compare` sorts them, equal ones in position order.
fn stable_order(len: usize, compare: &mut dyn FnMut(usize, usize) -> Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_by(|&a, &b| compare(a, b));
    order
}

/// Moves `items` so that position `at` holds the item that was at `order[at]`, following
/// each cycle of the permutation with swaps (a visited position is marked `order[at] == at`).
fn permute<T>(items: &mut [T], mut order: Vec<usize>) {
    for start in 0..items.len() {
        let mut at = start;
        loop {
            let from = order[at];
            order[at] = at;
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn map_from_keeps_the_last_value_of_a_key_like_collect() {
        let pairs = vec![(3, 'a'), (1, 'b'), (3, 'c'), (2, 'd')];
        let collected: BTreeMap<i32, char> = pairs.iter().copied().collect();
        assert_eq!(map_from(pairs), collected);
    }

    proptest! {
        #[test]
        fn sort_by_key_matches_the_standard_stable_sort(keys in proptest::collection::vec(0u8..6, 0..200)) {
            // Few distinct keys, so most items tie; the position tells equal items apart.
            let items: Vec<(u8, usize)> = keys.iter().copied().zip(0..).collect();
            let mut ours = items.clone();
            let mut std_sorted = items;
            sort_by_key(&mut ours, |item| item.0);
            std_sorted.sort_by_key(|item| item.0);
            prop_assert_eq!(ours, std_sorted);
        }

        #[test]
        fn sort_by_matches_the_standard_stable_sort(keys in proptest::collection::vec((0u8..4, 0u8..4), 0..200)) {
            let items: Vec<((u8, u8), usize)> = keys.iter().copied().zip(0..).collect();
            let compare = |a: &((u8, u8), usize), b: &((u8, u8), usize)| a.0 .0.cmp(&b.0 .0).then(b.0 .1.cmp(&a.0 .1));
            let mut ours = items.clone();
            let mut std_sorted = items;
            sort_by(&mut ours, compare);
            std_sorted.sort_by(compare);
            prop_assert_eq!(ours, std_sorted);
        }

        #[test]
        fn sort_matches_the_standard_sort(values in proptest::collection::vec(any::<i32>(), 0..200)) {
            let mut ours = values.clone();
            let mut std_sorted = values;
            sort(&mut ours);
            std_sorted.sort_unstable();
            prop_assert_eq!(ours, std_sorted);
        }
    }

    #[test]
    fn equal_keys_keep_their_order() {
        let mut items = vec![(2, 'a'), (1, 'b'), (2, 'c'), (1, 'd'), (0, 'e'), (2, 'f')];
        sort_by_key(&mut items, |item| item.0);
        assert_eq!(items, vec![(0, 'e'), (1, 'b'), (1, 'd'), (2, 'a'), (2, 'c'), (2, 'f')]);
    }
}
