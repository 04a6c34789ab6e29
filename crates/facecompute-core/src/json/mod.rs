//! JSON request bodies, read off the event loop: `check` (is it JSON at all, where it is not) and
//! `scan` (how many values JSON.parse would build, and a /compare body's target rows taken out as
//! float32 so that JSON.parse never sees them).

pub mod check;
pub mod scan;

pub use check::{check, JsonSyntaxError};
pub use scan::{scan, Lift, LiftedRows, LiftedText, Scan, MAX_ROW_LEN};
