//! The leaf page: what a B-tree engine keeps in memory and writes back to its data file.
//!
//! A page is a fixed-size block (8 KiB in PostgreSQL, 16 KiB in InnoDB, 64 bytes in the
//! tiny store's branch B so that every byte fits on screen). Its layout here borrows the
//! shape of a real slotted page:
//!
//! ```text
//!  0        4         8                16      18            20
//! +--------+---------+----------------+-------+-------------+------ free ------+-- entries --+
//! | CRC32C | page no | pageLSN (u64)  | count | entries at  |      zeros       | klen key    |
//! | of 4.. | (u32)   |                | (u16) | offset (u16)|                  | vlen value..|
//! +--------+---------+----------------+-------+-------------+------------------+-------------+
//! ```
//!
//! The header sits at the front and the entries are packed against the *end* of the page,
//! as PostgreSQL packs its tuples. That matters for torn pages: the pageLSN lives in the
//! first sector and the data in the last ones, so a write-back that stops halfway can
//! leave a page whose header claims the new LSN while its data is still the old. Nothing
//! in the page's own fields can tell; only the checksum over the whole page can. That is
//! why the page's pseudocode trusts a full-page image over whatever the page says about
//! itself.
//!
//! Entries are kept sorted by key, each as a one-byte key length, the key, a one-byte
//! value length and the value. The checksum is CRC32C over every byte after the checksum
//! field, zero padding included, so a page that mixes sectors of two versions fails it
//! whenever the two versions differ in the sectors that mixed.

use std::collections::BTreeMap;

use crate::checksum::crc32c;

/// A log sequence number. In the tiny store, write n's record has LSN n.
pub type Lsn = u64;

/// Bytes of page header: CRC (4), page number (4), pageLSN (8), entry count (2), offset
/// of the first entry (2).
pub const PAGE_HEADER_BYTES: usize = 20;

/// A page's number in the data file, from 1 (the page's P1, P2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct PageNo(pub u32);

impl std::fmt::Display for PageNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "P{}", self.0)
    }
}

/// Page and sector sizes. A sector is the device's atomic unit: a power cut leaves each
/// sector either wholly old or wholly new, but a page of several sectors can mix them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PageGeometry {
    pub page_bytes: usize,
    pub sector_bytes: usize,
}

/// Why a geometry cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeometryError {
    /// The page cannot hold its own header.
    PageTooSmall { page_bytes: usize },
    /// A sector of zero bytes, or one that does not divide the page.
    SectorDoesNotDividePage { page_bytes: usize, sector_bytes: usize },
    /// Offsets inside a page are u16.
    PageTooLarge { page_bytes: usize },
}

impl std::fmt::Display for GeometryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GeometryError::PageTooSmall { page_bytes } => {
                write!(f, "a {page_bytes}-byte page cannot hold its {PAGE_HEADER_BYTES}-byte header")
            }
            GeometryError::SectorDoesNotDividePage { page_bytes, sector_bytes } => {
                write!(f, "{sector_bytes}-byte sectors do not divide a {page_bytes}-byte page")
            }
            GeometryError::PageTooLarge { page_bytes } => {
                write!(f, "a {page_bytes}-byte page is larger than 65,536 bytes")
            }
        }
    }
}

impl Default for PageGeometry {
    /// Leaf pages default to PostgreSQL's 8 KiB on 512-byte sectors.
    fn default() -> PageGeometry {
        PageGeometry::POSTGRES
    }
}

impl PageGeometry {
    /// Branch B's two tiny pages: 64 bytes in two of the tiny store's 32-byte units.
    pub const TINY: PageGeometry = PageGeometry { page_bytes: 64, sector_bytes: 32 };
    /// PostgreSQL's 8 KiB page on a device with 512-byte sectors: 16 sectors per page.
    pub const POSTGRES: PageGeometry = PageGeometry { page_bytes: 8192, sector_bytes: 512 };

    /// Checks the sizes, so that later arithmetic cannot fail.
    pub fn new(page_bytes: usize, sector_bytes: usize) -> Result<PageGeometry, GeometryError> {
        if page_bytes < PAGE_HEADER_BYTES {
            return Err(GeometryError::PageTooSmall { page_bytes });
        }
        if page_bytes > 65_536 {
            return Err(GeometryError::PageTooLarge { page_bytes });
        }
        if sector_bytes == 0 || !page_bytes.is_multiple_of(sector_bytes) {
            return Err(GeometryError::SectorDoesNotDividePage { page_bytes, sector_bytes });
        }
        Ok(PageGeometry { page_bytes, sector_bytes })
    }

