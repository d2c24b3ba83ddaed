//! regtune passes (work in progress).
