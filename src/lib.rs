//! demarcate: managed regions inside files people also edit by hand.
#![deny(missing_docs)]

pub mod format;
pub mod lex;
