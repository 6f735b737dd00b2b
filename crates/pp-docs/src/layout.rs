//! Positioned text: what a PDF page shows where, so text can follow the visual layout
//! (invoice generators often draw every label first and every value later).
//!
//! Coordinates are PDF points with the origin at the **top-left** of the page: `y` grows
//! downward. A span is a run of text in one font on one baseline.

use serde::{Deserialize, Serialize};

/// A run of text at a position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutSpan {
    /// Left edge, in points from the page's left.
    pub x: f32,
    /// Top edge, in points from the page's top.
    pub y: f32,
    /// Width in points.
    pub width: f32,
    /// Height (font size) in points.
    pub height: f32,
    /// The text.
    pub text: String,
}

/// One page's spans, in no particular order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageLayout {
    /// The page number, from 1.
    pub page: usize,
    /// Page width in points.
    pub width: f32,
    /// Page height in points.
    pub height: f32,
    /// The spans.
    pub spans: Vec<LayoutSpan>,
}

/// Spans that share a line (their vertical extents overlap), left to right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutLine {
    /// The line's top, in points from the page's top.
    pub y: f32,
    /// The spans, left to right.
    pub spans: Vec<LayoutSpan>,
}
