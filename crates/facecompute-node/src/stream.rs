//! N-API export of the streaming /compare path: core::delimit::PartEnd finds the end of the binary
//! `targets` part and core::compare::RowStream scores its rows as each socket chunk arrives. Called
//! once per chunk (64 KiB, ~128 rows of 128-d) on the JS thread: a few microseconds of work on bytes
//! still in cache, less than a trip through the libuv pool. The chunk is borrowed for the call only.

use crate::compare::{flatten, ManyOutput};
use crate::guard;
use crate::types::DistanceMetric;
use facecompute_core::compare::RowStream;
use facecompute_core::delimit::PartEnd;
use facecompute_core::CoreError;
use napi::bindgen_prelude::{Float32Array, Uint8ArraySlice};
use napi_derive::napi;

#[napi]
pub struct CompareStream {
    rows: Option<RowStream>,
    end: PartEnd,
    ended: bool,
}

#[napi]
impl CompareStream {
    /// `sources`: K×dims (1 ≤ K < 4); `top_k` if known; rows past `max_rows` are counted, not
    /// scored; `delimiter`: CRLF--boundary, which ends the part.
    #[napi(constructor)]
    pub fn new(sources: Float32Array, dims: u32, metric: DistanceMetric, top_k: Option<u32>, max_rows: u32, delimiter: Uint8ArraySlice) -> guard::Result<Self> {
        guard::catch(|| {
            let rows = RowStream::new(None, &sources, dims as usize, metric.into(), top_k.map(|k| k as usize), max_rows as usize)?;
            Ok(CompareStream { rows: Some(rows), end: PartEnd::new(&delimiter)?, ended: false })
        })
    }

    /// Scores the rows of the next chunk; returns the index in `chunk` just past the delimiter when
    /// the part ends in it, else -1.
    #[napi]
    pub fn feed(&mut self, chunk: Uint8ArraySlice) -> guard::Result<i64> {
        guard::catch(|| {
            let rows = match (&mut self.rows, self.ended) {
                (Some(rows), false) => rows,
                _ => return Err(CoreError::invalid_request("the streamed part has already ended")),
            };
            let past = self.end.feed(&chunk, |b| rows.feed(b));
            self.ended = past.is_some();
            Ok(past.map_or(-1, |p| p as i64))
        })
    }

    /// Bytes of the part so far (the delimiter excluded once found).
    #[napi(getter)]
    pub fn bytes(&self) -> f64 {
        self.rows.as_ref().map_or(0.0, |r| r.bytes() as f64)
    }

    /// One result list per source, as compare_many_to_many would give them; the state is freed.
    /// Errors: a part that has not ended, a truncated row, rows over the limit, then the first
    /// non-finite row (invalid_embedding naming it).
    #[napi]
    pub fn finish(&mut self, top_k: Option<u32>) -> guard::Result<ManyOutput> {
        guard::catch(|| {
            if !self.ended {
                return Err(CoreError::invalid_request("the streamed part has not ended"));
            }
            let rows = self.rows.take().ok_or_else(|| CoreError::invalid_request("the streamed comparison was already finished"))?;
            let count = rows.bytes() as usize / 4;
            let lists = rows.finish(top_k.map(|k| k as usize))?;
            let n = lists.first().map_or(count, |c| c.count);
            Ok(flatten(lists, n))
        })
    }

    /// Drops the state (a request that failed before `finish`), without waiting for the collector.
    #[napi]
    pub fn close(&mut self) {
        self.rows = None;
    }
}
