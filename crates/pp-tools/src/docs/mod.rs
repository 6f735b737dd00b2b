//! Document tools, all `file:read`: `extract_document` (a document's text in reading
//! order), `analyze_table` (CSV, XLSX, JSON tables: schema, statistics, filters, groups,
//! SQL) and `extract_invoice` (Chinese VAT invoices, checked). Every byte comes through
//! the workspace jail; the parsing runs in a limited child process (`pp_docs::Parser`).

mod analyze_table;
mod extract_document;
mod extract_invoice;
mod input;
mod invoice_answer;
mod invoice_arguments;
mod provider;
mod settings;
mod table_answer;

pub use provider::DocsProvider;
pub use settings::DocsSettings;