    /// Sectors in one page.
    pub fn sectors_per_page(&self) -> usize {
        self.page_bytes / self.sector_bytes
    }
}

/// A leaf page as the engine holds it in memory: its number, its pageLSN and its sorted
/// key/value entries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Page {
    pub page_no: PageNo,
    /// The LSN of the last log record applied to this page. It never decreases while the
    /// engine runs; redo may set it back only by installing a full-page image.
    pub page_lsn: Lsn,
    pub entries: BTreeMap<String, String>,
}

/// Why a change does not fit on a page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageError {
    /// The entries would not fit in the page (a real B-tree would split it; this one
    /// has a fixed set of leaves).
    Full { page_no: PageNo, bytes_needed: usize, page_bytes: usize },
    /// Keys and values are limited to 255 bytes by their one-byte lengths.
    EntryTooLong { key: String },
}

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PageError::Full { page_no, bytes_needed, page_bytes } => {
                write!(f, "{page_no} is full: {bytes_needed} bytes needed, {page_bytes} in a page")
            }
            PageError::EntryTooLong { key } => write!(f, "{key}: key or value over 255 bytes"),
        }
    }
}

/// Why bytes read from the data file are not a usable page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum PageReadError {
    /// The stored CRC does not match the bytes: a torn or never-written page.
    Checksum,
    /// The checksum matches but the fields do not parse (a bug, not a power cut).
    Malformed,
}

impl Page {
    /// An empty page, as the data file is formatted.
    pub fn empty(page_no: PageNo) -> Page {
        Page { page_no, page_lsn: 0, entries: BTreeMap::new() }
    }

    /// Bytes the entries take at the end of the page.
    pub fn entry_bytes(&self) -> usize {
        self.entries.iter().map(|(key, value)| 2 + key.len() + value.len()).sum()
    }

    /// The page's bytes, exactly `geometry.page_bytes` long.
    pub fn encode(&self, geometry: PageGeometry) -> Result<Vec<u8>, PageError> {
        for (key, value) in &self.entries {
            if key.len() > 255 || value.len() > 255 {
                return Err(PageError::EntryTooLong { key: key.clone() });
            }
        }
        let bytes_needed = PAGE_HEADER_BYTES + self.entry_bytes();
        if bytes_needed > geometry.page_bytes {
            return Err(PageError::Full { page_no: self.page_no, bytes_needed, page_bytes: geometry.page_bytes });
        }
        let entries_at = geometry.page_bytes - self.entry_bytes();
        let mut bytes = vec![0u8; geometry.page_bytes];
        bytes[4..8].copy_from_slice(&self.page_no.0.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.page_lsn.to_le_bytes());
        let count = u16::try_from(self.entries.len()).expect("entries fit a u16 when they fit a page");
        bytes[16..18].copy_from_slice(&count.to_le_bytes());
        // A 65,536-byte page with no entries stores 0: the offset wraps exactly at the end.
        bytes[18..20].copy_from_slice(&(entries_at as u16).to_le_bytes());
        let mut at = entries_at;
        for (key, value) in &self.entries {
            bytes[at] = key.len() as u8;
            bytes[at + 1..at + 1 + key.len()].copy_from_slice(key.as_bytes());
            at += 1 + key.len();
            bytes[at] = value.len() as u8;
            bytes[at + 1..at + 1 + value.len()].copy_from_slice(value.as_bytes());
            at += 1 + value.len();
        }
        assert_eq!(at, geometry.page_bytes, "entries end at the page's end");
        let crc = crc32c(&[&bytes[4..]]);
        bytes[..4].copy_from_slice(&crc.to_le_bytes());
        Ok(bytes)
    }

    /// Reads a page back, checking its checksum first: nothing in a page whose checksum
    /// fails is trusted, not even its pageLSN.
    pub fn decode(bytes: &[u8]) -> Result<Page, PageReadError> {
        if bytes.len() < PAGE_HEADER_BYTES {
            return Err(PageReadError::Malformed);
        }
        let stored = u32::from_le_bytes(bytes[..4].try_into().expect("four bytes"));
        if stored != crc32c(&[&bytes[4..]]) {
            return Err(PageReadError::Checksum);
        }
        let page_no = PageNo(u32::from_le_bytes(bytes[4..8].try_into().expect("four bytes")));
        let page_lsn = u64::from_le_bytes(bytes[8..16].try_into().expect("eight bytes"));
        let count = u16::from_le_bytes(bytes[16..18].try_into().expect("two bytes"));
        let mut at = usize::from(u16::from_le_bytes(bytes[18..20].try_into().expect("two bytes")));
        if at == 0 && count == 0 {
            at = bytes.len();
        }
        let mut entries = BTreeMap::new();
        for _ in 0..count {
            let key = take_field(bytes, &mut at)?;
            let value = take_field(bytes, &mut at)?;
            entries.insert(key, value);
        }
        if at != bytes.len() || entries.len() != usize::from(count) {
            return Err(PageReadError::Malformed);
        }
        Ok(Page { page_no, page_lsn, entries })
    }

