//! Vector comparison: one query against many (issue 2). Owned by the compare work.
