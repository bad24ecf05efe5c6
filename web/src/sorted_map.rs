//! A map kept as pairs sorted by key, found by binary search: for the page's few small maps
//! whose keys mostly arrive in increasing order. Each distinct key and value type of the
//! standard `BTreeMap` compiles its own tree code into the page; this is a vector's.

/// Pairs sorted by key, each key once.
#[derive(Clone, Debug)]
pub struct SortedMap<K, V>(Vec<(K, V)>);

impl<K, V> Default for SortedMap<K, V> {
    fn default() -> Self {
        SortedMap(Vec::new())
    }
}

impl<K: Ord + Copy, V> SortedMap<K, V> {
    fn find(&self, key: K) -> Result<usize, usize> {
        self.0.binary_search_by(|(at, _)| at.cmp(&key))
    }

    /// Sets the value of `key` (a push when it is the largest yet).
    pub fn put(&mut self, key: K, value: V) {
        match self.find(key) {
            Ok(at) => self.0[at].1 = value,
            Err(at) => self.0.insert(at, (key, value)),
        }
    }

    pub fn get(&self, key: K) -> Option<&V> {
        self.find(key).ok().map(|at| &self.0[at].1)
    }

    /// The value of `key`, made with `V::default()` if it had none.
    pub fn entry_or_default(&mut self, key: K) -> &mut V
    where
        V: Default,
    {
        let at = match self.find(key) {
            Ok(at) => at,
            Err(at) => {
                self.0.insert(at, (key, V::default()));
                at
            }
        };
        &mut self.0[at].1
    }

    pub fn remove(&mut self, key: K) -> Option<V> {
        self.find(key).ok().map(|at| self.0.remove(at).1)
    }

    /// The pairs in key order.
    pub fn into_pairs(self) -> Vec<(K, V)> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::SortedMap;

    #[test]
    fn keeps_one_value_per_key_in_key_order_whatever_the_order_of_puts() {
        let mut map = SortedMap::default();
        for (key, value) in [(5u64, 'a'), (1, 'b'), (9, 'c'), (5, 'd'), (3, 'e')] {
            map.put(key, value);
        }
        assert_eq!((map.get(5), map.get(4)), (Some(&'d'), None));
        map.put(9, 'z');
        *map.entry_or_default(7) = 'y';
        assert_eq!(map.remove(1), Some('b'));
        assert_eq!(map.remove(1), None);
        assert_eq!(map.into_pairs(), vec![(3, 'e'), (5, 'd'), (7, 'y'), (9, 'z')]);
    }
}
