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
///
/// The search reads `chunk`, which the socket has just written and is still in cache, not the copy:
/// the copy bypasses the cache (see `copy_streaming`), and only the few bytes where a needle may
/// straddle the old and the new bytes are searched in a small window.
pub fn append_and_find(dest: &mut [u8], at: usize, chunk: &[u8], needle: &[u8], from: usize) -> CoreResult<Option<usize>> {
    let end = at.checked_add(chunk.len()).filter(|&e| e <= dest.len()).ok_or_else(|| CoreError::invalid_request("the chunk does not fit the part's buffer"))?;
    if from > end || needle.is_empty() {
        return Err(CoreError::invalid_request("the search range or the delimiter is invalid"));
    }
    copy_streaming(&mut dest[at..end], chunk);
    if from >= at {
        return Ok(memmem::find(&chunk[from - at..], needle).map(|i| from + i));
    }
    // A needle that starts in the old bytes ends within the first needle.len() - 1 new ones, so the
    // old bytes and those are a prefix of dest[from..end] that holds every such needle: the first
    // match in it is the first in dest[from..end].
    let head = &chunk[..chunk.len().min(needle.len() - 1)];
    let mut window = Vec::with_capacity(at - from + head.len());
    window.extend_from_slice(&dest[from..at]);
    window.extend_from_slice(head);
    if let Some(i) = memmem::find(&window, needle) {
        return Ok(Some(from + i));
    }
    Ok(memmem::find(chunk, needle).map(|i| at + i))
}

/// The end of a part read as it arrives, without keeping it: the streaming /compare path scores the
/// `targets` rows chunk by chunk (compare::stream) and never copies the part into one buffer. Bytes
/// are handed on as soon as they are certainly the part's; the last `needle.len() - 1` seen are held
/// back, since they may be the start of the delimiter, and searched with the next chunk's head.
#[derive(Debug)]
pub struct PartEnd {
    needle: Vec<u8>,
    held: Vec<u8>,
}

impl PartEnd {
    /// An empty needle is `invalid_request`.
    pub fn new(needle: &[u8]) -> CoreResult<PartEnd> {
        if needle.is_empty() {
            return Err(CoreError::invalid_request("the delimiter is empty"));
        }
        Ok(PartEnd { needle: needle.to_vec(), held: Vec::with_capacity(needle.len()) })
    }

    /// Reads the next chunk: `body` receives the bytes that are certainly the part's, in order (the
    /// held bytes first, as a separate call). Returns the index in `chunk` just past the delimiter
    /// when it ends in this chunk (the part is then complete and what follows is the next part's),
    /// or `None`.
    pub fn feed(&mut self, chunk: &[u8], mut body: impl FnMut(&[u8])) -> Option<usize> {
        let (h, dl) = (self.held.len(), self.needle.len());
        // A delimiter that starts in the held bytes ends in the first dl - 1 of the chunk: searched
        // first, in a small window, so the first match in held ++ chunk is the one found.
        if h > 0 {
            let head = &chunk[..chunk.len().min(dl - 1)];
            let mut window = Vec::with_capacity(h + head.len());
            window.extend_from_slice(&self.held);
            window.extend_from_slice(head);
            if let Some(i) = memmem::find(&window, &self.needle).filter(|&i| i < h) {
                body(&self.held[..i]);
                self.held.clear();
                return Some(i + dl - h);
            }
        }
        if let Some(i) = memmem::find(chunk, &self.needle) {
            if h > 0 {
                body(&self.held);
            }
            body(&chunk[..i]);
            self.held.clear();
            return Some(i + dl);
        }
        let keep = dl - 1;
        if chunk.len() >= keep {
            if h > 0 {
                body(&self.held);
            }
            body(&chunk[..chunk.len() - keep]);
            self.held.clear();
            self.held.extend_from_slice(&chunk[chunk.len() - keep..]);
        } else {
            // Fewer new bytes than the hold: the oldest held ones leave.
            let total = h + chunk.len();
            let out = total.saturating_sub(keep);
            if out > 0 {
                body(&self.held[..out]);
                self.held.drain(..out);
            }
            self.held.extend_from_slice(chunk);
        }
        None
    }
}

/// Below this, a plain copy: the stores' setup and fence cost more than the cache they would spare.
const STREAMING_MIN: usize = 4096;

/// `dst.copy_from_slice(src)`, with non-temporal stores for large copies on x86-64. The part's buffer
/// (49 MB for 100,000 targets) is far larger than the caches: ordinary stores first read every
/// destination line into the cache and then evict it, non-temporal ones write it out directly.
/// Measured here (AMD EPYC, 49 MB in 64 KiB pieces from a cached source): 2.1 ms against 4.1 ms,
/// and 4.6 against 6.3 ms with the kernel's read of the whole buffer after it.
fn copy_streaming(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len());
    #[cfg(target_arch = "x86_64")]
    if src.len() >= STREAMING_MIN {
        // SSE2 is part of x86-64: no run-time check needed.
        unsafe { copy_streaming_sse2(dst, src) };
        return;
    }
    dst.copy_from_slice(src);
}