    /// The pageLSN a page's header *claims*, without checking the checksum: what an
    /// engine without checksums would believe about a torn page.
    pub fn claimed_page_lsn(bytes: &[u8]) -> Option<Lsn> {
        Some(u64::from_le_bytes(bytes.get(8..16)?.try_into().ok()?))
    }

    /// The entries as `key value` pairs joined by commas: `order:7 pen, order:9 book`.
    pub fn describe_entries(&self) -> String {
        let parts: Vec<String> = self.entries.iter().map(|(key, value)| format!("{key} {value}")).collect();
        if parts.is_empty() {
            "(empty)".to_string()
        } else {
            parts.join(", ")
        }
    }
}

fn take_field(bytes: &[u8], at: &mut usize) -> Result<String, PageReadError> {
    let len = usize::from(*bytes.get(*at).ok_or(PageReadError::Malformed)?);
    let field = bytes.get(*at + 1..*at + 1 + len).ok_or(PageReadError::Malformed)?;
    *at += 1 + len;
    String::from_utf8(field.to_vec()).map_err(|_| PageReadError::Malformed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p1_after_write_7() -> Page {
        let mut page = Page::empty(PageNo(1));
        page.page_lsn = 7;
        page.entries.insert("order:9".into(), "book".into());
        page.entries.insert("order:7".into(), "pen".into());
        page
    }

    #[test]
    fn round_trips_with_entries_at_the_end() {
        let page = p1_after_write_7();
        let bytes = page.encode(PageGeometry::TINY).unwrap();
        assert_eq!(bytes.len(), 64);
        // 12 + 13 entry bytes end exactly at byte 64, so they start at 39.
        assert_eq!(u16::from_le_bytes([bytes[18], bytes[19]]), 39);
        assert_eq!(&bytes[39..47], b"\x07order:7");
        assert_eq!(Page::decode(&bytes).unwrap(), page);
    }

    #[test]
    fn empty_pages_round_trip_in_every_geometry() {
        for geometry in [PageGeometry::TINY, PageGeometry::POSTGRES, PageGeometry::new(65_536, 4096).unwrap()] {
            let page = Page::empty(PageNo(3));
            assert_eq!(Page::decode(&page.encode(geometry).unwrap()).unwrap(), page);
        }
    }

    #[test]
    fn a_mix_of_two_versions_fails_the_checksum() {
        let old = {
            let mut page = Page::empty(PageNo(1));
            page.page_lsn = 3;
            page.entries.insert("order:9".into(), "book".into());
            page.encode(PageGeometry::TINY).unwrap()
        };
        let new = p1_after_write_7().encode(PageGeometry::TINY).unwrap();
        let mut torn = new.clone();
        torn[32..].copy_from_slice(&old[32..]);
        // The header (first sector) claims pageLSN 7 ...
        assert_eq!(u64::from_le_bytes(torn[8..16].try_into().unwrap()), 7);
        // ... but the page as a whole is neither version.
        assert_eq!(Page::decode(&torn), Err(PageReadError::Checksum));
        assert_eq!(Page::decode(&[0u8; 64]), Err(PageReadError::Checksum));
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut page = Page::empty(PageNo(2));
        page.entries.insert("user:1".into(), "a value far too long for sixty-four bytes".into());
        assert!(matches!(page.encode(PageGeometry::TINY), Err(PageError::Full { .. })));
        page.entries.insert("k".into(), "v".repeat(300));
        assert!(matches!(page.encode(PageGeometry::POSTGRES), Err(PageError::EntryTooLong { .. })));
        assert_eq!(PageGeometry::new(64, 24), Err(GeometryError::SectorDoesNotDividePage { page_bytes: 64, sector_bytes: 24 }));
        assert_eq!(PageGeometry::new(16, 16), Err(GeometryError::PageTooSmall { page_bytes: 16 }));
    }
}
