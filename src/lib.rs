//! demarcate: managed regions inside files people also edit by hand.
#![deny(missing_docs)]

pub mod cli;
pub mod document;
pub mod format;
pub mod hash;
pub mod io;
pub mod lex;
pub mod marker;
pub mod plan;
pub mod problem;
pub mod repair;
pub mod report;
pub mod state;