#[cfg(target_arch = "x86_64")]
unsafe fn copy_streaming_sse2(dst: &mut [u8], src: &[u8]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let n = src.len();
    // Non-temporal stores need a 16-byte aligned destination: the unaligned head and the tail are
    // copied plainly.
    let head = dst.as_ptr().align_offset(16).min(n);
    dst[..head].copy_from_slice(&src[..head]);
    let body = (n - head) / 64 * 64;
    let (d, s) = (dst.as_mut_ptr().add(head), src.as_ptr().add(head));
    let mut i = 0;
    while i < body {
        let a = _mm_loadu_si128(s.add(i) as *const __m128i);
        let b = _mm_loadu_si128(s.add(i + 16) as *const __m128i);
        let c = _mm_loadu_si128(s.add(i + 32) as *const __m128i);
        let e = _mm_loadu_si128(s.add(i + 48) as *const __m128i);
        _mm_stream_si128(d.add(i) as *mut __m128i, a);
        _mm_stream_si128(d.add(i + 16) as *mut __m128i, b);
        _mm_stream_si128(d.add(i + 32) as *mut __m128i, c);
        _mm_stream_si128(d.add(i + 48) as *mut __m128i, e);
        i += 64;
    }
    dst[head + body..].copy_from_slice(&src[head + body..]);
    // Non-temporal stores are weakly ordered: fenced before the buffer is read, on this thread or
    // on the libuv pool the kernel runs on.
    _mm_sfence();
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
    fn large_chunks_copy_exactly_and_find_needles_anywhere() {
        // Sizes and offsets around the streaming threshold and the 16-byte alignment of the stores.
        let needle = b"\r\n--facecompute-boundary";
        for &(len, at, pos) in &[(4095usize, 0usize, 100usize), (4096, 3, 4000), (65536, 7, 65536 - needle.len()), (65536, 16, 0), (70001, 1, 33333), (65536, 0, usize::MAX)] {
            let mut chunk: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
            if pos != usize::MAX {
                chunk[pos..pos + needle.len()].copy_from_slice(needle);
            }
            let mut dest = vec![0xAAu8; at + len + 5];
            let found = append_and_find(&mut dest, at, &chunk, needle, at).unwrap();
            assert_eq!(&dest[at..at + len], &chunk[..], "copy of {len} at {at}");
            assert_eq!(&dest[..at], &vec![0xAAu8; at][..], "bytes before untouched");
            assert_eq!(&dest[at + len..], &[0xAAu8; 5], "bytes after untouched");
            assert_eq!(found, if pos == usize::MAX { None } else { Some(at + pos) }, "needle of {len} at {at}, placed at {pos}");
        }
    }

    #[test]
    fn finds_the_first_needle_from_a_long_old_range() {
        // `from` well before `at`: a needle wholly in the old bytes, and one in the new, the first wins.
        let needle = b"--b";
        let mut dest = vec![0u8; 10_000];
        dest[100..103].copy_from_slice(needle);
        let mut chunk = vec![7u8; 8000];
        chunk[10..13].copy_from_slice(needle);
        assert_eq!(append_and_find(&mut dest, 2000, &chunk, needle, 50).unwrap(), Some(100));
        assert_eq!(append_and_find(&mut dest, 2000, &chunk, needle, 101).unwrap(), Some(2010));
        assert_eq!(append_and_find(&mut dest, 2000, &chunk, needle, 2011).unwrap(), None, "from inside the new bytes");
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

    /// Feeds `stream` to a PartEnd in pieces cut at `cuts`: the part's bytes and where, in the whole
    /// stream, the delimiter ended.
    fn part_end(stream: &[u8], needle: &[u8], cuts: &[usize]) -> (Vec<u8>, Option<usize>) {
        let mut end = PartEnd::new(needle).unwrap();
        let mut body = Vec::new();
        let mut start = 0;
        for &cut in cuts.iter().chain(std::iter::once(&stream.len())) {
            if let Some(at) = end.feed(&stream[start..cut], |b| body.extend_from_slice(b)) {
                return (body, Some(start + at));
            }
            start = cut;
        }
        (body, None)
    }

    #[test]
    fn part_end_finds_the_delimiter_split_at_every_offset() {
        let needle = b"\r\n--bound";
        // Near-misses before the real delimiter: a prefix of it at the seam must not end the part.
        let stream = b"ab\r\n--bou\r\n-\r\n--boundX\r\n--bound--rest";
        let first = memmem::find(stream, needle).unwrap();
        for a in 0..=stream.len() {
            for b in a..=stream.len() {
                let (body, end) = part_end(stream, needle, &[a, b]);
                assert_eq!(end, Some(first + needle.len()), "cuts {a},{b}");
                assert_eq!(&body[..], &stream[..first], "cuts {a},{b}");
            }
        }
        // One byte at a time.
        let cuts: Vec<usize> = (1..stream.len()).collect();
        assert_eq!(part_end(stream, needle, &cuts), (stream[..first].to_vec(), Some(first + needle.len())));
    }

    #[test]
    fn part_end_without_a_delimiter_holds_back_only_a_possible_start() {
        let needle = b"\r\n--b";
        let stream: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 13) as u8).collect();
        for step in [1usize, 3, 5, 6, 7, 64, 999] {
            let cuts: Vec<usize> = (step..stream.len()).step_by(step).collect();
            let (body, end) = part_end(&stream, needle, &cuts);
            assert_eq!(end, None);
            assert_eq!(&body[..], &stream[..stream.len() - (needle.len() - 1)], "step {step}");
        }
        assert!(PartEnd::new(b"").is_err());
    }
}
