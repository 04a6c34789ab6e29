//! Typed errors with the stable codes of contract v1 §5. The binding turns them into JS `Error`s
//! whose `code` property is [`ErrorCode::as_str`].

use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    InvalidImage,
    TooManyPixels,
    ImageTooLarge,
    InvalidEmbedding,
    EmbeddingDimensionMismatch,
    InvalidRequest,
    InternalError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidImage => "invalid_image",
            ErrorCode::TooManyPixels => "too_many_pixels",
            ErrorCode::ImageTooLarge => "image_too_large",
            ErrorCode::InvalidEmbedding => "invalid_embedding",
            ErrorCode::EmbeddingDimensionMismatch => "embedding_dimension_mismatch",
            ErrorCode::InvalidRequest => "invalid_request",
            ErrorCode::InternalError => "internal_error",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with a stable code and a human detail. The detail must never carry paths or internals.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{code}: {detail}")]
pub struct CoreError {
    pub code: ErrorCode,
    pub detail: String,
}

impl CoreError {
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        Self { code, detail: detail.into() }
    }
    pub fn invalid_image(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidImage, detail)
    }
    pub fn invalid_request(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidRequest, detail)
    }
}

pub type CoreResult<T> = Result<T, CoreError>;
