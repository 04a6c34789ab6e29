//! The inner loop of the gateway's multipart reader (src/gateway/multipart-reader.ts): append one
//! chunk of a large part to the part's buffer and look for the part's delimiter in the bytes just
//! appended, in one call. `memchr::memmem` searches with SIMD prefilters; Node's Buffer.indexOf
//! (Boyer-Moore-Horspool) took about 8 ms of CPU per 49 MB body here, measured with
//! bench/profile/multipart-parse.ts.

use crate::error::{CoreError, CoreResult};
use memchr::memmem;

/// Copies `chunk` into `dest` at `at`, then finds the first `needle` in `dest[from..at + chunk.len()]`;
/// returns its index in `dest`. The caller passes `from` no later than where a needle that ends in
/// the new bytes can start (`at - (needle.len() - 1)`, or the part's start). Ranges outside `dest`
/// and an empty needle are `invalid_request`.
pub fn append_and_find(dest: &mut [u8], at: usize, chunk: &[u8], needle: &[u8], from: usize) -> CoreResult<Option<usize>> {
    let end = at.checked_add(chunk.len()).filter(|&e| e <= dest.len()).ok_or_else(|| CoreError::invalid_request("the chunk does not fit the part's buffer"))?;
    if from > end || needle.is_empty() {
        return Err(CoreError::invalid_request("the search range or the delimiter is invalid"));
    }
    dest[at..end].copy_from_slice(chunk);
    Ok(memmem::find(&dest[from..end], needle).map(|i| from + i))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_needle_split_across_appends() {
        let needle = b"\r\n--bound";
        let body = b"abc\r\n-x\r\n--bound--";
        for cut in 0..body.len() {
            let mut dest = vec![0u8; body.len()];
            let first = append_and_find(&mut dest, 0, &body[..cut], needle, 0).unwrap();
            let from = cut.saturating_sub(needle.len() - 1);
            let second = append_and_find(&mut dest, cut, &body[cut..], needle, from).unwrap();
            let found = first.or(second);
            assert_eq!(found, Some(7), "cut at {cut}");
            assert_eq!(&dest[..], &body[..]);
        }
    }

    #[test]
    fn searches_only_the_given_range_and_refuses_bad_ranges() {
        let mut dest = b"\r\n--b....".to_vec();
        assert_eq!(append_and_find(&mut dest, 5, b"xx", b"\r\n--b", 1).unwrap(), None, "a needle before `from` is not reported");
        assert_eq!(append_and_find(&mut dest, 4, b"\r\n--b", b"\r\n--b", 0).unwrap(), Some(4), "the copy lands first, then the search");
        assert_eq!(&dest[..], b"\r\n--\r\n--b");
        assert!(append_and_find(&mut dest, 8, b"xx", b"a", 0).is_err(), "past the end of dest");
        assert!(append_and_find(&mut dest, usize::MAX, b"x", b"a", 0).is_err(), "overflow");
        assert!(append_and_find(&mut dest, 0, b"x", b"a", 2).is_err(), "from past the appended bytes");
        assert!(append_and_find(&mut dest, 0, b"x", b"", 0).is_err(), "empty needle");
    }
}
